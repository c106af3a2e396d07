/**
 * JoinGroup (key 11, v0-6): a member joins a classic group through `store.classic.joinGroup`.
 *
 * - v4+ (KIP-394): a new dynamic member (member id '') is answered at once MEMBER_ID_REQUIRED (79)
 *   with the member id to join again with; v0-3 join at once with a generated id.
 * - The answer is held until the join phase completes (every member rejoined, the rebalance
 *   timeout, or the group's initial delay), as Kafka's coordinator holds it; held-answer.ts says
 *   what happens when the connection or the server closes first.
 * - The leader's answer lists every member with its metadata for the selected protocol; the others
 *   get none. v0 has no rebalance timeout (the session timeout serves), v5+ a static instance id.
 * - A rebalance timeout over one day (the longest the store keeps, MEMBER_TIMEOUT_MS_MAX) is taken
 *   as one day: the Java consumer sends its max.poll.interval.ms, which may be Integer.MAX_VALUE,
 *   and Kafka's coordinator takes any; one of 0 or below -1 is taken as 1 ms.
 * - Errors go in error_code with the member id as sent: INCONSISTENT_GROUP_PROTOCOL (23),
 *   UNKNOWN_MEMBER_ID (25), INVALID_SESSION_TIMEOUT (26), FENCED_INSTANCE_ID (82), and the store's
 *   others mapped as kafka-error-code.ts says.
 */
import { CLASSIC_NAME_LENGTH_MAX, MEMBER_TIMEOUT_MS_MAX } from '../../group/index.js';
import { cutWellFormed } from '../../model/index.js';
import { KAFKA_ERROR, type API_KEYS, type ResponseInputOf } from '../protocol/index.js';
import { CLOSED_WHILE_HELD, holdAnswer } from './held-answer.js';
import type { RequestHandler } from './request-handler.js';

type JoinResponse = ResponseInputOf<typeof API_KEYS.JoinGroup>;

/** JoinGroup v4 is the first to answer a new member MEMBER_ID_REQUIRED (KIP-394). */
const KNOWN_MEMBER_ID_FROM_VERSION = 4;

function failed(memberId: string, errorCode: number): JoinResponse {
  return {
    throttleTimeMs: 0,
    errorCode,
    generationId: -1,
    protocolName: '',
    leader: '',
    memberId,
    members: [],
  };
}

/** Joins the member, answering once the group's join phase completes. */
export const handleJoinGroup: RequestHandler<typeof API_KEYS.JoinGroup> = async (
  context,
  request,
  header,
  peer,
) => {
  const joining = context.store.classic.joinGroup(request.groupId, {
    memberId: request.memberId,
    groupInstanceId: request.groupInstanceId,
    protocolType: request.protocolType,
    protocols: request.protocols,
    sessionTimeoutMs: request.sessionTimeoutMs,
    // -1: none sent (v0), the session timeout serves; 0 or another negative, which Kafka's
    // coordinator takes too (the join phase then ends at once), is the shortest the store keeps.
    rebalanceTimeoutMs:
      request.rebalanceTimeoutMs === -1
        ? -1
        : Math.max(1, Math.min(request.rebalanceTimeoutMs, MEMBER_TIMEOUT_MS_MAX)),
    requireKnownMemberId: header.apiVersion >= KNOWN_MEMBER_ID_FROM_VERSION,
    // Kafka bounds a client id by the protocol's string only; the group keeps its first 255
    // characters (what describes report) rather than refusing the join.
    clientId: cutWellFormed(header.clientId ?? '', CLASSIC_NAME_LENGTH_MAX),
    clientHost: cutWellFormed(peer.clientHost, CLASSIC_NAME_LENGTH_MAX),
  });
  const outcome = await holdAnswer(joining, peer.closing);
  if ('closed' in outcome) return failed(request.memberId, CLOSED_WHILE_HELD);
  if ('error' in outcome)
    return failed(request.memberId, context.errorCodeOf(outcome.error, 'JoinGroup'));
  const result = outcome.value;
  if (result.outcome === 'member-id-required')
    return failed(result.memberId, KAFKA_ERROR.MEMBER_ID_REQUIRED);
  return {
    throttleTimeMs: 0,
    errorCode: KAFKA_ERROR.NONE,
    generationId: result.generationId,
    protocolName: result.protocolName,
    leader: result.leader,
    memberId: result.memberId,
    members: result.members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      metadata: m.metadata,
    })),
  };
};
