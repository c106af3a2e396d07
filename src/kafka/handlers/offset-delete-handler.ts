/**
 * OffsetDelete (key 47, v0): deletes committed offsets of some partitions of a group
 * (`store.deleteOffsets`, tombstones). As in Kafka, a partition of a topic that a member of the
 * group subscribes to is refused with GROUP_SUBSCRIBED_TO_TOPIC, and the others are deleted; a
 * partition the catalog does not have is UNKNOWN_TOPIC_OR_PARTITION. Group-level errors go in the
 * top-level error code: GROUP_ID_NOT_FOUND for a group the store does not know, INVALID_GROUP_ID,
 * COORDINATOR_LOAD_IN_PROGRESS. A partition with nothing committed is deleted without error.
 *
 * A classic group with members: as Kafka's coordinator does, the subscriptions of a group of
 * protocol type `consumer` are read from its members' metadata for the group's protocol (the
 * consumer protocol's subscription, consumer-protocol.ts), and only partitions of the topics they
 * name are refused. A classic group of another protocol type (or whose metadata does not parse) is
 * refused whole: NON_EMPTY_GROUP in the top-level error code.
 */
import type { ClassicGroupDescription } from '../../group/index.js';
import type { BucketRef } from '../../model/index.js';
import { KAFKA_ERROR, type API_KEYS } from '../protocol/index.js';
import { decodeSubscriptionTopics } from './consumer-protocol.js';
import type { HandlerContext } from './handler-context.js';
import type { RequestHandler } from './request-handler.js';

/** The protocol type whose member metadata is the consumer protocol's subscription. */
const CONSUMER_PROTOCOL_TYPE = 'consumer';

/**
 * The tables the members of a classic group subscribe to (topics the catalog does not have count
 * for nothing): every table when a member's subscription is not known or cannot be read, and
 * undefined for a group not of the consumer protocol type, whose subscriptions Kafka does not read
 * (it refuses the whole request while the group has members: NON_EMPTY_GROUP).
 */
function classicSubscribedTables(
  context: HandlerContext,
  group: ClassicGroupDescription,
): Set<number> | undefined {
  if (group.protocolType !== CONSUMER_PROTOCOL_TYPE) return undefined;
  const tables = new Set<number>();
  for (const member of group.members) {
    const topics = decodeSubscriptionTopics(member.metadata);
    // Not known (before a protocol is chosen) or not readable: every topic counts as subscribed,
    // as Kafka counts it for a group of the consumer protocol type.
    if (topics === undefined) return new Set(context.catalog.topics().map((t) => t.tableId));
    for (const topic of topics) {
      const entry = context.catalog.get(topic);
      if (entry !== undefined) tables.add(entry.tableId);
    }
  }
  return tables;
}

/** Deletes the offsets of the partitions no member subscribes to. */
export const handleOffsetDelete: RequestHandler<typeof API_KEYS.OffsetDelete> = async (
  context,
  request,
) => {
  const { groupId } = request;
  let subscribed: Set<number>;
  const refusedWhole = (errorCode: number) => ({ errorCode, throttleTimeMs: 0, topics: [] });
  try {
    const description = await context.store.describeGroup(groupId);
    subscribed = new Set(description.members.flatMap((m) => m.subscribedTableIds));
    const classic = description.classic;
    if (classic !== undefined && classic !== null && classic.members.length > 0) {
      const tables = classicSubscribedTables(context, classic);
      if (tables === undefined) return refusedWhole(KAFKA_ERROR.NON_EMPTY_GROUP);
      for (const table of tables) subscribed.add(table);
    }
  } catch (error) {
    return refusedWhole(context.errorCodeOf(error, 'OffsetDelete'));
  }
  const deleted: { errorCode: number }[] = [];
  const buckets: BucketRef[] = [];
  const seen = new Set<string>();
  const topics = request.topics.map((topic) => {
    const entry = context.catalog.get(topic.name);
    return {
      name: topic.name,
      partitions: topic.partitions.map(({ partitionIndex }) => {
        const result = { partitionIndex, errorCode: KAFKA_ERROR.NONE as number };
        if (entry === undefined || partitionIndex < 0 || partitionIndex >= entry.partitions) {
          result.errorCode = KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION;
        } else if (subscribed.has(entry.tableId)) {
          result.errorCode = KAFKA_ERROR.GROUP_SUBSCRIBED_TO_TOPIC;
        } else {
          deleted.push(result);
          const key = `${entry.tableId}:${partitionIndex}`;
          if (!seen.has(key)) buckets.push({ tableId: entry.tableId, bucketId: partitionIndex });
          seen.add(key);
        }
        return result;
      }),
    };
  });
  if (buckets.length > 0) {
    try {
      // The store checks the subscriptions again as it deletes (a member may have joined since).
      await context.store.deleteOffsets(groupId, buckets, {
        classicSubscriptions: (group) => classicSubscribedTables(context, group),
      });
    } catch (error) {
      const code = context.errorCodeOf(error, 'OffsetDelete');
      if (code === KAFKA_ERROR.NON_EMPTY_GROUP) return refusedWhole(code);
      for (const result of deleted) result.errorCode = code;
    }
  }
  return { errorCode: KAFKA_ERROR.NONE, throttleTimeMs: 0, topics };
};
