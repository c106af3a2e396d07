/**
 * Members leaving a classic group: LeaveGroup (Kafka's classicGroupLeave), session expiry, and
 * removal by an admin. Each removed member's parked calls are answered UNKNOWN_MEMBER_ID; then the
 * group rebalances (Stable, CompletingRebalance) or its join phase may complete (PreparingRebalance).
 *
 * LeaveGroup answers every named member on its own: a member named by id must be in the group under
 * that identity (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); one named by instance id alone (member id
 * '') must be held by a member; a pending member (MEMBER_ID_REQUIRED, not joined yet) just stops
 * being waited for. A group that does not exist is UNKNOWN_MEMBER_ID for the whole request. A
 * consumer (KIP-848) group answers each member on its own, as Kafka 4 does: none of its members
 * speaks the classic protocol, so each is UNKNOWN_MEMBER_ID, except a static member named by its
 * instance id under another member id (FENCED_INSTANCE_ID); nobody leaves.
 */
import { OffsetStoreError } from '../errors/index.js';
import type { ClassicGroup } from './classic-group.js';
import { hasSatisfiedHeartbeat } from './classic-member.js';
import type { ClassicOperation, ClassicReply } from './classic-operation.js';
import type { ClassicLeaveGroupResult, NormalizedClassicLeave } from './classic-protocol.js';
import {
  maybeCompleteJoinPhase,
  maybePrepareRebalanceOrCompleteJoin,
  removeMember,
  removeMemberAndRebalance,
} from './classic-rebalance.js';
import {
  selectRemovedMembers,
  type NormalizedRemoval,
  type RemovedMember,
} from './member-removal.js';

/** Handles one validated LeaveGroup. */
export function handleClassicLeave(
  op: ClassicOperation,
  groupId: string,
  request: NormalizedClassicLeave,
): ClassicReply<ClassicLeaveGroupResult> {
  const group = op.env.machine.get(groupId);
  if (group === undefined && op.env.consumerGroups.memberCount(groupId) !== null)
    return { value: { members: leaveConsumerGroup(op, groupId, request) } };
  if (group === undefined)
    return {
      error: new OffsetStoreError(
        'UNKNOWN_MEMBER_ID',
        `group ${groupId} has no classic group of that id`,
      ),
    };
  const answers: ClassicLeaveGroupResult['members'] = [];
  let left = false;
  for (const { memberId, groupInstanceId } of request.members) {
    const answer = {
      memberId,
      groupInstanceId,
      errorCode: null as ClassicLeaveGroupResult['members'][number]['errorCode'],
    };
    if (memberId === '') {
      const holder = group.staticMemberId(groupInstanceId!);
      if (holder === undefined) answer.errorCode = 'UNKNOWN_MEMBER_ID';
      else removeMember(op, group, holder, 'it left the group');
    } else if (group.pendingMembers.has(memberId)) {
      op.env.sessions.cancelMember(groupId, memberId);
      op.emit({ type: 'classic-pending-member', groupId, memberId, pending: false });
    } else {
      try {
        group.validateMember(memberId, groupInstanceId);
        removeMember(op, group, memberId, 'it left the group');
      } catch (error) {
        answer.errorCode = (error as OffsetStoreError).code as
          'UNKNOWN_MEMBER_ID' | 'FENCED_INSTANCE_ID';
      }
    }
    left ||= answer.errorCode === null;
    answers.push(answer);
  }
  if (left) afterRemoval(op, group);
  return { value: { members: answers } };
}

/** LeaveGroup named a consumer group: each member's answer, and nobody leaves (module header). */
function leaveConsumerGroup(
  op: ClassicOperation,
  groupId: string,
  request: NormalizedClassicLeave,
): ClassicLeaveGroupResult['members'] {
  return request.members.map(({ memberId, groupInstanceId }) => {
    const holder =
      groupInstanceId === null
        ? undefined
        : op.env.consumerGroups.staticMemberId(groupId, groupInstanceId);
    const fenced = holder !== undefined && memberId !== '' && memberId !== holder;
    return {
      memberId,
      groupInstanceId,
      errorCode: fenced ? ('FENCED_INSTANCE_ID' as const) : ('UNKNOWN_MEMBER_ID' as const),
    };
  });
}

/** A member's session timer fired: a pending member stops being waited for; a silent member is removed. */
export function expireClassicSession(
  op: ClassicOperation,
  groupId: string,
  memberId: string,
): void {
  const group = op.env.machine.get(groupId);
  if (group === undefined || op.env.sessions.hasSession(groupId, memberId)) return;
  if (group.pendingMembers.has(memberId)) {
    op.emit({ type: 'classic-pending-member', groupId, memberId, pending: false });
    // As a pending member's leave: the initial rebalance still waits out its delay.
    maybeCompleteJoinPhase(op, group);
    return;
  }
  const member = group.members.get(memberId);
  // A member parked in a JoinGroup or SyncGroup waits on the coordinator; its session restarts when answered.
  if (member === undefined || hasSatisfiedHeartbeat(member)) return;
  removeMemberAndRebalance(
    op,
    group,
    memberId,
    member.isNew
      ? 'its JoinGroup was not answered within newMemberJoinTimeoutMs'
      : 'its session timed out',
  );
}

/**
 * Removes members on an admin's request, as the consumer protocol's removal does: every member, or
 * those named by member id or instance id, each checked before anything changes (UNKNOWN_MEMBER_ID,
 * nothing removed). Returns them sorted by id.
 */
export function removeClassicMembersByAdmin(
  op: ClassicOperation,
  groupId: string,
  removal: NormalizedRemoval,
): RemovedMember[] {
  const group = op.env.machine.get(groupId);
  const memberIds = selectRemovedMembers(group, groupId, removal);
  if (group === undefined || memberIds.length === 0) return [];
  const removed = memberIds.map((memberId) => ({
    memberId,
    instanceId: group.members.get(memberId)!.groupInstanceId,
  }));
  for (const memberId of memberIds) removeMember(op, group, memberId, 'an admin removed it');
  afterRemoval(op, group);
  return removed;
}

function afterRemoval(op: ClassicOperation, group: ClassicGroup): void {
  if (group.state === 'Stable' || group.state === 'CompletingRebalance')
    maybePrepareRebalanceOrCompleteJoin(op, group);
  else if (group.state === 'PreparingRebalance') maybeCompleteJoinPhase(op, group);
}
