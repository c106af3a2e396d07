/**
 * Validation at the public edge. Requests are checked completely before anything is written, and
 * normalized (partitionId undefined -> null, leaderEpoch default -1, metadata default ''), so the
 * internals can assert instead of re-validating. Wrong types are programmer errors (TypeError);
 * wrong values are OffsetStoreErrors naming the field and its index in the request. Strings that
 * reach the disk (group ids, metadata) must be well-formed UTF-16: a lone surrogate has no UTF-8
 * encoding and would be read back as U+FFFD, a different string.
 *
 * Each element and field of a caller's object is read exactly once, into a local, and only that
 * copy is checked and used: an object whose getters (or a proxy) answer differently when read again
 * cannot get a value past validation into the log, where the store would refuse it at reopen.
 */
import { METADATA_BYTES_MAX, type OffsetRecordSpec } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import {
  bucketKey,
  checkWellFormed,
  invalidBucket,
  isValidBucket,
  normalizeBucketRef,
  type TableBucket,
} from '../model/index.js';
import { checkOptionsBag } from '../util/index.js';
import { BucketKeySet } from './bucket-key-set.js';

/**
 * Scratch set for duplicate detection, lent to one validation at a time. Validation is synchronous,
 * but a caller's getter runs in the middle of it and may validate another request (a commit whose
 * offset getter deletes offsets): that one gets a set of its own, or it would clear or fill the set
 * the first is using (a repeated bucket let through, or one that does not repeat refused).
 */
const seenScratch = new BucketKeySet(1024);
let seenScratchLent = false;

function borrowSeen(): BucketKeySet {
  if (seenScratchLent) return new BucketKeySet(16);
  seenScratchLent = true;
  seenScratch.clear();
  return seenScratch;
}

function giveBackSeen(seen: BucketKeySet | undefined): void {
  if (seen === seenScratch) seenScratchLent = false;
}

const INT32_MAX = 2 ** 31 - 1;

/** The fields of a bucket reference as a caller's object holds them, not yet checked. */
export interface BucketFields {
  /** As the caller's object holds it: anything until checked. */
  readonly tableId?: unknown;
  /** As the caller's object holds it: anything until checked. */
  readonly partitionId?: unknown;
  /** As the caller's object holds it: anything until checked. */
  readonly bucketId?: unknown;
}

/** The fields of one offset of a commit request, not yet checked. */
interface OffsetFields extends BucketFields {
  readonly offset?: unknown;
  readonly leaderEpoch?: unknown;
  readonly metadata?: unknown;
}

/**
 * Checks and normalizes one bucket reference; `where` names it in messages (e.g. "offsets[3]").
 * Each field is read once (see the model's bucket reference).
 */
export function normalizeBucket(ref: unknown, where: string): TableBucket {
  return normalizeBucketRef(ref, where);
}

/** Checks a list of buckets (optionally rejecting duplicates) and normalizes it; reads each element once. */
export function normalizeBuckets(
  buckets: unknown,
  what: string,
  rejectDuplicates: boolean,
): TableBucket[] {
  if (!Array.isArray(buckets)) throw new TypeError(`${what} must be an array`);
  const count = buckets.length;
  const out: TableBucket[] = new Array(count);
  const seen = rejectDuplicates && count > 1 ? borrowSeen() : undefined;
  try {
    for (let i = 0; i < count; i++) {
      const b = normalizeBucket(buckets[i], `${what}[${i}]`);
      if (seen !== undefined && !seen.add(b.tableId, b.partitionId, b.bucketId)) {
        throw new OffsetStoreError(
          'INVALID_REQUEST',
          `${what}[${i}] repeats bucket ${bucketKey(b)}`,
        );
      }
      out[i] = b;
    }
  } finally {
    giveBackSeen(seen);
  }
  return out;
}

/** Throws INVALID_REQUEST unless a commit of `count` offsets has at least one and at most `recordCountMax`. */
export function checkCommitCount(count: number, recordCountMax: number): void {
  if (count === 0) throw new OffsetStoreError('INVALID_REQUEST', 'offsets is empty');
  if (count > recordCountMax)
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `${count} offsets in one commit exceed the limit of ${recordCountMax}`,
    );
}

/**
 * Checks a commit request's offsets and turns them into record specs (no duplicates, sizes bounded).
 * Every element and every field of it is read exactly once, into a local; the checks and the spec
 * use only those copies, so an object whose getters answer differently on a second read cannot get
 * a value past validation into the log.
 */
export function normalizeOffsetCommits(
  offsets: unknown,
  recordCountMax: number,
): OffsetRecordSpec[] {
  if (!Array.isArray(offsets)) throw new TypeError('offsets must be an array');
  const count = offsets.length;
  checkCommitCount(count, recordCountMax);
  const specs: OffsetRecordSpec[] = new Array(count);
  // Duplicates: while the buckets come in strictly increasing (table, partition, bucket) order, as a
  // caller walking its buckets sends them, none can repeat and no set is needed; from the first one
  // out of order, every bucket so far goes into the set and the rest are checked against it.
  let seen: BucketKeySet | undefined;
  let lastTable = -1;
  let lastPartition = -2;
  let lastBucket = -1;
  try {
    for (let i = 0; i < count; i++) {
      const o: unknown = offsets[i];
      if (typeof o !== 'object' || o === null)
        throw new TypeError(`offsets[${i}] must be an object`);
      const {
        tableId,
        partitionId: partition,
        bucketId,
        offset: value,
        leaderEpoch: epoch,
        metadata: text,
      } = o as OffsetFields;
      if (!isValidBucket(tableId, partition, bucketId))
        invalidBucket(tableId, partition, bucketId, `offsets[${i}]`);
      // `+ 0` makes -0 the 0 that the disk keeps and a reopen serves.
      const t = (tableId as number) + 0;
      const b = (bucketId as number) + 0;
      const partitionId =
        partition === undefined || partition === null ? null : (partition as number) + 0;
      const offset =
        typeof value === 'number' && Number.isSafeInteger(value)
          ? value + 0
          : checkOffset(value, i);
      const leaderEpoch =
        epoch === undefined || epoch === null ? -1 : checkLeaderEpoch(epoch, i) + 0;
      const metadata = text === undefined || text === null ? '' : checkMetadata(text, i);
      if (seen === undefined) {
        const p = partitionId ?? -1;
        if (
          t > lastTable ||
          (t === lastTable && (p > lastPartition || (p === lastPartition && b > lastBucket)))
        ) {
          lastTable = t;
          lastPartition = p;
          lastBucket = b;
        } else {
          seen = borrowSeen();
          for (let k = 0; k < i; k++)
            seen.add(specs[k]!.tableId, specs[k]!.partitionId, specs[k]!.bucketId);
        }
      }
      if (seen !== undefined && !seen.add(t, partitionId, b)) {
        throw new OffsetStoreError(
          'INVALID_REQUEST',
          `offsets[${i}] repeats bucket ${bucketKey({ tableId: t, partitionId, bucketId: b })}`,
        );
      }
      specs[i] = { tableId: t, partitionId, bucketId: b, offset, leaderEpoch, metadata };
    }
  } finally {
    giveBackSeen(seen);
  }
  return specs;
}

/**
 * A commit's committing member, checked; see `normalizeCommitOptions`: a consumer-protocol member
 * (fenced by member epoch) or a classic-protocol member (fenced by generation).
 */
export type CommitMember = ConsumerCommitMember | ClassicCommitMember;

/** A consumer-protocol (KIP-848) member committing. */
export interface ConsumerCommitMember {
  /** Discriminant. */
  readonly kind: 'consumer';
  /** The committing member's id, well-formed UTF-16. */
  readonly memberId: string;
  /** The epoch it commits at (a safe integer); fencing compares it with the coordinator's. */
  readonly memberEpoch: number;
}

/** A classic-protocol (JoinGroup/SyncGroup) member committing. */
export interface ClassicCommitMember {
  /** Discriminant. */
  readonly kind: 'classic';
  /** The committing member's id ('' when it sent none), well-formed UTF-16. */
  readonly memberId: string;
  /** The generation it commits in (a safe integer); fencing compares it with the group's. */
  readonly generationId: number;
  /** Its static instance id, or null. */
  readonly groupInstanceId: string | null;
}

const COMMIT_OPTION_NAMES = ['memberId', 'memberEpoch', 'generationId', 'groupInstanceId'];

/**
 * Checks a commit's options (each read once): the member that commits, or null for a commit made
 * without one (admin, scanner). With `generationId` the commit is a classic one: generation -1 (any
 * negative) with no member id and no instance id is Kafka's admin commit (null here too); anything
 * else names a classic member. Otherwise a memberId needs an integer memberEpoch. Both a
 * generationId and a memberEpoch is INVALID_REQUEST. A key that is not an option is a TypeError: a
 * misspelt memberId would make a member's commit one without a member, unfenced.
 */
export function normalizeCommitOptions(options: unknown): CommitMember | null {
  if (options === undefined || options === null) return null;
  checkOptionsBag(options, COMMIT_OPTION_NAMES, 'options', "the commit's options");
  const { memberId, memberEpoch, generationId, groupInstanceId } = options as {
    memberId?: unknown;
    memberEpoch?: unknown;
    generationId?: unknown;
    groupInstanceId?: unknown;
  };
  if (memberId !== undefined) {
    if (typeof memberId !== 'string')
      throw new TypeError(`memberId must be a string, got ${typeof memberId}`);
    checkWellFormed(memberId, 'memberId');
  }
  if (generationId !== undefined) {
    if (memberEpoch !== undefined)
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        'a commit names either a generationId (classic protocol) or a memberEpoch, not both',
      );
    if (typeof generationId !== 'number')
      throw new TypeError(`generationId must be a number, got ${typeof generationId}`);
    if (!Number.isSafeInteger(generationId))
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `generationId must be an integer, got ${generationId}`,
      );
    let instanceId: string | null = null;
    if (groupInstanceId !== undefined && groupInstanceId !== null) {
      if (typeof groupInstanceId !== 'string')
        throw new TypeError(`groupInstanceId must be a string, got ${typeof groupInstanceId}`);
      if (groupInstanceId.length === 0)
        throw new OffsetStoreError('INVALID_REQUEST', 'groupInstanceId must not be empty');
      instanceId = checkWellFormed(groupInstanceId, 'groupInstanceId');
    }
    const id = (memberId as string | undefined) ?? '';
    if (generationId < 0 && id === '' && instanceId === null) return null;
    return { kind: 'classic', memberId: id, generationId, groupInstanceId: instanceId };
  }
  if (memberId === undefined) return null;
  if (typeof memberEpoch !== 'number' || !Number.isSafeInteger(memberEpoch)) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `a commit with memberId needs an integer memberEpoch, got ${String(memberEpoch)}`,
    );
  }
  return { kind: 'consumer', memberId: memberId as string, memberEpoch };
}

/**
 * A committed offset is any safe integer: Kafka clients commit the sentinels -1 (latest) and -2
 * (earliest) literally and read them back unchanged, so negative values are data, not mistakes.
 */
function checkOffset(value: unknown, i: number): number {
  if (typeof value !== 'number')
    throw new TypeError(`offsets[${i}].offset must be a number, got ${typeof value}`);
  throw new OffsetStoreError(
    'INVALID_REQUEST',
    `offsets[${i}].offset must be a safe integer in [${Number.MIN_SAFE_INTEGER}, ${Number.MAX_SAFE_INTEGER}], got ${value}`,
  );
}

function checkLeaderEpoch(leaderEpoch: unknown, i: number): number {
  if (typeof leaderEpoch !== 'number')
    throw new TypeError(`offsets[${i}].leaderEpoch must be a number`);
  if (!Number.isInteger(leaderEpoch) || leaderEpoch < -1 || leaderEpoch > INT32_MAX) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `offsets[${i}].leaderEpoch must be an integer in [-1, ${INT32_MAX}], got ${leaderEpoch}`,
    );
  }
  return leaderEpoch;
}

function checkMetadata(metadata: unknown, i: number): string {
  if (typeof metadata !== 'string') throw new TypeError(`offsets[${i}].metadata must be a string`);
  checkWellFormed(metadata, `offsets[${i}].metadata`);
  if (
    metadata.length > METADATA_BYTES_MAX / 3 &&
    Buffer.byteLength(metadata) > METADATA_BYTES_MAX
  ) {
    throw new OffsetStoreError(
      'OFFSET_METADATA_TOO_LARGE',
      `offsets[${i}].metadata of ${Buffer.byteLength(metadata)} UTF-8 bytes exceeds ${METADATA_BYTES_MAX}`,
    );
  }
  return metadata;
}
