/**
 * ListOffsets (key 2, v1-6): where a partition's log starts and ends. This server stores no
 * records, so every partition is empty: the latest (-1) and earliest (-2) offsets are 0, and a
 * lookup by timestamp finds nothing (offset -1, timestamp -1, as Kafka answers for an empty log).
 * Consumers need it to resolve a partition without a committed offset (or with a negative one).
 * A partition the catalog does not have is UNKNOWN_TOPIC_OR_PARTITION; a partition named more than
 * once in the request is INVALID_REQUEST wherever it is named (Kafka's rule, checked first).
 */
import { KAFKA_ERROR, type API_KEYS } from '../protocol/index.js';
import type { RequestHandler } from './request-handler.js';

const LATEST = -1n;
const EARLIEST = -2n;

/** Answers 0 for the ends of every known partition. */
export const handleListOffsets: RequestHandler<typeof API_KEYS.ListOffsets> = (
  context,
  request,
) => {
  const duplicates = duplicatePartitions(request.topics);
  return {
    throttleTimeMs: 0,
    topics: request.topics.map((topic) => {
      const entry = context.catalog.get(topic.name);
      return {
        name: topic.name,
        partitions: topic.partitions.map((p) => {
          if (duplicates?.has(partitionKey(topic.name, p.partitionIndex)) === true) {
            return {
              partitionIndex: p.partitionIndex,
              errorCode: KAFKA_ERROR.INVALID_REQUEST,
              timestamp: -1n,
              offset: -1n,
            };
          }
          if (entry === undefined || p.partitionIndex < 0 || p.partitionIndex >= entry.partitions) {
            return {
              partitionIndex: p.partitionIndex,
              errorCode: KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
              timestamp: -1n,
              offset: -1n,
            };
          }
          const end = p.timestamp === LATEST || p.timestamp === EARLIEST;
          return {
            partitionIndex: p.partitionIndex,
            errorCode: KAFKA_ERROR.NONE,
            timestamp: -1n,
            offset: end ? 0n : -1n,
            leaderEpoch: -1,
          };
        }),
      };
    }),
  };
};

function partitionKey(topic: string, partition: number): string {
  return `${partition}\u0000${topic}`;
}

/** The partitions named more than once, or undefined when there are none. */
function duplicatePartitions(
  topics: readonly { name: string; partitions: readonly { partitionIndex: number }[] }[],
): Set<string> | undefined {
  const seen = new Set<string>();
  let duplicates: Set<string> | undefined;
  for (const topic of topics)
    for (const { partitionIndex } of topic.partitions) {
      const key = partitionKey(topic.name, partitionIndex);
      if (seen.has(key)) (duplicates ??= new Set()).add(key);
      else seen.add(key);
    }
  return duplicates;
}
