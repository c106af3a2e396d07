/**
 * The compaction-strategy interface: what a strategy is shown of one offsets-bucket (a `BucketView`,
 * plain data), what it may ask the engine to read for it (a `LogInspector`), and what it may ask the
 * engine to do (a `CompactionPlan`). The built-in strategies implement it, and so does a user's
 * module (`compaction: { strategy: './my-strategy.js' }`, default export).
 *
 * Division of labour, and why:
 * - A strategy decides *what* to compact and *when*: which sealed segments to rewrite and how to
 *   group them into output segments, whether to write a checkpoint, below which log offset to delete
 *   segments, how long tombstones live past its own notion of a clean point.
 * - The engine decides *which records survive*, and it alone writes: a rewrite keeps every record
 *   that no later record of its key supersedes, and drops a tombstone only when nothing older of its
 *   key remains for it to hide. So a strategy can waste work, but it cannot lose or resurrect an
 *   offset. Every plan is checked (plan-validation.ts) before anything happens, and every output
 *   again on the main thread before it is swapped in; a wrong or unsafe plan is refused with
 *   INVALID_COMPACTION_PLAN and nothing changes.
 * - Rewrites are written under temporary names and swapped in through the crash-safe segment swap
 *   (log/segment-swap.ts), one swap per output group, in log order.
 *
 * Where the code runs: `due` on the main thread (it must be cheap and synchronous); `plan` on a
 * compaction worker thread, or on the main thread through the store's file-system port when the
 * in-process runner is used (any port other than NodeFileSystem) or when the strategy declares
 * `rewrites: false`. So a module must not rely on state shared with the main thread: what it needs
 * to remember between runs goes into `plan.state`, which the engine stores durably per bucket.
 */

/** A JSON value: what a strategy may keep as its state. */
export type JsonValue =
  null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** One segment of the log, as a strategy sees it. */
export interface SegmentView {
  /** Log offset of its first batch (its file name). */
  baseOffset: number;
  /** Log offset of its last batch; -1 for an empty active segment. Sealed segments chain: the next one starts at `lastLogOffset + 1`. */
  lastLogOffset: number;
  /** Bytes of batches in it. */
  sizeBytes: number;
  /** False for the last (active) segment, which is never compacted. */
  sealed: boolean;
}

/** The newest checkpoint of the bucket. */
export interface CheckpointView {
  /** The checkpoint holds the state after every batch below this log offset. */
  logOffset: number;
  /** Committed offsets in it. */
  liveOffsets: number;
  /** When it was written, ms since the epoch (the store's clock). */
  createdAtMs: number;
}

/** Store settings a strategy should honour. */
export interface StrategySettings {
  /** `compaction.minDirtyRatio`: a bucket is worth compacting once this share of its log is garbage (0 to 1). */
  minDirtyRatio: number;
  /** `compaction.logBytesMax`: a log larger than this is worth compacting whatever its ratio (Infinity = never). */
  logBytesMax: number;
  /** The log's roll size: the most bytes an output segment gets. */
  segmentBytesMax: number;
  /** `compaction.deleteRetentionMs`: the engine never drops a tombstone committed less than this long ago. */
  deleteRetentionMs: number;
}

/** Everything a strategy is shown of one offsets-bucket: plain data, a snapshot taken when the run began. */
export interface BucketView {
  /** The offsets-bucket's number. */
  bucket: number;
  /** The strategy's recorded name (`'incremental'`, `'module:<name>'`, ...). */
  strategy: string;
  /** The store's clock when the run began, ms since the epoch. */
  nowMs: number;
  /** True when `compact()` asked for this run (whatever the bucket's ratio); false in the background. */
  forced: boolean;
  /** Every segment, oldest first; the last one is active (never compacted). */
  segments: SegmentView[];
  /** Bytes of all segments. */
  logBytes: number;
  /** The log offset the next batch gets. */
  logEndOffset: number;
  /** Without a checkpoint, recovery replays the log from this log offset (0, or where a conversion rewrote the state into the log). */
  logStartOffset: number;
  /** Committed offsets in the materialized index (the live keys). */
  liveOffsets: number;
  /** Group snapshots in the materialized index (live keys of the other record type). */
  liveSnapshots: number;
  /** Estimated bytes of the live records: what a fully compacted log would hold. */
  liveBytesEstimate: number;
  /** Dirty estimate: 1 - liveBytesEstimate / logBytes, in [0, 1]. */
  garbageRatioEstimate: number;
  /** The newest checkpoint, if the strategy uses checkpoints and one was written. */
  checkpoint: CheckpointView | undefined;
  /** Batches applied since the newest checkpoint (all of them when there is none). */
  batchesSinceCheckpoint: number;
  /** What the strategy's last successful plan returned as `state` for this bucket (undefined at first). */
  state: JsonValue | undefined;
  /** The store's settings. */
  settings: StrategySettings;
}

/** What a rewrite would drop from one segment, counted by reading it. */
export interface SegmentGarbage {
  /** The segment's base offset. */
  baseOffset: number;
  /** Bytes of batches in it. */
  sizeBytes: number;
  /** Batches in it. */
  batches: number;
  /** Records in it. */
  records: number;
  /** Bytes of those records (record framing included, batch headers not). */
  recordBytes: number;
  /** Records a later record of the same key supersedes, as far as the key map (from `mapFrom`) sees. */
  supersededRecords: number;
  /** Bytes of the superseded records. */
  supersededBytes: number;
  /** Tombstones in it. */
  tombstones: number;
  /** Tombstones old enough to drop (committed before now - deleteRetentionMs, below `tombstonesBelow`), if nothing older of their key remains. */
  expiredTombstones: number;
  /** Bytes of the expired tombstones. */
  expiredTombstoneBytes: number;
  /** Commit time of its oldest and newest batch, ms since the epoch. */
  oldestCommitMs: number;
  /** Commit time of its newest batch. */
  newestCommitMs: number;
}

/** Options of `LogInspector.segmentGarbage`. */
export interface GarbageQuery {
  /**
   * The key map covers every batch from this log offset to the end of the log (the active segment
   * included): a record is superseded when the map holds a later record of its key. A lower value
   * sees more garbage and reads more. Default: the first segment asked about.
   */
  mapFrom?: number;
  /** The sealed segments to count, by base offset; default every sealed segment. */
  segments?: number[];
  /** Count tombstones below this log offset as expired (with the time rule); default no bound. */
  tombstonesBelow?: number;
}

/** Reads the bucket's log for a strategy (on the worker, through the engine's checked scanner). */
export interface LogInspector {
  /**
   * Per segment, what a rewrite would drop. Reads the asked segments and the log from `mapFrom` on;
   * the key map is kept for the rewrite of the same run when the plan uses the same `mapFrom`.
   */
  segmentGarbage(query?: GarbageQuery): Promise<SegmentGarbage[]>;
}

/** What a strategy asks the engine to do; every field is optional (an empty plan does nothing). */
export interface CompactionPlan {
  /**
   * Groups of sealed segments to rewrite, each a run of adjacent segments given by base offset, in
   * log order, none shared: each group becomes one or more output segments (split at segmentBytesMax)
   * that cover exactly its log offsets. A group of one segment rewrites it; a larger group also
   * merges its segments.
   */
  rewrite?: number[][];
  /** The key map of the rewrite covers the log from here on (see `GarbageQuery.mapFrom`); default the first rewritten segment's base. */
  mapFrom?: number;
  /** Tombstones at or above this log offset are kept by the rewrite (the time rule applies below it); default no bound. */
  tombstonesBelow?: number;
  /** Write a checkpoint of the materialized state (only a strategy that declares `checkpoints: true`). */
  checkpoint?: boolean;
  /**
   * Delete the sealed segments wholly below this log offset, after any checkpoint of this plan was
   * written: allowed only when the newest checkpoint covers it. `'checkpoint'` means the newest
   * checkpoint's log offset (and frees the active segment too when the checkpoint covers the whole log).
   */
  deleteBelow?: number | 'checkpoint';
  /** Kept durably for this bucket and shown as `view.state` next time (at most 64 KiB of JSON). */
  state?: JsonValue;
}

/**
 * A compaction strategy: the default export of a strategy module. `name` and `checkpoints` are
 * recorded in the store (see docs/compaction.md); `plan` is the strategy.
 */
export interface CompactionStrategyDefinition {
  /** Recorded in store.json as `module:<name>`: letters, digits, '.', '_', '-', at most 64. */
  readonly name: string;
  /** True if it may write checkpoints and delete below them; recovery then restores checkpoints. Default false. */
  readonly checkpoints?: boolean;
  /**
   * False if it never rewrites segments: its `plan` then runs on the main thread and no worker is
   * started, and it cannot read the log (a call to its inspector fails the run). Default true.
   */
  readonly rewrites?: boolean;
  /**
   * Main thread, synchronous: whether a background pass should run `plan` for this bucket now.
   * Default: the log has a sealed segment and its garbage ratio estimate reaches `minDirtyRatio`, or
   * its log exceeds `logBytesMax`. `compact()` runs `plan` on every bucket without asking. It
   * answers a boolean: a `due` that throws or answers anything else (the Promise of an async `due`)
   * is a warning naming the strategy, and the bucket is not compacted in that pass.
   */
  due?(view: BucketView): boolean;
  /** What to do with this bucket now; null, undefined or `{}` for nothing. May read the log through `inspector`. */
  plan(
    view: BucketView,
    inspector: LogInspector,
  ): CompactionPlan | null | undefined | Promise<CompactionPlan | null | undefined>;
}
