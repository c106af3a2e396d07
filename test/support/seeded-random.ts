/** A small seeded PRNG (mulberry32) so randomized crash tests can be replayed from their seed. */
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

/** The seed to use: `process.env[name]` when set (to replay a failure), else a fresh one. */
export function seedFrom(name: string): number {
  const fromEnv = process.env[name];
  return fromEnv !== undefined ? Number(fromEnv) : Math.floor(Math.random() * 2 ** 31);
}
