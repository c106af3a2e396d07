/**
 * In durability 'os', a checkpoint is written only over batches the log has made durable: one over
 * a last batch still only in the page cache would, after a power loss that loses that batch, leave
 * a checkpoint past the end of its log.
 */
import { cpSync, readdirSync, rmSync, truncateSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore, type OffsetStoreOptions } from '../../src/index.js';
import type { FileHandle, OpenFlags } from '../../src/io/index.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { tempDir } from '../support/temp-dir.js';

/** Remembers how many bytes each file held at its last fdatasync. */
class DurableSizes extends FaultyFileSystem {
  readonly synced = new Map<string, number>();
  /** Called once, the next time a file with this suffix is opened. */
  onOpen: { suffix: string; run: () => void } | undefined;

  override async open(file: string, flags: OpenFlags): Promise<FileHandle> {
    const hook = this.onOpen;
    if (hook !== undefined && file.endsWith(hook.suffix)) {
      this.onOpen = undefined;
      hook.run();
    }
    const handle = await super.open(file, flags);
    return {
      ...handle,
      path: handle.path,
      datasync: async () => {
        await handle.datasync();
        this.synced.set(file, await handle.sizeBytes());
      },
    };
  }

  override async rename(from: string, to: string): Promise<void> {
    await super.rename(from, to);
    const size = this.synced.get(from);
    this.synced.delete(from);
    if (size !== undefined) this.synced.set(to, size);
  }

  /** A copy of `dir` as a power loss would leave it: every segment cut to its last fdatasynced size. */
  powerLossImage(dir: string): string {
    const image = tempDir();
    cpSync(dir, image, { recursive: true });
    rmSync(path.join(image, 'LOCK'), { force: true });
    const bucketDir = path.join(dir, 'buckets', '000');
    for (const name of readdirSync(bucketDir).filter((n) => n.endsWith('.log')))
      truncateSync(
        path.join(image, 'buckets', '000', name),
        this.synced.get(path.join(bucketDir, name)) ?? 0,
      );
    return image;
  }
}

const K = { tableId: 1, bucketId: 0 };

function options(strategy: 'log-cleaner' | 'checkpoint'): OffsetStoreOptions {
  return {
    dir: '',
    bucketCount: 1,
    segmentBytesMax: 1024,
    durability: 'os',
    clock: new ManualClock(),
    compaction: { strategy, background: false },
  };
}

/** Commits that fill a few 1 KiB segments (another group's), so there are sealed segments to compact. */
async function filler(store: OffsetStore, count: number): Promise<void> {
  for (let i = 0; i < count; i++)
    await store.commitOffsets('filler', [
      { tableId: 2, bucketId: 0, offset: i, metadata: 'x'.repeat(150) },
    ]);
}

it('a checkpoint is written only over batches already durable: a power loss right after it leaves a store that opens with the commit', async () => {
  const dir = tempDir();
  const fs = new DurableSizes();
  const store = await OffsetStore.open({ ...options('checkpoint'), dir, fs });
  await store.commitOffsets('g', [{ ...K, offset: 100 }]);
  // The power loss strikes once the checkpoint's LMDB transaction is committed and flushed, before
  // anything else (its seal, the freeing of the log below it) happens.
  let image: string | undefined;
  fs.onOpen = {
    suffix: 'data.mdb.seal.tmp',
    run: () => {
      image = fs.powerLossImage(dir);
    },
  };
  await store.compact();
  await store.close();
  expect(image).toBeDefined();
  const reopened = await OffsetStore.open({ ...options('checkpoint'), dir: image! });
  expect((await reopened.fetchOffsets('g', [K]))[0]?.offset).toBe(100);
  await reopened.close();
});
