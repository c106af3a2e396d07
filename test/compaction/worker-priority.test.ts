/**
 * The compaction workers' scheduling (Linux): they run under SCHED_IDLE by default, or at the nice
 * increment `workerNice` gives, never lowering the process; a job that runs past `workerStarvedMs`
 * has its workers taken back to the normal policy at nice 10 until it ends. In the slow tier: the
 * promotion tests run long compactions on a real worker pool.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadChecksum } from '../../src/codec/index.js';
import { OffsetStore } from '../../src/index.js';
import { isThreadIdle } from '../../src/io/index.js';
import { tempDir } from '../support/temp-dir.js';
import { applyHistory, compactionOptions, generateHistory } from './compaction-fixtures.js';

beforeAll(() => loadChecksum());

/** Ids of this process's threads under the normal policy (SCHED_OTHER) at nice `nice`. */
function threadsAt(nice: number): string[] {
  return readdirSync('/proc/self/task').filter((tid) => {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(fields[16]) === nice && Number(fields[38]) === 0;
    } catch {
      return false; // a thread that exited meanwhile
    }
  });
}

describe('compaction worker priority', () => {
  const history = generateHistory(43, 400, 10, 10);
  /** A fresh one-bucket log-cleaner store with these compaction options over the fixture's. */
  const openWith = (compaction: Record<string, unknown>) => {
    const options = compactionOptions(tempDir(), 'log-cleaner', {
      bucketCount: 1,
      segmentBytesMax: 1024,
    });
    return OffsetStore.open({ ...options, compaction: { ...options.compaction, ...compaction } });
  };
  const compactWith = async (compaction: Record<string, unknown>) => {
    const store = await openWith(compaction);
    try {
      await applyHistory(store, history);
      return (await store.compact()).buckets[0]!;
    } finally {
      await store.close();
    }
  };

  it.runIf(process.platform === 'linux')(
    'runs the workers under SCHED_IDLE by default, at the nice increment workerNice gives otherwise, without lowering the process',
    async () => {
      const own = getPriority(0);
      // Never promoted here, however busy the machine (promotion is the next tests' subject).
      const unstarved = { workerStarvedMs: 600_000 };
      expect((await compactWith(unstarved)).workerPriority).toBe('idle');
      expect((await compactWith({ ...unstarved, workerNice: 'idle' })).workerPriority).toBe('idle');
      expect((await compactWith({ workerNice: 3 })).workerPriority).toBe(Math.min(19, own + 3));
      expect((await compactWith({ workerNice: 0 })).workerPriority).toBe(own);
      expect(getPriority(0)).toBe(own);
      expect(isThreadIdle(), 'the calling thread keeps its policy').toBe(false);
    },
  );

  it.runIf(process.platform === 'linux').each([
    // The first job starts the worker, which enters its thread id in the pool's registry.
    ['a job runs past workerStarvedMs', true],
    // The job is starved at 0 ms, before its worker has started and registered.
    ['the worker starts while its job is already starved (a fresh pool, its first job)', false],
  ] as const)(
    'takes an idle worker back to the normal policy at nice 10 when %s',
    async (_, warmUp) => {
      const store = await openWith({ workerStarvedMs: 0 });
      const own = getPriority(0);
      try {
        if (warmUp) {
          await applyHistory(store, generateHistory(44, 400, 10, 10));
          await store.compact();
        }
        // Every job runs past 0 ms: its worker is promoted while it runs.
        await applyHistory(store, generateHistory(warmUp ? 45 : 46, 6000, 200, 10));
        expect((await store.compact()).buckets[0]!.workerPriority).toBe(Math.min(19, own + 10));
        // It finished that job promoted and went back to SCHED_IDLE: no thread of the process is
        // left at the normal policy at nice 10 (the test's own threads are at the process's nice).
        expect(threadsAt(Math.min(19, own + 10))).toEqual([]);
      } finally {
        await store.close();
      }
      expect(threadsAt(Math.min(19, own + 10))).toEqual([]);
      expect(isThreadIdle()).toBe(false);
      expect(getPriority(0)).toBe(own);
    },
  );

  it('refuses a workerStarvedMs that is not an integer >= 0, naming it', async () => {
    for (const [workerStarvedMs, type] of [
      [-1, RangeError],
      [0.5, RangeError],
      ['10', TypeError],
    ] as const)
      await expect(compactWith({ workerStarvedMs })).rejects.toThrow(
        expect.objectContaining({
          constructor: type,
          message: expect.stringContaining('options.compaction.workerStarvedMs'),
        }),
      );
  });

  it("refuses a workerNice other than 'idle' or an integer in [0, 19], naming it, as every option (a RangeError or TypeError)", async () => {
    for (const [workerNice, type] of [
      [-1, RangeError],
      [20, RangeError],
      [2.5, RangeError],
      ['5', TypeError],
      ['IDLE', TypeError],
    ] as const)
      await expect(compactWith({ workerNice })).rejects.toThrow(
        expect.objectContaining({
          constructor: type,
          message: expect.stringContaining('options.compaction.workerNice'),
        }),
      );
  });
});
