/**
 * KvRecordBatch v1: the unit of the log. Derived from Fluss's DefaultKvRecordBatch, with the checksum
 * extended over the batch's own log offset, time and coordinator epoch, so a batch copied to the
 * wrong place in a log is detected instead of replayed.
 *
 * | offset | size | field                                                     |
 * |--------|------|-----------------------------------------------------------|
 * | 0      | 4    | length: bytes after this field (uint32)                   |
 * | 4      | 1    | magic: 1                                                  |
 * | 5      | 4    | checksum: xxh32 (seed 0) of bytes [9, end) (uint32)       |
 * | 9      | 8    | logOffset of this batch (int64)                           |
 * | 17     | 8    | commitTimestampMs (int64)                                 |
 * | 25     | 4    | coordinatorEpoch (int32; 0 for a single-process store)    |
 * | 29     | 2    | schemaId (int16, 0)                                       |
 * | 31     | 1    | attributes (0)                                            |
 * | 32     | 8    | writerId (int64, -1 = none)                               |
 * | 40     | 4    | syncLag (int32, -1 = unknown; see below)                  |
 * | 44     | 4    | recordCount (int32)                                       |
 * | 48     | ...  | records                                                   |
 *
 * Record: int32 length of what follows, unsigned LEB128 key length, key bytes, value bytes; a record
 * with no value bytes is a tombstone.
 *
 * Batches are built with logOffset 0 and an empty checksum; the log assigns the offset when it
 * appends and seals the batch (`sealBatch`), so the checksum is computed exactly once per batch.
 *
 * syncLag (Fluss's batchSequence slot; this store has no idempotent writers) is what the log knew
 * of durability when it wrote the batch: every batch of the log below `logOffset - syncLag` was
 * durable (fdatasynced) before this batch was written. A write round's first batch after an
 * fdatasync has syncLag 0. Recovery uses it to tell a power loss (damage only in batches written
 * after the last completed fdatasync) from damage to durable data (corruption). -1 = unknown.
 * `checkBatch` never trusts a length before comparing it with the bytes present and the size limit.
 */
import { DecodeError, readInt64, readVarUint, writeInt64, type VarUint } from './binary.js';
import { xxh32 } from './checksum.js';

/** Size of the length field that precedes every batch. */
export const LENGTH_FIELD_BYTES = 4;
/** Size of the batch header, records start here. */
export const BATCH_HEADER_BYTES = 48;
/** The only batch format version this store writes and reads. */
export const BATCH_MAGIC = 1;

/** Position of the magic byte in a batch (never 0 in a batch). */
export const BATCH_MAGIC_POSITION = 4;
const CHECKSUM_POSITION = 5;
const CHECKSUMMED_FROM = 9;
const LOG_OFFSET_POSITION = 9;
const TIMESTAMP_POSITION = 17;
const COORDINATOR_EPOCH_POSITION = 25;
const SCHEMA_ID_POSITION = 29;
const ATTRIBUTES_POSITION = 31;
const WRITER_ID_POSITION = 32;
const SYNC_LAG_POSITION = 40;
/** Largest syncLag a batch can carry; a longer lag is stored as this (which claims less durability). */
export const SYNC_LAG_MAX = 0x7fffffff;
const RECORD_COUNT_POSITION = 44;

/** Fields of a batch header other than length and checksum. */
export interface BatchHeader {
  /** The batch's position in its log (0 until the log seals it at append). */
  logOffset: number;
  /** When the commit was made, ms since the epoch; the log cleaner compares it with the delete horizon. */
  commitTimestampMs: number;
  /** Fencing token of whoever appended the batch; 0 in a single-process store. */
  coordinatorEpoch: number;
  /** Records in the batch (0 for a chain-keeping batch the log cleaner emptied). */
  recordCount: number;
}

/** Writes the header of a batch of `sizeBytes` total bytes into `buf[0, 48)`; logOffset stays 0. */
export function writeBatchHeader(
  buf: Buffer,
  sizeBytes: number,
  commitTimestampMs: number,
  recordCount: number,
  coordinatorEpoch = 0,
): void {
  buf.writeUInt32LE(sizeBytes - LENGTH_FIELD_BYTES, 0);
  buf[BATCH_MAGIC_POSITION] = BATCH_MAGIC;
  buf.writeUInt32LE(0, CHECKSUM_POSITION);
  writeInt64(buf, 0, LOG_OFFSET_POSITION);
  writeInt64(buf, commitTimestampMs, TIMESTAMP_POSITION);
  buf.writeInt32LE(coordinatorEpoch, COORDINATOR_EPOCH_POSITION);
  buf.writeInt16LE(0, SCHEMA_ID_POSITION);
  buf[ATTRIBUTES_POSITION] = 0;
  writeInt64(buf, -1, WRITER_ID_POSITION);
  buf.writeInt32LE(-1, SYNC_LAG_POSITION);
  buf.writeInt32LE(recordCount, RECORD_COUNT_POSITION);
}

/**
 * Stamps who appends a built batch: the appender's coordinator epoch (its fencing token) and its
 * writer id (unique per log writer, so that a writer can recognise its own batch when it reads back
 * an append whose outcome it does not know). A replicated log calls this before `sealBatch`; the
 * local log never does (its batches keep epoch 0 and writer -1).
 */
export function stampBatchWriter(buf: Buffer, coordinatorEpoch: number, writerId: number): void {
  buf.writeInt32LE(coordinatorEpoch, COORDINATOR_EPOCH_POSITION);
  writeInt64(buf, writerId, WRITER_ID_POSITION);
}

/** The writer id stamped into a batch (-1 = none). */
export function readBatchWriterId(buf: Buffer, position = 0): number {
  return readInt64(buf, position + WRITER_ID_POSITION);
}

/**
 * Stamps `logOffset` (and, when given, `syncLag`, capped at SYNC_LAG_MAX) into a built batch (at
 * `buf[start]`) and computes its checksum.
 */
export function sealBatch(buf: Buffer, logOffset: number, start = 0, syncLag?: number): void {
  const end = start + LENGTH_FIELD_BYTES + buf.readUInt32LE(start);
  writeInt64(buf, logOffset, start + LOG_OFFSET_POSITION);
  if (syncLag !== undefined)
    buf.writeInt32LE(Math.min(syncLag, SYNC_LAG_MAX), start + SYNC_LAG_POSITION);
  buf.writeUInt32LE(xxh32(buf, start + CHECKSUMMED_FROM, end), start + CHECKSUM_POSITION);
}

/** Outcome of examining the bytes at a position where a batch should start. */
export type BatchCheck =
  | { kind: 'ok'; sizeBytes: number; logOffset: number }
  /** Fewer bytes than the batch needs: a torn write if at the end of the last segment. */
  | { kind: 'incomplete'; reason: string }
  /** The bytes are present but wrong (magic, checksum, impossible length). */
  | { kind: 'invalid'; reason: string };

/**
 * Examines the batch starting at `buf[position]`, with `end` the end of the valid bytes and
 * `batchBytesMax` the largest batch this store ever writes. Never allocates from the length field.
 */
export function checkBatch(
  buf: Buffer,
  position: number,
  end: number,
  batchBytesMax: number,
): BatchCheck {
  if (end - position < LENGTH_FIELD_BYTES)
    return { kind: 'incomplete', reason: 'truncated length field' };
  const sizeBytes = buf.readUInt32LE(position) + LENGTH_FIELD_BYTES;
  if (sizeBytes < BATCH_HEADER_BYTES)
    return { kind: 'invalid', reason: `batch length ${sizeBytes} below the header size` };
  if (sizeBytes > batchBytesMax)
    return {
      kind: 'invalid',
      reason: `batch length ${sizeBytes} above the limit ${batchBytesMax}`,
    };
  if (end - position < sizeBytes)
    return {
      kind: 'incomplete',
      reason: `batch of ${sizeBytes} bytes truncated to ${end - position}`,
    };
  if (buf[position + BATCH_MAGIC_POSITION] !== BATCH_MAGIC)
    return { kind: 'invalid', reason: `unknown magic ${buf[position + BATCH_MAGIC_POSITION]}` };
  const stored = buf.readUInt32LE(position + CHECKSUM_POSITION);
  const actual = xxh32(buf, position + CHECKSUMMED_FROM, position + sizeBytes);
  if (stored !== actual)
    return { kind: 'invalid', reason: `checksum mismatch (stored ${stored}, computed ${actual})` };
  let logOffset: number;
  try {
    logOffset = readInt64(buf, position + LOG_OFFSET_POSITION);
  } catch {
    return { kind: 'invalid', reason: 'log offset outside the safe integer range' };
  }
  if (logOffset < 0) return { kind: 'invalid', reason: `negative log offset ${logOffset}` };
  return { kind: 'ok', sizeBytes, logOffset };
}

/** Reads the header of a batch that `checkBatch` accepted. */
export function readBatchHeader(buf: Buffer, position = 0): BatchHeader {
  return {
    logOffset: readInt64(buf, position + LOG_OFFSET_POSITION),
    commitTimestampMs: readInt64(buf, position + TIMESTAMP_POSITION),
    coordinatorEpoch: buf.readInt32LE(position + COORDINATOR_EPOCH_POSITION),
    recordCount: buf.readInt32LE(position + RECORD_COUNT_POSITION),
  };
}

/**
 * The log offset a possible batch at `buf[position]` claims, read without its checksum (a cheap
 * filter before `checkBatch`): -1 unless the magic is right, its length lies in
 * [BATCH_HEADER_BYTES, end - position] and its log offset is a safe integer >= 0.
 */
export function peekBatchLogOffset(buf: Buffer, position: number, end: number): number {
  if (end - position < BATCH_HEADER_BYTES || buf[position + BATCH_MAGIC_POSITION] !== BATCH_MAGIC)
    return -1;
  const sizeBytes = buf.readUInt32LE(position) + LENGTH_FIELD_BYTES;
  if (sizeBytes < BATCH_HEADER_BYTES || sizeBytes > end - position) return -1;
  const high = buf.readInt32LE(position + LOG_OFFSET_POSITION + 4);
  if (high < 0 || high > 0x1fffff) return -1;
  return high * 4294967296 + buf.readUInt32LE(position + LOG_OFFSET_POSITION);
}

/**
 * The first log offset a checked batch at `buf[position]` did not know to be durable when it was
 * written (`logOffset - syncLag`), or -1 when it does not say (syncLag -1).
 */
export function readBatchDurableBelow(buf: Buffer, position = 0): number {
  const syncLag = buf.readInt32LE(position + SYNC_LAG_POSITION);
  return syncLag < 0 ? -1 : readInt64(buf, position + LOG_OFFSET_POSITION) - syncLag;
}

/** The record count of a batch at `buf[position]` (its header). */
export function readBatchRecordCount(buf: Buffer, position = 0): number {
  return buf.readInt32LE(position + RECORD_COUNT_POSITION);
}

/** The stored checksum of a sealed batch at `buf[position]`. */
export function readBatchChecksum(buf: Buffer, position = 0): number {
  return buf.readUInt32LE(position + CHECKSUM_POSITION);
}

/** Bytes of a batch header that hold its stored checksum: a header read this far tells it. */
export const BATCH_CHECKSUM_END = CHECKSUM_POSITION + 4;

/**
 * Sets the length and record count of a batch built at `buf[0]` by copying another batch's header
 * (the log cleaner's rewrite); the batch must be sealed again afterwards.
 */
export function resizeBatch(buf: Buffer, sizeBytes: number, recordCount: number): void {
  buf.writeUInt32LE(sizeBytes - LENGTH_FIELD_BYTES, 0);
  buf.writeInt32LE(recordCount, RECORD_COUNT_POSITION);
}

/** Reads the log offset of a batch that `checkBatch` accepted. */
export function readBatchLogOffset(buf: Buffer, position = 0): number {
  return readInt64(buf, position + LOG_OFFSET_POSITION);
}

/** Location of one record inside a batch buffer; valid only during the visit. */
export interface RawRecord {
  /** Index of the record within its batch. */
  index: number;
  /** Position of the record's int32 length field. */
  start: number;
  /** Position after the record. */
  end: number;
  /** Position of the first key byte (after the LEB128 key length). */
  keyStart: number;
  /** Position after the last key byte: where the value starts. */
  keyEnd: number;
  /** valueStart === end means a tombstone. */
  valueStart: number;
}

/**
 * Throws DecodeError when a batch (one checkBatch accepted) has a schema id or attributes other than
 * the 0 this format writes: a batch of a later version (compression, control batches, say), which
 * must not be read as a plain one. Checked by the record readers, not by checkBatch: a whole batch
 * with a valid checksum is no damage a crash could leave, and recovery must refuse it (the bucket
 * does not open) rather than cut the log there as a torn tail.
 */
export function checkBatchFormat(buf: Buffer, position: number): void {
  const schemaId = buf.readInt16LE(position + SCHEMA_ID_POSITION);
  if (schemaId !== 0)
    throw new DecodeError(
      `unknown schema id ${schemaId} (this version reads 0 only)`,
      position + SCHEMA_ID_POSITION,
    );
  const attributes = buf[position + ATTRIBUTES_POSITION]!;
  if (attributes !== 0)
    throw new DecodeError(
      `unknown attributes 0x${attributes.toString(16)} (this version reads 0 only)`,
      position + ATTRIBUTES_POSITION,
    );
}

/**
 * Visits every record of a checked batch at `buf[position]`, bound-checking each length against the
 * batch end. Throws DecodeError on a malformed record or a record count that does not match.
 */
export function forEachRawRecord(
  buf: Buffer,
  position: number,
  visit: (record: RawRecord) => void,
): void {
  checkBatchFormat(buf, position);
  const batchEnd = position + LENGTH_FIELD_BYTES + buf.readUInt32LE(position);
  const recordCount = buf.readInt32LE(position + RECORD_COUNT_POSITION);
  if (recordCount < 0)
    throw new DecodeError(`negative record count ${recordCount}`, position + RECORD_COUNT_POSITION);
  const record: RawRecord = { index: 0, start: 0, end: 0, keyStart: 0, keyEnd: 0, valueStart: 0 };
  const varint: VarUint = { value: 0, next: 0 };
  let p = position + BATCH_HEADER_BYTES;
  for (let i = 0; i < recordCount; i++) {
    if (p + 4 > batchEnd) throw new DecodeError(`record ${i} of ${recordCount} missing`, p);
    const bodyBytes = buf.readInt32LE(p);
    const end = p + 4 + bodyBytes;
    if (bodyBytes < 1 || end > batchEnd)
      throw new DecodeError(`record length ${bodyBytes} out of bounds`, p);
    readVarUint(buf, p + 4, end, varint);
    const keyEnd = varint.next + varint.value;
    if (varint.value < 2 || keyEnd > end)
      throw new DecodeError(`key length ${varint.value} out of bounds`, p + 4);
    record.index = i;
    record.start = p;
    record.end = end;
    record.keyStart = varint.next;
    record.keyEnd = keyEnd;
    record.valueStart = keyEnd;
    visit(record);
    p = end;
  }
  if (p !== batchEnd) throw new DecodeError(`${batchEnd - p} bytes after the last record`, p);
}
