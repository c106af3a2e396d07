/**
 * Record keys and values of the offsets table, and the batch builders and decoder built on them.
 *
 * Key (starts with int16 record type):
 * - type 0, offset commit: groupId (LEB128 length + UTF-8), tableId int64, partitionId int64
 *   (-1 = null), bucketId int32;
 * - type 1, group snapshot: groupId.
 * Value (starts with int16 value version; absent for a tombstone):
 * - offset commit v0: offset int64 (any safe integer, negative ones included: Kafka clients commit
 *   -1 and -2 literally), leaderEpoch int32 (-1 = unknown), commitTimestampMs int64, metadata
 *   (LEB128 length + UTF-8, at most 4096 bytes);
 * - group snapshot v0: a msgpack map (useRecords: false, so it decodes without shared state).
 *
 * The builders size the whole batch first and then write straight into one Buffer: the hot path
 * allocates nothing per record beyond that buffer. Arguments are assumed validated at the public edge.
 */
import { Packr } from 'msgpackr';
import {
  DecodeError,
  need,
  readVarUint,
  varUintSize,
  writeVarUint,
  type VarUint,
} from './binary.js';
import { OffsetStoreError } from '../errors/index.js';
import { GROUP_ID_BYTES_MAX } from '../model/index.js';
import {
  BATCH_HEADER_BYTES,
  LENGTH_FIELD_BYTES,
  checkBatch,
  readBatchHeader,
  checkBatchFormat,
  readBatchRecordCount,
  writeBatchHeader,
  type BatchHeader,
  type RawRecord,
} from './record-batch.js';

/** Record type of an offset commit key. */
export const RECORD_TYPE_OFFSET_COMMIT = 0;
/** Record type of a group snapshot key. */
export const RECORD_TYPE_GROUP_SNAPSHOT = 1;
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
  /** User table id, a safe integer >= 0 (checked at the edge). */
  tableId: number;
  /** Partition id, or null for a non-partitioned table (stored as -1). */
  partitionId: number | null;
  /** Bucket id, an int32 >= 0. */
  bucketId: number;
  /** The committed offset: the next offset the group reads. Ignored in a tombstone. */
  offset: number;
  /** Leader epoch the offset was read under, or -1 when unknown. */
  leaderEpoch: number;
  /** Caller's metadata, at most METADATA_BYTES_MAX UTF-8 bytes ('' when none). */
  metadata: string;
  /** True to delete the key instead of setting it: the record is written without a value. */
  tombstone?: boolean;
  /** This record's commit time, when it differs from the batch's (an image of the state written back). */
  commitTimestampMs?: number;
}

function offsetKeyBytes(groupIdBytes: number): number {
  return 2 + varUintSize(groupIdBytes) + groupIdBytes + 8 + 8 + 4;
}

/** Bytes of the key prefix every offset record of a group starts with (length varint, type, group id). */
export function offsetRecordPrefixBytes(groupIdBytes: number): number {
  return varUintSize(offsetKeyBytes(groupIdBytes)) + 2 + varUintSize(groupIdBytes) + groupIdBytes;
}

/** Bytes `record` takes in a batch of its group (`prefixBytes` from offsetRecordPrefixBytes). */
export function offsetRecordBytes(prefixBytes: number, record: OffsetRecordSpec): number {
  if (record.tombstone === true) return 4 + prefixBytes + 20;
  const metadataBytes = record.metadata.length === 0 ? 0 : Buffer.byteLength(record.metadata);
  return 4 + prefixBytes + 20 + 22 + varUintSize(metadataBytes) + metadataBytes;
}

/**
 * Builds one batch of offset records of one group, all stamped with `commitTimestampMs`.
 * The batch is unsealed: the log assigns its log offset and checksum.
 *
 * Hot path: the key prefix (length varint, record type, group id) is the same for every record, so
 * it is encoded once and copied; fixed-width fields go through one DataView.
 */
export function buildOffsetBatch(
  groupId: string,
  records: readonly OffsetRecordSpec[],
  commitTimestampMs: number,
): Buffer {
  const groupIdBytes = Buffer.byteLength(groupId);
  const keyBytes = offsetKeyBytes(groupIdBytes);
  const prefixBytes = varUintSize(keyBytes) + 2 + varUintSize(groupIdBytes) + groupIdBytes;
  let sizeBytes = BATCH_HEADER_BYTES;
  let metadataSeen = false;
  // Uniform: every record a value without metadata or a time of its own, of one table, partition and
  // leader epoch. Such records differ only in bucket id and offset (see fillUniformRecords).
  const first = records[0];
  let uniform = first !== undefined;
  for (const r of records) {
    sizeBytes += 4 + prefixBytes + 20;
    if (r.tombstone !== true) {
      const metadataBytes = r.metadata.length === 0 ? 0 : Buffer.byteLength(r.metadata);
      if (metadataBytes > 0) metadataSeen = true;
      sizeBytes += 22 + varUintSize(metadataBytes) + metadataBytes;
    }
    if (
      uniform &&
      (r.tombstone === true ||
        r.metadata.length > 0 ||
        r.commitTimestampMs !== undefined ||
        r.tableId !== first!.tableId ||
        r.partitionId !== first!.partitionId ||
        r.leaderEpoch !== first!.leaderEpoch)
    )
      uniform = false;
  }
  const buf = Buffer.allocUnsafe(sizeBytes);
  writeBatchHeader(buf, sizeBytes, commitTimestampMs, records.length);
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  // The first record's key prefix is written in place, then copied for the others.
  const prefixAt = BATCH_HEADER_BYTES + 4;
  if (records.length > 0) {
    const q = writeVarUint(buf, groupIdBytes, writeVarUint(buf, keyBytes, prefixAt) + 2);
    dv.setInt16(q - varUintSize(groupIdBytes) - 2, RECORD_TYPE_OFFSET_COMMIT, true);
    buf.write(groupId, q, groupIdBytes, 'utf8');
  }
  const timestampHigh = Math.floor(commitTimestampMs / TWO_POW_32);
  const timestampLow = commitTimestampMs - timestampHigh * TWO_POW_32;
  let p = BATCH_HEADER_BYTES;
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const lengthAt = p;
    if (i > 0) {
      if (prefixBytes <= 64) {
        // Four bytes at a time: a call to copyWithin costs more than this for a short prefix.
        let k = 0;
        for (; k + 4 <= prefixBytes; k += 4) dv.setUint32(p + 4 + k, dv.getUint32(prefixAt + k));
        for (; k < prefixBytes; k++) buf[p + 4 + k] = buf[prefixAt + k]!;
      } else buf.copyWithin(p + 4, prefixAt, prefixAt + prefixBytes);
    }
    p += 4 + prefixBytes;
    setInt64(dv, p, r.tableId);
    setInt64(dv, p + 8, r.partitionId ?? -1);
    dv.setInt32(p + 16, r.bucketId, true);
    p += 20;
    if (r.tombstone !== true) {
      dv.setInt16(p, VALUE_VERSION, true);
      setInt64(dv, p + 2, r.offset);
      dv.setInt32(p + 10, r.leaderEpoch, true);
      if (r.commitTimestampMs === undefined) {
        dv.setUint32(p + 14, timestampLow, true);
        dv.setInt32(p + 18, timestampHigh, true);
      } else setInt64(dv, p + 14, r.commitTimestampMs);
      if (metadataSeen && r.metadata.length > 0) {
        const metadataBytes = Buffer.byteLength(r.metadata);
        p = writeVarUint(buf, metadataBytes, p + 22);
        p += buf.write(r.metadata, p, metadataBytes, 'utf8');
      } else {
        buf[p + 22] = 0;
        p += 23;
      }
    }
    dv.setInt32(lengthAt, p - lengthAt - 4, true);
    if (uniform && records.length > 1) {
      fillUniformRecords(buf, dv, records, p - lengthAt);
      break;
    }
  }
  return buf;
}

/**
 * The records after the first of a uniform batch: the first record (written at BATCH_HEADER_BYTES,
 * `recordBytes` long) is copied into every slot, doubling the copied span each time (log2(n) memory
 * copies instead of a dozen field writes per record), and then only each record's bucket id and
 * offset are written over the copy. Layout of a uniform record from its start: length int32, key
 * (prefix, tableId int64, partitionId int64, bucketId int32), value (version int16, offset int64, ...).
 */
function fillUniformRecords(
  buf: Buffer,
  dv: DataView,
  records: readonly OffsetRecordSpec[],
  recordBytes: number,
): void {
  const start = BATCH_HEADER_BYTES;
  const count = records.length;
  for (let copied = 1; copied < count;) {
    const k = Math.min(copied, count - copied);
    buf.copyWithin(start + copied * recordBytes, start, start + k * recordBytes);
    copied += k;
  }
  const valueAt = recordBytes - 23; // version int16, offset int64, leaderEpoch int32, timestamp int64, metadata length 0
  const bucketAt = valueAt - 4;
  for (let i = 1, at = start + recordBytes; i < count; i++, at += recordBytes) {
    const r = records[i]!;
    dv.setInt32(at + bucketAt, r.bucketId, true);
    setInt64(dv, at + valueAt + 2, r.offset);
  }
}

const TWO_POW_32 = 4294967296;

/** Writes a safe integer as little-endian int64. */
function setInt64(dv: DataView, position: number, value: number): void {
  if (value >= 0 && value < TWO_POW_32) {
    dv.setUint32(position, value, true);
    dv.setUint32(position + 4, 0, true);
    return;
  }
  if (value === -1) {
    dv.setInt32(position, -1, true);
    dv.setInt32(position + 4, -1, true);
    return;
  }
  const high = Math.floor(value / TWO_POW_32);
  dv.setUint32(position, value - high * TWO_POW_32, true);
  dv.setInt32(position + 4, high, true);
}

/** Builds one batch holding a group snapshot upsert, or its tombstone when `snapshot` is null. */
export function buildGroupSnapshotBatch(
  groupId: string,
  snapshot: unknown,
  commitTimestampMs: number,
): Buffer {
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
  /** Record type: 0 offset commit, 1 group snapshot. */
  type: 0 | 1;
  /** Index of the record within its batch (with the batch's log offset, its position in the log). */
  index: number;
  /** The group the record belongs to. */
  groupId: string;
  /** Type 0: the user table. */
  tableId: number;
  /** Type 0: the partition, or null for a non-partitioned table. */
  partitionId: number | null;
  /** Type 0: the bucket. */
  bucketId: number;
  /** True when the record has no value: it deletes the offset (type 0) or the group's snapshot (type 1). */
  tombstone: boolean;
  /** Type 0 value: the committed offset. */
  offset: number;
  /** Type 0 value: the leader epoch, -1 when unknown. */
  leaderEpoch: number;
  /** Type 0 value: when the offset was committed, ms since the epoch. */
  commitTimestampMs: number;
  /** Type 0 value: the caller's metadata. */
  metadata: string;
  /** Type 1 value: the msgpack-decoded group snapshot, unchecked (the group layer parses it). */
  snapshot: unknown;
}

function newDecodedRecord(): DecodedRecord {
  return {
    type: 0,
    index: 0,
    groupId: '',
    tableId: 0,
    partitionId: null,
    bucketId: 0,
    tombstone: false,
    offset: 0,
    leaderEpoch: -1,
    commitTimestampMs: 0,
    metadata: '',
    snapshot: null,
  };
}

/**
 * Decodes every record of a checked batch at `buf[position]`. Consecutive records of the same group
 * share one decoded group id string. Throws DecodeError on any malformed key or value.
 */
export function decodeBatchRecords(
  buf: Buffer,
  position: number,
  visit: (record: DecodedRecord, raw: RawRecord) => void,
): void {
  checkBatchFormat(buf, position);
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const batchEnd = position + LENGTH_FIELD_BYTES + dv.getUint32(position, true);
  const recordCount = readBatchRecordCount(buf, position);
  if (recordCount < 0) throw new DecodeError(`negative record count ${recordCount}`, position);
  const out = newDecodedRecord();
  const raw: RawRecord = { index: 0, start: 0, end: 0, keyStart: 0, keyEnd: 0, valueStart: 0 };
  const varint: VarUint = { value: 0, next: 0 };
  let lastGroupStart = -1;
  let lastGroupBytes = -1;
  let p = position + BATCH_HEADER_BYTES;
  for (let i = 0; i < recordCount; i++) {
    if (p + 4 > batchEnd) throw new DecodeError(`record ${i} of ${recordCount} missing`, p);
    const bodyBytes = dv.getInt32(p, true);
    const end = p + 4 + bodyBytes;
    if (bodyBytes < 1 || end > batchEnd)
      throw new DecodeError(`record length ${bodyBytes} out of bounds`, p);
    readVarUint(buf, p + 4, end, varint);
    const keyStart = varint.next;
    const keyEnd = keyStart + varint.value;
    if (varint.value < 2 || keyEnd > end)
      throw new DecodeError(`key length ${varint.value} out of bounds`, p + 4);
    const type = dv.getInt16(keyStart, true);
    readVarUint(buf, keyStart + 2, keyEnd, varint);
    const groupStart = varint.next;
    const groupBytes = varint.value;
    need(groupStart, groupBytes, keyEnd, 'group id');
    if (groupBytes === 0 || groupBytes > GROUP_ID_BYTES_MAX)
      throw new DecodeError(`group id of ${groupBytes} bytes`, keyStart);
    if (groupBytes !== lastGroupBytes || !sameBytes(dv, lastGroupStart, groupStart, groupBytes)) {
      out.groupId = buf.toString('utf8', groupStart, groupStart + groupBytes);
    }
    lastGroupStart = groupStart;
    lastGroupBytes = groupBytes;
    const afterGroup = groupStart + groupBytes;
    out.index = i;
    out.tombstone = keyEnd === end;
    if (type === RECORD_TYPE_OFFSET_COMMIT) {
      decodeOffsetKeyRest(dv, afterGroup, keyEnd, out);
      if (!out.tombstone) decodeOffsetValue(buf, dv, keyEnd, end, out, varint);
    } else if (type === RECORD_TYPE_GROUP_SNAPSHOT) {
      if (afterGroup !== keyEnd)
        throw new DecodeError('trailing bytes in a group snapshot key', afterGroup);
      out.type = 1;
      out.snapshot = out.tombstone ? null : decodeSnapshotValue(buf, keyEnd, end);
    } else {
      throw new DecodeError(`unknown record type ${type}`, keyStart);
    }
    raw.index = i;
    raw.start = p;
    raw.end = end;
    raw.keyStart = keyStart;
    raw.keyEnd = keyEnd;
    raw.valueStart = keyEnd;
    visit(out, raw);
    p = end;
  }
  if (p !== batchEnd) throw new DecodeError(`${batchEnd - p} bytes after the last record`, p);
}

/** True when `buf[a, a + n)` equals `buf[b, b + n)` (a < 0 means no previous bytes). */
function sameBytes(dv: DataView, a: number, b: number, n: number): boolean {
  if (a < 0) return false;
  let k = 0;
  for (; k + 4 <= n; k += 4) if (dv.getUint32(a + k) !== dv.getUint32(b + k)) return false;
  for (; k < n; k++) if (dv.getUint8(a + k) !== dv.getUint8(b + k)) return false;
  return true;
}

/** Reads a little-endian int64 that must be a safe integer, -(2^53 - 1) to 2^53 - 1. */
function getInt64(dv: DataView, position: number): number {
  const high = dv.getInt32(position + 4, true);
  const low = dv.getUint32(position, true);
  // high in [-2^21, 2^21) covers [-2^53, 2^53); -2^53 itself (high -2^21, low 0) is not safe.
  if (high > 0x1fffff || high < -0x200000 || (high === -0x200000 && low === 0))
    throw new DecodeError('int64 outside the safe integer range', position);
  return high * TWO_POW_32 + low;
}

function decodeOffsetKeyRest(dv: DataView, p: number, keyEnd: number, out: DecodedRecord): void {
  if (keyEnd - p !== 20) throw new DecodeError('offset commit key of the wrong size', p);
  out.type = 0;
  out.tableId = getInt64(dv, p);
  const partitionId = getInt64(dv, p + 8);
  out.partitionId = partitionId === -1 ? null : partitionId;
  out.bucketId = dv.getInt32(p + 16, true);
  if (out.tableId < 0 || partitionId < -1 || out.bucketId < 0)
    throw new DecodeError('negative id in an offset commit key', p);
}

function decodeOffsetValue(
  buf: Buffer,
  dv: DataView,
  p: number,
  end: number,
  out: DecodedRecord,
  varint: VarUint,
): void {
  need(p, 23, end, 'offset commit value');
  const version = dv.getInt16(p, true);
  if (version !== VALUE_VERSION)
    throw new DecodeError(`unknown offset value version ${version}`, p);
  out.offset = getInt64(dv, p + 2);
  out.leaderEpoch = dv.getInt32(p + 10, true);
  out.commitTimestampMs = getInt64(dv, p + 14);
  if (buf[p + 22] === 0 && p + 23 === end) {
    out.metadata = '';
  } else {
    readVarUint(buf, p + 22, end, varint);
    const metadataBytes = varint.value;
    if (metadataBytes > METADATA_BYTES_MAX || varint.next + metadataBytes !== end)
      throw new DecodeError(`metadata of ${metadataBytes} bytes does not fill the value`, p + 22);
    out.metadata = metadataBytes === 0 ? '' : buf.toString('utf8', varint.next, end);
  }
}

function decodeSnapshotValue(buf: Buffer, p: number, end: number): unknown {
  need(p, 2, end, 'group snapshot value');
  const version = buf.readInt16LE(p);
  if (version !== VALUE_VERSION)
    throw new DecodeError(`unknown group snapshot version ${version}`, p);
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
export function decodeBatch(
  buf: Buffer,
  position = 0,
  batchBytesMax = buf.length - position,
): { header: BatchHeader; records: DecodedRecord[] } {
  const check = checkBatch(buf, position, buf.length, batchBytesMax);
  if (check.kind !== 'ok')
    throw new OffsetStoreError('CORRUPT_MESSAGE', `batch at byte ${position}: ${check.reason}`);
  const records: DecodedRecord[] = [];
  try {
    decodeBatchRecords(buf, position, (r) => records.push({ ...r }));
  } catch (error) {
    if (error instanceof DecodeError)
      throw new OffsetStoreError('CORRUPT_MESSAGE', `batch at byte ${position}: ${error.message}`, {
        cause: error,
      });
    throw error;
  }
  return { header: readBatchHeader(buf, position), records };
}
