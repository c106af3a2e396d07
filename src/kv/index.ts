export { GroupOffsets, type CommittedOffsetValue } from './group-offsets.js';
export { OffsetsTable, type StateRestorer } from './offsets-table.js';
export { OffsetsTableState, type BucketKey, type SnapshotListener } from './offsets-table-state.js';
export { ScannerOffsets, type MissingOffsetPolicy, type ScannerOffsetsPort, type ScannerOptions } from './scanner-offsets.js';
export { bucketKeyString, normalizeBucket, normalizeBuckets, normalizeOffsetCommits, validateGroupId } from './validation.js';
