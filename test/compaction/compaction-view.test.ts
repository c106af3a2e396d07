/**
 * What a compaction shows its strategy and what its job reads are one snapshot of the log: a log
 * that rolls while the strategy's state is being read must not give the strategy segments the job
 * cannot find.
 */
import { describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { tempDir } from '../support/temp-dir.js';
import { inProcessOptions } from './strategy-fixtures.js';

/** Holds reads of the strategy state file until released. */
class HeldStateFileSystem extends FaultyFileSystem {
  held: Promise<void> | undefined;
  reading: (() => void) | undefined;

  override async readFile(filePath: string): Promise<Buffer | null> {
    if (filePath.endsWith('compaction-state.json') && this.held !== undefined) {
      this.reading?.();
      await this.held;
    }
    return super.readFile(filePath);
  }
}

describe('a compaction run', () => {
  it('plans and rewrites from one snapshot of the segments, though the log rolls twice while it reads its state', async () => {
    const fs = new HeldStateFileSystem();
    const opened = inProcessOptions(tempDir(), 'log-cleaner', { fs, segmentBytesMax: 1024 });
    const store = await OffsetStore.open(opened);
    for (let i = 0; i < 60; i++)
      await store.commitOffsets('g', [{ tableId: 1, bucketId: i % 8, offset: i }]);
    let release!: () => void;
    fs.held = new Promise((resolve) => {
      release = resolve;
    });
    const reading = new Promise<void>((resolve) => {
      fs.reading = resolve;
    });
    const run = store.compact();
    await reading;
    const segmentsBefore = (await store.stats()).totals.segmentCount;
    for (let i = 0; i < 4; i++)
      await store.commitOffsets(
        'big',
        Array.from({ length: 40 }, (_, b) => ({ tableId: 2, bucketId: b, offset: i })),
      );
    expect(
      (await store.stats()).totals.segmentCount,
      'the log rolled at least twice meanwhile',
    ).toBeGreaterThanOrEqual(segmentsBefore + 2);
    release();
    await run;
    expect((await store.fetchOffsets('g')).map((o) => o!.offset).sort((a, b) => a - b)).toEqual([
      52, 53, 54, 55, 56, 57, 58, 59,
    ]);
    await store.close();
  });
});
