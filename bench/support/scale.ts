/**
 * Benchmark sizes. `BENCH_SCALE` picks them for every bench file:
 * - `quick`: a smoke run of seconds per file (checks that a bench works, figures are noisy);
 * - `default` (unset): each file in about one to two minutes on the 2-core reference machine;
 * - `full`: the sizes docs/performance.md names (1M live offsets, 10M log records, ...).
 */

/** The scales a bench can run at. */
export type BenchScale = 'quick' | 'default' | 'full';

/** The scale chosen by `BENCH_SCALE` (unset or unknown = default). */
export function benchScale(): BenchScale {
  const value = process.env.BENCH_SCALE;
  if (value === 'quick' || value === 'full') return value;
  if (value !== undefined && value !== '' && value !== 'default') {
    process.emitWarning(`BENCH_SCALE=${value} is not quick, default or full; using default`);
  }
  return 'default';
}

/** Picks the value for the current scale. */
export function atScale<T>(values: Record<BenchScale, T>): T {
  return values[benchScale()];
}
