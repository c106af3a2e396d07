/**
 * Metadata (key 3), versions 0-12, flexible from 9. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * How clients learn brokers, topics (this store's tables) and partitions (buckets) and their
 * leaders. A null topic list (v1+) asks for every topic; v0 asks for every topic with an empty list.
 * v10 adds topic ids (KIP-516), which KIP-848 assignments name topics by; from v12 a topic may be
 * asked for by id alone, so its name is nullable. v7 adds leader epochs, v8 authorized operations.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** Metadata request table. */
export const METADATA_REQUEST = message({
  name: 'MetadataRequest',
  apiKey: 3,
  kind: 'request',
  versions: '0-12',
  flexible: '9+',
  fields: [
    {
      name: 'topics',
      type: '[]struct',
      versions: '0+',
      nullable: '1+',
      fields: [
        { name: 'topicId', type: 'uuid', versions: '10+' },
        { name: 'name', type: 'string', versions: '0+', nullable: '10+' },
      ],
    },
    { name: 'allowAutoTopicCreation', type: 'bool', versions: '4+', default: true },
    { name: 'includeClusterAuthorizedOperations', type: 'bool', versions: '8-10' },
    { name: 'includeTopicAuthorizedOperations', type: 'bool', versions: '8+' },
  ],
});

/** Metadata response table. */
export const METADATA_RESPONSE = message({
  name: 'MetadataResponse',
  apiKey: 3,
  kind: 'response',
  versions: '0-12',
  flexible: '9+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '3+' },
    {
      name: 'brokers',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'nodeId', type: 'int32', versions: '0+' },
        { name: 'host', type: 'string', versions: '0+' },
        { name: 'port', type: 'int32', versions: '0+' },
        { name: 'rack', type: 'string', versions: '1+', nullable: '1+', default: null },
      ],
    },
    { name: 'clusterId', type: 'string', versions: '2+', nullable: '2+', default: null },
    { name: 'controllerId', type: 'int32', versions: '1+', default: -1 },
    {
      name: 'topics',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'errorCode', type: 'int16', versions: '0+' },
        { name: 'name', type: 'string', versions: '0+', nullable: '12+' },
        { name: 'topicId', type: 'uuid', versions: '10+' },
        { name: 'isInternal', type: 'bool', versions: '1+' },
        {
          name: 'partitions',
          type: '[]struct',
          versions: '0+',
          fields: [
            { name: 'errorCode', type: 'int16', versions: '0+' },
            { name: 'partitionIndex', type: 'int32', versions: '0+' },
            { name: 'leaderId', type: 'int32', versions: '0+' },
            { name: 'leaderEpoch', type: 'int32', versions: '7+', default: -1 },
            { name: 'replicaNodes', type: '[]int32', versions: '0+' },
            { name: 'isrNodes', type: '[]int32', versions: '0+' },
            { name: 'offlineReplicas', type: '[]int32', versions: '5+' },
          ],
        },
        { name: 'topicAuthorizedOperations', type: 'int32', versions: '8+', default: -2147483648 },
      ],
    },
    { name: 'clusterAuthorizedOperations', type: 'int32', versions: '8-10', default: -2147483648 },
  ],
});

/** A decoded Metadata request. */
export type MetadataRequest = MessageValue<typeof METADATA_REQUEST>;
/** A decoded Metadata response. */
export type MetadataResponse = MessageValue<typeof METADATA_RESPONSE>;
/** A Metadata response to encode. */
export type MetadataResponseInput = MessageInput<typeof METADATA_RESPONSE>;
