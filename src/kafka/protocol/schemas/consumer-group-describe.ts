/**
 * ConsumerGroupDescribe (key 69), version 0, flexible. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * DescribeGroups for KIP-848 consumer groups: epochs, assignor, and each member's current and target
 * assignment by topic id and name.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

const ASSIGNMENT_FIELDS = [
  {
    name: 'topicPartitions',
    type: '[]struct',
    versions: '0+',
    fields: [
      { name: 'topicId', type: 'uuid', versions: '0+' },
      { name: 'topicName', type: 'string', versions: '0+' },
      { name: 'partitions', type: '[]int32', versions: '0+' },
    ],
  },
] as const;

/** ConsumerGroupDescribe request table. */
export const CONSUMER_GROUP_DESCRIBE_REQUEST = message({
  name: 'ConsumerGroupDescribeRequest',
  apiKey: 69,
  kind: 'request',
  versions: '0',
  flexible: '0+',
  fields: [
    { name: 'groupIds', type: '[]string', versions: '0+' },
    { name: 'includeAuthorizedOperations', type: 'bool', versions: '0+' },
  ],
});

/** ConsumerGroupDescribe response table. */
export const CONSUMER_GROUP_DESCRIBE_RESPONSE = message({
  name: 'ConsumerGroupDescribeResponse',
  apiKey: 69,
  kind: 'response',
  versions: '0',
  flexible: '0+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '0+' },
    {
      name: 'groups',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'errorCode', type: 'int16', versions: '0+' },
        { name: 'errorMessage', type: 'string', versions: '0+', nullable: '0+', default: null },
        { name: 'groupId', type: 'string', versions: '0+' },
        { name: 'groupState', type: 'string', versions: '0+' },
        { name: 'groupEpoch', type: 'int32', versions: '0+' },
        { name: 'assignmentEpoch', type: 'int32', versions: '0+' },
        { name: 'assignorName', type: 'string', versions: '0+' },
        {
          name: 'members',
          type: '[]struct',
          versions: '0+',
          fields: [
            { name: 'memberId', type: 'string', versions: '0+' },
            { name: 'instanceId', type: 'string', versions: '0+', nullable: '0+', default: null },
            { name: 'rackId', type: 'string', versions: '0+', nullable: '0+', default: null },
            { name: 'memberEpoch', type: 'int32', versions: '0+' },
            { name: 'clientId', type: 'string', versions: '0+' },
            { name: 'clientHost', type: 'string', versions: '0+' },
            { name: 'subscribedTopicNames', type: '[]string', versions: '0+' },
            {
              name: 'subscribedTopicRegex',
              type: 'string',
              versions: '0+',
              nullable: '0+',
              default: null,
            },
            { name: 'assignment', type: 'struct', versions: '0+', fields: ASSIGNMENT_FIELDS },
            { name: 'targetAssignment', type: 'struct', versions: '0+', fields: ASSIGNMENT_FIELDS },
          ],
        },
        { name: 'authorizedOperations', type: 'int32', versions: '0+', default: -2147483648 },
      ],
    },
  ],
});

/** A decoded ConsumerGroupDescribe request. */
export type ConsumerGroupDescribeRequest = MessageValue<typeof CONSUMER_GROUP_DESCRIBE_REQUEST>;
/** A decoded ConsumerGroupDescribe response. */
export type ConsumerGroupDescribeResponse = MessageValue<typeof CONSUMER_GROUP_DESCRIBE_RESPONSE>;
/** A ConsumerGroupDescribe response to encode. */
export type ConsumerGroupDescribeResponseInput = MessageInput<
  typeof CONSUMER_GROUP_DESCRIBE_RESPONSE
>;
