import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import {
  ManualClock,
  OffsetStore,
  type BucketView,
  type CompactionPlan,
  type LogInspector,
  type OffsetStoreOptions,
} from '../../src/index.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';

/** Paths of the test strategy modules. */
export const STRATEGY_MODULES = {
  scripted: path.join(import.meta.dirname, 'strategies', 'scripted.mjs'),
  scriptedCheckpoints: path.join(import.meta.dirname, 'strategies', 'scripted-checkpoints.mjs'),
  scriptedPlanner: path.join(import.meta.dirname, 'strategies', 'scripted-planner.mjs'),
  overlapping: path.join(import.meta.dirname, 'strategies', 'overlapping.mjs'),
  notAStrategy: path.join(import.meta.dirname, 'strategies', 'not-a-strategy.mjs'),
  exitingWorker: path.join(import.meta.dirname, 'strategies', 'exiting-worker.mjs'),
  dyingSlowly: path.join(import.meta.dirname, 'strategies', 'dying-slowly.mjs'),
  lateThrow: path.join(import.meta.dirname, 'strategies', 'late-throw.mjs'),
  loopingWorker: path.join(import.meta.dirname, 'strategies', 'looping-worker.mjs'),
  twoFaced: path.join(import.meta.dirname, 'strategies', 'two-faced.mjs'),
  shiftingName: path.join(import.meta.dirname, 'strategies', 'shifting-name.mjs'),
  deepState: path.join(import.meta.dirname, 'strategies', 'deep-state.mjs'),
};

/**
 * The hooks of scripted.mjs: the plan it returns next, and the views it was shown; scripted-planner.mjs
 * answers `due` with `due` when set.
 */
export interface ScriptedHooks {
  plan: (
    view: BucketView,
    inspector: LogInspector,
  ) => CompactionPlan | null | unknown | Promise<unknown>;
  views: BucketView[];
  due?: (view: BucketView) => unknown;
}

/** The scripted strategy's hooks (shared with the module through globalThis: in-process runs only). */
export function scriptedHooks(): ScriptedHooks {
  const key = Symbol.for('offset-store.test.scripted');
  const g = globalThis as unknown as Record<symbol, ScriptedHooks>;
  g[key] ??= { plan: () => null, views: [] };
  return g[key];
}

/**
 * Options of a one-bucket store with 1 KiB segments, background compaction off, a manual clock and
 * the in-process runner (a FileSystem that is not NodeFileSystem), collecting warnings.
 */
export function inProcessOptions(
  dir: string,
  strategy: string,
  extra: Partial<OffsetStoreOptions> & { clock?: ManualClock } = {},
): OffsetStoreOptions & { clock: ManualClock; warnings: string[] } {
  const warnings: string[] = [];
  const options = {
    dir,
    bucketCount: 1,
    segmentBytesMax: 1024,
    fs: new FaultyFileSystem(),
    durability: 'os' as const,
    compaction: { strategy, background: false },
    onWarning: (m: string) => void warnings.push(m),
    ...extra,
    clock: extra.clock ?? new ManualClock(),
  };
  // Not enumerable: the store refuses keys that are not its options.
  return Object.defineProperty(options, 'warnings', {
    value: warnings,
    enumerable: false,
  }) as typeof options & { warnings: string[] };
}

/** Commits enough distinct and overwritten offsets to seal a few segments. */
export async function fillSegments(store: OffsetStore, commits = 60): Promise<void> {
  for (let i = 0; i < commits; i++) {
    await store.commitOffsets(`group-${i % 5}`, [
      { tableId: 1, bucketId: i % 7, offset: i },
      { tableId: 2, bucketId: i, offset: i },
    ]);
  }
}

/** Every file of a bucket folder with a hash of its bytes (to check that nothing changed). */
export function folderSnapshot(bucketDir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(bucketDir).sort()) {
    const full = path.join(bucketDir, name);
    if (statSync(full).isDirectory()) continue;
    out[name] = createHash('sha256').update(readFileSync(full)).digest('hex').slice(0, 16);
  }
  return out;
}
