/**
 * The bucket reference: one home for the name of one bucket of a user table,
 * `(tableId, partitionId, bucketId)`, and for its rules: `BucketRef` as callers write it,
 * `TableBucket` normalized.
 *
 * Invariants: inside the store every TableBucket is normalized (`partitionId` is `null`, never
 * `undefined`, for a non-partitioned table) and its numbers are checked: tableId and partitionId
 * safe integers >= 0, bucketId an int32 >= 0 (it is an int32 on disk). Normalization happens once, at
 * the public edge, reading each field of the caller's object exactly once (an object whose getters
 * answer differently on a second read cannot get a value past the check); inner layers trust it.
 * Hot paths check fields already read (`isValidBucket`) and build no object; the message for a bad
 * reference comes from one place (`invalidBucket`).
 */
import { OffsetStoreError } from '../errors/index.js';
import { AssertionError } from '../util/index.js';

/**
 * A bucket of a user table, normalized: `partitionId` is `null` for a non-partitioned table. What
 * the store gives back (committed offsets, assignments) and uses inside.
 */
export interface TableBucket {
  /** The user table, a safe integer >= 0. */
  readonly tableId: number;
  /** The partition, a safe integer >= 0, or null (never undefined) for a non-partitioned table. */
  readonly partitionId: number | null;
  /** The bucket, an integer in [0, BUCKET_ID_MAX] (an int32 on disk). */
  readonly bucketId: number;
}

/**
 * A bucket of a user table as callers name it: `partitionId` may be omitted (or null) for a
 * non-partitioned table. Every TableBucket is one.
 */
export interface BucketRef {
  /** The user table, a safe integer >= 0. */
  readonly tableId: number;
  /** The partition, a safe integer >= 0; omit it (or pass null) for a non-partitioned table. */
  readonly partitionId?: number | null;
  /** The bucket, an integer in [0, 2^31 - 1]. */
  readonly bucketId: number;
}

/** The largest bucket id accepted (bucket ids are int32 on disk). */
export const BUCKET_ID_MAX = 0x7fffffff;

/** True when fields already read out of a caller's object make a valid bucket reference. */
export function isValidBucket(tableId: unknown, partitionId: unknown, bucketId: unknown): boolean {
  return (
    typeof tableId === 'number' &&
    Number.isSafeInteger(tableId) &&
    tableId >= 0 &&
    typeof bucketId === 'number' &&
    (bucketId | 0) === bucketId &&
    bucketId >= 0 &&
    (partitionId === undefined ||
      partitionId === null ||
      (typeof partitionId === 'number' && Number.isSafeInteger(partitionId) && partitionId >= 0))
  );
}

function checkId(value: unknown, field: string, max: number): number {
  if (typeof value !== 'number')
    throw new TypeError(`${field} must be a number, got ${typeof value}`);
  if (!Number.isSafeInteger(value) || value < 0 || value > max) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `${field} must be an integer in [0, ${max}], got ${value}`,
    );
  }
  return value + 0; // -0 is 0: on disk and after a reopen it is
}

/** Checks fields already read out of a caller's object and normalizes them; `where` names the reference. */
export function checkBucket(
  tableId: unknown,
  partitionId: unknown,
  bucketId: unknown,
  where: string,
): TableBucket {
  return {
    tableId: checkId(tableId, `${where}.tableId`, Number.MAX_SAFE_INTEGER),
    partitionId:
      partitionId === undefined || partitionId === null
        ? null
        : checkId(partitionId, `${where}.partitionId`, Number.MAX_SAFE_INTEGER),
    bucketId: checkId(bucketId, `${where}.bucketId`, BUCKET_ID_MAX),
  };
}

/** Throws the error for fields that failed `isValidBucket` (TypeError or INVALID_REQUEST naming `where`). */
export function invalidBucket(
  tableId: unknown,
  partitionId: unknown,
  bucketId: unknown,
  where: string,
): never {
  checkBucket(tableId, partitionId, bucketId, where);
  throw new AssertionError(`${where} failed the fast bucket check but passed the full one`);
}

/**
 * Checks and normalizes a bucket reference supplied by a caller, reading each field once; `where`
 * names it in messages (e.g. `offsets[3]`). The result is a new frozen object, never the caller's.
 */
export function normalizeBucketRef(input: unknown, where = 'bucket'): TableBucket {
  if (typeof input !== 'object' || input === null)
    throw new TypeError(`${where} must be an object`);
  const { tableId, partitionId, bucketId } = input as {
    tableId?: unknown;
    partitionId?: unknown;
    bucketId?: unknown;
  };
  return Object.freeze(checkBucket(tableId, partitionId, bucketId, where));
}

/**
 * The key of a bucket: equal for two references exactly when they name the same bucket.
 * `<table>:<bucket>` for a non-partitioned table, `<table>:<partition>:<bucket>` otherwise (the form
 * the command line reads and prints).
 */
export function bucketKey(ref: TableBucket): string {
  return ref.partitionId === null
    ? `${ref.tableId}:${ref.bucketId}`
    : `${ref.tableId}:${ref.partitionId}:${ref.bucketId}`;
}

/** Total order on buckets: by table, then partition (non-partitioned first), then bucket id. */
export function compareBucketRefs(a: TableBucket, b: TableBucket): number {
  if (a.tableId !== b.tableId) return a.tableId - b.tableId;
  if (a.partitionId !== b.partitionId) {
    if (a.partitionId === null) return -1;
    if (b.partitionId === null) return 1;
    return a.partitionId - b.partitionId;
  }
  return a.bucketId - b.bucketId;
}

/** Renders a bucket for messages, e.g. `table 3 partition 7 bucket 12`. */
export function formatBucketRef(ref: TableBucket): string {
  const partition = ref.partitionId === null ? '' : ` partition ${ref.partitionId}`;
  return `table ${ref.tableId}${partition} bucket ${ref.bucketId}`;
}
