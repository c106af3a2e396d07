/**
 * BucketMap: a mutable map keyed by bucket, without building a key string per bucket.
 *
 * Two levels: the (tableId, partitionId) pair selects a partition slot, and within it bucket ids
 * index a dense array (ids below DENSE_BUCKET_LIMIT; larger ids fall back to a Map). The pair is
 * packed into a small integer when tableId < 2^15 and partitionId < 2^15 - 1 (every realistic layout)
 * and spelled as a string otherwise. A lookup is one integer-keyed Map probe (skipped when the
 * previous lookup hit the same partition) and an array index — the difference that matters when a
 * rebalance touches every bucket of a 10,000-bucket group. Memory is O(highest bucket id) per
 * partition, which is why this backs per-group indexes (bucket owners), not per-member sets.
 */
import type { TableBucket } from '../model/index.js';

/** Identity of a (tableId, partitionId) pair; see `partitionKey`. */
export type PartitionKey = number | string;

const TABLE_PACKED_LIMIT = 1 << 15;
const PARTITION_PACKED_LIMIT = (1 << 15) - 1;
/** Bucket ids below this are kept in arrays; above, in a Map. */
export const DENSE_BUCKET_LIMIT = 1 << 16;

/** A small integer (or, for huge ids, a string) naming a table partition. */
export function partitionKey(tableId: number, partitionId: number | null): PartitionKey {
  if (
    tableId < TABLE_PACKED_LIMIT &&
    (partitionId === null || partitionId < PARTITION_PACKED_LIMIT)
  ) {
    return tableId * TABLE_PACKED_LIMIT + (partitionId === null ? 0 : partitionId + 1);
  }
  return `${tableId}:${partitionId ?? ''}`;
}

interface Slot<V> {
  dense: (V | undefined)[];
  sparse: Map<number, V> | null;
  size: number;
}

/** A mutable map from bucket to V; see the module header. */
export class BucketMap<V> {
  readonly #slots = new Map<PartitionKey, Slot<V>>();
  #size = 0;
  #lastKey: PartitionKey | undefined = undefined;
  #lastSlot: Slot<V> | undefined = undefined;

  /** Number of entries. */
  get size(): number {
    return this.#size;
  }

  /** The value of a bucket, or undefined; builds no key string. */
  get(ref: TableBucket): V | undefined {
    const slot = this.#slot(ref, false);
    if (slot === undefined) return undefined;
    return ref.bucketId < DENSE_BUCKET_LIMIT
      ? slot.dense[ref.bucketId]
      : slot.sparse?.get(ref.bucketId);
  }

  /** True when the bucket has a value. */
  has(ref: TableBucket): boolean {
    return this.get(ref) !== undefined;
  }

  /** Sets the value of a bucket; `value` must not be undefined. */
  set(ref: TableBucket, value: V): void {
    const slot = this.#slot(ref, true) as Slot<V>;
    const id = ref.bucketId;
    let had: boolean;
    if (id < DENSE_BUCKET_LIMIT) {
      if (id >= slot.dense.length) slot.dense = grow(slot.dense, id + 1);
      had = slot.dense[id] !== undefined;
      slot.dense[id] = value;
    } else {
      slot.sparse ??= new Map();
      had = slot.sparse.has(id);
      slot.sparse.set(id, value);
    }
    if (!had) {
      slot.size++;
      this.#size++;
    }
  }

  /** Removes a bucket's value; true when it had one. */
  delete(ref: TableBucket): boolean {
    const slot = this.#slot(ref, false);
    if (slot === undefined) return false;
    const id = ref.bucketId;
    if (id < DENSE_BUCKET_LIMIT) {
      if (slot.dense[id] === undefined) return false;
      slot.dense[id] = undefined;
    } else if (slot.sparse?.delete(id) !== true) {
      return false;
    }
    this.#size--;
    if (--slot.size === 0) {
      this.#slots.delete(partitionKey(ref.tableId, ref.partitionId));
      this.#lastKey = undefined;
      this.#lastSlot = undefined;
    }
    return true;
  }

  #slot(ref: TableBucket, create: boolean): Slot<V> | undefined {
    const key = partitionKey(ref.tableId, ref.partitionId);
    if (key === this.#lastKey) return this.#lastSlot;
    let slot = this.#slots.get(key);
    if (slot === undefined) {
      if (!create) return undefined;
      slot = { dense: [], sparse: null, size: 0 };
      this.#slots.set(key, slot);
    }
    this.#lastKey = key;
    this.#lastSlot = slot;
    return slot;
  }
}

function grow<V>(dense: (V | undefined)[], minLength: number): (V | undefined)[] {
  const next = new Array<V | undefined>(
    Math.min(DENSE_BUCKET_LIMIT, Math.max(minLength, dense.length * 2, 16)),
  );
  for (let i = 0; i < dense.length; i++) next[i] = dense[i];
  return next;
}
