/**
 * The simulator's only source of randomness: a seeded PRNG (sfc32, 128 bits of state, seeded from a
 * 32-bit integer through splitmix32), so that a seed replays a run exactly. Nothing in a simulation
 * may call Math.random, Date.now or crypto: every choice goes through one of these.
 *
 * `fork(label)` derives an independent stream, so that adding a draw in one part of the simulator
 * (say, the disk's choice of torn sectors) does not shift every later choice of another (the
 * workload), and old regression seeds keep finding what they found.
 */

function splitmix32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

function hashLabel(label: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** A seeded stream of random choices. */
export class SimRandom {
  #a: number;
  #b: number;
  #c: number;
  #d: number;
  readonly seed: number;

  /** A stream from a 32-bit seed. */
  constructor(seed: number) {
    this.seed = seed >>> 0;
    const next = splitmix32(this.seed);
    this.#a = next();
    this.#b = next();
    this.#c = next();
    this.#d = next();
    for (let i = 0; i < 12; i++) this.uint32();
  }

  /** An independent stream for one part of the simulator, derived from this stream's seed and `label`. */
  fork(label: string): SimRandom {
    return new SimRandom((this.seed ^ hashLabel(label)) >>> 0);
  }

  /** A uniform 32-bit unsigned integer. */
  uint32(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** A uniform float in [0, 1). */
  float(): number {
    return this.uint32() / 4294967296;
  }

  /** A uniform integer in [min, max] (both inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return p > 0 && this.float() < p;
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }

  /** An index chosen with probability proportional to its weight (weights >= 0, not all 0). */
  weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let x = this.float() * total;
    for (let i = 0; i < weights.length; i++) {
      x -= weights[i]!;
      if (x < 0) return i;
    }
    return weights.length - 1;
  }

  /**
   * A latency in microseconds: usually near `typicalUs`, with a long tail (one in `tailOneIn` is up
   * to `tailFactor` times longer), as a real device's.
   */
  latencyUs(typicalUs: number, tailOneIn = 50, tailFactor = 40): number {
    const base = typicalUs / 2 + this.float() * typicalUs;
    return Math.max(
      1,
      Math.round(this.chance(1 / tailOneIn) ? base * (1 + this.float() * tailFactor) : base),
    );
  }
}
