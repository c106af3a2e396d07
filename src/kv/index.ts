export { GroupOffsets, type CommittedOffsetValue } from './group-offsets.js';
export { CheckpointStore, type CheckpointInfo, type LoadedCheckpoint } from './checkpoint-store.js';
export { OffsetsTable, type CheckpointRun, type OffsetsTableOptions, type OffsetsTableRecovery } from './offsets-table.js';
export { OffsetsTableState, fetchFromGroup } from './offsets-table-state.js';
export { ScannerOffsets, type MissingOffsetPolicy, type ScannerOffsetsPort, type ScannerOptions } from './scanner-offsets.js';
export {
  normalizeBucket, normalizeBuckets, normalizeCommitOptions, normalizeOffsetCommits, type CommitMember,
} from './validation.js';
