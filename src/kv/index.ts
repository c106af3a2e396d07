/**
 * src/kv: the offsets table of one offsets-bucket: the in-memory index of committed offsets (last
 * write wins, applied only once durable), pending marks, LMDB checkpoints and their checks, the
 * validation of requests at the public edge, and ScannerOffsets. Does not import compaction. This
 * file is the folder's door.
 */
export { GroupOffsets, type CommittedOffsetValue } from './group-offsets.js';
export {
  CHECKPOINT_DIR,
  CheckpointStore,
  forgetCheckpointProcessState,
  type CheckpointInfo,
  type LoadedCheckpoint,
} from './checkpoint-store.js';
export {
  SEAL_FILE,
  inspectCheckpointFile,
  readSeal,
  sealCheckpointFile,
  type CheckpointFileState,
  type CheckpointSeal,
} from './checkpoint-seal.js';
export { readLmdbMeta, type LmdbMeta, type LmdbTree } from './lmdb-meta.js';
export { checkLmdbTrees, type LmdbTreeCheck } from './lmdb-tree-check.js';
export {
  OffsetsTable,
  type CheckpointRun,
  type OffsetsTableOptions,
  type OffsetsTableRecovery,
} from './offsets-table.js';
export { OffsetsTableState, fetchFromGroup } from './offsets-table-state.js';
export { restoreStateImage, stateImage } from './state-image.js';
export {
  ScannerOffsets,
  type MissingOffsetPolicy,
  type ScannerOffsetsPort,
  type ScannerOptions,
} from './scanner-offsets.js';
export {
  normalizeBucket,
  normalizeBuckets,
  normalizeCommitOptions,
  checkCommitCount,
  normalizeOffsetCommits,
  type ClassicCommitMember,
  type CommitMember,
  type ConsumerCommitMember,
} from './validation.js';
