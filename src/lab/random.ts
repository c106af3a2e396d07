/**
 * Seeded randomness for the lab's workloads: every run of a workload with the same seed issues the
 * same operations, so strategies are compared on identical input. mulberry32 for uniform draws, and
 * a Zipf sampler over ranks 0..n-1 (P(rank k) proportional to 1 / (k + 1)^s) by inverse transform on
 * a precomputed cumulative table (n floats; 8 MB at a million ranks) with binary search.
 */

/** A uniform [0, 1) generator from a 32-bit seed (mulberry32). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws ranks 0..n-1 with Zipf's law of exponent `s` (rank 0 the most frequent). */
export class ZipfSampler {
  readonly #cumulative: Float64Array;
  readonly #random: () => number;

  /** `n` ranks (>= 1), exponent `s` (> 0), uniform draws from `random`. */
  constructor(n: number, s: number, random: () => number) {
    if (!(Number.isSafeInteger(n) && n >= 1))
      throw new RangeError(`a Zipf sampler needs n >= 1, got ${n}`);
    this.#cumulative = new Float64Array(n);
    let sum = 0;
    for (let k = 0; k < n; k++) {
      sum += 1 / (k + 1) ** s;
      this.#cumulative[k] = sum;
    }
    for (let k = 0; k < n; k++) this.#cumulative[k]! /= sum;
    this.#random = random;
  }

  /** The next rank. */
  next(): number {
    const u = this.#random();
    const c = this.#cumulative;
    let lo = 0;
    let hi = c.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (c[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
