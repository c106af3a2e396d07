/**
 * ConsumerGroupHeartbeat (key 68), versions 0-1, flexible at every version. Describes Apache Kafka's
 * protocol (the message schemas of Kafka trunk, October 2024: the 4.0 line), in this table form.
 *
 * The one request of the KIP-848 consumer protocol: joining (epoch 0), heartbeating, acknowledging
 * assignments and leaving (epoch -1) are all heartbeats. Fields that did not change since the last
 * heartbeat are sent as null (librdkafka's heartbeats are sparse). The assignment in the response
 * names topics by id and is a nullable struct, written with an int8 presence byte: without it
 * librdkafka silently ignores the assignment. v1 adds the subscribed topic regex.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** ConsumerGroupHeartbeat request table. */
export const CONSUMER_GROUP_HEARTBEAT_REQUEST = message({
  name: 'ConsumerGroupHeartbeatRequest',
  apiKey: 68,
  kind: 'request',
  versions: '0-1',
  flexible: '0+',
  fields: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'memberId', type: 'string', versions: '0+' },
    { name: 'memberEpoch', type: 'int32', versions: '0+' },
    { name: 'instanceId', type: 'string', versions: '0+', nullable: '0+', default: null },
    { name: 'rackId', type: 'string', versions: '0+', nullable: '0+', default: null },
    { name: 'rebalanceTimeoutMs', type: 'int32', versions: '0+', default: -1 },
    {
      name: 'subscribedTopicNames',
      type: '[]string',
      versions: '0+',
      nullable: '0+',
      default: null,
    },
    { name: 'subscribedTopicRegex', type: 'string', versions: '1+', nullable: '1+', default: null },
    { name: 'serverAssignor', type: 'string', versions: '0+', nullable: '0+', default: null },
    {
      name: 'topicPartitions',
      type: '[]struct',
      versions: '0+',
      nullable: '0+',
      default: null,
      fields: [
        { name: 'topicId', type: 'uuid', versions: '0+' },
        { name: 'partitions', type: '[]int32', versions: '0+' },
      ],
    },
  ],
});

/** ConsumerGroupHeartbeat response table. */
export const CONSUMER_GROUP_HEARTBEAT_RESPONSE = message({
  name: 'ConsumerGroupHeartbeatResponse',
  apiKey: 68,
  kind: 'response',
  versions: '0-1',
  flexible: '0+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '0+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
    { name: 'errorMessage', type: 'string', versions: '0+', nullable: '0+', default: null },
    { name: 'memberId', type: 'string', versions: '0+', nullable: '0+', default: null },
    { name: 'memberEpoch', type: 'int32', versions: '0+' },
    { name: 'heartbeatIntervalMs', type: 'int32', versions: '0+' },
    {
      name: 'assignment',
      type: 'struct',
      versions: '0+',
      nullable: '0+',
      default: null,
      fields: [
        {
          name: 'topicPartitions',
          type: '[]struct',
          versions: '0+',
          fields: [
            { name: 'topicId', type: 'uuid', versions: '0+' },
            { name: 'partitions', type: '[]int32', versions: '0+' },
          ],
        },
      ],
    },
  ],
});

/** A decoded ConsumerGroupHeartbeat request. */
export type ConsumerGroupHeartbeatRequest = MessageValue<typeof CONSUMER_GROUP_HEARTBEAT_REQUEST>;
/** A decoded ConsumerGroupHeartbeat response. */
export type ConsumerGroupHeartbeatResponse = MessageValue<typeof CONSUMER_GROUP_HEARTBEAT_RESPONSE>;
/** A ConsumerGroupHeartbeat response to encode. */
export type ConsumerGroupHeartbeatResponseInput = MessageInput<
  typeof CONSUMER_GROUP_HEARTBEAT_RESPONSE
>;
