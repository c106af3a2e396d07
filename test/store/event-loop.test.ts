/**
 * The store never holds its caller's event loop for long: writes and fdatasyncs made on the calling
 * thread (the fast path of a lone committer) complete without a turn of the event loop, so a caller
 * that commits back to back would otherwise keep every timer, socket and background task of its
 * process (the store's own too: compaction, segment preparation, retention) waiting for as long as
 * it commits. The turns it lets pass are Node's own: a test that fakes the global `setImmediate`
 * still commits.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';

const COMMITTING_MS = 400;

async function openWithCommit(durability: 'fsync' | 'os') {
  const store = await OffsetStore.open({ dir: tempDir(), durability });
  const commit = (offset: number): Promise<void> =>
    store.commitOffsets('g', [{ tableId: 1, partitionId: null, bucketId: offset % 8, offset }]);
  // The log's first segment, and the store's record of it, are written through the thread pool.
  for (let offset = 0; offset < 100; offset++) await commit(offset);
  return { store, commit };
}

describe('a caller committing back to back', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  for (const durability of ['fsync', 'os'] as const) {
    it(`lets timers run meanwhile (durability '${durability}')`, async () => {
      const { store, commit } = await openWithCommit(durability);
      const ticks = [performance.now()];
      const timer = setInterval(() => ticks.push(performance.now()), 1);
      let commits = 0;
      try {
        const end = ticks[0]! + COMMITTING_MS;
        while (performance.now() < end) await commit(100 + commits++);
        ticks.push(performance.now());
      } finally {
        clearInterval(timer);
        await store.close();
      }
      const what = `during ${commits} commits in ${COMMITTING_MS} ms`;
      // Without the turns: none at all in 'fsync'; in 'os', none either now that no zeros are written
      // ahead of its data (a write of them went through the thread pool: a few ticks, gaps of
      // 200-250 ms). With them: 130-180.
      expect(ticks.length - 2, `timer ticks ${what}`).toBeGreaterThanOrEqual(
        durability === 'os' ? 40 : 1,
      );
      const longestGapMs = Math.max(...ticks.slice(1).map((at, i) => at - ticks[i]!));
      expect(longestGapMs, `longest time without a timer tick ${what}`).toBeLessThan(
        COMMITTING_MS / 2,
      );
    });
  }

  it('commits while the global setImmediate is faked', { timeout: 20_000 }, async () => {
    const { store, commit } = await openWithCommit('fsync');
    vi.useFakeTimers({ toFake: ['setImmediate', 'setTimeout', 'setInterval'] });
    try {
      const end = performance.now() + COMMITTING_MS;
      let commits = 0;
      while (performance.now() < end) await commit(100 + commits++);
      expect(commits).toBeGreaterThan(10);
    } finally {
      vi.useRealTimers();
      await store.close();
    }
  });
});
