/**
 * OffsetCommit (key 8), versions 0-9, flexible from 8. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * Commits offsets for a group. v1 adds the generation and member id (and a per-partition commit
 * timestamp, v1 only); v2-v4 carry a retention time; v6 the leader epoch; v7 static membership. v9
 * changes no field: the generation is read as a KIP-848 member epoch for consumer groups. The
 * committed offset is any int64: kafkajs's resetOffsets commits -1 and -2 literally.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** OffsetCommit request table. */
export const OFFSET_COMMIT_REQUEST = message({
  name: 'OffsetCommitRequest',
  apiKey: 8,
  kind: 'request',
  versions: '0-9',
  flexible: '8+',
  fields: [
    { name: 'groupId', type: 'string', versions: '0+' },
    { name: 'generationIdOrMemberEpoch', type: 'int32', versions: '1+', default: -1 },
    { name: 'memberId', type: 'string', versions: '1+' },
    { name: 'groupInstanceId', type: 'string', versions: '7+', nullable: '7+', default: null },
    { name: 'retentionTimeMs', type: 'int64', versions: '2-4', default: -1 },
    {
      name: 'topics',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        {
          name: 'partitions',
          type: '[]struct',
          versions: '0+',
          fields: [
            { name: 'partitionIndex', type: 'int32', versions: '0+' },
            { name: 'committedOffset', type: 'int64', versions: '0+' },
            { name: 'committedLeaderEpoch', type: 'int32', versions: '6+', default: -1 },
            { name: 'commitTimestamp', type: 'int64', versions: '1', default: -1 },
            { name: 'committedMetadata', type: 'string', versions: '0+', nullable: '0+' },
          ],
        },
      ],
    },
  ],
});

/** OffsetCommit response table. */
export const OFFSET_COMMIT_RESPONSE = message({
  name: 'OffsetCommitResponse',
  apiKey: 8,
  kind: 'response',
  versions: '0-9',
  flexible: '8+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '3+' },
    {
      name: 'topics',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'name', type: 'string', versions: '0+' },
        {
          name: 'partitions',
          type: '[]struct',
          versions: '0+',
          fields: [
            { name: 'partitionIndex', type: 'int32', versions: '0+' },
            { name: 'errorCode', type: 'int16', versions: '0+' },
          ],
        },
      ],
    },
  ],
});

/** A decoded OffsetCommit request. */
export type OffsetCommitRequest = MessageValue<typeof OFFSET_COMMIT_REQUEST>;
/** A decoded OffsetCommit response. */
export type OffsetCommitResponse = MessageValue<typeof OFFSET_COMMIT_RESPONSE>;
/** An OffsetCommit response to encode. */
export type OffsetCommitResponseInput = MessageInput<typeof OFFSET_COMMIT_RESPONSE>;
