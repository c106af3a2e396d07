/**
 * Group: the in-memory state of one consumer group, changed only by replaying GroupRecords.
 *
 * Invariants (asserted on every replay):
 *  - a bucket has at most one owner: it is in the `assigned` or `pendingRevocation` set of at most
 *    one member (`ownerOf` is that index);
 *  - after each complete target assignment, a bucket is in the target of at most one member
 *    (assignor output is checked before it becomes records);
 *  - the group epoch never decreases; `assignmentEpoch <= groupEpoch`;
 *  - an instance id names at most one member.
 *
 * The group state is derived, never stored: Empty (no members), Assigning (group epoch ahead of the
 * target assignment epoch), Reconciling (some member not STABLE at the assignment epoch), Stable.
 */
import { assert } from '../util/index.js';
import { formatBucketRef, type TableBucket } from '../model/index.js';
import { BucketMap } from './bucket-map.js';
import { BucketSet } from './bucket-set.js';
import {
  isReconciledTo,
  JOINING_ASSIGNMENT,
  type ConsumerMember,
  type MemberAssignment,
  type MemberSubscription,
} from './consumer-member.js';
import type { GroupRecord } from './group-record.js';
import type { TableLayout } from './table-layout.js';

/** Derived state of a group (docs/group-protocol.md, "Group states"); see the module header. */
export type GroupState = 'Empty' | 'Assigning' | 'Reconciling' | 'Stable';

/** One consumer group's state; see the module header for its invariants. */
export class Group {
  /** The group's id. */
  readonly groupId: string;
  #groupEpoch = 0;
  #assignmentEpoch = 0;
  #tableLayouts: ReadonlyMap<number, TableLayout> = new Map();
  readonly #members = new Map<string, ConsumerMember>();
  readonly #targets = new Map<string, BucketSet>();
  readonly #staticMembers = new Map<string, string>();
  readonly #owners = new BucketMap<string>();
  readonly #subscriberCounts = new Map<number, number>();
  #reconciledCount = 0;

  /** An empty group at epoch 0; only GroupStateMachine creates one, on its first `group-epoch` record. */
  constructor(groupId: string) {
    this.groupId = groupId;
  }

  /** Bumped whenever membership, subscriptions or layouts change. */
  get groupEpoch(): number {
    return this.#groupEpoch;
  }

  /** Epoch of the current target assignment. */
  get assignmentEpoch(): number {
    return this.#assignmentEpoch;
  }

  /** Layouts the current target assignment was computed against. */
  get tableLayouts(): ReadonlyMap<number, TableLayout> {
    return this.#tableLayouts;
  }

  /** Members by id. */
  get members(): ReadonlyMap<string, ConsumerMember> {
    return this.#members;
  }

  /** The member's target assignment (empty when it has none). */
  targetOf(memberId: string): BucketSet {
    return this.#targets.get(memberId) ?? BucketSet.EMPTY;
  }

  /** Member id holding a static instance id, if any. */
  staticMemberId(instanceId: string): string | undefined {
    return this.#staticMembers.get(instanceId);
  }

  /** Member that owns the bucket now (assigned or pending revocation), if any. */
  ownerOf(ref: TableBucket): string | undefined {
    return this.#owners.get(ref);
  }

  /** Member whose target assignment holds the bucket, if any (a scan: for admin checks, not hot paths). */
  targetOwnerOf(ref: TableBucket): string | undefined {
    for (const [memberId, target] of this.#targets) if (target.has(ref)) return memberId;
    return undefined;
  }

  /** Table ids at least one member subscribes to. */
  subscribedTableIds(): IterableIterator<number> {
    return this.#subscriberCounts.keys();
  }

  /** True when at least one member subscribes to the table. */
  subscribesTable(tableId: number): boolean {
    return this.#subscriberCounts.has(tableId);
  }

  /** True while the group epoch is ahead of the assignment epoch: a new target assignment is due. */
  get targetDue(): boolean {
    return this.#groupEpoch > this.#assignmentEpoch;
  }

  /** The derived group state. */
  state(): GroupState {
    if (this.#members.size === 0) return 'Empty';
    if (this.targetDue) return 'Assigning';
    return this.#reconciledCount === this.#members.size ? 'Stable' : 'Reconciling';
  }

  /** Applies one record of this group. Only GroupStateMachine calls this. */
  replay(record: Exclude<GroupRecord, { type: 'group-tombstone' }>): void {
    assert(
      record.groupId === this.groupId,
      `record for ${record.groupId} replayed on ${this.groupId}`,
    );
    switch (record.type) {
      case 'group-epoch':
        assert(
          record.groupEpoch >= this.#groupEpoch,
          `group epoch of ${this.groupId} went back to ${record.groupEpoch}`,
        );
        this.#groupEpoch = record.groupEpoch;
        return;
      case 'member-subscription':
        return this.#applySubscription(record.subscription);
      case 'member-assignment':
        return this.#applyAssignment(record.memberId, record.assignment);
      case 'member-tombstone':
        return this.#removeMember(record.memberId);
      case 'target-member':
        this.#targets.set(record.memberId, record.buckets);
        return;
      case 'target-member-tombstone':
        this.#targets.delete(record.memberId);
        return;
      case 'target-epoch':
        assert(
          record.assignmentEpoch <= this.#groupEpoch,
          `assignment epoch ${record.assignmentEpoch} ahead of group epoch`,
        );
        this.#assignmentEpoch = record.assignmentEpoch;
        this.#tableLayouts = record.tableLayouts;
        this.#reconciledCount = 0;
        for (const m of this.#members.values())
          if (isReconciledTo(m, this.#assignmentEpoch)) this.#reconciledCount++;
        return;
    }
  }

  #applySubscription(subscription: MemberSubscription): void {
    const existing = this.#members.get(subscription.memberId);
    if (existing !== undefined) this.#unindexSubscription(existing);
    const instanceHolder =
      subscription.instanceId === null
        ? undefined
        : this.#staticMembers.get(subscription.instanceId);
    assert(
      instanceHolder === undefined,
      `instance id ${subscription.instanceId} of ${this.groupId} held by ${instanceHolder}`,
    );
    const member: ConsumerMember = { ...(existing ?? JOINING_ASSIGNMENT), ...subscription };
    this.#members.set(member.memberId, member);
    if (existing === undefined && isReconciledTo(member, this.#assignmentEpoch))
      this.#reconciledCount++;
    if (member.instanceId !== null) this.#staticMembers.set(member.instanceId, member.memberId);
    for (const tableId of member.subscribedTableIds)
      this.#subscriberCounts.set(tableId, (this.#subscriberCounts.get(tableId) ?? 0) + 1);
  }

  #applyAssignment(memberId: string, assignment: MemberAssignment): void {
    const existing = this.#members.get(memberId);
    assert(existing !== undefined, `assignment for unknown member ${memberId} of ${this.groupId}`);
    const member: ConsumerMember = {
      ...existing,
      memberEpoch: assignment.memberEpoch,
      previousMemberEpoch: assignment.previousMemberEpoch,
      state: assignment.state,
      assigned: assignment.assigned,
      pendingRevocation: assignment.pendingRevocation,
    };
    // Update the owner index by difference: a reconciliation step usually changes a few buckets.
    const ownsAfter = (ref: TableBucket): boolean =>
      member.assigned.has(ref) || member.pendingRevocation.has(ref);
    const ownedBefore = (ref: TableBucket): boolean =>
      existing.assigned.has(ref) || existing.pendingRevocation.has(ref);
    for (const set of [existing.assigned, existing.pendingRevocation]) {
      for (const ref of set)
        if (!ownsAfter(ref) && this.#owners.get(ref) === memberId) this.#owners.delete(ref);
    }
    for (const set of [member.assigned, member.pendingRevocation]) {
      if (set === existing.assigned || set === existing.pendingRevocation) continue;
      for (const ref of set) {
        if (ownedBefore(ref)) continue;
        const owner = this.#owners.get(ref);
        assert(
          owner === undefined,
          `${formatBucketRef(ref)} of ${this.groupId} would have two owners: ${owner} and ${memberId}`,
        );
        this.#owners.set(ref, memberId);
      }
    }
    this.#members.set(memberId, member);
    this.#reconciledCount +=
      Number(isReconciledTo(member, this.#assignmentEpoch)) -
      Number(isReconciledTo(existing, this.#assignmentEpoch));
  }

  #removeMember(memberId: string): void {
    const existing = this.#members.get(memberId);
    assert(existing !== undefined, `removal of unknown member ${memberId} of ${this.groupId}`);
    this.#releaseOwnership(existing);
    this.#unindexSubscription(existing);
    if (isReconciledTo(existing, this.#assignmentEpoch)) this.#reconciledCount--;
    this.#members.delete(memberId);
  }

  #releaseOwnership(member: ConsumerMember): void {
    for (const set of [member.assigned, member.pendingRevocation]) {
      for (const ref of set)
        if (this.#owners.get(ref) === member.memberId) this.#owners.delete(ref);
    }
  }

  #unindexSubscription(member: ConsumerMember): void {
    if (member.instanceId !== null) this.#staticMembers.delete(member.instanceId);
    for (const tableId of member.subscribedTableIds) {
      const count = (this.#subscriberCounts.get(tableId) ?? 0) - 1;
      if (count > 0) this.#subscriberCounts.set(tableId, count);
      else this.#subscriberCounts.delete(tableId);
    }
  }
}
