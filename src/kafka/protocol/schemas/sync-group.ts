/**
 * SyncGroup (key 14), versions 0-5, flexible from 4. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * The second step of the classic group protocol: the leader sends every member's assignment, each
 * member gets its own back. v3 adds static membership; v5 names the protocol type and name, which
 * the coordinator checks against the group's.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** SyncGroup request table. */
export const SYNC_GROUP_REQUEST = message({
  name: 'SyncGroupRequest',
  apiKey: 14,
  kind: 'request',
  versions: '0-5',
  flexible: '4+',
  fields: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'generationId', type: 'int32', versions: '0+' },
    { name: 'memberId', type: 'string', versions: '0+' },
    { name: 'groupInstanceId', type: 'string', versions: '3+', nullable: '3+', default: null },
    { name: 'protocolType', type: 'string', versions: '5+', nullable: '5+', default: null },
    { name: 'protocolName', type: 'string', versions: '5+', nullable: '5+', default: null },
    {
      name: 'assignments',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'memberId', type: 'string', versions: '0+' },
        { name: 'assignment', type: 'bytes', versions: '0+' },
      ],
    },
  ],
});

/** SyncGroup response table. */
export const SYNC_GROUP_RESPONSE = message({
  name: 'SyncGroupResponse',
  apiKey: 14,
  kind: 'response',
  versions: '0-5',
  flexible: '4+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
    { name: 'protocolType', type: 'string', versions: '5+', nullable: '5+', default: null },
    { name: 'protocolName', type: 'string', versions: '5+', nullable: '5+', default: null },
    { name: 'assignment', type: 'bytes', versions: '0+' },
  ],
});

/** A decoded SyncGroup request. */
export type SyncGroupRequest = MessageValue<typeof SYNC_GROUP_REQUEST>;
/** A decoded SyncGroup response. */
export type SyncGroupResponse = MessageValue<typeof SYNC_GROUP_RESPONSE>;
/** A SyncGroup response to encode. */
export type SyncGroupResponseInput = MessageInput<typeof SYNC_GROUP_RESPONSE>;
