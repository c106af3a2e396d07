/**
 * DescribeGroups (key 15), versions 0-5, flexible from 5. Describes Apache Kafka's protocol (the
 * message schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form.
 *
 * State, protocol and members of classic groups (kafkajs's setOffsets requires Empty or Dead). v3
 * adds authorized operations, v4 static membership.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** DescribeGroups request table. */
export const DESCRIBE_GROUPS_REQUEST = message({
  name: 'DescribeGroupsRequest',
  apiKey: 15,
  kind: 'request',
  versions: '0-5',
  flexible: '5+',
  fields: [
    { name: 'groups', type: '[]string', versions: '0+' },
    { name: 'includeAuthorizedOperations', type: 'bool', versions: '3+' },
  ],
});

/** DescribeGroups response table. */
export const DESCRIBE_GROUPS_RESPONSE = message({
  name: 'DescribeGroupsResponse',
  apiKey: 15,
  kind: 'response',
  versions: '0-5',
  flexible: '5+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    {
      name: 'groups',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'errorCode', type: 'int16', versions: '0+' },
        { name: 'groupId', type: 'string', versions: '0+' },
        { name: 'groupState', type: 'string', versions: '0+' },
        { name: 'protocolType', type: 'string', versions: '0+' },
        { name: 'protocolData', type: 'string', versions: '0+' },
        {
          name: 'members',
          type: '[]struct',
          versions: '0+',
          fields: [
            { name: 'memberId', type: 'string', versions: '0+' },
            {
              name: 'groupInstanceId',
              type: 'string',
              versions: '4+',
              nullable: '4+',
              default: null,
            },
            { name: 'clientId', type: 'string', versions: '0+' },
            { name: 'clientHost', type: 'string', versions: '0+' },
            { name: 'memberMetadata', type: 'bytes', versions: '0+' },
            { name: 'memberAssignment', type: 'bytes', versions: '0+' },
          ],
        },
        { name: 'authorizedOperations', type: 'int32', versions: '3+', default: -2147483648 },
      ],
    },
  ],
});

/** A decoded DescribeGroups request. */
export type DescribeGroupsRequest = MessageValue<typeof DESCRIBE_GROUPS_REQUEST>;
/** A decoded DescribeGroups response. */
export type DescribeGroupsResponse = MessageValue<typeof DESCRIBE_GROUPS_RESPONSE>;
/** A DescribeGroups response to encode. */
export type DescribeGroupsResponseInput = MessageInput<typeof DESCRIBE_GROUPS_RESPONSE>;
