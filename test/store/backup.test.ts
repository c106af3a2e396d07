/**
 * Online backup (`store.backup(to)`): a new store directory with everything acknowledged before the
 * call, written while commits go on, that opens like any store; refused targets, a damaged source,
 * a close in the middle and a crash's leftover, each leaving nothing half-built behind.
 */
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  ManualClock,
  NodeFileSystem,
  OffsetStore,
  isOffsetStoreError,
  type CommittedOffset,
  type CompactionRunEvent,
} from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { imageOf, openStore } from './store-fixtures.js';

const GROUPS = Array.from({ length: 12 }, (_, i) => `group-${i}`);

async function fetched(store: OffsetStore, groupId: string): Promise<number[]> {
  const offsets = (await store.fetchOffsets(groupId)) as CommittedOffset[];
  return [...offsets].sort((a, b) => a.bucketId - b.bucketId).map((o) => o.offset);
}

async function fillStore(store: OffsetStore, rounds: number, base = 0): Promise<void> {
  for (let r = 0; r < rounds; r++)
    await Promise.all(
      GROUPS.map((g) =>
        store.commitOffsets(g, [
          { tableId: 1, bucketId: 0, offset: base + r },
          { tableId: 1, bucketId: 1, offset: base + r * 2, metadata: `m${r}`, leaderEpoch: r },
        ]),
      ),
    );
}

describe('store.backup', () => {
  it('copies everything acknowledged before the call into a store that opens with the same content', async () => {
    const dir = tempDir();
    const to = path.join(tempDir(), 'backup');
    const store = await openStore(dir, { segmentBytesMax: 2048 });
    await fillStore(store, 40);
    await store.deleteOffsets(GROUPS[3]!, [{ tableId: 1, bucketId: 1 }]);
    await store.deleteGroup(GROUPS[4]!);
    const before = await imageOf(store);
    const report = await store.backup(to);
    expect(report.dir).toBe(path.resolve(to));
    expect(report.buckets).toBe(4);
    expect(report.segments).toBeGreaterThan(4); // several sealed segments per bucket
    expect(report.bytes).toBeGreaterThan(0);
    // The store goes on after a backup.
    await fillStore(store, 1, 1000);
    await store.close();
    expect(existsSync(`${to}.partial`)).toBe(false);
    expect(readdirSync(to).sort()).toEqual(['buckets', 'store.json']);
    const warnings: string[] = [];
    const copy = await openStore(to, { segmentBytesMax: 2048, onWarning: (w) => warnings.push(w) });
    try {
      expect(await imageOf(copy)).toEqual(before);
      expect(warnings).toEqual([]);
      // The backup is a store of its own: it takes commits.
      await copy.commitOffsets(GROUPS[0]!, [{ tableId: 1, bucketId: 0, offset: 5000 }]);
    } finally {
      await copy.close();
    }
  });

  it('is a consistent cut while commits go on: each group has a value it committed, at least what was acknowledged', async () => {
    const dir = tempDir();
    const to = path.join(tempDir(), 'backup');
    const store = await OffsetStore.open({ dir, bucketCount: 4, segmentBytesMax: 4096 });
    await fillStore(store, 5);
    let stop = false;
    let next = 100;
    const acknowledged = new Map<string, number>();
    const committers = GROUPS.map(async (g) => {
      while (!stop) {
        const offset = next++;
        await store.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset }]);
        acknowledged.set(g, offset);
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const floor = new Map(acknowledged);
    const report = await store.backup(to);
    stop = true;
    await Promise.all(committers);
    const after = new Map(acknowledged);
    await store.close();
    const copy = await OffsetStore.open({ dir: to });
    try {
      for (const g of GROUPS) {
        const [offset] = await fetched(copy, g);
        expect(offset).toBeGreaterThanOrEqual(floor.get(g) ?? 0);
        expect(offset).toBeLessThanOrEqual(after.get(g)!);
      }
      expect((await copy.stats()).buckets.map((b) => b.nextLogOffset)).toEqual(report.logEnds);
    } finally {
      await copy.close();
    }
  });

  it("keeps compaction's schedule across backups and lets a compaction in flight finish", async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const runs: CompactionRunEvent[] = [];
    let onStart: () => void = () => {};
    const store = await openStore(dir, {
      clock,
      compaction: {
        strategy: 'log-cleaner',
        intervalMs: 1000,
        minDirtyRatio: 0,
        onRun: (event) => {
          runs.push(event);
          if (event.kind === 'started') onStart();
        },
      },
    });
    try {
      await fillStore(store, 60);
      // Backups more often than the interval: the interval still counts from the open.
      clock.advance(600);
      await store.backup(path.join(tempDir(), 'first'));
      clock.advance(600);
      const waiting = { timeout: 5000, interval: 10 };
      // Past the timeout, the assertion below says what was missing.
      await vi.waitUntil(() => runs.some((e) => e.kind === 'finished'), waiting).catch(() => {});
      expect(
        runs.filter((e) => e.kind === 'started').length,
        'a background run after 1200 ms',
      ).toBeGreaterThan(0);
      await vi.waitUntil(() => runs.length % 2 === 0, waiting);
      // A backup asked for while a compaction runs waits for it instead of abandoning it.
      runs.length = 0;
      await fillStore(store, 60, 100);
      const started = new Promise<void>((resolve) => (onStart = resolve));
      const compacting = store.compact();
      await started;
      const backedUp = store.backup(path.join(tempDir(), 'second'));
      await compacting;
      await backedUp;
      expect(runs.filter((e) => e.kind === 'failed')).toEqual([]);
      expect(runs.filter((e) => e.kind === 'started')).toHaveLength(4);
    } finally {
      await store.close();
    }
  });

  it('makes every file and folder of the backup durable before it takes its name: each file fdatasynced, each folder synced after its last change; its store.json ends are exact', async () => {
    const dir = tempDir();
    const to = path.join(tempDir(), 'backup');
    const partial = `${to}.partial`;
    const ops: string[] = [];
    const inBackup = (p: string) => p === partial || p.startsWith(partial + path.sep);
    const fs = new (class extends FaultyFileSystem {
      override async mkdir(p: string) {
        await super.mkdir(p);
        if (inBackup(p)) ops.push(`change ${path.dirname(p)}`);
      }
      override async rename(from: string, toPath: string) {
        await super.rename(from, toPath);
        if (from === partial) ops.push('named');
        else if (inBackup(toPath)) ops.push(`change ${path.dirname(toPath)}`);
      }
      override async unlink(p: string) {
        await super.unlink(p);
        if (inBackup(p)) ops.push(`change ${path.dirname(p)}`);
      }
      override async syncDir(d: string) {
        await super.syncDir(d);
        if (inBackup(d)) ops.push(`syncDir ${d}`);
      }
    })();
    fs.hookHandles((filePath, handle, flags) => {
      if (!inBackup(filePath) || flags === 'r') return {};
      ops.push(`write ${filePath}`);
      return {
        datasync: async () => {
          await handle.datasync();
          ops.push(`datasync ${filePath}`);
        },
      };
    });
    const store = await openStore(dir, {
      fs,
      segmentBytesMax: 1024,
      compaction: { strategy: 'checkpoint' },
    });
    await fillStore(store, 30);
    await store.compact();
    await fillStore(store, 3, 500);
    writeFileSync(path.join(dir, 'kafka-topics.json'), '{"topics":[]}\n');
    await store.backup(to);
    await store.close();
    const named = ops.indexOf('named');
    expect(named, ops.join('\n')).toBeGreaterThan(0);
    const before = ops.slice(0, named);
    const written = before.filter((op) => op.startsWith('write ')).map((op) => op.slice(6));
    expect(written.filter((f) => f.endsWith('.log')).length, 'segments copied').toBeGreaterThan(4);
    for (const file of written)
      expect(before.slice(before.indexOf(`write ${file}`)), file).toContain(`datasync ${file}`);
    // A folder's entries (files created or renamed in, folders made, the marker removed) are
    // durable once it is synced after its last change.
    const folders = new Set([
      ...before.filter((op) => op.startsWith('change ')).map((op) => op.slice(7)),
      ...written.map((file) => path.dirname(file)),
    ]);
    folders.delete(path.dirname(partial)); // its parent: synced after the rename
    for (const folder of folders) {
      const lastChange = Math.max(
        before.lastIndexOf(`change ${folder}`),
        ...written
          .filter((file) => path.dirname(file) === folder)
          .map((file) => before.indexOf(`write ${file}`)),
      );
      expect(before.slice(lastChange), folder).toContain(`syncDir ${folder}`);
    }
    const manifest = JSON.parse(readFileSync(path.join(to, 'store.json'), 'utf8')) as {
      buckets: { endExact: boolean }[];
    };
    expect(manifest.buckets.map((b) => b.endExact)).toEqual([true, true, true, true]);
  });

  it('copies checkpoints, the strategy state and the files beside the store', async () => {
    const dir = tempDir();
    const to = path.join(tempDir(), 'backup');
    const store = await openStore(dir, {
      segmentBytesMax: 1024,
      compaction: { strategy: 'checkpoint' },
    });
    await fillStore(store, 30);
    await store.compact(); // a checkpoint per bucket; the segments below it are deleted
    await fillStore(store, 3, 500);
    writeFileSync(path.join(dir, 'kafka-topics.json'), '{"topics":[]}\n');
    mkdirSync(path.join(dir, 'some-folder'));
    // Stray links are not copied: one that leads nowhere, and one that loops.
    symlinkSync(path.join(dir, 'nowhere'), path.join(dir, 'dangling'));
    symlinkSync(path.join(dir, 'loop'), path.join(dir, 'loop'));
    const before = await imageOf(store);
    await store.backup(to);
    await store.close();
    expect(readdirSync(to).sort()).toEqual(['buckets', 'kafka-topics.json', 'store.json']);
    expect(readFileSync(path.join(to, 'kafka-topics.json'), 'utf8')).toBe('{"topics":[]}\n');
    expect(statSync(path.join(to, 'kafka-topics.json')).mode & 0o777).toBe(0o600);
    const checkpointFiles = readdirSync(path.join(to, 'buckets', '000', 'checkpoint')).sort();
    expect(checkpointFiles).toEqual(['data.mdb', 'data.mdb.seal']);
    const copy = await openStore(to, { compaction: { strategy: 'checkpoint' } });
    try {
      expect(await imageOf(copy)).toEqual(before);
      // Restored from the checkpoints, replaying only the tail after them.
      expect(copy.recoveryReports().every((r) => r?.checkpointLogOffset !== undefined)).toBe(true);
    } finally {
      await copy.close();
    }
  });

  it('refuses a target that exists, holds the store or lies inside it, and a closed store', async () => {
    const dir = tempDir();
    const other = tempDir();
    const store = await openStore(dir);
    await fillStore(store, 1);
    const refused = async (to: unknown, code: string, pattern: RegExp) => {
      const error = await store.backup(to as string).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isOffsetStoreError(error) && error.code).toBe(code);
      expect((error as Error).message).toMatch(pattern);
    };
    await refused(other, 'INVALID_REQUEST', /exists/);
    await refused(
      path.join(dir, 'inside'),
      'INVALID_REQUEST',
      /one directory would hold the other/,
    );
    await refused(dir, 'INVALID_REQUEST', /one directory would hold the other/);
    await refused(path.dirname(dir), 'INVALID_REQUEST', /one directory would hold the other/);
    await refused('', 'INVALID_REQUEST', /non-empty string/);
    await refused(42, 'INVALID_REQUEST', /not number/);
    expect(readdirSync(other)).toEqual([]);
    // Missing parents are created, like mkdir -p.
    await store.backup(path.join(other, 'missing', 'backup'));
    expect(readdirSync(path.join(other, 'missing'))).toEqual(['backup']);
    await store.close();
    await refused(path.join(other, 'late'), 'STORE_CLOSED', /closed/);
    expect(readdirSync(other)).toEqual(['missing']);
  });

  it('reports damage at rest in a segment instead of copying it, and leaves nothing behind', async () => {
    const dir = tempDir();
    const parent = tempDir();
    const store = await openStore(dir, { segmentBytesMax: 1024 });
    await fillStore(store, 30);
    const bucketDir = path.join(
      dir,
      'buckets',
      String(store.bucketFor(GROUPS[0]!)).padStart(3, '0'),
    );
    const sealed = readdirSync(bucketDir)
      .filter((f) => f.endsWith('.log'))
      .sort()[0]!;
    const file = path.join(bucketDir, sealed);
    const bytes = readFileSync(file);
    bytes[60]! ^= 0x40;
    writeFileSync(file, bytes);
    const error = await store.backup(path.join(parent, 'backup')).catch((e: unknown) => e);
    expect(isOffsetStoreError(error) && error.code).toBe('CORRUPT_MESSAGE');
    expect((error as Error).message).toContain(file);
    expect(readdirSync(parent)).toEqual([]);
    // Nor the parents it created for its path; a parent that existed, or that something else was
    // put into meanwhile, stays.
    await expect(store.backup(path.join(parent, 'a', 'b', 'c', 'backup'))).rejects.toThrow(file);
    expect(readdirSync(parent)).toEqual([]);
    mkdirSync(path.join(parent, 'kept', 'x'), { recursive: true });
    await expect(store.backup(path.join(parent, 'kept', 'x', 'y', 'backup'))).rejects.toThrow(file);
    expect(readdirSync(path.join(parent, 'kept'))).toEqual(['x']);
    expect(readdirSync(path.join(parent, 'kept', 'x'))).toEqual([]);
    // The store itself is untouched and goes on.
    await store.commitOffsets(GROUPS[0]!, [{ tableId: 1, bucketId: 0, offset: 7 }]);
    await store.close();
  });

  it('refuses a store with an offsets-bucket that did not recover, and a hosting store', async () => {
    const dir = tempDir();
    const parent = tempDir();
    const first = await openStore(dir, { segmentBytesMax: 1024 });
    await fillStore(first, 30);
    const damagedBucket = first.bucketFor(GROUPS[0]!);
    await first.close();
    const bucketDir = path.join(dir, 'buckets', String(damagedBucket).padStart(3, '0'));
    const file = path.join(
      bucketDir,
      readdirSync(bucketDir)
        .filter((f) => f.endsWith('.log'))
        .sort()[0]!,
    );
    const bytes = readFileSync(file);
    bytes[60]! ^= 0x40;
    writeFileSync(file, bytes);
    const store = await openStore(dir, { segmentBytesMax: 1024, awaitRecovery: false });
    await store.ready().catch(() => {});
    const error = await store.backup(path.join(parent, 'backup')).catch((e: unknown) => e);
    expect(isOffsetStoreError(error) && error.code).toBe('CORRUPT_MESSAGE');
    expect((error as Error).message).toContain(`offsets-bucket ${damagedBucket} did not recover`);
    expect((error as Error).message).toContain(file);
    expect(readdirSync(parent)).toEqual([]);
    await store.close();
    const hosted = await OffsetStore.openHosted({ dir: tempDir(), bucketCount: 2 });
    const refused = await hosted.backup(path.join(parent, 'hosted')).catch((e: unknown) => e);
    expect(isOffsetStoreError(refused) && refused.code).toBe('INVALID_REQUEST');
    await hosted.close();
    expect(readdirSync(parent)).toEqual([]);
  });

  it('a failed write of the backup (a full disk) is LOG_STORAGE_ERROR naming the file; nothing is left, the store goes on', async () => {
    const dir = tempDir();
    const parent = tempDir();
    const fs = new FaultyFileSystem();
    const store = await openStore(dir, { segmentBytesMax: 1024, fs });
    await fillStore(store, 20);
    const before = await imageOf(store);
    fs.plan = { failWritesToSuffix: '.log', fileBytesMax: 100 };
    const writes = fs.writevCount;
    const error = await store.backup(path.join(parent, 'backup')).catch((e: unknown) => e);
    expect(fs.writevCount).toBeGreaterThan(writes); // it did write before failing
    expect(isOffsetStoreError(error) && error.code).toBe('LOG_STORAGE_ERROR');
    expect((error as Error).message).toContain(path.join(parent, 'backup.partial'));
    expect(readdirSync(parent)).toEqual([]);
    fs.plan = {};
    await fillStore(store, 1, 900);
    await store.close();
    const reopened = await openStore(dir, { segmentBytesMax: 1024 });
    const after = await imageOf(reopened);
    await reopened.close();
    expect(after.liveOffsets).toBe(before.liveOffsets);
  });

  it('stops with STORE_CLOSED when the store closes during the backup, leaving nothing behind', async () => {
    const dir = tempDir();
    const parent = tempDir();
    const store = await openStore(dir, { segmentBytesMax: 1024 });
    await fillStore(store, 60);
    const backup = store.backup(path.join(parent, 'backup')).catch((e: unknown) => e);
    await new Promise((resolve) => setImmediate(resolve));
    await store.close();
    const error = await backup;
    expect(isOffsetStoreError(error) && error.code).toBe('STORE_CLOSED');
    expect(readdirSync(parent)).toEqual([]);
  });

  it("removes what a crashed backup left in '<to>.partial', and refuses a '<to>.partial' it did not leave", async () => {
    const dir = tempDir();
    const parent = tempDir();
    const to = path.join(parent, 'backup');
    const store = await openStore(dir);
    await fillStore(store, 3);
    mkdirSync(`${to}.partial/buckets`, { recursive: true });
    writeFileSync(`${to}.partial/BACKUP-IN-PROGRESS`, '');
    writeFileSync(`${to}.partial/buckets/half-copied.log`, 'x');
    await store.backup(to);
    expect(readdirSync(parent)).toEqual(['backup']);
    mkdirSync(`${to}2.partial`);
    writeFileSync(`${to}2.partial/notes.txt`, 'mine');
    const error = await store.backup(`${to}2`).catch((e: unknown) => e);
    expect(isOffsetStoreError(error) && error.code).toBe('INVALID_REQUEST');
    expect((error as Error).message).toMatch(/without a BACKUP-IN-PROGRESS marker/);
    expect(readFileSync(`${to}2.partial/notes.txt`, 'utf8')).toBe('mine');
    await store.close();
  });

  it('refuses targets the file system cannot hold, or that reach into the store through a link, with INVALID_REQUEST and at once', async () => {
    const dir = tempDir();
    const other = tempDir();
    const store = await openStore(dir);
    await fillStore(store, 2);
    const refused = async (to: string, pattern: RegExp) => {
      const error = await store.backup(to).catch((e: unknown) => e);
      expect(isOffsetStoreError(error) && error.code, String(error)).toBe('INVALID_REQUEST');
      expect((error as Error).message).toMatch(pattern);
    };
    symlinkSync(dir, path.join(other, 'link'));
    await refused(path.join(other, 'link', 'buckets', 'x'), /once links are resolved/);
    // A link that leads nowhere is a name taken: refused before anything is copied.
    symlinkSync(path.join(other, 'nowhere'), path.join(other, 'dangling'));
    await refused(path.join(other, 'dangling'), /dangling: it exists/);
    // The backup is built in `<to>.partial`: that must not be the store either.
    symlinkSync(dir, path.join(other, 'b.partial'));
    await refused(path.join(other, 'b'), /the backup is built in .*b\.partial, and once links/);
    writeFileSync(path.join(other, 'a-file'), 'x');
    await refused(path.join(other, 'a-file', 'backup'), /cannot back up to .*a-file\/backup: /);
    await refused(path.join(other, 'n'.repeat(300)), /cannot back up to /);
    // Under /proc a recursive mkdir never returned.
    await refused('/proc/1/offset-store-backup', /cannot back up to /);
    expect(readdirSync(other).sort()).toEqual(['a-file', 'b.partial', 'dangling', 'link']);
    expect(readdirSync(dir).sort()).toEqual(
      ['LOCK', 'buckets', 'journal', 'store.json'].filter((f) => existsSync(path.join(dir, f))),
    );
    await store.close();
    const reopened = await openStore(dir);
    await reopened.close();
  });

  it('two backups to one path at once: one is written and opens, the other is refused', async () => {
    const parent = tempDir();
    const to = path.join(parent, 'backup');
    const a = await openStore(tempDir(), { segmentBytesMax: 1024 });
    const b = await openStore(tempDir(), { segmentBytesMax: 1024 });
    await fillStore(a, 30);
    await fillStore(b, 30, 5000);
    const outcomes = await Promise.allSettled([a.backup(to), b.backup(to)]);
    const won = outcomes.findIndex((o) => o.status === 'fulfilled');
    const lost = outcomes[1 - won] as PromiseRejectedResult;
    expect(won).toBeGreaterThanOrEqual(0);
    expect(isOffsetStoreError(lost.reason) && lost.reason.code).toBe('INVALID_REQUEST');
    expect((lost.reason as Error).message).toMatch(/another backup to it is running|it exists/);
    const expected = await imageOf(won === 0 ? a : b);
    await Promise.all([a.close(), b.close()]);
    expect(readdirSync(parent)).toEqual(['backup']);
    const copy = await openStore(to);
    expect(await imageOf(copy)).toEqual(expected);
    await copy.close();
  });

  it('reports a damaged checkpoint environment instead of copying it', async () => {
    const dir = tempDir();
    const parent = tempDir();
    const store = await openStore(dir, {
      segmentBytesMax: 1024,
      compaction: { strategy: 'checkpoint' },
    });
    await fillStore(store, 30);
    await store.compact();
    const data = path.join(
      dir,
      'buckets',
      String(store.bucketFor(GROUPS[0]!)).padStart(3, '0'),
      'checkpoint',
      'data.mdb',
    );
    const bytes = readFileSync(data);
    bytes[bytes.length - 100]! ^= 0xff;
    bytes[5000 % bytes.length]! ^= 0xff;
    writeFileSync(data, bytes);
    const error = await store.backup(path.join(parent, 'backup')).catch((e: unknown) => e);
    expect(isOffsetStoreError(error) && error.code, String(error)).toBe('CORRUPT_MESSAGE');
    expect((error as Error).message).toContain(path.dirname(data));
    expect(readdirSync(parent)).toEqual([]);
    await store.close().catch(() => {});
  });

  it('takes a backup back when it cannot be made durable after its rename, leaving nothing', async () => {
    const dir = tempDir();
    const parent = tempDir();
    const to = path.join(parent, 'backup');
    class FailingParentSync extends NodeFileSystem {
      renamed = false;
      failed = 0;
      override async rename(from: string, toPath: string): Promise<void> {
        await super.rename(from, toPath);
        if (toPath === to) this.renamed = true;
      }
      override async syncDir(p: string): Promise<void> {
        if (this.renamed && p === parent && !this.failed++)
          throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
        return super.syncDir(p);
      }
    }
    const fs = new FailingParentSync();
    const store = await openStore(dir, { fs });
    await fillStore(store, 3);
    const error = await store.backup(to).catch((e: unknown) => e);
    expect(isOffsetStoreError(error) && error.code, String(error)).toBe('LOG_STORAGE_ERROR');
    expect(readdirSync(parent)).toEqual([]);
    fs.renamed = false;
    await store.backup(to); // and a retry is not refused as existing
    await store.close();
  });

  it("removes an empty '<to>.partial' (a crash before its marker)", async () => {
    const parent = tempDir();
    const to = path.join(parent, 'backup');
    const store = await openStore(tempDir());
    mkdirSync(`${to}.partial`);
    await store.backup(to);
    expect(readdirSync(parent)).toEqual(['backup']);
    await store.close();
  });
});
