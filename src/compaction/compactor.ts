/**
 * The compaction scheduler: decides which offsets-buckets need compacting, runs the configured
 * strategy on them with bounded concurrency, and reports what it did. It runs at its own pace on
 * the clock (every `intervalMs`) or when asked (`compactNow`), never on the commit path.
 *
 * Strategies:
 * - 'log-cleaner': a worker rewrites the sealed segments (log-cleaner.ts), then the main thread
 *   swaps the outputs in (Log.replaceSegments, crash-safe).
 * - 'checkpoint': the target writes its materialized state to LMDB and deletes sealed segments below
 *   the previous checkpoint (through the CompactionTarget port; the checkpoint format belongs to kv).
 * - 'none': nothing; compactNow reports the sizes only.
 *
 * Planning: a bucket is due when it has something to do (log-cleaner: sealed segments not yet
 * cleaned; checkpoint: batches not yet checkpointed, or any log left to free), and either its estimated garbage ratio,
 * 1 - liveBytes / logBytes, is at least `minDirtyRatio` or its log is over `logBytesMax`.
 * `compactNow` runs every bucket regardless.
 * Invariant: at most one job per bucket at a time, at most `workers` jobs at once.
 */
import { OffsetStoreError } from '../errors/index.js';
import type { Log } from '../log/index.js';
import type { Clock, Timer } from '../util/index.js';
import type { CleanResult } from './log-cleaner.js';
import type { CleanRunner } from './clean-runner.js';

/** The compaction strategies. */
export type CompactionStrategy = 'log-cleaner' | 'checkpoint' | 'none';

/** Every compaction strategy, in the order they are documented. */
export const COMPACTION_STRATEGIES: readonly CompactionStrategy[] = ['log-cleaner', 'checkpoint', 'none'];

/** True when `value` names a compaction strategy. */
export function isCompactionStrategy(value: unknown): value is CompactionStrategy {
  return (COMPACTION_STRATEGIES as readonly unknown[]).includes(value);
}

/** What compaction needs of one offsets-bucket (provided by the store). */
export interface CompactionTarget {
  /** The offsets-bucket's number, for reports and for `onError`. */
  readonly bucket: number;
  /**
   * The bucket's log: sizes and segment lists for planning, and the swap the log cleaner's output goes
   * through.
   */
  readonly log: Log;
  /** Estimated bytes the live records would take in a fully compacted log. */
  liveBytesEstimate(): number;
  /** Checkpoint strategy: writes a checkpoint and deletes covered segments. */
  checkpoint(): Promise<{ segmentBytesDeleted: number; checkpointLogOffset: number | undefined; bytesWritten: number }>;
  /** Checkpoint strategy: batches applied since the newest checkpoint. */
  batchesSinceCheckpoint(): number;
}

/** Options of the compactor. */
export interface CompactorOptions {
  /** The store's strategy; 'none' never schedules anything. */
  strategy: CompactionStrategy;
  /** Paces background runs and gives the delete horizon's "now". */
  clock: Clock;
  /** Runs log-cleaner jobs (undefined for the other strategies). */
  pool: CleanRunner | undefined;
  /** Most buckets compacted at once (>= 1). */
  workers: number;
  /** Pause between two background passes over the buckets, in ms. */
  intervalMs: number;
  /** A bucket is due in the background once 1 - liveBytes / logBytes reaches this (0 to 1). */
  minDirtyRatio: number;
  /** A bucket whose log exceeds this many bytes is due whatever its ratio (Infinity = never). */
  logBytesMax: number;
  /** The log cleaner keeps a tombstone this long after its commit (ms), then drops it with the key. */
  deleteRetentionMs: number;
  /** Most bytes per cleaned output segment (the log's roll size). */
  segmentBytesMax: number;
  /** Largest batch a cleaner job accepts when it reads the log (the log's own limit). */
  batchBytesMax: number;
  /**
   * Hears of each bucket whose compaction failed (the store turns it into a warning); the next pass
   * tries again.
   */
  onError: (error: unknown, bucket: number) => void;
}

/** Hears of each offsets-bucket compacted by `compactNow`: its report, buckets finished so far, buckets in all. */
export type BucketCompactedListener = (bucket: BucketCompaction, finished: number, total: number) => void;

/** What compaction did to one offsets-bucket. */
export interface BucketCompaction {
  /** The offsets-bucket. */
  bucket: number;
  /** Bytes of its log before this run. */
  bytesBefore: number;
  /** Bytes of its log after this run (outputs swapped in, segments below a checkpoint deleted). */
  bytesAfter: number;
  /** Segments of its log before this run, the active one included. */
  segmentsBefore: number;
  /** Segments of its log after this run, the active one included. */
  segmentsAfter: number;
  /** Records the log cleaner read from the sealed segments (0 for the other strategies). */
  recordsRead: number;
  /** Records the log cleaner dropped: overwritten values and tombstones past the delete horizon. */
  recordsDropped: number;
  /** Bytes written: cleaned segments, or checkpoint values (0 when the newest checkpoint was current). */
  bytesWritten: number;
  /** Wall time of this bucket's run, in ms. */
  durationMs: number;
  /** Checkpoint strategy: the log offset of the checkpoint written (or found current). */
  checkpointLogOffset?: number;
}

/** What `compact()` returns. */
export interface CompactionReport {
  /** The strategy that ran. */
  strategy: CompactionStrategy;
  /** One entry per offsets-bucket that finished, in bucket order. */
  buckets: BucketCompaction[];
  /** Sum of the buckets' log bytes before. */
  bytesBefore: number;
  /** Sum of the buckets' log bytes after. */
  bytesAfter: number;
  /** Sum of the records the log cleaner dropped. */
  recordsDropped: number;
  /** Sum of the bytes written (cleaned segments or checkpoints). */
  bytesWritten: number;
  /** Wall time of the whole run, in ms. */
  durationMs: number;
}

/** Schedules and runs compaction over a set of offsets-buckets. */
export class Compactor {
  readonly #options: CompactorOptions;
  readonly #targets: CompactionTarget[];
  readonly #running = new Map<number, Promise<BucketCompaction>>();
  /** Per bucket: the sealed segment count right after its last clean (nothing new = not due). */
  readonly #cleanedSealedCount = new Map<number, number>();
  #timer: Timer | undefined;
  #closed = false;

  /**
   * Does nothing until `start()` (background) or `compactNow()`; `targets` are the store's
   * offsets-buckets, in bucket order.
   */
  constructor(options: CompactorOptions, targets: CompactionTarget[]) {
    this.#options = options;
    this.#targets = targets;
  }

  /** Starts background compaction on the clock (no-op for 'none'). */
  start(): void {
    if (this.#options.strategy === 'none' || this.#closed) return;
    this.#timer = this.#options.clock.setTimer(this.#options.intervalMs, () => {
      this.#runDue().finally(() => this.start());
    });
  }

  async #runDue(): Promise<void> {
    const due = this.#targets.filter((t) => this.#isDue(t));
    await this.#runAll(due).catch(() => {});
  }

  #isDue(target: CompactionTarget): boolean {
    if (this.#running.has(target.bucket) || target.log.failed) return false;
    if (this.#options.strategy === 'checkpoint') {
      // Nothing new to checkpoint and no log left to free (a quiet bucket shrinks to nothing).
      if (target.batchesSinceCheckpoint() === 0 && target.log.sizeBytes === 0) return false;
    } else {
      const sealed = target.log.sealedSegments();
      if (sealed.length === 0 || this.#cleanedSealedCount.get(target.bucket) === sealed.length) return false;
    }
    const logBytes = target.log.sizeBytes;
    if (logBytes > this.#options.logBytesMax) return true;
    const garbageRatio = logBytes === 0 ? 0 : 1 - Math.min(1, target.liveBytesEstimate() / logBytes);
    return garbageRatio >= this.#options.minDirtyRatio;
  }

  /**
   * Compacts every offsets-bucket now, whatever its ratio, and reports; `onBucketCompacted` hears of
   * each bucket as it finishes, with how many have finished out of how many.
   */
  async compactNow(onBucketCompacted?: BucketCompactedListener): Promise<CompactionReport> {
    if (this.#closed) throw new OffsetStoreError('STORE_CLOSED', 'compaction is closed');
    const startedMs = performance.now();
    let buckets: BucketCompaction[];
    try {
      buckets = await this.#runAll(this.#targets, onBucketCompacted);
    } catch (error) {
      if (this.#closed && !(error instanceof OffsetStoreError && error.code === 'STORE_CLOSED')) throw cutShort(error);
      throw error;
    }
    // close() stops the lanes between buckets: a report of part of the buckets would read as done.
    if (this.#closed) throw cutShort(undefined);
    const report: CompactionReport = { strategy: this.#options.strategy, buckets, bytesBefore: 0, bytesAfter: 0, recordsDropped: 0, bytesWritten: 0, durationMs: 0 };
    for (const b of buckets) {
      report.bytesBefore += b.bytesBefore;
      report.bytesAfter += b.bytesAfter;
      report.recordsDropped += b.recordsDropped;
      report.bytesWritten += b.bytesWritten;
    }
    report.durationMs = performance.now() - startedMs;
    return report;
  }

  /** Runs targets with at most `workers` at once; rejects with the first failure after all finish. */
  async #runAll(targets: CompactionTarget[], onBucketCompacted?: BucketCompactedListener): Promise<BucketCompaction[]> {
    const results: BucketCompaction[] = new Array(targets.length);
    const errors: unknown[] = [];
    let next = 0;
    let finished = 0;
    const lane = async (): Promise<void> => {
      while (next < targets.length && !this.#closed) {
        const i = next++;
        const target = targets[i]!;
        try {
          results[i] = await this.#runOne(target);
          onBucketCompacted?.(results[i]!, ++finished, targets.length);
        } catch (error) {
          if (!this.#closed) this.#options.onError(error, target.bucket);
          errors.push(error);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(this.#options.workers, targets.length)) }, lane));
    if (errors.length > 0) throw errors[0];
    return results.filter((r) => r !== undefined);
  }

  #runOne(target: CompactionTarget): Promise<BucketCompaction> {
    const running = this.#running.get(target.bucket);
    if (running !== undefined) return running;
    const job = this.#compact(target).catch((error: unknown) => {
      // A raw I/O error (EIO, ENOSPC from the cleaner's output) says which bucket it hit.
      if (error instanceof OffsetStoreError || !(error instanceof Error) || typeof (error as NodeJS.ErrnoException).code !== 'string') throw error;
      throw new OffsetStoreError('LOG_STORAGE_ERROR', `compacting offsets-bucket ${target.bucket} failed (nothing was swapped in): ${error.message}`, { cause: error });
    }).finally(() => this.#running.delete(target.bucket));
    this.#running.set(target.bucket, job);
    return job;
  }

  async #compact(target: CompactionTarget): Promise<BucketCompaction> {
    const startedMs = performance.now();
    const log = target.log;
    const result: BucketCompaction = {
      bucket: target.bucket, bytesBefore: log.sizeBytes, bytesAfter: 0, segmentsBefore: log.segments().length, segmentsAfter: 0,
      recordsRead: 0, recordsDropped: 0, bytesWritten: 0, durationMs: 0,
    };
    if (this.#options.strategy === 'log-cleaner') {
      const clean = await this.#clean(target);
      if (clean !== undefined) {
        result.recordsRead = clean.recordsRead;
        result.recordsDropped = clean.recordsRead - clean.recordsKept;
        result.bytesWritten = clean.bytesWritten;
      }
    } else if (this.#options.strategy === 'checkpoint') {
      const run = await target.checkpoint();
      result.checkpointLogOffset = run.checkpointLogOffset;
      result.bytesWritten = run.bytesWritten;
    }
    result.bytesAfter = log.sizeBytes;
    result.segmentsAfter = log.segments().length;
    result.durationMs = performance.now() - startedMs;
    return result;
  }

  async #clean(target: CompactionTarget): Promise<CleanResult | undefined> {
    const pool = this.#options.pool;
    await target.log.completeSwap();
    const segments = target.log.segments();
    const inputs = segments.slice(0, -1);
    if (pool === undefined || inputs.length === 0) return undefined;
    const ref = (s: { path: string; baseOffset: number; sizeBytes: number }) => ({ path: s.path, baseOffset: s.baseOffset, sizeBytes: s.sizeBytes });
    const clean = await pool.clean({
      dir: target.log.dir,
      inputs: inputs.map(ref),
      tail: segments.slice(-1).map(ref),
      deleteHorizonMs: this.#options.clock.nowMs() - this.#options.deleteRetentionMs,
      segmentBytesMax: this.#options.segmentBytesMax,
      batchBytesMax: this.#options.batchBytesMax,
    });
    if (this.#closed) return undefined;
    await target.log.replaceSegments(inputs, clean.outputs);
    this.#cleanedSealedCount.set(target.bucket, target.log.sealedSegments().length);
    return clean;
  }

  /**
   * Stops scheduling and terminates the workers, abandoning a clean in flight (its `.cleaned` output
   * is never swapped in, and the next open deletes it); then waits for running jobs to settle, so a
   * swap or checkpoint already under way on the main thread completes before the logs close.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#timer?.cancel();
    await this.#options.pool?.close();
    await Promise.allSettled([...this.#running.values()]);
  }
}

/** STORE_CLOSED for a compactNow that close() cut short, with what failed because of it, if anything. */
function cutShort(cause: unknown): OffsetStoreError {
  return new OffsetStoreError('STORE_CLOSED', 'compaction was cut short: the store is closing', cause === undefined ? undefined : { cause });
}
