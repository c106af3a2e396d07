/**
 * The p50/p99/p999 figures of workloads (b) and (g) come from this histogram: its quantiles must stay
 * within its stated 1.6% of the exact ones.
 */
import { describe, expect, it } from 'vitest';
import { LatencyHistogram } from '../../bench/compare/latency-histogram.js';
import { Random } from '../../bench/compare/random.js';

function exactQuantile(sorted: number[], q: number): number {
  return sorted[Math.ceil(q * sorted.length) - 1]!;
}

describe('LatencyHistogram', () => {
  it('reports quantiles within 1.6% of the exact ones over six orders of magnitude', () => {
    const random = new Random(42);
    const histogram = new LatencyHistogram();
    const samples: number[] = [];
    for (let i = 0; i < 50_000; i++) {
      const ns = Math.round(10 ** (2 + random.next() * 6)); // 100 ns to 100 ms, log-uniform
      samples.push(ns);
      histogram.record(ns);
    }
    samples.sort((a, b) => a - b);

    for (const q of [0.5, 0.9, 0.99, 0.999]) {
      const exact = exactQuantile(samples, q);
      expect(Math.abs(histogram.quantileNs(q) - exact) / exact).toBeLessThan(0.016);
    }
    expect(histogram.count).toBe(50_000);
    expect(histogram.maxNs).toBe(samples[samples.length - 1]);
    expect(histogram.minNs).toBe(samples[0]);
  });

  it('is exact below 128 ns and never reports beyond the recorded extremes', () => {
    const histogram = new LatencyHistogram();
    for (const ns of [3, 5, 7, 100]) histogram.record(ns);

    expect(histogram.quantileNs(0.5)).toBe(5);
    expect(histogram.quantileNs(1)).toBe(100);
    expect(histogram.meanNs).toBeCloseTo(28.75);
  });

  it('merges two histograms into the one of all samples', () => {
    const a = new LatencyHistogram();
    const b = new LatencyHistogram();
    const all = new LatencyHistogram();
    for (let i = 1; i <= 1000; i++) {
      (i % 2 === 0 ? a : b).record(i * 1000);
      all.record(i * 1000);
    }
    a.merge(b);

    expect(a.count).toBe(all.count);
    expect(a.quantileNs(0.99)).toBe(all.quantileNs(0.99));
    expect(a.minNs).toBe(1000);
    expect(a.maxNs).toBe(1_000_000);
  });

  it('reports zeros when empty and rejects a quantile outside (0, 1]', () => {
    const histogram = new LatencyHistogram();

    expect(histogram.quantileNs(0.99)).toBe(0);
    expect(histogram.meanNs).toBe(0);
    expect(() => histogram.quantileNs(0)).toThrow(RangeError);
  });
});
