/**
 * Sizes and durations of the comparison, read once from the environment.
 *
 * `COMPARE_SCALE=full` selects the sizes of issue 6 (1M live offsets, 30 s mixed run; ~15-25 min on
 * 2 cores); the default finishes in a few minutes. Single knobs override either scale:
 *
 * | variable | default / full | meaning |
 * |---|---|---|
 * | COMPARE_ADAPTERS | all | comma-separated adapter ids (offset-store, lmdb, lmdb-async, sqlite, level) |
 * | COMPARE_WORKLOADS | a,b,c,d,e,f,g | comma-separated workload letters |
 * | COMPARE_DIR | <repo>/.tmp/bench-compare | where stores are created (must be on the disk under test) |
 * | COMPARE_SEED | 1 | seed of every random choice |
 * | COMPARE_BENCH_MS | 1500 / 5000 | tinybench time budget per task (a, c, d) |
 * | COMPARE_CONCURRENT_SECONDS | 3 / 15 | measured duration of (b) |
 * | COMPARE_LIVE_OFFSETS | 100000 / 1000000 | live offsets in (c, d) and (e) |
 * | COMPARE_MEMORY_OFFSETS | 100000 / 1000000 | live offsets in (f) |
 * | COMPARE_MIXED_SECONDS | 5 / 30 | measured duration of (g) |
 * | COMPARE_MIXED_GROUPS | 10000 | groups in (g) |
 * | COMPARE_RUNS | 3 | runs of every workload on every store; the report gives medians and ranges |
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** Letters of the workloads, as in issue 6. */
export type WorkloadId = 'a' | 'b' | 'c' | 'd' | 'e' | 'f' | 'g';

export const ALL_WORKLOADS: readonly WorkloadId[] = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];

/** Resolved configuration of one run. */
export interface CompareConfig {
  scale: 'default' | 'full';
  adapterIds: readonly string[] | undefined;
  workloads: readonly WorkloadId[];
  dataDir: string;
  seed: number;
  benchMs: number;
  concurrentCommitters: number;
  concurrentSeconds: number;
  warmupSeconds: number;
  liveOffsets: number;
  bucketsPerGroup: number;
  memoryOffsets: number;
  mixedSeconds: number;
  mixedGroups: number;
  mixedWorkers: number;
  /** How many times every workload runs on every store (the report gives medians and ranges). */
  runs: number;
}

/** Root of the repository (two folders above this file). */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Reads the configuration from `env`. */
export function readCompareConfig(env: NodeJS.ProcessEnv = process.env): CompareConfig {
  const full = env['COMPARE_SCALE'] === 'full';
  if (
    env['COMPARE_SCALE'] !== undefined &&
    env['COMPARE_SCALE'] !== 'full' &&
    env['COMPARE_SCALE'] !== 'default'
  ) {
    throw new RangeError(
      `COMPARE_SCALE must be 'default' or 'full', got '${env['COMPARE_SCALE']}'`,
    );
  }
  const workloads = list(env['COMPARE_WORKLOADS'])?.map((w) => {
    if (!(ALL_WORKLOADS as readonly string[]).includes(w))
      throw new RangeError(`unknown workload '${w}' in COMPARE_WORKLOADS`);
    return w as WorkloadId;
  });
  return {
    scale: full ? 'full' : 'default',
    adapterIds: list(env['COMPARE_ADAPTERS']),
    workloads: workloads ?? ALL_WORKLOADS,
    dataDir: env['COMPARE_DIR'] ?? join(REPO_ROOT, '.tmp', 'bench-compare'),
    seed: int(env, 'COMPARE_SEED', 1),
    benchMs: int(env, 'COMPARE_BENCH_MS', full ? 5000 : 1500),
    concurrentCommitters: 64,
    concurrentSeconds: int(env, 'COMPARE_CONCURRENT_SECONDS', full ? 15 : 3),
    warmupSeconds: full ? 2 : 0.5,
    liveOffsets: int(env, 'COMPARE_LIVE_OFFSETS', full ? 1_000_000 : 100_000),
    bucketsPerGroup: 100,
    memoryOffsets: int(env, 'COMPARE_MEMORY_OFFSETS', full ? 1_000_000 : 100_000),
    mixedSeconds: int(env, 'COMPARE_MIXED_SECONDS', full ? 30 : 5),
    mixedGroups: int(env, 'COMPARE_MIXED_GROUPS', 10_000),
    mixedWorkers: 64,
    runs: int(env, 'COMPARE_RUNS', 3),
  };
}

function list(value: string | undefined): string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0)
    throw new RangeError(`${name} must be a positive integer, got '${raw}'`);
  return value;
}
