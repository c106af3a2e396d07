/**
 * One compaction job, as it runs on a worker thread or in-process: load the strategy, ask it for a
 * plan (with a LogInspector over the bucket's log), validate the plan, run the engine's rewrite.
 * The job and its result are plain data, so they cross threads; nothing here changes a live segment
 * (the main thread validates again and swaps the outputs in, compactor.ts).
 *
 * Failures travel as data (`failure`): an error object crossing a thread loses its code, and the
 * caller needs it (INVALID_COMPACTION_PLAN, CORRUPT_MESSAGE, LOG_STORAGE_ERROR for an I/O error).
 */
import { OffsetStoreError, type ErrorCode } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import type { CleanedSegment } from '../log/index.js';
import { LogReader, type SegmentRef } from './log-reader.js';
import { validatePlan, type ValidatedPlan } from './plan-validation.js';
import { rewriteSegments } from './segment-rewriter.js';
import { loadStrategy, type StrategyRef } from './strategy-registry.js';
import type { BucketView, LogInspector } from './strategy.js';

/** A compaction job: plain data. */
export interface CompactionJob {
  /** The offsets-bucket's log directory (outputs are written there). */
  dir: string;
  /** The strategy to load. */
  strategy: StrategyRef;
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

/** Runs `job` through `fs` (see the module comment). */
export async function runCompactionJob(
  fs: FileSystem,
  job: CompactionJob,
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
    const view = job.view;
    const horizonMs = view.nowMs - view.settings.deleteRetentionMs;
    const inspector: LogInspector = {
      segmentGarbage: (query = {}) => reader.segmentGarbage(query, horizonMs),
    };
    const plan = validatePlan(await strategy.definition.plan(view, inspector), view, {
      strategy: strategy.id,
      checkpoints: strategy.checkpoints,
      rewrites: strategy.rewrites,
    });
    result.plan = plan;
    if (plan !== null && plan.groups.length > 0) {
      const rewrite = await rewriteSegments(fs, job.dir, reader, {
        groups: plan.groups.map((bases) => bases.map((base) => reader.sealed(base)!)),
        mapFrom: plan.mapFrom,
        horizonMs,
        tombstonesBelow: plan.tombstonesBelow,
        keepTombstones: strategy.checkpoints,
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

function failureOf(error: unknown, job: CompactionJob): { code: ErrorCode; message: string } {
  if (error instanceof OffsetStoreError)
    return { code: error.code, message: error.message.replace(/^[A-Z_]+: /, '') };
  if (error instanceof Error && typeof (error as NodeJS.ErrnoException).code === 'string') {
    return {
      code: 'LOG_STORAGE_ERROR',
      message: `compacting offsets-bucket ${job.view.bucket} failed (nothing was swapped in): ${error.message}`,
    };
  }
  // A strategy's own bug (a TypeError in its plan): reported as its failure, not the engine's.
  return {
    code: 'INVALID_COMPACTION_PLAN',
    message: `strategy '${'builtIn' in job.strategy ? job.strategy.builtIn : job.strategy.moduleUrl}' failed while planning for offsets-bucket ${job.view.bucket}: ${error instanceof Error ? error.message : String(error)}; nothing was changed`,
  };
}

/** The OffsetStoreError of a failed job. */
export function jobError(failure: { code: ErrorCode; message: string }): OffsetStoreError {
  return new OffsetStoreError(failure.code, failure.message);
}
