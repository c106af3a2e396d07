/**
 * GroupRecord: the internal records the coordinator's handlers emit. Replaying records through
 * `GroupStateMachine.replay` is the only way group state changes — live, after every handler, and
 * during recovery, where a persisted GroupSnapshot is expanded back into records
 * (`snapshotToRecords`). So "recovered state equals live state" holds by construction.
 *
 * Records are in-memory only: the coordinator persists just the group snapshot, after every
 * operation that changed the group. They mirror Kafka's consumer-group records (group epoch, member metadata, target
 * assignment member/epoch, current member assignment) with a tombstone variant where Kafka writes a
 * null value. Bucket sets in records are immutable and may be shared with the state they produce.
 */
import type { BucketSet } from './bucket-set.js';
import type { MemberAssignment, MemberSubscription } from './consumer-member.js';
import type { TableLayout } from './table-layout.js';

/** Sets the group epoch; creates the group when it does not exist. */
export interface GroupEpochRecord {
  /** Discriminant. */
  readonly type: 'group-epoch';
  /** The group it changes. */
  readonly groupId: string;
  /** The new group epoch; never lower than the current one. */
  readonly groupEpoch: number;
}

/** Deletes the group and everything in it. */
export interface GroupTombstoneRecord {
  /** Discriminant. */
  readonly type: 'group-tombstone';
  /** The group to delete. */
  readonly groupId: string;
}

/** Creates a member (joining, empty assignment) or updates its subscription. */
export interface MemberSubscriptionRecord {
  /** Discriminant. */
  readonly type: 'member-subscription';
  /** The member's group. */
  readonly groupId: string;
  /** The member's whole subscription (replaces the previous one). */
  readonly subscription: MemberSubscription;
}

/** Sets a member's current assignment (epoch, state, assigned, pending revocation). */
export interface MemberAssignmentRecord {
  /** Discriminant. */
  readonly type: 'member-assignment';
  /** The member's group. */
  readonly groupId: string;
  /** The member; it must exist. */
  readonly memberId: string;
  /** Its new current assignment; no bucket may end up with two owners. */
  readonly assignment: MemberAssignment;
}

/** Removes a member and its current assignment (its buckets become free). */
export interface MemberTombstoneRecord {
  /** Discriminant. */
  readonly type: 'member-tombstone';
  /** The member's group. */
  readonly groupId: string;
  /** The member to remove; it must exist. */
  readonly memberId: string;
}

/** Sets one member's target assignment. */
export interface TargetMemberRecord {
  /** Discriminant. */
  readonly type: 'target-member';
  /** The member's group. */
  readonly groupId: string;
  /** The member whose target it is. */
  readonly memberId: string;
  /** Its whole target (replaces the previous one). */
  readonly buckets: BucketSet;
}

/** Removes one member's target assignment. */
export interface TargetMemberTombstoneRecord {
  /** Discriminant. */
  readonly type: 'target-member-tombstone';
  /** The member's group. */
  readonly groupId: string;
  /** The member whose target is removed. */
  readonly memberId: string;
}

/** Completes a target assignment: its epoch and the table layouts it was computed against. */
export interface TargetEpochRecord {
  /** Discriminant. */
  readonly type: 'target-epoch';
  /** The group. */
  readonly groupId: string;
  /** The new assignment epoch; never above the group epoch. */
  readonly assignmentEpoch: number;
  /** The layouts the target was computed against, remembered so a restart is not a layout change. */
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
