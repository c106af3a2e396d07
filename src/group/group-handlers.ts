/**
 * The coordinator's handlers: heartbeat (join, update, leave, static leave), member expiry (session
 * and rebalance timeouts), removal of members by an admin and layout refresh. Each takes a GroupOperation, validates, plans, and only
 * then emits records — the KIP-848 heartbeat in three steps:
 *  1. update the member's subscription; bump the group epoch if membership, a subscription, the
 *     preferred assignor or a subscribed table's layout changed;
 *  2. if the group epoch is ahead of the target assignment epoch, compute a new target assignment
 *     (unless paced: see AssignmentPacer — then the group stays Assigning until the deferred run);
 *  3. reconcile the heartbeating member one step towards its target (current-assignment-builder).
 * Other members reconcile on their own heartbeats.
 *
 * Member identity rules:
 *  - epoch 0 without a known memberId creates a member (id generated when omitted);
 *  - epoch 0 with a known memberId is a rejoin: the member abandoned all its buckets (it was fenced
 *    or restarted), so its current assignment restarts from nothing and its buckets are released;
 *  - a static member (instanceId) that left with epoch -2 keeps its assignment; the next join with
 *    that instance id (same or new memberId) inherits it and its target; a join naming an instance
 *    id still held by a live member is refused with UNRELEASED_INSTANCE_ID, as in Kafka;
 *  - epochs: newer than the coordinator's, or older unless it is the previous epoch and the reported
 *    owned buckets are a subset of the assigned ones, are FENCED_MEMBER_EPOCH.
 */
import { OffsetStoreError } from '../errors/index.js';
import { assert } from '../util/index.js';
import { BucketSet } from './bucket-set.js';
import {
  JOINING_ASSIGNMENT,
  LEAVE_GROUP_MEMBER_EPOCH,
  LEAVE_GROUP_STATIC_MEMBER_EPOCH,
  subscriptionsEqual,
  tableIdsEqual,
  type ConsumerMember,
  type MemberSubscription,
} from './consumer-member.js';
import { reconcileMember } from './current-assignment-builder.js';
import type { Group } from './group.js';
import { runsOf, type GroupSnapshotBuckets } from './group-snapshot.js';
import type { TableLayout } from './table-layout.js';
import type { GroupOperation, HandlerEnvironment } from './group-operation.js';
import { type HeartbeatResponse, type NormalizedHeartbeat } from './heartbeat.js';
import {
  selectRemovedMembers,
  type NormalizedRemoval,
  type RemovedMember,
} from './member-removal.js';
import {
  layoutsChanged,
  planTargetAssignment,
  targetRecords,
  type AssignmentEnvironment,
  type TargetPlan,
} from './target-assignment-builder.js';

/** Handles one validated heartbeat. */
export function handleHeartbeat(
  op: GroupOperation,
  groupId: string,
  request: NormalizedHeartbeat,
): HeartbeatResponse {
  if (request.memberEpoch === LEAVE_GROUP_MEMBER_EPOCH) return leave(op, groupId, request);
  if (request.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH)
    return staticLeave(op, groupId, request);
  return joinOrHeartbeat(op, groupId, request);
}

/** Removes a member whose session timed out, unless a newer session was armed meanwhile. */
export function expireSession(op: GroupOperation, groupId: string, memberId: string): void {
  const group = op.env.machine.get(groupId);
  if (group?.members.has(memberId) !== true || op.env.timers.hasSession(groupId, memberId)) return;
  removeMember(op, group, memberId);
}

/** Fences a member that did not release revoked buckets in time, if it is still in that situation. */
export function expireRebalance(
  op: GroupOperation,
  groupId: string,
  memberId: string,
  memberEpoch: number,
): void {
  const group = op.env.machine.get(groupId);
  const member = group?.members.get(memberId);
  if (group === undefined || member === undefined) return;
  if (member.state !== 'UNREVOKED_PARTITIONS' || member.memberEpoch !== memberEpoch) return;
  removeMember(op, group, memberId);
}

/**
 * Removes members on an admin's request: each leaves exactly as with a heartbeat at memberEpoch -1
 * (a static member too, whose instance id is released with it). Every named id is checked before
 * anything is emitted, so an unknown one (UNKNOWN_MEMBER_ID) removes nothing. Returns the removed
 * members sorted by id; `all` on a group without members (or unknown here) removes none.
 */
export function removeMembersByAdmin(
  op: GroupOperation,
  groupId: string,
  removal: NormalizedRemoval,
): RemovedMember[] {
  const group = op.env.machine.get(groupId);
  const memberIds = selectRemovedMembers(group, groupId, removal);
  if (group === undefined || memberIds.length === 0) return [];
  const removed = memberIds.map((memberId) => ({
    memberId,
    instanceId: group.members.get(memberId)!.instanceId,
  }));
  // Everything that can fail has been checked; from here on only records.
  for (const memberId of memberIds) removeMember(op, group, memberId);
  return removed;
}

/** Bumps the group epoch and recomputes the target when a subscribed table's layout changed. */
export function refreshLayouts(op: GroupOperation, groupId: string): void {
  const group = op.env.machine.get(groupId);
  if (
    group === undefined ||
    group.members.size === 0 ||
    group.targetDue || // the target due will see the new layouts
    !layoutsChanged(group, op.env.layouts)
  )
    return;
  checkLaidOut(op.env, groupId, group);
  const plan = op.env.pacer.mayAssign(groupId)
    ? planTargetAssignment(group, {}, assignmentEnv(op.env))
    : null;
  const groupEpoch = group.groupEpoch + 1;
  op.emit({ type: 'group-epoch', groupId, groupEpoch });
  emitTarget(op, group, groupEpoch, plan);
}

/** A member's move in refreshSubscriptions: from the tables it is on, to these. */
export interface SubscriptionRefresh {
  /** The tables the caller saw the member on: a member on others now is not moved. */
  readonly from: readonly number[];
  /** Its tables from now on (sorted, distinct). */
  readonly to: readonly number[];
}

/**
 * Moves members whose subscribed tables changed without a heartbeat of theirs to those tables (a
 * topic created after they subscribed to its name, found by another member's heartbeat), all with
 * one epoch bump and one target: each member's own next heartbeat would bump the epoch once more,
 * and the first would be given all of the new table. Members not in the group, or already on those
 * tables, are left alone. INVALID_REQUEST, before anything changes, when the group's snapshot
 * could outgrow its bound.
 */
export function refreshSubscriptions(
  op: GroupOperation,
  groupId: string,
  updates: ReadonlyMap<string, SubscriptionRefresh>,
): void {
  const group = op.env.machine.get(groupId);
  if (group === undefined) return;
  const changed: MemberSubscription[] = [];
  for (const [memberId, { from, to: tableIds }] of updates) {
    const member = group.members.get(memberId);
    // Moved since the caller looked (a heartbeat of its own with a new subscription): left alone.
    if (
      member === undefined ||
      !tableIdsEqual(member.subscribedTableIds, from) ||
      tableIdsEqual(member.subscribedTableIds, tableIds)
    )
      continue;
    changed.push({
      memberId,
      instanceId: member.instanceId,
      subscribedTableIds: tableIds,
      assignor: member.assignor,
      sessionTimeoutMs: member.sessionTimeoutMs,
      rebalanceTimeoutMs: member.rebalanceTimeoutMs,
    });
  }
  if (changed.length === 0) return;
  checkGroupSubscriptions(
    groupId,
    group,
    changed,
    undefined,
    op.env.layouts,
    op.env.config.snapshotBytesMax,
    `with the ${changed.length} members' subscriptions refreshed`,
  );
  // Everything that can fail has been checked; from here on only records.
  for (const subscription of changed)
    op.emit({ type: 'member-subscription', groupId, subscription });
  const groupEpoch = group.groupEpoch + 1;
  op.emit({ type: 'group-epoch', groupId, groupEpoch });
  const current = op.env.machine.get(groupId)!;
  const plan = op.env.pacer.mayAssign(groupId)
    ? planTargetAssignment(current, {}, assignmentEnv(op.env))
    : null;
  emitTarget(op, current, groupEpoch, plan);
}

/** Computes the deferred target assignment of a group whose epoch is ahead of its target. */
export function assignIfBehind(op: GroupOperation, groupId: string): void {
  const group = op.env.machine.get(groupId);
  if (group === undefined || !group.targetDue) return;
  emitTarget(op, group, group.groupEpoch, planTargetAssignment(group, {}, assignmentEnv(op.env)));
}

/** Emits a planned target at `groupEpoch`, or, without a plan (paced), arms the deferred computation. */
function emitTarget(
  op: GroupOperation,
  group: Group,
  groupEpoch: number,
  plan: TargetPlan | null,
): void {
  if (plan === null) {
    op.env.pacer.defer(group.groupId);
    return;
  }
  op.emitAll(targetRecords(group, group.groupId, groupEpoch, plan));
  op.env.pacer.assigned(group.groupId);
}

/**
 * INVALID_REQUEST, before anything changes, when with `subscription` (one or several, each taking
 * the place of the member of its id; null: the members as they are)
 * and `layouts` the group's snapshot could pass `bytesMax` (GROUP_SNAPSHOT_BYTES_BUDGET, or less
 * under a log of smaller batches; the member it replaces, or inherits from, no longer counted). A
 * refusal after the change would come too late: its snapshot write would fail at every later
 * operation, and the group would be stuck. The bound is groupSnapshotBytesEstimate's.
 */
export function checkGroupSubscriptions(
  groupId: string,
  group: Group | undefined,
  subscription: MemberSubscription | readonly MemberSubscription[] | null,
  inheritFrom: ConsumerMember | undefined,
  layouts: Pick<ReadonlyMap<number, TableLayout>, 'get'>,
  bytesMax: number,
  cause: string,
): void {
  const members: SnapshotMemberShape[] = [];
  const held: BucketSet[] = [];
  const replacing: readonly MemberSubscription[] =
    subscription === null ? [] : 'memberId' in subscription ? [subscription] : subscription;
  members.push(...replacing);
  const replaced = new Set(replacing.map((s) => s.memberId));
  for (const member of group?.members.values() ?? []) {
    held.push(member.assigned, member.pendingRevocation);
    if (replaced.has(member.memberId) || member === inheritFrom) continue;
    members.push(member);
  }
  const estimate = groupSnapshotBytesEstimate(
    Buffer.byteLength(groupId),
    members,
    layouts,
    held.flatMap((set) => runsOf(set)),
  );
  if (estimate.bytes > bytesMax)
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `${cause}, group ${groupId}'s snapshot could take ${estimate.bytes} bytes (${estimate.distinctTables} distinct tables, ${estimate.subscriptions} subscriptions, ${estimate.buckets} buckets), more than ${bytesMax}: it must fit in one batch of the log`,
    );
}

/** checkGroupSubscriptions for a group taking the layouts as they are now, its members unchanged. */
function checkLaidOut(env: HandlerEnvironment, groupId: string, group: Group): void {
  checkGroupSubscriptions(
    groupId,
    group,
    null,
    undefined,
    env.layouts,
    env.config.snapshotBytesMax,
    'with the tables as they are laid out now',
  );
}

/** What of a member its snapshot holds besides its buckets. */
export interface SnapshotMemberShape {
  readonly memberId: string;
  readonly instanceId: string | null;
  readonly assignor: string | null;
  readonly subscribedTableIds: readonly number[];
}

/** Bytes of an unsigned integer in msgpack (ids are safe integers: up to 9). */
function uintBytes(n: number): number {
  return n < 128 ? 1 : n < 256 ? 2 : n < 65_536 ? 3 : n < 2 ** 32 ? 5 : 9;
}

/** Bytes of a string in msgpack (its UTF-8 and the length before it). */
function stringBytes(s: string | null): number {
  if (s === null) return 1;
  const n = Buffer.byteLength(s);
  return n + (n < 32 ? 1 : n < 256 ? 2 : n < 65_536 ? 3 : 5);
}

/** Fixed bytes of the snapshot's encoding (measured with the codec's msgpack options). */
const GROUP_BYTES = 256; // the batch's header and record key, the group's epochs and field names
const MEMBER_BYTES = 256; // a member's field names, epochs, timeouts, state and array headers
const LAYOUT_BYTES = 48; // a layout's field names and array header
const RUN_BYTES = 48; // a run's field names and its bucket array's header
const BUCKET_ID_BYTES = 5; // an id below BUCKET_COUNT_MAX (2^20)

/**
 * A bound on a consumer group's snapshot (snapshotOf) as the codec writes it, for members of
 * `members` and `layouts`, however its assignment moves until they change: every member with its
 * ids and subscriptions; every subscribed table's layout; the runs of buckets (one table partition
 * each) members hold, at most one per bucket and per member and partition in the assignments and
 * pending revocations together twice over, and once more in the targets; each bucket's id in its
 * holder's run and in a target; and the runs members still hold (`held`) of partitions or buckets
 * the layouts no longer have. Writes measured against it (test/group/snapshot-estimate.test.ts):
 * 1 member on 65,536 tables of 1 bucket each, 5.4 MB; 1 member on 1 table of 100,000 buckets, 0.4
 * MB (10 members: 0.7 MB); 1 table of 100,000 partitions of 1 bucket, 4.3 MB with 1 member and 8.3
 * MB with 2 or 10; 2 members on 65,536 tables with ids past 2^52, 10.2 MB.
 */
export function groupSnapshotBytesEstimate(
  groupIdBytes: number,
  members: Iterable<SnapshotMemberShape>,
  layouts: Pick<ReadonlyMap<number, TableLayout>, 'get'>,
  held: Iterable<GroupSnapshotBuckets> = [],
): { bytes: number; distinctTables: number; subscriptions: number; buckets: number } {
  let bytes = GROUP_BYTES + groupIdBytes;
  let ids = 0;
  const subscribers = new Map<number, number>();
  for (const m of members) {
    bytes +=
      MEMBER_BYTES + stringBytes(m.memberId) + stringBytes(m.instanceId) + stringBytes(m.assignor);
    for (const tableId of m.subscribedTableIds) {
      bytes += uintBytes(tableId);
      subscribers.set(tableId, (subscribers.get(tableId) ?? 0) + 1);
    }
    ids += m.subscribedTableIds.length;
  }
  let buckets = 0;
  for (const [tableId, count] of subscribers) {
    const layout = layouts.get(tableId);
    const partitionIds = layout?.partitionIds ?? null;
    const partitions = partitionIds?.length ?? 1;
    const tableBuckets = (layout?.bucketCount ?? 0) * partitions;
    buckets += tableBuckets;
    bytes += LAYOUT_BYTES + uintBytes(tableId) + uintBytes(layout?.bucketCount ?? 0);
    let partitionIdBytes = 1;
    for (const id of partitionIds ?? []) {
      bytes += uintBytes(id);
      partitionIdBytes = Math.max(partitionIdBytes, uintBytes(id));
    }
    const pairs = count * partitions;
    const runs = Math.min(2 * pairs, tableBuckets) + Math.min(pairs, tableBuckets);
    bytes += runs * (RUN_BYTES + uintBytes(tableId) + partitionIdBytes);
    bytes += 2 * tableBuckets * BUCKET_ID_BYTES;
  }
  // Buckets the members hold (assigned, or pending revocation) that the layouts no longer have:
  // until they are revoked, the snapshot lists them beside the new layouts' targets.
  for (const run of held) {
    const layout = layouts.get(run.tableId);
    const partitioned = (layout?.partitionIds ?? null) !== null;
    const partitionKept =
      layout !== undefined &&
      (run.partitionId === null
        ? !partitioned
        : partitioned && sortedHas(layout.partitionIds!, run.partitionId));
    if (!partitionKept) {
      bytes +=
        RUN_BYTES +
        uintBytes(run.tableId) +
        uintBytes(run.partitionId ?? 0) +
        BUCKET_ID_BYTES * run.bucketIds.length;
      continue;
    }
    // Sorted: those past the layout's bucket count are at the end.
    for (let i = run.bucketIds.length - 1; i >= 0 && run.bucketIds[i]! >= layout.bucketCount; i--)
      bytes += BUCKET_ID_BYTES;
  }
  return { bytes, distinctTables: subscribers.size, subscriptions: ids, buckets };
}

/** Whether sorted `values` holds `value` (binary search). */
function sortedHas(values: readonly number[], value: number): boolean {
  let lo = 0;
  let hi = values.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = values[mid]!;
    if (v === value) return true;
    if (v < value) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

interface ResolvedMember {
  readonly memberId: string;
  /** The member as it is now, when it exists under `memberId`. */
  readonly existing?: ConsumerMember;
  /** The member abandoned its buckets and starts over. */
  readonly rejoin?: boolean;
  /** A static member that left temporarily and whose assignment this join takes over. */
  readonly inheritFrom?: ConsumerMember;
}

function joinOrHeartbeat(
  op: GroupOperation,
  groupId: string,
  request: NormalizedHeartbeat,
): HeartbeatResponse {
  const env = op.env;
  const group = env.machine.get(groupId);
  const resolved = resolveMember(env, group, request);
  const { memberId, existing, inheritFrom } = resolved;
  const base = inheritFrom ?? existing;
  const subscription: MemberSubscription = {
    memberId,
    instanceId: request.instanceId ?? base?.instanceId ?? null,
    subscribedTableIds: request.subscribedTableIds ?? base?.subscribedTableIds ?? [],
    assignor: request.assignor ?? base?.assignor ?? null,
    sessionTimeoutMs:
      request.sessionTimeoutMs ?? base?.sessionTimeoutMs ?? env.config.sessionTimeoutMs,
    rebalanceTimeoutMs:
      request.rebalanceTimeoutMs ?? base?.rebalanceTimeoutMs ?? env.config.rebalanceTimeoutMs,
  };
  const subscriptionChanged =
    base === undefined || !tableIdsEqual(base.subscribedTableIds, subscription.subscribedTableIds);
  if (subscriptionChanged)
    checkGroupSubscriptions(
      groupId,
      group,
      subscription,
      inheritFrom,
      env.layouts,
      env.config.snapshotBytesMax,
      `with this member's ${subscription.subscribedTableIds.length} subscribed tables`,
    );
  let bump = subscriptionChanged || base.assignor !== subscription.assignor;
  // A layout change raises the epoch once: while a target for it waits (pacing), that target is
  // computed from the layouts as they are then.
  if (!bump && group !== undefined && !group.targetDue && layoutsChanged(group, env.layouts)) {
    bump = true;
    checkLaidOut(env, groupId, group);
  }
  const groupEpoch = (group?.groupEpoch ?? 0) + (bump ? 1 : 0);
  const change = {
    upsert: subscription,
    ...(inheritFrom === undefined || inheritFrom.memberId === memberId
      ? {}
      : { inheritFrom: inheritFrom.memberId }),
  };
  const targetBehind = groupEpoch > (group?.assignmentEpoch ?? 0);
  const plan =
    targetBehind && env.pacer.mayAssign(groupId)
      ? planTargetAssignment(group, change, assignmentEnv(env))
      : null;
  const inheritedTarget =
    inheritFrom === undefined
      ? BucketSet.EMPTY
      : (group?.targetOf(inheritFrom.memberId) ?? BucketSet.EMPTY);

  // Everything that can fail has been checked; from here on only records.
  if (group === undefined) op.emit({ type: 'group-epoch', groupId, groupEpoch: 0 });
  if (inheritFrom !== undefined && inheritFrom.memberId !== memberId) {
    env.timers.cancelMember(groupId, inheritFrom.memberId);
    op.emit({ type: 'member-tombstone', groupId, memberId: inheritFrom.memberId });
    op.emit({ type: 'target-member-tombstone', groupId, memberId: inheritFrom.memberId });
  }
  if (existing === undefined || !subscriptionsEqual(existing, subscription))
    op.emit({ type: 'member-subscription', groupId, subscription });
  if (resolved.rejoin === true)
    op.emit({ type: 'member-assignment', groupId, memberId, assignment: JOINING_ASSIGNMENT });
  if (inheritFrom !== undefined) {
    op.emit({
      type: 'member-assignment',
      groupId,
      memberId,
      assignment: {
        ...JOINING_ASSIGNMENT,
        previousMemberEpoch: inheritFrom.memberEpoch,
        assigned: inheritFrom.assigned,
      },
    });
    if (plan === null && inheritFrom.memberId !== memberId)
      op.emit({ type: 'target-member', groupId, memberId, buckets: inheritedTarget });
  }
  if (bump) op.emit({ type: 'group-epoch', groupId, groupEpoch });
  const current = env.machine.get(groupId);
  assert(current !== undefined, `group ${groupId} missing after join`);
  if (targetBehind) emitTarget(op, current, groupEpoch, plan);
  const member = reconcile(op, current, memberId, request.ownedBuckets);
  env.timers.scheduleSession(groupId, memberId, member.sessionTimeoutMs);

  const response: HeartbeatResponse = {
    memberId,
    memberEpoch: member.memberEpoch,
    // At most a third of the member's session, as Kafka asks of its clients: a session shorter than
    // three intervals would otherwise expire between heartbeats, and the member rejoin forever.
    heartbeatIntervalMs: Math.max(
      1,
      Math.min(env.config.heartbeatIntervalMs, Math.floor(member.sessionTimeoutMs / 3)),
    ),
  };
  const assignmentChanged =
    existing === undefined ||
    resolved.rejoin === true ||
    !existing.assigned.equals(member.assigned);
  const memberBehind =
    request.memberEpoch !== member.memberEpoch ||
    (request.ownedBuckets !== null && !request.ownedBuckets.equals(member.assigned));
  if (request.memberEpoch === 0 || assignmentChanged || memberBehind)
    response.assignment = member.assigned.toArray();
  return response;
}

function resolveMember(
  env: HandlerEnvironment,
  group: Group | undefined,
  request: NormalizedHeartbeat,
): ResolvedMember {
  if (request.memberEpoch !== 0) {
    assert(request.memberId !== null, 'memberId checked at the edge');
    // An instance id it names is its own past this check (the group maps each to its holder).
    checkStaticIdentity(group, request.memberId, request.instanceId);
    const existing = group?.members.get(request.memberId);
    if (existing === undefined) throw unknownMember(request.memberId, group);
    checkMemberEpoch(existing, request);
    return { memberId: existing.memberId, existing };
  }
  const memberId = request.memberId ?? env.newMemberId();
  const existing = group?.members.get(memberId);
  if (request.instanceId === null) {
    if (existing !== undefined && existing.instanceId !== null) {
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `member ${memberId} is static; rejoin with its instanceId '${existing.instanceId}'`,
      );
    }
    if (existing === undefined) checkGroupSize(env, group);
    return existing === undefined ? { memberId } : { memberId, existing, rejoin: true };
  }
  const holderId = group?.staticMemberId(request.instanceId);
  const holder = holderId === undefined ? undefined : group?.members.get(holderId);
  if (existing !== undefined && existing !== holder) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `memberId ${memberId} is in use by another member of group ${group?.groupId}`,
    );
  }
  if (holder === undefined) {
    checkGroupSize(env, group);
    return { memberId };
  }
  if (holder.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
    return holder.memberId === memberId
      ? { memberId, existing: holder, inheritFrom: holder }
      : { memberId, inheritFrom: holder };
  }
  if (holder.memberId === memberId) return { memberId, existing: holder, rejoin: true };
  throw new OffsetStoreError(
    'UNRELEASED_INSTANCE_ID',
    `instanceId '${request.instanceId}' is still held by member ${holder.memberId}; it is released by a leave with memberEpoch -2 or when that member's session times out`,
  );
}

/**
 * A request naming an instance id, in Kafka's order: UNKNOWN_MEMBER_ID when no member holds it,
 * FENCED_INSTANCE_ID when another member does (this one was replaced: a Kafka client stops, where
 * UNKNOWN_MEMBER_ID would make it rejoin and take the instance over again once it is free).
 */
function checkStaticIdentity(
  group: Group | undefined,
  memberId: string,
  instanceId: string | null,
): void {
  if (instanceId === null) return;
  const holderId = group?.staticMemberId(instanceId);
  if (holderId === undefined) throw unknownMember(memberId, group);
  if (holderId !== memberId)
    throw new OffsetStoreError(
      'FENCED_INSTANCE_ID',
      `instanceId '${instanceId}' is held by member ${holderId}, not ${memberId}: this member was replaced`,
    );
}

function checkMemberEpoch(member: ConsumerMember, request: NormalizedHeartbeat): void {
  const received = request.memberEpoch;
  if (received > member.memberEpoch) {
    throw new OffsetStoreError(
      'FENCED_MEMBER_EPOCH',
      `member ${member.memberId} sent epoch ${received}, newer than the coordinator's ${member.memberEpoch}; abandon all buckets and rejoin with epoch 0`,
    );
  }
  if (received < member.memberEpoch) {
    // The response that carried the bumped epoch may have been lost: accept the previous epoch as long
    // as the member owns nothing it is not assigned now.
    const owned = request.ownedBuckets;
    if (
      received !== member.previousMemberEpoch ||
      owned === null ||
      !owned.isSubsetOf(member.assigned)
    ) {
      throw new OffsetStoreError(
        'FENCED_MEMBER_EPOCH',
        `member ${member.memberId} sent epoch ${received}, older than the coordinator's ${member.memberEpoch}; abandon all buckets and rejoin with epoch 0`,
      );
    }
  }
}

function checkGroupSize(env: HandlerEnvironment, group: Group | undefined): void {
  if (group !== undefined && group.members.size >= env.config.groupMembersMax) {
    throw new OffsetStoreError(
      'GROUP_MAX_SIZE_REACHED',
      `group ${group.groupId} already has ${group.members.size} members (groupMembersMax)`,
    );
  }
}

function unknownMember(memberId: string, group: Group | undefined): OffsetStoreError {
  const where = group === undefined ? 'an unknown group' : `group ${group.groupId}`;
  return new OffsetStoreError(
    'UNKNOWN_MEMBER_ID',
    `member ${memberId} is not in ${where}; rejoin with epoch 0`,
  );
}

/** Step 3: one reconciliation step for the heartbeating member, plus its rebalance timer. */
function reconcile(
  op: GroupOperation,
  group: Group,
  memberId: string,
  owned: BucketSet | null,
): ConsumerMember {
  const before = group.members.get(memberId);
  assert(before !== undefined, `member ${memberId} missing before reconciliation`);
  // While the group's next target waits (assignment pacing), the member's target is the last one
  // without the tables it unsubscribed from since: it gives those up now, not at the next target.
  let target = group.targetOf(memberId);
  let narrowed = false;
  if (group.targetDue) {
    const subscribed = target.inTables(before.subscribedTableIds);
    narrowed = subscribed !== target;
    target = subscribed;
  }
  const next = reconcileMember(before, {
    targetEpoch: group.assignmentEpoch,
    target,
    ownerOf: (ref) => group.ownerOf(ref),
    owned,
    narrowed,
  });
  if (next === before) return before;
  op.emit({ type: 'member-assignment', groupId: group.groupId, memberId, assignment: next });
  if (next.state === 'UNREVOKED_PARTITIONS')
    op.env.timers.scheduleRebalance(
      group.groupId,
      memberId,
      next.memberEpoch,
      before.rebalanceTimeoutMs,
    );
  else op.env.timers.cancelRebalance(group.groupId, memberId);
  return group.members.get(memberId) as ConsumerMember;
}

function leave(
  op: GroupOperation,
  groupId: string,
  request: NormalizedHeartbeat,
): HeartbeatResponse {
  const member = leavingMember(op, groupId, request);
  removeMember(op, op.env.machine.get(groupId) as Group, member.memberId);
  return {
    memberId: member.memberId,
    memberEpoch: LEAVE_GROUP_MEMBER_EPOCH,
    heartbeatIntervalMs: 0,
  };
}

function staticLeave(
  op: GroupOperation,
  groupId: string,
  request: NormalizedHeartbeat,
): HeartbeatResponse {
  const member = leavingMember(op, groupId, request);
  if (member.memberEpoch !== LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
    // It keeps its assignment for its instance id; buckets it was asked to revoke are released now.
    op.emit({
      type: 'member-assignment',
      groupId,
      memberId: member.memberId,
      assignment: {
        memberEpoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        previousMemberEpoch: member.memberEpoch,
        state: 'STABLE',
        assigned: member.assigned,
        pendingRevocation: BucketSet.EMPTY,
      },
    });
  }
  op.env.timers.cancelRebalance(groupId, member.memberId);
  op.env.timers.scheduleSession(groupId, member.memberId, member.sessionTimeoutMs);
  return {
    memberId: member.memberId,
    memberEpoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    heartbeatIntervalMs: 0,
  };
}

function leavingMember(
  op: GroupOperation,
  groupId: string,
  request: NormalizedHeartbeat,
): ConsumerMember {
  assert(request.memberId !== null, 'memberId checked at the edge');
  const group = op.env.machine.get(groupId);
  checkStaticIdentity(group, request.memberId, request.instanceId);
  const member = group?.members.get(request.memberId);
  if (member === undefined) throw unknownMember(request.memberId, group);
  if (request.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH && member.instanceId === null) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `member ${member.memberId} is not static; leave with memberEpoch -1`,
    );
  }
  return member;
}

/** Removes a member: its buckets are released, the group epoch bumps and a new target is computed. */
function removeMember(op: GroupOperation, group: Group, memberId: string): void {
  const groupId = group.groupId;
  const plan = op.env.pacer.mayAssign(groupId)
    ? planTargetAssignment(group, { remove: memberId }, assignmentEnv(op.env))
    : null;
  op.env.timers.cancelMember(groupId, memberId);
  op.emit({ type: 'member-tombstone', groupId, memberId });
  op.emit({ type: 'target-member-tombstone', groupId, memberId });
  const groupEpoch = group.groupEpoch + 1;
  op.emit({ type: 'group-epoch', groupId, groupEpoch });
  emitTarget(op, group, groupEpoch, plan);
}

function assignmentEnv(env: HandlerEnvironment): AssignmentEnvironment {
  return {
    layouts: env.layouts,
    assignors: env.assignors,
    defaultAssignor: env.config.defaultAssignor,
  };
}
