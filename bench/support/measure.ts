/**
 * Runs one benchmark task with tinybench 6 and turns its samples into the figures the reports print.
 *
 * tinybench times every call (latency samples, from which p50/p99 come). With `concurrency > 1` it
 * keeps that many calls in flight (`concurrency: 'task'`, `threshold` = concurrency), and its own
 * throughput (1 / latency per sample) would be wrong, so throughput here is always calls completed
 * during the timed phase divided by that phase's wall time. Setup and teardown stay with the caller:
 * only `fn` runs inside the timed window.
 */
import { Bench } from 'tinybench';

/** One task to measure. */
export interface TaskSpec {
  /** Row label: states the parameters and the durability. */
  name: string;
  /** One call of the operation under test. */
  fn: () => unknown;
  /**
   * Set for a task whose calls another process makes (a load driver): it runs one round itself,
   * warm-up then `timeMs` timed, and reports it; `fn` is then not called.
   */
  round?: (timeMs: number, warmupMs: number) => Promise<RoundResult>;
  /** True when `fn` returns a promise to await (tinybench times it to settlement). */
  async: boolean;
  /** Calls kept in flight at once; default 1 (sequential). */
  concurrency?: number;
  /** Units of work one call does (records, offsets) for units/s and per-unit latency; default 1. */
  unitsPerCall?: number;
}

/** How long to measure. */
export interface MeasureOptions {
  /** Timed phase per task, milliseconds, split over the rounds. */
  timeMs: number;
  /** Warm-up before a task's first round (not counted), milliseconds. */
  warmupMs: number;
  /**
   * Interleaved rounds (default 1). With several tasks and rounds > 1, the tasks take turns (in a
   * rotating order), so a disk whose speed drifts (a shared or virtual disk) shifts every task
   * alike and the ratios between them stay fair.
   */
  rounds?: number;
  /** Fewest calls of a sequential task per round even when its time has run out; default 16. */
  minCalls?: number;
}

/** What one task measured. Latencies are per call, in milliseconds. */
export interface TaskResult {
  name: string;
  concurrency: number;
  unitsPerCall: number;
  calls: number;
  wallMs: number;
  callsPerSec: number;
  unitsPerSec: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
}

/** One round of a task: calls completed in the timed phase, its wall time, each call's latency (ms). */
export interface RoundResult {
  calls: number;
  wallMs: number;
  samplesMs: number[];
}

async function runRound(
  spec: TaskSpec,
  timeMs: number,
  warmupMs: number,
  minCalls: number,
): Promise<RoundResult> {
  if (spec.round !== undefined) return spec.round(timeMs, warmupMs);
  const concurrency = spec.concurrency ?? 1;
  const concurrent = concurrency > 1;
  let counting = false;
  let calls = 0;
  let startedMs = 0;
  let wallMs = 0;
  const bench = new Bench({
    name: spec.name,
    time: timeMs,
    warmup: warmupMs > 0,
    warmupTime: warmupMs,
    // In 'task' mode a positive count caps the calls, so 0 (no cap) lets time alone decide.
    iterations: concurrent ? 0 : minCalls,
    warmupIterations: concurrent ? 0 : 8,
    concurrency: concurrent ? 'task' : null,
    threshold: concurrent ? concurrency : Infinity,
    retainSamples: true,
    throws: true,
  });
  const call = spec.fn;
  const counted = spec.async
    ? async () => {
        await call();
        if (counting) calls++;
      }
    : () => {
        call();
        if (counting) calls++;
      };
  bench.add(spec.name, counted, {
    async: spec.async,
    beforeAll(mode) {
      if (mode !== 'run') return;
      counting = true;
      startedMs = performance.now();
    },
    afterAll(mode) {
      if (mode !== 'run') return;
      wallMs = performance.now() - startedMs;
      counting = false;
    },
  });
  await bench.run();
  const result = bench.tasks[0]!.result;
  if (result.state === 'errored') throw result.error;
  if (result.state !== 'completed')
    throw new Error(`task ${spec.name} ended in state ${result.state}`);
  return { calls, wallMs, samplesMs: Array.from(result.latency.samples ?? []) };
}

/** Measures one task. */
export async function measure(spec: TaskSpec, options: MeasureOptions): Promise<TaskResult> {
  return (await measureInterleaved([spec], options))[0]!;
}

/** Measures tasks side by side, taking turns over `options.rounds` rounds; results in input order. */
export async function measureInterleaved(
  specs: readonly TaskSpec[],
  options: MeasureOptions,
): Promise<TaskResult[]> {
  const rounds = Math.max(1, options.rounds ?? 1);
  const perRound: RoundResult[][] = specs.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < specs.length; k++) {
      const i = (k + round) % specs.length;
      perRound[i]!.push(
        await runRound(
          specs[i]!,
          options.timeMs / rounds,
          round === 0 ? options.warmupMs : 0,
          options.minCalls ?? 16,
        ),
      );
    }
  }
  return specs.map((spec, i) => {
    const results = perRound[i]!;
    const calls = results.reduce((sum, r) => sum + r.calls, 0);
    const wallMs = results.reduce((sum, r) => sum + r.wallMs, 0);
    const latency = percentiles(results.flatMap((r) => r.samplesMs));
    const unitsPerCall = spec.unitsPerCall ?? 1;
    return {
      name: spec.name,
      concurrency: spec.concurrency ?? 1,
      unitsPerCall,
      calls,
      wallMs,
      callsPerSec: calls / (wallMs / 1000),
      unitsPerSec: (calls * unitsPerCall) / (wallMs / 1000),
      meanMs: latency.meanMs,
      p50Ms: latency.p50Ms,
      p99Ms: latency.p99Ms,
    };
  });
}

/**
 * Latency percentiles of a sample (milliseconds), for the benches that collect latencies themselves
 * (commits racing a background compaction, where tinybench's one-task-at-a-time model does not fit).
 */
export function percentiles(samplesMs: readonly number[]): {
  count: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
} {
  const sorted = Float64Array.from(samplesMs).sort();
  const at = (q: number) =>
    sorted.length === 0
      ? NaN
      : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    meanMs: sorted.length === 0 ? NaN : sum / sorted.length,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    maxMs: at(1),
  };
}
