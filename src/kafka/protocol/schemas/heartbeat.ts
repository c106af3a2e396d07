/**
 * Heartbeat (key 12), versions 0-4, flexible from 4. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * A classic-protocol member's liveness signal; the error code tells it to rejoin. v1 adds
 * throttleTimeMs, v3 static membership.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** Heartbeat request table. */
export const HEARTBEAT_REQUEST = message({
  name: 'HeartbeatRequest',
  apiKey: 12,
  kind: 'request',
  versions: '0-4',
  flexible: '4+',
  fields: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'generationId', type: 'int32', versions: '0+' },
    { name: 'memberId', type: 'string', versions: '0+' },
    { name: 'groupInstanceId', type: 'string', versions: '3+', nullable: '3+', default: null },
  ],
});

/** Heartbeat response table. */
export const HEARTBEAT_RESPONSE = message({
  name: 'HeartbeatResponse',
  apiKey: 12,
  kind: 'response',
  versions: '0-4',
  flexible: '4+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
  ],
});

/** A decoded Heartbeat request. */
export type HeartbeatRequest = MessageValue<typeof HEARTBEAT_REQUEST>;
/** A decoded Heartbeat response. */
export type HeartbeatResponse = MessageValue<typeof HEARTBEAT_RESPONSE>;
/** A Heartbeat response to encode. */
export type HeartbeatResponseInput = MessageInput<typeof HEARTBEAT_RESPONSE>;
