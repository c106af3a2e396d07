/**
 * Heartbeat (key 12, v0-4): a classic group member keeps its session through
 * `store.classic.heartbeat`. error_code 0, or REBALANCE_IN_PROGRESS (27: rejoin; the session is
 * kept all the same), ILLEGAL_GENERATION (22), UNKNOWN_MEMBER_ID (25), FENCED_INSTANCE_ID (82), the
 * store's others mapped as kafka-error-code.ts says.
 */
import { KAFKA_ERROR, type API_KEYS } from '../protocol/index.js';
import type { RequestHandler } from './request-handler.js';

/** Restarts the member's session. */
export const handleHeartbeat: RequestHandler<typeof API_KEYS.Heartbeat> = (context, request) =>
  context.store.classic
    .heartbeat(request.groupId, {
      memberId: request.memberId,
      generationId: request.generationId,
      groupInstanceId: request.groupInstanceId,
    })
    .then(
      () => ({ throttleTimeMs: 0, errorCode: KAFKA_ERROR.NONE }),
      (error: unknown) => ({
        throttleTimeMs: 0,
        errorCode: context.errorCodeOf(error, 'Heartbeat'),
      }),
    );
