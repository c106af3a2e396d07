/**
 * GroupRecord: the internal records the coordinator's handlers emit. Replaying records through
 * `GroupStateMachine.replay` is the only way group state changes — live, after every handler, and
 * during recovery, where a persisted GroupSnapshot is expanded back into records
 * (`snapshotToRecords`). So "recovered state equals live state" holds by construction.
 *
 * Records are in-memory only: the coordinator persists just the group snapshot, at generation
 * boundaries. They mirror Kafka's consumer-group records (group epoch, member metadata, target
 * assignment member/epoch, current member assignment) with a tombstone variant where Kafka writes a
 * null value. Bucket sets in records are immutable and may be shared with the state they produce.
 */
import type { BucketSet } from './bucket-set.js';
import type { MemberAssignment, MemberSubscription } from './consumer-member.js';
import type { TableLayout } from './table-layout.js';

/** Sets the group epoch; creates the group when it does not exist. */
export interface GroupEpochRecord {
  readonly type: 'group-epoch';
  readonly groupId: string;
  readonly groupEpoch: number;
}

/** Deletes the group and everything in it. */
export interface GroupTombstoneRecord {
  readonly type: 'group-tombstone';
  readonly groupId: string;
}

/** Creates a member (joining, empty assignment) or updates its subscription. */
export interface MemberSubscriptionRecord {
  readonly type: 'member-subscription';
  readonly groupId: string;
  readonly subscription: MemberSubscription;
}

/** Sets a member's current assignment (epoch, state, assigned, pending revocation). */
export interface MemberAssignmentRecord {
  readonly type: 'member-assignment';
  readonly groupId: string;
  readonly memberId: string;
  readonly assignment: MemberAssignment;
}

/** Removes a member and its current assignment (its buckets become free). */
export interface MemberTombstoneRecord {
  readonly type: 'member-tombstone';
  readonly groupId: string;
  readonly memberId: string;
}

/** Sets one member's target assignment. */
export interface TargetMemberRecord {
  readonly type: 'target-member';
  readonly groupId: string;
  readonly memberId: string;
  readonly buckets: BucketSet;
}

/** Removes one member's target assignment. */
export interface TargetMemberTombstoneRecord {
  readonly type: 'target-member-tombstone';
  readonly groupId: string;
  readonly memberId: string;
}

/** Completes a target assignment: its epoch and the table layouts it was computed against. */
export interface TargetEpochRecord {
  readonly type: 'target-epoch';
  readonly groupId: string;
  readonly assignmentEpoch: number;
  readonly tableLayouts: ReadonlyMap<number, TableLayout>;
}

/** Any record of the group state machine. */
export type GroupRecord =
  | GroupEpochRecord
  | GroupTombstoneRecord
  | MemberSubscriptionRecord
  | MemberAssignmentRecord
  | MemberTombstoneRecord
  | TargetMemberRecord
  | TargetMemberTombstoneRecord
  | TargetEpochRecord;
