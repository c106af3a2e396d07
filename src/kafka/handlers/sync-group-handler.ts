/**
 * SyncGroup (key 14, v0-4): a member of a classic group gets its assignment through
 * `store.classic.syncGroup`; the leader's request carries every member's.
 *
 * In a Stable group the answer comes at once; in CompletingRebalance it is held until the leader's
 * SyncGroup made the group Stable and its snapshot is durable (held-answer.ts says what happens
 * when the connection or the server closes first). Errors go in error_code with an empty
 * assignment: REBALANCE_IN_PROGRESS (27, rejoin), ILLEGAL_GENERATION (22), UNKNOWN_MEMBER_ID (25),
 * FENCED_INSTANCE_ID (82), INCONSISTENT_GROUP_PROTOCOL (23), the store's others mapped as
 * kafka-error-code.ts says.
 */
import { KAFKA_ERROR, type API_KEYS } from '../protocol/index.js';
import { CLOSED_WHILE_HELD, holdAnswer } from './held-answer.js';
import type { RequestHandler } from './request-handler.js';

const NO_ASSIGNMENT = Buffer.alloc(0);

/** Syncs the member, answering with its assignment once the leader has sent it. */
export const handleSyncGroup: RequestHandler<typeof API_KEYS.SyncGroup> = async (
  context,
  request,
  _header,
  peer,
) => {
  const syncing = context.store.classic.syncGroup(request.groupId, {
    memberId: request.memberId,
    generationId: request.generationId,
    groupInstanceId: request.groupInstanceId,
    protocolType: request.protocolType,
    protocolName: request.protocolName,
    assignments: request.assignments,
  });
  const outcome = await holdAnswer(syncing, peer.closing);
  if ('closed' in outcome)
    return { throttleTimeMs: 0, errorCode: CLOSED_WHILE_HELD, assignment: NO_ASSIGNMENT };
  if ('error' in outcome)
    return {
      throttleTimeMs: 0,
      errorCode: context.errorCodeOf(outcome.error, 'SyncGroup'),
      assignment: NO_ASSIGNMENT,
    };
  return { throttleTimeMs: 0, errorCode: KAFKA_ERROR.NONE, assignment: outcome.value.assignment };
};
