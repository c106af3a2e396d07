/**
 * Background compaction runs at its own pace on the clock: a bucket is cleaned once its estimated
 * garbage ratio reaches minDirtyRatio, or once its log passes logBytesMax; not before, and never on
 * the commit path. A strategy's own `due` decides instead, and answers a boolean: anything else is a
 * warning, never a run (nor a crash).
 */
import { describe, expect, it } from 'vitest';
import {
  ManualClock,
  OffsetStore,
  type BucketView,
  type OffsetStoreOptions,
} from '../../src/index.js';
import { logCleanerStrategy } from '../../src/compaction/strategies/log-cleaner.js';
import { tempDir } from '../support/temp-dir.js';
import {
  STRATEGY_MODULES,
  fillSegments,
  inProcessOptions,
  scriptedHooks,
} from './strategy-fixtures.js';

async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A store compacted by the scripted planner (its `hooks`) every second of its manual clock, each of
 * its runs told to `onRun`.
 */
async function scriptedStore(
  onRun: NonNullable<NonNullable<OffsetStoreOptions['compaction']>['onRun']>,
) {
  const hooks = scriptedHooks();
  const options = inProcessOptions(tempDir(), STRATEGY_MODULES.scriptedPlanner, {
    compaction: { strategy: STRATEGY_MODULES.scriptedPlanner, intervalMs: 1_000, onRun },
  });
  return { hooks, options, store: await OffsetStore.open(options) };
}

async function overwriteHeavy(
  options: OffsetStoreOptions,
): Promise<{ store: OffsetStore; clock: ManualClock; logBytes: () => Promise<number> }> {
  const clock = options.clock as ManualClock;
  const store = await OffsetStore.open(options);
  for (let i = 0; i < 150; i++)
    await store.commitOffsets('g', [{ tableId: 1, bucketId: i % 2, offset: i }]);
  return { store, clock, logBytes: async () => (await store.stats()).totals.logBytes };
}

describe('background compaction', () => {
  it('cleans a bucket whose garbage ratio reaches minDirtyRatio when the interval elapses, not before', async () => {
    const clock = new ManualClock();
    const { store, logBytes } = await overwriteHeavy({
      dir: tempDir(),
      bucketCount: 1,
      segmentBytesMax: 1024,
      clock,
      compaction: { strategy: 'log-cleaner', intervalMs: 5_000, minDirtyRatio: 0.5 },
    });
    const before = await logBytes();
    clock.advance(4_999);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await logBytes(), 'nothing runs before the interval').toBe(before);
    clock.advance(1);
    await until('the log to shrink', async () => (await logBytes()) < before / 2);
    expect(await store.fetchOffsets('g', [{ tableId: 1, bucketId: 1 }])).toMatchObject([
      { offset: 149 },
    ]);
    await store.close();
  });

  it('the log cleaner is due once its garbage ratio reaches minDirtyRatio or its log passes logBytesMax, and a segment sealed since its last run exists', () => {
    const view = (garbageRatioEstimate: number, settings: object, state?: unknown) =>
      ({
        segments: [
          { baseOffset: 0, lastLogOffset: 99, sizeBytes: 1000, sealed: true },
          { baseOffset: 100, lastLogOffset: -1, sizeBytes: 0, sealed: false },
        ],
        logBytes: 1000,
        garbageRatioEstimate,
        state,
        settings: { minDirtyRatio: 0.5, logBytesMax: Infinity, ...settings },
      }) as unknown as BucketView;
    const due = (v: BucketView) => logCleanerStrategy.due!(v);
    expect(due(view(0.49, {})), 'below minDirtyRatio').toBe(false);
    expect(due(view(0.5, {}))).toBe(true);
    expect(due(view(0.1, { logBytesMax: 999 })), 'past logBytesMax').toBe(true);
    expect(due(view(0.9, {}, { cleanedBelow: 100 })), 'nothing sealed since its last run').toBe(
      false,
    );
    expect(due(view(0.9, {}, { cleanedBelow: 99 }))).toBe(true);
  });

  it('leaves a bucket below minDirtyRatio alone, unless its log passes logBytesMax', async () => {
    const clock = new ManualClock();
    const idle = await overwriteHeavy({
      dir: tempDir(),
      bucketCount: 1,
      segmentBytesMax: 1024,
      clock,
      compaction: { strategy: 'log-cleaner', intervalMs: 1_000, minDirtyRatio: 1 },
    });
    const before = await idle.logBytes();
    clock.advance(3_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await idle.logBytes()).toBe(before);
    await idle.store.close();

    const clock2 = new ManualClock();
    const capped = await overwriteHeavy({
      dir: tempDir(),
      bucketCount: 1,
      segmentBytesMax: 1024,
      clock: clock2,
      compaction: {
        strategy: 'log-cleaner',
        intervalMs: 1_000,
        minDirtyRatio: 1,
        logBytesMax: 4096,
      },
    });
    const cappedBefore = await capped.logBytes();
    expect(cappedBefore).toBeGreaterThan(4096);
    clock2.advance(1_000);
    await until(
      'the capped log to shrink',
      async () => (await capped.logBytes()) < cappedBefore / 2,
    );
    await capped.store.close();
  });
});

describe("a strategy's due", () => {
  it('that throws, rejects or answers other than a boolean is a warning naming the strategy, and starts no run', async () => {
    let runs = 0;
    const { hooks, options, store } = await scriptedStore((event) => {
      if (event.kind === 'started') runs++;
    });
    try {
      await fillSegments(store, 20);
      const answers: [(view: BucketView) => unknown, RegExp][] = [
        [
          () => {
            throw new Error('due failed');
          },
          /strategy 'module:scripted-planner' failed in due for offsets-bucket 0: due failed/,
        ],
        [
          async () => {
            throw new Error('due rejected');
          },
          /strategy 'module:scripted-planner' answered due for offsets-bucket 0 with a Promise, not a boolean: due is synchronous/,
        ],
        [async () => false, /with a Promise, not a boolean/],
        [() => 1, /with 1, not a boolean/],
        [() => undefined, /with undefined, not a boolean/],
      ];
      for (const [due, warning] of answers) {
        hooks.due = due;
        options.warnings.length = 0;
        options.clock.advance(1_000);
        await until('the warning', async () => options.warnings.length > 0, 5_000);
        expect(options.warnings).toEqual([expect.stringMatching(warning)]);
        expect(options.warnings[0]).toMatch(/INVALID_COMPACTION_PLAN/);
        // The pass ends and the timer is armed again before the next advance.
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(runs, 'no background run started').toBe(0);
      hooks.due = () => true;
      options.clock.advance(1_000);
      await until('a run', async () => runs > 0, 5_000);
    } finally {
      hooks.due = undefined;
      await store.close();
    }
  });

  it('is shown a copy of the state: what it changes there never reaches the stored state or a later run', async () => {
    const events: string[] = [];
    const { hooks, options, store } = await scriptedStore((event) => events.push(event.kind));
    try {
      await fillSegments(store, 20);
      hooks.plan = (view) => ({
        state: { runs: ((view.state as { runs?: number } | undefined)?.runs ?? 0) + 1 },
      });
      await store.compact();
      hooks.due = (view) => {
        const state = view.state as Record<string, unknown>;
        state.note = () => 'not JSON';
        state.runs = 100;
        return true;
      };
      options.clock.advance(1_000);
      await until('the background run', async () => events.length === 4, 5_000);
      expect(events.at(-1)).toBe('finished');
      hooks.due = undefined;
      await store.compact();
      expect(hooks.views.at(-1)!.state).toEqual({ runs: 2 });
      expect(options.warnings).toEqual([]);
    } finally {
      hooks.due = undefined;
      hooks.plan = () => null;
      await store.close();
    }
  });

  it('does not stand in for compact(): a background run in flight is waited for, then compact() runs a forced one', async () => {
    const events: string[] = [];
    const { hooks, options, store } = await scriptedStore((event) =>
      events.push(
        event.kind === 'started'
          ? `started ${event.background ? 'background' : 'forced'}`
          : event.kind,
      ),
    );
    let release!: () => void;
    const released = new Promise<null>((resolve) => (release = () => resolve(null)));
    try {
      await fillSegments(store, 20);
      hooks.due = () => true;
      hooks.plan = (view) => (view.forced ? null : released);
      options.clock.advance(1_000);
      await until('the background run', async () => events.length > 0, 5_000);
      hooks.due = undefined;
      const compacting = store.compact();
      await new Promise((resolve) => setTimeout(resolve, 50));
      release();
      const report = await compacting;
      expect(report.buckets).toMatchObject([{ bucket: 0, background: false }]);
      expect(hooks.views.map((v) => v.forced).slice(-2)).toEqual([false, true]);
      expect(events).toEqual(['started background', 'finished', 'started forced', 'finished']);
    } finally {
      release();
      hooks.due = undefined;
      hooks.plan = () => null;
      await store.close();
    }
  });
});
