/**
 * The seal of a checkpoint environment. Every file here is sound for LMDB to map (the damage cases,
 * which could crash the process, run in child processes in checkpoint-damage.test.ts): a checkpoint
 * write seals `data.mdb`; a file sealed as it is opens once its pages pass their checks and their
 * checksum matches the seal, even after a crash left a commit's pages (but not its meta) behind; a
 * file not sealed as it is (the seal write failed, the seal is missing or damaged) is checked page by
 * page, restored, and sealed again.
 */
import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadChecksum } from '../../src/codec/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { OffsetStore, type OffsetStoreOptions } from '../../src/index.js';
import { SEAL_FILE, inspectCheckpointFile, readLmdbMeta, readSeal } from '../../src/kv/index.js';
import {
  applyHistory,
  generateHistory,
  modelOf,
  stateOf,
} from '../compaction/compaction-fixtures.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { tempDir } from '../support/temp-dir.js';

beforeAll(() => loadChecksum());

const fs = new NodeFileSystem();

function options(
  dir: string,
  warnings: string[] = [],
  extra: Partial<OffsetStoreOptions> = {},
): OffsetStoreOptions {
  return {
    dir,
    bucketCount: 1,
    segmentBytesMax: 2048,
    compaction: { strategy: 'checkpoint', intervalMs: 3_600_000 },
    onWarning: (m) => warnings.push(m),
    ...extra,
  };
}

const checkpointDir = (dir: string): string => path.join(dir, 'buckets/000/checkpoint');

/** The newest txnid of an LMDB data file's bytes. */
async function txnidOf(bytes: Buffer): Promise<number> {
  const copy = path.join(tempDir(), 'data.mdb');
  writeFileSync(copy, bytes);
  const file = await fs.open(copy, 'r');
  try {
    return (await readLmdbMeta(file, bytes.length)).txnid;
  } finally {
    await file.close();
  }
}

async function lmdbTxnid(dir: string): Promise<number> {
  const file = await fs.open(path.join(checkpointDir(dir), 'data.mdb'), 'r');
  try {
    return (await readLmdbMeta(file, await file.sizeBytes())).txnid;
  } finally {
    await file.close();
  }
}

describe('checkpoint seal', () => {
  it('seals data.mdb after each checkpoint write, and the next open finds it sealed', async () => {
    const dir = tempDir();
    const history = generateHistory(3, 200, 8, 40);
    const store = await OffsetStore.open(options(dir));
    await applyHistory(store, history.slice(0, 100));
    await store.compact();
    expect(await readSeal(fs, checkpointDir(dir))).toMatchObject({ txnid: await lmdbTxnid(dir) });
    await applyHistory(store, history.slice(100));
    await store.compact();
    await store.close();
    expect(await readSeal(fs, checkpointDir(dir))).toMatchObject({ txnid: await lmdbTxnid(dir) });
    expect(await inspectCheckpointFile(fs, checkpointDir(dir))).toBe('sealed');
  });

  it('reads the file again when a writer committed while it was checked (a read-only view beside a live store), instead of calling it damaged', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(options(dir));
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await store.compact();
    await store.close();
    const dataPath = path.join(checkpointDir(dir), 'data.mdb');
    const before = readFileSync(dataPath);
    const again = await OffsetStore.open(options(dir));
    for (let i = 2; i < 40; i++)
      await again.commitOffsets(`g${i}`, [{ tableId: 1, bucketId: 0, offset: i }]);
    await again.compact();
    await again.close();
    expect(await lmdbTxnid(dir)).toBeGreaterThan(await txnidOf(before));
    // The first open of data.mdb reads the meta pages as they were before the writer's commit, and
    // every other page after it (zeros here: pages the commit reused); the meta read again is the
    // new one. What a reader that crossed a commit sees.
    let opens = 0;
    class CrossedByACommit extends NodeFileSystem {
      override async open(p: string, flags: 'r' | 'r+' | 'wx' | 'w', mode?: number) {
        const handle = await super.open(p, flags, mode);
        if (p !== dataPath || ++opens > 1) return handle;
        let metaReads = 0;
        return Object.assign(Object.create(Object.getPrototypeOf(handle) as object), handle, {
          path: handle.path,
          read: async (buffer: Buffer, offset: number, length: number, position: number) => {
            if (position >= 2 * 4096) {
              buffer.fill(0, offset, offset + length);
              return length;
            }
            if (metaReads++ < 2) return before.copy(buffer, offset, position, position + length);
            return handle.read(buffer, offset, length, position);
          },
          close: () => handle.close(),
          sizeBytes: () => handle.sizeBytes(),
        }) as typeof handle;
      }
    }
    await expect(inspectCheckpointFile(new CrossedByACommit(), checkpointDir(dir))).resolves.toBe(
      'sealed',
    );
    expect(opens, 'checked, its meta read again, checked again').toBe(3);
    // Damage that stays when read again (the meta's transaction unchanged) is damage.
    opens = 0;
    class AlwaysZeros extends NodeFileSystem {
      override async open(p: string, flags: 'r' | 'r+' | 'wx' | 'w', mode?: number) {
        const handle = await super.open(p, flags, mode);
        if (p !== dataPath) return handle;
        opens++;
        return Object.assign(Object.create(Object.getPrototypeOf(handle) as object), handle, {
          path: handle.path,
          read: async (buffer: Buffer, offset: number, length: number, position: number) => {
            if (position < 2 * 4096) return handle.read(buffer, offset, length, position);
            buffer.fill(0, offset, offset + length);
            return length;
          },
          close: () => handle.close(),
          sizeBytes: () => handle.sizeBytes(),
        }) as typeof handle;
      }
    }
    await expect(
      inspectCheckpointFile(new AlwaysZeros(), checkpointDir(dir)),
    ).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
    expect(opens, 'checked, its meta read again: the same transaction').toBe(2);
  });

  it('still finds a file sealed when a crash in an LMDB commit left new pages but no new meta (free pages are not sealed)', async () => {
    const dir = tempDir();
    const history = generateHistory(6, 200, 8, 40);
    const store = await OffsetStore.open(options(dir));
    await applyHistory(store, history);
    await store.close();
    // LMDB writes a commit's pages, then its meta page: a crash in between leaves pages no meta points to.
    appendFileSync(path.join(checkpointDir(dir), 'data.mdb'), Buffer.alloc(2 * 4096, 0x5a));
    expect(await inspectCheckpointFile(fs, checkpointDir(dir))).toBe('sealed');
    const warnings: string[] = [];
    const reopened = await OffsetStore.open(options(dir, warnings));
    expect(warnings).toEqual([]);
    expect(reopened.recoveryReports()[0]!.batchesReplayed).toBe(0);
    expect(await stateOf(reopened)).toEqual(modelOf(history));
    await reopened.close();
  });

  it('restores a checkpoint whose seal write failed (as after a crash between the LMDB commit and the seal), after checking it page by page, and seals it again', async () => {
    const dir = tempDir();
    const history = generateHistory(4, 200, 8, 40);
    const faulty = new FaultyFileSystem();
    const store = await OffsetStore.open(options(dir, [], { fs: faulty }));
    await applyHistory(store, history.slice(0, 100));
    const first = (await store.compact()).buckets[0]!.checkpointLogOffset!;
    await applyHistory(store, history.slice(100));
    const sealedBefore = await readSeal(fs, checkpointDir(dir));
    const newest = (await store.stats()).buckets[0]!.nextLogOffset;
    expect(newest).toBeGreaterThan(first);
    faulty.plan = { failDatasyncAt: faulty.datasyncCount + 1 };
    await expect(store.compact()).rejects.toThrow(/injected fdatasync failure/);
    expect(
      (await store.stats()).buckets[0]!.checkpoint!.logOffset,
      'a checkpoint not sealed and read back is not trusted',
    ).toBe(first);
    // The close writes it again, and its seal fails the same way (the close still closes everything).
    faulty.plan = { failWritesToSuffix: 'data.mdb.seal.tmp' };
    await expect(store.close()).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    faulty.plan = {};
    expect(await readSeal(fs, checkpointDir(dir)), 'the old seal stays').toEqual(sealedBefore);
    expect(await inspectCheckpointFile(fs, checkpointDir(dir))).toBe('checked');

    const warnings: string[] = [];
    const reopened = await OffsetStore.open(options(dir, warnings));
    const report = reopened.recoveryReports()[0]!;
    expect(warnings).toEqual([]);
    expect(report.checkpointLogOffset).toBe(newest);
    expect(report.batchesReplayed).toBe(0);
    expect(await stateOf(reopened)).toEqual(modelOf(history));
    await reopened.close();
    expect(await inspectCheckpointFile(fs, checkpointDir(dir))).toBe('sealed');
  });

  it('treats a missing or damaged seal as no seal: the file is checked page by page, restored, and sealed again', async () => {
    const dir = tempDir();
    const history = generateHistory(5, 200, 8, 40);
    const store = await OffsetStore.open(options(dir));
    await applyHistory(store, history);
    await store.close();
    for (const damage of ['missing', 'damaged'] as const) {
      const sealPath = path.join(checkpointDir(dir), SEAL_FILE);
      if (damage === 'missing') rmSync(sealPath);
      else writeFileSync(sealPath, Buffer.alloc(32, 0xab));
      expect(await inspectCheckpointFile(fs, checkpointDir(dir)), damage).toBe('checked');
      const warnings: string[] = [];
      const reopened = await OffsetStore.open(options(dir, warnings));
      expect(warnings, damage).toEqual([]);
      expect(reopened.recoveryReports()[0]!.batchesReplayed, damage).toBe(0);
      expect(await stateOf(reopened), damage).toEqual(modelOf(history));
      await reopened.close();
      expect(await inspectCheckpointFile(fs, checkpointDir(dir)), damage).toBe('sealed');
    }
  });
});
