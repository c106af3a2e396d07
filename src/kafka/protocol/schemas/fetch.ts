/**
 * Fetch (key 1), versions 0-17, flexible from 12. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * Reads records. This store holds no records: its server answers each partition empty, after
 * maxWaitMs (an immediate answer makes kafkajs fetch in a tight loop). Records stay raw bytes.
 * v4 adds the isolation level, last stable offset and aborted transactions; v5 log start offsets;
 * v7 (KIP-227) fetch sessions; v9 leader epochs; v11 rack ids and the preferred read replica; v12
 * is flexible and adds tagged diverging epoch, current leader and snapshot id; v13 (KIP-516) names
 * topics by id instead of name; v15 moves the replica id into a tagged replica state; v16 returns
 * node endpoints, v17 a replica directory id.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** Fetch request table. */
export const FETCH_REQUEST = message({
  name: 'FetchRequest',
  apiKey: 1,
  kind: 'request',
  versions: '0-17',
  flexible: '12+',
  fields: [
    { name: 'clusterId', type: 'string', versions: '12+', nullable: '12+', default: null, tag: 0 },
    { name: 'replicaId', type: 'int32', versions: '0-14', default: -1 },
    {
      name: 'replicaState',
      type: 'struct',
      versions: '15+',
      tag: 1,
      fields: [
        { name: 'replicaId', type: 'int32', versions: '15+', default: -1 },
        { name: 'replicaEpoch', type: 'int64', versions: '15+', default: -1 },
      ],
    },
    { name: 'maxWaitMs', type: 'int32', versions: '0+' },
    { name: 'minBytes', type: 'int32', versions: '0+' },
    { name: 'maxBytes', type: 'int32', versions: '3+', default: 0x7fffffff },
    { name: 'isolationLevel', type: 'int8', versions: '4+' },
    { name: 'sessionId', type: 'int32', versions: '7+' },
    { name: 'sessionEpoch', type: 'int32', versions: '7+', default: -1 },
    {
      name: 'topics',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'topic', type: 'string', versions: '0-12' },
        { name: 'topicId', type: 'uuid', versions: '13+' },
        {
          name: 'partitions',
          type: '[]struct',
          versions: '0+',
          fields: [
            { name: 'partition', type: 'int32', versions: '0+' },
            { name: 'currentLeaderEpoch', type: 'int32', versions: '9+', default: -1 },
            { name: 'fetchOffset', type: 'int64', versions: '0+' },
            { name: 'lastFetchedEpoch', type: 'int32', versions: '12+', default: -1 },
            { name: 'logStartOffset', type: 'int64', versions: '5+', default: -1 },
            { name: 'partitionMaxBytes', type: 'int32', versions: '0+' },
            { name: 'replicaDirectoryId', type: 'uuid', versions: '17+', tag: 0 },
          ],
        },
      ],
    },
    {
      name: 'forgottenTopicsData',
      type: '[]struct',
      versions: '7+',
      fields: [
        { name: 'topic', type: 'string', versions: '7-12' },
        { name: 'topicId', type: 'uuid', versions: '13+' },
        { name: 'partitions', type: '[]int32', versions: '7+' },
      ],
    },
    { name: 'rackId', type: 'string', versions: '11+' },
  ],
});

/** Fetch response table. */
export const FETCH_RESPONSE = message({
  name: 'FetchResponse',
  apiKey: 1,
  kind: 'response',
  versions: '0-17',
  flexible: '12+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '7+' },
    { name: 'sessionId', type: 'int32', versions: '7+' },
    {
      name: 'responses',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'topic', type: 'string', versions: '0-12' },
        { name: 'topicId', type: 'uuid', versions: '13+' },
        {
          name: 'partitions',
          type: '[]struct',
          versions: '0+',
          fields: [
            { name: 'partitionIndex', type: 'int32', versions: '0+' },
            { name: 'errorCode', type: 'int16', versions: '0+' },
            { name: 'highWatermark', type: 'int64', versions: '0+' },
            { name: 'lastStableOffset', type: 'int64', versions: '4+', default: -1 },
            { name: 'logStartOffset', type: 'int64', versions: '5+', default: -1 },
            {
              name: 'divergingEpoch',
              type: 'struct',
              versions: '12+',
              tag: 0,
              fields: [
                { name: 'epoch', type: 'int32', versions: '12+', default: -1 },
                { name: 'endOffset', type: 'int64', versions: '12+', default: -1 },
              ],
            },
            {
              name: 'currentLeader',
              type: 'struct',
              versions: '12+',
              tag: 1,
              fields: [
                { name: 'leaderId', type: 'int32', versions: '12+', default: -1 },
                { name: 'leaderEpoch', type: 'int32', versions: '12+', default: -1 },
              ],
            },
            {
              name: 'snapshotId',
              type: 'struct',
              versions: '12+',
              tag: 2,
              fields: [
                { name: 'endOffset', type: 'int64', versions: '12+', default: -1 },
                { name: 'epoch', type: 'int32', versions: '12+', default: -1 },
              ],
            },
            {
              name: 'abortedTransactions',
              type: '[]struct',
              versions: '4+',
              nullable: '4+',
              fields: [
                { name: 'producerId', type: 'int64', versions: '4+' },
                { name: 'firstOffset', type: 'int64', versions: '4+' },
              ],
            },
            { name: 'preferredReadReplica', type: 'int32', versions: '11+', default: -1 },
            { name: 'records', type: 'records', versions: '0+', nullable: '0+' },
          ],
        },
      ],
    },
    {
      name: 'nodeEndpoints',
      type: '[]struct',
      versions: '16+',
      tag: 0,
      fields: [
        { name: 'nodeId', type: 'int32', versions: '16+' },
        { name: 'host', type: 'string', versions: '16+' },
        { name: 'port', type: 'int32', versions: '16+' },
        { name: 'rack', type: 'string', versions: '16+', nullable: '16+', default: null },
      ],
    },
  ],
});

/** A decoded Fetch request. */
export type FetchRequest = MessageValue<typeof FETCH_REQUEST>;
/** A decoded Fetch response. */
export type FetchResponse = MessageValue<typeof FETCH_RESPONSE>;
/** A Fetch response to encode. */
export type FetchResponseInput = MessageInput<typeof FETCH_RESPONSE>;
