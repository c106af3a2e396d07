/**
 * The classic protocol's rebalance, as Kafka's GroupMetadataManager runs it: the join phase with its
 * barrier, generation changes, the sync phase's deadline, and member removal. Every step is a
 * function of a ClassicOperation and a group; the handlers (join, sync, leave, timers) compose them.
 *
 * A rebalance:
 *  1. `prepareRebalance`: parked SyncGroups of the old generation are answered REBALANCE_IN_PROGRESS
 *     (their assignments are cleared), the group goes PreparingRebalance, and the join timer is armed:
 *     the initial delay for a group coming from Empty (extended while new members keep coming, up to
 *     the rebalance timeout), otherwise the rebalance timeout (the largest of the members').
 *  2. The barrier: each JoinGroup is parked. When every member has rejoined and no pending member is
 *     still to come, the join phase completes at once (except during the initial delay); otherwise
 *     when the join timer fires.
 *  3. `completeJoin`: dynamic members that did not rejoin are removed (static ones stay); a leader
 *     that did not rejoin is replaced by one that did (if none did, the phase waits another rebalance
 *     timeout); the generation is bumped, the protocol selected, the group goes CompletingRebalance
 *     (or Empty without members), every parked JoinGroup is answered — the leader with every
 *     member's metadata — and the sync timer is armed.
 *  4. The leader's SyncGroup (classic-sync.ts) distributes the assignment: Stable. Members that have
 *     not sent SyncGroup when the sync timer fires are removed and a new rebalance starts.
 */
import { OffsetStoreError } from '../errors/index.js';
import type { ClassicGroup } from './classic-group.js';
import { EMPTY_ASSIGNMENT } from './classic-member.js';
import type { ClassicJoinTimerAction, ClassicOperation } from './classic-operation.js';
import type { ClassicJoinedGroup } from './classic-protocol.js';

/** The error that sends a member back to JoinGroup. */
export function rebalanceInProgress(groupId: string): OffsetStoreError {
  return new OffsetStoreError('REBALANCE_IN_PROGRESS', `group ${groupId} is rebalancing; rejoin`);
}

/** Starts a rebalance when the state allows one, else tries to complete the join phase. */
export function maybePrepareRebalanceOrCompleteJoin(
  op: ClassicOperation,
  group: ClassicGroup,
): void {
  if (group.canRebalance()) prepareRebalance(op, group);
  else maybeCompleteJoinPhase(op, group);
}

/** Step 1 (see the module header). */
export function prepareRebalance(op: ClassicOperation, group: ClassicGroup): void {
  const { groupId } = group;
  const timers = op.env.rebalanceTimers;
  if (group.state === 'CompletingRebalance') resetAssignments(op, group);
  timers.cancelSync(groupId);
  if (group.pendingSync.size > 0)
    op.emit({
      type: 'classic-pending-sync',
      groupId,
      memberIds: [...group.pendingSync],
      pending: false,
    });
  const initial = group.state === 'Empty';
  if (initial) {
    const delayMs = op.env.config.initialRebalanceDelayMs;
    timers.setNewMemberAdded(groupId, false);
    timers.armJoin(groupId, delayMs, {
      kind: 'initial-delay',
      delayMs,
      remainingMs: Math.max(group.rebalanceTimeoutMs() - delayMs, 0),
    });
  }
  op.setGroup(group, { state: 'PreparingRebalance' });
  if (initial) return;
  if (group.hasAllMembersJoined()) completeJoin(op, group);
  else timers.armJoin(groupId, group.rebalanceTimeoutMs(), { kind: 'rebalance-timeout' });
}

/** Completes the join phase if every member has rejoined, unless this is the initial rebalance (its delay decides). */
export function maybeCompleteJoinPhase(op: ClassicOperation, group: ClassicGroup): void {
  if (
    group.state !== 'PreparingRebalance' ||
    group.previousState === 'Empty' ||
    !group.hasAllMembersJoined()
  )
    return;
  completeJoin(op, group);
}

/** Step 3 (see the module header). */
export function completeJoin(op: ClassicOperation, group: ClassicGroup): void {
  const { groupId } = group;
  const timers = op.env.rebalanceTimers;
  timers.cancelJoin(groupId);
  for (const member of [...group.members.values()]) {
    if (!member.awaitingJoin && member.groupInstanceId === null)
      removeMember(
        op,
        group,
        member.memberId,
        `it did not rejoin group ${groupId} within the rebalance timeout`,
      );
  }
  if (!electJoinedLeader(op, group) && group.members.size > 0) {
    // Only static members that have not rejoined are left: wait for them (or their sessions) longer.
    timers.armJoin(groupId, group.rebalanceTimeoutMs(), { kind: 'rebalance-timeout' });
    return;
  }
  const generationId = group.fields.generationId + 1;
  if (group.members.size === 0) {
    op.setGroup(group, {
      generationId,
      protocolName: null,
      state: 'Empty',
      emptySinceMs: op.env.nowMs(),
    });
    return;
  }
  op.setGroup(group, {
    generationId,
    protocolName: group.selectProtocol()!,
    state: 'CompletingRebalance',
  });
  const { protocolType, protocolName, leaderId } = group.fields;
  const leaderMembers = group.joinMembers();
  for (const member of [...group.members.values()]) {
    const joined: ClassicJoinedGroup = {
      outcome: 'joined',
      memberId: member.memberId,
      generationId,
      protocolType: protocolType!,
      protocolName: protocolName!,
      leader: leaderId!,
      skipAssignment: false,
      members: member.memberId === leaderId ? leaderMembers : [],
    };
    if (member.awaitingJoin) op.answerJoin(groupId, member.memberId, { value: joined });
    op.env.sessions.scheduleSession(groupId, member.memberId, member.sessionTimeoutMs);
    if (member.awaitingJoin || member.isNew)
      op.putMember(groupId, { ...member, awaitingJoin: false, isNew: false });
  }
  op.emit({
    type: 'classic-pending-sync',
    groupId,
    memberIds: [...group.members.keys()],
    pending: true,
  });
  timers.armSync(groupId, group.rebalanceTimeoutMs(), generationId);
}

/** Keeps a leader that rejoined, or makes the first member that did the leader; false when none did. */
function electJoinedLeader(op: ClassicOperation, group: ClassicGroup): boolean {
  const leaderId = group.fields.leaderId;
  if (leaderId === null) return false;
  if (group.members.get(leaderId)?.awaitingJoin === true) return true;
  const joined = [...group.members.values()].find((m) => m.awaitingJoin);
  if (joined === undefined) return false;
  op.setGroup(group, { leaderId: joined.memberId });
  return true;
}

/** Clears every assignment and answers parked SyncGroups REBALANCE_IN_PROGRESS (CompletingRebalance -> PreparingRebalance). */
function resetAssignments(op: ClassicOperation, group: ClassicGroup): void {
  const { groupId } = group;
  for (const member of [...group.members.values()]) {
    if (member.awaitingSync) {
      op.answerSync(groupId, member.memberId, { error: rebalanceInProgress(groupId) });
      op.env.sessions.scheduleSession(groupId, member.memberId, member.sessionTimeoutMs);
    }
    if (member.awaitingSync || member.assignment.length > 0)
      op.putMember(groupId, { ...member, assignment: EMPTY_ASSIGNMENT, awaitingSync: false });
  }
}

/**
 * Gives every member its assignment from the leader's SyncGroup (none named: empty) and answers the
 * parked SyncGroups (their sessions restart from now).
 */
export function setAssignments(
  op: ClassicOperation,
  group: ClassicGroup,
  assignments: ReadonlyMap<string, Buffer>,
): void {
  const { groupId } = group;
  const { protocolType, protocolName } = group.fields;
  for (const member of [...group.members.values()]) {
    const assignment = assignments.get(member.memberId) ?? EMPTY_ASSIGNMENT;
    if (member.awaitingSync) {
      op.answerSync(groupId, member.memberId, {
        value: { protocolType, protocolName, assignment },
      });
      op.env.sessions.scheduleSession(groupId, member.memberId, member.sessionTimeoutMs);
    }
    op.putMember(groupId, { ...member, assignment, awaitingSync: false });
  }
}

/**
 * Removes a member: its parked JoinGroup and SyncGroup are answered UNKNOWN_MEMBER_ID (`why` says
 * why), its session timer cancelled, and the leadership passes to the first remaining member.
 * Nothing else: the caller decides what the group does next.
 */
export function removeMember(
  op: ClassicOperation,
  group: ClassicGroup,
  memberId: string,
  why: string,
): void {
  const { groupId } = group;
  const error = new OffsetStoreError(
    'UNKNOWN_MEMBER_ID',
    `member ${memberId} was removed from group ${groupId}: ${why}`,
  );
  op.answerJoin(groupId, memberId, { error });
  op.answerSync(groupId, memberId, { error });
  op.env.sessions.cancelMember(groupId, memberId);
  op.emit({ type: 'classic-member-tombstone', groupId, memberId });
  if (group.fields.leaderId === memberId)
    op.setGroup(group, { leaderId: group.members.keys().next().value ?? null });
}

/** Removes a member whose session expired or that left, then rebalances or completes the join (Kafka's removeMemberAndUpdateClassicGroup). */
export function removeMemberAndRebalance(
  op: ClassicOperation,
  group: ClassicGroup,
  memberId: string,
  why: string,
): void {
  removeMember(op, group, memberId, why);
  if (group.state === 'Stable' || group.state === 'CompletingRebalance')
    maybePrepareRebalanceOrCompleteJoin(op, group);
  else if (group.state === 'PreparingRebalance' && group.hasAllMembersJoined())
    completeJoin(op, group);
}

/** The sync timer of `generationId` fired: members that did not send SyncGroup are removed and the group rebalances. */
export function expirePendingSync(
  op: ClassicOperation,
  groupId: string,
  generationId: number,
): void {
  const group = op.env.machine.get(groupId);
  if (
    group === undefined ||
    group.fields.generationId !== generationId ||
    group.pendingSync.size === 0 ||
    op.env.rebalanceTimers.syncArmed(groupId)
  )
    return;
  if (group.state !== 'CompletingRebalance' && group.state !== 'Stable') return;
  for (const memberId of [...group.pendingSync])
    removeMember(
      op,
      group,
      memberId,
      `it did not send SyncGroup for generation ${generationId} within the rebalance timeout`,
    );
  prepareRebalance(op, group);
}

/** The join timer fired (its action says which); a timer re-armed meanwhile makes this one stale. */
export function expireJoin(
  op: ClassicOperation,
  groupId: string,
  action: ClassicJoinTimerAction,
): void {
  const group = op.env.machine.get(groupId);
  const timers = op.env.rebalanceTimers;
  if (group === undefined || group.state !== 'PreparingRebalance' || timers.joinArmed(groupId))
    return;
  if (
    action.kind === 'initial-delay' &&
    timers.newMemberAdded(groupId) &&
    action.remainingMs !== 0
  ) {
    timers.setNewMemberAdded(groupId, false);
    const delayMs = Math.min(op.env.config.initialRebalanceDelayMs, action.remainingMs);
    timers.armJoin(groupId, delayMs, {
      kind: 'initial-delay',
      delayMs,
      remainingMs: Math.max(action.remainingMs - action.delayMs, 0),
    });
    return;
  }
  completeJoin(op, group);
}
