/**
 * BucketSet: an immutable set of normalized buckets.
 *
 * Assignments are compared, intersected and subtracted on every heartbeat, and a rebalance of a
 * large group builds and probes sets of thousands of buckets, so membership is a bitset per table
 * partition spanning the set's lowest to highest bucket id (a Set of ids for a partition whose span
 * would exceed SPAN_BITS_MAX) — no key strings, no hashing, and about one bit per bucket of span.
 * The refs themselves are kept in an array in insertion order for iteration.
 * Immutability lets one set be shared by a member, the record that produced it and a replayed copy
 * of the state without copying.
 */
import { compareBucketRefs, type TableBucket } from '../model/index.js';
import { partitionKey, type PartitionKey } from './bucket-map.js';

/** Widest bucket-id span one partition of a set covers with a bitset. */
const SPAN_BITS_MAX = 1 << 22;

interface PartitionBits {
  readonly min: number;
  readonly bits: Uint32Array | null;
  readonly sparse: Set<number> | null;
}

/** An immutable set of buckets. */
export class BucketSet implements Iterable<TableBucket> {
  /**
   * The empty set. Created lazily: a static field initialized with `new BucketSet(...)` is compiled
   * by tsc (this class has a computed `[Symbol.iterator]` member) into an alias of the class that is
   * not yet assigned while the class body runs, and dist/ fails to load (test/build catches it).
   */
  static get EMPTY(): BucketSet {
    return (BucketSet.#empty ??= new BucketSet(new Map(), []));
  }

  static #empty: BucketSet | undefined;

  readonly #partitions: ReadonlyMap<PartitionKey, PartitionBits>;
  readonly #refs: readonly TableBucket[];
  #lastKey: PartitionKey | undefined = undefined;
  #lastBits: PartitionBits | undefined = undefined;

  private constructor(
    partitions: ReadonlyMap<PartitionKey, PartitionBits>,
    refs: readonly TableBucket[],
  ) {
    this.#partitions = partitions;
    this.#refs = refs;
  }

  /** A set of the given normalized refs (duplicates collapse; the first ref of a bucket is kept). */
  static of(refs: Iterable<TableBucket>): BucketSet {
    const all = Array.isArray(refs) ? (refs as readonly TableBucket[]) : [...refs];
    if (all.length === 0) return BucketSet.EMPTY;
    // Pass 1: the span of bucket ids per partition.
    const spans = new Map<PartitionKey, { min: number; max: number }>();
    let lastKey: PartitionKey | undefined;
    let lastSpan: { min: number; max: number } | undefined;
    for (const ref of all) {
      const key = partitionKey(ref.tableId, ref.partitionId);
      if (key !== lastKey) {
        lastKey = key;
        lastSpan = spans.get(key);
        if (lastSpan === undefined) {
          lastSpan = { min: ref.bucketId, max: ref.bucketId };
          spans.set(key, lastSpan);
        }
      }
      const span = lastSpan as { min: number; max: number };
      if (ref.bucketId < span.min) span.min = ref.bucketId;
      if (ref.bucketId > span.max) span.max = ref.bucketId;
    }
    const partitions = new Map<PartitionKey, PartitionBits>();
    for (const [key, { min, max }] of spans) {
      const width = max - min + 1;
      partitions.set(
        key,
        width <= SPAN_BITS_MAX
          ? { min, bits: new Uint32Array((width + 31) >>> 5), sparse: null }
          : { min, bits: null, sparse: new Set() },
      );
    }
    // Pass 2: set bits, keeping the first ref of each bucket.
    const unique: TableBucket[] = [];
    lastKey = undefined;
    let part: PartitionBits | undefined;
    for (const ref of all) {
      const key = partitionKey(ref.tableId, ref.partitionId);
      if (key !== lastKey) {
        lastKey = key;
        part = partitions.get(key);
      }
      if (testAndSet(part as PartitionBits, ref.bucketId)) unique.push(ref);
    }
    return new BucketSet(partitions, unique);
  }

  /** Number of buckets. */
  get size(): number {
    return this.#refs.length;
  }

  /** True when the set holds the bucket `ref` names. */
  has(ref: TableBucket): boolean {
    if (this.#refs.length === 0) return false;
    const key = partitionKey(ref.tableId, ref.partitionId);
    let part: PartitionBits | undefined;
    if (key === this.#lastKey) part = this.#lastBits;
    else {
      part = this.#partitions.get(key);
      this.#lastKey = key;
      this.#lastBits = part;
    }
    if (part === undefined) return false;
    if (part.bits === null) return part.sparse?.has(ref.bucketId) === true;
    const offset = ref.bucketId - part.min;
    if (offset < 0 || offset >= part.bits.length * 32) return false;
    return ((part.bits[offset >>> 5] as number) & (1 << (offset & 31))) !== 0;
  }

  /**
   * The buckets in insertion order (not sorted: use `toArray` for sorted), as the very ref objects the
   * set was built from.
   */
  [Symbol.iterator](): IterableIterator<TableBucket> {
    return this.#refs[Symbol.iterator]();
  }

  /**
   * True when `refs` are this set's very ref objects in iteration order. A cheap test (no lookups)
   * that lets an assignor's unchanged output for a member reuse the member's current set.
   */
  isSameSequence(refs: readonly TableBucket[]): boolean {
    const own = this.#refs;
    if (refs.length !== own.length) return false;
    for (let i = 0; i < refs.length; i++) if (refs[i] !== own[i]) return false;
    return true;
  }

  /** The buckets as a new array in `compareBucketRefs` order. */
  toArray(): TableBucket[] {
    return [...this.#refs].sort(compareBucketRefs);
  }

  /** True when both sets hold the same buckets. */
  equals(other: BucketSet): boolean {
    return other === this || (other.size === this.size && this.isSubsetOf(other));
  }

  /** True when every bucket of this set is in `other`. */
  isSubsetOf(other: BucketSet): boolean {
    if (this.size > other.size) return false;
    for (const ref of this.#refs) if (!other.has(ref)) return false;
    return true;
  }

  /** True when the sets share at least one bucket. */
  intersects(other: BucketSet): boolean {
    const [small, large] = this.size <= other.size ? [this, other] : [other, this];
    for (const ref of small) if (large.has(ref)) return true;
    return false;
  }

  /** Buckets in both sets. */
  intersect(other: BucketSet): BucketSet {
    if (other === this) return this;
    return this.#filter((ref) => other.has(ref));
  }

  /** Buckets of this set that are not in `other`. */
  difference(other: BucketSet): BucketSet {
    if (other.size === 0) return this;
    return this.#filter((ref) => !other.has(ref));
  }

  /** Buckets of this set in the tables `tableIds` names (this set itself when that is all of them). */
  inTables(tableIds: readonly number[]): BucketSet {
    return this.#filter((ref) => tableIds.includes(ref.tableId));
  }

  /** Buckets in either set. */
  union(other: BucketSet): BucketSet {
    if (other.size === 0) return this;
    if (this.size === 0) return other;
    const added = other.#refs.filter((ref) => !this.has(ref));
    return added.length === 0 ? this : BucketSet.of([...this.#refs, ...added]);
  }

  #filter(keep: (ref: TableBucket) => boolean): BucketSet {
    const kept = this.#refs.filter(keep);
    if (kept.length === this.size) return this;
    return BucketSet.of(kept);
  }
}

/** Sets the bit of `bucketId`; false when it was already set. */
function testAndSet(part: PartitionBits, bucketId: number): boolean {
  if (part.bits === null) {
    const sparse = part.sparse as Set<number>;
    if (sparse.has(bucketId)) return false;
    sparse.add(bucketId);
    return true;
  }
  const offset = bucketId - part.min;
  const word = offset >>> 5;
  const mask = 1 << (offset & 31);
  const value = part.bits[word] as number;
  if ((value & mask) !== 0) return false;
  part.bits[word] = value | mask;
  return true;
}
