export {
  Compactor, type BucketCompactedListener, type BucketCompaction, type CompactionReport, type CompactionStrategy, type CompactionTarget, type CompactorOptions,
} from './compactor.js';
export { cleanSegments, type CleanJob, type CleanResult, type SegmentRef } from './log-cleaner.js';
export { CompactionWorkerPool, type WorkerPoolOptions } from './worker-pool.js';
export { InProcessCleanRunner, type CleanRunner } from './clean-runner.js';
