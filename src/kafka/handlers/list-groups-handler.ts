/**
 * ListGroups (key 16, v0-5): every group of the store (`store.listGroups`) with its protocol type
 * ('consumer' for a consumer-protocol group, a classic group's members' protocol type, '' for a
 * group with committed offsets only), with its state from v4 and its type from v5 ('consumer', or
 * 'classic', which a group with offsets only is too, as Kafka's simple groups). From v4 only the
 * states asked for, from v5 only the types asked for (both compared without regard to case, as
 * Kafka's coordinator does; an empty filter keeps every group, a type Kafka does not know matches
 * none). While an offsets-bucket is still loading, the answer is COORDINATOR_LOAD_IN_PROGRESS and
 * no groups: a partial list would hide groups.
 */
import { KAFKA_ERROR, type API_KEYS } from '../protocol/index.js';
import type { RequestHandler } from './request-handler.js';

/** Lists the store's groups. */
export const handleListGroups: RequestHandler<typeof API_KEYS.ListGroups> = async (
  context,
  request,
) => {
  let listings;
  try {
    listings = await context.store.listGroups();
  } catch (error) {
    return { throttleTimeMs: 0, errorCode: context.errorCodeOf(error, 'ListGroups'), groups: [] };
  }
  const states = new Set(request.statesFilter.map((s) => s.trim().toLowerCase()));
  const types = new Set(request.typesFilter.map((t) => t.toLowerCase()));
  return {
    throttleTimeMs: 0,
    errorCode: KAFKA_ERROR.NONE,
    groups: listings
      .filter(
        (g) =>
          (states.size === 0 || states.has(g.state.toLowerCase())) &&
          (types.size === 0 || types.has(g.groupType)),
      )
      .map((g) => ({
        groupId: g.groupId,
        protocolType: g.protocolType,
        groupState: g.state,
        groupType: g.groupType,
      })),
  };
};
