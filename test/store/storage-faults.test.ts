/**
 * A failing disk, met through the file-system port by every write, compaction's included: a commit
 * rejected after a failed fdatasync never comes back, even when cutting it off failed too; a
 * directory operation failing in the middle of a compaction swap leaves a healthy store (the swap is
 * retried, or completed by the next open), never one that reports corruption; a failure while the
 * log cleaner writes its output loses nothing; read and fdatasync failures while opening are
 * LOG_STORAGE_ERROR; and a swap intent that does not describe the files on disk is refused before
 * anything is renamed or deleted.
 */
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { verifyLog } from '../../src/admin/index.js';
import { xxh32 } from '../../src/codec/index.js';
import { ManualClock, OffsetStore, type OffsetStoreOptions } from '../../src/index.js';
import { leftoverFiles } from '../compaction/compaction-fixtures.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { activeSegmentOf } from '../support/log-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

const K = (bucketId: number) => ({ tableId: 1, bucketId });

/** Warnings the stores of the current test gave (a failed compaction warns as well as rejecting). */
let warnings: string[] = [];
beforeEach(() => {
  warnings = [];
});

function options(
  dir: string,
  fs: FaultyFileSystem,
  extra: Partial<OffsetStoreOptions> = {},
): OffsetStoreOptions {
  return {
    dir,
    fs,
    bucketCount: 1,
    segmentBytesMax: 1024,
    clock: new ManualClock(),
    compaction: { background: false },
    onWarning: (m) => warnings.push(m),
    ...extra,
  };
}

/** A store of one offsets-bucket with several sealed segments of overwritten offsets; returns what it holds. */
async function storeWithGarbage(dir: string, fs: FaultyFileSystem): Promise<OffsetStore> {
  const store = await OffsetStore.open(options(dir, fs));
  for (let i = 0; i < 150; i++) await store.commitOffsets('g', [{ ...K(i % 5), offset: i }]);
  return store;
}

/**
 * The real file system with file identities or without (a port may leave `identity` out), removing
 * one file (by name) the first time a swap asks after it: its identity as the swap begins, or its
 * size as the swap checks its outputs, whichever comes first.
 */
class RemovingFileSystem extends FaultyFileSystem {
  removeAtCheck: string | undefined;
  declare identity?: (path: string) => Promise<string | null>;

  constructor(withIdentity: boolean) {
    super();
    if (withIdentity)
      this.identity = (p: string) => {
        this.#removeIfNamed(p);
        return this.inner.identity(p);
      };
  }

  override sizeBytes(p: string) {
    this.#removeIfNamed(p);
    return super.sizeBytes(p);
  }

  #removeIfNamed(p: string): void {
    if (this.removeAtCheck === undefined || path.basename(p) !== this.removeAtCheck) return;
    this.removeAtCheck = undefined;
    rmSync(p);
  }
}

/**
 * A store in durability 'os' whose active segment's last pages a failed writeback dropped, as the
 * kernel does: reads return what the device has there (zeros), and the file's fdatasyncs report EIO.
 */
async function storeWithDroppedPages(): Promise<{ store: OffsetStore; warnings: string[] }> {
  const dir = tempDir();
  const fs = new FaultyFileSystem();
  let dropped: { file: string; from: number } | undefined;
  const warnings: string[] = [];
  fs.hookHandles((file, handle) => ({
    async read(buffer, offset, length, position) {
      const n = await handle.read(buffer, offset, length, position);
      if (dropped?.file === file && position + n > dropped.from) {
        const from = Math.max(position, dropped.from);
        buffer.fill(0, offset + (from - position), offset + n);
      }
      return n;
    },
    async datasync() {
      if (dropped?.file === file)
        throw Object.assign(new Error('EIO: writeback of dropped pages failed'), { code: 'EIO' });
      return handle.datasync();
    },
  }));
  const store = await OffsetStore.open({
    dir,
    fs,
    durability: 'os',
    bucketCount: 1,
    segmentBytesMax: 1024,
    clock: new ManualClock(),
    compaction: { strategy: 'log-cleaner', background: false, minDirtyRatio: 0 },
    onWarning: (m) => warnings.push(m),
  });
  for (let i = 0; i < 40; i++)
    await store.commitOffsets('g', [{ tableId: 1, bucketId: i % 3, offset: i }]);
  const active = activeSegmentOf(dir);
  const written = readFileSync(active).length;
  expect(written, 'the active segment holds batches after its first').toBeGreaterThan(300);
  dropped = { file: active, from: written - 40 };
  return { store, warnings };
}

const offsetsOf = async (store: OffsetStore) =>
  (await store.fetchOffsets('g')).map((o) => o!.offset).sort((a, b) => a - b);

describe('a failing disk', () => {
  it("reports a bucket whose log a failed fdatasync stopped as 'stopped' in stats, its offsets still counted", async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await OffsetStore.open(options(dir, fs));
    await store.commitOffsets('g', [{ ...K(0), offset: 1 }]);
    expect((await store.stats()).buckets[0]).toMatchObject({ state: 'ready', liveOffsets: 1 });
    fs.plan = { failDatasyncAt: fs.datasyncCount + 1 };
    await expect(store.commitOffsets('g', [{ ...K(1), offset: 2 }])).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
    });
    expect((await store.stats()).buckets[0]).toMatchObject({ state: 'stopped', liveOffsets: 1 });
    await store.close().catch(() => {});
  });

  it('serves the groups of a bucket its failed log stopped as their snapshots are durable, not as a refused join or leave left them', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await OffsetStore.open(options(dir, fs));
    const stays = await store.heartbeat('stays', { memberEpoch: 0, subscribedTableIds: [1] });
    const described = await store.describeGroup('stays');
    fs.plan = { failDatasyncAt: fs.datasyncCount + 1 };
    // A join refused: its snapshot was never durable.
    await expect(
      store.heartbeat('new', { memberEpoch: 0, subscribedTableIds: [1] }),
    ).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    // A leave refused too (the log is stopped): the member is still in the durable snapshot.
    await expect(
      store.heartbeat('stays', { memberId: stays.memberId, memberEpoch: -1 }),
    ).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    expect((await store.listGroups()).map((g) => g.groupId)).toEqual(['stays']);
    await expect(store.describeGroup('new')).rejects.toMatchObject({ code: 'GROUP_ID_NOT_FOUND' });
    expect(await store.describeGroup('stays')).toEqual(described);
    // The other reads of membership agree: the refused join made no group, the refused leave left
    // the member in it.
    expect(store.groupType('new')).toBeNull();
    expect(store.groupType('stays')).toBe('consumer');
    await expect(
      store.fetchOffsets('stays', undefined, {
        member: { memberId: stays.memberId, memberEpoch: stays.memberEpoch },
      }),
    ).resolves.toEqual([]);
    // A write that needs the group without members fails for what it is: the stopped log.
    await expect(store.deleteGroup('new')).rejects.toMatchObject({
      code: expect.stringMatching(/LOG_STORAGE_ERROR|GROUP_ID_NOT_FOUND/),
    });
    await store.close().catch(() => {});
    // What a reopen serves, the same.
    const again = await OffsetStore.open(options(dir, new FaultyFileSystem()));
    expect((await again.listGroups()).map((g) => g.groupId)).toEqual(['stays']);
    expect((await again.describeGroup('stays')).members).toEqual(described.members);
    await again.close();
  });

  it('never brings back a commit rejected after a failed fdatasync whose cut-back failed too', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await OffsetStore.open(options(dir, fs));
    await store.commitOffsets('g', [{ ...K(0), offset: 1 }]);
    fs.plan = { failDatasyncAt: fs.datasyncCount + 1, failTruncateAt: fs.truncateCount + 1 };
    const rejected = await Promise.allSettled(
      Array.from({ length: 9 }, (_, i) =>
        store.commitOffsets('g', [{ ...K(i + 1), offset: 100 + i }]),
      ),
    );
    expect(rejected.every((r) => r.status === 'rejected')).toBe(true);
    expect((rejected[0] as PromiseRejectedResult).reason).toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/cutting .* back .* failed too.*recorded/),
    });
    await store.close().catch(() => {});
    fs.plan = {};
    // The record is removed only once the cut is durable: else a power loss in between brings the
    // rejected batches back with nothing left to say they were refused.
    const ops: string[] = [];
    const recording = new FaultyFileSystem();
    recording.hookHandles((filePath, handle) => ({
      truncate: async (sizeBytes: number) => {
        await handle.truncate(sizeBytes);
        ops.push(`truncate ${path.basename(filePath)}`);
      },
      datasync: async () => {
        await handle.datasync();
        ops.push(`datasync ${path.basename(filePath)}`);
      },
    }));
    const unlink = recording.unlink.bind(recording);
    recording.unlink = async (filePath: string) => {
      await unlink(filePath);
      ops.push(`unlink ${path.basename(filePath)}`);
    };
    const reopened = await OffsetStore.open(options(dir, recording));
    const cut = ops.findIndex((op) => op.startsWith('truncate '));
    const removed = ops.indexOf('unlink rejected-batches.json');
    expect(cut, ops.join(', ')).toBeGreaterThanOrEqual(0);
    expect(removed, ops.join(', ')).toBeGreaterThan(cut);
    expect(ops.slice(cut, removed)).toContain(`datasync ${ops[cut]!.slice('truncate '.length)}`);
    expect(await reopened.fetchOffsets('g')).toEqual([expect.objectContaining({ offset: 1 })]);
    expect(warnings.join('\n')).toMatch(/rejected after a failed write were cut off/);
    await reopened.commitOffsets('g', [{ ...K(1), offset: 2 }]);
    await reopened.close();
    const again = await OffsetStore.open(options(dir, fs));
    expect(await offsetsOf(again)).toEqual([1, 2]);
    await again.close();
  });

  it('refuses to open a log whose record of rejected batches is damaged, rather than serve them as committed', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await OffsetStore.open(options(dir, fs));
    await store.commitOffsets('g', [{ ...K(0), offset: 1 }]);
    fs.plan = { failDatasyncAt: fs.datasyncCount + 1, failTruncateAt: fs.truncateCount + 1 };
    await expect(store.commitOffsets('g', [{ ...K(0), offset: 999 }])).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
    });
    await store.close().catch(() => {});
    fs.plan = {};
    const [bucket] = readdirSync(path.join(dir, 'buckets')).filter((b) =>
      existsSync(path.join(dir, 'buckets', b, 'rejected-batches.json')),
    );
    const recordPath = path.join(dir, 'buckets', bucket!, 'rejected-batches.json');
    const record = readFileSync(recordPath, 'utf8');
    // One digit of the position changed: the record still parses, and names no batch any more.
    const damaged = record.replace(
      /"position":(\d)/,
      (_, d: string) => `"position":${(Number(d) + 1) % 10}`,
    );
    expect(damaged).not.toBe(record);
    for (const bytes of [damaged, record.slice(0, -3), '']) {
      writeFileSync(recordPath, bytes);
      await expect(OffsetStore.open(options(dir, fs))).rejects.toMatchObject({
        code: 'CORRUPT_MESSAGE',
        message: expect.stringContaining(`${recordPath} at byte 0: damaged record`),
      });
      expect(readFileSync(recordPath, 'utf8'), 'nothing is modified').toBe(bytes);
    }
    writeFileSync(recordPath, record);
    const reopened = await OffsetStore.open(options(dir, fs));
    expect(await reopened.fetchOffsets('g')).toEqual([expect.objectContaining({ offset: 1 })]);
    await reopened.close();
  });

  it('refuses to reopen in this process when the rejected batches could neither be cut back nor recorded', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await OffsetStore.open(options(dir, fs));
    await store.commitOffsets('g', [{ ...K(0), offset: 1 }]);
    fs.plan = {
      failDatasyncAt: fs.datasyncCount + 1,
      failTruncateAt: fs.truncateCount + 1,
      failMetaOpAt: fs.metaOpCount + 1,
    };
    const error = await store.commitOffsets('g', [{ ...K(1), offset: 7 }]).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(
        /truncate .*00000000000000000000\.log to \d+ bytes before reopening it/,
      ),
    });
    await store.close().catch(() => {});
    fs.plan = {};
    await expect(OffsetStore.open(options(dir, fs))).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/before reopening it/),
    });
  });

  it('keeps a store healthy when a directory operation fails in the middle of a compaction swap', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await storeWithGarbage(dir, fs);
    let before = await offsetsOf(store);
    // Each failure point of the swap: writing its intent, the renames, the unlinks, the directory fsyncs.
    for (let step = 1; step <= 6; step++) {
      fs.plan = { failMetaOpAt: fs.metaOpCount + step };
      await expect(store.compact()).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
      fs.plan = {};
      expect(await offsetsOf(store)).toEqual(before);
      await store.commitOffsets('g', [{ ...K(0), offset: 1000 + step }]);
      before = await offsetsOf(store);
      expect(before).toContain(1000 + step);
    }
    // A commit that starts a segment records the log's end in the manifest in the background; a fault
    // planned for the swap may hit that instead, which only warns.
    const compactionWarnings = warnings.filter((w) =>
      /^compaction of offsets-bucket 0 failed: LOG_STORAGE_ERROR/.test(w),
    );
    expect(compactionWarnings.length, 'each failed compaction warned').toBe(6);
    expect(
      warnings
        .filter((w) => !compactionWarnings.includes(w))
        .every((w) => /^recording the log end of offsets-bucket 0 .* failed: EIO/.test(w)),
    ).toBe(true);
    const report = await store.compact();
    expect(report.bytesAfter).toBeLessThan(report.bytesBefore);
    expect(await offsetsOf(store)).toEqual(before);
    await store.close();
    expect((await verifyLog(dir)).ok).toBe(true);
    const reopened = await OffsetStore.open(options(dir, new FaultyFileSystem()));
    expect(await offsetsOf(reopened)).toEqual(before);
    await reopened.close();
  });

  it('backs up a store whose last compaction swap failed part way, completing the swap first: the backup opens with every offset', async () => {
    // The swap's intent is durable from its fourth directory operation on (the renames, the unlinks).
    for (const step of [4, 5, 6]) {
      const dir = tempDir();
      const fs = new FaultyFileSystem();
      const store = await storeWithGarbage(dir, fs);
      const before = await offsetsOf(store);
      fs.plan = { failMetaOpAt: fs.metaOpCount + step };
      await expect(store.compact()).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
      fs.plan = {};
      const to = path.join(tempDir(), 'backup');
      await store.backup(to);
      await store.close();
      const copy = await OffsetStore.open(options(to, new FaultyFileSystem()));
      expect(await offsetsOf(copy), `step ${step}`).toEqual(before);
      await copy.close();
    }
  });

  // The swap's second, third or fourth directory operation fails: the rename of its intent into
  // place, the fsync that makes it durable, the rename of its first output. Its outputs stay as
  // .cleaned files, and its intent, in place or not.
  for (const [step, intent] of [
    [2, 'not in place'],
    [3, 'in place, not durable'],
    [4, 'durable'],
  ] as const)
    it(`loses nothing when the outputs of a swap that failed are removed before it is retried (leftover .cleaned files someone deleted; its intent ${intent})`, async () => {
      const dir = tempDir();
      const fs = new FaultyFileSystem();
      const store = await storeWithGarbage(dir, fs);
      const before = await offsetsOf(store);
      const bucketDir = path.join(dir, 'buckets', '000');
      const cleaned = () => readdirSync(bucketDir).filter((f) => f.endsWith('.cleaned'));
      fs.plan = { failMetaOpAt: fs.metaOpCount + step };
      // What becomes of it if the store closed now: the next open completes it only from a durable
      // intent, and otherwise may discard it.
      await expect(store.compact()).rejects.toMatchObject({
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringMatching(
          intent === 'durable'
            ? /completed by the next open from its intent/
            : /completes it if its intent reached the disk, and otherwise discards it/,
        ),
      });
      fs.plan = {};
      expect(cleaned().length, 'outputs left under their temporary names').toBeGreaterThan(0);
      expect(existsSync(path.join(bucketDir, 'compaction.swap'))).toBe(step > 2);
      for (const file of cleaned()) rmSync(path.join(bucketDir, file));
      // The next compaction retries the swap first: it must not delete inputs for outputs that are gone.
      await expect(store.compact()).rejects.toMatchObject({
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringMatching(/removed before .*swapped in.*abandoned/),
      });
      expect(await offsetsOf(store)).toEqual(before);
      await store.commitOffsets('g', [{ ...K(9), offset: 9 }]);
      const report = await store.compact();
      expect(report.bytesAfter).toBeLessThan(report.bytesBefore);
      await store.close();
      expect((await verifyLog(dir)).ok).toBe(true);
      const reopened = await OffsetStore.open(options(dir, new FaultyFileSystem()));
      expect(await offsetsOf(reopened)).toEqual([...before, 9].sort((a, b) => a - b));
      await reopened.close();
    });

  it('a swap abandoned part way (a failed unlink of its leftovers) leaves a store that opens with every offset: the intent goes first', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await OffsetStore.open(options(dir, fs));
    // More live offsets than one segment holds: the compaction writes several outputs.
    for (let round = 0; round < 2; round++)
      for (let i = 0; i < 60; i++)
        await store.commitOffsets('g', [{ ...K(i), offset: round * 100 + i }]);
    const before = await offsetsOf(store);
    const bucketDir = path.join(dir, 'buckets', '000');
    const cleaned = () =>
      readdirSync(bucketDir)
        .filter((f) => f.endsWith('.cleaned'))
        .sort();
    // The rename of the first output fails: the intent is durable, every output waits.
    fs.plan = { failMetaOpAt: fs.metaOpCount + 3 };
    await expect(store.compact()).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    fs.plan = {};
    const waiting = cleaned();
    expect(waiting.length, 'a swap of several outputs').toBeGreaterThan(1);
    rmSync(path.join(bucketDir, waiting.at(-1)!)); // one output lost
    // The retry abandons the swap; its second directory operation fails, and the process ends.
    fs.plan = { failMetaOpAt: fs.metaOpCount + 2 };
    await expect(store.compact()).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    fs.plan = {};
    await store.close().catch(() => {});
    const reopened = await OffsetStore.open(options(dir, new FaultyFileSystem()));
    expect(await offsetsOf(reopened)).toEqual(before);
    await reopened.close();
  });

  for (const withIdentity of [true, false])
    it(`loses nothing when a compacted output is removed before its swap first runs (${withIdentity ? 'with' : 'without'} file identities)`, async () => {
      const dir = tempDir();
      const first = '00000000000000000000.log.cleaned';
      const fs = new RemovingFileSystem(withIdentity);
      const store = await OffsetStore.open(
        options(dir, fs, { compaction: { background: false, strategy: 'log-cleaner' } }),
      );
      // Records of one size in segments of one size: the first output is as long as the input
      // that holds its final name, so its size cannot tell them apart.
      for (let round = 0; round < 2; round++)
        for (let i = 0; i < 60; i++)
          await store.commitOffsets('g', [{ ...K(i), offset: round * 100 + i }]);
      const before = await offsetsOf(store);
      // A cleanup removes the first output as the swap begins, before it renamed anything.
      fs.removeAtCheck = first;
      await expect(store.compact()).rejects.toMatchObject({
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringMatching(/removed before .*swapped in.*abandoned/),
      });
      expect(fs.removeAtCheck, 'the output was removed at the check').toBeUndefined();
      expect(await offsetsOf(store)).toEqual(before);
      await store.commitOffsets('g', [{ ...K(0), offset: 1000 }]);
      await store.close();
      expect((await verifyLog(dir)).ok).toBe(true);
      const reopened = await OffsetStore.open(options(dir, new FaultyFileSystem()));
      expect(await offsetsOf(reopened)).toEqual([...before.slice(1), 1000].sort((a, b) => a - b));
      await reopened.close();
    });

  it('loses nothing when the log cleaner fails writing or syncing its output (compaction meets the injected faults)', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await storeWithGarbage(dir, fs);
    const before = await offsetsOf(store);
    const cleaned = () =>
      readdirSync(path.join(dir, 'buckets', '000')).filter((f) => f.endsWith('.cleaned'));
    fs.plan = { failWritesToSuffix: '.cleaned' };
    await expect(store.compact()).rejects.toThrow(/EIO: injected write failure/);
    expect(
      cleaned(),
      'a failed rewrite deletes its outputs at once (on a full disk, their space)',
    ).toEqual([]);
    fs.plan = { failDatasyncAt: fs.datasyncCount + 1 };
    await expect(store.compact()).rejects.toThrow(/EIO: injected fdatasync failure/);
    expect(cleaned()).toEqual([]);
    expect(warnings).toEqual([
      expect.stringMatching(/injected write failure/),
      expect.stringMatching(/injected fdatasync failure/),
    ]);
    fs.plan = {};
    expect(await offsetsOf(store)).toEqual(before);
    await store.commitOffsets('g', [{ ...K(9), offset: 9 }]);
    await store.close();
    const reopened = await OffsetStore.open(options(dir, new FaultyFileSystem()));
    expect(await offsetsOf(reopened)).toEqual([...before, 9].sort((a, b) => a - b));
    expect(
      readdirSync(path.join(dir, 'buckets', '000')).filter((f) => f.endsWith('.cleaned')),
    ).toEqual([]);
    await reopened.close();
  });

  it("a failed compaction's onRun event carries an OffsetStoreError naming the bucket, not the bare errno error of the file it wrote", async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const failed: unknown[] = [];
    const store = await OffsetStore.open(
      options(dir, fs, {
        compaction: {
          strategy: 'checkpoint',
          background: false,
          onRun: (event) => {
            if (event.kind === 'failed') failed.push(event.error);
          },
        },
      }),
    );
    for (let i = 0; i < 150; i++) await store.commitOffsets('g', [{ ...K(i % 5), offset: i }]);
    // The manifest's update after the checkpoint (written to a .tmp file, then renamed) fails.
    fs.plan = { failWritesToSuffix: '.tmp' };
    await expect(store.compact()).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    fs.plan = {};
    expect(failed).toEqual([
      expect.objectContaining({
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringMatching(
          /^LOG_STORAGE_ERROR: compacting offsets-bucket 0 failed .*EIO/,
        ),
      }),
    ]);
    await store.close();
  });

  it("reports a compaction that read bytes a failed writeback dropped from the page cache as the log's storage failure, not as damage on the disk", async () => {
    const { store, warnings } = await storeWithDroppedPages();
    await expect(store.compact()).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/fdatasync .*failed.*page cache/),
    });
    await expect(
      store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 100 }]),
    ).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    expect(warnings.join('\n')).toMatch(
      /compaction of offsets-bucket 0 failed: LOG_STORAGE_ERROR: .*not damage on the disk/,
    );
    expect(warnings.join('\n')).not.toMatch(/CORRUPT_MESSAGE/);
    await store.close().catch(() => {});
  });

  it("reports a backup that read bytes a failed writeback dropped from the page cache as the log's storage failure, not as damage on the disk", async () => {
    const { store, warnings } = await storeWithDroppedPages();
    await expect(store.backup(path.join(tempDir(), 'backup'))).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/not backed up: .*fdatasync then failed.*page cache/),
    });
    await expect(
      store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 100 }]),
    ).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    expect(warnings.join('\n')).not.toMatch(/CORRUPT_MESSAGE/);
    await store.close().catch(() => {});
  });

  it("names the log's storage failure when a compaction reads damaged bytes of a log that failure stopped already", async () => {
    const { store, warnings } = await storeWithDroppedPages();
    // The log's own fdatasync meets the failed writeback first: it stops the log.
    let stopped: unknown;
    for (let i = 0; i < 200 && stopped === undefined; i++)
      await store
        .commitOffsets('g', [{ tableId: 1, bucketId: i % 3, offset: 100 + i }])
        .catch((error: unknown) => (stopped = error));
    expect(stopped).toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    await expect(store.compact()).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/already stopped by a storage failure.*EIO/),
    });
    expect(warnings.join('\n')).not.toMatch(/CORRUPT_MESSAGE/);
    await store.close().catch(() => {});
  });

  it('reports a read failure or an fdatasync failure while opening as LOG_STORAGE_ERROR', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await storeWithGarbage(dir, fs);
    await store.close();
    fs.plan = { failReadAt: fs.readCount + 3 };
    await expect(OffsetStore.open(options(dir, fs))).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/EIO: injected read failure/),
    });
    fs.plan = { failDatasyncAt: fs.datasyncCount + 1 };
    await expect(OffsetStore.open(options(dir, fs))).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/EIO: injected fdatasync failure/),
    });
    fs.plan = {};
    const reopened = await OffsetStore.open(options(dir, fs));
    expect((await offsetsOf(reopened)).length).toBe(5);
    await reopened.close();
  });
});

describe('closing on a failing disk', () => {
  it('reports a LOCK file it could not remove as LOG_STORAGE_ERROR, after closing everything; the next open takes the stale lock over', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await OffsetStore.open(options(dir, fs));
    await store.commitOffsets('g', [{ ...K(0), offset: 7 }]);
    fs.plan = { failUnlinksOfSuffix: 'LOCK' };
    await expect(store.close()).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/LOCK/),
    });
    expect(existsSync(path.join(dir, 'LOCK'))).toBe(true);
    const reopened = await OffsetStore.open(options(dir, new FaultyFileSystem()));
    expect(await offsetsOf(reopened)).toEqual([7]);
    await reopened.close();
  });
});

describe('closing on a failing disk: the last checkpoint', () => {
  it('closes every file when freeing the segments below the last checkpoint fails at close, and reports it; the next open has everything', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await OffsetStore.open(
      options(dir, fs, { compaction: { strategy: 'checkpoint', background: false } }),
    );
    for (let i = 0; i < 150; i++) await store.commitOffsets('g', [{ ...K(i % 5), offset: i }]);
    const before = await offsetsOf(store);
    fs.plan = { failUnlinksOfSuffix: '.log' };
    await expect(store.close()).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    expect(fs.openFiles, 'the log and the checkpoints closed all the same').toEqual([]);
    const reopened = await OffsetStore.open(options(dir, new FaultyFileSystem()));
    expect(await offsetsOf(reopened)).toEqual(before);
    await reopened.close();
  });
});

describe('a compaction swap intent', () => {
  /** Writes `intent` (with a valid checksum unless `raw`) into bucket 0 of a closed store with several segments. */
  async function withIntent(
    intent: unknown,
    raw = false,
  ): Promise<{ dir: string; bucketDir: string; files: string[] }> {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    await (await storeWithGarbage(dir, fs)).close();
    const bucketDir = path.join(dir, 'buckets', '000');
    const body = raw
      ? JSON.stringify(intent)
      : JSON.stringify({
          ...(intent as object),
          checksum: xxh32(
            Buffer.from(
              JSON.stringify([
                (intent as { inputs: unknown }).inputs,
                (intent as { outputs: unknown }).outputs,
              ]),
            ),
          ),
        });
    writeFileSync(path.join(bucketDir, 'compaction.swap'), body);
    return { dir, bucketDir, files: readdirSync(bucketDir).sort() };
  }

  it('completes a committed swap and deletes the temporary files of a later compaction that never committed', async () => {
    const segmentZero = '00000000000000000000.log';
    const { dir, bucketDir } = await withIntent({
      inputs: [segmentZero],
      outputs: [{ name: segmentZero, tempName: `${segmentZero}.cleaned` }],
    });
    // The committed swap's output (here the segment as it was), and a later run's outputs.
    writeFileSync(
      path.join(bucketDir, `${segmentZero}.cleaned`),
      readFileSync(path.join(bucketDir, segmentZero)),
    );
    writeFileSync(path.join(bucketDir, '00000000000000000007.log.cleaned'), Buffer.alloc(100, 1));
    writeFileSync(path.join(bucketDir, '00000000000000000009.log.tmp'), Buffer.alloc(10));
    const reopened = await OffsetStore.open(options(dir, new FaultyFileSystem()));
    expect(await offsetsOf(reopened)).toEqual([145, 146, 147, 148, 149]);
    await reopened.close();
    expect(leftoverFiles(dir)).toEqual([]);
  });

  it.each([
    ['a path outside the bucket folder', { inputs: ['../../store.json'], outputs: [] }, false],
    ['a live segment deleted without outputs', undefined, false],
    ['null', null, true],
    ['an empty object', {}, true],
    [
      'an edited list (checksum mismatch)',
      { inputs: ['00000000000000000000.log'], outputs: [], checksum: 1 },
      true,
    ],
  ])(
    'refuses %s with CORRUPT_MESSAGE, renaming and deleting nothing',
    async (_what, intent, raw) => {
      const segmentZero = '00000000000000000000.log';
      const { dir, bucketDir, files } = await withIntent(
        intent ?? { inputs: [segmentZero], outputs: [] },
        raw,
      );
      const manifest = readFileSync(path.join(dir, 'store.json'));
      const segments = files.filter((f) => f.endsWith('.log'));
      expect(segments.length).toBeGreaterThan(2);
      await expect(OffsetStore.open(options(dir, new FaultyFileSystem()))).rejects.toMatchObject({
        code: 'CORRUPT_MESSAGE',
        message: expect.stringContaining('compaction.swap'),
      });
      expect(readdirSync(bucketDir).sort()).toEqual(files);
      expect(readFileSync(path.join(dir, 'store.json')).equals(manifest)).toBe(true);
      expect(existsSync(path.join(bucketDir, segmentZero))).toBe(true);
      const report = await verifyLog(dir);
      expect(report.problems).toEqual([
        expect.objectContaining({ kind: 'corrupt', file: path.join(bucketDir, 'compaction.swap') }),
      ]);
    },
  );
});

describe('a segment file lost while the store was down after a crash', () => {
  /**
   * The directory as a crash leaves it: a copy of what is on disk while the store is open (every
   * acknowledged batch is fdatasynced), without the LOCK file (its process is gone).
   */
  function crashedCopy(dir: string): string {
    const copy = tempDir();
    cpSync(dir, copy, { recursive: true });
    rmSync(path.join(copy, 'LOCK'), { force: true });
    return copy;
  }

  const segments = (dir: string) =>
    readdirSync(path.join(dir, 'buckets', '000')).filter((f) => f.endsWith('.log'));

  it("is refused (CORRUPT_MESSAGE), not opened empty, when it is a log's only segment", async () => {
    const dir = tempDir();
    const store = await OffsetStore.open({ dir, bucketCount: 1 });
    await store.commitOffsets('g', [{ ...K(0), offset: 7 }]);
    const copy = crashedCopy(dir);
    await store.close();
    expect(segments(copy)).toEqual(['00000000000000000000.log']);
    rmSync(path.join(copy, 'buckets', '000', '00000000000000000000.log'));
    await expect(OffsetStore.open({ dir: copy })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
    });
  });

  it('is refused when it is the segment a checkpoint left as the whole log', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open({
      dir,
      bucketCount: 1,
      compaction: { strategy: 'checkpoint', background: false },
    });
    await store.commitOffsets('g', [{ ...K(0), offset: 7 }]);
    await store.compact(); // a quiet bucket: the checkpoint covers the whole log, which is freed
    await store.commitOffsets('g', [{ ...K(0), offset: 8 }]);
    const copy = crashedCopy(dir);
    await store.close();
    expect(segments(copy)).toHaveLength(1); // the segment begun after the checkpoint
    rmSync(path.join(copy, 'buckets', '000', segments(copy)[0]!));
    await expect(OffsetStore.open({ dir: copy })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
    });
  });
});

describe('a close that fails', () => {
  it('settles only once the manifest write begun when the buckets finished recovering is done', async () => {
    const dir = tempDir();
    const setup = await OffsetStore.open({ dir, bucketCount: 2 });
    const groups = ['g0', 'g1', 'g2', 'g3', 'g4', 'g5'];
    for (const g of groups) await setup.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await setup.close();
    const inBucket0 = groups.find((g) => setup.bucketFor(g) === 0)!;

    // Bucket 1 recovers only when let go; the manifest's writes take a while.
    const fs = new FaultyFileSystem();
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    let failLogClose = false;
    fs.hookHandles((file, handle) => ({
      ...(file.includes(`${path.sep}buckets${path.sep}000${path.sep}`) && file.endsWith('.log')
        ? {
            close: async () => {
              await handle.close();
              if (failLogClose) throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
            },
          }
        : {}),
      ...(file.includes(`${path.sep}buckets${path.sep}001${path.sep}`)
        ? { read: async (...args) => (await held, handle.read(...args)) }
        : {}),
      ...(file.endsWith('store.json.tmp')
        ? {
            writev: async (...args) => {
              await new Promise((resolve) => setTimeout(resolve, 100));
              return handle.writev(...args);
            },
          }
        : {}),
    }));
    const store = await OffsetStore.open({
      dir,
      fs,
      bucketCount: 2,
      awaitRecovery: false,
      onWarning: () => {},
    });
    // Bucket 0 serves; closing its log then fails, which the close reports.
    for (;;) {
      const answer = await store.fetchOffsets(inBucket0).then(
        () => 'served',
        (error: { code?: string }) => error.code,
      );
      if (answer === 'served') break;
      expect(answer).toBe('COORDINATOR_LOAD_IN_PROGRESS');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    failLogClose = true;
    const closing = store.close();
    letGo(); // recovery ends while the store closes: the log ends are then recorded
    await expect(closing).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    expect(fs.openFiles, 'files still open when close settled').toEqual([]);
  });
});
