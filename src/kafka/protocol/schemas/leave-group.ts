/**
 * LeaveGroup (key 13), versions 0-5, flexible from 4. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * A classic-protocol member leaving its group. Up to v2 one member id; from v3 (KIP-345) a batch of
 * member identities, each answered on its own; v5 adds a reason per member.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** LeaveGroup request table. */
export const LEAVE_GROUP_REQUEST = message({
  name: 'LeaveGroupRequest',
  apiKey: 13,
  kind: 'request',
  versions: '0-5',
  flexible: '4+',
  fields: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'memberId', type: 'string', versions: '0-2' },
    {
      name: 'members',
      type: '[]struct',
      versions: '3+',
      fields: [
        { name: 'memberId', type: 'string', versions: '3+' },
        { name: 'groupInstanceId', type: 'string', versions: '3+', nullable: '3+', default: null },
        { name: 'reason', type: 'string', versions: '5+', nullable: '5+', default: null },
      ],
    },
  ],
});

/** LeaveGroup response table. */
export const LEAVE_GROUP_RESPONSE = message({
  name: 'LeaveGroupResponse',
  apiKey: 13,
  kind: 'response',
  versions: '0-5',
  flexible: '4+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
    {
      name: 'members',
      type: '[]struct',
      versions: '3+',
      fields: [
        { name: 'memberId', type: 'string', versions: '3+' },
        { name: 'groupInstanceId', type: 'string', versions: '3+', nullable: '3+' },
        { name: 'errorCode', type: 'int16', versions: '3+' },
      ],
    },
  ],
});

/** A decoded LeaveGroup request. */
export type LeaveGroupRequest = MessageValue<typeof LEAVE_GROUP_REQUEST>;
/** A decoded LeaveGroup response. */
export type LeaveGroupResponse = MessageValue<typeof LEAVE_GROUP_RESPONSE>;
/** A LeaveGroup response to encode. */
export type LeaveGroupResponseInput = MessageInput<typeof LEAVE_GROUP_RESPONSE>;
