/**
 * A store opened to read only while another process commits to it and compacts it (a child process,
 * forked: the slow tier): every read sees at least what the writer had acknowledged before the open
 * began, and only what it wrote.
 */
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { exited, forkTs } from '../support/fork-child.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = path.join(import.meta.dirname, 'live-writer-child.ts');

describe('a store opened to read only beside a live writer', () => {
  it('reads a store a live process commits to and compacts, seeing at least what it had acknowledged', async () => {
    // Small segments (compaction swapping them under the reader) and large ones (preallocated: a
    // batch being appended reads as zeros, then is whole); few groups and many.
    const runs: [string, number, number, number][] = [
      ['log-cleaner', 6, 4096, 5],
      ['checkpoint', 6, 4096, 5],
      ['log-cleaner', 2000, 64 << 20, 8],
    ];
    for (const [strategy, groups, segmentBytes, reads] of runs) {
      const what = `${strategy}, ${groups} groups, segments of ${segmentBytes} bytes`;
      const dir = tempDir();
      const child = forkTs(CHILD, [dir, strategy, String(groups), String(segmentBytes)]);
      /** Per group, the highest offset acknowledged; and the highest offset started. */
      const acked = new Map<number, number>();
      let started = 0;
      let ackedCount = 0;
      child.on('message', (m: { type: string; offset?: number }) => {
        if (m.type === 'started') started = Math.max(started, m.offset!);
        if (m.type !== 'acked') return;
        const k = m.offset! % groups;
        acked.set(k, Math.max(acked.get(k) ?? 0, m.offset!));
        ackedCount++;
      });
      while (ackedCount < Math.max(300, groups)) await new Promise((r) => setTimeout(r, 10));
      let highestSeen = 0;
      for (let round = 0; round < reads; round++) {
        const floor = new Map(acked);
        const reader = await OffsetStore.open({ dir, readOnly: true, onWarning: () => {} });
        for (let k = 0; k < groups; k++) {
          const [row] = await reader.fetchOffsets(`g${k}`, [{ tableId: 1, bucketId: 0 }]);
          const offset = row?.offset ?? 0;
          // What was acknowledged before the open began, at least; only what the writer wrote.
          expect(offset, `${what}, read ${round}, g${k}`).toBeGreaterThanOrEqual(floor.get(k) ?? 0);
          if (offset > 0) expect(offset % groups).toBe(k);
          highestSeen = Math.max(highestSeen, offset);
        }
        await reader.close();
      }
      child.send({ type: 'stop' });
      await exited(child);
      expect(child.exitCode, what).toBe(0);
      // (Checked once the child is done: its messages may lag behind its commits.)
      expect(highestSeen, what).toBeLessThanOrEqual(started);
    }
  });
});
