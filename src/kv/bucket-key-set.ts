/**
 * A set of bucket keys (tableId, partitionId, bucketId) on typed arrays: duplicate detection in a
 * commit request and the pending keys of a group, without building a string per key.
 * Open addressing with linear probing; grows at load factor 0.5; `clear()` keeps the capacity.
 */
import { hashBucketKey } from './group-offsets.js';

/** A set of (tableId, partitionId ?? -1, bucketId) triples. */
export class BucketKeySet {
  #keys: Float64Array;
  #slots: Int32Array;
  #size = 0;

  /** `capacity`: keys expected, which sizes the table so that many fit without growing. */
  constructor(capacity = 16) {
    let slotCount = 16;
    while (slotCount < capacity * 2) slotCount *= 2;
    this.#slots = new Int32Array(slotCount);
    this.#keys = new Float64Array((slotCount / 2) * 3);
  }

  /** Number of keys. */
  get size(): number {
    return this.#size;
  }

  /** Adds a key; returns false when it was already present. */
  add(tableId: number, partitionId: number | null, bucketId: number): boolean {
    const partition = partitionId ?? -1;
    if ((this.#size + 1) * 2 > this.#slots.length) this.#grow();
    const slots = this.#slots;
    const keys = this.#keys;
    const mask = slots.length - 1;
    for (let s = hashBucketKey(tableId, partition, bucketId) & mask; ; s = (s + 1) & mask) {
      const slot = slots[s]!;
      if (slot === 0) {
        const p = this.#size * 3;
        keys[p] = tableId;
        keys[p + 1] = partition;
        keys[p + 2] = bucketId;
        slots[s] = ++this.#size;
        return true;
      }
      const p = (slot - 1) * 3;
      if (keys[p + 2] === bucketId && keys[p] === tableId && keys[p + 1] === partition)
        return false;
    }
  }

  /** True when the key is present. */
  has(tableId: number, partitionId: number | null, bucketId: number): boolean {
    const partition = partitionId ?? -1;
    const slots = this.#slots;
    const keys = this.#keys;
    const mask = slots.length - 1;
    for (let s = hashBucketKey(tableId, partition, bucketId) & mask; ; s = (s + 1) & mask) {
      const slot = slots[s]!;
      if (slot === 0) return false;
      const p = (slot - 1) * 3;
      if (keys[p + 2] === bucketId && keys[p] === tableId && keys[p + 1] === partition) return true;
    }
  }

  /** Removes every key, keeping the capacity. */
  clear(): void {
    if (this.#size === 0) return;
    this.#slots.fill(0);
    this.#size = 0;
  }

  #grow(): void {
    const keys = this.#keys;
    const size = this.#size;
    this.#slots = new Int32Array(this.#slots.length * 2);
    this.#keys = new Float64Array((this.#slots.length / 2) * 3);
    this.#size = 0;
    for (let i = 0; i < size; i++) this.add(keys[i * 3]!, keys[i * 3 + 1]!, keys[i * 3 + 2]!);
  }
}
