/**
 * LeaveGroup (key 13, v0-4): members leave a classic group through `store.classic.leaveGroup`;
 * the group rebalances without them at once instead of after their session timeout.
 *
 * v0-2 name one member (member_id) and get its outcome as the error code; v3+ name a batch
 * (members[], a static member possibly by its instance id alone) and get one answer per member,
 * the top-level error being 0 unless the group itself failed (UNKNOWN_MEMBER_ID for a group id with
 * no group, as Kafka's coordinator answers; the store's others mapped as kafka-error-code.ts says).
 * A consumer (KIP-848) group is answered member by member (classic-leave.ts).
 */
import { MEMBER_ID_LENGTH_MAX, type ClassicLeaveGroupResult } from '../../group/index.js';
import { KAFKA_ERROR, type API_KEYS, type ResponseInputOf } from '../protocol/index.js';
import type { RequestHandler } from './request-handler.js';

type LeaveResponse = ResponseInputOf<typeof API_KEYS.LeaveGroup>;

/** LeaveGroup v3 is the first to name a batch of members. */
const BATCHED_FROM_VERSION = 3;

/** A member's outcome as a Kafka error code. */
function memberErrorCode(
  errorCode: ClassicLeaveGroupResult['members'][number]['errorCode'],
): number {
  return errorCode === null ? KAFKA_ERROR.NONE : KAFKA_ERROR[errorCode];
}

/** Removes the members named. */
export const handleLeaveGroup: RequestHandler<typeof API_KEYS.LeaveGroup> = async (
  context,
  request,
  header,
) => {
  const batched = header.apiVersion >= BATCHED_FROM_VERSION;
  const members = batched
    ? request.members.map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId }))
    : [{ memberId: request.memberId, groupInstanceId: null }];
  // An entry that names no member (an empty member id and no instance id), an empty instance id, or
  // an id longer than any the group gives or takes names none the group could have:
  // UNKNOWN_MEMBER_ID for it alone, as Kafka answers, and the others of the batch leave.
  const namesNone = (m: { memberId: string; groupInstanceId: string | null }) =>
    m.groupInstanceId === '' ||
    (m.memberId === '' && m.groupInstanceId === null) ||
    m.memberId.length > MEMBER_ID_LENGTH_MAX ||
    (m.groupInstanceId?.length ?? 0) > MEMBER_ID_LENGTH_MAX;
  const named = members.filter((m) => !namesNone(m));
  let result: ClassicLeaveGroupResult = { members: [] };
  if (named.length > 0) {
    try {
      result = await context.store.classic.leaveGroup(request.groupId, { members: named });
    } catch (error) {
      return {
        throttleTimeMs: 0,
        errorCode: context.errorCodeOf(error, 'LeaveGroup'),
        members: [],
      };
    }
  }
  let next = 0;
  const answers = members.map((m) => {
    if (namesNone(m)) return { ...m, errorCode: KAFKA_ERROR.UNKNOWN_MEMBER_ID };
    const answer = result.members[next++]!;
    return {
      memberId: answer.memberId,
      groupInstanceId: answer.groupInstanceId,
      errorCode: memberErrorCode(answer.errorCode),
    };
  });
  const response: LeaveResponse = {
    throttleTimeMs: 0,
    errorCode: batched ? KAFKA_ERROR.NONE : answers[0]!.errorCode,
    members: answers,
  };
  return response;
};
