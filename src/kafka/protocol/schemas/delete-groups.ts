/**
 * DeleteGroups (key 42), versions 0-2, flexible from 2. Describes Apache Kafka's protocol (the
 * message schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form.
 *
 * Deletes empty groups and their offsets, one result per group (NON_EMPTY_GROUP for a group with
 * members).
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** DeleteGroups request table. */
export const DELETE_GROUPS_REQUEST = message({
  name: 'DeleteGroupsRequest',
  apiKey: 42,
  kind: 'request',
  versions: '0-2',
  flexible: '2+',
  fields: [{ name: 'groupsNames', type: '[]string', versions: '0+' }],
});

/** DeleteGroups response table. */
export const DELETE_GROUPS_RESPONSE = message({
  name: 'DeleteGroupsResponse',
  apiKey: 42,
  kind: 'response',
  versions: '0-2',
  flexible: '2+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '0+' },
    {
      name: 'results',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'groupId', type: 'string', versions: '0+' },
        { name: 'errorCode', type: 'int16', versions: '0+' },
      ],
    },
  ],
});

/** A decoded DeleteGroups request. */
export type DeleteGroupsRequest = MessageValue<typeof DELETE_GROUPS_REQUEST>;
/** A decoded DeleteGroups response. */
export type DeleteGroupsResponse = MessageValue<typeof DELETE_GROUPS_RESPONSE>;
/** A DeleteGroups response to encode. */
export type DeleteGroupsResponseInput = MessageInput<typeof DELETE_GROUPS_RESPONSE>;
