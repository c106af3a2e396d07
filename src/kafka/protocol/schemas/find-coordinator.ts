/**
 * FindCoordinator (key 10), versions 0-6, flexible from 3. Describes Apache Kafka's protocol (the
 * message schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form.
 *
 * Which broker coordinates a group (keyType 0) or a transaction (1). Up to v3 one key per request;
 * from v4 (KIP-699) a batch of keys, each answered with its own coordinator and error.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** FindCoordinator request table. */
export const FIND_COORDINATOR_REQUEST = message({
  name: 'FindCoordinatorRequest',
  apiKey: 10,
  kind: 'request',
  versions: '0-6',
  flexible: '3+',
  fields: [
    { name: 'key', type: 'string', versions: '0-3' },
    { name: 'keyType', type: 'int8', versions: '1+' },
    { name: 'coordinatorKeys', type: '[]string', versions: '4+' },
  ],
});

/** FindCoordinator response table. */
export const FIND_COORDINATOR_RESPONSE = message({
  name: 'FindCoordinatorResponse',
  apiKey: 10,
  kind: 'response',
  versions: '0-6',
  flexible: '3+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '0-3' },
    { name: 'errorMessage', type: 'string', versions: '1-3', nullable: '1-3' },
    { name: 'nodeId', type: 'int32', versions: '0-3' },
    { name: 'host', type: 'string', versions: '0-3' },
    { name: 'port', type: 'int32', versions: '0-3' },
    {
      name: 'coordinators',
      type: '[]struct',
      versions: '4+',
      fields: [
        { name: 'key', type: 'string', versions: '4+' },
        { name: 'nodeId', type: 'int32', versions: '4+' },
        { name: 'host', type: 'string', versions: '4+' },
        { name: 'port', type: 'int32', versions: '4+' },
        { name: 'errorCode', type: 'int16', versions: '4+' },
        { name: 'errorMessage', type: 'string', versions: '4+', nullable: '4+' },
      ],
    },
  ],
});

/** A decoded FindCoordinator request. */
export type FindCoordinatorRequest = MessageValue<typeof FIND_COORDINATOR_REQUEST>;
/** A decoded FindCoordinator response. */
export type FindCoordinatorResponse = MessageValue<typeof FIND_COORDINATOR_RESPONSE>;
/** A FindCoordinator response to encode. */
export type FindCoordinatorResponseInput = MessageInput<typeof FIND_COORDINATOR_RESPONSE>;
