/**
 * OffsetFetch (key 9), versions 0-9, flexible from 6. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * Reads a group's committed offsets. From v2 a null topic list asks for every topic the group has
 * offsets for (kafkajs and librdkafka admin clients rely on it). v5 returns leader epochs; v7 adds
 * requireStable; v8 (KIP-709) batches groups, moving topics and errors into a per-group struct; v9
 * adds the KIP-848 member id and epoch.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** OffsetFetch request table. */
export const OFFSET_FETCH_REQUEST = message({
  name: 'OffsetFetchRequest',
  apiKey: 9,
  kind: 'request',
  versions: '0-9',
  flexible: '6+',
  fields: [
    { name: 'groupId', type: 'string', versions: '0-7' },
    {
      name: 'topics',
      type: '[]struct',
      versions: '0-7',
      nullable: '2-7',
      fields: [
        { name: 'name', type: 'string', versions: '0-7' },
        { name: 'partitionIndexes', type: '[]int32', versions: '0-7' },
      ],
    },
    {
      name: 'groups',
      type: '[]struct',
      versions: '8+',
      fields: [
        { name: 'groupId', type: 'string', versions: '8+' },
        { name: 'memberId', type: 'string', versions: '9+', nullable: '9+', default: null },
        { name: 'memberEpoch', type: 'int32', versions: '9+', default: -1 },
        {
          name: 'topics',
          type: '[]struct',
          versions: '8+',
          nullable: '8+',
          fields: [
            { name: 'name', type: 'string', versions: '8+' },
            { name: 'partitionIndexes', type: '[]int32', versions: '8+' },
          ],
        },
      ],
    },
    { name: 'requireStable', type: 'bool', versions: '7+' },
  ],
});

/** OffsetFetch response table. */
export const OFFSET_FETCH_RESPONSE = message({
  name: 'OffsetFetchResponse',
  apiKey: 9,
  kind: 'response',
  versions: '0-9',
  flexible: '6+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '3+' },
    {
      name: 'topics',
      type: '[]struct',
      versions: '0-7',
      fields: [
        { name: 'name', type: 'string', versions: '0-7' },
        {
          name: 'partitions',
          type: '[]struct',
          versions: '0-7',
          fields: [
            { name: 'partitionIndex', type: 'int32', versions: '0-7' },
            { name: 'committedOffset', type: 'int64', versions: '0-7' },
            { name: 'committedLeaderEpoch', type: 'int32', versions: '5-7', default: -1 },
            { name: 'metadata', type: 'string', versions: '0-7', nullable: '0-7' },
            { name: 'errorCode', type: 'int16', versions: '0-7' },
          ],
        },
      ],
    },
    { name: 'errorCode', type: 'int16', versions: '2-7' },
    {
      name: 'groups',
      type: '[]struct',
      versions: '8+',
      fields: [
        { name: 'groupId', type: 'string', versions: '8+' },
        {
          name: 'topics',
          type: '[]struct',
          versions: '8+',
          fields: [
            { name: 'name', type: 'string', versions: '8+' },
            {
              name: 'partitions',
              type: '[]struct',
              versions: '8+',
              fields: [
                { name: 'partitionIndex', type: 'int32', versions: '8+' },
                { name: 'committedOffset', type: 'int64', versions: '8+' },
                { name: 'committedLeaderEpoch', type: 'int32', versions: '8+', default: -1 },
                { name: 'metadata', type: 'string', versions: '8+', nullable: '8+' },
                { name: 'errorCode', type: 'int16', versions: '8+' },
              ],
            },
          ],
        },
        { name: 'errorCode', type: 'int16', versions: '8+' },
      ],
    },
  ],
});

/** A decoded OffsetFetch request. */
export type OffsetFetchRequest = MessageValue<typeof OFFSET_FETCH_REQUEST>;
/** A decoded OffsetFetch response. */
export type OffsetFetchResponse = MessageValue<typeof OFFSET_FETCH_RESPONSE>;
/** An OffsetFetch response to encode. */
export type OffsetFetchResponseInput = MessageInput<typeof OFFSET_FETCH_RESPONSE>;
