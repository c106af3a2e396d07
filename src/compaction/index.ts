/**
 * src/compaction: the compaction engine. The strategy interface (strategy.ts) and the built-in
 * strategies (strategies/), how a strategy is named, recorded and loaded (strategy-registry.ts), the
 * scheduler that shows a strategy each offsets-bucket and carries out its plans (compactor.ts), the
 * checks no plan escapes (plan-validation.ts), the engine's rewrite (segment-rewriter.ts,
 * log-reader.ts), and where jobs run (worker threads or in-process). Reaches an offsets-bucket only
 * through the CompactionTarget port; does not import kv. This file is the folder's door.
 */
export {
  Compactor,
  type BucketCompactedListener,
  type BucketCompaction,
  type CompactionReport,
  type CompactionRunEvent,
  type CompactionRunListener,
  type CompactionTarget,
  type CompactorOptions,
} from './compactor.js';
export {
  COMPACTION_STRATEGIES,
  checkDefinition,
  isCompactionStrategy,
  isStrategyModulePath,
  loadStrategy,
  recordedStrategy,
  strategyModuleUrl,
  type CompactionStrategy,
  type LoadedStrategy,
  type StrategyRef,
} from './strategy-registry.js';
export type {
  BucketView,
  CheckpointView,
  CompactionPlan,
  CompactionStrategyDefinition,
  GarbageQuery,
  JsonValue,
  LogInspector,
  SegmentGarbage,
  SegmentView,
  StrategySettings,
} from './strategy.js';
export {
  runCompactionJob,
  type CompactionJob,
  type CompactionJobResult,
} from './compaction-job.js';
export { CompactionWorkerPool, STARVED_JOB_MS, type WorkerPoolOptions } from './worker-pool.js';
export { InProcessRunner, type CompactionRunner } from './job-runner.js';
export { STATE_FILE } from './strategy-state.js';
export { STATE_BYTES_MAX } from './plan-validation.js';
