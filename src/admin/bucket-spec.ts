/**
 * How the admin tools name buckets of user tables and read offsets supplied as JSON (log-end offsets
 * for lag, offsets to reset to).
 *
 * A bucket key is `<tableId>:<bucketId>` for a non-partitioned table and
 * `<tableId>:<partitionId>:<bucketId>` for a partitioned one. An offsets document is one of:
 * - an object from bucket key to offset: `{ "1:0": 500, "2:7:3": 20 }`;
 * - an array of `{ tableId, partitionId?, bucketId, offset }` (`newOffset` or `logEndOffset` are
 *   accepted in place of `offset`, so the `--json` output of a reset plan can be edited and fed back;
 *   an entry giving more than one of them is refused);
 * - an object with such an array under `rows` or `offsets`.
 * Every number must be a safe integer >= 0; anything else is INVALID_REQUEST naming the entry. An
 * array entry may also carry `currentOffset` (a reset plan's rows do: the committed offset the plan
 * was made against, null for none, a safe integer of either sign): kept, for a reset to check that
 * the bucket has not moved since.
 */
import { OffsetStoreError } from '../errors/index.js';
import { BUCKET_ID_MAX, bucketKey, compareBucketRefs, type TableBucket } from '../model/index.js';

/** A bucket and an offset in it (a log-end offset, or an offset to reset to). */
export interface BucketOffset extends TableBucket {
  /** The offset: a log-end offset (for lag) or the offset to reset to; a safe integer >= 0. */
  offset: number;
  /**
   * A reset plan's committed offset when the plan was made (null: none), when the document gave it:
   * a reset from the document refuses the bucket if its committed offset is another now.
   */
  currentOffset?: number | null;
}

/**
 * Which buckets an admin operation applies to. Absent fields match anything; `tableId` is required
 * when `partitionId` or `bucketId` is given.
 */
export interface BucketSelection {
  /** Only buckets of this table; required when `partitionId` or `bucketId` is given. */
  tableId?: number;
  /** Only buckets of this partition (of a partitioned table). */
  partitionId?: number;
  /** Only the bucket with this id. */
  bucketId?: number;
}

/** Parses `T:B` or `T:P:B`; INVALID_REQUEST otherwise. */
export function parseBucketKey(key: string): TableBucket {
  const parts = key.split(':');
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => !/^\d+$/.test(p))) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `bucket key ${JSON.stringify(key)} is not <tableId>:<bucketId> or <tableId>:<partitionId>:<bucketId>`,
    );
  }
  const numbers = parts.map((p) => checkedNumber(Number(p), `bucket key ${key}`));
  checkedBucketId(numbers.at(-1)!, `bucket key ${key}: its bucket id`);
  return parts.length === 2
    ? { tableId: numbers[0]!, partitionId: null, bucketId: numbers[1]! }
    : { tableId: numbers[0]!, partitionId: numbers[1]!, bucketId: numbers[2]! };
}

/** True when `bucket` is one the selection names. */
export function selectionMatches(selection: BucketSelection, bucket: TableBucket): boolean {
  return (
    (selection.tableId === undefined || selection.tableId === bucket.tableId) &&
    (selection.partitionId === undefined || selection.partitionId === bucket.partitionId) &&
    (selection.bucketId === undefined || selection.bucketId === bucket.bucketId)
  );
}

/** Checks the shape of a selection: table required for partition/bucket; ids safe integers >= 0. */
export function validateSelection(selection: BucketSelection): void {
  for (const field of ['tableId', 'partitionId', 'bucketId'] as const) {
    const value = selection[field];
    if (value !== undefined) checkedNumber(value, field);
  }
  if (selection.bucketId !== undefined) checkedBucketId(selection.bucketId, 'bucketId');
  if (
    selection.tableId === undefined &&
    (selection.partitionId !== undefined || selection.bucketId !== undefined)
  ) {
    throw new OffsetStoreError('INVALID_REQUEST', 'a partition or bucket selection needs a table');
  }
}

/** Describes a selection for messages, e.g. `table 1 bucket 3`, or `every bucket`. */
export function describeSelection(selection: BucketSelection): string {
  if (selection.tableId === undefined) return 'every bucket';
  const partition =
    selection.partitionId === undefined ? '' : ` partition ${selection.partitionId}`;
  const bucket = selection.bucketId === undefined ? '' : ` bucket ${selection.bucketId}`;
  return `table ${selection.tableId}${partition}${bucket}`;
}

/** Parses an offsets document (see the module header) into entries, one per bucket. */
export function parseBucketOffsets(document: unknown, source: string): BucketOffset[] {
  let entries: BucketOffset[];
  if (Array.isArray(document)) {
    entries = document.map((item, i) => entryFromObject(item, `${source}[${i}]`));
  } else if (document !== null && typeof document === 'object') {
    const nested =
      (document as Record<string, unknown>).rows ?? (document as Record<string, unknown>).offsets;
    if (Array.isArray(nested)) return parseBucketOffsets(nested, source);
    entries = Object.entries(document as Record<string, unknown>).map(([key, value]) => ({
      ...parseBucketKey(key),
      offset: checkedNumber(value, `${source}["${key}"]`),
    }));
  } else {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `${source} must be a JSON object {"<tableId>:<bucketId>": offset} or an array of {tableId, partitionId, bucketId, offset}`,
    );
  }
  const seen = new Set<string>();
  for (const entry of entries) {
    const key = bucketKey(entry);
    if (seen.has(key))
      throw new OffsetStoreError('INVALID_REQUEST', `${source} names bucket ${key} twice`);
    seen.add(key);
  }
  return entries.sort(compareBucketRefs);
}

/** The names an entry's offset may go by (see the module header). */
const OFFSET_FIELDS = ['offset', 'newOffset', 'logEndOffset'] as const;

function entryFromObject(item: unknown, where: string): BucketOffset {
  if (item === null || typeof item !== 'object')
    throw new OffsetStoreError('INVALID_REQUEST', `${where} must be an object`);
  const o = item as Record<string, unknown>;
  // null is no value (groups describe --json writes a log end it does not know as null).
  const given = OFFSET_FIELDS.filter((field) => o[field] !== undefined && o[field] !== null);
  if (given.length > 1)
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `${where} gives ${given.join(' and ')}: give one (they are the same field under other names)`,
    );
  const value = o[given[0] ?? 'offset'];
  const entry: BucketOffset = {
    tableId: checkedNumber(o.tableId, `${where}.tableId`),
    partitionId:
      o.partitionId === undefined || o.partitionId === null
        ? null
        : checkedNumber(o.partitionId, `${where}.partitionId`),
    bucketId: checkedBucketId(checkedNumber(o.bucketId, `${where}.bucketId`), `${where}.bucketId`),
    offset: checkedNumber(value, `${where}.offset`),
  };
  const current = o.currentOffset;
  if (current !== undefined) {
    // Committed offsets may be negative (Kafka's sentinels -1 and -2).
    if (current !== null && (typeof current !== 'number' || !Number.isSafeInteger(current)))
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `${where}.currentOffset must be a safe integer or null (the committed offset the plan was made against), got ${typeof current === 'number' ? String(current) : JSON.stringify(current)}`,
      );
    entry.currentOffset = current;
  }
  return entry;
}

/** A bucket id above BUCKET_ID_MAX (an int32 on disk) is INVALID_REQUEST, as a commit of it is. */
function checkedBucketId(value: number, where: string): number {
  if (value > BUCKET_ID_MAX)
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `${where} must be at most ${BUCKET_ID_MAX} (an int32), got ${value}`,
    );
  return value;
}

function checkedNumber(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      // String(): JSON writes a number it cannot hold (1e400 parsed as Infinity) as null.
      `${where} must be a safe integer >= 0, got ${typeof value === 'number' ? String(value) : JSON.stringify(value)}`,
    );
  }
  return value;
}
