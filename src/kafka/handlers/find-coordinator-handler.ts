/**
 * FindCoordinator (key 10, v0-4): the broker coordinating a group (key type 0), one key in v0-3, a
 * batch of keys from v4. This server coordinates groups only: a transaction key (type 1) or any
 * other type is INVALID_REQUEST with a message saying so (non-retriable, so a transactional
 * producer fails at once instead of retrying forever). A group id the store cannot hold (empty,
 * over 255 UTF-8 bytes) is INVALID_GROUP_ID.
 * The coordinator is named at the address of the listener the request came in on. An answer
 * without a coordinator names node -1 at '' port -1, as Kafka does; a cluster node that cannot name
 * one yet answers COORDINATOR_NOT_AVAILABLE (retriable).
 */
import { validateGroupId } from '../../model/index.js';
import { KAFKA_ERROR, type API_KEYS } from '../protocol/index.js';
import type { HandlerContext } from './handler-context.js';
import { errorMessageOf } from './kafka-error-code.js';
import type { RequestHandler } from './request-handler.js';
import { mapInTurns } from './in-turns.js';

const GROUP_KEY_TYPE = 0;

interface Coordinator {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

function coordinatorOf(
  context: HandlerContext,
  key: string,
  keyType: number,
  listenerName: string | undefined,
): Coordinator {
  const refused = (errorCode: number, errorMessage: string): Coordinator => ({
    errorCode,
    errorMessage: errorMessageOf(errorMessage),
    nodeId: -1,
    host: '',
    port: -1,
  });
  if (keyType !== GROUP_KEY_TYPE) {
    return refused(
      KAFKA_ERROR.INVALID_REQUEST,
      `key type ${keyType} is not served: this server coordinates consumer groups only (key type 0) and has no transaction coordinator`,
    );
  }
  try {
    validateGroupId(key);
  } catch (error) {
    return refused(context.errorCodeOf(error, 'FindCoordinator'), (error as Error).message);
  }
  const broker = context.cluster.coordinatorFor(key, listenerName);
  if (broker === undefined) {
    return refused(
      KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE,
      `no broker can be named the coordinator of group '${key}' now (its offsets-bucket is between owners, or this node is joining or loading it): ask again shortly`,
    );
  }
  return {
    errorCode: KAFKA_ERROR.NONE,
    errorMessage: null,
    nodeId: broker.nodeId,
    host: broker.host,
    port: broker.port,
  };
}

/** Answers FindCoordinator for group keys. */
export const handleFindCoordinator: RequestHandler<typeof API_KEYS.FindCoordinator> = (
  context,
  request,
  header,
  peer,
) => {
  if (header.apiVersion >= 4) {
    return mapInTurns(
      request.coordinatorKeys,
      (key) => ({ key, ...coordinatorOf(context, key, request.keyType, peer.listenerName) }),
      (coordinators) => ({ throttleTimeMs: 0, coordinators }),
    );
  }
  return {
    throttleTimeMs: 0,
    ...coordinatorOf(context, request.key, request.keyType, peer.listenerName),
  };
};
