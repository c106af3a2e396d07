/**
 * What a workload is and what it returns, plus the helpers every workload shares: opening an
 * adapter on a fresh directory, timing with tinybench, and running closed-loop workers with latency
 * histograms.
 */
import { Bench, type Fn, type FnHook } from 'tinybench';
import type { AdapterSpec, OffsetStoreAdapter } from '../adapter.js';
import type { CompareConfig, WorkloadId } from '../compare-config.js';
import { LatencyHistogram } from '../latency-histogram.js';

/** Units the report knows how to format. */
export type Unit = 'ops/s' | 'ns' | 'ms' | 'B' | 'x';

/** One measured figure. */
export interface Metric {
  label: string;
  value: number;
  unit: Unit;
  better: 'higher' | 'lower';
}

/** The outcome of one workload on one adapter: the headline the ratio is taken on, and the rest. */
export interface WorkloadResult {
  headline: Metric;
  details: Metric[];
  notes: string[];
}

/** What a workload gets from the harness. */
export interface WorkloadContext {
  config: CompareConfig;
  /** A new empty directory for this workload and adapter, removed by the harness afterwards. */
  freshDir(): string;
  log(line: string): void;
}

/**
 * A performance target, checked on the headline: offset-store's advantage over a peer (a fraction
 * for the floor: offset-store / floor), or an absolute bound.
 */
export type Target =
  | { kind: 'vs-peer'; peerId: string; factor: number; text: string }
  | { kind: 'absolute'; max: number; text: string; onlyAtScale?: 'full' };

/** One of the workloads (a)-(g) of issue 6. */
export interface Workload {
  id: WorkloadId;
  title: string;
  /** Whether lmdb-js's second write mode runs it too (write workloads only). */
  runsVariants: boolean;
  /** Whether offset-store/peer ratios are meaningful for the headline. */
  peerRatio: boolean;
  /** Whether the physical floor runs it too (the commit workloads). */
  runsFloor?: boolean;
  targets: Target[];
  run(spec: AdapterSpec, context: WorkloadContext): Promise<WorkloadResult>;
}

/** Opens a fresh adapter of `spec` on `dir`, runs `body`, and closes it whatever happens. */
export async function withAdapter<T>(
  spec: AdapterSpec,
  dir: string,
  body: (adapter: OffsetStoreAdapter) => Promise<T>,
): Promise<T> {
  const adapter = spec.create();
  await adapter.open(dir);
  try {
    return await body(adapter);
  } finally {
    await adapter.close();
  }
}

/** Statistics of a tinybench task, in milliseconds per iteration. */
export interface TinybenchStats {
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  samples: number;
}

/** Times `fn` with tinybench for `timeMs` (plus a short warmup); `beforeEach` runs outside the timing. */
export async function tinybench(
  name: string,
  fn: Fn,
  timeMs: number,
  beforeEach?: FnHook,
): Promise<TinybenchStats> {
  const bench = new Bench({
    name,
    time: timeMs,
    warmupTime: Math.min(500, Math.ceil(timeMs / 3)),
    iterations: 10,
    throws: true,
  });
  bench.add(name, fn, beforeEach === undefined ? {} : { beforeEach });
  await bench.run();
  const result = bench.tasks[0]?.result;
  if (
    result === undefined ||
    (result.state !== 'completed' && result.state !== 'aborted-with-statistics')
  ) {
    throw new Error(`tinybench task '${name}' did not complete (${result?.state ?? 'no result'})`);
  }
  return {
    meanMs: result.latency.mean,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    samples: result.latency.samplesCount,
  };
}

/** Outcome of a closed-loop run: the measured window and one histogram per operation kind. */
export interface ClosedLoopResult {
  elapsedMs: number;
  histograms: Map<string, LatencyHistogram>;
}

/**
 * Runs `workers` closed loops (each issues its next operation when the previous one resolved) for
 * `warmupMs + measureMs`. Operations completing inside the measured window are counted, by the kind
 * each returns; nothing is issued after the window closes, and the run waits for what is in flight.
 */
export async function closedLoop(
  options: { workers: number; warmupMs: number; measureMs: number },
  operation: (worker: number) => Promise<string>,
): Promise<ClosedLoopResult> {
  const histograms = new Map<string, LatencyHistogram>();
  const start = performance.now();
  const measureFrom = start + options.warmupMs;
  const measureTo = measureFrom + options.measureMs;
  const worker = async (index: number): Promise<void> => {
    while (performance.now() < measureTo) {
      const t0 = performance.now();
      const kind = await operation(index);
      const t1 = performance.now();
      if (t0 >= measureFrom && t1 <= measureTo) {
        let histogram = histograms.get(kind);
        if (histogram === undefined) histograms.set(kind, (histogram = new LatencyHistogram()));
        histogram.record((t1 - t0) * 1e6);
      }
    }
  };
  await Promise.all(Array.from({ length: options.workers }, (_, i) => worker(i)));
  return { elapsedMs: options.measureMs, histograms };
}

/** Latency quantiles of `histogram` as metrics named `${prefix} p50` etc., in nanoseconds. */
export function latencyMetrics(prefix: string, histogram: LatencyHistogram | undefined): Metric[] {
  if (histogram === undefined || histogram.count === 0) return [];
  return (
    [
      ['p50', 0.5],
      ['p99', 0.99],
      ['p999', 0.999],
    ] as const
  ).map(([name, q]) => ({
    label: `${prefix} ${name}`,
    value: histogram.quantileNs(q),
    unit: 'ns' as const,
    better: 'lower' as const,
  }));
}
