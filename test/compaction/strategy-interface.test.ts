/**
 * The compaction-strategy interface as a strategy author relies on it: a module given by path is
 * loaded (in-process here, on worker threads in example-strategy.test.ts), shown a view of each
 * offsets-bucket, may read garbage counts through its inspector, and has its rewrite carried out
 * through the crash-safe swap with the state unchanged; its state is kept durably and shown back; the
 * store records it as module:<name> and asks for the module again on later opens.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  readStrategyState,
  STATE_FILE,
  writeStrategyState,
} from '../../src/compaction/strategy-state.js';
import { loadChecksum } from '../../src/codec/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { OffsetStore, type BucketView } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { compactionOptions, stateOf } from './compaction-fixtures.js';
import {
  STRATEGY_MODULES,
  fillSegments,
  inProcessOptions,
  scriptedHooks,
} from './strategy-fixtures.js';

describe('a strategy module', () => {
  it('is shown each bucket as a view of its segments, live keys and its own state, and its rewrite keeps the state', async () => {
    const dir = tempDir();
    const hooks = scriptedHooks();
    hooks.views.length = 0;
    const options = inProcessOptions(dir, STRATEGY_MODULES.scripted);
    const store = await OffsetStore.open(options);
    await fillSegments(store);
    const expected = await stateOf(store);
    hooks.plan = (view: BucketView) => {
      const sealed = view.segments.filter((s) => s.sealed).map((s) => s.baseOffset);
      return {
        rewrite: [sealed.slice(0, 3)],
        state: { runs: ((view.state as { runs?: number } | undefined)?.runs ?? 0) + 1 },
      };
    };
    const report = await store.compact();
    const view = hooks.views.at(-1)!;
    const stats = await store.stats();
    expect(view.strategy).toBe('module:scripted');
    expect(view.forced).toBe(true);
    expect(view.state).toBeUndefined();
    expect(view.segments.filter((s) => !s.sealed)).toHaveLength(1);
    expect(view.segments.at(-1)!.sealed).toBe(false);
    for (let i = 1; i < view.segments.length; i++)
      expect(view.segments[i]!.baseOffset, 'sealed segments chain').toBe(
        view.segments[i - 1]!.lastLogOffset + 1,
      );
    expect(view.logBytes).toBe(view.segments.reduce((sum, s) => sum + s.sizeBytes, 0));
    expect(view.liveOffsets).toBe(stats.totals.liveOffsets);
    expect(view.garbageRatioEstimate).toBeGreaterThan(0);
    expect(view.garbageRatioEstimate).toBeLessThan(1);
    expect(view.checkpoint).toBeUndefined();
    expect(view.settings).toMatchObject({ segmentBytesMax: 1024, deleteRetentionMs: 86_400_000 });
    expect(report.strategy).toBe('module:scripted');
    expect(report.buckets[0]!.segmentsRewritten).toBe(3);
    expect(report.bytesAfter).toBeLessThan(report.bytesBefore);
    expect(await stateOf(store)).toEqual(expected);
    await store.compact();
    expect(hooks.views.at(-1)!.state, 'the state of the last plan is shown back').toEqual({
      runs: 1,
    });
    await store.close();

    const manifest = JSON.parse(readFileSync(path.join(dir, 'store.json'), 'utf8')) as {
      compactionStrategy: string;
    };
    expect(manifest.compactionStrategy).toBe('module:scripted');
    const reopened = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.scripted));
    await reopened.compact();
    expect(hooks.views.at(-1)!.state, 'the state survives a reopen').toEqual({ runs: 2 });
    expect(await stateOf(reopened)).toEqual(expected);
    await reopened.close();
  });

  it('reads garbage counts through its inspector: records a later record of their key supersedes', async () => {
    const dir = tempDir();
    const hooks = scriptedHooks();
    const store = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.scripted));
    // One key committed 40 times: every record but the newest is superseded.
    for (let i = 0; i < 40; i++)
      await store.commitOffsets('hot', [{ tableId: 1, bucketId: 0, offset: i }]);
    let counted: Awaited<ReturnType<Parameters<typeof hooks.plan>[1]['segmentGarbage']>> = [];
    hooks.plan = async (_view, inspector) => {
      counted = await inspector.segmentGarbage();
      return null;
    };
    await store.compact();
    expect(counted.length).toBeGreaterThan(1);
    const records = counted.reduce((n, g) => n + g.records, 0);
    expect(
      counted.reduce((n, g) => n + g.supersededRecords, 0),
      'every sealed record is superseded by a newer one',
    ).toBe(records);
    for (const g of counted) expect(g.supersededBytes).toBe(g.recordBytes);
    await store.close();
  });

  it('asking its inspector about a segment that is not a sealed one is refused naming the strategy, the bucket and the rule', async () => {
    const dir = tempDir();
    const hooks = scriptedHooks();
    const store = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.scripted));
    for (let i = 0; i < 40; i++)
      await store.commitOffsets('hot', [{ tableId: 1, bucketId: 0, offset: i }]);
    hooks.plan = (_view, inspector) => inspector.segmentGarbage({ segments: [30] });
    await expect(store.compact()).rejects.toMatchObject({
      code: 'INVALID_COMPACTION_PLAN',
      message: expect.stringMatching(
        /strategy 'module:scripted' failed while planning for offsets-bucket 0: .*segmentGarbage: 30 is not the base offset of a sealed segment/,
      ),
    });
    hooks.plan = () => null;
    await store.close();
  });

  it('is needed again on later opens: without it the store opens with compaction off, another strategy is INVALID_CONFIG', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.scripted));
    await fillSegments(store, 10);
    await store.close();
    const options = inProcessOptions(dir, STRATEGY_MODULES.scripted);
    const { compaction: _ignored, ...withoutStrategy } = options;
    const bare = await OffsetStore.open(withoutStrategy);
    expect((await bare.stats()).compactionStrategy).toBe('module:scripted');
    await bare.ready();
    // Compacting in the background (the default), it says once that it cannot.
    expect(options.warnings).toEqual([
      expect.stringMatching(
        /compacted by the strategy module 'module:scripted', which this open was not given .*not compacted/,
      ),
    ]);
    await expect(bare.compact()).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(/module:scripted.*compaction\.strategy/),
    });
    // Giving the module to convertCompaction attaches it without converting anything.
    await bare.convertCompaction(STRATEGY_MODULES.scripted);
    expect((await bare.compact()).strategy).toBe('module:scripted');
    await bare.close();
    await expect(OffsetStore.open(inProcessOptions(dir, 'incremental'))).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining("uses 'module:scripted'"),
    });
  });

  it('is refused with INVALID_CONFIG before the directory is touched when the module is not a strategy, and a bare unknown name is a RangeError', async () => {
    const dir = path.join(tempDir(), 'store');
    await expect(
      OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.notAStrategy)),
    ).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('plan must be a function'),
    });
    await expect(
      OffsetStore.open(inProcessOptions(dir, './no/such/module.mjs')),
    ).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('cannot load'),
    });
    await expect(OffsetStore.open(inProcessOptions(dir, 'log-cleanr'))).rejects.toThrow(RangeError);
    const { existsSync } = await import('node:fs');
    expect(existsSync(dir)).toBe(false);
  });

  it('written in TypeScript is refused with INVALID_CONFIG where jobs run on worker threads (they cannot load it), before the directory is touched', async () => {
    const root = tempDir();
    const module = path.join(root, 'mine.ts');
    writeFileSync(module, "export default { name: 'mine', plan: () => null };\n");
    const dir = path.join(root, 'store');
    await expect(
      OffsetStore.open({ dir, compaction: { strategy: module, background: false } }),
    ).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('compile it to .js or .mjs'),
    });
    const { existsSync } = await import('node:fs');
    expect(existsSync(dir)).toBe(false);
    // A store on the node file system converted to it is refused the same way, and keeps its own.
    const store = await OffsetStore.open({ dir, compaction: { background: false } });
    await expect(store.convertCompaction(module)).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
    });
    expect((await store.compact()).strategy).toBe('log-cleaner');
    await store.close();
    // A TypeScript module that declares rewrites: false runs on this thread alone: accepted.
    const planner = path.join(root, 'planner.ts');
    writeFileSync(
      planner,
      "export default { name: 'planner', rewrites: false, plan: () => null };\n",
    );
    const plannerDir = path.join(root, 'planned');
    const planned = await OffsetStore.open({
      dir: plannerDir,
      compaction: { strategy: planner, background: false },
    });
    await planned.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    expect((await planned.compact()).strategy).toBe('module:planner');
    await planned.close();
    const converted = await OffsetStore.open({ dir, compaction: { background: false } });
    await converted.convertCompaction(planner);
    expect((await converted.compact()).strategy).toBe('module:planner');
    await converted.close();
  });

  it('a compaction asked for while a conversion runs runs once it is done, on the new strategy, instead of failing as if the store were closing', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(inProcessOptions(dir, 'log-cleaner'));
    await fillSegments(store);
    const state = await stateOf(store);
    const [, report] = await Promise.all([store.convertCompaction('incremental'), store.compact()]);
    expect(report.buckets).toHaveLength(1);
    expect(await stateOf(store)).toEqual(state);
    await store.close();
  });

  it('changed on disk while the process runs is refused on the worker threads, saying to restart the process (a reopen in this process keeps the module it loaded)', async () => {
    const dir = tempDir();
    const module = path.join(tempDir(), 'strategy.mjs');
    writeFileSync(module, "export default { name: 'first', plan() { return null; } };\n");
    const options = compactionOptions(dir, module as never, {
      bucketCount: 1,
      segmentBytesMax: 1024,
    });
    const store = await OffsetStore.open(options);
    await fillSegments(store, 10);
    // A deployment replaces the module (another name) while the process runs.
    writeFileSync(module, "export default { name: 'second', plan() { return null; } };\n");
    const refused = {
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(
        /loaded for offsets-bucket 0 is 'module:second', not the store's 'module:first'.*restart the process/,
      ),
    };
    await expect(store.compact()).rejects.toMatchObject(refused);
    await store.close();
    const reopened = await OffsetStore.open(options);
    await expect(reopened.compact(), 'a reopen does not help').rejects.toMatchObject(refused);
    await reopened.close();
  });

  it('is read once: a name that changes after it was checked is not what the store records', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.shiftingName));
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await store.close();
    const manifest = JSON.parse(readFileSync(path.join(dir, 'store.json'), 'utf8')) as {
      compactionStrategy: string;
    };
    expect(manifest.compactionStrategy).toBe('module:shifting');
    const reopened = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.shiftingName));
    expect(await reopened.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }])).toMatchObject([
      { offset: 1 },
    ]);
    await reopened.close();
  });

  it('that declares checkpoints is recorded as module:<name>+checkpoints, and recovery restores its checkpoints', async () => {
    const dir = tempDir();
    const hooks = scriptedHooks();
    const options = inProcessOptions(dir, STRATEGY_MODULES.scriptedCheckpoints);
    const store = await OffsetStore.open(options);
    await fillSegments(store);
    const expected = await stateOf(store);
    hooks.plan = () => ({ checkpoint: true, deleteBelow: 'checkpoint' });
    const report = await store.compact();
    expect(report.strategy).toBe('module:scripted+checkpoints');
    expect(report.buckets[0]!.checkpointLogOffset).toBeGreaterThan(0);
    expect(
      (await store.stats()).buckets[0]!.segmentCount,
      'the log below the checkpoint is deleted',
    ).toBeLessThanOrEqual(2);
    await store.close();
    const reopened = await OffsetStore.open(
      inProcessOptions(dir, STRATEGY_MODULES.scriptedCheckpoints),
    );
    expect(reopened.recoveryReports()[0]!.checkpointLogOffset).toBeGreaterThan(0);
    expect(await stateOf(reopened)).toEqual(expected);
    // Converting to a strategy without checkpoints writes the state back into the log first.
    await reopened.convertCompaction('incremental');
    await reopened.close();
    const converted = await OffsetStore.open(inProcessOptions(dir, 'incremental'));
    expect(await stateOf(converted)).toEqual(expected);
    await converted.close();
  });
});

describe("a strategy's stored state", () => {
  it("reads back only as the strategy's own: another strategy's (after a conversion) or a damaged one is none", async () => {
    await loadChecksum();
    const dir = tempDir();
    const fs = new NodeFileSystem();
    await writeStrategyState(fs, dir, 'incremental', { cleanPoint: 120 });
    expect(await readStrategyState(fs, dir, 'incremental')).toEqual({ cleanPoint: 120 });
    expect(await readStrategyState(fs, dir, 'log-cleaner'), "another strategy's").toBeUndefined();
    const file = path.join(dir, STATE_FILE);
    writeFileSync(file, readFileSync(file, 'utf8').replace('120', '121'));
    expect(await readStrategyState(fs, dir, 'incremental'), 'a checksum mismatch').toBeUndefined();
  });
});
