/**
 * How far the randomized and exhaustive tests go. `npm test` (the fast tier) runs them shallow, to
 * keep the whole tier short (~90 s on 2 cores); `npm run test:fuzz`, which CI runs too, runs the
 * same files deep (`OFFSET_STORE_TEST_DEPTH=deep`, set by the `fuzz` project of vitest.config.ts).
 * A test's own environment variable, when set, still decides its count.
 */
export const DEEP = process.env.OFFSET_STORE_TEST_DEPTH === 'deep';

/** `process.env[name]` as a number when set; else `deep` in the fuzz tier and `shallow` elsewhere. */
export function depthRuns(name: string, shallow: number, deep: number): number {
  const fromEnv = process.env[name];
  return fromEnv !== undefined ? Number(fromEnv) : DEEP ? deep : shallow;
}
