/**
 * BucketSet: an immutable set of normalized buckets, keyed by `bucketKey`.
 *
 * Assignments are compared, intersected and subtracted on every heartbeat, so the set keeps a
 * key -> ref map and never re-derives keys of refs it already holds. Immutability lets one set be
 * shared by a member, a record that produced it and a replayed copy of the state without copying.
 */
import { bucketKey, compareBucketRefs, type BucketRef } from './bucket-ref.js';

/** An immutable set of buckets. */
export class BucketSet implements Iterable<BucketRef> {
  /**
   * The empty set. (Created lazily: a static field initialized with `new BucketSet` is compiled by
   * tsc into an alias of the class that is not yet assigned while the class body runs.)
   */
  static get EMPTY(): BucketSet {
    return (BucketSet.#empty ??= new BucketSet(new Map()));
  }

  static #empty: BucketSet | undefined;

  readonly #byKey: ReadonlyMap<string, BucketRef>;
  #refs: readonly BucketRef[] | null = null;

  private constructor(byKey: ReadonlyMap<string, BucketRef>) {
    this.#byKey = byKey;
  }

  /** A set of the given normalized refs (duplicates collapse). */
  static of(refs: Iterable<BucketRef>): BucketSet {
    const byKey = new Map<string, BucketRef>();
    for (const ref of refs) byKey.set(bucketKey(ref), ref);
    return byKey.size === 0 ? BucketSet.EMPTY : new BucketSet(byKey);
  }

  /** Number of buckets. */
  get size(): number {
    return this.#byKey.size;
  }

  /** True when the set holds the bucket with this key. */
  hasKey(key: string): boolean {
    return this.#byKey.has(key);
  }

  /** True when the set holds `ref`. */
  has(ref: BucketRef): boolean {
    return this.#byKey.has(bucketKey(ref));
  }

  /** The keys of the buckets, in insertion order. */
  keys(): IterableIterator<string> {
    return this.#byKey.keys();
  }

  /** Key/ref pairs, in insertion order. */
  entries(): IterableIterator<[string, BucketRef]> {
    return this.#byKey.entries();
  }

  [Symbol.iterator](): IterableIterator<BucketRef> {
    return this.#byKey.values();
  }

  /**
   * True when `refs` are this set's very ref objects in insertion order. A cheap test (no keys are
   * computed) that lets an assignor's unchanged output for a member reuse the member's current set.
   */
  isSameSequence(refs: readonly BucketRef[]): boolean {
    if (refs.length !== this.#byKey.size) return false;
    this.#refs ??= [...this.#byKey.values()];
    const own = this.#refs;
    for (let i = 0; i < refs.length; i++) if (refs[i] !== own[i]) return false;
    return true;
  }

  /** The buckets as a new array in `compareBucketRefs` order. */
  toArray(): BucketRef[] {
    return [...this.#byKey.values()].sort(compareBucketRefs);
  }

  /** True when both sets hold the same buckets. */
  equals(other: BucketSet): boolean {
    if (other === this) return true;
    if (other.size !== this.size) return false;
    for (const key of this.#byKey.keys()) if (!other.hasKey(key)) return false;
    return true;
  }

  /** True when every bucket of this set is in `other`. */
  isSubsetOf(other: BucketSet): boolean {
    if (this.size > other.size) return false;
    for (const key of this.#byKey.keys()) if (!other.hasKey(key)) return false;
    return true;
  }

  /** True when the sets share at least one bucket. */
  intersects(other: BucketSet): boolean {
    const [small, large] = this.size <= other.size ? [this, other] : [other, this];
    for (const key of small.keys()) if (large.hasKey(key)) return true;
    return false;
  }

  /** Buckets in both sets. */
  intersect(other: BucketSet): BucketSet {
    if (other === this) return this;
    return this.#filter((key) => other.hasKey(key));
  }

  /** Buckets of this set that are not in `other`. */
  difference(other: BucketSet): BucketSet {
    if (other.size === 0) return this;
    return this.#filter((key) => !other.hasKey(key));
  }

  /** Buckets in either set. */
  union(other: BucketSet): BucketSet {
    if (other.size === 0) return this;
    if (this.size === 0) return other;
    const byKey = new Map(this.#byKey);
    for (const [key, ref] of other.entries()) byKey.set(key, ref);
    return byKey.size === this.size ? this : new BucketSet(byKey);
  }

  #filter(keep: (key: string) => boolean): BucketSet {
    const byKey = new Map<string, BucketRef>();
    for (const [key, ref] of this.#byKey) if (keep(key)) byKey.set(key, ref);
    if (byKey.size === this.size) return this;
    return byKey.size === 0 ? BucketSet.EMPTY : new BucketSet(byKey);
  }
}
