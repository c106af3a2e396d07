/**
 * Table layouts: how many buckets a user table has, and in which partitions. The embedding service
 * supplies them (`setTableLayout`); they are not persisted by the coordinator, but each group
 * remembers the layouts its target assignment was computed against, so a restart does not look like
 * a layout change.
 *
 * Invariants: a normalized layout has an integer `bucketCount` in [1, BUCKET_COUNT_MAX] and either
 * `partitionIds === null` (non-partitioned) or a sorted, duplicate-free array of safe integers >= 0.
 * `BucketIndexer` numbers the buckets of a set of tables densely (0..total-1) in
 * `compareBucketRefs` order, which is what lets the assignors work on typed arrays instead of keys.
 */
import { OffsetStoreError } from '../errors/index.js';
import type { TableBucket } from '../model/index.js';
import { notAnOptionsObject } from '../util/index.js';

/** The buckets of one user table. */
export interface TableLayout {
  /** Buckets per partition (or of the table, when not partitioned): an integer in [1, BUCKET_COUNT_MAX]. */
  readonly bucketCount: number;
  /** Sorted partition ids, or `null` for a non-partitioned table. */
  readonly partitionIds: readonly number[] | null;
}

/** A layout as the embedding service supplies it. */
export interface TableLayoutInput {
  /** Buckets per partition (or of the table): an integer in [1, 2^20]. */
  readonly bucketCount: number;
  /**
   * Partition ids (safe integers >= 0, any order, duplicates ignored); omit or null for a
   * non-partitioned table.
   */
  readonly partitionIds?: readonly number[] | null;
}

/** Largest `bucketCount` accepted for one table (per partition). */
export const BUCKET_COUNT_MAX = 1 << 20;
/** Largest number of buckets one table may have across all its partitions. */
export const TABLE_BUCKETS_MAX = 1 << 24;

/** Checks and normalizes a layout; wrong types are `TypeError`, bad values `INVALID_REQUEST`. */
export function normalizeTableLayout(tableId: number, input: TableLayoutInput): TableLayout {
  if (typeof tableId !== 'number') throw new TypeError('tableId must be a number');
  if (!Number.isSafeInteger(tableId) || tableId < 0) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `tableId must be a safe integer >= 0, got ${tableId}`,
    );
  }
  if (notAnOptionsObject(input) !== undefined) throw new TypeError('layout must be an object');
  // One read per field; the partition ids are copied (one pass over the caller's array) before checking.
  const { bucketCount, partitionIds: rawPartitionIds } = input;
  if (typeof bucketCount !== 'number') throw new TypeError('layout.bucketCount must be a number');
  if (!Number.isInteger(bucketCount) || bucketCount < 1 || bucketCount > BUCKET_COUNT_MAX) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `layout.bucketCount must be an integer in [1, ${BUCKET_COUNT_MAX}], got ${bucketCount}`,
    );
  }
  if (rawPartitionIds === undefined || rawPartitionIds === null)
    return { bucketCount, partitionIds: null };
  if (!Array.isArray(rawPartitionIds)) throw new TypeError('layout.partitionIds must be an array');
  const partitionIds = [...new Set(rawPartitionIds)].sort((a, b) => a - b);
  for (const id of partitionIds) {
    if (typeof id !== 'number') throw new TypeError('layout.partitionIds must hold numbers');
    if (!Number.isSafeInteger(id) || id < 0) {
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `layout.partitionIds must hold safe integers >= 0, got ${id}`,
      );
    }
  }
  if (partitionIds.length * bucketCount > TABLE_BUCKETS_MAX) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `table ${tableId} would have more than ${TABLE_BUCKETS_MAX} buckets`,
    );
  }
  return { bucketCount, partitionIds: Object.freeze(partitionIds) };
}

/** True when two normalized layouts describe the same buckets. */
export function layoutsEqual(a: TableLayout | undefined, b: TableLayout | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.bucketCount !== b.bucketCount) return false;
  if (a.partitionIds === null || b.partitionIds === null) return a.partitionIds === b.partitionIds;
  if (a.partitionIds.length !== b.partitionIds.length) return false;
  return a.partitionIds.every((id, i) => id === b.partitionIds?.[i]);
}

/** Number of buckets of a table across its partitions. */
export function tableBucketTotal(layout: TableLayout): number {
  return layout.bucketCount * (layout.partitionIds === null ? 1 : layout.partitionIds.length);
}

/** Shared ref objects per layout object (layouts are immutable; a table's new layout is a new object). */
const layoutRefs = new WeakMap<
  TableLayout,
  { tableId: number; refs: (TableBucket | undefined)[] }
>();

/** One table's slice of a `BucketIndexer`. */
export interface IndexedTable {
  /** The user table. */
  readonly tableId: number;
  /** Its layout. */
  readonly layout: TableLayout;
  /** Index of the table's first bucket. */
  readonly base: number;
  /** Number of buckets of the table. */
  readonly count: number;
}

/**
 * Dense numbering of the buckets of several tables: table by table in id order, then partition,
 * then bucket id. `indexOf` is O(1) for non-partitioned tables and one map lookup otherwise.
 */
export class BucketIndexer {
  /** The indexed tables in tableId order. */
  readonly tables: readonly IndexedTable[];
  /** Total number of buckets. */
  readonly total: number;
  readonly #slotByTable = new Map<number, number>();
  readonly #partitionIndex = new Map<number, Map<number, number>>();

  /** Numbers the buckets of `layouts`, table by table in id order. */
  constructor(layouts: ReadonlyMap<number, TableLayout>) {
    const tableIds = [...layouts.keys()].sort((a, b) => a - b);
    const tables: IndexedTable[] = [];
    let base = 0;
    for (const tableId of tableIds) {
      const layout = layouts.get(tableId) as TableLayout;
      const count = tableBucketTotal(layout);
      this.#slotByTable.set(tableId, tables.length);
      tables.push({ tableId, layout, base, count });
      if (layout.partitionIds !== null) {
        this.#partitionIndex.set(tableId, new Map(layout.partitionIds.map((id, i) => [id, i])));
      }
      base += count;
    }
    this.tables = tables;
    this.total = base;
  }

  /** Position of a table in `tables`, or -1. */
  slotOf(tableId: number): number {
    return this.#slotByTable.get(tableId) ?? -1;
  }

  /** Index of a bucket, or -1 when it is not part of the indexed layouts. */
  indexOf(ref: TableBucket): number {
    const slot = this.#slotByTable.get(ref.tableId);
    if (slot === undefined) return -1;
    const table = this.tables[slot] as IndexedTable;
    const { bucketCount, partitionIds } = table.layout;
    if (ref.bucketId >= bucketCount) return -1;
    if (partitionIds === null) return ref.partitionId === null ? table.base + ref.bucketId : -1;
    if (ref.partitionId === null) return -1;
    const partitionIndex = this.#partitionIndex.get(ref.tableId)?.get(ref.partitionId);
    return partitionIndex === undefined
      ? -1
      : table.base + partitionIndex * bucketCount + ref.bucketId;
  }

  /**
   * The bucket at `index` of the table in `slot` (index must lie in that table's range). Refs are
   * made once per layout object and shared by every assignment computed against it.
   */
  refAt(slot: number, index: number): TableBucket {
    const table = this.tables[slot] as IndexedTable;
    let refs = layoutRefs.get(table.layout);
    if (refs === undefined || refs.tableId !== table.tableId) {
      refs = { tableId: table.tableId, refs: new Array<TableBucket | undefined>(table.count) };
      layoutRefs.set(table.layout, refs);
    }
    const offset = index - table.base;
    let ref = refs.refs[offset];
    if (ref === undefined) {
      const { bucketCount, partitionIds } = table.layout;
      ref =
        partitionIds === null
          ? Object.freeze({ tableId: table.tableId, partitionId: null, bucketId: offset })
          : Object.freeze({
              tableId: table.tableId,
              partitionId: partitionIds[Math.floor(offset / bucketCount)] as number,
              bucketId: offset % bucketCount,
            });
      refs.refs[offset] = ref;
    }
    return ref;
  }

  /** The slot of the table that holds bucket `index`. */
  slotAt(index: number): number {
    let lo = 0;
    let hi = this.tables.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.tables[mid] as IndexedTable).base <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}
