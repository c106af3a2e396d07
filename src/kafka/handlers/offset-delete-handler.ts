/**
 * OffsetDelete (key 47, v0): deletes committed offsets of some partitions of a group
 * (`store.deleteOffsets`, tombstones). As in Kafka, a partition of a topic that a member of the
 * group subscribes to is refused with GROUP_SUBSCRIBED_TO_TOPIC, and the others are deleted; a
 * partition the catalog does not have is UNKNOWN_TOPIC_OR_PARTITION. Group-level errors go in the
 * top-level error code: GROUP_ID_NOT_FOUND for a group the store does not know, INVALID_GROUP_ID,
 * COORDINATOR_LOAD_IN_PROGRESS. A partition with nothing committed is deleted without error.
 */
import type { BucketRef } from '../../model/index.js';
import { KAFKA_ERROR, type API_KEYS } from '../protocol/index.js';
import type { RequestHandler } from './request-handler.js';

/** Deletes the offsets of the partitions no member subscribes to. */
export const handleOffsetDelete: RequestHandler<typeof API_KEYS.OffsetDelete> = async (
  context,
  request,
) => {
  const { groupId } = request;
  let subscribed: Set<number>;
  try {
    const description = await context.store.describeGroup(groupId);
    subscribed = new Set(description.members.flatMap((m) => m.subscribedTableIds));
  } catch (error) {
    return { errorCode: context.errorCodeOf(error, 'OffsetDelete'), throttleTimeMs: 0, topics: [] };
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
      await context.store.deleteOffsets(groupId, buckets);
    } catch (error) {
      const code = context.errorCodeOf(error, 'OffsetDelete');
      for (const result of deleted) result.errorCode = code;
    }
  }
  return { errorCode: KAFKA_ERROR.NONE, throttleTimeMs: 0, topics };
};
