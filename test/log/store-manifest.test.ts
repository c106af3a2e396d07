/**
 * The store manifest's updates: group-committed (updates asked for while one is written share the
 * next write), applied in call order, each rejected with the write that carried it, a throwing
 * change rejected alone.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManifestFile } from '../../src/log/index.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { tempDir } from '../support/temp-dir.js';

async function openManifest(bucketCount: number) {
  const dir = tempDir();
  const fs = new FaultyFileSystem();
  const manifest = await ManifestFile.openOrCreate(fs, dir, {
    bucketCount,
    compactionStrategy: 'log-cleaner',
    nowMs: 0,
  });
  const onDisk = () => JSON.parse(readFileSync(path.join(dir, 'store.json'), 'utf8'));
  return { dir, manifest, fs, onDisk };
}

describe('store manifest updates', () => {
  it('writes updates asked for together once, in call order, each awaited until written', async () => {
    const { manifest, fs, onDisk } = await openManifest(256);
    const syncsBefore = fs.datasyncCount;
    const updates = Array.from({ length: 256 }, (_, i) =>
      manifest.update((m) => {
        m.buckets[i]!.logEnd = i + 1;
        m.buckets[0]!.logStart = i; // the last update asked for wins
      }),
    );
    await Promise.all(updates);
    // One write for the lot (the first update waits a turn for the others of its turn).
    expect(fs.datasyncCount - syncsBefore).toBe(1);
    expect(onDisk().buckets.map((b: { logEnd: number }) => b.logEnd)).toEqual(
      Array.from({ length: 256 }, (_, i) => i + 1),
    );
    expect(onDisk().buckets[0].logStart).toBe(255);
    expect(manifest.manifest.buckets[255]!.logEnd).toBe(256);

    // Updates asked for while a write is under way go together into the next.
    const first = manifest.update((m) => void (m.buckets[0]!.logEnd = 1000));
    await new Promise((resolve) => setImmediate(resolve));
    const later = Array.from({ length: 50 }, (_, i) =>
      manifest.update((m) => void (m.buckets[i + 1]!.logEnd = 1000)),
    );
    await Promise.all([first, ...later]);
    expect(fs.datasyncCount - syncsBefore).toBeLessThanOrEqual(3);
    expect(
      onDisk()
        .buckets.slice(0, 51)
        .every((b: { logEnd: number }) => b.logEnd === 1000),
    ).toBe(true);
  });

  it('rejects a throwing change alone, and every update of a write that fails, leaving the manifest as it was', async () => {
    const { manifest, fs, onDisk } = await openManifest(4);
    const kept = manifest.update((m) => void (m.buckets[1]!.logEnd = 7));
    const thrown = manifest.update((m) => {
      m.buckets[2]!.logEnd = 99; // half done, then fails: none of it is written
      throw new Error('a change that fails');
    });
    const alsoKept = manifest.update((m) => void (m.buckets[3]!.logEnd = 8));
    await expect(thrown).rejects.toThrow('a change that fails');
    await Promise.all([kept, alsoKept]);
    expect(onDisk().buckets.map((b: { logEnd: number }) => b.logEnd)).toEqual([0, 7, 0, 8]);

    fs.plan = { failDatasyncAt: fs.datasyncCount + 1 };
    const lost = [
      manifest.update((m) => void (m.buckets[0]!.logEnd = 5)),
      manifest.update((m) => void (m.buckets[2]!.logEnd = 5)),
    ];
    for (const update of lost) await expect(update).rejects.toThrow(/EIO/);
    expect(manifest.manifest.buckets.map((b) => b.logEnd)).toEqual([0, 7, 0, 8]);
    expect(onDisk().buckets.map((b: { logEnd: number }) => b.logEnd)).toEqual([0, 7, 0, 8]);

    // The next update writes (the failed ones are not carried along).
    fs.plan = {};
    await manifest.update((m) => void (m.buckets[2]!.logEnd = 6));
    expect(onDisk().buckets.map((b: { logEnd: number }) => b.logEnd)).toEqual([0, 7, 6, 8]);
  });

  it('syncs the store folder when it opens an existing manifest, before anything relies on it: the last process may have renamed it into place and died before its folder sync', async () => {
    const { dir } = await openManifest(2);
    const synced: string[] = [];
    const fs = new (class extends FaultyFileSystem {
      override async syncDir(d: string) {
        await super.syncDir(d);
        synced.push(d);
      }
    })();
    await ManifestFile.openOrCreate(fs, dir, {
      bucketCount: 2,
      compactionStrategy: 'log-cleaner',
      nowMs: 0,
    });
    expect(synced).toContain(dir);
  });
});
