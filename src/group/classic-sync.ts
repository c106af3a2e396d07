/**
 * The SyncGroup and Heartbeat handlers of the classic protocol (Kafka's classicGroupSync and
 * classicGroupHeartbeat).
 *
 * SyncGroup, after the member's identity (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), generation
 * (ILLEGAL_GENERATION) and protocol (INCONSISTENT_GROUP_PROTOCOL, when the client names one) are
 * checked:
 *  - PreparingRebalance: REBALANCE_IN_PROGRESS (rejoin);
 *  - CompletingRebalance: the call is parked; the leader's carries every member's assignment (a
 *    member it names none gets empty bytes; ids not in the group are ignored), which makes the
 *    group Stable and answers every parked SyncGroup once the Stable snapshot is durable;
 *  - Stable: the member's assignment at once.
 * A SyncGroup of a member whose previous one is still parked supersedes it: the previous one is
 * answered REBALANCE_IN_PROGRESS. A leader's whose assignments would take the group's snapshot past
 * the coordinator's snapshotBytesMax (CLASSIC_SNAPSHOT_BYTES_MAX, or less under a log of smaller
 * batches) is INVALID_REQUEST and changes nothing (the snapshot is one batch).
 *
 * Heartbeat: after the same identity and generation checks, the member's session restarts; during
 * PreparingRebalance the answer is REBALANCE_IN_PROGRESS, which is how members learn to rejoin.
 */
import { OffsetStoreError } from '../errors/index.js';
import type { ClassicGroup } from './classic-group.js';
import type { ClassicMember } from './classic-member.js';
import type { ClassicOperation, ClassicReply } from './classic-operation.js';
import {
  type ClassicSyncGroupResult,
  type NormalizedClassicHeartbeat,
  type NormalizedClassicSync,
} from './classic-protocol.js';
import { rebalanceInProgress, setAssignments } from './classic-rebalance.js';

/** Handles one validated SyncGroup. */
export function handleClassicSync(
  op: ClassicOperation,
  groupId: string,
  request: NormalizedClassicSync,
): ClassicReply<ClassicSyncGroupResult> {
  const group = op.env.machine.get(groupId);
  const checked = checkGeneration(
    group,
    groupId,
    request.memberId,
    request.groupInstanceId,
    request.generationId,
  );
  if ('error' in checked) return checked;
  const { member } = checked;
  const g = group!;
  const { protocolType, protocolName } = g.fields;
  if (
    inconsistent(request.protocolType, protocolType) ||
    inconsistent(request.protocolName, protocolName)
  ) {
    return {
      error: new OffsetStoreError(
        'INCONSISTENT_GROUP_PROTOCOL',
        `SyncGroup names protocol ${request.protocolType}/${request.protocolName}, group ${groupId} uses ${protocolType}/${protocolName}`,
      ),
    };
  }
  switch (g.state) {
    case 'PreparingRebalance':
      return { error: rebalanceInProgress(groupId) };
    case 'Stable':
      syncReceived(op, g, member.memberId);
      return { value: { protocolType, protocolName, assignment: member.assignment } };
    case 'CompletingRebalance': {
      if (g.fields.leaderId === member.memberId) {
        let bytes = g.snapshotBytes;
        for (const m of g.members.values())
          bytes += (request.assignments.get(m.memberId)?.length ?? 0) - m.assignment.length;
        const bytesMax = op.env.config.snapshotBytesMax;
        if (bytes > bytesMax) {
          return {
            error: new OffsetStoreError(
              'INVALID_REQUEST',
              `with these assignments, group ${groupId}'s snapshot would take up to ${bytes} bytes, more than ${bytesMax}`,
            ),
          };
        }
      }
      if (member.awaitingSync) {
        op.answerSync(groupId, member.memberId, {
          error: new OffsetStoreError(
            'REBALANCE_IN_PROGRESS',
            `a newer SyncGroup of member ${member.memberId} of group ${groupId} superseded this one`,
          ),
        });
      }
      const parked = op.env.syncs.park(groupId, member.memberId);
      op.putMember(groupId, { ...member, awaitingSync: true });
      syncReceived(op, g, member.memberId);
      if (g.fields.leaderId === member.memberId) {
        setAssignments(op, g, request.assignments);
        op.setGroup(g, { state: 'Stable' });
      }
      return { parked: parked.promise };
    }
    case 'Empty':
      return { error: new OffsetStoreError('UNKNOWN_MEMBER_ID', `group ${groupId} is Empty`) };
  }
}

/** Handles one validated Heartbeat. */
export function handleClassicHeartbeat(
  op: ClassicOperation,
  groupId: string,
  request: NormalizedClassicHeartbeat,
): ClassicReply<void> {
  const group = op.env.machine.get(groupId);
  const checked = checkGeneration(
    group,
    groupId,
    request.memberId,
    request.groupInstanceId,
    request.generationId,
  );
  if ('error' in checked) return checked;
  op.env.sessions.scheduleSession(
    groupId,
    checked.member.memberId,
    checked.member.sessionTimeoutMs,
  );
  if (group!.state === 'PreparingRebalance') return { error: rebalanceInProgress(groupId) };
  return { value: undefined };
}

/** The member, if the group exists, holds it under that identity, and is at that generation. */
function checkGeneration(
  group: ClassicGroup | undefined,
  groupId: string,
  memberId: string,
  groupInstanceId: string | null,
  generationId: number,
): { member: ClassicMember } | { error: OffsetStoreError } {
  if (group === undefined)
    return {
      error: new OffsetStoreError(
        'UNKNOWN_MEMBER_ID',
        `member ${memberId} is not in group ${groupId}: no classic group of that id`,
      ),
    };
  let member: ClassicMember;
  try {
    member = group.validateMember(memberId, groupInstanceId);
  } catch (error) {
    return { error: error as OffsetStoreError };
  }
  if (generationId !== group.fields.generationId) {
    return {
      error: new OffsetStoreError(
        'ILLEGAL_GENERATION',
        `member ${memberId} sent generation ${generationId}, group ${groupId} is at ${group.fields.generationId}; rejoin`,
      ),
    };
  }
  return { member };
}

/** The member sent SyncGroup for this generation: it is no longer pending sync; the sync timer stops once none is. */
function syncReceived(op: ClassicOperation, group: ClassicGroup, memberId: string): void {
  if (!group.pendingSync.has(memberId)) return;
  op.emit({
    type: 'classic-pending-sync',
    groupId: group.groupId,
    memberIds: [memberId],
    pending: false,
  });
  if (group.pendingSync.size === 0) op.env.rebalanceTimers.cancelSync(group.groupId);
}

/** Kafka's isProtocolInconsistent: both given and different. */
function inconsistent(requested: string | null, actual: string | null): boolean {
  return requested !== null && actual !== null && requested !== actual;
}
