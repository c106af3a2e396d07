/**
 * LMDB checkpoints (the 'checkpoint' compaction strategy): recovery restores the newest valid one and
 * replays only the tail; a corrupt or "future" checkpoint is ignored with a warning, and the store
 * refuses to open (CORRUPT_MESSAGE) rather than lose what the log below it held once that is gone; a
 * clean close writes a last checkpoint; each checkpoint is read back before the log it covers is
 * deleted, so a quiet offsets-bucket shrinks to its live size; the strategy is the store's own,
 * recorded in it, and changes only by an explicit conversion, in either direction.
 */
import { cpSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import { open } from 'lmdb';
import { describe, expect, it } from 'vitest';
import { OffsetStore, type OffsetStoreOptions } from '../../src/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { verifyLog } from '../../src/admin/index.js';
import { CheckpointStore, OffsetsTableState } from '../../src/kv/index.js';
import { buildOffsetBatch, loadChecksum, sealBatch } from '../../src/codec/index.js';
import {
  applyHistory,
  generateHistory,
  modelOf,
  stateOf,
} from '../compaction/compaction-fixtures.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { copyStoreDir } from '../store/store-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

function options(
  dir: string,
  warnings: string[] = [],
  strategy: 'checkpoint' | 'log-cleaner' | 'none' = 'checkpoint',
): OffsetStoreOptions {
  return {
    dir,
    bucketCount: 1,
    segmentBytesMax: 2048,
    compaction: { strategy, intervalMs: 3_600_000 },
    onWarning: (m) => warnings.push(m),
  };
}

/**
 * A one-bucket store of 1 KiB segments under the checkpoint strategy that compacts only when asked:
 * a few commits seal segments for a checkpoint to free.
 */
function compactOnAsk(dir: string, extra: Partial<OffsetStoreOptions> = {}): OffsetStoreOptions {
  return {
    dir,
    bucketCount: 1,
    segmentBytesMax: 1024,
    compaction: { strategy: 'checkpoint', background: false },
    ...extra,
  };
}

/**
 * A checkpoint store whose only group is committed, deleted and compacted away, converted to 'none'
 * (the image of an empty state is no batch: the log starts at its end), then back to 'checkpoint'.
 */
async function emptiedAndConvertedBack(dir: string): Promise<void> {
  const first = await OffsetStore.open(options(dir));
  await first.commitOffsets('gone', [{ tableId: 1, bucketId: 0, offset: 5 }]);
  await first.commitOffsets('gone', [{ tableId: 1, bucketId: 1, offset: 9 }]);
  await first.deleteGroup('gone');
  await first.compact();
  await first.convertCompaction('none');
  await first.close();
  const second = await OffsetStore.open({ dir });
  await second.convertCompaction('checkpoint');
  await second.close();
}

/** The store opens with the deleted group gone, takes a commit, and has it after the next open. */
async function expectReopensAndCommits(dir: string): Promise<void> {
  const third = await OffsetStore.open({ dir });
  expect(await third.fetchOffsets('gone')).toEqual([]);
  await third.commitOffsets('back', [{ tableId: 1, bucketId: 0, offset: 3 }]);
  await third.close();
  const fourth = await OffsetStore.open({ dir });
  expect((await fourth.fetchOffsets('back')).map((o) => o?.offset)).toEqual([3]);
  await fourth.close();
}

/** The real file system, failing to unlink segment files while `failing`. */
/**
 * The real file system, whose sync of the store's folder fails (EIO) once, when the store.json just
 * renamed into it records `strategy`: a manifest write that reached the disk and reported failure.
 */
class ManifestSyncFailure extends NodeFileSystem {
  failWhenRecorded: string | undefined;
  /** Also fail the folder's next sync after that one (the old record written back). */
  failNextToo = false;

  override async syncDir(dirPath: string): Promise<void> {
    const strategy = this.failWhenRecorded;
    if (strategy === undefined && this.failNextToo && dirPath.endsWith(path.sep + 'store')) {
      this.failNextToo = false;
      throw Object.assign(new Error(`EIO: injected again, fsync of directory '${dirPath}'`), {
        code: 'EIO',
      });
    }
    if (strategy !== undefined) {
      const manifest = await super.readFile(path.join(dirPath, 'store.json')).catch(() => null);
      if (manifest !== null && JSON.parse(manifest.toString()).compactionStrategy === strategy) {
        this.failWhenRecorded = undefined;
        throw Object.assign(new Error(`EIO: injected, fsync of directory '${dirPath}'`), {
          code: 'EIO',
        });
      }
    }
    return super.syncDir(dirPath);
  }
}

class SegmentUnlinkFailures extends NodeFileSystem {
  failing = false;

  override async unlink(filePath: string): Promise<void> {
    if (this.failing && filePath.endsWith('.log'))
      throw Object.assign(new Error(`EIO: injected, unlink '${filePath}'`), {
        code: 'EIO',
        path: filePath,
      });
    return super.unlink(filePath);
  }
}

/**
 * A checkpointing store with 300 of a 400-commit history applied (a checkpoint after the first 200),
 * converted to 'log-cleaner' by a conversion whose cleanup failed (deleting the segments below the
 * new log start): it uses the new strategy, its old checkpoint environment left behind. The rest of
 * the history is the test's to apply.
 */
async function afterFailedConversionAway(dir: string) {
  const fs = new SegmentUnlinkFailures();
  const history = generateHistory(11, 400);
  const store = await OffsetStore.open({ ...options(dir), fs });
  await applyHistory(store, history.slice(0, 200));
  await store.compact(); // a checkpoint
  await applyHistory(store, history.slice(200, 300));
  fs.failing = true;
  await expect(store.convertCompaction('log-cleaner')).rejects.toMatchObject({
    code: 'LOG_STORAGE_ERROR',
    message: expect.stringMatching(/now uses 'log-cleaner'/),
  });
  fs.failing = false;
  return { store, history };
}

async function checkpointedStore(dir: string) {
  const history = generateHistory(5, 300);
  const store = await OffsetStore.open(options(dir));
  await applyHistory(store, history.slice(0, 150));
  await store.compact();
  await applyHistory(store, history.slice(150));
  await store.compact();
  await store.close();
  return { history };
}

describe('LMDB checkpoints', () => {
  it('restores the newest checkpoint and replays nothing after a clean close', async () => {
    const dir = tempDir();
    const { history } = await checkpointedStore(dir);
    const store = await OffsetStore.open(options(dir));
    const report = store.recoveryReports()[0]!;
    expect(report.checkpointLogOffset).toBeGreaterThan(0);
    expect(report.batchesReplayed).toBe(0);
    expect(await stateOf(store)).toEqual(modelOf(history));
    await store.close();
  });

  it('ignores a checkpoint whose content fails its checksum with a warning, and refuses to open once the log it covered is gone', async () => {
    const dir = tempDir();
    await checkpointedStore(dir);
    const env = open({ path: path.join(dir, 'buckets/000/checkpoint'), encoding: 'binary' });
    const metas = [...env.getRange({ start: ['m'], end: ['m', Number.MAX_SAFE_INTEGER] })].map(
      (e) => JSON.parse(Buffer.from(e.value as Buffer).toString()) as { logOffset: number },
    );
    const newest = Math.max(...metas.map((m) => m.logOffset));
    const [entry] = [...env.getRange({ start: ['g', newest], end: ['g', newest + 1], limit: 1 })];
    const damaged = Buffer.from(entry!.value as Buffer);
    damaged.writeDoubleLE(12345, 8 + 3 * 8); // the first entry's committed offset
    await env.put(entry!.key, damaged);
    await env.close();
    const warnings: string[] = [];
    await expect(OffsetStore.open(options(dir, warnings))).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(/the segments before it are missing/),
    });
    expect(warnings.join('\n')).toMatch(
      new RegExp(`ignoring checkpoint at log offset ${newest}: .*checksum`),
    );
  });

  it('warns of a checkpoint of another format version (a later store wrote it), naming it, and log verify reports it', async () => {
    const dir = tempDir();
    await checkpointedStore(dir);
    const env = open({ path: path.join(dir, 'buckets/000/checkpoint'), encoding: 'binary' });
    for (const { key, value } of env.getRange({
      start: ['m'],
      end: ['m', Number.MAX_SAFE_INTEGER],
    })) {
      const meta = JSON.parse(Buffer.from(value as Buffer).toString()) as Record<string, unknown>;
      await env.put(key, Buffer.from(JSON.stringify({ ...meta, formatVersion: 99 })));
    }
    await env.close();
    const warnings: string[] = [];
    await expect(OffsetStore.open(options(dir, warnings))).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
    });
    // Before: no word of the checkpoint; the error blamed the log's missing segments alone.
    expect(warnings.join('\n')).toMatch(
      /checkpoint: the checkpoint at log offset \d+ is ignored: its format version is 99, and this version of the store reads 1 only/,
    );
    const report = await verifyLog(dir);
    expect(report.problems.map((p) => `${p.file}: ${p.reason}`).join('\n')).toMatch(
      /checkpoint\/data\.mdb: the checkpoint at log offset \d+ is ignored: its format version is 99/,
    );
  });

  it('uses the whole log when the only checkpoint fails its checksum and nothing was deleted yet', async () => {
    const dir = tempDir();
    const history = generateHistory(5, 200);
    const store = await OffsetStore.open({
      ...options(dir),
      compaction: { strategy: 'log-cleaner', background: false },
    });
    await applyHistory(store, history);
    await store.convertCompaction('checkpoint'); // writes a checkpoint, deletes nothing
    const env = open({ path: path.join(dir, 'buckets/000/checkpoint'), encoding: 'binary' });
    const [entry] = [...env.getRange({ start: ['g'], end: ['h'], limit: 1 })];
    const damaged = Buffer.from(entry!.value as Buffer);
    damaged.writeDoubleLE(12345, 8 + 3 * 8);
    await env.put(entry!.key, damaged);
    await env.close();
    const image = await stateOf(store);
    // A crash: the store is not closed (a clean close would write a fresh checkpoint); its files are copied.
    const crashed = tempDir();
    cpSync(dir, crashed, { recursive: true });
    await store.close();
    const warnings: string[] = [];
    const reopened = await OffsetStore.open({ dir: crashed, onWarning: (m) => warnings.push(m) });
    expect(warnings.join('\n')).toMatch(/ignoring checkpoint at log offset \d+: .*checksum/);
    expect(reopened.recoveryReports()[0]!.checkpointLogOffset).toBeUndefined();
    expect(await stateOf(reopened)).toEqual(image);
    await reopened.close();
  });

  it('refuses an fdatasynced log that ends below a checkpoint (it lost batches the checkpoint saw durable); with durability os, ignores the checkpoint', async () => {
    for (const durability of ['fsync', 'os'] as const) {
      const dir = tempDir();
      const history = generateHistory(9, 60);
      const store = await OffsetStore.open({ ...options(dir), durability });
      await applyHistory(store, history);
      await store.close();
      const env = open({ path: path.join(dir, 'buckets/000/checkpoint'), encoding: 'binary' });
      const future = 1_000_000;
      await env.put(
        ['m', future],
        Buffer.from(
          JSON.stringify({
            formatVersion: 1,
            logOffset: future,
            groupCount: 0,
            snapshotCount: 0,
            liveOffsets: 0,
            checksum: 0,
            createdAtMs: 0,
          }),
        ),
      );
      await env.close();
      const warnings: string[] = [];
      if (durability === 'fsync') {
        await expect(
          OffsetStore.open({ ...options(dir, warnings), durability }),
        ).rejects.toMatchObject({
          code: 'CORRUPT_MESSAGE',
          message: expect.stringMatching(
            /held batches up to log offset 999999 .*\(segments or batches are missing\)/,
          ),
        });
        continue;
      }
      const reopened = await OffsetStore.open({ ...options(dir, warnings), durability });
      expect(warnings.join('\n')).toMatch(
        /discarded the checkpoint at log offset 1000000: past the log end/,
      );
      expect(await stateOf(reopened)).toEqual(modelOf(history));
      await reopened.close();
    }
  });

  it('frees the whole log of a quiet offsets-bucket: it shrinks to its live size', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open({
      ...options(dir),
      compaction: { strategy: 'checkpoint', background: false },
    });
    for (let round = 0; round < 40; round++)
      await store.commitOffsets(
        'quiet',
        Array.from({ length: 24 }, (_, b) => ({ tableId: 1, bucketId: b, offset: round })),
      );
    expect((await store.stats()).buckets[0]!.segmentCount).toBeGreaterThan(4);
    for (let i = 0; i < 4; i++) await store.compact();
    const stats = (await store.stats()).buckets[0]!;
    expect(stats).toMatchObject({ segmentCount: 1, logBytes: 0, liveOffsets: 24 });
    await store.close();
    const reopened = await OffsetStore.open({ dir });
    expect((await reopened.fetchOffsets('quiet')).map((o) => o!.offset)).toEqual(
      Array.from({ length: 24 }, () => 39),
    );
    await reopened.close();
  });

  it('records the strategy in the store: a plain open uses it, another one is refused, and conversion goes both ways', async () => {
    const dir = tempDir();
    const { history } = await checkpointedStore(dir);
    await expect(OffsetStore.open(options(dir, [], 'log-cleaner'))).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(/uses 'checkpoint'.*convert/),
    });
    const plain = await OffsetStore.open({ dir });
    expect((await plain.stats()).compactionStrategy).toBe('checkpoint');
    expect(await stateOf(plain)).toEqual(modelOf(history));
    await plain.convertCompaction('log-cleaner');
    expect((await plain.stats()).compactionStrategy).toBe('log-cleaner');
    expect(existsSync(path.join(dir, 'buckets/000/checkpoint'))).toBe(false);
    await plain.compact();
    expect(await stateOf(plain)).toEqual(modelOf(history));
    await plain.close();
    const cleaner = await OffsetStore.open({ dir });
    expect((await cleaner.stats()).compactionStrategy).toBe('log-cleaner');
    expect(await stateOf(cleaner)).toEqual(modelOf(history));
    await cleaner.convertCompaction('checkpoint');
    await cleaner.compact();
    await cleaner.close();
    const again = await OffsetStore.open({ dir });
    expect((await again.stats()).compactionStrategy).toBe('checkpoint');
    expect(await stateOf(again)).toEqual(modelOf(history));
    await again.close();
  });
  it('converts away from checkpoints a bucket of more groups than pendingCommitsMax (its image was refused part way for the appends pending)', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open({
      dir,
      bucketCount: 1,
      pendingCommitsMax: 2,
      compaction: { strategy: 'checkpoint', background: false },
    });
    for (let g = 0; g < 6; g++)
      await store.commitOffsets(`g${g}`, [{ tableId: 1, bucketId: 0, offset: g }]);
    await store.compact();
    const before = await stateOf(store);
    await store.convertCompaction('log-cleaner');
    expect((await store.stats()).compactionStrategy).toBe('log-cleaner');
    expect(await stateOf(store)).toEqual(before);
    await store.close();
    const reopened = await OffsetStore.open({ dir, bucketCount: 1 });
    expect(await stateOf(reopened)).toEqual(before);
    await reopened.close();
  });

  it('converts away from checkpoints a group whose offsets with metadata take more than one batch to write back', async () => {
    const dir = tempDir();
    const open = () =>
      OffsetStore.open({
        dir,
        bucketCount: 1,
        durability: 'os',
        compaction: { strategy: 'checkpoint', background: false },
      });
    const store = await open();
    const metadata = 'm'.repeat(4000);
    // 2,500 offsets of ~4 KB: ~10 MB of records, more than one 8 MiB batch.
    for (let start = 0; start < 2500; start += 500)
      await store.commitOffsets(
        'big-group',
        Array.from({ length: 500 }, (_, i) => ({
          tableId: 1,
          bucketId: start + i,
          offset: start + i,
          metadata,
        })),
      );
    await store.compact(); // a checkpoint; the log below it is freed
    await store.convertCompaction('log-cleaner');
    expect((await store.stats()).compactionStrategy).toBe('log-cleaner');
    await store.close();
    const reopened = await OffsetStore.open({ dir, compaction: { background: false } });
    const fetched = await reopened.fetchOffsets('big-group');
    expect(fetched).toHaveLength(2500);
    expect(fetched.every((o) => o?.metadata === metadata && o.offset === o.bucketId)).toBe(true);
    await reopened.close();
  });

  it('converts back to checkpoints a bucket whose log holds nothing from its log start (all its groups deleted), and reopens it', async () => {
    const dir = tempDir();
    await emptiedAndConvertedBack(dir);
    await expectReopensAndCommits(dir);
  });

  it('opens a store an earlier version left with a checkpoint below its log start (taken at log offset 0 after converting back)', async () => {
    const dir = tempDir();
    await emptiedAndConvertedBack(dir);
    // What the earlier version wrote: the one checkpoint, of the empty state, at log offset 0.
    const envDir = path.join(dir, 'buckets/000/checkpoint');
    const fs = new NodeFileSystem();
    await fs.removeTree(envDir);
    const env = await CheckpointStore.open(fs, envDir);
    await env.write(new OffsetsTableState(), 0, Date.now());
    await env.close();
    await expectReopensAndCommits(dir);
  });

  it('a conversion away from checkpoints whose cleanup fails is done all the same: the store uses the new strategy, and its compactions free nothing the log start needs', async () => {
    const dir = tempDir();
    const { store, history } = await afterFailedConversionAway(dir);
    expect((await store.stats()).compactionStrategy).toBe('log-cleaner');
    await applyHistory(store, history.slice(300));
    await store.compact();
    expect(await stateOf(store)).toEqual(modelOf(history));
    await store.close();
    const reopened = await OffsetStore.open({ dir });
    expect((await reopened.stats()).compactionStrategy).toBe('log-cleaner');
    expect(await stateOf(reopened)).toEqual(modelOf(history));
    await reopened.close();
  });

  it('a conversion back to checkpoints after one away whose cleanup failed keeps no checkpoint from before: an old one, taken before the log cleaner dropped tombstones, would bring deleted offsets back as a fallback', async () => {
    const dir = tempDir();
    // The cleanup of the conversion away failed: the checkpoint environment stayed.
    const { store, history } = await afterFailedConversionAway(dir);
    await applyHistory(store, history.slice(300));
    await store.compact(); // the log cleaner drops what it may
    await store.convertCompaction('checkpoint');
    await store.close();
    const env = await CheckpointStore.open(
      new NodeFileSystem(),
      path.join(dir, 'buckets', '000', 'checkpoint'),
      { readOnly: true },
    );
    try {
      expect(
        env.list().map((c) => c.logOffset),
        'only the one the conversion wrote',
      ).toHaveLength(1);
    } finally {
      await env.close();
    }
    const reopened = await OffsetStore.open(options(dir));
    expect(await stateOf(reopened)).toEqual(modelOf(history));
    await reopened.close();
  });

  it('a conversion whose store.json was renamed into place but whose folder sync failed: the old record is written again before compaction frees anything, and a crash then loses nothing', async () => {
    const dir = tempDir();
    const fs = new ManifestSyncFailure();
    const history = generateHistory(13, 400);
    const store = await OffsetStore.open({ ...compactOnAsk(dir), fs });
    await applyHistory(store, history.slice(0, 200));
    await store.compact();
    await applyHistory(store, history.slice(200, 300));
    // The conversion's image is written and its store.json renamed into place; the sync fails.
    fs.failWhenRecorded = 'none';
    await expect(store.convertCompaction('none')).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(
        /failed \(it keeps 'checkpoint'; a later conversion completes it\)/,
      ),
    });
    // Compacting by the old strategy frees the log below a new checkpoint, above the image's start;
    // a crash comes before anything else writes store.json.
    await store.compact();
    const image = tempDir();
    copyStoreDir(dir, image);
    const reopened = await OffsetStore.open({ dir: image });
    expect((await reopened.stats()).compactionStrategy).toBe('checkpoint');
    expect(await stateOf(reopened)).toEqual(modelOf(history.slice(0, 300)));
    await reopened.close();
    await applyHistory(store, history.slice(300));
    expect(await stateOf(store)).toEqual(modelOf(history));
    await store.close();
  });

  it('a conversion whose store.json may have reached the disk, and whose old record could not be written back: compaction stays off until a conversion completes', async () => {
    const dir = path.join(tempDir(), 'store');
    const fs = new ManifestSyncFailure();
    const history = generateHistory(17, 300);
    const store = await OffsetStore.open({ ...compactOnAsk(dir), fs });
    await applyHistory(store, history.slice(0, 200));
    await store.compact();
    fs.failWhenRecorded = 'none';
    fs.failNextToo = true;
    await expect(store.convertCompaction('none')).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/may hold either strategy, so compaction stays off/),
    });
    await expect(store.compact()).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/compaction of the store .* is off: .*convert again/),
    });
    // Converting to the strategy it keeps writes that record, and compaction runs again.
    await store.convertCompaction('checkpoint');
    await applyHistory(store, history.slice(200));
    await store.compact();
    const image = tempDir();
    copyStoreDir(dir, image);
    const reopened = await OffsetStore.open({ dir: image });
    expect((await reopened.stats()).compactionStrategy).toBe('checkpoint');
    expect(await stateOf(reopened)).toEqual(modelOf(history));
    await reopened.close();
    await store.close();
  });

  it('close waits for a conversion in flight, in either direction: everything is there after reopen', async () => {
    for (const [from, to] of [
      ['checkpoint', 'log-cleaner'],
      ['log-cleaner', 'checkpoint'],
    ] as const) {
      const dir = tempDir();
      const history = generateHistory(7, 300);
      const store = await OffsetStore.open(options(dir, [], from));
      await applyHistory(store, history);
      await store.compact();
      const conversion = store.convertCompaction(to);
      await store.close();
      await conversion;
      const reopened = await OffsetStore.open({ dir });
      expect((await reopened.stats()).compactionStrategy, `${from} -> ${to}`).toBe(to);
      expect(await stateOf(reopened), `${from} -> ${to}`).toEqual(modelOf(history));
      await reopened.close();
    }
  });
});

describe('CheckpointStore.verify', () => {
  it('passes a checkpoint as written (600 groups, in several chunks) and finds what load finds: a changed value, a missing group, a truncated image', async () => {
    await loadChecksum();
    const state = new OffsetsTableState();
    for (let g = 0; g < 600; g++) {
      const records = Array.from({ length: 3 }, (_, b) => ({
        tableId: 1,
        partitionId: null,
        bucketId: b,
        offset: g * 10 + b,
        leaderEpoch: -1,
        metadata: b === 0 ? `m${g}` : '',
      }));
      const batch = buildOffsetBatch(`group-${g}`, records, 1_700_000_000_000);
      sealBatch(batch, g);
      state.applyBatch(batch, 0, g);
    }
    const envDir = path.join(tempDir(), 'checkpoint');
    const fs = new NodeFileSystem();
    const checkpoints = await CheckpointStore.open(fs, envDir);
    try {
      const { info } = await checkpoints.write(state, 600, Date.now());
      expect(info).toMatchObject({ groupCount: 600, liveOffsets: 1800 });
      await expect(checkpoints.verify(info)).resolves.toBeUndefined();
      expect(checkpoints.load(info).groups).toHaveLength(600);

      const env = open<Buffer, (string | number)[]>({ path: envDir, encoding: 'binary' });
      const key = ['g', 600, 'group-7'];
      const original = Buffer.from(env.get(key)!);
      const changed = Buffer.from(original);
      changed.writeDoubleLE(12345, 8 + 3 * 8);
      const damages: [string, () => Promise<unknown>, RegExp][] = [
        ['a changed value', () => env.put(key, changed), /fails its checksum/],
        ['a missing group', () => env.remove(key), /incomplete: 599\/600 groups/],
        ['a truncated image', () => env.put(key, original.subarray(0, 20)), /truncated/],
      ];
      for (const [what, damage, message] of damages) {
        await damage();
        await expect(checkpoints.verify(info), what).rejects.toThrow(message);
        expect(() => checkpoints.load(info), what).toThrow(RangeError);
        await env.put(key, original);
      }
      await expect(checkpoints.verify(info)).resolves.toBeUndefined();
      await env.close();
    } finally {
      await checkpoints.close();
    }
  });
});

describe('a checkpoint that does not read back as written', () => {
  it('is CORRUPT_MESSAGE and never trusted: nothing is freed under it, a close goes on without it, and the reopened store has every offset', async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const options = compactOnAsk(dir, { onWarning: (message) => warnings.push(message) });
    const store = await OffsetStore.open(options);
    const commit = (offset: number) =>
      store.commitOffsets('g', [
        { tableId: 1, bucketId: 0, offset },
        { tableId: 1, bucketId: 1, offset: offset + 1 },
      ]);
    for (let i = 0; i < 20; i++) await commit(i);
    const first = (await store.compact()).buckets[0]!.checkpointLogOffset;
    expect(first).toBeGreaterThan(0);
    for (let i = 20; i < 60; i++) await commit(i);
    const logBytes = (await store.stats()).totals.logBytes;
    // The read-back of every checkpoint written from now on fails, as over a damaged page.
    const verify = CheckpointStore.prototype.verify;
    CheckpointStore.prototype.verify = () =>
      Promise.reject(new RangeError('checkpoint at log offset 0 is incomplete (injected)'));
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        const outcome = await store.compact().then(
          (report) => report,
          (error: unknown) => error,
        );
        expect(outcome, `attempt ${attempt}`).toMatchObject({ code: 'CORRUPT_MESSAGE' });
        expect((outcome as Error).message).toMatch(/does not read back as written/);
        expect((await store.stats()).totals.logBytes, 'nothing freed').toBe(logBytes);
      }
      await store.close();
    } finally {
      CheckpointStore.prototype.verify = verify;
    }
    expect(warnings.some((w) => /closing without it/.test(w))).toBe(true);
    const reopened = await OffsetStore.open(options);
    expect(await reopened.fetchOffsets('g', [{ tableId: 1, bucketId: 1 }])).toMatchObject([
      { offset: 60 },
    ]);
    await reopened.close();
  });
});

describe('a checkpoint whose write failed after its transaction committed', () => {
  it('is never trusted without a read-back: the next compaction writes and verifies it again before freeing anything', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const warnings: string[] = [];
    const options = compactOnAsk(dir, { fs, onWarning: (message) => warnings.push(message) });
    const store = await OffsetStore.open(options);
    for (let i = 0; i < 20; i++)
      await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1000 + i }]);
    const logBytes = (await store.stats()).totals.logBytes;
    // The checkpoint's transaction commits; sealing its file fails.
    fs.plan = { failWritesToSuffix: 'data.mdb.seal.tmp' };
    await expect(store.compact()).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/compacting offsets-bucket 0 failed.*EIO/),
    });
    fs.plan = {};
    expect((await store.stats()).totals.logBytes, 'nothing freed').toBe(logBytes);
    // From now on every read-back fails, as over a damaged page: the checkpoint left behind must be
    // read back too before anything is freed under it.
    const verify = CheckpointStore.prototype.verify;
    let verified = 0;
    CheckpointStore.prototype.verify = () => {
      verified++;
      return Promise.reject(new RangeError('checkpoint does not read back (injected)'));
    };
    try {
      await expect(store.compact()).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
      expect(verified).toBe(1);
      expect((await store.stats()).totals.logBytes, 'nothing freed').toBe(logBytes);
      await store.close();
    } finally {
      CheckpointStore.prototype.verify = verify;
    }
    const reopened = await OffsetStore.open({ ...options, fs: undefined });
    expect((await reopened.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(1019);
    await reopened.close();
  });
});

describe('a checkpoint written again at the same log offset', () => {
  it('keeps two checkpoints, the newest and the one to fall back on, however many were taken', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(compactOnAsk(dir));
    const taken: number[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 10; i++)
        await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: round * 10 + i }]);
      taken.push((await store.compact()).buckets[0]!.checkpointLogOffset!);
    }
    await store.close();
    const env = await CheckpointStore.open(
      new NodeFileSystem(),
      path.join(dir, 'buckets/000/checkpoint'),
    );
    try {
      expect(env.list().map((c) => c.logOffset)).toEqual(taken.slice(-2).reverse());
    } finally {
      await env.close();
    }
  });

  it('keeps the previous checkpoint, the one to fall back on, while the new one is not read back', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await OffsetStore.open(compactOnAsk(dir, { fs, onWarning: () => {} }));
    const commit = (i: number) =>
      store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1000 + i }]);
    for (let i = 0; i < 20; i++) await commit(i);
    const previous = (await store.compact()).buckets[0]!.checkpointLogOffset!;
    for (let i = 20; i < 40; i++) await commit(i);
    fs.plan = { failWritesToSuffix: 'data.mdb.seal.tmp' };
    await expect(store.compact()).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    fs.plan = {};
    const verify = CheckpointStore.prototype.verify;
    CheckpointStore.prototype.verify = () =>
      Promise.reject(new RangeError('checkpoint does not read back (injected)'));
    try {
      // The same log offset again (nothing was applied since): written, and not read back.
      await expect(store.compact()).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
      expect((await store.stats()).buckets[0]!.checkpoint?.logOffset).toBe(previous);
    } finally {
      CheckpointStore.prototype.verify = verify;
    }
    await store.close();
    const reopened = await OffsetStore.open(compactOnAsk(dir));
    expect((await reopened.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(1039);
    await reopened.close();
  });
});

describe('converting under load', () => {
  it.each([
    ['checkpoint', 'log-cleaner'],
    ['log-cleaner', 'checkpoint'],
  ])(
    'converts from %s to %s while commits never stop, and keeps every acknowledged one',
    async (from, to) => {
      const dir = tempDir();
      const store = await OffsetStore.open({
        dir,
        bucketCount: 2,
        durability: 'os',
        compaction: { strategy: from, background: false },
      });
      let stopped = false;
      const acknowledged = new Map<string, number>();
      const loops = Array.from({ length: 8 }, async (_, i) => {
        for (let offset = 1; !stopped; offset++) {
          await store.commitOffsets(`g${i}`, [{ tableId: 1, bucketId: 0, offset }]);
          acknowledged.set(`g${i}`, offset);
        }
      });
      try {
        while (acknowledged.size < 8) await new Promise((resolve) => setTimeout(resolve, 5));
        const timedOut = Symbol('timed out');
        const outcome = await Promise.race([
          store.convertCompaction(to),
          new Promise((resolve) => setTimeout(() => resolve(timedOut), 5000)),
        ]);
        expect(outcome, 'the conversion ends while commits go on').not.toBe(timedOut);
        expect((await store.stats()).compactionStrategy).toBe(to);
      } finally {
        stopped = true;
        await Promise.all(loops);
      }
      await store.close();
      const reopened = await OffsetStore.open({ dir, bucketCount: 2 });
      for (const [groupId, offset] of acknowledged)
        expect((await reopened.fetchOffsets(groupId))[0]?.offset, groupId).toBe(offset);
      await reopened.close();
    },
  );
});

describe("a checkpoint's failed LMDB commit", () => {
  it('names what failed (LMDB says only "see commitError") and keeps its code', async () => {
    const { lmdbCommit } = await import('../../src/kv/checkpoint-store.js');
    const cause = Object.assign(new Error('MDB_PANIC: No space left on device'), {
      code: 'ENOSPC',
    });
    const failed = Object.assign(new Error('Commit failed (see commitError for details)'), {
      commitError: Promise.reject(cause),
    });
    const error = await lmdbCommit(Promise.reject(failed)).catch((e: unknown) => e);
    expect(error).toMatchObject({
      message: "the checkpoint's LMDB commit failed: MDB_PANIC: No space left on device",
      code: 'ENOSPC',
      cause,
    });
    // LMDB gives a system error by its number (28 on a full disk): named as Node names it, so the
    // store reports LOG_STORAGE_ERROR (a close on a full disk rejected with a raw Error).
    const numbered = Object.assign(new Error('No space left on device'), { code: 28 });
    const full = Object.assign(new Error('Commit failed (see commitError for details)'), {
      commitError: Promise.reject(numbered),
    });
    expect(await lmdbCommit(Promise.reject(full)).catch((e: unknown) => e)).toMatchObject({
      code: 'ENOSPC',
    });
    // A failure without one is raised as it came.
    const plain = new Error('disk gone');
    expect(await lmdbCommit(Promise.reject(plain)).catch((e: unknown) => e)).toBe(plain);
  });
});
