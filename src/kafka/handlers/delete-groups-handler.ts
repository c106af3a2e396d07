/**
 * DeleteGroups (key 42, v0-2): deletes each group (`store.deleteGroup`: every committed offset and
 * the membership record). Per group: NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND for
 * a group the store does not know, INVALID_GROUP_ID for an id it cannot hold.
 */
import type { API_KEYS } from '../protocol/index.js';
import type { RequestHandler } from './request-handler.js';
import { mapAsyncInTurns } from './in-turns.js';

/** Deletes each group asked for. */
export const handleDeleteGroups: RequestHandler<typeof API_KEYS.DeleteGroups> = async (
  context,
  request,
) => ({
  throttleTimeMs: 0,
  results: await mapAsyncInTurns(request.groupsNames, async (groupId) => {
    try {
      await context.store.deleteGroup(groupId);
      return { groupId, errorCode: 0 };
    } catch (error) {
      return { groupId, errorCode: context.errorCodeOf(error, 'DeleteGroups') };
    }
  }),
});
