/**
 * OffsetCommit (key 8, v2-9): commits a group's offsets through `store.commitOffsets`, partition p of
 * a topic being bucket p of the topic's table.
 *
 * Who commits:
 * - generation -1 with an empty member id: a commit without membership (an admin tool, a consumer
 *   that assigns partitions by hand); the store refuses it while the group has members
 *   (UNKNOWN_MEMBER_ID, as Kafka does);
 * - otherwise a member, fenced by the store. The group's type says how to read the generation field
 *   (v9 carries either): in a consumer-protocol group it is the member epoch
 *   (`{ memberId, memberEpoch }`; an epoch other than the member's is STALE_MEMBER_EPOCH, older or
 *   newer, as a broker answers; a member's commit before v9 is UNSUPPORTED_VERSION, as Kafka
 *   answers it); in a classic group the generation (`{ generationId, memberId,
 *   groupInstanceId }`: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
 *   REBALANCE_IN_PROGRESS while the group waits for its leader's assignment). For a group id with no
 *   group, v9 reads a member epoch and v2-8 a generation, so the refusal is the one the client's
 *   protocol expects.
 *
 * Per partition, checked before anything is written: a partition the catalog does not have is
 * UNKNOWN_TOPIC_OR_PARTITION, metadata over 4096 UTF-8 bytes OFFSET_METADATA_TOO_LARGE, an offset
 * that is not a safe integer INVALID_REQUEST; those are left out and the others committed. The
 * others go to the store as one atomic commit, so they share one outcome: 0, or the error of the
 * commit mapped to Kafka's code. Offsets are stored exactly as sent, negative ones included (kafkajs
 * commits -1 and -2); a leader epoch below -1 is stored as -1 (unknown); null metadata as ''.
 * A partition named twice is committed once with its last value (Kafka keeps the last too).
 * retention_time_ms (v2-4) is ignored: the store's offsetsRetentionMs applies.
 */
import { validateGroupId } from '../../model/index.js';
import { METADATA_BYTES_MAX, type OffsetRecordSpec } from '../../codec/index.js';
import { COMMIT_NORMALIZED, HOLDS_CONSUMER_MEMBER } from '../../store.js';
import type { CommitOptions } from '../../store-options.js';
import type { TopicEntry } from '../catalog/index.js';
import {
  KAFKA_ERROR,
  type API_KEYS,
  type OffsetCommitAnswerColumns,
  type OffsetCommitColumns,
  type RequestOf,
  type ResponseInputOf,
} from '../protocol/index.js';
import type { HandlerContext } from './handler-context.js';
import type { RequestHandler } from './request-handler.js';

type CommitResponse = ResponseInputOf<typeof API_KEYS.OffsetCommit>;
type CommitRequest = RequestOf<typeof API_KEYS.OffsetCommit>;
/** The answer while it is settled: its error codes are filled in. */
type CommitAnswer = OffsetCommitAnswerColumns & { readonly errorCodes: number[] };

/**
 * Commits the offsets of a request read as columns (the server's path for OffsetCommit, see
 * offset-commit-columns.ts) and answers in columns: per partition, in request order, its error
 * code. The answer keeps only flat arrays while the commit waits for its fdatasync: a pipelined
 * commit waits a millisecond or more, long enough for young objects to be copied by a scavenge and
 * promoted, which for hundreds of in-flight 100-partition requests of one object per partition
 * made the garbage collector the server's largest cost.
 */
export function commitOffsetColumns(
  context: HandlerContext,
  request: OffsetCommitColumns,
  apiVersion: number,
): OffsetCommitAnswerColumns | Promise<OffsetCommitAnswerColumns> {
  const { groupId, topicNames, topicCounts, partitionIndexes, offsets, leaderEpochs, metadata } =
    request;
  let groupError: number = KAFKA_ERROR.NONE;
  try {
    validateGroupId(groupId);
  } catch (error) {
    groupError = context.errorCodeOf(error, 'OffsetCommit');
  }
  const errorCodes = new Array<number>(partitionIndexes.length);
  const answer: CommitAnswer = { topicNames, topicCounts, partitionIndexes, errorCodes };
  // In the store's normalized form (COMMIT_NORMALIZED): every check the store would make on them is
  // made here, per partition, so that a refused partition is answered alone. The partitions whose
  // code is NONE are those in the commit.
  const commits = new Array<OffsetRecordSpec>(partitionIndexes.length);
  let count = 0;
  /** (table, partition) -> index in `commits`; built only once a partition comes out of order. */
  let positions: Map<number, number> | undefined;
  let lastKey = -1;
  let at = 0;
  for (let t = 0; t < topicNames.length; t++) {
    const entry = context.catalog.get(topicNames[t]!);
    for (const last = at + topicCounts[t]!; at < last; at++) {
      const partition = partitionIndexes[at]!;
      const offset = offsets[at]!;
      const code =
        groupError !== KAFKA_ERROR.NONE
          ? groupError
          : partitionError(entry, partition, offset, metadata[at]!);
      errorCodes[at] = code;
      if (code !== KAFKA_ERROR.NONE) continue;
      const epoch = leaderEpochs[at]!;
      const commit: OffsetRecordSpec = {
        tableId: entry!.tableId,
        partitionId: null,
        bucketId: partition,
        offset, // a safe integer: partitionError checked
        leaderEpoch: epoch < -1 ? -1 : epoch,
        metadata: metadata[at] ?? '',
      };
      // Keys increase while partitions come in table and partition order (the usual request); from
      // the first one out of order, a map finds repeats (the store refuses duplicates).
      const key = entry!.tableId * 65_536 + partition;
      if (positions === undefined && key <= lastKey) positions = indexCommits(commits, count);
      const earlier = positions?.get(key);
      if (earlier !== undefined) {
        commits[earlier] = commit;
      } else {
        positions?.set(key, count);
        commits[count++] = commit;
      }
      lastKey = key;
    }
  }
  if (count === 0) return answer;
  commits.length = count;
  let member: CommitOptions | undefined;
  try {
    // Both ask the store for the group's type: the group's bucket may be served elsewhere
    // (NOT_COORDINATOR) or still loading, an answer per partition like any store error.
    if (consumerMemberBeforeV9(context, request, apiVersion))
      return settle(answer, KAFKA_ERROR.UNSUPPORTED_VERSION);
    member = committingMember(context, request, apiVersion);
  } catch (error) {
    return settle(answer, commitErrorCode(context, error));
  }
  return context.store[COMMIT_NORMALIZED](groupId, commits, member).then(
    () => answer,
    (error: unknown) => settle(answer, commitErrorCode(context, error)),
  );
}

/** Gives the partitions of a refused commit (those with no error of their own) its code. */
function settle(answer: CommitAnswer, outcome: number): OffsetCommitAnswerColumns {
  const { errorCodes } = answer;
  for (let i = 0; i < errorCodes.length; i++)
    if (errorCodes[i] === KAFKA_ERROR.NONE) errorCodes[i] = outcome;
  return answer;
}

/**
 * The Kafka code of a refused commit. A member epoch newer than the member's is FENCED_MEMBER_EPOCH
 * in the store; a broker answers a commit with any epoch other than the member's with
 * STALE_MEMBER_EPOCH, which a client retries once its next heartbeat has told it where it stands
 * (FENCED_MEMBER_EPOCH would end a Java consumer's commit as an unexpected error).
 */
function commitErrorCode(context: HandlerContext, error: unknown): number {
  const code = context.errorCodeOf(error, 'OffsetCommit');
  return code === KAFKA_ERROR.FENCED_MEMBER_EPOCH ? KAFKA_ERROR.STALE_MEMBER_EPOCH : code;
}

/**
 * Commits the offsets of a decoded request (the handler table's form, which the ACL and group-limit
 * wrappers take): read into columns, committed by `commitOffsetColumns`, answered as objects.
 */
export const handleOffsetCommit: RequestHandler<typeof API_KEYS.OffsetCommit> = (
  context,
  request,
  header,
) => {
  const answer = commitOffsetColumns(context, columnsOf(request), header.apiVersion);
  return answer instanceof Promise ? answer.then(respond) : respond(answer);
};

/** A decoded request as columns. */
function columnsOf(request: CommitRequest): OffsetCommitColumns {
  const columns: OffsetCommitColumns = {
    groupId: request.groupId,
    generationIdOrMemberEpoch: request.generationIdOrMemberEpoch,
    memberId: request.memberId,
    groupInstanceId: request.groupInstanceId,
    topicNames: [],
    topicCounts: [],
    partitionIndexes: [],
    offsets: [],
    leaderEpochs: [],
    metadata: [],
  };
  for (const topic of request.topics) {
    columns.topicNames.push(topic.name);
    columns.topicCounts.push(topic.partitions.length);
    for (const p of topic.partitions) {
      columns.partitionIndexes.push(p.partitionIndex);
      columns.offsets.push(Number(p.committedOffset));
      columns.leaderEpochs.push(p.committedLeaderEpoch);
      columns.metadata.push(p.committedMetadata);
    }
  }
  return columns;
}

/** A partition's own refusal (checked before anything is written), or NONE; `offset` is its committed offset as a double. */
function partitionError(
  entry: TopicEntry | undefined,
  partition: number,
  offset: number,
  metadata: string | null,
): number {
  if (entry === undefined || partition < 0 || partition >= entry.partitions)
    return KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION;
  if (
    metadata !== null &&
    metadata.length > METADATA_BYTES_MAX / 3 &&
    Buffer.byteLength(metadata) > METADATA_BYTES_MAX
  )
    return KAFKA_ERROR.OFFSET_METADATA_TOO_LARGE;
  // Exact: every int64 outside the safe range becomes a double outside it (2^53 and beyond), and
  // it costs no BigInt comparisons.
  if (!Number.isSafeInteger(offset)) return KAFKA_ERROR.INVALID_REQUEST;
  return KAFKA_ERROR.NONE;
}

/** The response objects of an answer. */
function respond(answer: OffsetCommitAnswerColumns): CommitResponse {
  const { topicNames, topicCounts, partitionIndexes, errorCodes } = answer;
  let at = 0;
  return {
    throttleTimeMs: 0,
    topics: topicNames.map((name, t) => {
      const partitions = new Array<{ partitionIndex: number; errorCode: number }>(topicCounts[t]!);
      for (let i = 0; i < partitions.length; i++, at++)
        partitions[i] = { partitionIndex: partitionIndexes[at]!, errorCode: errorCodes[at]! };
      return { name, partitions };
    }),
  };
}

/** OffsetCommit v9 is the first whose generation field may be a consumer-protocol member epoch (KIP-848). */
const MEMBER_EPOCH_FROM_VERSION = 9;

/**
 * A member of a consumer-protocol group commits with v9 or later (the first version whose generation
 * field is its member epoch): Kafka refuses an older version's commit from such a member, partition
 * by partition, with UNSUPPORTED_VERSION, after checking that the member exists (a stranger is
 * UNKNOWN_MEMBER_ID, from the store) and before its epoch.
 */
function consumerMemberBeforeV9(
  context: HandlerContext,
  request: OffsetCommitColumns,
  version: number,
): boolean {
  if (version >= MEMBER_EPOCH_FROM_VERSION) return false;
  const { groupId, memberId, generationIdOrMemberEpoch: generation } = request;
  if (generation === -1 && memberId === '') return false;
  return (
    context.store.groupType(groupId) === 'consumer' &&
    context.store[HOLDS_CONSUMER_MEMBER](groupId, memberId)
  );
}

/** The committing member as the store's CommitOptions, or undefined for a commit without one. */
function committingMember(
  context: HandlerContext,
  request: OffsetCommitColumns,
  version: number,
): CommitOptions | undefined {
  const { groupId, memberId, generationIdOrMemberEpoch: generation, groupInstanceId } = request;
  if (generation === -1 && memberId === '') return undefined;
  const type =
    context.store.groupType(groupId) ??
    (version >= MEMBER_EPOCH_FROM_VERSION ? 'consumer' : 'classic');
  return type === 'consumer'
    ? { memberId, memberEpoch: generation }
    : { generationId: generation, memberId, groupInstanceId };
}

/** A map from (table, partition) key to index, for the first `count` commits. */
function indexCommits(commits: readonly OffsetRecordSpec[], count: number): Map<number, number> {
  const positions = new Map<number, number>();
  for (let i = 0; i < count; i++)
    positions.set(commits[i]!.tableId * 65_536 + commits[i]!.bucketId, i);
  return positions;
}
