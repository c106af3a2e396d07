/**
 * Validation at the public edge. Requests are checked completely before anything is written, and
 * normalized (partitionId undefined -> null, leaderEpoch default -1, metadata default ''), so the
 * internals can assert instead of re-validating. Wrong types are programmer errors (TypeError);
 * wrong values are OffsetStoreErrors naming the field and its index in the request. Strings that
 * reach the disk (group ids, metadata) must be well-formed UTF-16: a lone surrogate has no UTF-8
 * encoding and would be read back as U+FFFD, a different string.
 */
import { GROUP_ID_BYTES_MAX, METADATA_BYTES_MAX, type OffsetRecordSpec } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
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

/** Checks and normalizes one bucket reference; `where` names it in messages (e.g. "offsets[3]"). */
export function normalizeBucket(ref: unknown, where: string): BucketKey {
  if (typeof ref !== 'object' || ref === null) throw new TypeError(`${where} must be an object`);
  const r = ref as { tableId?: unknown; partitionId?: unknown; bucketId?: unknown };
  const tableId = checkId(r.tableId, `${where}.tableId`, Number.MAX_SAFE_INTEGER);
  const partitionId = r.partitionId === undefined || r.partitionId === null ? null : checkId(r.partitionId, `${where}.partitionId`, Number.MAX_SAFE_INTEGER);
  const bucketId = checkId(r.bucketId, `${where}.bucketId`, INT32_MAX);
  return { tableId, partitionId, bucketId };
}

/**
 * The fast check of a bucket reference on the fetch path: true when `normalizeBucket` would accept
 * it unchanged apart from `partitionId` undefined -> null. Callers use `normalizeBucket` for the
 * error when it is false.
 */
export function isWellFormedBucket(ref: unknown): ref is { tableId: number; partitionId?: number | null; bucketId: number } {
  if (typeof ref !== 'object' || ref === null) return false;
  const { tableId, partitionId, bucketId } = ref as { tableId?: unknown; partitionId?: unknown; bucketId?: unknown };
  return typeof tableId === 'number' && Number.isSafeInteger(tableId) && tableId >= 0
    && typeof bucketId === 'number' && (bucketId | 0) === bucketId && bucketId >= 0
    && (partitionId === undefined || partitionId === null || (typeof partitionId === 'number' && Number.isSafeInteger(partitionId) && partitionId >= 0));
}

/** A duplicate-detection key for a normalized bucket. */
export function bucketKeyString(b: BucketKey): string {
  return `${b.tableId}:${b.partitionId ?? ''}:${b.bucketId}`;
}

/** Checks a list of buckets (optionally rejecting duplicates) and normalizes it. */
export function normalizeBuckets(buckets: unknown, what: string, rejectDuplicates: boolean): BucketKey[] {
  if (!Array.isArray(buckets)) throw new TypeError(`${what} must be an array`);
  const out: BucketKey[] = new Array(buckets.length);
  const seen = rejectDuplicates && buckets.length > 1 ? seenScratch : undefined;
  seen?.clear();
  for (let i = 0; i < buckets.length; i++) {
    const b = normalizeBucket(buckets[i], `${what}[${i}]`);
    if (seen !== undefined && !seen.add(b.tableId, b.partitionId, b.bucketId)) {
      throw new OffsetStoreError('INVALID_REQUEST', `${what}[${i}] repeats bucket ${bucketKeyString(b)}`);
    }
    out[i] = b;
  }
  return out;
}

/** Checks a commit request's offsets and turns them into record specs (no duplicates, sizes bounded). */
export function normalizeOffsetCommits(offsets: unknown, recordCountMax: number): OffsetRecordSpec[] {
  if (!Array.isArray(offsets)) throw new TypeError('offsets must be an array');
  if (offsets.length === 0) throw new OffsetStoreError('INVALID_REQUEST', 'offsets is empty');
  if (offsets.length > recordCountMax) throw new OffsetStoreError('INVALID_REQUEST', `${offsets.length} offsets in one commit exceed the limit of ${recordCountMax}`);
  const seen = offsets.length > 1 ? seenScratch : undefined;
  seen?.clear();
  const specs: OffsetRecordSpec[] = new Array(offsets.length);
  for (let i = 0; i < offsets.length; i++) {
    const o = offsets[i] as { offset?: unknown; leaderEpoch?: unknown; metadata?: unknown } | null;
    const b = isWellFormedBucket(o) ? o : normalizeBucket(o, `offsets[${i}]`);
    const partitionId = b.partitionId ?? null;
    const offset = typeof o!.offset === 'number' && Number.isSafeInteger(o!.offset) && o!.offset >= 0
      ? o!.offset : checkId(o!.offset, `offsets[${i}].offset`, Number.MAX_SAFE_INTEGER);
    const leaderEpoch = o!.leaderEpoch === undefined || o!.leaderEpoch === null ? -1 : checkLeaderEpoch(o!.leaderEpoch, i);
    const metadata = o!.metadata === undefined || o!.metadata === null ? '' : checkMetadata(o!.metadata, i);
    if (seen !== undefined && !seen.add(b.tableId, partitionId, b.bucketId)) {
      throw new OffsetStoreError('INVALID_REQUEST', `offsets[${i}] repeats bucket ${b.tableId}:${partitionId ?? ''}:${b.bucketId}`);
    }
    specs[i] = { tableId: b.tableId, partitionId, bucketId: b.bucketId, offset, leaderEpoch, metadata };
  }
  return specs;
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
