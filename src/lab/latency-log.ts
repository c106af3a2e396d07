/**
 * Latencies of one lab run: every commit (and fetch) with when it started, how long it took and in
 * which phase, kept as plain number arrays (a default-scale run records a few hundred thousand), and
 * the summaries the report draws: percentiles, and per-window p50/p99 over time.
 */

/** What the store was doing while an operation ran. */
export type LatencyPhase = 'workload' | 'idle' | 'compacting';

/** p50, p99, p99.9 and max of a set of latencies, in ms, with their count. */
export interface Percentiles {
  /** Operations measured. */
  count: number;
  /** Median, ms. */
  p50Ms: number;
  /** 99th percentile, ms. */
  p99Ms: number;
  /** 99.9th percentile, ms. */
  p999Ms: number;
  /** Slowest, ms. */
  maxMs: number;
}

/** One window of the latency timeline. */
export interface LatencyWindow {
  /** Window start, ms since the run started. */
  startMs: number;
  /** The phase most of its commits ran in. */
  phase: LatencyPhase;
  /** Commits that started in it. */
  count: number;
  /** Median commit latency, ms. */
  p50Ms: number;
  /** 99th percentile commit latency, ms. */
  p99Ms: number;
}

const PHASES: readonly LatencyPhase[] = ['workload', 'idle', 'compacting'];

/** Percentiles of `values` (ms); zeros for none. */
export function percentiles(values: readonly number[]): Percentiles {
  if (values.length === 0) return { count: 0, p50Ms: 0, p99Ms: 0, p999Ms: 0, maxMs: 0 };
  const sorted = Float64Array.from(values).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return {
    count: sorted.length,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    p999Ms: at(0.999),
    maxMs: sorted[sorted.length - 1]!,
  };
}

/** The latencies of one run. */
export class LatencyLog {
  readonly #startedMs: number;
  readonly #starts: number[] = [];
  readonly #durations: number[] = [];
  readonly #phases: number[] = [];
  readonly #fetchDurations: number[] = [];

  /** Times are kept relative to `startedMs` (performance.now()). */
  constructor(startedMs: number) {
    this.#startedMs = startedMs;
  }

  /** Records a commit that started at `startMs` (performance.now()) and took `durationMs`. */
  commit(startMs: number, durationMs: number, phase: LatencyPhase): void {
    this.#starts.push(startMs - this.#startedMs);
    this.#durations.push(durationMs);
    this.#phases.push(PHASES.indexOf(phase));
  }

  /** Records a fetch's duration. */
  fetch(durationMs: number): void {
    this.#fetchDurations.push(durationMs);
  }

  /** Commit latencies of a phase; with `during`, only those overlapping (true) or not overlapping (false) those intervals (ms since the run started). */
  commits(
    phase: LatencyPhase,
    during?: { intervals: readonly [number, number][]; overlapping: boolean },
  ): number[] {
    const code = PHASES.indexOf(phase);
    const out: number[] = [];
    for (let i = 0; i < this.#starts.length; i++) {
      if (this.#phases[i] !== code) continue;
      if (during !== undefined) {
        const start = this.#starts[i]!;
        const end = start + this.#durations[i]!;
        const overlaps = during.intervals.some(([a, b]) => start < b && end > a);
        if (overlaps !== during.overlapping) continue;
      }
      out.push(this.#durations[i]!);
    }
    return out;
  }

  /** Fetch latencies. */
  fetches(): number[] {
    return this.#fetchDurations;
  }

  /** The timeline: per `windowMs`, the p50/p99 of the commits that started in it. */
  windows(windowMs: number): LatencyWindow[] {
    const byWindow = new Map<number, { durations: number[]; phases: number[] }>();
    for (let i = 0; i < this.#starts.length; i++) {
      const w = Math.floor(this.#starts[i]! / windowMs);
      let bin = byWindow.get(w);
      if (bin === undefined) byWindow.set(w, (bin = { durations: [], phases: [0, 0, 0] }));
      bin.durations.push(this.#durations[i]!);
      bin.phases[this.#phases[i]!]!++;
    }
    return [...byWindow.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([w, bin]) => {
        const p = percentiles(bin.durations);
        const phase = PHASES[bin.phases.indexOf(Math.max(...bin.phases))]!;
        return { startMs: w * windowMs, phase, count: p.count, p50Ms: p.p50Ms, p99Ms: p.p99Ms };
      });
  }
}
