/**
 * The JoinGroup handler of the classic protocol (Kafka's classicGroupJoin and the functions it
 * calls). Every check runs before the first record is emitted, except where Kafka itself changes the
 * group and then refuses (a full group drops the member asking).
 *
 * Who is joining:
 *  - no member id, dynamic, `requireKnownMemberId` (KIP-394, JoinGroup v4+): the member gets a
 *    member id and MEMBER_ID_REQUIRED, and is *pending*: the join barrier waits for it until it
 *    joins with that id or its session timeout passes;
 *  - no member id otherwise, or a pending member's id: a new member, added and parked; it starts or
 *    joins a rebalance;
 *  - no member id, static, with an instance id a member holds: the old member is replaced by a new
 *    member id (the old id's parked calls are answered FENCED_INSTANCE_ID); in a Stable group whose
 *    selected protocol would not change, without a rebalance;
 *  - a known member: in PreparingRebalance its join is parked (a JoinGroup of it still parked is
 *    answered REBALANCE_IN_PROGRESS: the new one supersedes it); in CompletingRebalance or Stable,
 *    a member with the same protocols gets the current generation back at once, unless it is the
 *    leader in a Stable group (a leader's JoinGroup asks for a rebalance), or its protocols changed.
 *
 * A group id has one type: a JoinGroup for a consumer (KIP-848) group with members is refused with
 * INCONSISTENT_GROUP_PROTOCOL; an Empty consumer group is converted (dropped from memory; the classic
 * group's first snapshot replaces it on disk).
 */
import { OffsetStoreError } from '../errors/index.js';
import { assert } from '../util/index.js';
import type { ClassicGroup } from './classic-group.js';
import {
  EMPTY_ASSIGNMENT,
  memberSnapshotBytes,
  protocolsMatch,
  type ClassicMember,
} from './classic-member.js';
import type { ClassicOperation, ClassicReply } from './classic-operation.js';
import {
  CLASSIC_SNAPSHOT_BYTES_MAX,
  type ClassicJoinedGroup,
  type ClassicJoinGroupResult,
  type NormalizedClassicJoin,
} from './classic-protocol.js';
import { MEMBER_ID_LENGTH_MAX } from './heartbeat.js';
import {
  maybeCompleteJoinPhase,
  maybePrepareRebalanceOrCompleteJoin,
  prepareRebalance,
  removeMember,
} from './classic-rebalance.js';

type JoinReply = ClassicReply<ClassicJoinGroupResult>;

/** Handles one validated JoinGroup. */
export function handleClassicJoin(
  op: ClassicOperation,
  groupId: string,
  request: NormalizedClassicJoin,
): JoinReply {
  const env = op.env;
  const consumerMembers = env.consumerGroups.memberCount(groupId);
  if (consumerMembers !== null && consumerMembers > 0) {
    return fail(
      'INCONSISTENT_GROUP_PROTOCOL',
      `group ${groupId} is a consumer group (KIP-848 heartbeat protocol) with ${consumerMembers} member(s); a classic JoinGroup cannot join it`,
    );
  }
  let group = env.machine.get(groupId);
  if (group === undefined) {
    if (request.memberId !== null)
      return fail(
        'UNKNOWN_MEMBER_ID',
        `member ${request.memberId} is not in group ${groupId}: the group does not exist; join without a member id`,
      );
    if (request.protocolType.length === 0 || request.protocols.length === 0)
      return inconsistent(groupId);
    const tooLarge = snapshotTooLarge(groupId, undefined, request, env.config.snapshotBytesMax);
    if (tooLarge !== null) return tooLarge;
    if (consumerMembers !== null) env.consumerGroups.dropEmpty(groupId);
    op.emit({
      type: 'classic-group',
      groupId,
      state: 'Empty',
      generationId: 0,
      protocolType: null,
      protocolName: null,
      leaderId: null,
      emptySinceMs: env.nowMs(),
    });
    group = env.machine.get(groupId)!;
  } else {
    assert(consumerMembers === null, `group ${groupId} is of both types`);
  }
  if (!acceptsJoiningMember(op, group, request.memberId)) {
    const memberId = request.memberId;
    if (memberId !== null && group.members.has(memberId))
      removeMember(op, group, memberId, 'the group is full');
    else if (memberId !== null && group.pendingMembers.has(memberId))
      dropPending(op, group, memberId);
    return fail(
      'GROUP_MAX_SIZE_REACHED',
      `group ${groupId} already has ${env.config.groupMembersMax} members (groupMembersMax)`,
    );
  }
  const tooLarge = snapshotTooLarge(groupId, group, request, env.config.snapshotBytesMax);
  if (tooLarge !== null) return tooLarge;
  return request.memberId === null
    ? joinNewMember(op, group, request)
    : joinKnownMember(op, group, request.memberId, request);
}

/** INVALID_REQUEST when the member the join would add or change takes the group's snapshot past its bound. */
function snapshotTooLarge(
  groupId: string,
  group: ClassicGroup | undefined,
  request: NormalizedClassicJoin,
  snapshotBytesMax: number,
): JoinReply | null {
  if (request.memberId === null && request.groupInstanceId === null && request.requireKnownMemberId)
    return null; // nobody is added yet
  const instanceHolder =
    request.groupInstanceId === null ? undefined : group?.staticMemberId(request.groupInstanceId);
  const replaced = group?.members.get(request.memberId ?? instanceHolder ?? '');
  const bytes =
    (group?.snapshotBytes ?? 0) -
    (replaced === undefined ? 0 : memberSnapshotBytes(replaced)) +
    memberSnapshotBytes({
      memberId: request.memberId ?? 'x'.repeat(MEMBER_ID_LENGTH_MAX),
      groupInstanceId: request.groupInstanceId,
      clientId: replaced?.clientId ?? request.clientId,
      clientHost: replaced?.clientHost ?? request.clientHost,
      protocols: request.protocols,
      assignment: replaced?.assignment ?? EMPTY_ASSIGNMENT,
    });
  if (bytes <= snapshotBytesMax) return null;
  return fail(
    'INVALID_REQUEST',
    `with this member's protocols, group ${groupId}'s snapshot would take up to ${bytes} bytes, more than ${snapshotBytesMax}`,
  );
}

/** Kafka's acceptJoiningMember: a parked member or an existing one always, a new one up to groupMembersMax. */
function acceptsJoiningMember(
  op: ClassicOperation,
  group: ClassicGroup,
  memberId: string | null,
): boolean {
  const max = op.env.config.groupMembersMax;
  const member = memberId === null ? undefined : group.members.get(memberId);
  switch (group.state) {
    case 'Empty':
      return true;
    case 'PreparingRebalance':
      return member?.awaitingJoin === true || group.awaitingJoinCount < max;
    default:
      return member !== undefined || group.members.size < max;
  }
}

function joinNewMember(
  op: ClassicOperation,
  group: ClassicGroup,
  request: NormalizedClassicJoin,
): JoinReply {
  const env = op.env;
  if (
    !group.supportsProtocols(
      request.protocolType,
      request.protocols.map((p) => p.name),
    )
  )
    return inconsistent(group.groupId);
  const memberId = env.newMemberId(request.groupInstanceId ?? request.clientId);
  if (request.groupInstanceId !== null) {
    const existing = group.staticMemberId(request.groupInstanceId);
    return existing === undefined
      ? addMember(op, group, memberId, request)
      : replaceStaticMember(op, group, existing, memberId, request);
  }
  if (!request.requireKnownMemberId) return addMember(op, group, memberId, request);
  if (group.pendingMembers.size >= env.config.groupMembersMax) {
    return fail(
      'GROUP_MAX_SIZE_REACHED',
      `group ${group.groupId} already has ${group.pendingMembers.size} members about to join (groupMembersMax)`,
    );
  }
  op.emit({ type: 'classic-pending-member', groupId: group.groupId, memberId, pending: true });
  env.sessions.scheduleSession(group.groupId, memberId, request.sessionTimeoutMs);
  return { value: { outcome: 'member-id-required', memberId } };
}

function joinKnownMember(
  op: ClassicOperation,
  group: ClassicGroup,
  memberId: string,
  request: NormalizedClassicJoin,
): JoinReply {
  if (
    !group.supportsProtocols(
      request.protocolType,
      request.protocols.map((p) => p.name),
    )
  )
    return inconsistent(group.groupId);
  if (group.pendingMembers.has(memberId)) {
    if (request.groupInstanceId !== null)
      return fail(
        'INVALID_REQUEST',
        `member ${memberId} got its id with MEMBER_ID_REQUIRED, which a static member never does; join without a member id`,
      );
    return addMember(op, group, memberId, request);
  }
  let member: ClassicMember;
  try {
    member = group.validateMember(memberId, request.groupInstanceId);
  } catch (error) {
    return { error: error as OffsetStoreError };
  }
  const same = protocolsMatch(member.protocols, request.protocols);
  switch (group.state) {
    case 'PreparingRebalance':
      return updateMemberAndRebalance(op, group, member, request);
    case 'CompletingRebalance':
      // The same metadata: it probably lost the JoinGroup answer; give it again.
      return same
        ? { value: currentGeneration(group, memberId, true) }
        : updateMemberAndRebalance(op, group, member, request);
    case 'Stable':
      if (group.fields.leaderId === memberId || !same)
        return updateMemberAndRebalance(op, group, member, request);
      return { value: currentGeneration(group, memberId, false) };
    case 'Empty':
      return fail('UNKNOWN_MEMBER_ID', `group ${group.groupId} is Empty; join without a member id`);
  }
}

/** Adds a new member, parks its join, and starts a rebalance or joins the one in progress. */
function addMember(
  op: ClassicOperation,
  group: ClassicGroup,
  memberId: string,
  request: NormalizedClassicJoin,
): JoinReply {
  const { groupId } = group;
  const env = op.env;
  if (group.state === 'PreparingRebalance' && group.previousState === 'Empty')
    env.rebalanceTimers.setNewMemberAdded(groupId, true);
  if (group.pendingMembers.has(memberId))
    op.emit({ type: 'classic-pending-member', groupId, memberId, pending: false });
  if (group.members.size === 0 && group.fields.protocolType !== request.protocolType)
    op.setGroup(group, { protocolType: request.protocolType });
  op.putMember(groupId, {
    memberId,
    groupInstanceId: request.groupInstanceId,
    clientId: request.clientId,
    clientHost: request.clientHost,
    rebalanceTimeoutMs: request.rebalanceTimeoutMs,
    sessionTimeoutMs: request.sessionTimeoutMs,
    protocolType: request.protocolType,
    protocols: request.protocols,
    assignment: EMPTY_ASSIGNMENT,
    awaitingJoin: true,
    awaitingSync: false,
    isNew: true,
  });
  if (group.fields.leaderId === null) op.setGroup(group, { leaderId: memberId });
  const parked = env.joins.park(groupId, memberId);
  // A new member cannot heartbeat while its join is parked: its join has a deadline of its own.
  env.sessions.scheduleSession(groupId, memberId, env.config.newMemberJoinTimeoutMs);
  maybePrepareRebalanceOrCompleteJoin(op, group);
  return { parked: parked.promise };
}

/** Parks a known member's join with its new protocols and timeouts, superseding a join of it still parked. */
function updateMemberAndRebalance(
  op: ClassicOperation,
  group: ClassicGroup,
  member: ClassicMember,
  request: NormalizedClassicJoin,
): JoinReply {
  const { groupId } = group;
  if (member.awaitingJoin)
    op.answerJoin(groupId, member.memberId, { error: superseded(groupId, member.memberId) });
  op.putMember(groupId, {
    ...member,
    protocols: request.protocols,
    rebalanceTimeoutMs: request.rebalanceTimeoutMs,
    sessionTimeoutMs: request.sessionTimeoutMs,
    awaitingJoin: true,
  });
  const parked = op.env.joins.park(groupId, member.memberId);
  maybePrepareRebalanceOrCompleteJoin(op, group);
  return { parked: parked.promise };
}

/**
 * A static member rejoining without its member id: a new id replaces the old one, which is fenced.
 * In a Stable group whose selected protocol stays the same, nothing rebalances: the member is
 * answered with the current generation once the group's snapshot (with the new id) is durable.
 */
function replaceStaticMember(
  op: ClassicOperation,
  group: ClassicGroup,
  oldMemberId: string,
  memberId: string,
  request: NormalizedClassicJoin,
): JoinReply {
  const { groupId } = group;
  const env = op.env;
  const old = group.members.get(oldMemberId)!;
  const previousLeader = group.fields.leaderId!;
  const fenced = new OffsetStoreError(
    'FENCED_INSTANCE_ID',
    `instance id '${request.groupInstanceId}' of group ${groupId} rejoined as member ${memberId}, which replaces ${oldMemberId}`,
  );
  op.answerJoin(groupId, oldMemberId, { error: fenced });
  op.answerSync(groupId, oldMemberId, { error: fenced });
  env.sessions.cancelMember(groupId, oldMemberId);
  // The new id owes the SyncGroup the old one owed: the sync deadline removes it as it would have
  // removed the old one (the tombstone takes the old id out of the pending set).
  const owedSync = group.pendingSync.has(oldMemberId);
  op.emit({ type: 'classic-member-tombstone', groupId, memberId: oldMemberId });
  const replaced: ClassicMember = {
    ...old,
    memberId,
    protocols: request.protocols,
    rebalanceTimeoutMs: request.rebalanceTimeoutMs,
    sessionTimeoutMs: request.sessionTimeoutMs,
    awaitingJoin: true,
    awaitingSync: false,
    isNew: false,
  };
  op.putMember(groupId, replaced);
  if (owedSync)
    op.emit({ type: 'classic-pending-sync', groupId, memberIds: [memberId], pending: true });
  if (previousLeader === oldMemberId) op.setGroup(group, { leaderId: memberId });
  env.sessions.scheduleSession(groupId, memberId, request.sessionTimeoutMs);
  const parked = env.joins.park(groupId, memberId);
  switch (group.state) {
    case 'Stable': {
      if (group.selectProtocol() !== group.fields.protocolName) {
        maybePrepareRebalanceOrCompleteJoin(op, group);
        break;
      }
      const isLeader = group.fields.leaderId === memberId;
      op.putMember(groupId, { ...replaced, awaitingJoin: false });
      // Before JoinGroup v9 the answer names the old leader id, so a replaced leader does not compute
      // a trivial assignment; from v9 it is told it is the leader and may skip the assignment.
      const answer = request.supportsSkipAssignment
        ? { ...currentGeneration(group, memberId, true), skipAssignment: isLeader }
        : { ...currentGeneration(group, memberId, false), leader: previousLeader };
      op.answerJoin(groupId, memberId, { value: answer });
      break;
    }
    case 'CompletingRebalance':
      // The leader may already hold the old member id in its assignment: rebalance.
      prepareRebalance(op, group);
      break;
    case 'PreparingRebalance':
      maybeCompleteJoinPhase(op, group);
      break;
    case 'Empty':
      assert(false, `group ${groupId} is Empty but holds instance id ${request.groupInstanceId}`);
  }
  return { parked: parked.promise };
}

/** The current generation as a JoinGroup answer; with `leaderMembers`, the leader gets every member. */
function currentGeneration(
  group: ClassicGroup,
  memberId: string,
  leaderMembers: boolean,
): ClassicJoinedGroup {
  const { generationId, protocolType, protocolName, leaderId } = group.fields;
  return {
    outcome: 'joined',
    memberId,
    generationId,
    protocolType: protocolType!,
    protocolName: protocolName!,
    leader: leaderId!,
    skipAssignment: false,
    members: leaderMembers && leaderId === memberId ? group.joinMembers() : [],
  };
}

function dropPending(op: ClassicOperation, group: ClassicGroup, memberId: string): void {
  op.env.sessions.cancelMember(group.groupId, memberId);
  op.emit({ type: 'classic-pending-member', groupId: group.groupId, memberId, pending: false });
}

function superseded(groupId: string, memberId: string): OffsetStoreError {
  return new OffsetStoreError(
    'REBALANCE_IN_PROGRESS',
    `a newer JoinGroup of member ${memberId} of group ${groupId} superseded this one`,
  );
}

function inconsistent(groupId: string): JoinReply {
  return fail(
    'INCONSISTENT_GROUP_PROTOCOL',
    `the protocol type or protocols do not match those of group ${groupId} (an empty type or no protocol never do)`,
  );
}

function fail(
  code:
    | 'INCONSISTENT_GROUP_PROTOCOL'
    | 'UNKNOWN_MEMBER_ID'
    | 'GROUP_MAX_SIZE_REACHED'
    | 'INVALID_REQUEST',
  message: string,
): JoinReply {
  return { error: new OffsetStoreError(code, message) };
}
