/**
 * src/codec: the bytes of the on-disk format (docs/on-disk-format.md): the KvRecordBatch header and
 * its checksum, the record keys and values of offset commits and group snapshots, and xxh32. Pure
 * functions over buffers, no I/O; a malformed input is a DecodeError the callers turn into
 * CORRUPT_MESSAGE. This file is the folder's door.
 */
export { loadChecksum, xxh32 } from './checksum.js';
export { DecodeError } from './binary.js';
export {
  BATCH_HEADER_BYTES,
  BATCH_MAGIC,
  BATCH_MAGIC_POSITION,
  LENGTH_FIELD_BYTES,
  checkBatch,
  checkBatchFormat,
  forEachRawRecord,
  peekBatchLogOffset,
  readBatchChecksum,
  readBatchDurableBelow,
  readBatchHeader,
  readBatchLogOffset,
  readBatchRecordCount,
  readBatchWriterId,
  resizeBatch,
  BATCH_CHECKSUM_END,
  SYNC_LAG_MAX,
  sealBatch,
  stampBatchWriter,
  writeBatchHeader,
  type BatchCheck,
  type BatchHeader,
  type RawRecord,
} from './record-batch.js';
export {
  METADATA_BYTES_MAX,
  RECORD_TYPE_GROUP_SNAPSHOT,
  RECORD_TYPE_OFFSET_COMMIT,
  buildGroupSnapshotBatch,
  buildOffsetBatch,
  decodeBatch,
  offsetRecordBytes,
  offsetRecordPrefixBytes,
  packSnapshot,
  unpackSnapshot,
  decodeBatchRecords,
  type DecodedRecord,
  type OffsetRecordSpec,
} from './records.js';
