/**
 * Compaction under 'os' durability, then a power loss. In 'os' durability a commit is acknowledged
 * once written, before any fdatasync, and a power loss may take every batch not fdatasynced yet:
 * that much loss is the mode's contract. What compaction did with those batches must not make it
 * worse: a rewrite that dropped an older, durable record for a newer one still in the page cache,
 * or a checkpoint that freed the log below it, would leave the offset lost, or the bucket
 * unopenable, after the power loss.
 *
 * The power loss is modelled on the log's segment files: the file system below the store records,
 * for each file, how many bytes it held at its last fdatasync (following renames); the image after
 * the power loss is a copy of the directory with every segment cut back to that size.
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

describe("compaction under 'os' durability, then a power loss", () => {
  it('a rewrite never drops a durable record for a newer one that was not fdatasynced', async () => {
    const dir = tempDir();
    const fs = new DurableSizes();
    const store = await OffsetStore.open({ ...options('log-cleaner'), dir, fs });
    await store.commitOffsets('g', [{ ...K, offset: 100 }]);
    await filler(store, 30);
    await store.commitOffsets('g', [{ ...K, offset: 200 }]);
    await store.compact();
    const image = fs.powerLossImage(dir);
    await store.close();
    const reopened = await OffsetStore.open({ ...options('log-cleaner'), dir: image });
    const [value] = await reopened.fetchOffsets('g', [K]);
    // 200 if the compaction made it durable, 100 if it dropped nothing: never no offset at all.
    expect(value?.offset).toBe(200);
    await reopened.close();
  });

  it('a checkpoint frees the log below it only once everything it covers is durable', async () => {
    const dir = tempDir();
    const fs = new DurableSizes();
    const store = await OffsetStore.open({ ...options('checkpoint'), dir, fs });
    await filler(store, 6);
    await store.commitOffsets('g', [{ ...K, offset: 100 }]);
    // A commit lands while the checkpoint is sealed, so the active segment is not sealed for it.
    let late: Promise<void> | undefined;
    fs.onOpen = {
      suffix: 'data.mdb.seal.tmp',
      run: () => {
        late = store.commitOffsets('late', [{ tableId: 3, bucketId: 0, offset: 1 }]);
      },
    };
    const report = await store.compact();
    await late;
    expect(report.buckets[0]?.checkpointLogOffset).toBeGreaterThan(0);
    const image = fs.powerLossImage(dir);
    await store.close();
    const reopened = await OffsetStore.open({ ...options('checkpoint'), dir: image });
    expect((await reopened.fetchOffsets('g', [K]))[0]?.offset).toBe(100);
    await reopened.close();
  });

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
});
