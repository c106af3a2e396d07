/**
 * src/admin: admin operations for operators and tools, as a facade over the public API (describe,
 * list, reset plans, deletes, compaction, stats) plus read-only tools that work on a store
 * directory without opening it (`dumpLog`, `verifyLog`). Every result is JSON-safe. This file is the
 * folder's door.
 */
export {
  StoreAdmin,
  type BucketReport,
  type BucketStatsReport,
  type ClassicGroupReport,
  type ClassicMemberReport,
  type DeleteGroupResult,
  type DeleteOffsetsResult,
  type GroupReport,
  type MemberReport,
  type RemoveMembersResult,
  type ResetPlan,
  type StatsReport,
  type StoreAdminOptions,
} from './store-admin.js';
export {
  describeResetTarget,
  planResetRows,
  type CommittedBucketOffset,
  type ResetPlanRow,
  type ResetRequest,
  type ResetTarget,
} from './reset-plan.js';
export {
  describeSelection,
  parseBucketKey,
  parseBucketOffsets,
  selectionMatches,
  validateSelection,
  type BucketOffset,
  type BucketSelection,
} from './bucket-spec.js';
export {
  dumpLog,
  type DumpBatchEntry,
  type DumpDamageEntry,
  type DumpEntry,
  type DumpOptions,
  type DumpRecordEntry,
  type DumpSegmentEntry,
  type DumpSummary,
} from './log-dump.js';
export {
  STORE_WIDE_BUCKET,
  verifyLog,
  type BucketVerification,
  type LogProblem,
  type SegmentVerification,
  type VerifyOptions,
  type VerifyReport,
} from './log-verify.js';
export {
  MANIFEST_FILE,
  liveLockHolder,
  readStoreLayout,
  type StoreLayout,
} from './store-directory.js';
