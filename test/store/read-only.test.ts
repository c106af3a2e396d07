/**
 * A store opened to read only (`readOnly: true`): it serves what a real open would serve, also of a
 * store another process has open and writes (beside a forked writer: read-only-live-writer.test.ts,
 * in the slow tier), and it writes nothing: not one byte, file or folder of
 * the store changes, even where recovery repairs (a torn tail, a commit journal to replay); every
 * call that writes is refused with STORE_READ_ONLY.
 */
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { OffsetStore, isOffsetStoreError, startKafkaServer } from '../../src/index.js';
import { NodeFileSystem, holdDirectoryLock, type OverlayFileSystem } from '../../src/io/index.js';
import { thisProcessHasBirthTime } from '../../src/io/file-identity.js';
import { dirFingerprint } from '../support/dir-fingerprint.js';
import { tempDir } from '../support/temp-dir.js';
import { copyStoreDir } from './store-fixtures.js';

/**
 * The store's files, but LMDB's `lock.mdb`: its reader table, where every reader of a checkpoint
 * environment registers while it reads (so that a live writer does not reuse the pages it reads).
 */
function storeFiles(dir: string): string[] {
  return dirFingerprint(dir).filter((entry) => !entry.includes(`${path.sep}lock.mdb `));
}

async function commitSome(dir: string, options: { strategy?: 'checkpoint' } = {}) {
  const store = await OffsetStore.open({
    dir,
    bucketCount: 4,
    segmentBytesMax: 1024,
    compaction: { strategy: options.strategy ?? 'log-cleaner', background: false },
  });
  for (let i = 0; i < 40; i++)
    await store.commitOffsets(`g${i % 8}`, [
      { tableId: 1, bucketId: 0, offset: i },
      { tableId: 1, bucketId: 1, offset: i * 10, metadata: `m${i}` },
    ]);
  await store.deleteGroup('g7');
  return store;
}

/** Every group's offsets, as a plain comparable object. */
async function everything(store: OffsetStore) {
  const groups = (await store.listGroups()).map((g) => g.groupId).sort();
  const out: Record<string, unknown> = {};
  for (const g of groups) out[g] = await store.fetchOffsets(g);
  return out;
}

describe('a store opened to read only', () => {
  it('serves what a real open serves, refuses every write with STORE_READ_ONLY, and writes nothing', async () => {
    const dir = tempDir();
    const writer = await commitSome(dir, { strategy: 'checkpoint' });
    await writer.compact(); // a checkpoint to restore from
    const expected = await everything(writer);
    await writer.close();
    const before = storeFiles(dir);

    const reader = await OffsetStore.open({ dir, readOnly: true });
    expect(await everything(reader)).toEqual(expected);
    expect(expected).not.toHaveProperty('g7');
    expect((await reader.describeGroup('g1')).offsets).toHaveLength(2);
    expect((await reader.stats()).compactionStrategy).toBe('checkpoint');
    const refused: [string, () => unknown][] = [
      ['commitOffsets', () => reader.commitOffsets('g1', [{ tableId: 1, bucketId: 0, offset: 1 }])],
      ['resetOffsets', () => reader.resetOffsets('g1', [{ tableId: 1, bucketId: 0, offset: 1 }])],
      ['deleteOffsets', () => reader.deleteOffsets('g1', [{ tableId: 1, bucketId: 0 }])],
      ['deleteGroup', () => reader.deleteGroup('g1')],
      ['removeMembers', () => reader.removeMembers('g1', { all: true })],
      ['heartbeat', () => reader.heartbeat('g1', { memberId: 'm', memberEpoch: 0 })],
      ['joinGroup', () => reader.joinGroup('g1', { subscribedTableIds: [1] })],
      ['scanner', () => reader.scanner('g1')],
      ['setTableLayout', () => reader.setTableLayout(1, { bucketCount: 2 })],
      ['compact', () => reader.compact()],
      ['convertCompaction', () => reader.convertCompaction('log-cleaner')],
      ['backup', () => reader.backup(path.join(tempDir(), 'copy'))],
      [
        'classic joinGroup',
        () =>
          reader.classic.joinGroup('c', {
            memberId: '',
            protocolType: 'consumer',
            protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
            sessionTimeoutMs: 10_000,
            rebalanceTimeoutMs: 10_000,
          }),
      ],
    ];
    for (const [name, call] of refused) {
      const outcome = await (async () => call())().then(
        () => 'done',
        (error: unknown) => error,
      );
      expect(
        isOffsetStoreError(outcome, 'STORE_READ_ONLY') && !outcome.retriable,
        `${name}: ${String(outcome)}`,
      ).toBe(true);
    }
    await reader.close();
    expect(storeFiles(dir)).toEqual(before);
  });

  it('recovers a crashed store in memory: a torn tail and the commit journal stay on the disk as they were', async () => {
    const dir = tempDir();
    const writer = await commitSome(dir);
    // Concurrent commits of several buckets: journaled rounds. The crash image is taken before close.
    await Promise.all(
      ['g0', 'g1', 'g2', 'g3'].map((g, i) =>
        writer.commitOffsets(g, [{ tableId: 2, bucketId: 0, offset: 1000 + i }]),
      ),
    );
    const image = tempDir();
    copyStoreDir(dir, image);
    await writer.close();
    const bucket0 = path.join(image, 'buckets', '000');
    const active = readdirSync(bucket0)
      .filter((f) => f.endsWith('.log'))
      .sort()
      .at(-1)!;
    appendFileSync(path.join(bucket0, active), Buffer.from([1, 2, 3, 4, 5, 6, 7])); // a torn write
    expect(readdirSync(path.join(image, 'journal')).length).toBeGreaterThan(0);
    const before = storeFiles(image);

    const warnings: string[] = [];
    const reader = await OffsetStore.open({
      dir: image,
      readOnly: true,
      onWarning: (m) => warnings.push(m),
    });
    const seen = await everything(reader);
    await reader.close();
    // Said as it is: nothing was cut (the files are as they were), and bytes a live writer is
    // appending may be acknowledged a moment later.
    expect(warnings.filter((w) => /torn write/.test(w))).toEqual([
      expect.stringMatching(
        /^offsets-bucket 0: torn write at the end of .*: the \d+ bytes from there are not read \(opened to read only: nothing is cut; in a store a live process writes, an append in progress reads so\)/,
      ),
    ]);
    expect(storeFiles(image)).toEqual(before);

    const real = await OffsetStore.open({
      dir: image,
      compaction: { background: false },
      onWarning: (m) => warnings.push(m),
    });
    expect(seen).toEqual(await everything(real));
    expect(
      await real.fetchOffsets('g3', [{ tableId: 2, bucketId: 0 }]).then((r) => r[0]?.offset),
    ).toBe(1003);
    await real.close();
  });

  it('keeps in memory only what recovery changes, not the unsynced tail it would make durable', async () => {
    const dir = tempDir();
    const writer = await OffsetStore.open({
      dir,
      durability: 'os',
      bucketCount: 4,
      compaction: { background: false },
    });
    for (let i = 0; i < 2000; i++)
      await writer.commitOffsets(`g${i % 50}`, [
        { tableId: 1, bucketId: 0, offset: i, metadata: 'm'.repeat(200) },
      ]);
    // Everything since the open is in the page cache only, as a crash of the writer leaves it.
    const image = tempDir();
    copyStoreDir(dir, image);
    await writer.close();
    const reader = await OffsetStore.open({ dir: image, readOnly: true, onWarning: () => {} });
    expect((await reader.fetchOffsets('g49', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(1999);
    expect((reader.fileSystem as OverlayFileSystem).heldBytes).toBeLessThan(64 * 1024);
    await reader.close();
  });

  it('a careless open (a bucketCount or strategy the store contradicts) fails cleanly, warning nothing', async () => {
    const dir = tempDir();
    await (await commitSome(dir)).close();
    const warnings: string[] = [];
    const onWarning = (m: string) => warnings.push(m);
    await expect(
      OffsetStore.open({ dir, readOnly: true, bucketCount: 8, onWarning }),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    await expect(
      OffsetStore.open({ dir, readOnly: true, compaction: { strategy: 'checkpoint' }, onWarning }),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    expect(warnings).toEqual([]);
  });

  it('refuses a folder without a store with INVALID_CONFIG, creating nothing', async () => {
    const dir = path.join(tempDir(), 'nothing-here');
    await expect(OffsetStore.open({ dir, readOnly: true })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('holds no store'),
    });
    expect(existsSync(dir)).toBe(false);
  });

  it('never serves a mix of two states: a read crossed by a compaction swap is read again', async () => {
    // Segment A holds a value of `victim`, B the tombstone that deletes it. Compacted (deletes kept
    // 0 ms), A' lacks the value and B' the tombstone, under the same two names. A reader that read
    // A before the swap and B' after it would serve the deleted offset again.
    const before = tempDir();
    const options = {
      dir: before,
      bucketCount: 1,
      segmentBytesMax: 1024,
      compaction: {
        strategy: 'log-cleaner' as const,
        background: false,
        deleteRetentionMs: 0,
        minDirtyRatio: 0,
      },
    };
    const writer = await OffsetStore.open(options);
    await writer.commitOffsets('victim', [{ tableId: 1, bucketId: 0, offset: 1204 }]);
    const bucketDir = path.join(before, 'buckets', '000');
    const segments = () => readdirSync(bucketDir).filter((n) => n.endsWith('.log'));
    // Batches of ~400 bytes: B's first is too large for the room the value leaves in A', so B'
    // starts where B does, under its name.
    const metadata = 'm'.repeat(300);
    for (let i = 0; segments().length < 2; i++)
      await writer.commitOffsets(`other${i}`, [{ tableId: 1, bucketId: 0, offset: i, metadata }]);
    await writer.deleteGroup('victim');
    for (let i = 0; segments().length < 3; i++)
      await writer.commitOffsets(`later${i}`, [{ tableId: 1, bucketId: 0, offset: i, metadata }]);
    await writer.close();
    const [a, b] = segments().sort();
    const after = tempDir();
    copyStoreDir(before, after);
    const compacted = await OffsetStore.open({ ...options, dir: after });
    await compacted.compact();
    await compacted.close();
    const afterBucket = path.join(after, 'buckets', '000');
    // The swap this test relies on: the same two names, neither the value nor the tombstone.
    expect(readdirSync(afterBucket).filter((n) => n.endsWith('.log'))).toContain(b);
    expect(readFileSync(path.join(afterBucket, a!))).not.toEqual(
      readFileSync(path.join(bucketDir, a!)),
    );

    /**
     * A copy of the store read through the real file system, where the "writer" acts as the reader
     * opens B: it swaps A' and B' in (`times` over, each a write and a rename over the name; a file
     * system may then give a name back the inode it had when first read), and rewrites store.json.
     */
    async function readWhile(what: { swapTimes: number; rewriteManifest: boolean }) {
      const dir = tempDir();
      copyStoreDir(before, dir);
      const bucket = path.join(dir, 'buckets', '000');
      let acted = false;
      let opensOfA = 0;
      class ChangingWhileRead extends NodeFileSystem {
        override async open(p: string, flags: 'r' | 'r+' | 'wx' | 'w', mode?: number) {
          if (p === path.join(bucket, a!)) opensOfA++;
          if (!acted && p === path.join(bucket, b!)) {
            acted = true;
            for (const name of [a!, b!]) {
              const first = statSync(path.join(bucket, name)).ino;
              for (let i = 0; i < what.swapTimes; i++) {
                copyFileSync(path.join(afterBucket, name), path.join(bucket, `${name}.cleaned`));
                renameSync(path.join(bucket, `${name}.cleaned`), path.join(bucket, name));
                if (i > 0 && statSync(path.join(bucket, name)).ino === first) break;
              }
            }
            if (what.rewriteManifest) {
              const manifest = path.join(dir, 'store.json');
              copyFileSync(manifest, `${manifest}.tmp`);
              renameSync(`${manifest}.tmp`, manifest);
            }
          }
          return super.open(p, flags, mode);
        }
      }
      const reader = await OffsetStore.open({ dir, readOnly: true, fs: new ChangingWhileRead() });
      const victim = await reader.fetchOffsets('victim');
      const listed = (await reader.listGroups()).map((g) => g.groupId);
      await reader.close();
      return { acted, victim, listed, opensOfA };
    }
    // Given back its first inode, a name replaced twice is told apart by its birth time alone:
    // where the system reports none (src/io/file-identity.ts), that case goes unseen.
    for (const swapTimes of thisProcessHasBirthTime() ? [1, 50] : [1]) {
      const read = await readWhile({ swapTimes, rewriteManifest: false });
      expect(read.acted).toBe(true);
      expect(read.victim, `swapped up to ${swapTimes} times`).toEqual([]);
      expect(read.listed).not.toContain('victim');
      expect(read.opensOfA, 'read again').toBe(2);
    }
    // store.json rewritten (as every segment roll of a live writer does) is not a reason to read
    // again: the log ends it records only rise.
    const read = await readWhile({ swapTimes: 0, rewriteManifest: true });
    expect(read.acted).toBe(true);
    expect(read.opensOfA, 'read once').toBe(1);
    expect(read.victim).toEqual([]);
  });

  it('reads again a log whose file vanished while read beside a live writer (its compaction or checkpoint removed it), and says so when it always does', async () => {
    const source = tempDir();
    const options = { bucketCount: 1, segmentBytesMax: 1024 };
    const writer = await OffsetStore.open({ dir: source, ...options });
    const metadata = 'm'.repeat(300);
    for (let i = 0; i < 12; i++)
      await writer.commitOffsets(`g${i}`, [{ tableId: 1, bucketId: 0, offset: i, metadata }]);
    await writer.close();
    const first = readdirSync(path.join(source, 'buckets', '000'))
      .filter((n) => n.endsWith('.log'))
      .sort()[0]!;
    /** A copy read while "a live process" (this one, by its LOCK file) removes `first` `times` times. */
    async function readWhileRemoved(times: number, live = true) {
      const dir = tempDir();
      copyStoreDir(source, dir);
      if (live) {
        // A live owner holds the kernel-held lock as well as naming itself in LOCK.
        const held = await holdDirectoryLock(dir);
        if (typeof held === 'string') throw new Error(`no kernel lock: ${held}`);
        onTestFinished(() => held.release());
        writeFileSync(path.join(dir, 'LOCK'), `${process.pid}\n`);
      }
      const segment = path.join(dir, 'buckets', '000', first);
      let removed = 0;
      class RemovingWhileRead extends NodeFileSystem {
        override async open(p: string, flags: 'r' | 'r+' | 'wx' | 'w', mode?: number) {
          if (p === segment && removed < times) {
            removed++;
            throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), {
              code: 'ENOENT',
            });
          }
          return super.open(p, flags, mode);
        }
      }
      return OffsetStore.open({ dir, readOnly: true, ...options, fs: new RemovingWhileRead() });
    }
    const reader = await readWhileRemoved(1);
    expect((await reader.fetchOffsets('g0'))[0]?.offset).toBe(0);
    await reader.close();
    await expect(readWhileRemoved(1_000)).rejects.toMatchObject({
      code: 'STORE_LOCKED',
      message: expect.stringMatching(
        /read 8 times, and each time a file of the store was replaced or removed while it was read/,
      ),
    });
    // With no live writer, a file listed and then gone is damage.
    await expect(readWhileRemoved(1, false)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(/a file vanished while the log was read/),
    });
  });

  it("is not read again for a checkpoint's seal, which a live writer replaces at every checkpoint", async () => {
    // The seal (checkpoint/data.mdb.seal) only checks data.mdb before it is mapped; what the view
    // serves comes from LMDB's read transaction and the logs. A live checkpoint writer writes a new
    // seal (a new file renamed over the name) after every checkpoint, so a view that read again for
    // it was refused STORE_LOCKED under load, after 8 reads.
    const dir = tempDir();
    const writer = await commitSome(dir, { strategy: 'checkpoint' });
    await writer.compact();
    const expected = await everything(writer);
    await writer.close();
    const seals = readdirSync(path.join(dir, 'buckets'))
      .map((b) => path.join(dir, 'buckets', b, 'checkpoint', 'data.mdb.seal'))
      .filter((p) => existsSync(p));
    expect(seals.length).toBeGreaterThan(0);
    let sealReads = 0;
    class SealReplacedWhileRead extends NodeFileSystem {
      override async readFile(p: string) {
        const bytes = await super.readFile(p);
        if (seals.includes(p)) {
          sealReads++;
          // As the writer's next checkpoint does: the same name, a new file.
          copyFileSync(p, `${p}.tmp`);
          renameSync(`${p}.tmp`, p);
        }
        return bytes;
      }
    }
    const reader = await OffsetStore.open({
      dir,
      readOnly: true,
      fs: new SealReplacedWhileRead(),
      onWarning: () => {},
    });
    expect(await everything(reader)).toEqual(expected);
    await reader.close();
    expect(sealReads, 'read once').toBe(seals.length);
  });

  it("reports no damage in a live writer's checkpoint that grew while the view checked it", async () => {
    const dir = tempDir();
    const writer = await OffsetStore.open({
      dir,
      durability: 'os',
      bucketCount: 1,
      compaction: { strategy: 'checkpoint', background: false },
    });
    for (let i = 0; i < 50; i++)
      await writer.commitOffsets(`g${i}`, [{ tableId: 1, bucketId: 0, offset: i }]);
    await writer.compact();
    const dataPath = path.join(dir, 'buckets', '000', 'checkpoint', 'data.mdb');
    let sized = 0;
    /** Once the view has taken data.mdb's size to check it, the writer commits and checkpoints. */
    class WriterCommitsMeanwhile extends NodeFileSystem {
      override async sizeBytes(p: string) {
        const size = await super.sizeBytes(p);
        if (p === dataPath && ++sized === 2) {
          for (let i = 0; i < 2000; i++)
            await writer.commitOffsets(`h${i}`, [
              { tableId: 2, bucketId: i % 64, offset: i, metadata: 'm'.repeat(64) },
            ]);
          await writer.compact();
        }
        return size;
      }
    }
    const warnings: string[] = [];
    const view = await OffsetStore.open({
      dir,
      readOnly: true,
      fs: new WriterCommitsMeanwhile(),
      onWarning: (m) => warnings.push(m),
    });
    expect(sized).toBeGreaterThanOrEqual(2);
    expect((await view.fetchOffsets('g7'))[0]?.offset).toBe(7);
    await view.close();
    await writer.close();
    expect(warnings).toEqual([]);
  });

  it('is refused, while open, by an open of the same store for writing in the same process', async () => {
    const dir = tempDir();
    await (await commitSome(dir, { strategy: 'checkpoint' })).close();
    // Through another name for the same folder, and with awaitRecovery: false, alike.
    const link = path.join(tempDir(), 'link');
    symlinkSync(dir, link);
    const reader = await OffsetStore.open({ dir: link, readOnly: true });
    for (const awaitRecovery of [true, false])
      await expect(OffsetStore.open({ dir, awaitRecovery })).rejects.toMatchObject({
        code: 'STORE_LOCKED',
        message: expect.stringContaining('open to read only'),
      });
    await reader.close();
    const writer = await OffsetStore.open({ dir, compaction: { background: false } });
    await writer.commitOffsets('g1', [{ tableId: 1, bucketId: 0, offset: 99 }]);
    await writer.compact(); // a checkpoint written through a read-write environment
    // The other order works: a reader of a store this process has open for writing.
    const second = await OffsetStore.open({ dir, readOnly: true });
    expect((await second.fetchOffsets('g1', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(99);
    await second.close();
    await writer.commitOffsets('g1', [{ tableId: 1, bucketId: 0, offset: 100 }]);
    await writer.compact();
    await writer.close();
  });

  it('is refused while this process opens the store to write and its buckets still recover, so the writer never fails', async () => {
    const dir = tempDir();
    const first = await commitSome(dir, { strategy: 'checkpoint' });
    await first.compact(); // every bucket with a checkpoint environment
    await first.close();
    // The writer's recovery of bucket 2 waits for the gate.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const fs = new (class extends NodeFileSystem {
      override async readdir(p: string): Promise<string[]> {
        if (p.includes(`${path.sep}002`)) await gate;
        return super.readdir(p);
      }
    })();
    const writer = await OffsetStore.open({
      dir,
      fs,
      awaitRecovery: false,
      compaction: { background: false },
    });
    await expect(OffsetStore.open({ dir, readOnly: true })).rejects.toMatchObject({
      code: 'STORE_LOCKED',
      message: expect.stringContaining('still recovering'),
    });
    open();
    await writer.ready();
    const reader = await OffsetStore.open({ dir, readOnly: true });
    expect(await reader.fetchOffsets('g2', [{ tableId: 1, bucketId: 1 }])).toEqual(
      await writer.fetchOffsets('g2', [{ tableId: 1, bucketId: 1 }]),
    );
    await reader.close();
    await writer.commitOffsets('g2', [{ tableId: 1, bucketId: 0, offset: 1234 }]);
    await writer.compact();
    await writer.close();
  });

  it('started together with an open to write, in either order, the one called second is refused STORE_LOCKED and the store stays usable', async () => {
    const dir = tempDir();
    const first = await commitSome(dir, { strategy: 'checkpoint' });
    await first.compact();
    await first.close();
    for (const readerFirst of [true, false]) {
      const open = (readOnly: boolean) => OffsetStore.open({ dir, readOnly });
      const [a, b] = await Promise.allSettled(
        readerFirst ? [open(true), open(false)] : [open(false), open(true)],
      );
      const settled = [a, b];
      // The first called holds the store before anything is awaited: a writer was refused for a
      // reader called after it, which took its hold while the writer awaited its first steps.
      expect(a.status, `reader first: ${readerFirst}`).toBe('fulfilled');
      expect(b.status, `reader first: ${readerFirst}`).toBe('rejected');
      expect((b as PromiseRejectedResult).reason).toMatchObject({ code: 'STORE_LOCKED' });
      for (const r of settled) if (r.status === 'fulfilled') await r.value.close();
      // Nothing holds the store now: both kinds of open work, and the writer checkpoints.
      const writer = await OffsetStore.open({ dir, compaction: { background: false } });
      await writer.commitOffsets('g1', [{ tableId: 1, bucketId: 0, offset: readerFirst ? 7 : 8 }]);
      await writer.compact();
      await writer.close();
      const reader = await OffsetStore.open({ dir, readOnly: true });
      expect((await reader.fetchOffsets('g1', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(
        readerFirst ? 7 : 8,
      );
      await reader.close();
    }
    // A new store: the writer called first creates it; the reader beside it is refused for it, not
    // for the store's absence, and refuses nothing.
    const fresh = path.join(tempDir(), 'new-store');
    const [writer, reader] = await Promise.allSettled([
      OffsetStore.open({ dir: fresh }),
      OffsetStore.open({ dir: fresh, readOnly: true }),
    ]);
    expect(reader).toMatchObject({ status: 'rejected', reason: { code: 'STORE_LOCKED' } });
    expect(writer.status).toBe('fulfilled');
    await (writer as PromiseFulfilledResult<OffsetStore>).value.close();
  });

  it('is refused by startKafkaServer, and a missing store.json beside data is damage, as for a real open', async () => {
    const dir = tempDir();
    await (await commitSome(dir)).close();
    const reader = await OffsetStore.open({ dir, readOnly: true });
    await expect(startKafkaServer({ store: reader, port: 0 })).rejects.toMatchObject({
      code: 'STORE_READ_ONLY',
    });
    await reader.close();
    rmSync(path.join(dir, 'store.json'));
    await expect(OffsetStore.open({ dir, readOnly: true })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringContaining('a store was here'),
    });
  });
});
