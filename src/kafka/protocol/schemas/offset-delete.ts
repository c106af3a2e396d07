/**
 * OffsetDelete (key 47), version 0, never flexible. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * Deletes a group's offsets for some partitions (KIP-496); refused with GROUP_SUBSCRIBED_TO_TOPIC per
 * partition while the group consumes the topic. Note the response's order: error code before the
 * throttle time.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** OffsetDelete request table. */
export const OFFSET_DELETE_REQUEST = message({
  name: 'OffsetDeleteRequest',
  apiKey: 47,
  kind: 'request',
  versions: '0',
  flexible: 'none',
  fields: [
    { name: 'groupId', type: 'string', versions: '0+' },
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
          fields: [{ name: 'partitionIndex', type: 'int32', versions: '0+' }],
        },
      ],
    },
  ],
});

/** OffsetDelete response table. */
export const OFFSET_DELETE_RESPONSE = message({
  name: 'OffsetDeleteResponse',
  apiKey: 47,
  kind: 'response',
  versions: '0',
  flexible: 'none',
  fields: [
    { name: 'errorCode', type: 'int16', versions: '0+' },
    { name: 'throttleTimeMs', type: 'int32', versions: '0+' },
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

/** A decoded OffsetDelete request. */
export type OffsetDeleteRequest = MessageValue<typeof OFFSET_DELETE_REQUEST>;
/** A decoded OffsetDelete response. */
export type OffsetDeleteResponse = MessageValue<typeof OFFSET_DELETE_RESPONSE>;
/** An OffsetDelete response to encode. */
export type OffsetDeleteResponseInput = MessageInput<typeof OFFSET_DELETE_RESPONSE>;
