/**
 * The committed offsets of one group: a compact open-addressing hash table keyed by
 * (tableId, partitionId, bucketId), built on arrays of unboxed doubles so that a point lookup builds
 * no strings and a live offset costs ~30-60 bytes of heap instead of the ~200 of a Map of objects.
 *
 * Entries are numbered densely in [0, size); a delete moves the last entry into the hole. Metadata
 * strings, usually empty, live in a side Map keyed by entry index.
 *
 * Dense prefix: a group usually commits the buckets of a table in bucket order (a consumer of a
 * table with N buckets commits 0..N-1; a Kafka consumer commits topic after topic, each partition in
 * order), so its entries form runs: a run is the buckets 0..n-1 of one (table, partition) under
 * consecutive entry indices. `#denseCount` is the length of the prefix of entries made of such runs,
 * at most RUNS_MAX of them. The first run starts at entry 0, its table and partition in
 * `#denseTable`/`#densePartition` (most groups have one run, and it costs no array); `#laterRuns`
 * holds each later run's (tableId, partitionId, first entry index), in entry order. A run ends where
 * the next begins, the last at #denseCount. An entry's key in the prefix is therefore known from its
 * position and not stored: the prefix lives in `#dense`, DENSE_STRIDE doubles per entry (offset,
 * leaderEpoch, commitTimestampMs), and a key in it is found by comparing with each run's table and
 * partition, then at the run's start plus its bucket id. The
 * other entries, [#denseCount, size), live in `#sparse`, STRIDE doubles per entry (tableId,
 * partitionId (-1 = null), bucketId, offset, leaderEpoch, commitTimestampMs), entry i at
 * i - #denseCount. An insert extends the prefix while there are no sparse entries: it extends the
 * last run with that run's next bucket, or starts a run with bucket 0 of another (table, partition).
 * A (table, partition) has at most one run (a run holds its bucket 0). A delete inside the prefix
 * shortens it to the hole (the runs after it end), moving the entries after the hole to the sparse
 * part under the same indices (the last entry filling the hole, as everywhere).
 *
 * Re-layout: the members of a group commit their own buckets, in no agreed order (the member of
 * buckets 4-7 may commit before the member of 0-3), so the prefix misses entries that form runs once
 * every bucket is in. Once there are RELAYOUT_MIN sparse entries and the inserts since the last
 * look number RELAYOUT_MIN and a quarter of the entries, the entries are re-ordered: the longest runs
 * of in-order buckets (sorted by key) first, the rest after, which is adopted if it makes the prefix
 * longer. A look costs O(n log n) and comes after n / 4 inserts, so an insert pays O(log n) for it
 * on average however the group's commits and deletes go (a delete inside the prefix does not bring
 * one on); the insert that brings one pays it all, so groups of more than RELAYOUT_SIZE_MAX entries
 * are never re-laid out (their runs come from in-order inserts only). Entry indices are positions,
 * not names: a re-layout, like a delete, moves entries; nothing holds an index across a change of
 * the table.
 *
 * Sparse entries are scanned linearly while they are at most LINEAR_SCAN_MAX; beyond that `#slots`
 * indexes every entry (linear probing, power-of-two capacity, load factor <= 0.75), holding entry
 * index + 1 (0 = empty), and stays until they fall to half of LINEAR_SCAN_MAX. Deletion in the slot
 * table uses backward-shift, so there are no tombstone slots. A group that is all dense prefix has
 * no slot table and no sparse array.
 */

const STRIDE = 6;
const DENSE_STRIDE = 3;
const F_TABLE = 0;
const F_PARTITION = 1;
const F_BUCKET = 2;
const F_OFFSET = 3;
const F_EPOCH = 4;
const F_TIMESTAMP = 5;
/** Where a dense entry's values are: its offset, leader epoch and commit time (F_OFFSET.. less 3). */
const DENSE_SHIFT = F_OFFSET;
const LINEAR_SCAN_MAX = 16;
/** Most runs in a dense prefix: a lookup compares with each run's table and partition. */
const RUNS_MAX = 32;
/** Doubles per run in `#laterRuns`: tableId, partitionId (-1 = null), first entry index. */
const RUN_STRIDE = 3;
/** Sparse entries, and inserts since the last look, before a re-layout is considered. */
const RELAYOUT_MIN = 4;
/**
 * Entries above which a group is never re-laid out: a look sorts every entry within one commit (a
 * few hundred microseconds at this size; a second at 1M), and the memory it saves matters for the
 * many small and middling groups, not for the rare huge one.
 */
const RELAYOUT_SIZE_MAX = 4096;
const TWO_POW_32 = 4294967296;

/**
 * A zeroed entry array. A plain array of doubles (not a Float64Array): V8 keeps its elements
 * unboxed in the heap, and a small group then costs ~150 bytes less than with a typed array and
 * its separately allocated backing store.
 */
function newEntries(length: number): number[] {
  const entries = new Array<number>(Math.max(1, length)).fill(0);
  entries[0] = 0.5; // make the elements kind double from the start (no later transition)
  entries[0] = 0;
  return entries;
}

/** A committed offset as the API returns it. */
export interface CommittedOffsetValue {
  /** The user table. */
  tableId: number;
  /** The partition, or null for a non-partitioned table. */
  partitionId: number | null;
  /** The bucket. */
  bucketId: number;
  /** The committed offset: the next offset the group will read in the bucket. */
  offset: number;
  /** The leader epoch committed with it, -1 when unknown. */
  leaderEpoch: number;
  /** The metadata committed with it ('' when none). */
  metadata: string;
  /** When it was committed (the store clock), ms since the epoch; retention counts from here. */
  commitTimestampMs: number;
}

/**
 * The object a fetch returns for a committed offset. Built by a constructor, not an object literal:
 * V8 tracks object literals per allocation site and, once a GC finds many of them alive, starts
 * allocating that site's objects straight in old space ("pretenuring"), which made every later
 * fetch 10-20x slower; objects made by `new` of a class are not pretenured that way.
 */
export class CommittedOffsetRecord implements CommittedOffsetValue {
  tableId: number;
  partitionId: number | null;
  bucketId: number;
  offset: number;
  leaderEpoch: number;
  metadata: string;
  commitTimestampMs: number;

  constructor(
    tableId: number,
    partitionId: number | null,
    bucketId: number,
    offset: number,
    leaderEpoch: number,
    metadata: string,
    commitTimestampMs: number,
  ) {
    this.tableId = tableId;
    this.partitionId = partitionId;
    this.bucketId = bucketId;
    this.offset = offset;
    this.leaderEpoch = leaderEpoch;
    this.metadata = metadata;
    this.commitTimestampMs = commitTimestampMs;
  }
}

/**
 * The hash's seed, drawn once per process: with a fixed one, keys chosen to share a hash (one
 * bucket id per table id, solved for) made every insert of a commit probe past all the others, and
 * a commit of 100,000 such offsets took tens of seconds of the event loop (and its replay too). The
 * tables iterate their entries in insertion order, never by slot, so nothing observable depends on it.
 */
const HASH_SEED = crypto.getRandomValues(new Uint32Array(1))[0]! | 0;

/** Hash of a bucket key (partitionId -1 for null), shared by the typed-array tables of this folder. */
export function hashBucketKey(tableId: number, partitionId: number, bucketId: number): number {
  let h = Math.imul(HASH_SEED ^ (tableId | 0) ^ ((tableId / TWO_POW_32) | 0), 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 16) ^ (partitionId | 0) ^ ((partitionId / TWO_POW_32) | 0), 0x85ebca77);
  h = Math.imul(h ^ (h >>> 13) ^ bucketId, 0xc2b2ae3d);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  return h ^ (h >>> 13);
}

/** One group's committed offsets. */
export class GroupOffsets {
  /**
   * Set once the owning state dropped this table (the group lost its last offset, or a restore
   * replaced it): a reference kept elsewhere (the store's fetch cache) must then look the group up again.
   */
  detached = false;
  #size = 0;
  #denseCount = 0;
  /** The first run's table and partition (-1 = null), when #denseCount > 0. */
  #denseTable = 0;
  #densePartition = 0;
  /** Where the first run ends: `#laterRuns[2]`, or #denseCount without later runs (0: no run). */
  #firstRunEnd = 0;
  /** The runs after the first, RUN_STRIDE doubles each (tableId, partitionId, first entry). */
  #laterRuns: number[] | undefined;
  /** Entries allocated by whichever part holds the first entry (the other starts small). */
  #capacityHint: number;
  /** The dense prefix's values, DENSE_STRIDE per entry; undefined until it has an entry. */
  #dense: number[] | undefined;
  /** The other entries, STRIDE per entry; undefined until there is one. */
  #sparse: number[] | undefined;
  #slots: Int32Array | undefined;
  #metadata: Map<number, string> | undefined;
  /** Inserts since the layout was last looked at (see the module header). */
  #insertedSinceLayout = 0;

  /** `capacity`: entries to allocate room for at first (the table grows as needed). */
  constructor(capacity = 2) {
    this.#capacityHint = Math.max(1, capacity);
  }

  /** Number of committed offsets. */
  get size(): number {
    return this.#size;
  }

  /** Index of the entry for the key, or -1. */
  find(tableId: number, partitionId: number | null, bucketId: number): number {
    const partition = partitionId ?? -1;
    const dense = this.#denseCount;
    if (
      bucketId < this.#firstRunEnd &&
      tableId === this.#denseTable &&
      partition === this.#densePartition
    )
      return bucketId;
    const later = this.#laterRuns;
    if (later !== undefined) {
      // The first run's key is in none of them: a (table, partition) has one run.
      for (let r = 0; r < later.length; r += RUN_STRIDE) {
        if (later[r] === tableId && later[r + 1] === partition) {
          const i = later[r + 2]! + bucketId;
          if (i < (r + RUN_STRIDE < later.length ? later[r + RUN_STRIDE + 2]! : dense)) return i;
          break;
        }
      }
    }
    const e = this.#sparse;
    if (e === undefined) return -1;
    const slots = this.#slots;
    if (slots === undefined) {
      for (let i = dense, p = 0; i < this.#size; i++, p += STRIDE) {
        if (
          e[p + F_BUCKET] === bucketId &&
          e[p + F_TABLE] === tableId &&
          e[p + F_PARTITION] === partition
        )
          return i;
      }
      return -1;
    }
    const mask = slots.length - 1;
    for (let s = hashBucketKey(tableId, partition, bucketId) & mask; ; s = (s + 1) & mask) {
      const slot = slots[s]!;
      if (slot === 0) return -1;
      // A slot of a dense entry never matches here: its key would have been found above.
      if (slot <= dense) continue;
      const p = (slot - 1 - dense) * STRIDE;
      if (
        e[p + F_BUCKET] === bucketId &&
        e[p + F_TABLE] === tableId &&
        e[p + F_PARTITION] === partition
      )
        return slot - 1;
    }
  }

  /** Field `field` (F_*) of entry `i`, wherever it lives. */
  #field(i: number, field: number): number {
    const dense = this.#denseCount;
    if (i >= dense) return this.#sparse![(i - dense) * STRIDE + field]!;
    if (field >= DENSE_SHIFT) return this.#dense![i * DENSE_STRIDE + field - DENSE_SHIFT]!;
    if (i >= this.#firstRunEnd) {
      const later = this.#laterRuns!;
      const r = this.#laterRunOf(i);
      return field === F_BUCKET ? i - later[r + 2]! : later[r + field]!;
    }
    return field === F_BUCKET ? i : field === F_TABLE ? this.#denseTable : this.#densePartition;
  }

  /** Where in `#laterRuns` the run holding dense entry `i` is (`i` past the first run's end). */
  #laterRunOf(i: number): number {
    const later = this.#laterRuns!;
    let r = later.length - RUN_STRIDE;
    while (later[r + 2]! > i) r -= RUN_STRIDE;
    return r;
  }

  /** The committed offset at entry `i` (from `find` or iteration), as a fresh object. */
  valueAt(i: number): CommittedOffsetValue {
    const metadata = this.#metadata?.get(i) ?? '';
    const dense = this.#denseCount;
    if (i < dense) {
      const d = this.#dense!;
      const q = i * DENSE_STRIDE;
      let table = this.#denseTable;
      let partition = this.#densePartition;
      let bucket = i;
      if (i >= this.#firstRunEnd) {
        // In a later run (the prefix goes past the first only when there are some).
        const later = this.#laterRuns!;
        const r = this.#laterRunOf(i);
        table = later[r]!;
        partition = later[r + 1]!;
        bucket = i - later[r + 2]!;
      }
      return new CommittedOffsetRecord(
        table,
        partition === -1 ? null : partition,
        bucket,
        d[q]!,
        d[q + 1]!,
        metadata,
        d[q + 2]!,
      );
    }
    const e = this.#sparse!;
    const p = (i - dense) * STRIDE;
    const partition = e[p + F_PARTITION]!;
    return new CommittedOffsetRecord(
      e[p + F_TABLE]!,
      partition === -1 ? null : partition,
      e[p + F_BUCKET]!,
      e[p + F_OFFSET]!,
      e[p + F_EPOCH]!,
      metadata,
      e[p + F_TIMESTAMP]!,
    );
  }

  /** Commit timestamp of entry `i`. */
  timestampAt(i: number): number {
    return this.#field(i, F_TIMESTAMP);
  }

  /** Table id of entry `i`. */
  tableIdAt(i: number): number {
    return this.#field(i, F_TABLE);
  }

  /** Inserts or overwrites the committed offset of a key. */
  set(
    tableId: number,
    partitionId: number | null,
    bucketId: number,
    offset: number,
    leaderEpoch: number,
    commitTimestampMs: number,
    metadata: string,
  ): void {
    let i = this.find(tableId, partitionId, bucketId);
    const inserted = i < 0;
    if (inserted) i = this.#insert(tableId, partitionId ?? -1, bucketId);
    const dense = this.#denseCount;
    if (i < dense) {
      const d = this.#dense!;
      const q = i * DENSE_STRIDE;
      d[q] = offset;
      d[q + 1] = leaderEpoch;
      d[q + 2] = commitTimestampMs;
    } else {
      const e = this.#sparse!;
      const p = (i - dense) * STRIDE;
      e[p + F_OFFSET] = offset;
      e[p + F_EPOCH] = leaderEpoch;
      e[p + F_TIMESTAMP] = commitTimestampMs;
    }
    if (metadata.length > 0) (this.#metadata ??= new Map()).set(i, metadata);
    else this.#metadata?.delete(i);
    if (inserted && ++this.#insertedSinceLayout >= RELAYOUT_MIN) this.#relayoutIfDue();
  }

  /**
   * Re-orders the entries so that the longest runs of in-order buckets (at most RUNS_MAX) lead, if
   * that makes the dense prefix longer, when a look is due (see the module header).
   */
  #relayoutIfDue(): void {
    const size = this.#size;
    if (
      size > RELAYOUT_SIZE_MAX ||
      size - this.#denseCount < RELAYOUT_MIN ||
      this.#insertedSinceLayout < size >>> 2
    )
      return;
    this.#insertedSinceLayout = 0;
    const { entries, metadata } = this.toImage();
    const key = (i: number, f: number) => entries[i * STRIDE + f]!;
    const sorted = Array.from({ length: size }, (_, i) => i).sort(
      (a, b) =>
        key(a, F_TABLE) - key(b, F_TABLE) ||
        key(a, F_PARTITION) - key(b, F_PARTITION) ||
        key(a, F_BUCKET) - key(b, F_BUCKET),
    );
    // Each (table, partition)'s run: where it starts in `sorted`, and how many in-order buckets.
    const runs: { from: number; length: number }[] = [];
    for (let k = 0; k < size;) {
      const from = k;
      const table = key(sorted[k]!, F_TABLE);
      const partition = key(sorted[k]!, F_PARTITION);
      let length = 0;
      while (
        k < size &&
        key(sorted[k]!, F_TABLE) === table &&
        key(sorted[k]!, F_PARTITION) === partition
      ) {
        if (length === k - from && key(sorted[k]!, F_BUCKET) === length) length++;
        k++;
      }
      if (length > 0) runs.push({ from, length });
    }
    runs.sort((a, b) => b.length - a.length || a.from - b.from);
    const chosen = runs.slice(0, RUNS_MAX).sort((a, b) => a.from - b.from);
    const dense = chosen.reduce((n, r) => n + r.length, 0);
    if (dense > this.#denseCount) {
      const inRun = new Uint8Array(size);
      const order: number[] = [];
      for (const run of chosen) {
        for (let k = run.from; k < run.from + run.length; k++) {
          order.push(sorted[k]!);
          inRun[sorted[k]!] = 1;
        }
      }
      for (let i = 0; i < size; i++) if (inRun[i] === 0) order.push(i);
      const reordered = new Float64Array(entries.length);
      const position = new Int32Array(size);
      order.forEach((from, to) => {
        reordered.set(entries.subarray(from * STRIDE, (from + 1) * STRIDE), to * STRIDE);
        position[from] = to;
      });
      this.#load(
        reordered,
        metadata.map(([i, text]) => [position[i]!, text]),
      );
    }
  }

  #insert(tableId: number, partition: number, bucketId: number): number {
    const i = this.#size;
    if (this.#denseCount === i && this.#extendsPrefix(tableId, partition, bucketId)) {
      this.#dense = ensureCapacity(this.#dense, i + 1, DENSE_STRIDE, this.#capacityHint);
      this.#denseCount = i + 1;
      if (this.#laterRuns === undefined) this.#firstRunEnd = i + 1;
    } else {
      const k = i - this.#denseCount;
      const hint = i === 0 ? this.#capacityHint : 2;
      const e = (this.#sparse = ensureCapacity(this.#sparse, k + 1, STRIDE, hint));
      const p = k * STRIDE;
      e[p + F_TABLE] = tableId;
      e[p + F_PARTITION] = partition;
      e[p + F_BUCKET] = bucketId;
    }
    this.#size = i + 1;
    if (this.#slots !== undefined && this.#size * 4 > this.#slots.length * 3)
      this.#rebuildSlots(this.#slots.length * 2);
    else if (this.#slots !== undefined) this.#placeSlot(i);
    else this.#indexIfSparse();
    return i;
  }

  /**
   * Whether the key can be entry #denseCount of the prefix (with no sparse entries): the last run's
   * next bucket, or bucket 0 of another (table, partition) while there is room for a run, which it
   * then starts. (A key absent from the table, so bucket 0 has no run yet.)
   */
  #extendsPrefix(tableId: number, partition: number, bucketId: number): boolean {
    const dense = this.#denseCount;
    if (dense === 0) {
      if (bucketId !== 0) return false;
      this.#denseTable = tableId;
      this.#densePartition = partition;
      return true;
    }
    const later = this.#laterRuns;
    const last = later === undefined ? -1 : later.length - RUN_STRIDE;
    if (
      (later === undefined ? this.#denseTable : later[last]) === tableId &&
      (later === undefined ? this.#densePartition : later[last + 1]) === partition &&
      bucketId === dense - (later === undefined ? 0 : later[last + 2]!)
    )
      return true;
    if (bucketId !== 0 || last + RUN_STRIDE === (RUNS_MAX - 1) * RUN_STRIDE) return false;
    if (later === undefined) this.#laterRuns = [tableId, partition, dense];
    else later.push(tableId, partition, dense);
    return true;
  }

  /** Builds the slot table once more than LINEAR_SCAN_MAX entries lie outside the dense prefix. */
  #indexIfSparse(): void {
    if (this.#size - this.#denseCount <= LINEAR_SCAN_MAX) return;
    let slotCount = 32;
    while (this.#size * 4 > slotCount * 3) slotCount *= 2;
    this.#rebuildSlots(slotCount);
  }

  /** The slot entry `i`'s key hashes to (where its probe starts), for a slot table of `mask + 1` slots. */
  #homeSlot(i: number, mask: number): number {
    return (
      hashBucketKey(
        this.#field(i, F_TABLE),
        this.#field(i, F_PARTITION),
        this.#field(i, F_BUCKET),
      ) & mask
    );
  }

  #placeSlot(i: number): void {
    const slots = this.#slots!;
    const mask = slots.length - 1;
    let s = this.#homeSlot(i, mask);
    while (slots[s] !== 0) s = (s + 1) & mask;
    slots[s] = i + 1;
  }

  #rebuildSlots(slotCount: number): void {
    this.#slots = new Int32Array(slotCount);
    for (let i = 0; i < this.#size; i++) this.#placeSlot(i);
  }

  /** Removes the key; returns whether it was present. */
  delete(tableId: number, partitionId: number | null, bucketId: number): boolean {
    const i = this.find(tableId, partitionId, bucketId);
    if (i < 0) return false;
    const last = this.#size - 1;
    // The slots first, while every key is where it was: no other entry's key changes below.
    if (this.#slots !== undefined) {
      this.#removeSlot(i);
      if (i !== last) this.#repointSlot(last, i);
    }
    if (i < this.#denseCount) this.#cutDensePrefix(i, last);
    else if (i !== last) {
      const e = this.#sparse!;
      const dense = this.#denseCount;
      e.copyWithin((i - dense) * STRIDE, (last - dense) * STRIDE, (last - dense + 1) * STRIDE);
    }
    if (i !== last) {
      const lastMetadata = this.#metadata?.get(last);
      if (lastMetadata !== undefined) this.#metadata!.set(i, lastMetadata);
      else this.#metadata?.delete(i);
    }
    this.#metadata?.delete(last);
    this.#size = last;
    if (this.#size === this.#denseCount) this.#sparse = undefined;
    if (this.#slots === undefined) this.#indexIfSparse();
    // Dropped only well below the size that builds it: a commit and a delete going back and forth
    // across one threshold must not rebuild the table (O(size)) each time.
    else if (this.#size - this.#denseCount <= LINEAR_SCAN_MAX / 2) this.#slots = undefined;
    return true;
  }

  /**
   * Deleting dense entry `i`: the prefix ends at `i`; the entries after it, up to `last` - 1, become
   * sparse under the same indices, and entry `last`'s key and values fill index `i`.
   */
  #cutDensePrefix(i: number, last: number): void {
    const count = last - i; // sparse entries afterwards: indices i .. last - 1
    let moved: number[] | undefined;
    if (count > 0) {
      moved = newEntries(count * STRIDE);
      for (let j = i; j < last; j++) {
        const from = j === i ? last : j;
        const p = (j - i) * STRIDE;
        for (let f = 0; f < STRIDE; f++) moved[p + f] = this.#field(from, f);
      }
    }
    this.#denseCount = i;
    const later = this.#laterRuns;
    if (later !== undefined) {
      while (later.length > 0 && later[later.length - 1]! >= i) later.length -= RUN_STRIDE;
      if (later.length === 0) this.#laterRuns = undefined;
    }
    this.#firstRunEnd = Math.min(this.#firstRunEnd, i);
    if (i === 0) this.#dense = undefined;
    else this.#dense!.length = i * DENSE_STRIDE;
    this.#sparse = moved;
  }

  #slotOf(i: number): number {
    const slots = this.#slots!;
    const mask = slots.length - 1;
    let s = this.#homeSlot(i, mask);
    while (slots[s] !== i + 1) s = (s + 1) & mask;
    return s;
  }

  #repointSlot(from: number, to: number): void {
    this.#slots![this.#slotOf(from)] = to + 1;
  }

  /** Backward-shift deletion of entry `i`'s slot (linear probing without tombstones). */
  #removeSlot(i: number): void {
    const slots = this.#slots!;
    const mask = slots.length - 1;
    let hole = this.#slotOf(i);
    slots[hole] = 0;
    for (let s = (hole + 1) & mask; slots[s] !== 0; s = (s + 1) & mask) {
      const home = this.#homeSlot(slots[s]! - 1, mask);
      // Move the entry back if its home is not cyclically within (hole, s].
      const distanceFromHome = (s - home) & mask;
      const distanceFromHole = (s - hole) & mask;
      if (distanceFromHome >= distanceFromHole) {
        slots[hole] = slots[s]!;
        slots[s] = 0;
        hole = s;
      }
    }
  }

  /**
   * The table as plain data for a checkpoint: every entry as 6 float64 (tableId, partitionId (-1 =
   * null), bucketId, offset, leaderEpoch, commitTimestampMs), in entry order, and the non-empty
   * metadata by entry index. `fromImage` rebuilds an equal table.
   */
  toImage(): { entries: Float64Array; metadata: [number, string][] } {
    const entries = new Float64Array(this.#size * STRIDE);
    const dense = this.#denseCount;
    const d = this.#dense;
    for (let i = 0, p = 0, q = 0; i < dense; i++, p += STRIDE, q += DENSE_STRIDE) {
      entries[p + F_TABLE] = this.#field(i, F_TABLE);
      entries[p + F_PARTITION] = this.#field(i, F_PARTITION);
      entries[p + F_BUCKET] = this.#field(i, F_BUCKET);
      entries[p + F_OFFSET] = d![q]!;
      entries[p + F_EPOCH] = d![q + 1]!;
      entries[p + F_TIMESTAMP] = d![q + 2]!;
    }
    const e = this.#sparse;
    const sparseLength = (this.#size - dense) * STRIDE;
    for (let k = 0, p = dense * STRIDE; k < sparseLength; k++, p++) entries[p] = e![k]!;
    return {
      entries,
      metadata: this.#metadata === undefined ? [] : [...this.#metadata],
    };
  }

  /** Rebuilds a table from `toImage()` output. */
  static fromImage(entries: Float64Array, metadata: Iterable<[number, string]>): GroupOffsets {
    const table = new GroupOffsets(1);
    table.#load(entries, metadata);
    table.#insertedSinceLayout = table.#size;
    table.#relayoutIfDue();
    return table;
  }

  /** Replaces the contents with an image's entries, in its order (see fromImage). */
  #load(entries: Float64Array, metadata: Iterable<[number, string]>): void {
    const size = entries.length / STRIDE;
    this.#denseCount = 0;
    this.#firstRunEnd = 0;
    this.#laterRuns = undefined;
    this.#dense = undefined;
    this.#sparse = undefined;
    this.#slots = undefined;
    this.#metadata = undefined;
    let dense = 0;
    // The prefix the same entries would have made, inserted in this order.
    while (
      dense < size &&
      this.#extendsPrefix(
        entries[dense * STRIDE + F_TABLE]!,
        entries[dense * STRIDE + F_PARTITION]!,
        entries[dense * STRIDE + F_BUCKET]!,
      )
    )
      this.#denseCount = ++dense;
    this.#firstRunEnd = this.#laterRuns?.[2] ?? dense;
    if (dense > 0) {
      const d = newEntries(dense * DENSE_STRIDE);
      for (let i = 0, p = 0, q = 0; i < dense; i++, p += STRIDE, q += DENSE_STRIDE) {
        d[q] = entries[p + F_OFFSET]!;
        d[q + 1] = entries[p + F_EPOCH]!;
        d[q + 2] = entries[p + F_TIMESTAMP]!;
      }
      this.#dense = d;
    }
    if (size > dense) {
      const e = newEntries((size - dense) * STRIDE);
      for (let k = 0, p = dense * STRIDE; p < entries.length; k++, p++) e[k] = entries[p]!;
      this.#sparse = e;
    }
    this.#size = size;
    for (const [i, text] of metadata) (this.#metadata ??= new Map()).set(i, text);
    this.#indexIfSparse();
  }

  /** Heap bytes held by this table's arrays (for stats and the memory benchmark). */
  get arrayBytes(): number {
    return (
      ((this.#dense?.length ?? 0) + (this.#sparse?.length ?? 0)) * 8 +
      (this.#slots?.byteLength ?? 0)
    );
  }
}

/**
 * `entries` with room for `count` entries of `stride` doubles: itself, a new array of `hint`
 * entries (at least `count`) when there is none, or a copy grown by half.
 */
function ensureCapacity(
  entries: number[] | undefined,
  count: number,
  stride: number,
  hint: number,
): number[] {
  if (entries === undefined) return newEntries(Math.max(count, hint) * stride);
  if (count * stride <= entries.length) return entries;
  const capacity = entries.length / stride;
  const grown = newEntries(Math.max(count, capacity + 2, Math.ceil(capacity * 1.5)) * stride);
  for (let k = 0; k < entries.length; k++) grown[k] = entries[k]!;
  return grown;
}
