/**
 * One compaction job, as it runs on a worker thread or in-process: load the strategy, ask it for a
 * plan (with a LogInspector over the bucket's log, and a copy of the view), validate the plan against
 * the view as it was shown, run the engine's rewrite.
 * The job and its result are plain data, so they cross threads; nothing here changes a live segment
 * (the main thread validates again and swaps the outputs in, compactor.ts).
 *
 * Failures travel as data (`failure`): an error object crossing a thread loses its code, and the
 * caller needs it (INVALID_COMPACTION_PLAN, CORRUPT_MESSAGE, LOG_STORAGE_ERROR for an I/O error).
 */
import {
  OffsetStoreError,
  isOffsetStoreError,
  messageWithoutCode,
  type ErrorCode,
} from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import type { CleanedSegment } from '../log/index.js';
import { LogReader, type SegmentRef } from './log-reader.js';
import { validatePlan, type PlanAuthor, type ValidatedPlan } from './plan-validation.js';
import { rewriteSegments } from './segment-rewriter.js';
import { describeThrown, loadStrategy, type StrategyRef } from './strategy-registry.js';
import type { BucketView, GarbageQuery, LogInspector } from './strategy.js';

/**
 * What begins the message of an error nothing in a worker thread caught, which ended the thread
 * and failed its job (compaction-worker.ts marks it so).
 */
export const UNCAUGHT_IN_WORKER =
  'the worker thread running the job ended on an error nothing caught';

/** A compaction job: plain data. */
export interface CompactionJob {
  /** The offsets-bucket's log directory (outputs are written there). */
  dir: string;
  /** The strategy to load. */
  strategy: StrategyRef;
  /**
   * What the store knows of that strategy, from store.json and its own load of it: the id the
   * loaded strategy must have (a module changed on disk since the store opened is refused), and
   * the checkpoints and rewrites the plan is checked against. Whether the rewrite keeps tombstones
   * follows `checkpoints` here, never what a module says of itself in this thread.
   */
  author: PlanAuthor;
  /** What the strategy is shown. */
  view: BucketView;
  /** The segments of `view` with their paths, oldest first (the last is active). */
  segments: SegmentRef[];
  /** Largest batch accepted while reading; a larger length is damage. */
  batchBytesMax: number;
}

/** What a job did, or why it failed. */
export interface CompactionJobResult {
  /** The validated plan (null: nothing to do). */
  plan: ValidatedPlan | null;
  /** Per rewrite group, its outputs under temporary names. */
  outputs: CleanedSegment[][];
  /** Records read by the rewrite. */
  recordsRead: number;
  /** Records the rewrite kept. */
  recordsKept: number;
  /** Tombstones the rewrite dropped. */
  tombstonesDropped: number;
  /** Bytes of the segments the rewrite replaced. */
  inputBytes: number;
  /** Bytes the rewrite wrote. */
  bytesWritten: number;
  /** Bytes read (inspection and rewrite). */
  bytesRead: number;
  /** CPU time of the worker thread for this job, ms (undefined in-process, or where the platform does not tell). */
  workerCpuMs?: number;
  /** Heap of the worker thread at the end of the job (its key map still alive), bytes. */
  workerHeapBytes?: number;
  /** The worker thread's CPU priority while it ran the job: 'idle' (SCHED_IDLE) or its nice value (undefined in-process). */
  workerPriority?: number | 'idle';
  /** Set when the job failed: the error to raise on the main thread. */
  failure?: { code: ErrorCode; message: string };
}

/**
 * Runs `job` through `fs` (see the module comment). `abandon`, when it aborts, stops waiting for a
 * strategy's `plan` and writes nothing (STORE_CLOSED): a plan that never settles does not hold
 * a closing store.
 */
export async function runCompactionJob(
  fs: FileSystem,
  job: CompactionJob,
  abandon?: AbortSignal,
): Promise<CompactionJobResult> {
  const result: CompactionJobResult = {
    plan: null,
    outputs: [],
    recordsRead: 0,
    recordsKept: 0,
    tombstonesDropped: 0,
    inputBytes: 0,
    bytesWritten: 0,
    bytesRead: 0,
  };
  const reader = new LogReader(fs, job.segments, job.batchBytesMax);
  try {
    const strategy = await loadStrategy(job.strategy);
    if (strategy.id !== job.author.strategy)
      throw new OffsetStoreError(
        'INVALID_CONFIG',
        `the compaction strategy loaded for offsets-bucket ${job.view.bucket} is '${strategy.id}', not the store's '${job.author.strategy}': its module changed on disk since this process loaded it; restart the process to use the new one (reopening the store in this process keeps the module it loaded first); nothing was changed`,
      );
    const view = job.view;
    const horizonMs = view.nowMs - view.settings.deleteRetentionMs;
    // What the engine throws through the inspector (a read failed, a batch is damaged) keeps its
    // code when the strategy lets it through; anything else a plan throws is the strategy's failure.
    const enginesErrors = new WeakSet<object>();
    // The inspector's reads in flight: an abandoned plan is let go, its reads are not (their files
    // are open until they end, and the store that closes must find every file closed).
    const reads = new Set<Promise<unknown>>();
    const inspector: LogInspector = {
      segmentGarbage: (query) => {
        if (abandon?.aborted === true)
          return Promise.reject(
            new OffsetStoreError('STORE_CLOSED', 'the store is closing: nothing more is read'),
          );
        let asked: GarbageQuery;
        try {
          asked = queryOf(query);
        } catch (error) {
          return Promise.reject(error); // the strategy's own, not the engine's
        }
        const read = reader.segmentGarbage(asked, horizonMs).catch((error: unknown) => {
          // A query the reader refuses (a segment that is not a sealed one) is the strategy's.
          if (
            typeof error === 'object' &&
            error !== null &&
            !isOffsetStoreError(error, 'INVALID_COMPACTION_PLAN')
          )
            enginesErrors.add(error);
          throw error;
        });
        const settled = read.then(
          () => undefined,
          () => undefined,
        );
        reads.add(settled);
        void settled.then(() => reads.delete(settled));
        return read;
      },
    };
    let proposed: unknown;
    try {
      // A copy: the plan is checked, and the rewrite sized, against the view as it was shown.
      const shown = structuredClone(view);
      proposed = await untilAbandoned(strategy.definition.plan(shown, inspector), abandon);
    } catch (error) {
      if (error === ABANDONED) {
        await Promise.all([...reads]);
        throw abandonedError(view.bucket);
      }
      if (typeof error === 'object' && error !== null && enginesErrors.has(error)) throw error;
      throw new OffsetStoreError(
        'INVALID_COMPACTION_PLAN',
        `strategy '${job.author.strategy}' failed while planning for offsets-bucket ${view.bucket}: ${describeThrown(error)}; nothing was changed`,
      );
    }
    if (abandon?.aborted === true) throw abandonedError(view.bucket);
    const plan = validatePlan(proposed, view, job.author);
    result.plan = plan;
    if (plan !== null && plan.groups.length > 0) {
      const rewrite = await rewriteSegments(fs, job.dir, reader, {
        groups: plan.groups.map((bases) => bases.map((base) => reader.sealed(base)!)),
        mapFrom: plan.mapFrom,
        horizonMs,
        tombstonesBelow: plan.tombstonesBelow,
        keepTombstones: job.author.checkpoints,
        segmentBytesMax: view.settings.segmentBytesMax,
      });
      result.outputs = rewrite.outputs;
      result.recordsRead = rewrite.recordsRead;
      result.recordsKept = rewrite.recordsKept;
      result.tombstonesDropped = rewrite.tombstonesDropped;
      result.inputBytes = rewrite.inputBytes;
      result.bytesWritten = rewrite.bytesWritten;
    }
  } catch (error) {
    result.failure = failureOf(error, job);
  }
  result.bytesRead = reader.bytesRead;
  return result;
}

/**
 * A strategy's query, read once into plain data before the engine reads anything: what reading it
 * throws (a getter, a Proxy, an iterator) is the strategy's error, whatever its `code`, never one the
 * engine raised. The reader checks the values.
 */
function queryOf(query: unknown): GarbageQuery {
  if (query === undefined) return {};
  if (typeof query !== 'object' || query === null)
    throw new OffsetStoreError(
      'INVALID_COMPACTION_PLAN',
      `segmentGarbage: its query must be an object, got ${String(query)}`,
    );
  const { mapFrom, segments, tombstonesBelow } = query as Record<string, unknown>;
  if (segments !== undefined && !Array.isArray(segments))
    throw new OffsetStoreError(
      'INVALID_COMPACTION_PLAN',
      'segmentGarbage: segments must be an array of base offsets',
    );
  return {
    mapFrom: mapFrom as number | undefined,
    segments: segments === undefined ? undefined : Array.from(segments as number[]),
    tombstonesBelow: tombstonesBelow as number | undefined,
  };
}

const ABANDONED = Symbol('abandoned');

/** `promise`, or a rejection with ABANDONED once `abandon` aborts (the promise is left to itself). */
export function untilAbandoned<T>(promise: T | Promise<T>, abandon?: AbortSignal): Promise<T> {
  if (abandon === undefined) return Promise.resolve(promise);
  if (abandon.aborted) {
    // Left to itself, heard by no one: its rejection (its inspector's STORE_CLOSED, as likely as
    // not) must not become an unhandled rejection, which ends a Node process.
    Promise.resolve(promise).catch(() => {});
    return Promise.reject(ABANDONED);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(ABANDONED);
    abandon.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(promise).then(
      (value) => {
        abandon.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        abandon.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** The error of a compaction abandoned because the store closes while its strategy plans. */
export function abandonedError(bucket: number): OffsetStoreError {
  return new OffsetStoreError(
    'STORE_CLOSED',
    `compacting offsets-bucket ${bucket} was abandoned: the store is closing`,
  );
}

function failureOf(error: unknown, job: CompactionJob): { code: ErrorCode; message: string } {
  if (error instanceof OffsetStoreError)
    return { code: error.code, message: messageWithoutCode(error) };
  if (error instanceof Error && typeof (error as NodeJS.ErrnoException).code === 'string') {
    return {
      code: 'LOG_STORAGE_ERROR',
      message: `compacting offsets-bucket ${job.view.bucket} failed (nothing was swapped in): ${error.message}`,
    };
  }
  // A strategy's own bug (a TypeError in its plan): reported as its failure, not the engine's.
  return {
    code: 'INVALID_COMPACTION_PLAN',
    message: `strategy '${'builtIn' in job.strategy ? job.strategy.builtIn : job.strategy.moduleUrl}' failed while planning for offsets-bucket ${job.view.bucket}: ${describeThrown(error)}; nothing was changed`,
  };
}

/** The OffsetStoreError of a failed job. */
export function jobError(failure: { code: ErrorCode; message: string }): OffsetStoreError {
  return new OffsetStoreError(failure.code, failure.message);
}
