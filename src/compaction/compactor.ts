/**
 * The compaction engine's scheduler: shows the store's strategy each offsets-bucket (a BucketView),
 * runs what it plans, and reports what happened. It runs at its own pace on the clock (every
 * `intervalMs`, for the buckets the strategy's `due` accepts) or when asked (`compactNow`, every
 * bucket), never on the commit path.
 *
 * A run of one bucket, step by step:
 * 1. Complete a swap a failed directory operation left half done (Log.completeSwap).
 * 2. Build the view: segments, sizes and log offsets, live-key counts and the dirty estimate, the
 *    newest checkpoint, the strategy's stored state.
 * 3. Plan: on the runner (a worker thread, or in-process on a port other than NodeFileSystem) the
 *    strategy plans with a LogInspector and the engine rewrites the planned groups into `.cleaned`
 *    files (compaction-job.ts); a strategy that declares `rewrites: false` plans here instead,
 *    without reading the log (a call to its inspector fails the run, awaited or not).
 * 4. Check: the plan again against the view, and every output against its group
 *    (plan-validation.ts): a wrong or unsafe plan is INVALID_COMPACTION_PLAN and nothing changes
 *    (the outputs are deleted).
 * 5. Swap the outputs in, one crash-safe swap per group, in log order (Log.replaceSegments).
 * 6. Write the checkpoint the plan asked for; delete below the safe point, checked once more
 *    against the newest checkpoint.
 * 7. Store the strategy's new state (strategy-state.ts), and report.
 * Invariants: at most one run per bucket at a time (`compactNow` waits for a background run in flight
 * and then runs its own, forced), at most `workers` runs at once; a run the store's close interrupts
 * swaps nothing in (its outputs are deleted by the next open).
 */
import { OffsetStoreError, isOffsetStoreError, messageWithoutCode } from '../errors/index.js';
import type { CleanedSegment, Log, SegmentInfo } from '../log/index.js';
import { callUserCallback, type Clock, type Timer } from '../util/index.js';
import {
  UNCAUGHT_IN_WORKER,
  abandonedError,
  jobError,
  untilAbandoned,
  type CompactionJobResult,
} from './compaction-job.js';
import type { CompactionRunner } from './job-runner.js';
import {
  checkOutputs,
  validatePlan,
  type PlanAuthor,
  type ValidatedPlan,
} from './plan-validation.js';
import { dueByGarbageRatio } from './strategies/garbage-ratio.js';
import { describeThrown, describeValue, type LoadedStrategy } from './strategy-registry.js';
import { readStrategyState, writeStrategyState } from './strategy-state.js';
import type { BucketView, CheckpointView, JsonValue, LogInspector } from './strategy.js';

/** What compaction needs of one offsets-bucket (provided by the store). */
export interface CompactionTarget {
  /** The offsets-bucket's number, for reports and for `onError`. */
  readonly bucket: number;
  /** The bucket's log: sizes and segment lists for planning, and the swap outputs go through. */
  readonly log: Log;
  /** Estimated bytes the live records would take in a fully compacted log. */
  liveBytesEstimate(): number;
  /** Committed offsets in the materialized index. */
  liveOffsets(): number;
  /** Group snapshots in the materialized index. */
  liveSnapshots(): number;
  /** Without a checkpoint, recovery replays from this log offset (the manifest's log start). */
  logStart(): number;
  /** The newest checkpoint, if the bucket keeps checkpoints and one exists. */
  newestCheckpoint(): CheckpointView | undefined;
  /** Batches applied since the newest checkpoint (all of them when there is none). */
  batchesSinceCheckpoint(): number;
  /** Writes a checkpoint of the state as of now (unless the newest is current); read back and verified. */
  writeCheckpoint(): Promise<{ logOffset: number; bytesWritten: number }>;
  /**
   * Deletes the sealed segments wholly below `logOffset` (a checkpoint covers them: the compactor
   * checked), sealing the active segment first when `logOffset` is the log end; returns bytes freed.
   */
  freeBelow(logOffset: number): Promise<number>;
}

/** Options of the compactor. */
export interface CompactorOptions {
  /** The store's strategy; undefined when its module was not given (compaction is then off). */
  strategy: LoadedStrategy | undefined;
  /** What the store records as its strategy (for reports and messages). */
  recordedStrategy: string;
  /** Paces background runs and gives the strategy's "now". */
  clock: Clock;
  /** Runs compaction jobs; undefined for a strategy that never rewrites. */
  runner: CompactionRunner | undefined;
  /** Most buckets compacted at once (>= 1). */
  workers: number;
  /**
   * A run's job (or, for a strategy that never rewrites, its plan) still going after this many ms
   * is given up: the runner stops it (a worker thread is terminated) and the run fails with
   * REQUEST_TIMED_OUT, nothing changed. Real time, not the clock's: it bounds work, not a schedule.
   */
  runTimeoutMs: number;
  /** Pause between two background passes over the buckets, in ms. */
  intervalMs: number;
  /** Shown to the strategy: a bucket is worth compacting once this share of its log is garbage. */
  minDirtyRatio: number;
  /** Shown to the strategy: a log larger than this is worth compacting whatever its ratio (Infinity = never). */
  logBytesMax: number;
  /** Tombstones younger than this (ms) are never dropped. */
  deleteRetentionMs: number;
  /** Most bytes per output segment (the log's roll size). */
  segmentBytesMax: number;
  /** Largest batch a job accepts when it reads the log (the log's own limit). */
  batchBytesMax: number;
  /** Hears of each bucket whose compaction failed (the store turns it into a warning); the next pass tries again. */
  onError: (error: unknown, bucket: number) => void;
  /** Hears of each run of one bucket: started, finished (with its report) or failed. */
  onRun?: CompactionRunListener;
}

/**
 * Hears of each offsets-bucket compacted by `compactNow`: its report, buckets finished so far,
 * buckets in all. A promise it returns is awaited before `compactNow` settles (not before the next
 * bucket runs); its rejection, like a throw, fails the call with the listener's own error.
 */
export type BucketCompactedListener = (
  bucket: BucketCompaction,
  finished: number,
  total: number,
) => void;

/** A compaction run of one offsets-bucket, as `compaction.onRun` hears of it. */
export type CompactionRunEvent =
  | { kind: 'started'; bucket: number; startedAtMs: number; background: boolean }
  | { kind: 'finished'; report: BucketCompaction }
  | { kind: 'failed'; bucket: number; startedAtMs: number; background: boolean; error: unknown };

/** Hears of compaction runs (`compaction.onRun`). */
export type CompactionRunListener = (event: CompactionRunEvent) => void;

/** What compaction did to one offsets-bucket. */
export interface BucketCompaction {
  /** The offsets-bucket. */
  bucket: number;
  /** When the run started: wall-clock ms since the epoch (performance.timeOrigin + performance.now()). */
  startedAtMs: number;
  /** True for a background run, false for one `compact()` asked for. */
  background: boolean;
  /** Bytes of its log before this run. */
  bytesBefore: number;
  /** Bytes of its log after this run (outputs swapped in, segments below a checkpoint deleted). */
  bytesAfter: number;
  /** Segments of its log before this run, the active one included. */
  segmentsBefore: number;
  /** Segments of its log after this run, the active one included. */
  segmentsAfter: number;
  /** Sealed segments rewritten (replaced by outputs). */
  segmentsRewritten: number;
  /** Records the rewrite read from the segments it replaced (0 without a rewrite). */
  recordsRead: number;
  /** Records the rewrite dropped: superseded values and tombstones past their time. */
  recordsDropped: number;
  /** Bytes read from the log by the plan's inspection and the rewrite. */
  bytesRead: number;
  /** Bytes written: rewritten segments plus checkpoint pages (0 when nothing was written). */
  bytesWritten: number;
  /** Wall time of this bucket's run, in ms. */
  durationMs: number;
  /** The log offset of the newest checkpoint after the run, when the strategy keeps checkpoints. */
  checkpointLogOffset?: number;
  /** CPU time the worker thread spent on the run, ms (undefined in-process or where unknown). */
  workerCpuMs?: number;
  /** Heap of the worker thread at the end of the run, bytes (undefined in-process). */
  workerHeapBytes?: number;
  /** The worker thread's CPU priority during the run: 'idle' (SCHED_IDLE) or its nice value (undefined in-process). */
  workerPriority?: number | 'idle';
}

/** What `compact()` returns. */
export interface CompactionReport {
  /** The strategy that ran, as the store records it. */
  strategy: string;
  /** One entry per offsets-bucket that finished, in bucket order. */
  buckets: BucketCompaction[];
  /** Sum of the buckets' log bytes before. */
  bytesBefore: number;
  /** Sum of the buckets' log bytes after. */
  bytesAfter: number;
  /** Sum of the records dropped. */
  recordsDropped: number;
  /** Sum of the bytes written (rewritten segments and checkpoints). */
  bytesWritten: number;
  /** Wall time of the whole run, in ms. */
  durationMs: number;
}

/** Wall-clock ms with sub-ms precision. */
function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Schedules and runs compaction over a set of offsets-buckets. */
export class Compactor {
  readonly #options: CompactorOptions;
  readonly #targets: CompactionTarget[];
  /** The run in flight per bucket, and whether `compactNow` asked for it. */
  readonly #running = new Map<number, { job: Promise<BucketCompaction>; forced: boolean }>();
  /** Aborted by close: a strategy still planning on this thread is abandoned. */
  readonly #closing = new AbortController();
  /** The strategy's state per bucket, once read from disk. */
  readonly #states = new Map<number, JsonValue | undefined>();
  #timer: Timer | undefined;
  #closed = false;
  /** Set by `pause()`: no run of a bucket starts until `resume()` releases it (or close()). */
  #paused: { released: Promise<void>; release: () => void } | undefined;

  /**
   * Does nothing until `start()` (background) or `compactNow()`; `targets` are the store's
   * offsets-buckets, in bucket order.
   */
  constructor(options: CompactorOptions, targets: CompactionTarget[]) {
    this.#options = options;
    this.#targets = targets;
  }

  /** Starts background compaction on the clock (no-op for 'none' or without the strategy's module). */
  start(): void {
    const strategy = this.#options.strategy;
    if (strategy === undefined || strategy.id === 'none' || this.#closed) return;
    this.#timer = this.#options.clock.setTimer(this.#options.intervalMs, () => {
      this.#runDue().finally(() => this.start());
    });
  }

  async #runDue(): Promise<void> {
    const due: CompactionTarget[] = [];
    for (const target of this.#targets) {
      if (this.#running.has(target.bucket) || target.log.failed) continue;
      try {
        const state = await this.#state(target);
        const view = this.#view(target, false, state, target.log.segments());
        if (this.#isDue(view)) due.push(target);
      } catch (error) {
        if (!this.#closed) this.#options.onError(error, target.bucket);
      }
    }
    await this.#runAll(due, false).catch(() => {});
  }

  /**
   * The strategy's `due` for `view` (the garbage-ratio rule without one). It answers a boolean:
   * INVALID_COMPACTION_PLAN naming the strategy when it throws or answers anything else, a Promise
   * of an async `due` included (its rejection, if any, is let go: it is refused whatever it settles to).
   */
  #isDue(view: BucketView): boolean {
    const strategy = this.#options.strategy!;
    const due = strategy.definition.due;
    if (due === undefined) return dueByGarbageRatio(view);
    let answer: unknown;
    try {
      // A copy, as `plan` is shown: the state in it is the one kept for the bucket's next run.
      answer = due(structuredClone(view));
    } catch (error) {
      throw new OffsetStoreError(
        'INVALID_COMPACTION_PLAN',
        `strategy '${strategy.id}' failed in due for offsets-bucket ${view.bucket}: ${describeThrown(error)}; the bucket is not compacted in this pass`,
        { cause: error },
      );
    }
    if (typeof answer === 'boolean') return answer;
    if (answer instanceof Promise) void Promise.prototype.then.call(answer, undefined, () => {});
    throw new OffsetStoreError(
      'INVALID_COMPACTION_PLAN',
      `strategy '${strategy.id}' answered due for offsets-bucket ${view.bucket} with ${answer instanceof Promise ? 'a Promise' : describeValue(answer)}, not a boolean: due is synchronous (an async due is not supported); the bucket is not compacted in this pass`,
    );
  }

  /**
   * Compacts every offsets-bucket now, whatever its ratio, and reports; `onBucketCompacted` hears of
   * each bucket as it finishes, with how many have finished out of how many.
   */
  async compactNow(onBucketCompacted?: BucketCompactedListener): Promise<CompactionReport> {
    if (this.#closed) throw new OffsetStoreError('STORE_CLOSED', 'compaction is closed');
    if (this.#options.strategy === undefined) {
      throw new OffsetStoreError(
        'INVALID_CONFIG',
        `the store is compacted by '${this.#options.recordedStrategy}': open it with compaction.strategy set to that module's path to compact it`,
      );
    }
    const startedMs = performance.now();
    let buckets: BucketCompaction[];
    try {
      buckets = await this.#runAll(this.#targets, true, onBucketCompacted);
    } catch (error) {
      if (this.#closed && !(error instanceof OffsetStoreError && error.code === 'STORE_CLOSED'))
        throw cutShort(error);
      throw error;
    }
    // close() stops the lanes between buckets: a report of part of the buckets would read as done.
    if (this.#closed) throw cutShort(undefined);
    const report: CompactionReport = {
      strategy: this.#options.strategy.id,
      buckets,
      bytesBefore: 0,
      bytesAfter: 0,
      recordsDropped: 0,
      bytesWritten: 0,
      durationMs: 0,
    };
    for (const b of buckets) {
      report.bytesBefore += b.bytesBefore;
      report.bytesAfter += b.bytesAfter;
      report.recordsDropped += b.recordsDropped;
      report.bytesWritten += b.bytesWritten;
    }
    report.durationMs = performance.now() - startedMs;
    return report;
  }

  /**
   * What a compaction that failed on the log's files ran into, when the log can say more:
   * - a segment file gone from under the store (LOG_STORAGE_ERROR from a read): the log fail-stops
   *   before it acknowledges more commits into a log no open could find;
   * - damage read in bytes the log wrote but has not made durable in itself yet (the tail of the
   *   active segment, journaled or in durability 'os'): a failed writeback drops such pages from the
   *   page cache, and reads then return what the device has. The log's fdatasync reports that
   *   (and fail-stops the log); the damage is then not on the disk, and is not reported as such.
   */
  async #storageFailureBehind(
    error: OffsetStoreError,
    target: CompactionTarget,
  ): Promise<OffsetStoreError> {
    if (error.code === 'LOG_STORAGE_ERROR')
      return (await target.log.checkSegmentsPresent().catch(() => undefined)) ?? error;
    if (error.code !== 'CORRUPT_MESSAGE') return error;
    const behind = await target.log.storageFailureBehindDamage();
    if (behind === undefined) return error;
    return new OffsetStoreError(
      'LOG_STORAGE_ERROR',
      `compacting offsets-bucket ${target.bucket} read damaged bytes (${messageWithoutCode(error)})${behind.why}`,
      { cause: behind.failure },
    );
  }

  /** Runs targets with at most `workers` at once; rejects with the first failure after all finish. */
  async #runAll(
    targets: CompactionTarget[],
    forced: boolean,
    onBucketCompacted?: BucketCompactedListener,
  ): Promise<BucketCompaction[]> {
    const results: BucketCompaction[] = new Array(targets.length);
    const errors: unknown[] = [];
    /** What asynchronous listeners returned, awaited before the call settles. */
    const heard: Promise<void>[] = [];
    // The caller's listener failed, not the compaction (which is done): its error as it is.
    const listenerFailed = (error: unknown, bucket: number) => {
      if (!this.#closed) this.#options.onError(error, bucket);
      errors.push(error);
    };
    let next = 0;
    let finished = 0;
    const lane = async (): Promise<void> => {
      for (;;) {
        while (this.#paused !== undefined && !this.#closed) await this.#paused.released;
        if (next >= targets.length || this.#closed) break;
        const i = next++;
        const target = targets[i]!;
        try {
          results[i] = await this.#runOne(target, forced);
        } catch (thrown) {
          let error = compactionError(thrown, target.bucket, this.#options.strategy?.id);
          if (!this.#closed) error = await this.#storageFailureBehind(error, target);
          if (!this.#closed) this.#options.onError(error, target.bucket);
          errors.push(error);
          continue;
        }
        if (onBucketCompacted === undefined) continue;
        const settled = callUserCallback(
          onBucketCompacted,
          [results[i]!, ++finished, targets.length],
          (_how, error) => listenerFailed(error, target.bucket),
        );
        if (settled !== undefined) heard.push(settled);
      }
    };
    await Promise.all(
      Array.from({ length: Math.max(1, Math.min(this.#options.workers, targets.length)) }, lane),
    );
    await Promise.all(heard);
    if (errors.length > 0) throw errors[0];
    return results.filter((r) => r !== undefined);
  }

  /**
   * Runs one bucket, or joins its run in flight; a forced run never joins a background one (its
   * strategy was not shown `forced` and may have planned nothing): it waits for it, then runs.
   */
  async #runOne(target: CompactionTarget, forced: boolean): Promise<BucketCompaction> {
    for (;;) {
      const running = this.#running.get(target.bucket);
      if (running === undefined) break;
      if (running.forced || !forced) return running.job;
      await running.job.catch(() => {}); // its failure is the background's (onError heard of it)
      while (this.#paused !== undefined && !this.#closed) await this.#paused.released;
      if (this.#closed) throw new OffsetStoreError('STORE_CLOSED', 'compaction is closed');
    }
    const startedAtMs = wallClockMs();
    const background = !forced;
    this.#options.onRun?.({ kind: 'started', bucket: target.bucket, startedAtMs, background });
    const job = this.#compact(target, forced, startedAtMs)
      .then(
        (report) => {
          this.#options.onRun?.({ kind: 'finished', report });
          return report;
        },
        (thrown: unknown) => {
          // Named for the bucket and as an OffsetStoreError here already: a bare errno error
          // (ENOSPC from a file the job wrote) would tell the listener neither.
          const error = compactionError(thrown, target.bucket, this.#options.strategy?.id);
          this.#options.onRun?.({
            kind: 'failed',
            bucket: target.bucket,
            startedAtMs,
            background,
            error,
          });
          throw error;
        },
      )
      .finally(() => this.#running.delete(target.bucket));
    this.#running.set(target.bucket, { job, forced });
    return job;
  }

  /** The strategy's state for a bucket, read from disk the first time. */
  async #state(target: CompactionTarget): Promise<JsonValue | undefined> {
    if (!this.#states.has(target.bucket)) {
      this.#states.set(
        target.bucket,
        await readStrategyState(target.log.fs, target.log.dir, this.#options.strategy!.id),
      );
    }
    return this.#states.get(target.bucket);
  }

  /**
   * Step 2: what the strategy is shown, from `segments`, the same list the job reads (taken after the
   * last await: a log that rolled in between would show the strategy segments the job cannot find).
   */
  #view(
    target: CompactionTarget,
    forced: boolean,
    state: JsonValue | undefined,
    segments: SegmentInfo[],
  ): BucketView {
    const log = target.log;
    const logBytes = segments.reduce((sum, s) => sum + s.sizeBytes, 0);
    const liveBytesEstimate = target.liveBytesEstimate();
    const o = this.#options;
    return {
      bucket: target.bucket,
      strategy: o.strategy!.id,
      nowMs: o.clock.nowMs(),
      forced,
      segments: segments.map((s, i) => ({
        baseOffset: s.baseOffset,
        lastLogOffset: s.lastLogOffset,
        sizeBytes: s.sizeBytes,
        sealed: i < segments.length - 1,
      })),
      logBytes,
      logEndOffset: log.nextOffset,
      logStartOffset: target.logStart(),
      liveOffsets: target.liveOffsets(),
      liveSnapshots: target.liveSnapshots(),
      liveBytesEstimate,
      garbageRatioEstimate: logBytes === 0 ? 0 : 1 - Math.min(1, liveBytesEstimate / logBytes),
      checkpoint: target.newestCheckpoint(),
      batchesSinceCheckpoint: target.batchesSinceCheckpoint(),
      state,
      settings: {
        minDirtyRatio: o.minDirtyRatio,
        logBytesMax: o.logBytesMax,
        segmentBytesMax: o.segmentBytesMax,
        deleteRetentionMs: o.deleteRetentionMs,
      },
    };
  }

  async #compact(
    target: CompactionTarget,
    forced: boolean,
    startedAtMs: number,
  ): Promise<BucketCompaction> {
    const startedMs = performance.now();
    const log = target.log;
    const strategy = this.#options.strategy!;
    const author: PlanAuthor = {
      strategy: strategy.id,
      checkpoints: strategy.checkpoints,
      rewrites: strategy.rewrites,
    };
    // Before a half-done swap is completed: what it frees is this run's work too.
    const bytesBefore = log.sizeBytes;
    const segmentsBefore = log.segments().length;
    await log.completeSwap();
    // Outputs, a checkpoint and the strategy's state are written into the log's folder by name.
    await log.checkDirectory();
    // Outputs of an earlier job of this log that never reached its swap (a worker thread stopped by
    // runTimeoutMs in the middle of its rewrite) are garbage now: no other job of this log runs.
    if (strategy.rewrites) await log.deleteStrayOutputs();
    const state = await this.#state(target);
    const segments = log.segments();
    const view = this.#view(target, forced, state, segments);
    const result: BucketCompaction = {
      bucket: target.bucket,
      startedAtMs,
      background: !forced,
      bytesBefore,
      bytesAfter: 0,
      segmentsBefore,
      segmentsAfter: 0,
      segmentsRewritten: 0,
      recordsRead: 0,
      recordsDropped: 0,
      bytesRead: 0,
      bytesWritten: 0,
      durationMs: 0,
    };
    const job = await this.#plan(target, view, segments, author);
    if (job.failure !== undefined) throw jobError(job.failure);
    result.workerCpuMs = job.workerCpuMs;
    result.workerHeapBytes = job.workerHeapBytes;
    result.workerPriority = job.workerPriority;
    result.bytesRead = job.bytesRead;
    // Step 4: never trust what came back: the plan again, then every output against its group. A
    // refusal deletes the outputs (nothing changed: nothing of the run is left behind either).
    let plan: ValidatedPlan | null;
    let groups: SegmentInfo[][];
    try {
      plan = job.plan === null ? null : validatePlan(planOf(job.plan), view, author);
      groups = (plan?.groups ?? []).map((bases) =>
        bases.map((base) => segments.find((s) => s.baseOffset === base)!),
      );
      checkOutputs(
        log.dir,
        groups.map((g) => ({
          bases: g.map((s) => s.baseOffset),
          lastLogOffset: g.at(-1)!.lastLogOffset,
        })),
        job.outputs,
        author,
        view,
      );
      if (plan?.deleteBelow !== undefined && !plan.checkpoint && !this.#closed)
        this.#checkCovered(plan.deleteBelow, target, author, view);
    } catch (error) {
      await deleteOutputs(log, job.outputs);
      throw error;
    }
    if (this.#closed || plan === null) return this.#finish(result, target, startedMs);
    // Step 5: in log order, so a tombstone dropped by a later group never outlives the older records an earlier group drops.
    for (const [g, inputs] of groups.entries()) {
      await log.replaceSegments(inputs, job.outputs[g]!);
      result.segmentsRewritten += inputs.length;
    }
    result.recordsRead = job.recordsRead;
    result.recordsDropped = job.recordsRead - job.recordsKept;
    result.bytesWritten = job.bytesWritten;
    // Step 6.
    if (plan.checkpoint) result.bytesWritten += (await target.writeCheckpoint()).bytesWritten;
    if (plan.deleteBelow !== undefined)
      await target.freeBelow(this.#checkCovered(plan.deleteBelow, target, author, view));
    // Step 7.
    if (plan.state !== undefined) {
      this.#states.set(target.bucket, plan.state.value);
      try {
        await writeStrategyState(log.fs, log.dir, strategy.id, plan.state.value);
      } catch (error) {
        throw new OffsetStoreError(
          'LOG_STORAGE_ERROR',
          `compacting offsets-bucket ${target.bucket}: writing its strategy state failed (the compaction itself is done and durable; the state is advice, and a later run after a reopen starts from the one it finds): ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
    return this.#finish(result, target, startedMs);
  }

  /** Step 3 within `runTimeoutMs`: past it, the job is stopped and the run fails (REQUEST_TIMED_OUT). */
  async #plan(
    target: CompactionTarget,
    view: BucketView,
    segments: SegmentInfo[],
    author: PlanAuthor,
  ): Promise<CompactionJobResult> {
    const timeoutMs = this.#options.runTimeoutMs;
    const timedOut = new AbortController();
    const timer = setTimeout(
      () =>
        timedOut.abort(
          new OffsetStoreError(
            'REQUEST_TIMED_OUT',
            `compacting offsets-bucket ${target.bucket} took longer than compaction.runTimeoutMs (${timeoutMs} ms): it was stopped and nothing was changed (strategy '${this.#options.strategy!.id}': a plan that never settles or loops, or a log too large to rewrite in that time; the next pass tries again)`,
          ),
        ),
      timeoutMs,
    );
    timer.unref();
    try {
      return await this.#planWithin(target, view, segments, author, timedOut.signal);
    } catch (error) {
      if (timedOut.signal.aborted && !this.#closed) throw timedOut.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Step 3: the job, on the runner, or here for a strategy that never rewrites; `timedOut` stops it. */
  async #planWithin(
    target: CompactionTarget,
    view: BucketView,
    segments: SegmentInfo[],
    author: PlanAuthor,
    timedOut: AbortSignal,
  ): Promise<CompactionJobResult> {
    const strategy = this.#options.strategy!;
    const runner = this.#options.runner;
    if (strategy.rewrites && runner !== undefined) {
      return runner.run(
        {
          dir: target.log.dir,
          strategy: strategy.ref,
          author,
          // A copy: in-process, the strategy must not be able to change what the plan is checked against.
          view: structuredClone(view),
          batchBytesMax: this.#options.batchBytesMax,
          segments: segments.map((s) => ({
            path: s.path,
            baseOffset: s.baseOffset,
            lastLogOffset: s.lastLogOffset,
            sizeBytes: s.sizeBytes,
          })),
        },
        timedOut,
      );
    }
    const empty: CompactionJobResult = {
      plan: null,
      outputs: [],
      recordsRead: 0,
      recordsKept: 0,
      tombstonesDropped: 0,
      inputBytes: 0,
      bytesWritten: 0,
      bytesRead: 0,
    };
    // It cannot read the log here: a call fails the run, whether or not the plan awaits it (a
    // rejection it let go would reach the process as unhandled, so the one returned is handled).
    const inspected = new OffsetStoreError(
      'INVALID_COMPACTION_PLAN',
      `strategy '${strategy.id}' planned for offsets-bucket ${view.bucket}: it declares rewrites: false, plans on the main thread and cannot read the log, but it called the inspector; nothing was changed`,
    );
    let inspectorCalled = false;
    const noInspector: LogInspector = {
      segmentGarbage: () => {
        inspectorCalled = true;
        const refused = Promise.reject(inspected);
        refused.catch(() => {});
        return refused;
      },
    };
    let proposed: unknown;
    try {
      const shown = structuredClone(view);
      // A plan that never settles must not hold close(), nor the passes: it is abandoned (it
      // writes nothing) when the store closes or the run times out.
      proposed = await untilAbandoned(
        strategy.definition.plan(shown, noInspector),
        AbortSignal.any([this.#closing.signal, timedOut]),
      );
    } catch (error) {
      if (this.#closed) throw abandonedError(view.bucket);
      throw new OffsetStoreError(
        'INVALID_COMPACTION_PLAN',
        `strategy '${strategy.id}' failed while planning for offsets-bucket ${view.bucket}: ${describeThrown(error)}; nothing was changed`,
        { cause: error },
      );
    }
    if (inspectorCalled) throw inspected;
    empty.plan = validatePlan(proposed, view, author);
    return empty;
  }

  /** The log offset to delete below, once the newest checkpoint is known to cover it (INVALID_COMPACTION_PLAN otherwise). */
  #checkCovered(
    deleteBelow: number | 'checkpoint',
    target: CompactionTarget,
    author: PlanAuthor,
    view: BucketView,
  ): number {
    const newest = target.newestCheckpoint();
    const logOffset = deleteBelow === 'checkpoint' ? newest?.logOffset : deleteBelow;
    if (newest === undefined || logOffset === undefined || logOffset > newest.logOffset) {
      throw new OffsetStoreError(
        'INVALID_COMPACTION_PLAN',
        `strategy '${author.strategy}' planned for offsets-bucket ${view.bucket}: deleting segments below log offset ${String(logOffset ?? deleteBelow)} would drop live records no checkpoint covers (the newest checkpoint is at ${newest?.logOffset ?? 'none'}); refused, nothing was deleted`,
      );
    }
    return logOffset;
  }

  #finish(result: BucketCompaction, target: CompactionTarget, startedMs: number): BucketCompaction {
    result.bytesAfter = target.log.sizeBytes;
    result.segmentsAfter = target.log.segments().length;
    result.checkpointLogOffset = target.newestCheckpoint()?.logOffset;
    result.durationMs = performance.now() - startedMs;
    return result;
  }

  /**
   * Holds compaction still, without abandoning anything or moving the schedule: no run of a bucket
   * starts (a run the timer or `compactNow` asks for meanwhile waits), and this resolves true once
   * the runs in flight have finished, swaps and checkpoints included. For a backup, which copies
   * segments and checkpoints that a run would replace. Closing would abandon a long run each time
   * and restart the interval, so frequent backups would keep the logs from being compacted at all.
   * Resolves false when runs are still in flight after `waitMs` on the clock (a strategy whose plan
   * never settles, or a very long run): compaction stays paused, and the caller may close instead.
   */
  async pause(waitMs: number): Promise<boolean> {
    if (this.#paused === undefined) {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      this.#paused = { released, release };
    }
    const running = [...this.#running.values()].map((r) => r.job);
    if (running.length === 0) return true;
    let timer: Timer | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = this.#options.clock.setTimer(waitMs, () => resolve(false));
    });
    try {
      return await Promise.race([Promise.allSettled(running).then(() => true), late]);
    } finally {
      timer?.cancel();
    }
  }

  /** Lets runs start again after `pause()`; those that waited start now. */
  resume(): void {
    const paused = this.#paused;
    this.#paused = undefined;
    paused?.release();
  }

  /**
   * Stops scheduling and terminates the workers, abandoning a job in flight (its `.cleaned` outputs
   * are never swapped in, and the next open, or the log's next compaction, deletes them); then waits for running jobs to settle, so
   * a swap or checkpoint already under way on the main thread completes before the logs close.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort();
    this.#timer?.cancel();
    this.resume(); // runs waiting on a pause see the close and stop
    await this.#options.runner?.close();
    await Promise.allSettled([...this.#running.values()].map((r) => r.job));
  }
}

/**
 * Deletes a refused job's outputs (`.cleaned` files never swapped in); errors doing so are dropped:
 * the refusal is what is reported, and the log's next open or next compaction deletes what is left.
 */
async function deleteOutputs(log: Log, outputs: CleanedSegment[][]): Promise<void> {
  for (const output of outputs.flat()) await log.fs.unlink(output.tempPath).catch(() => {});
}

/** A validated plan in CompactionPlan form again, to validate on this side of the thread boundary. */
function planOf(plan: ValidatedPlan): Record<string, unknown> {
  return {
    rewrite: plan.groups,
    mapFrom: plan.mapFrom,
    tombstonesBelow: plan.tombstonesBelow,
    checkpoint: plan.checkpoint,
    ...(plan.deleteBelow === undefined ? {} : { deleteBelow: plan.deleteBelow }),
    ...(plan.state === undefined ? {} : { state: plan.state.value }),
  };
}

/** STORE_CLOSED for a compactNow that close() cut short, with what failed because of it, if anything. */
function cutShort(cause: unknown): OffsetStoreError {
  return new OffsetStoreError(
    'STORE_CLOSED',
    'compaction was cut short: the store is closing',
    cause === undefined ? undefined : { cause },
  );
}

/**
 * A failed compaction as an OffsetStoreError: one already is as it came; anything else (an I/O
 * error of a checkpoint's write, a worker thread that died) is LOG_STORAGE_ERROR naming the bucket,
 * with the original as its cause.
 */
function compactionError(
  error: unknown,
  bucket: number,
  strategy: string | undefined,
): OffsetStoreError {
  if (isOffsetStoreError(error)) return error;
  const message = (error as Error | undefined)?.message ?? String(error);
  const whose = strategy === undefined ? '' : ` (strategy '${strategy}')`;
  // The thread ended under the job: the strategy's code ran there too.
  const hint = /worker exited|worker terminated|memory limit/i.test(message)
    ? ` (the worker thread running the job ended: a strategy that calls process.exit, or a job that ran out of memory${whose})`
    : message.startsWith(UNCAUGHT_IN_WORKER)
      ? whose
      : '';
  return new OffsetStoreError(
    'LOG_STORAGE_ERROR',
    `compacting offsets-bucket ${bucket} failed (what it had not finished changed nothing): ${message}${hint}`,
    { cause: error },
  );
}
