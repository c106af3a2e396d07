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
 *   (`{ memberId, memberEpoch }`); in a classic group the generation (`{ generationId, memberId,
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
import type { CommitOptions, OffsetCommit } from '../../store-options.js';
import {
  KAFKA_ERROR,
  type API_KEYS,
  type RequestOf,
  type ResponseInputOf,
} from '../protocol/index.js';
import type { HandlerContext } from './handler-context.js';
import type { RequestHandler } from './request-handler.js';

const METADATA_BYTES_MAX = 4096;
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

type CommitResponse = ResponseInputOf<typeof API_KEYS.OffsetCommit>;

/** One partition of the response; the accepted ones get the commit's outcome. */
interface PartitionResult {
  partitionIndex: number;
  errorCode: number;
}

/** Commits the offsets of a request. */
export const handleOffsetCommit: RequestHandler<typeof API_KEYS.OffsetCommit> = (
  context,
  request,
  header,
) => {
  const { groupId, memberId, generationIdOrMemberEpoch: generation } = request;
  let groupError: number = KAFKA_ERROR.NONE;
  try {
    validateGroupId(groupId);
  } catch (error) {
    groupError = context.errorCodeOf(error, 'OffsetCommit');
  }
  const accepted: PartitionResult[] = [];
  const commits: OffsetCommit[] = [];
  /** (table, partition) -> index in `commits`; built only once a partition comes out of order. */
  let positions: Map<number, number> | undefined;
  let lastKey = -1;
  const response: CommitResponse = {
    throttleTimeMs: 0,
    topics: request.topics.map((topic) => {
      const entry = context.catalog.get(topic.name);
      return {
        name: topic.name,
        partitions: topic.partitions.map((p) => {
          const result: PartitionResult = {
            partitionIndex: p.partitionIndex,
            errorCode: groupError,
          };
          if (groupError !== KAFKA_ERROR.NONE) return result;
          const offset = p.committedOffset;
          const metadata = p.committedMetadata ?? '';
          if (entry === undefined || p.partitionIndex < 0 || p.partitionIndex >= entry.partitions) {
            result.errorCode = KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION;
          } else if (
            metadata.length > METADATA_BYTES_MAX / 3 &&
            Buffer.byteLength(metadata) > METADATA_BYTES_MAX
          ) {
            result.errorCode = KAFKA_ERROR.OFFSET_METADATA_TOO_LARGE;
          } else if (offset < MIN_SAFE || offset > MAX_SAFE) {
            result.errorCode = KAFKA_ERROR.INVALID_REQUEST;
          } else {
            const commit: OffsetCommit = {
              tableId: entry.tableId,
              bucketId: p.partitionIndex,
              offset: Number(offset),
              leaderEpoch: p.committedLeaderEpoch < -1 ? -1 : p.committedLeaderEpoch,
              metadata,
            };
            // Keys increase while partitions come in table and partition order (the usual request);
            // from the first one out of order, a map finds repeats (the store refuses duplicates).
            const key = entry.tableId * 65_536 + p.partitionIndex;
            if (positions === undefined && key <= lastKey) positions = indexCommits(commits);
            const earlier = positions?.get(key);
            if (earlier !== undefined) {
              commits[earlier] = commit;
            } else {
              positions?.set(key, commits.length);
              commits.push(commit);
            }
            lastKey = key;
            accepted.push(result);
          }
          return result;
        }),
      };
    }),
  };
  if (commits.length === 0) return response;
  let member: CommitOptions | undefined;
  try {
    member = committingMember(context, request, header.apiVersion);
  } catch (error) {
    const code = context.errorCodeOf(error, 'OffsetCommit');
    for (const result of accepted) result.errorCode = code;
    return response;
  }
  return context.store.commitOffsets(groupId, commits, member).then(
    () => response,
    (error: unknown) => {
      const code = context.errorCodeOf(error, 'OffsetCommit');
      for (const result of accepted) result.errorCode = code;
      return response;
    },
  );
};

/** OffsetCommit v9 is the first whose generation field may be a consumer-protocol member epoch (KIP-848). */
const MEMBER_EPOCH_FROM_VERSION = 9;

/** The committing member as the store's CommitOptions, or undefined for a commit without one. */
function committingMember(
  context: HandlerContext,
  request: RequestOf<typeof API_KEYS.OffsetCommit>,
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

/** A map from (table, partition) key to index, for the commits so far. */
function indexCommits(commits: readonly OffsetCommit[]): Map<number, number> {
  const positions = new Map<number, number>();
  commits.forEach((c, i) => positions.set(c.tableId * 65_536 + c.bucketId, i));
  return positions;
}
