/**
 * src/compaction: the scheduler that decides which offsets-buckets to compact and runs the store's
 * strategy on them, the log cleaner, and where its jobs run (worker threads or in-process). Reaches
 * an offsets-bucket only through the CompactionTarget port; does not import kv. This file is the
 * folder's door.
 */
export {
  COMPACTION_STRATEGIES, Compactor, isCompactionStrategy, type BucketCompactedListener, type BucketCompaction, type CompactionReport, type CompactionStrategy, type CompactionTarget, type CompactorOptions,
} from './compactor.js';
export { cleanSegments, type CleanJob, type CleanResult, type SegmentRef } from './log-cleaner.js';
export { CompactionWorkerPool, type WorkerPoolOptions } from './worker-pool.js';
export { InProcessCleanRunner, type CleanRunner } from './clean-runner.js';
