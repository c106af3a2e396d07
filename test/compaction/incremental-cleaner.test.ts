/**
 * The incremental cleaner ('incremental'): a model check (every live offset fetchable, every deleted
 * one gone, after any sequence of commits, deletes, group deletes, cleans, clock moves and reopens;
 * INCREMENTAL_SEED replays one), and what makes it incremental: only segments that hold garbage are
 * rewritten (a segment without garbage keeps its file), it writes less than the whole-log cleaner on
 * the same log, small adjacent segments are merged, tombstones stay for deleteRetentionMs past the
 * clean point, and its clean point survives a reopen.
 */
import { cpSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { incrementalStrategy } from '../../src/compaction/strategies/incremental-cleaner.js';
import {
  OffsetStore,
  type BucketView,
  type LogInspector,
  type SegmentGarbage,
} from '../../src/index.js';
import { seededRandom, seedFrom } from '../support/seeded-random.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { tempDir } from '../support/temp-dir.js';
import { depthRuns } from '../support/test-depth.js';
import { stateOf } from './compaction-fixtures.js';
import { inProcessOptions } from './strategy-fixtures.js';

const runs = depthRuns('INCREMENTAL_RUNS', 1, 3);
const RETENTION_MS = 10_000;

type Model = Map<string, Map<string, number>>;

function options(dir: string, extra: Parameters<typeof inProcessOptions>[2] = {}) {
  return inProcessOptions(dir, 'incremental', {
    compaction: {
      strategy: 'incremental',
      background: true,
      intervalMs: 1000,
      minDirtyRatio: 0.2,
      deleteRetentionMs: RETENTION_MS,
    },
    ...extra,
  });
}

/** A view of full sealed segments of 100 log offsets each (and an empty active one), for unit tests of the strategy. */
function viewOf(
  sizes: readonly number[],
  settings: Partial<BucketView['settings']>,
  state?: unknown,
): BucketView {
  const segments = [...sizes, 0].map((sizeBytes, i) => ({
    baseOffset: i * 100,
    lastLogOffset: i < sizes.length ? i * 100 + 99 : -1,
    sizeBytes,
    sealed: i < sizes.length,
  }));
  return {
    bucket: 0,
    nowMs: 0,
    segments,
    logBytes: sizes.reduce((a, b) => a + b, 0),
    logEndOffset: sizes.length * 100,
    state,
    settings: {
      minDirtyRatio: 0.5,
      logBytesMax: Infinity,
      segmentBytesMax: 1000,
      deleteRetentionMs: 0,
      ...settings,
    },
  } as unknown as BucketView;
}

/** What segmentGarbage counts for a segment of 100 one-record batches, `superseded` of its records superseded. */
function garbageOf(baseOffset: number, sizeBytes: number, superseded: number): SegmentGarbage {
  return {
    baseOffset,
    sizeBytes,
    batches: 100,
    records: 100,
    recordBytes: sizeBytes * 0.9,
    supersededRecords: superseded * 100,
    supersededBytes: superseded * sizeBytes * 0.9,
    tombstones: 0,
    expiredTombstones: 0,
    expiredTombstoneBytes: 0,
    oldestCommitMs: 0,
    newestCommitMs: 0,
  };
}

describe('incremental cleaner', () => {
  it('keeps every live offset fetchable after any sequence of commits, deletes, cleans and reopens (model check)', async () => {
    const baseSeed = seedFrom('INCREMENTAL_SEED');
    for (let run = 0; run < runs; run++) {
      const seed = baseSeed + run;
      const context = `seed ${seed} (replay with INCREMENTAL_SEED=${seed} INCREMENTAL_RUNS=1)`;
      const random = seededRandom(seed);
      const dir = tempDir();
      let opened = options(dir);
      const clock = opened.clock;
      let store = await OffsetStore.open(opened);
      const model: Model = new Map();
      const key = (t: number, b: number) => `${t}::${b}`;
      for (let step = 0; step < 300; step++) {
        const roll = random();
        const groupId = `g${Math.floor(random() * 8)}`;
        const tableId = Math.floor(random() * 2);
        if (roll < 0.7) {
          // A commit, skewed so that a few buckets are hot.
          const count = 1 + Math.floor(random() * 3);
          const offsets = new Map<number, number>();
          for (let k = 0; k < count; k++)
            offsets.set(Math.floor(random() ** 3 * 12), step * 10 + k);
          await store.commitOffsets(
            groupId,
            [...offsets].map(([bucketId, offset]) => ({ tableId, bucketId, offset })),
          );
          const group = model.get(groupId) ?? new Map<string, number>();
          for (const [bucketId, offset] of offsets) group.set(key(tableId, bucketId), offset);
          model.set(groupId, group);
        } else if (roll < 0.8) {
          const present = [...(model.get(groupId) ?? new Map()).keys()].filter(
            () => random() < 0.5,
          );
          if (present.length > 0) {
            await store.deleteOffsets(
              groupId,
              present.map((k) => ({
                tableId: Number(k.split('::')[0]),
                bucketId: Number(k.split('::')[1]),
              })),
            );
            const group = model.get(groupId)!;
            for (const k of present) group.delete(k);
            if (group.size === 0) model.delete(groupId);
          }
        } else if (roll < 0.83) {
          if (model.has(groupId)) {
            await store.deleteGroup(groupId);
            model.delete(groupId);
          }
        } else if (roll < 0.9) {
          await store.compact();
        } else if (roll < 0.97) {
          // Background passes run on the clock; tombstones age past the retention.
          clock.advance(1000 + Math.floor(random() * RETENTION_MS));
          await new Promise((resolve) => setImmediate(resolve));
        } else {
          await store.close();
          expect(opened.warnings, context).toEqual([]);
          opened = options(dir, { clock });
          store = await OffsetStore.open(opened);
          expect(await stateOf(store), `${context}: after reopen at step ${step}`).toEqual(model);
        }
      }
      await store.compact();
      expect(await stateOf(store), context).toEqual(model);
      await store.close();
      const reopened = await OffsetStore.open(options(dir, { clock }));
      expect(await stateOf(reopened), `${context}: final reopen`).toEqual(model);
      await reopened.close();
    }
  });

  it('rewrites only segments that hold garbage, writing less than the whole-log cleaner on the same log', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(
      options(dir, { compaction: { strategy: 'incremental', background: false } }),
    );
    // Cold: distinct keys, never written again. Then hot: a few keys overwritten over and over.
    for (let i = 0; i < 60; i++)
      await store.commitOffsets(`cold-${i}`, [
        { tableId: 1, bucketId: i, offset: i },
        { tableId: 2, bucketId: i, offset: i },
      ]);
    const coldSegment = path.join(dir, 'buckets', '000', '00000000000000000000.log');
    const coldBytes = readFileSync(coldSegment);
    const coldInode = statSync(coldSegment).ino;
    for (let i = 0; i < 200; i++)
      await store.commitOffsets('hot', [{ tableId: 1, bucketId: i % 3, offset: i }]);
    await store.close();
    const copy = tempDir();
    cpSync(dir, copy, { recursive: true });

    const incremental = await OffsetStore.open(
      options(dir, { compaction: { strategy: 'incremental', background: false } }),
    );
    const expected = await stateOf(incremental);
    const report = await incremental.compact();
    expect(statSync(coldSegment).ino, 'a segment without garbage keeps its file').toBe(coldInode);
    expect(readFileSync(coldSegment).equals(coldBytes)).toBe(true);
    expect(report.buckets[0]!.segmentsRewritten).toBeGreaterThan(0);
    expect(await stateOf(incremental)).toEqual(expected);
    await incremental.close();

    const whole = await OffsetStore.open(
      inProcessOptions(copy, 'incremental', {
        compaction: { strategy: 'incremental', background: false },
      }),
    );
    await whole.convertCompaction('log-cleaner');
    const wholeReport = await whole.compact();
    await whole.close();
    expect(report.bytesWritten).toBeLessThan(wholeReport.bytesWritten);
    // About the same space: the garbage the incremental cleaner leaves is bounded per segment.
    expect(report.bytesAfter).toBeLessThan(1.25 * wholeReport.bytesAfter);
  });

  it('picks the segments at least 30% garbage, and only those, among segments too large to merge', async () => {
    const segmentBytesMax = 1000;
    // Three full segments, 50%, 10% and 30% garbage (superseded records), and the active one.
    const shares = [0.5, 0.1, 0.3];
    const segments = [...shares.map((_, i) => i * 100), 300].map((baseOffset, i) => ({
      baseOffset,
      lastLogOffset: baseOffset + 99,
      sizeBytes: segmentBytesMax,
      sealed: i < shares.length,
    }));
    const garbage = shares.map((share, i): SegmentGarbage => ({
      baseOffset: i * 100,
      sizeBytes: segmentBytesMax,
      batches: 100,
      records: 100,
      recordBytes: 900,
      supersededRecords: share * 100,
      supersededBytes: share * 900,
      tombstones: 0,
      expiredTombstones: 0,
      expiredTombstoneBytes: 0,
      oldestCommitMs: 0,
      newestCommitMs: 0,
    }));
    const inspector: LogInspector = { segmentGarbage: () => Promise.resolve(garbage) };
    const view = {
      bucket: 0,
      nowMs: 0,
      segments,
      logEndOffset: 400,
      state: undefined,
      settings: {
        minDirtyRatio: 0.5,
        logBytesMax: Infinity,
        segmentBytesMax,
        deleteRetentionMs: 0,
      },
    } as unknown as BucketView;
    const plan = await incrementalStrategy.plan(view, inspector);
    expect(plan?.rewrite).toEqual([[0], [200]]);
  });

  it('merges small adjacent segments', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(
      options(dir, {
        segmentBytesMax: 4096,
        compaction: { strategy: 'incremental', background: false },
      }),
    );
    // Overwrites only: after a clean, every sealed segment shrinks to a few records and they merge.
    for (let i = 0; i < 400; i++)
      await store.commitOffsets('hot', [{ tableId: 1, bucketId: i % 4, offset: i }]);
    const before = (await store.stats()).buckets[0]!.segmentCount;
    const report = await store.compact();
    const after = (await store.stats()).buckets[0]!.segmentCount;
    expect(before).toBeGreaterThan(4);
    expect(report.buckets[0]!.segmentsRewritten).toBe(before - 1);
    expect(after, 'the rewritten segments became one').toBe(2);
    await store.close();
  });

  it('keeps tombstones for deleteRetentionMs past the clean point, then drops them; the clean point survives a reopen', async () => {
    const dir = tempDir();
    const opened = options(dir, {
      compaction: { strategy: 'incremental', background: false, deleteRetentionMs: RETENTION_MS },
    });
    const store = await OffsetStore.open(opened);
    const clock = opened.clock;
    for (let i = 0; i < 40; i++)
      await store.commitOffsets(`doomed-${i}`, [{ tableId: 1, bucketId: 0, offset: i }]);
    for (let i = 0; i < 40; i++) await store.deleteGroup(`doomed-${i}`);
    for (let i = 0; i < 30; i++)
      await store.commitOffsets('filler', [{ tableId: 1, bucketId: i % 2, offset: i }]);
    const tombstones = async () => (await store.stats()).totals.logBytes;
    // Older than the retention already, but the clean point has not passed them yet.
    clock.advance(2 * RETENTION_MS);
    await store.compact();
    // Once more at the same time: garbage the first run left under the rewrite threshold may be
    // cleaned now, and the log settles; the tombstones stay (the clean point passed them 0 ms ago).
    await store.compact();
    const afterFirst = await tombstones();
    clock.advance(RETENTION_MS / 2);
    await store.compact();
    expect(await tombstones(), 'half the retention past the clean point: tombstones kept').toBe(
      afterFirst,
    );
    await store.close();
    const state = JSON.parse(
      readFileSync(path.join(dir, 'buckets', '000', 'compaction-state.json'), 'utf8'),
    ) as { strategy: string; state: { cleanPoint: number } };
    expect(state.strategy).toBe('incremental');
    expect(state.state.cleanPoint).toBeGreaterThan(0);
    const reopened = await OffsetStore.open(
      options(dir, {
        clock,
        compaction: { strategy: 'incremental', background: false, deleteRetentionMs: RETENTION_MS },
      }),
    );
    clock.advance(RETENTION_MS);
    const report = await reopened.compact();
    expect(
      report.recordsDropped,
      'a retention past the clean point: tombstones dropped',
    ).toBeGreaterThanOrEqual(40);
    expect((await reopened.stats()).totals.logBytes).toBeLessThan(afterFirst);
    expect(await reopened.fetchOffsets('doomed-0', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
    expect((await reopened.listGroups()).map((g) => g.groupId)).toEqual(['filler']);
    await reopened.close();
  });
  it('takes a state file it cannot read (a failing sector) for none, as a damaged one, and cleans the whole log again', async () => {
    const dir = tempDir();
    const opened = options(dir, {
      segmentBytesMax: 4096,
      compaction: { strategy: 'incremental', background: false },
    });
    const store = await OffsetStore.open(opened);
    for (let i = 0; i < 200; i++)
      await store.commitOffsets('hot', [{ tableId: 1, bucketId: i % 4, offset: i }]);
    await store.compact();
    await store.close();
    const fs = opened.fs as FaultyFileSystem;
    const read = fs.readFile.bind(fs);
    fs.readFile = (filePath: string) =>
      filePath.endsWith('compaction-state.json')
        ? Promise.reject(Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' }))
        : read(filePath);
    const reopened = await OffsetStore.open({ ...opened, fs });
    for (let i = 200; i < 400; i++)
      await reopened.commitOffsets('hot', [{ tableId: 1, bucketId: i % 4, offset: i }]);
    const report = await reopened.compact();
    expect(report.buckets[0]!.segmentsRewritten).toBeGreaterThan(0);
    expect((await reopened.fetchOffsets('hot')).map((o) => o!.offset)).toEqual([
      396, 397, 398, 399,
    ]);
    await reopened.close();
  });
  it('reports a state file it cannot write as LOG_STORAGE_ERROR, with the compaction done and every offset kept', async () => {
    const dir = tempDir();
    const opened = options(dir, {
      segmentBytesMax: 4096,
      compaction: { strategy: 'incremental', background: false },
    });
    const store = await OffsetStore.open(opened);
    for (let i = 0; i < 200; i++)
      await store.commitOffsets('hot', [{ tableId: 1, bucketId: i % 4, offset: i }]);
    const fs = opened.fs as FaultyFileSystem;
    fs.plan = { failWritesToSuffix: 'compaction-state.json.tmp' };
    const before = (await store.stats()).totals.logBytes;
    await expect(store.compact()).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/strategy state/),
    });
    expect((await store.stats()).totals.logBytes, 'the segments were swapped').toBeLessThan(before);
    fs.plan = {};
    for (let i = 200; i < 300; i++)
      await store.commitOffsets('hot', [{ tableId: 1, bucketId: i % 4, offset: i }]);
    await store.compact();
    await store.close();
    const reopened = await OffsetStore.open({ ...opened, fs: new FaultyFileSystem() });
    expect((await reopened.fetchOffsets('hot')).map((o) => o!.offset)).toEqual([
      296, 297, 298, 299,
    ]);
    await reopened.close();
  });
  it('is due in the background only once the dirty section (at or above the clean point) is minDirtyRatio of the sealed bytes', () => {
    // Two sealed segments of 1000 bytes; the clean point passed the first: half the sealed bytes are dirty.
    const state = { cleanPoint: 100, passes: [], garbage: [] };
    expect(incrementalStrategy.due!(viewOf([1000, 1000], { minDirtyRatio: 0.6 }, state))).toBe(
      false,
    );
    expect(incrementalStrategy.due!(viewOf([1000, 1000], { minDirtyRatio: 0.5 }, state))).toBe(
      true,
    );
    expect(
      incrementalStrategy.due!(
        viewOf([1000, 1000], { minDirtyRatio: 0.6, logBytesMax: 1500 }, state),
      ),
      'a log past logBytesMax is due whatever its ratio',
    ).toBe(true);
  });

  it('merges small segments into groups whose survivors fit in segmentBytesMax, not more', async () => {
    // Five segments of 1000 bytes, 60% of their records superseded: each keeps 400 bytes.
    const garbage = [0, 100, 200, 300, 400].map((base) => garbageOf(base, 1000, 0.6));
    const inspector: LogInspector = { segmentGarbage: () => Promise.resolve(garbage) };
    const plan = await incrementalStrategy.plan(
      viewOf([1000, 1000, 1000, 1000, 1000], { segmentBytesMax: 1000 }),
      inspector,
    );
    expect(plan?.rewrite).toEqual([[0, 100], [200, 300], [400]]);
  });

  it('maps the log from the first segment it rewrites, not from the clean point: garbage an earlier clean found and left is dropped too', async () => {
    // The clean point is past all three sealed segments; an earlier clean found 600 bytes of garbage
    // in the first and left it (under the threshold then). Nothing new supersedes anything.
    const state = { cleanPoint: 300, passes: [], garbage: [[0, 600]] };
    const garbage = [0, 100, 200].map((base) => garbageOf(base, 1000, 0));
    const queries: unknown[] = [];
    const inspector: LogInspector = {
      segmentGarbage: (query) => (queries.push(query), Promise.resolve(garbage)),
    };
    const plan = await incrementalStrategy.plan(viewOf([1000, 1000, 1000], {}, state), inspector);
    expect(queries, 'the garbage is counted from the clean point').toMatchObject([
      { mapFrom: 300 },
    ]);
    expect(plan?.rewrite).toEqual([[0]]);
    expect(
      plan?.mapFrom,
      'a map from the clean point would not see the records that superseded the garbage found before',
    ).toBe(0);
    expect(
      (plan?.state as { garbage: unknown[] }).garbage,
      'the rewritten segment is forgotten',
    ).toEqual([]);
  });
});
