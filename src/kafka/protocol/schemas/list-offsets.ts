/**
 * ListOffsets (key 2), versions 0-10, flexible from 6. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * Resolves a timestamp to an offset: -1 asks for the latest, -2 for the earliest (clients ask when a
 * partition has no committed offset). v0 answers with a list of old-style offsets; v1 with one
 * offset and its timestamp; v2 adds the isolation level, v4 leader epochs, v10 a timeout for tiered
 * storage.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** ListOffsets request table. */
export const LIST_OFFSETS_REQUEST = message({
  name: 'ListOffsetsRequest',
  apiKey: 2,
  kind: 'request',
  versions: '0-10',
  flexible: '6+',
  fields: [
    { name: 'replicaId', type: 'int32', versions: '0+' },
    { name: 'isolationLevel', type: 'int8', versions: '2+' },
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
            { name: 'currentLeaderEpoch', type: 'int32', versions: '4+', default: -1 },
            { name: 'timestamp', type: 'int64', versions: '0+' },
            { name: 'maxNumOffsets', type: 'int32', versions: '0', default: 1 },
          ],
        },
      ],
    },
    { name: 'timeoutMs', type: 'int32', versions: '10+' },
  ],
});

/** ListOffsets response table. */
export const LIST_OFFSETS_RESPONSE = message({
  name: 'ListOffsetsResponse',
  apiKey: 2,
  kind: 'response',
  versions: '0-10',
  flexible: '6+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '2+' },
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
            { name: 'oldStyleOffsets', type: '[]int64', versions: '0' },
            { name: 'timestamp', type: 'int64', versions: '1+', default: -1 },
            { name: 'offset', type: 'int64', versions: '1+', default: -1 },
            { name: 'leaderEpoch', type: 'int32', versions: '4+', default: -1 },
          ],
        },
      ],
    },
  ],
});

/** A decoded ListOffsets request. */
export type ListOffsetsRequest = MessageValue<typeof LIST_OFFSETS_REQUEST>;
/** A decoded ListOffsets response. */
export type ListOffsetsResponse = MessageValue<typeof LIST_OFFSETS_RESPONSE>;
/** A ListOffsets response to encode. */
export type ListOffsetsResponseInput = MessageInput<typeof LIST_OFFSETS_RESPONSE>;
