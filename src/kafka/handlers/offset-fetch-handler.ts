/**
 * OffsetFetch (key 9, v1-9): committed offsets, answered from the store's memory in the same tick
 * (`fetchOffsetsSync`). v1-7 name one group; v8+ a list of groups, each answered on its own.
 *
 * - Topics listed: one answer per partition asked, in request order; a partition with nothing
 *   committed (or of a topic the catalog does not have) is offset -1, leader epoch -1, metadata ''
 *   and no error, as Kafka answers.
 * - Topics null (v2+): every committed offset of the group whose table is a topic of the catalog.
 * - require_stable (v7+): a partition with a commit still in flight makes the store refuse the
 *   fetch; every partition asked is then UNSTABLE_OFFSET_COMMIT (retriable), or, when all were asked
 *   for, the group.
 * - Group-level errors (an invalid group id, an offsets-bucket still loading): the top-level error
 *   (v2-7), the group's error (v8+), or each partition's (v1).
 * - v9's member id and epoch, when given (not null and -1: an admin's fetch gives neither), are
 *   checked as Kafka checks them: in a consumer-protocol group, a member that is not in it is the
 *   group's UNKNOWN_MEMBER_ID, another epoch its STALE_MEMBER_EPOCH; nothing is checked for a
 *   classic group.
 * Offsets come back exactly as committed, negative ones included.
 */
import { validateGroupId, type BucketRef } from '../../model/index.js';
import type { CommittedOffset, FetchOptions } from '../../store-options.js';
import { KAFKA_ERROR, type API_KEYS, type ResponseInputOf } from '../protocol/index.js';
import type { HandlerContext } from './handler-context.js';
import type { RequestHandler } from './request-handler.js';
import { mapInTurns } from './in-turns.js';

type FetchResponse = ResponseInputOf<typeof API_KEYS.OffsetFetch>;
type GroupAnswer = NonNullable<FetchResponse['groups']>[number];
type TopicAnswer = NonNullable<GroupAnswer['topics']>[number];
type PartitionAnswer = NonNullable<TopicAnswer['partitions']>[number];

/** The topics of one group asked for: names and partition indexes, or null for all. */
type TopicsAsked =
  readonly { readonly name: string; readonly partitionIndexes: readonly number[] }[] | null;

function partitionAnswer(
  partitionIndex: number,
  committed: CommittedOffset | null | undefined,
  errorCode: number,
): PartitionAnswer {
  return committed == null
    ? { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode }
    : {
        partitionIndex,
        committedOffset: BigInt(committed.offset),
        committedLeaderEpoch: committed.leaderEpoch,
        metadata: committed.metadata,
        errorCode,
      };
}

/** One group's answer: its topics, and its group-level error. */
function fetchGroup(
  context: HandlerContext,
  groupId: string,
  asked: TopicsAsked,
  requireStable: boolean,
  member: FetchOptions['member'],
): { topics: TopicAnswer[]; errorCode: number } {
  const { catalog, store } = context;
  const options: FetchOptions | undefined =
    member === undefined
      ? requireStable
        ? { requireStable }
        : undefined
      : { requireStable, member };
  try {
    validateGroupId(groupId);
    if (asked === null)
      return {
        topics: allCommitted(
          context,
          store.fetchOffsetsSync(groupId, undefined, options) as CommittedOffset[],
        ),
        errorCode: 0,
      };
  } catch (error) {
    return { topics: [], errorCode: context.errorCodeOf(error, 'OffsetFetch') };
  }
  const buckets: BucketRef[] = [];
  for (const topic of asked) {
    const entry = catalog.get(topic.name);
    if (entry === undefined) continue;
    for (const p of topic.partitionIndexes)
      if (p >= 0 && p < entry.partitions) buckets.push({ tableId: entry.tableId, bucketId: p });
  }
  let committed: (CommittedOffset | null)[] = [];
  let partitionError: number = KAFKA_ERROR.NONE;
  try {
    if (buckets.length > 0 || member !== undefined)
      committed = store.fetchOffsetsSync(groupId, buckets, options);
  } catch (error) {
    const code = context.errorCodeOf(error, 'OffsetFetch');
    if (code !== KAFKA_ERROR.UNSTABLE_OFFSET_COMMIT) return { topics: [], errorCode: code };
    partitionError = code;
  }
  let next = 0;
  const topics = asked.map((topic): TopicAnswer => {
    const entry = catalog.get(topic.name);
    return {
      name: topic.name,
      partitions: topic.partitionIndexes.map((p) => {
        const known = entry !== undefined && p >= 0 && p < entry.partitions;
        return partitionAnswer(
          p,
          known ? committed[next++] : null,
          known ? partitionError : KAFKA_ERROR.NONE,
        );
      }),
    };
  });
  return { topics, errorCode: KAFKA_ERROR.NONE };
}

/** Every committed offset of a group in a topic of the catalog, grouped by topic. */
function allCommitted(context: HandlerContext, offsets: readonly CommittedOffset[]): TopicAnswer[] {
  const byTable = new Map<number, PartitionAnswer[]>();
  for (const o of offsets) {
    if (o.partitionId !== null || context.catalog.byTableId(o.tableId) === undefined) continue;
    let partitions = byTable.get(o.tableId);
    if (partitions === undefined) byTable.set(o.tableId, (partitions = []));
    partitions.push(partitionAnswer(o.bucketId, o, KAFKA_ERROR.NONE));
  }
  return [...byTable].map(([tableId, partitions]) => ({
    name: context.catalog.byTableId(tableId)!.name,
    partitions: partitions.sort((a, b) => a.partitionIndex! - b.partitionIndex!),
  }));
}

/** Answers OffsetFetch from the store's memory. */
export const handleOffsetFetch: RequestHandler<typeof API_KEYS.OffsetFetch> = (
  context,
  request,
  header,
) => {
  const requireStable = request.requireStable;
  if (header.apiVersion >= 8) {
    return mapInTurns(
      request.groups,
      (g) => ({
        groupId: g.groupId,
        ...fetchGroup(
          context,
          g.groupId,
          g.topics,
          requireStable,
          g.memberId === null && g.memberEpoch < 0
            ? undefined
            : { memberId: g.memberId ?? '', memberEpoch: g.memberEpoch },
        ),
      }),
      (groups) => ({ throttleTimeMs: 0, groups }),
    );
  }
  const { topics, errorCode } = fetchGroup(
    context,
    request.groupId,
    request.topics,
    requireStable,
    undefined,
  );
  if (header.apiVersion >= 2 || errorCode === KAFKA_ERROR.NONE)
    return { throttleTimeMs: 0, topics, errorCode };
  // v1 has no top-level error: each partition asked carries the group's.
  return {
    throttleTimeMs: 0,
    topics: (request.topics ?? []).map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((p) => partitionAnswer(p, null, errorCode)),
    })),
  };
};
