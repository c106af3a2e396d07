/**
 * ConsumerMember: the coordinator's view of one member of a group — its subscription (what it asked
 * for) and its current assignment (what it may own now, at which member epoch, and in which
 * reconciliation state). Objects are immutable; a change is a new object carried by a record.
 *
 * Member epochs: 0 = joining, -2 = a static member that left temporarily (its assignment is kept for
 * its instance id), > 0 = the target assignment epoch the member has reconciled to (or is revoking
 * towards, in UNREVOKED_PARTITIONS).
 */
import { BucketSet } from './bucket-set.js';

/** KIP-848 per-member reconciliation states. */
export type MemberState = 'STABLE' | 'UNREVOKED_PARTITIONS' | 'UNRELEASED_PARTITIONS';

/** Member epoch sent to leave the group for good. */
export const LEAVE_GROUP_MEMBER_EPOCH = -1;
/** Member epoch of a static member that left temporarily. */
export const LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2;

/** What a member asked for: changes to it are what bumps the group epoch. */
export interface MemberSubscription {
  /** The member's id, unique in its group. */
  readonly memberId: string;
  /** Static membership id, or null for a dynamic member. */
  readonly instanceId: string | null;
  /** Sorted, duplicate-free. */
  readonly subscribedTableIds: readonly number[];
  /** Preferred assignor, or null for the coordinator's default. */
  readonly assignor: string | null;
  /** Silence after which the member is removed, in ms. */
  readonly sessionTimeoutMs: number;
  /** Time it has to release revoked buckets before it is removed, in ms. */
  readonly rebalanceTimeoutMs: number;
}

/** Where a member stands in reconciliation towards its target assignment. */
export interface MemberAssignment {
  /** 0 joining, -2 a static member away, otherwise the assignment epoch reached (or being revoked towards). */
  readonly memberEpoch: number;
  /**
   * The epoch before the last change: a heartbeat at it is accepted when the member owns nothing beyond
   * `assigned` (its last response was lost).
   */
  readonly previousMemberEpoch: number;
  /** Where the member stands in reconciliation (KIP-848). */
  readonly state: MemberState;
  /** Buckets the member may own now. */
  readonly assigned: BucketSet;
  /** Buckets the member must release; it still owns them until it reports so. */
  readonly pendingRevocation: BucketSet;
}

/** A member: subscription plus current assignment. */
export type ConsumerMember = MemberSubscription & MemberAssignment;

/** The assignment of a member that has just joined (or rejoined after abandoning its buckets). */
export const JOINING_ASSIGNMENT: MemberAssignment = Object.freeze({
  memberEpoch: 0,
  previousMemberEpoch: 0,
  state: 'STABLE',
  assigned: BucketSet.EMPTY,
  pendingRevocation: BucketSet.EMPTY,
});

/** True when the member has finished reconciling to the given target assignment epoch. */
export function isReconciledTo(member: MemberAssignment, assignmentEpoch: number): boolean {
  return member.state === 'STABLE' && member.memberEpoch === assignmentEpoch;
}

/** True when two subscriptions are equal field by field. */
export function subscriptionsEqual(a: MemberSubscription, b: MemberSubscription): boolean {
  return (
    a.memberId === b.memberId &&
    a.instanceId === b.instanceId &&
    tableIdsEqual(a.subscribedTableIds, b.subscribedTableIds) &&
    a.assignor === b.assignor &&
    a.sessionTimeoutMs === b.sessionTimeoutMs &&
    a.rebalanceTimeoutMs === b.rebalanceTimeoutMs
  );
}

/** True when two sorted table-id lists are equal. */
export function tableIdsEqual(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}
