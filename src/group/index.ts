/**
 * src/group: the group coordinator — membership, server-side assignment, cooperative (incremental)
 * rebalancing, timers and group snapshots (docs/group-protocol.md) — and, beside it, the classic
 * JoinGroup/SyncGroup protocol (the classic-*.ts files). This file is the folder's door:
 * other folders import from here only.
 */
export {
  type TableBucket,
  type BucketRef,
  normalizeBucketRef,
  bucketKey,
  compareBucketRefs,
  formatBucketRef,
} from '../model/index.js';
export { BucketSet } from './bucket-set.js';
export { BucketMap } from './bucket-map.js';
export {
  type TableLayout,
  type TableLayoutInput,
  normalizeTableLayout,
  layoutsEqual,
  tableBucketTotal,
} from './table-layout.js';
export {
  type Assignor,
  type AssignorInput,
  type AssignorMember,
  type AssignorName,
  checkAssignment,
} from './assignor.js';
export { UniformAssignor, UNIFORM_ASSIGNOR_NAME } from './uniform-assignor.js';
export { RangeAssignor, RANGE_ASSIGNOR_NAME } from './range-assignor.js';
export {
  type MemberState,
  type ConsumerMember,
  type MemberSubscription,
  type MemberAssignment,
  LEAVE_GROUP_MEMBER_EPOCH,
  LEAVE_GROUP_STATIC_MEMBER_EPOCH,
} from './consumer-member.js';
export { type GroupState } from './group.js';
export { type GroupRecord } from './group-record.js';
export { GroupStateMachine, type GroupInspection } from './group-state-machine.js';
export {
  type GroupSnapshot,
  type GroupSnapshotMember,
  type GroupSnapshotBuckets,
  type GroupSnapshotTableLayout,
  type GroupSnapshotWriter,
  parseGroupSnapshot,
} from './group-snapshot.js';
export {
  MEMBER_TIMEOUT_MS_MAX,
  MEMBER_ID_LENGTH_MAX,
  type HeartbeatRequest,
  type HeartbeatResponse,
} from './heartbeat.js';
export {
  GroupCoordinator,
  storedSnapshotProblem,
  type GroupCoordinatorOptions,
  type GroupCoordinatorMetrics,
} from './group-coordinator.js';
export { type RemoveMembersRequest, type RemovedMember } from './member-removal.js';
export { type SubscriptionRefresh } from './group-handlers.js';
export {
  GROUP_SETTINGS_DEFAULTS,
  GROUP_SETTING_NAMES,
  resolveGroupSettings,
  type GroupSettings,
} from './group-settings.js';
export { type GroupDescription, type MemberDescription } from './group-description.js';
export {
  GroupMember,
  type GroupMemberPort,
  type MemberOptions,
  type MemberCommitOffset,
} from './group-member.js';
export { type StoredGroupSnapshot } from './group-snapshot.js';
export { ClassicCoordinator } from './classic-coordinator.js';
export { type ClassicGroupState, type ClassicGroupRecord } from './classic-record.js';
export {
  type ClassicGroupSnapshot,
  isClassicSnapshot,
  parseClassicSnapshot,
} from './classic-snapshot.js';
export {
  type ClassicGroupDescription,
  type ClassicMemberDescription,
} from './classic-description.js';
export { ClassicGroupStateMachine, type ClassicGroupInspection } from './classic-state-machine.js';
export {
  CLASSIC_NAME_LENGTH_MAX,
  type ClassicHeartbeatRequest,
  type ClassicJoinGroupRequest,
  type ClassicJoinGroupResult,
  type ClassicJoinedGroup,
  type ClassicJoinMember,
  type ClassicLeaveGroupRequest,
  type ClassicLeaveGroupResult,
  type ClassicMemberIdRequired,
  type ClassicProtocolInput,
  type ClassicSyncGroupRequest,
  type ClassicSyncGroupResult,
} from './classic-protocol.js';
