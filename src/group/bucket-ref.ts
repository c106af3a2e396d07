/**
 * BucketRef: the name of one bucket of a user table, `(tableId, partitionId, bucketId)`.
 *
 * Invariants: inside src/group every BucketRef is normalized (`partitionId` is `null`, never
 * `undefined`, for a non-partitioned table), frozen (refs are shared between state, records and
 * responses), and its numbers are checked safe integers, so two refs name the same bucket exactly
 * when their `bucketKey`s are equal. Normalization happens once, at the edge
 * (`normalizeBucketRef`). Hot paths do not build keys: they index buckets through BucketMap.
 */
import { OffsetStoreError } from '../errors/index.js';

/** A bucket of a user table, normalized: `partitionId` is `null` for a non-partitioned table. */
export interface BucketRef {
  readonly tableId: number;
  readonly partitionId: number | null;
  readonly bucketId: number;
}

/** A bucket as callers may write it: `partitionId` may be omitted for a non-partitioned table. */
export interface BucketRefInput {
  readonly tableId: number;
  readonly partitionId?: number | null;
  readonly bucketId: number;
}

/** The largest bucket id accepted (bucket ids are int32 on disk). */
export const BUCKET_ID_MAX = 0x7fffffff;

/**
 * Checks and normalizes a bucket supplied by a caller. Wrong types are a `TypeError`; out-of-range
 * numbers are `INVALID_REQUEST` naming `field`. Each field is read once and the result is always a
 * new frozen ref built from those reads: the caller's object is never kept, since its getters could
 * answer differently when read again.
 */
export function normalizeBucketRef(input: BucketRefInput, field = 'bucket'): BucketRef {
  if (typeof input !== 'object' || input === null) throw new TypeError(`${field} must be an object`);
  const { tableId, partitionId: rawPartitionId, bucketId } = input;
  const partitionId = rawPartitionId ?? null;
  if (typeof tableId !== 'number' || typeof bucketId !== 'number') {
    throw new TypeError(`${field}.tableId and ${field}.bucketId must be numbers`);
  }
  if (partitionId !== null && typeof partitionId !== 'number') {
    throw new TypeError(`${field}.partitionId must be a number, null or undefined`);
  }
  if (!Number.isSafeInteger(tableId) || tableId < 0) {
    throw new OffsetStoreError('INVALID_REQUEST', `${field}.tableId must be a safe integer >= 0, got ${tableId}`);
  }
  if (partitionId !== null && (!Number.isSafeInteger(partitionId) || partitionId < 0)) {
    throw new OffsetStoreError('INVALID_REQUEST', `${field}.partitionId must be null or a safe integer >= 0, got ${partitionId}`);
  }
  if (!Number.isInteger(bucketId) || bucketId < 0 || bucketId > BUCKET_ID_MAX) {
    throw new OffsetStoreError('INVALID_REQUEST', `${field}.bucketId must be an int32 >= 0, got ${bucketId}`);
  }
  return Object.freeze({ tableId, partitionId, bucketId });
}

/** A string that is equal for two normalized refs exactly when they name the same bucket. */
export function bucketKey(ref: BucketRef): string {
  return ref.partitionId === null ? `${ref.tableId}::${ref.bucketId}` : `${ref.tableId}:${ref.partitionId}:${ref.bucketId}`;
}

/** Total order on buckets: by table, then partition (non-partitioned first), then bucket id. */
export function compareBucketRefs(a: BucketRef, b: BucketRef): number {
  if (a.tableId !== b.tableId) return a.tableId - b.tableId;
  if (a.partitionId !== b.partitionId) {
    if (a.partitionId === null) return -1;
    if (b.partitionId === null) return 1;
    return a.partitionId - b.partitionId;
  }
  return a.bucketId - b.bucketId;
}

/** Renders a bucket for error messages, e.g. `table 3 partition 7 bucket 12`. */
export function formatBucketRef(ref: BucketRef): string {
  const partition = ref.partitionId === null ? '' : ` partition ${ref.partitionId}`;
  return `table ${ref.tableId}${partition} bucket ${ref.bucketId}`;
}
