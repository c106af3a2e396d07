/**
 * JoinGroup (11), SyncGroup (14), Heartbeat (12) and LeaveGroup (13): the classic group protocol.
 * Not yet available on this server: each is answered with UNSUPPORTED_VERSION (35), Kafka's error
 * for a request a broker does not serve, at the version the client negotiated. The APIs stay
 * advertised in ApiVersions at the ranges the classic protocol needs, so that serving them is a
 * change of this one file: replace these four handlers with ones over the store's classic-group
 * API. Until then, consumers must use the consumer group protocol (KIP-848, ConsumerGroupHeartbeat),
 * and kafkajs's consumer and its admin setOffsets/resetOffsets (which join a classic group) fail.
 */
import { KAFKA_ERROR, type API_KEYS } from '../protocol/index.js';
import type { RequestHandler } from './request-handler.js';

const UNSUPPORTED = KAFKA_ERROR.UNSUPPORTED_VERSION;

/** True once the classic group protocol is served (this file's handlers do the work). */
export const CLASSIC_GROUP_PROTOCOL_SERVED = false;

/** JoinGroup: not yet served. */
export const handleJoinGroup: RequestHandler<typeof API_KEYS.JoinGroup> = (_context, request) => ({
  errorCode: UNSUPPORTED, generationId: -1, protocolName: '', leader: '', memberId: request.memberId, members: [],
});

/** SyncGroup: not yet served. */
export const handleSyncGroup: RequestHandler<typeof API_KEYS.SyncGroup> = () => ({ errorCode: UNSUPPORTED, assignment: Buffer.alloc(0) });

/** Heartbeat: not yet served. */
export const handleHeartbeat: RequestHandler<typeof API_KEYS.Heartbeat> = () => ({ errorCode: UNSUPPORTED });

/** LeaveGroup: not yet served. */
export const handleLeaveGroup: RequestHandler<typeof API_KEYS.LeaveGroup> = () => ({ errorCode: UNSUPPORTED, members: [] });
