/**
 * The seal of a checkpoint environment. Every file here is sound for LMDB to map (the damage cases,
 * which could crash the process, run in child processes in checkpoint-damage.test.ts): a checkpoint
 * write seals `data.mdb`; a file sealed as it is opens once its pages pass their checks and their
 * checksum matches the seal, even after a crash left a commit's pages (but not its meta) behind; a
 * file not sealed as it is (the seal write failed, the seal is missing or damaged) is checked page by
 * page, restored, and sealed again.
 */
import { appendFileSync, rmSync, writeFileSync } from 'node:fs';
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
