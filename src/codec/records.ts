/**
 * Record keys and values of the offsets table, and the batch builders and decoder built on them.
 *
 * Key (starts with int16 record type):
 * - type 0, offset commit: groupId (LEB128 length + UTF-8), tableId int64, partitionId int64
 *   (-1 = null), bucketId int32;
 * - type 1, group snapshot: groupId.
 * Value (starts with int16 value version; absent for a tombstone):
 * - offset commit v0: offset int64, leaderEpoch int32 (-1 = unknown), commitTimestampMs int64,
 *   metadata (LEB128 length + UTF-8, at most 4096 bytes);
 * - group snapshot v0: a msgpack map (useRecords: false, so it decodes without shared state).
 *
 * The builders size the whole batch first and then write straight into one Buffer: the hot path
 * allocates nothing per record beyond that buffer. Arguments are assumed validated at the public edge.
 */
import { Packr } from 'msgpackr';
import { DecodeError, need, readInt64, readVarUint, varUintSize, writeInt64, writeVarUint, type VarUint } from './binary.js';
import { OffsetStoreError } from '../errors/index.js';
import { BATCH_HEADER_BYTES, checkBatch, forEachRawRecord, readBatchHeader, writeBatchHeader, type BatchHeader, type RawRecord } from './record-batch.js';

/** Record type of an offset commit key. */
export const RECORD_TYPE_OFFSET_COMMIT = 0;
/** Record type of a group snapshot key. */
export const RECORD_TYPE_GROUP_SNAPSHOT = 1;
/** Longest group id, in UTF-8 bytes. */
export const GROUP_ID_BYTES_MAX = 255;
/** Longest offset metadata, in UTF-8 bytes. */
export const METADATA_BYTES_MAX = 4096;

const VALUE_VERSION = 0;
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

/** msgpack bytes of a group snapshot (the same encoding as in a snapshot record's value). */
export function packSnapshot(snapshot: unknown): Buffer {
  return packr.pack(snapshot);
}

/** Decodes `packSnapshot` output; throws DecodeError when the bytes are not msgpack. */
export function unpackSnapshot(bytes: Uint8Array): unknown {
  try {
    return packr.unpack(bytes);
  } catch (error) {
    throw new DecodeError(`undecodable group snapshot (${(error as Error).message})`, 0);
  }
}

/** One offset record to encode: a value, or a tombstone when `tombstone` is true. */
export interface OffsetRecordSpec {
  tableId: number;
  partitionId: number | null;
  bucketId: number;
  offset: number;
  leaderEpoch: number;
  metadata: string;
  tombstone?: boolean;
}

function offsetKeyBytes(groupIdBytes: number): number {
  return 2 + varUintSize(groupIdBytes) + groupIdBytes + 8 + 8 + 4;
}

/**
 * Builds one batch of offset records of one group, all stamped with `commitTimestampMs`.
 * The batch is unsealed: the log assigns its log offset and checksum.
 */
export function buildOffsetBatch(groupId: string, records: readonly OffsetRecordSpec[], commitTimestampMs: number): Buffer {
  const groupIdBytes = Buffer.byteLength(groupId);
  const keyBytes = offsetKeyBytes(groupIdBytes);
  const recordOverhead = varUintSize(keyBytes) + keyBytes;
  let sizeBytes = BATCH_HEADER_BYTES;
  for (const r of records) {
    sizeBytes += 4 + recordOverhead;
    if (r.tombstone !== true) {
      const metadataBytes = r.metadata.length === 0 ? 0 : Buffer.byteLength(r.metadata);
      sizeBytes += 22 + varUintSize(metadataBytes) + metadataBytes;
    }
  }
  const buf = Buffer.allocUnsafe(sizeBytes);
  writeBatchHeader(buf, sizeBytes, commitTimestampMs, records.length);
  let p = BATCH_HEADER_BYTES;
  for (const r of records) {
    const lengthAt = p;
    p = writeVarUint(buf, keyBytes, p + 4);
    buf.writeInt16LE(RECORD_TYPE_OFFSET_COMMIT, p);
    p = writeVarUint(buf, groupIdBytes, p + 2);
    p += buf.write(groupId, p, groupIdBytes, 'utf8');
    writeInt64(buf, r.tableId, p);
    writeInt64(buf, r.partitionId ?? -1, p + 8);
    buf.writeInt32LE(r.bucketId, p + 16);
    p += 20;
    if (r.tombstone !== true) {
      buf.writeInt16LE(VALUE_VERSION, p);
      writeInt64(buf, r.offset, p + 2);
      buf.writeInt32LE(r.leaderEpoch, p + 10);
      writeInt64(buf, commitTimestampMs, p + 14);
      const metadataBytes = r.metadata.length === 0 ? 0 : Buffer.byteLength(r.metadata);
      p = writeVarUint(buf, metadataBytes, p + 22);
      if (metadataBytes > 0) p += buf.write(r.metadata, p, metadataBytes, 'utf8');
    }
    buf.writeInt32LE(p - lengthAt - 4, lengthAt);
  }
  return buf;
}

/** Builds one batch holding a group snapshot upsert, or its tombstone when `snapshot` is null. */
export function buildGroupSnapshotBatch(groupId: string, snapshot: unknown, commitTimestampMs: number): Buffer {
  const groupIdBytes = Buffer.byteLength(groupId);
  const keyBytes = 2 + varUintSize(groupIdBytes) + groupIdBytes;
  const packed = snapshot === null ? undefined : packr.pack(snapshot);
  const valueBytes = packed === undefined ? 0 : 2 + packed.length;
  const sizeBytes = BATCH_HEADER_BYTES + 4 + varUintSize(keyBytes) + keyBytes + valueBytes;
  const buf = Buffer.allocUnsafe(sizeBytes);
  writeBatchHeader(buf, sizeBytes, commitTimestampMs, 1);
  let p = writeVarUint(buf, keyBytes, BATCH_HEADER_BYTES + 4);
  buf.writeInt16LE(RECORD_TYPE_GROUP_SNAPSHOT, p);
  p = writeVarUint(buf, groupIdBytes, p + 2);
  p += buf.write(groupId, p, groupIdBytes, 'utf8');
  if (packed !== undefined) {
    buf.writeInt16LE(VALUE_VERSION, p);
    packed.copy(buf, p + 2);
    p += 2 + packed.length;
  }
  buf.writeInt32LE(p - BATCH_HEADER_BYTES - 4, BATCH_HEADER_BYTES);
  return buf;
}

/**
 * One decoded record. The decoder reuses a single instance: read what you need during the visit.
 * Offset fields are meaningful for type 0, `snapshot` for type 1; `tombstone` for both.
 */
export interface DecodedRecord {
  type: 0 | 1;
  index: number;
  groupId: string;
  tableId: number;
  partitionId: number | null;
  bucketId: number;
  tombstone: boolean;
  offset: number;
  leaderEpoch: number;
  commitTimestampMs: number;
  metadata: string;
  snapshot: unknown;
}

function newDecodedRecord(): DecodedRecord {
  return { type: 0, index: 0, groupId: '', tableId: 0, partitionId: null, bucketId: 0, tombstone: false, offset: 0, leaderEpoch: -1, commitTimestampMs: 0, metadata: '', snapshot: null };
}

/**
 * Decodes every record of a checked batch at `buf[position]`. Consecutive records of the same group
 * share one decoded group id string. Throws DecodeError on any malformed key or value.
 */
export function decodeBatchRecords(buf: Buffer, position: number, visit: (record: DecodedRecord, raw: RawRecord) => void): void {
  const out = newDecodedRecord();
  const varint: VarUint = { value: 0, next: 0 };
  let lastGroupStart = -1;
  let lastGroupBytes = -1;
  forEachRawRecord(buf, position, (raw) => {
    const { keyStart, keyEnd } = raw;
    const type = buf.readInt16LE(keyStart);
    readVarUint(buf, keyStart + 2, keyEnd, varint);
    const groupStart = varint.next;
    const groupBytes = varint.value;
    need(groupStart, groupBytes, keyEnd, 'group id');
    if (groupBytes === 0 || groupBytes > GROUP_ID_BYTES_MAX) throw new DecodeError(`group id of ${groupBytes} bytes`, keyStart);
    if (lastGroupStart < 0 || groupBytes !== lastGroupBytes || buf.compare(buf, lastGroupStart, lastGroupStart + groupBytes, groupStart, groupStart + groupBytes) !== 0) {
      out.groupId = buf.toString('utf8', groupStart, groupStart + groupBytes);
    }
    lastGroupStart = groupStart;
    lastGroupBytes = groupBytes;
    const afterGroup = groupStart + groupBytes;
    out.index = raw.index;
    out.tombstone = raw.valueStart === raw.end;
    if (type === RECORD_TYPE_OFFSET_COMMIT) {
      decodeOffsetKeyRest(buf, afterGroup, keyEnd, out);
      if (!out.tombstone) decodeOffsetValue(buf, raw.valueStart, raw.end, out, varint);
    } else if (type === RECORD_TYPE_GROUP_SNAPSHOT) {
      if (afterGroup !== keyEnd) throw new DecodeError('trailing bytes in a group snapshot key', afterGroup);
      out.type = 1;
      out.snapshot = out.tombstone ? null : decodeSnapshotValue(buf, raw.valueStart, raw.end);
    } else {
      throw new DecodeError(`unknown record type ${type}`, keyStart);
    }
    visit(out, raw);
  });
}

function decodeOffsetKeyRest(buf: Buffer, p: number, keyEnd: number, out: DecodedRecord): void {
  if (keyEnd - p !== 20) throw new DecodeError('offset commit key of the wrong size', p);
  out.type = 0;
  out.tableId = readInt64(buf, p);
  const partitionId = readInt64(buf, p + 8);
  out.partitionId = partitionId === -1 ? null : partitionId;
  out.bucketId = buf.readInt32LE(p + 16);
  if (out.tableId < 0 || partitionId < -1 || out.bucketId < 0) throw new DecodeError('negative id in an offset commit key', p);
}

function decodeOffsetValue(buf: Buffer, p: number, end: number, out: DecodedRecord, varint: VarUint): void {
  need(p, 22, end, 'offset commit value');
  const version = buf.readInt16LE(p);
  if (version !== VALUE_VERSION) throw new DecodeError(`unknown offset value version ${version}`, p);
  out.offset = readInt64(buf, p + 2);
  out.leaderEpoch = buf.readInt32LE(p + 10);
  out.commitTimestampMs = readInt64(buf, p + 14);
  readVarUint(buf, p + 22, end, varint);
  const metadataBytes = varint.value;
  if (metadataBytes > METADATA_BYTES_MAX || varint.next + metadataBytes !== end) throw new DecodeError(`metadata of ${metadataBytes} bytes does not fill the value`, p + 22);
  out.metadata = metadataBytes === 0 ? '' : buf.toString('utf8', varint.next, end);
  if (out.offset < 0) throw new DecodeError(`negative committed offset ${out.offset}`, p + 2);
}

function decodeSnapshotValue(buf: Buffer, p: number, end: number): unknown {
  need(p, 2, end, 'group snapshot value');
  const version = buf.readInt16LE(p);
  if (version !== VALUE_VERSION) throw new DecodeError(`unknown group snapshot version ${version}`, p);
  try {
    return packr.unpack(buf.subarray(p + 2, end));
  } catch (error) {
    throw new DecodeError(`undecodable group snapshot (${(error as Error).message})`, p + 2);
  }
}

/**
 * Checks and decodes one whole batch at `buf[position]` (tests and tools): the header and a copy of
 * every record. Anything but a complete valid batch raises CORRUPT_MESSAGE.
 */
export function decodeBatch(buf: Buffer, position = 0, batchBytesMax = buf.length - position): { header: BatchHeader; records: DecodedRecord[] } {
  const check = checkBatch(buf, position, buf.length, batchBytesMax);
  if (check.kind !== 'ok') throw new OffsetStoreError('CORRUPT_MESSAGE', `batch at byte ${position}: ${check.reason}`);
  const records: DecodedRecord[] = [];
  try {
    decodeBatchRecords(buf, position, (r) => records.push({ ...r }));
  } catch (error) {
    if (error instanceof DecodeError) throw new OffsetStoreError('CORRUPT_MESSAGE', `batch at byte ${position}: ${error.message}`, { cause: error });
    throw error;
  }
  return { header: readBatchHeader(buf, position), records };
}
