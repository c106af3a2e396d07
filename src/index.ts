/**
 * offset-store: an embedded, durable consumer-offset store. The public API, named exports only.
 */
export { OffsetStore } from './store.js';
export type { BackupReport } from './store-backup.js';
export type { ClassicGroups } from './classic-groups.js';
export type { BucketRef, TableBucket } from './model/index.js';
export type {
  BucketStats,
  CommitOptions,
  CompactOptions,
  CompactionOptions,
  CommittedOffset,
  DeleteOffsetsOptions,
  FetchOptions,
  GroupDescription,
  GroupListing,
  GroupOptions,
  GroupState,
  GroupType,
  OffsetCommit,
  OffsetStoreOptions,
  StoreStats,
} from './store-options.js';
export {
  ERROR_CODES,
  OffsetStoreError,
  isOffsetStoreError,
  type ErrorCode,
} from './errors/index.js';
export { ManualClock, SystemClock, type Clock, type Timer } from './util/index.js';
export { ScannerOffsets, type MissingOffsetPolicy, type ScannerOptions } from './kv/index.js';
export {
  NodeFileSystem,
  type FileHandle,
  type FileSystem,
  type NodeFileSystemOptions,
  type OpenFlags,
} from './io/index.js';
export type {
  BucketCompactedListener,
  BucketCompaction,
  BucketView,
  CheckpointView,
  CompactionPlan,
  CompactionReport,
  CompactionRunEvent,
  CompactionRunListener,
  CompactionStrategy,
  CompactionStrategyDefinition,
  GarbageQuery,
  JsonValue,
  LogInspector,
  SegmentGarbage,
  SegmentView,
  StrategySettings,
} from './compaction/index.js';
export type { CheckpointInfo, OffsetsTableRecovery as BucketRecoveryReport } from './kv/index.js';
export {
  GroupMember,
  RangeAssignor,
  UniformAssignor,
  type Assignor,
  type AssignorInput,
  type AssignorMember,
  type GroupMemberPort,
  type AssignorName,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type MemberCommitOffset,
  type MemberDescription,
  type MemberOptions,
  type MemberState,
  type RemoveMembersRequest,
  type RemovedMember,
  type TableLayout,
  type TableLayoutInput,
} from './group/index.js';
export type {
  ClassicGroupDescription,
  ClassicGroupState,
  ClassicHeartbeatRequest,
  ClassicJoinGroupRequest,
  ClassicJoinGroupResult,
  ClassicJoinedGroup,
  ClassicJoinMember,
  ClassicLeaveGroupRequest,
  ClassicLeaveGroupResult,
  ClassicMemberDescription,
  ClassicMemberIdRequired,
  ClassicProtocolInput,
  ClassicSyncGroupRequest,
  ClassicSyncGroupResult,
} from './group/index.js';
export type { Durability } from './log/index.js';
export {
  KafkaServer,
  startKafkaServer,
  type AclBinding,
  type BoundListener,
  type ConnectionStats,
  type KafkaServerCloseOptions,
  type KafkaServerOptions,
  type KafkaServerStats,
  type ListenerOptions,
  type ListenerTlsOptions,
  type SaslMechanism,
  type SecurityOptions,
  type SecurityProtocol,
  type SecurityStats,
  type TopicSpec,
} from './kafka/index.js';
export {
  startClusterServer,
  type BucketStatus,
  type ClusterServer,
  type ClusterServerOptions,
  type ClusterStatus,
  type ClusterTopicStatus,
  type NodeInfo,
} from './cluster/index.js';
