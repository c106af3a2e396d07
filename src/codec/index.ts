export { loadChecksum, xxh32 } from './checksum.js';
export { DecodeError } from './binary.js';
export {
  BATCH_HEADER_BYTES, BATCH_MAGIC, BATCH_MAGIC_POSITION, LENGTH_FIELD_BYTES, checkBatch, forEachRawRecord, peekBatchLogOffset, readBatchChecksum, readBatchDurableBelow, readBatchHeader, readBatchLogOffset,
  readBatchRecordCount, resizeBatch, BATCH_CHECKSUM_END, SYNC_LAG_MAX, sealBatch, writeBatchHeader, type BatchCheck, type BatchHeader, type RawRecord,
} from './record-batch.js';
export {
  METADATA_BYTES_MAX, RECORD_TYPE_GROUP_SNAPSHOT, RECORD_TYPE_OFFSET_COMMIT, buildGroupSnapshotBatch,
  buildOffsetBatch, decodeBatch, packSnapshot, unpackSnapshot, decodeBatchRecords, type DecodedRecord, type OffsetRecordSpec,
} from './records.js';
