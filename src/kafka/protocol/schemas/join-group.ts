/**
 * JoinGroup (key 11), versions 0-9, flexible from 6. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * The first step of the classic group protocol: each member offers its protocols, the coordinator
 * holds the requests until the group has joined and answers the leader with every member's metadata.
 * v1 adds the rebalance timeout; v4 (KIP-394) lets the coordinator answer MEMBER_ID_REQUIRED with a
 * member id to rejoin with; v5 adds static membership (groupInstanceId); v7 echoes the protocol type;
 * v8 carries a reason; v9 lets the leader skip the assignment.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** JoinGroup request table. */
export const JOIN_GROUP_REQUEST = message({
  name: 'JoinGroupRequest',
  apiKey: 11,
  kind: 'request',
  versions: '0-9',
  flexible: '6+',
  fields: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'sessionTimeoutMs', type: 'int32', versions: '0+' },
    { name: 'rebalanceTimeoutMs', type: 'int32', versions: '1+', default: -1 },
    { name: 'memberId', type: 'string', versions: '0+' },
    { name: 'groupInstanceId', type: 'string', versions: '5+', nullable: '5+', default: null },
    { name: 'protocolType', type: 'string', versions: '0+' },
    {
      name: 'protocols',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        { name: 'metadata', type: 'bytes', versions: '0+' },
      ],
    },
    { name: 'reason', type: 'string', versions: '8+', nullable: '8+', default: null },
  ],
});

/** JoinGroup response table. */
export const JOIN_GROUP_RESPONSE = message({
  name: 'JoinGroupResponse',
  apiKey: 11,
  kind: 'response',
  versions: '0-9',
  flexible: '6+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '2+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
    { name: 'generationId', type: 'int32', versions: '0+', default: -1 },
    { name: 'protocolType', type: 'string', versions: '7+', nullable: '7+', default: null },
    { name: 'protocolName', type: 'string', versions: '0+', nullable: '7+' },
    { name: 'leader', type: 'string', versions: '0+' },
    { name: 'skipAssignment', type: 'bool', versions: '9+' },
    { name: 'memberId', type: 'string', versions: '0+' },
    {
      name: 'members',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'memberId', type: 'string', versions: '0+' },
        { name: 'groupInstanceId', type: 'string', versions: '5+', nullable: '5+', default: null },
        { name: 'metadata', type: 'bytes', versions: '0+' },
      ],
    },
  ],
});

/** A decoded JoinGroup request. */
export type JoinGroupRequest = MessageValue<typeof JOIN_GROUP_REQUEST>;
/** A decoded JoinGroup response. */
export type JoinGroupResponse = MessageValue<typeof JOIN_GROUP_RESPONSE>;
/** A JoinGroup response to encode. */
export type JoinGroupResponseInput = MessageInput<typeof JOIN_GROUP_RESPONSE>;
