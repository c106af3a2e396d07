/**
 * Planning an offsets reset, as Kafka's `kafka-consumer-groups.sh --reset-offsets` does: the plan
 * (which buckets, from which committed offset to which new one) is computed first and shown; only
 * an explicit execute writes it. Planning is a pure function of the group's committed offsets, so a
 * dry run reads and never writes.
 *
 * Which buckets a plan covers:
 * - `to-offset` and `shift-by`: the committed buckets the selection matches; `to-offset` also covers
 *   one uncommitted bucket when the selection names it completely (table and bucket);
 * - `from-file`: the buckets the file names (committed or not), narrowed by the selection. An entry
 *   that says which committed offset the plan was made against (`currentOffset`, as a dry run's
 *   rows do) is refused if the bucket's committed offset is another now: a stale plan, or one
 *   already applied, is not applied blindly (Kafka's tool would).
 * `shift-by` clamps at 0 (the store knows no log start) and marks clamped rows; it refuses a bucket
 * committed at a negative sentinel (-1 latest, -2 earliest), which is no position to shift, and a
 * shift past the largest safe integer, so a dry run never shows a plan that cannot be applied.
 */
import { OffsetStoreError } from '../errors/index.js';
import {
  describeSelection,
  selectionMatches,
  validateSelection,
  type BucketOffset,
  type BucketSelection,
} from './bucket-spec.js';
import { compareBucketRefs, bucketKey, type TableBucket } from '../model/index.js';

/** Where the new offsets come from. */
export type ResetTarget =
  | { kind: 'to-offset'; offset: number }
  | { kind: 'shift-by'; delta: number }
  | { kind: 'from-file'; source: string; offsets: BucketOffset[] };

/** What to reset. */
export interface ResetRequest {
  /** The new offsets: one offset, a shift of the committed ones, or offsets from a document. */
  target: ResetTarget;
  /** Default: every committed bucket of the group. */
  selection?: BucketSelection;
}

/** One bucket of a plan. */
export interface ResetPlanRow extends TableBucket {
  /** The committed offset now, null when the bucket has none. */
  currentOffset: number | null;
  /** The offset the reset commits (>= 0). */
  newOffset: number;
  /** True when `shift-by` went below 0 and was clamped to 0. */
  clamped: boolean;
}

/** The committed offsets a plan is computed from. */
export interface CommittedBucketOffset extends TableBucket {
  /** The committed offset of the bucket. */
  offset: number;
}

/** Computes the rows of a reset plan from the group's committed offsets; see the module header. */
export function planResetRows(
  committed: readonly CommittedBucketOffset[],
  request: ResetRequest,
): ResetPlanRow[] {
  const selection = request.selection ?? {};
  validateSelection(selection);
  const target = request.target;
  const current = new Map(committed.map((c) => [bucketKey(c), c.offset]));
  let rows: ResetPlanRow[];
  switch (target.kind) {
    case 'to-offset': {
      checkOffset(target.offset, 'to-offset');
      rows = committed
        .filter((c) => selectionMatches(selection, c))
        .map((c) => row(c, c.offset, target.offset, false));
      if (
        rows.length === 0 &&
        selection.tableId !== undefined &&
        selection.bucketId !== undefined
      ) {
        rows = [
          row(
            {
              tableId: selection.tableId,
              partitionId: selection.partitionId ?? null,
              bucketId: selection.bucketId,
            },
            null,
            target.offset,
            false,
          ),
        ];
      }
      break;
    }
    case 'shift-by': {
      if (!Number.isSafeInteger(target.delta))
        throw new OffsetStoreError(
          'INVALID_REQUEST',
          `shift-by must be a safe integer, got ${target.delta}`,
        );
      rows = committed
        .filter((c) => selectionMatches(selection, c))
        .map((c) => {
          // A negative committed offset is a sentinel a client committed (-1 latest, -2 earliest:
          // kafkajs's resetOffsets), not a position: shifting it would commit a made-up offset.
          if (c.offset < 0)
            throw new OffsetStoreError(
              'INVALID_REQUEST',
              `${bucketName(c)} is committed at ${c.offset}, a sentinel (${c.offset === -1 ? 'latest' : c.offset === -2 ? 'earliest' : 'not an offset'}), which cannot be shifted: leave it out of the selection, or reset it --to-offset`,
            );
          const shifted = c.offset + target.delta;
          if (!Number.isSafeInteger(shifted))
            throw new OffsetStoreError(
              'INVALID_REQUEST',
              `${bucketName(c)}: ${c.offset} shifted by ${target.delta} is past 2^53 - 1, the largest offset`,
            );
          return row(c, c.offset, Math.max(0, shifted), shifted < 0);
        });
      if (
        rows.length === 0 &&
        selection.tableId !== undefined &&
        selection.bucketId !== undefined
      ) {
        throw new OffsetStoreError(
          'INVALID_REQUEST',
          `${describeSelection(selection)} has no committed offset to shift`,
        );
      }
      break;
    }
    case 'from-file':
      rows = target.offsets
        .filter((o) => selectionMatches(selection, o))
        .map((o) => {
          const now = current.get(bucketKey(o)) ?? null;
          if (o.currentOffset !== undefined && o.currentOffset !== now)
            throw new OffsetStoreError(
              'INVALID_REQUEST',
              `${bucketName(o)} is committed at ${now ?? 'nothing'} now, but ${target.source} was planned against ${o.currentOffset ?? 'nothing'}: the group moved since the plan was made (or the plan was applied already). Make the plan again, or take currentOffset out of its entry to apply it as it is`,
            );
          return row(o, now, o.offset, false);
        });
      break;
  }
  return rows.sort(compareBucketRefs);
}

/** `table T [partition P] bucket B`, as messages name a bucket. */
function bucketName(bucket: TableBucket): string {
  return describeSelection({
    tableId: bucket.tableId,
    ...(bucket.partitionId === null ? {} : { partitionId: bucket.partitionId }),
    bucketId: bucket.bucketId,
  });
}

function row(
  bucket: TableBucket,
  currentOffset: number | null,
  newOffset: number,
  clamped: boolean,
): ResetPlanRow {
  return {
    tableId: bucket.tableId,
    partitionId: bucket.partitionId,
    bucketId: bucket.bucketId,
    currentOffset,
    newOffset,
    clamped,
  };
}

function checkOffset(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `${what} must be a safe integer >= 0, got ${value}`,
    );
}

/** A short description of a reset target, e.g. `to offset 100`. */
export function describeResetTarget(target: ResetTarget): string {
  switch (target.kind) {
    case 'to-offset':
      return `to offset ${target.offset}`;
    case 'shift-by':
      return `shift by ${target.delta}`;
    case 'from-file':
      return `from ${target.source}`;
  }
}
