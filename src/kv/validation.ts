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
import { GROUP_ID_BYTES_MAX, METADATA_BYTES_MAX, type OffsetRecordSpec } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import { AssertionError } from '../util/index.js';
import { BucketKeySet } from './bucket-key-set.js';
import type { BucketKey } from './offsets-table-state.js';

/** Scratch set for duplicate detection; validation is synchronous, so one instance serves all calls. */
const seenScratch = new BucketKeySet(1024);

const INT32_MAX = 2 ** 31 - 1;

/** The end of the message for a string with a lone surrogate (it cannot be stored as UTF-8). */
const NOT_WELL_FORMED = 'is not well-formed UTF-16: it holds a lone surrogate, which has no UTF-8 encoding';

/**
 * Checks a group id: a non-empty, well-formed string of at most 255 UTF-8 bytes. Well-formed
 * matters because a lone surrogate has no UTF-8 encoding: written, it would come back from the log
 * as U+FFFD, merged with every other id that differs from it only there.
 */
export function validateGroupId(groupId: unknown): asserts groupId is string {
  if (typeof groupId !== 'string') throw new TypeError(`groupId must be a string, got ${typeof groupId}`);
  if (groupId.length === 0) throw new OffsetStoreError('INVALID_GROUP_ID', 'group id is empty');
  if (!groupId.isWellFormed()) throw new OffsetStoreError('INVALID_GROUP_ID', `groupId ${NOT_WELL_FORMED}`);
  if (groupId.length > GROUP_ID_BYTES_MAX / 3 && Buffer.byteLength(groupId) > GROUP_ID_BYTES_MAX) {
    throw new OffsetStoreError('INVALID_GROUP_ID', `group id of ${Buffer.byteLength(groupId)} UTF-8 bytes exceeds ${GROUP_ID_BYTES_MAX}`);
  }
}

function checkId(value: unknown, field: string, max: number): number {
  if (typeof value !== 'number') throw new TypeError(`${field} must be a number, got ${typeof value}`);
  if (!Number.isSafeInteger(value) || value < 0 || value > max) {
    throw new OffsetStoreError('INVALID_REQUEST', `${field} must be an integer in [0, ${max}], got ${value}`);
  }
  return value;
}

/** The fields of a bucket reference as a caller's object holds them, not yet checked. */
export interface BucketFields {
  readonly tableId?: unknown;
  readonly partitionId?: unknown;
  readonly bucketId?: unknown;
}

/** The fields of one offset of a commit request, not yet checked. */
interface OffsetFields extends BucketFields {
  readonly offset?: unknown;
  readonly leaderEpoch?: unknown;
  readonly metadata?: unknown;
}

/**
 * The fast check of bucket fields already read, once each, out of a caller's object: true when
 * `normalizeBucket` would accept them. The fetch and commit paths branch on it, build no key object,
 * and call `invalidBucket` only for the error.
 */
export function isValidBucket(tableId: unknown, partitionId: unknown, bucketId: unknown): boolean {
  return typeof tableId === 'number' && Number.isSafeInteger(tableId) && tableId >= 0
    && typeof bucketId === 'number' && (bucketId | 0) === bucketId && bucketId >= 0
    && (partitionId === undefined || partitionId === null || (typeof partitionId === 'number' && Number.isSafeInteger(partitionId) && partitionId >= 0));
}

/** Checks bucket fields already read out of a caller's object and normalizes them into a key. */
function checkBucket(tableId: unknown, partitionId: unknown, bucketId: unknown, where: string): BucketKey {
  return {
    tableId: checkId(tableId, `${where}.tableId`, Number.MAX_SAFE_INTEGER),
    partitionId: partitionId === undefined || partitionId === null ? null : checkId(partitionId, `${where}.partitionId`, Number.MAX_SAFE_INTEGER),
    bucketId: checkId(bucketId, `${where}.bucketId`, INT32_MAX),
  };
}

/** Throws the error for bucket fields that failed `isValidBucket`; `where` names the reference. */
export function invalidBucket(tableId: unknown, partitionId: unknown, bucketId: unknown, where: string): never {
  checkBucket(tableId, partitionId, bucketId, where);
  throw new AssertionError(`${where} failed the fast bucket check but passed the full one`);
}

/**
 * Checks and normalizes one bucket reference; `where` names it in messages (e.g. "offsets[3]").
 * Each field is read once: the key is built from what was checked, whatever the object's getters
 * would answer next.
 */
export function normalizeBucket(ref: unknown, where: string): BucketKey {
  if (typeof ref !== 'object' || ref === null) throw new TypeError(`${where} must be an object`);
  const { tableId, partitionId, bucketId } = ref as BucketFields;
  return checkBucket(tableId, partitionId, bucketId, where);
}

/** A duplicate-detection key for a normalized bucket. */
export function bucketKeyString(b: BucketKey): string {
  return `${b.tableId}:${b.partitionId ?? ''}:${b.bucketId}`;
}

/** Checks a list of buckets (optionally rejecting duplicates) and normalizes it; reads each element once. */
export function normalizeBuckets(buckets: unknown, what: string, rejectDuplicates: boolean): BucketKey[] {
  if (!Array.isArray(buckets)) throw new TypeError(`${what} must be an array`);
  const count = buckets.length;
  const out: BucketKey[] = new Array(count);
  const seen = rejectDuplicates && count > 1 ? seenScratch : undefined;
  seen?.clear();
  for (let i = 0; i < count; i++) {
    const b = normalizeBucket(buckets[i], `${what}[${i}]`);
    if (seen !== undefined && !seen.add(b.tableId, b.partitionId, b.bucketId)) {
      throw new OffsetStoreError('INVALID_REQUEST', `${what}[${i}] repeats bucket ${bucketKeyString(b)}`);
    }
    out[i] = b;
  }
  return out;
}

/**
 * Checks a commit request's offsets and turns them into record specs (no duplicates, sizes bounded).
 * Every element and every field of it is read exactly once, into a local; the checks and the spec
 * use only those copies, so an object whose getters answer differently on a second read cannot get
 * a value past validation into the log.
 */
export function normalizeOffsetCommits(offsets: unknown, recordCountMax: number): OffsetRecordSpec[] {
  if (!Array.isArray(offsets)) throw new TypeError('offsets must be an array');
  const count = offsets.length;
  if (count === 0) throw new OffsetStoreError('INVALID_REQUEST', 'offsets is empty');
  if (count > recordCountMax) throw new OffsetStoreError('INVALID_REQUEST', `${count} offsets in one commit exceed the limit of ${recordCountMax}`);
  const seen = count > 1 ? seenScratch : undefined;
  seen?.clear();
  const specs: OffsetRecordSpec[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const o: unknown = offsets[i];
    if (typeof o !== 'object' || o === null) throw new TypeError(`offsets[${i}] must be an object`);
    const { tableId, partitionId: partition, bucketId, offset: value, leaderEpoch: epoch, metadata: text } = o as OffsetFields;
    if (!isValidBucket(tableId, partition, bucketId)) invalidBucket(tableId, partition, bucketId, `offsets[${i}]`);
    const partitionId = (partition ?? null) as number | null;
    const offset = typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : checkId(value, `offsets[${i}].offset`, Number.MAX_SAFE_INTEGER);
    const leaderEpoch = epoch === undefined || epoch === null ? -1 : checkLeaderEpoch(epoch, i);
    const metadata = text === undefined || text === null ? '' : checkMetadata(text, i);
    if (seen !== undefined && !seen.add(tableId as number, partitionId, bucketId as number)) {
      throw new OffsetStoreError('INVALID_REQUEST', `offsets[${i}] repeats bucket ${tableId}:${partitionId ?? ''}:${bucketId}`);
    }
    specs[i] = { tableId: tableId as number, partitionId, bucketId: bucketId as number, offset, leaderEpoch, metadata };
  }
  return specs;
}

/** A commit's committing member, checked; see `normalizeCommitOptions`. */
export interface CommitMember {
  readonly memberId: string;
  readonly memberEpoch: number;
}

/**
 * Checks a commit's options (each read once): the member that commits, or null for a commit made
 * without one (admin, scanner). A memberId needs an integer memberEpoch.
 */
export function normalizeCommitOptions(options: unknown): CommitMember | null {
  if (options === undefined || options === null) return null;
  const { memberId, memberEpoch } = options as { memberId?: unknown; memberEpoch?: unknown };
  if (memberId === undefined) return null;
  if (typeof memberId !== 'string') throw new TypeError(`memberId must be a string, got ${typeof memberId}`);
  if (!memberId.isWellFormed()) throw new OffsetStoreError('INVALID_REQUEST', `memberId ${NOT_WELL_FORMED}`);
  if (typeof memberEpoch !== 'number' || !Number.isSafeInteger(memberEpoch)) {
    throw new OffsetStoreError('INVALID_REQUEST', `a commit with memberId needs an integer memberEpoch, got ${String(memberEpoch)}`);
  }
  return { memberId, memberEpoch };
}

function checkLeaderEpoch(leaderEpoch: unknown, i: number): number {
  if (typeof leaderEpoch !== 'number') throw new TypeError(`offsets[${i}].leaderEpoch must be a number`);
  if (!Number.isInteger(leaderEpoch) || leaderEpoch < -1 || leaderEpoch > INT32_MAX) {
    throw new OffsetStoreError('INVALID_REQUEST', `offsets[${i}].leaderEpoch must be an integer in [-1, ${INT32_MAX}], got ${leaderEpoch}`);
  }
  return leaderEpoch;
}

function checkMetadata(metadata: unknown, i: number): string {
  if (typeof metadata !== 'string') throw new TypeError(`offsets[${i}].metadata must be a string`);
  if (!metadata.isWellFormed()) throw new OffsetStoreError('INVALID_REQUEST', `offsets[${i}].metadata ${NOT_WELL_FORMED}`);
  if (metadata.length > METADATA_BYTES_MAX / 3 && Buffer.byteLength(metadata) > METADATA_BYTES_MAX) {
    throw new OffsetStoreError('OFFSET_METADATA_TOO_LARGE', `offsets[${i}].metadata of ${Buffer.byteLength(metadata)} UTF-8 bytes exceeds ${METADATA_BYTES_MAX}`);
  }
  return metadata;
}
