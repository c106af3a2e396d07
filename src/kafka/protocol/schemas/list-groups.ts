/**
 * ListGroups (key 16), versions 0-5, flexible from 3. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * The groups a broker coordinates. v4 (KIP-518) filters by state and returns it; v5 (KIP-848)
 * filters by type and returns it.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** ListGroups request table. */
export const LIST_GROUPS_REQUEST = message({
  name: 'ListGroupsRequest',
  apiKey: 16,
  kind: 'request',
  versions: '0-5',
  flexible: '3+',
  fields: [
    { name: 'statesFilter', type: '[]string', versions: '4+' },
    { name: 'typesFilter', type: '[]string', versions: '5+' },
  ],
});

/** ListGroups response table. */
export const LIST_GROUPS_RESPONSE = message({
  name: 'ListGroupsResponse',
  apiKey: 16,
  kind: 'response',
  versions: '0-5',
  flexible: '3+',
  fields: [
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    { name: 'errorCode', type: 'int16', versions: '0+' },
    {
      name: 'groups',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'groupId', type: 'string', versions: '0+' },
        { name: 'protocolType', type: 'string', versions: '0+' },
        { name: 'groupState', type: 'string', versions: '4+' },
        { name: 'groupType', type: 'string', versions: '5+' },
      ],
    },
  ],
});

/** A decoded ListGroups request. */
export type ListGroupsRequest = MessageValue<typeof LIST_GROUPS_REQUEST>;
/** A decoded ListGroups response. */
export type ListGroupsResponse = MessageValue<typeof LIST_GROUPS_RESPONSE>;
/** A ListGroups response to encode. */
export type ListGroupsResponseInput = MessageInput<typeof LIST_GROUPS_RESPONSE>;
