/**
 * The store's lifecycle: store.json written at creation, a reopen with another bucketCount refused
 * (INVALID_CONFIG) and the lock released; 16 offsets-buckets by default; a second open in this process
 * refused with STORE_LOCKED however the path is spelled; close idempotent, keeping every commit, with
 * every later call rejected with STORE_CLOSED; with awaitRecovery: false, an offsets-bucket still
 * recovering answers COORDINATOR_LOAD_IN_PROGRESS, then serves its recovered state.
 */
import {
  cpSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isOffsetStoreError } from '../../src/errors/index.js';
import { ManualClock, OffsetStore, type GroupMember } from '../../src/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { encodeManifest, type StoreManifest } from '../../src/log/index.js';
import { JOURNAL_FILE_BYTES } from '../../src/store-options.js';
import { tempDir } from '../support/temp-dir.js';
import { dirFingerprint } from '../support/dir-fingerprint.js';
import { copyStoreDir, imageOf, openStore } from './store-fixtures.js';

const T0 = 1_700_000_000_000;

/** The real file system, with reads of offsets-bucket directories held until `release()`. */
class GatedFileSystem extends NodeFileSystem {
  #open = false;
  #waiting: (() => void)[] = [];

  release(): void {
    this.#open = true;
    for (const resume of this.#waiting.splice(0)) resume();
  }

  override async readdir(dirPath: string): Promise<string[]> {
    if (!this.#open && dirPath.includes(`${path.sep}buckets${path.sep}`))
      await new Promise<void>((resume) => this.#waiting.push(resume));
    return super.readdir(dirPath);
  }
}

describe('manifest', () => {
  it("tells another build's store (INVALID_CONFIG) from a damaged format version (CORRUPT_MESSAGE)", async () => {
    const dir = tempDir();
    await (await openStore(dir, { bucketCount: 2 })).close();
    const file = path.join(dir, 'store.json');
    const good = readFileSync(file, 'utf8');
    // A flipped bit in the version: this build's layout, a checksum that no longer holds.
    writeFileSync(file, good.replace('"formatVersion": 3', '"formatVersion": 6'));
    await expect(openStore(dir, { bucketCount: 2 })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(/checksum mismatch/),
    });
    // Another build's layout (version 1 had no per-bucket records).
    const earlier = JSON.parse(good) as Record<string, unknown>;
    delete earlier.buckets;
    writeFileSync(file, JSON.stringify({ ...earlier, formatVersion: 1 }));
    await expect(openStore(dir, { bucketCount: 2 })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(/format version 1; this build reads versions 2 and 3/),
    });
    writeFileSync(file, good);
    await (await openStore(dir, { bucketCount: 2 })).close();
  });

  it('opens a store of format version 2 (an earlier build) and raises it to 3 before writing anything else; a read-only open leaves it, and a later version is refused', async () => {
    const dir = tempDir();
    const store = await openStore(dir, { bucketCount: 2 });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 7, metadata: 'm' }]);
    await store.close();
    const file = path.join(dir, 'store.json');
    /** store.json with `version`, its checksum made to hold, as that build would have written it. */
    const asVersion = (version: number) => {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as StoreManifest;
      writeFileSync(file, encodeManifest({ ...manifest, formatVersion: version }));
    };
    asVersion(2);
    const version = () =>
      (JSON.parse(readFileSync(file, 'utf8')) as { formatVersion: number }).formatVersion;
    const view = await OffsetStore.open({ dir, readOnly: true });
    expect((await view.fetchOffsets('g'))[0]).toMatchObject({ offset: 7, metadata: 'm' });
    await view.close();
    expect(version()).toBe(2);
    const warnings: string[] = [];
    const upgraded = await openStore(dir, { bucketCount: 2, onWarning: (m) => warnings.push(m) });
    expect(version()).toBe(3);
    expect(warnings).toEqual([
      expect.stringMatching(
        /raised from format version 2 to 3; builds that wrote version 2 refuse it/,
      ),
    ]);
    expect((await upgraded.fetchOffsets('g'))[0]).toMatchObject({ offset: 7, metadata: 'm' });
    await upgraded.close();
    asVersion(4);
    await expect(openStore(dir, { bucketCount: 2 })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(/format version 4, written by a later build/),
    });
  });

  it('writes store.json at creation and refuses to reopen with another bucketCount (INVALID_CONFIG), releasing the lock', async () => {
    const dir = tempDir();
    const store = await openStore(dir, { bucketCount: 5, clock: new ManualClock(T0) });
    expect(JSON.parse(readFileSync(path.join(dir, 'store.json'), 'utf8'))).toEqual({
      formatVersion: 3,
      bucketCount: 5,
      createdAtMs: T0,
      compactionStrategy: 'none',
      buckets: Array.from({ length: 5 }, () => ({ logStart: 0, logEnd: 0, endExact: false })),
      checksum: expect.any(Number),
    });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 9 }]);
    const image = await imageOf(store);
    await store.close();

    await expect(openStore(dir, { bucketCount: 4 })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      errno: 40,
      message: expect.stringMatching(/bucketCount/),
    });
    await expect(openStore(dir, { bucketCount: 16 })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
    });
    expect(JSON.parse(readFileSync(path.join(dir, 'store.json'), 'utf8')).bucketCount).toBe(5);

    const again = await openStore(dir, { bucketCount: undefined });
    expect(again.bucketCount).toBe(5);
    expect(await imageOf(again)).toEqual(image);
    await again.close();
    const same = await openStore(dir, { bucketCount: 5 });
    expect(await imageOf(same)).toEqual(image);
    await same.close();
  });

  it('creates 16 offsets-buckets by default', async () => {
    const store = await openStore(tempDir(), { bucketCount: undefined });
    expect(store.bucketCount).toBe(16);
    expect((await store.stats()).buckets).toHaveLength(16);
    await store.close();
  });
});

describe('lock', () => {
  it('refuses a second open of the same directory in this process with STORE_LOCKED, however the path is spelled, until closed', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await expect(openStore(dir)).rejects.toMatchObject({ code: 'STORE_LOCKED', errno: 1001 });
    await expect(openStore(path.join(dir, '.', 'buckets', '..'))).rejects.toMatchObject({
      code: 'STORE_LOCKED',
    });
    expect(
      (await store.fetchOffsets('g'))[0]?.offset,
      'the refused open did not disturb the open store',
    ).toBe(1);
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 2 }]);
    await store.close();
    const reopened = await openStore(dir);
    expect((await reopened.fetchOffsets('g'))[0]?.offset).toBe(2);
    await reopened.close();
  });
});

describe('a store opened through a symbolic link', () => {
  it('keeps writing the directory the link led to when the link is re-pointed, and the link then opens the other store', async () => {
    const base = tempDir();
    const [a, b, current] = ['store-a', 'store-b', 'current'].map((n) => path.join(base, n));
    const options = { bucketCount: 1, segmentBytesMax: 1024 };
    for (const dir of [a!, b!]) await (await OffsetStore.open({ dir, ...options })).close();
    symlinkSync(a!, current!);
    const first = await OffsetStore.open({ dir: current!, ...options });
    // Re-pointed the way deploy tools do it: a new link renamed over the old one.
    symlinkSync(b!, `${current!}.new`);
    renameSync(`${current!}.new`, current!);
    const second = await OffsetStore.open({ dir: current!, ...options });
    // Enough commits to roll segments (new files) and rewrite store.json.
    for (let offset = 1; offset <= 60; offset++)
      await first.commitOffsets('first', [{ tableId: 1, bucketId: 0, offset }]);
    await second.commitOffsets('second', [{ tableId: 1, bucketId: 0, offset: 7 }]);
    await first.close();
    await second.close();
    const storeA = await OffsetStore.open({ dir: a!, ...options });
    const storeB = await OffsetStore.open({ dir: b!, ...options });
    try {
      expect((await storeA.fetchOffsets('first'))[0]?.offset).toBe(60);
      expect(await storeA.fetchOffsets('second')).toEqual([]);
      expect((await storeB.fetchOffsets('second'))[0]?.offset).toBe(7);
      expect(await storeB.fetchOffsets('first')).toEqual([]);
    } finally {
      await storeA.close();
      await storeB.close();
    }
  });
});

/**
 * Commits `commit(offset)` for each offset from `from` to `to` until one is refused: the last offset
 * acknowledged (`from - 1` when none was) and the refusal (undefined when none was refused).
 */
async function commitUntilRefused(
  commit: (offset: number) => Promise<unknown>,
  from: number,
  to: number,
): Promise<{ acknowledged: number; refusal: unknown }> {
  for (let offset = from; offset <= to; offset++) {
    try {
      await commit(offset);
    } catch (refusal) {
      return { acknowledged: offset - 1, refusal };
    }
  }
  return { acknowledged: to, refusal: undefined };
}

/**
 * The operator moves the live store's folder `live` aside to `moved` and puts a copy of it back
 * under the name (a backup of the moment, without its LOCK file): the copy's fingerprint.
 */
function replaceByCopy(live: string, moved: string): string[] {
  renameSync(live, moved);
  cpSync(moved, live, { recursive: true });
  rmSync(path.join(live, 'LOCK'));
  return dirFingerprint(live);
}

describe('a store whose directory is renamed while it is open', () => {
  it('writes no file into the directory that then has its name, and keeps every commit it acknowledged', async () => {
    const base = tempDir();
    const [live, moved, backup] = ['offsets', 'offsets.old', 'backup'].map((n) =>
      path.join(base, n),
    );
    const options = { bucketCount: 1, segmentBytesMax: 1024 };
    await (await OffsetStore.open({ dir: backup!, ...options })).close();
    const store = await OffsetStore.open({ dir: live!, ...options });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    // The operator moves the live store aside and puts another store (a restored backup) under
    // its name.
    renameSync(live!, moved!);
    renameSync(backup!, live!);
    const restored = dirFingerprint(live!);
    const { acknowledged, refusal } = await commitUntilRefused(
      (offset) => store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset }]),
      2,
      60,
    );
    // Its active segment is still open (in the moved folder); its next one is refused.
    expect(refusal).toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/is no longer the directory this process opened the store in/),
    });
    await store.close().catch(() => {});
    expect(dirFingerprint(live!), 'the store under the name now is untouched').toEqual(restored);
    const reopened = await OffsetStore.open({ dir: moved!, ...options });
    expect((await reopened.fetchOffsets('g'))[0]?.offset).toBe(acknowledged);
    await reopened.close();
  });
});

describe('a store whose directory is replaced by a copy of itself while it is open', () => {
  // The copy (a backup put back under the name) holds files of the same names as the store's own:
  // whatever the store did there by name would delete or replace the copy's files.
  for (const strategy of ['log-cleaner', 'checkpoint'] as const)
    it(`refuses to compact (${strategy}) there or roll into a new segment, and the copy keeps every file`, async () => {
      const base = tempDir();
      const [live, moved] = ['offsets', 'offsets.old'].map((n) => path.join(base, n));
      const options = {
        bucketCount: 4,
        segmentBytesMax: 1024,
        compaction: { strategy, background: false },
      };
      const warnings: string[] = [];
      const store = await OffsetStore.open({
        dir: live!,
        ...options,
        onWarning: (m) => warnings.push(m),
      });
      const commitRound = (offset: number) =>
        Promise.all(
          ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((g) =>
            store.commitOffsets(g, [
              { tableId: 1, bucketId: 0, offset, metadata: 'm'.repeat(200) },
            ]),
          ),
        );
      for (let offset = 1; offset <= 20; offset++) await commitRound(offset);
      const copy = replaceByCopy(live!, moved!);
      await expect(store.compact()).rejects.toMatchObject({
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringMatching(
          /is no longer the directory this process opened the store in/,
        ),
      });
      // Commits go on into the files the store has open (in the moved folder) until one needs a
      // new file there: a segment, or a journal file once the current one is full.
      const { acknowledged, refusal } = await commitUntilRefused(commitRound, 21, 400);
      expect(refusal).toMatchObject({ code: 'LOG_STORAGE_ERROR' });
      await store.close().catch(() => {});
      expect(warnings.length).toBeGreaterThan(0);
      for (const warning of warnings) expect(warning).toMatch(/no longer the directory/);
      expect(dirFingerprint(live!), 'the copy under the name is untouched').toEqual(copy);
      const reopened = await OffsetStore.open({ dir: moved!, ...options });
      for (const g of ['a', 'h'])
        expect((await reopened.fetchOffsets(g))[0]?.offset).toBeGreaterThanOrEqual(acknowledged);
      await reopened.close();
    });
});

describe('a store whose directory is replaced by a copy of itself while it is open, committing to many buckets at once', () => {
  it("writes its next commit-journal file nowhere, deletes none of the copy's at close, and keeps every commit it acknowledged", async () => {
    const base = tempDir();
    const [live, moved] = ['offsets', 'offsets.old'].map((n) => path.join(base, n));
    // Segments large enough never to roll: the journal's next file is the first file it needs.
    const options = { bucketCount: 4, segmentBytesMax: 64 << 20, [JOURNAL_FILE_BYTES]: 64 * 1024 };
    const warnings: string[] = [];
    const store = await OffsetStore.open({
      dir: live!,
      ...options,
      onWarning: (m) => warnings.push(m),
    });
    const groups = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const commitRound = (offset: number) =>
      Promise.all(
        groups.map((g) =>
          store.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset, metadata: 'm'.repeat(200) }]),
        ),
      );
    await commitRound(1);
    const journalFiles = () =>
      readdirSync(path.join(moved!, 'journal')).filter((n) => n.endsWith('.journal'));
    const copy = replaceByCopy(live!, moved!);
    expect(journalFiles()).toHaveLength(1);
    const { acknowledged, refusal } = await commitUntilRefused(commitRound, 2, 2000);
    expect(refusal).toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/no longer the directory this process opened the store in/),
    });
    expect(acknowledged).toBeGreaterThan(10);
    await store.close().catch(() => {});
    expect(dirFingerprint(live!), 'the copy under the name is untouched').toEqual(copy);
    const reopened = await OffsetStore.open({ dir: moved!, ...options });
    for (const g of groups)
      expect((await reopened.fetchOffsets(g))[0]?.offset).toBeGreaterThanOrEqual(acknowledged);
    await reopened.close();
    expect(
      warnings.every((w) => /no longer the directory/.test(w)),
      warnings.join('\n'),
    ).toBe(true);
  });
});

describe('a store closed cleanly after its directory was replaced by a copy of itself', () => {
  it("refuses, and deletes none of the copy's commit-journal files", async () => {
    const base = tempDir();
    const [live, moved] = ['offsets', 'offsets.old'].map((n) => path.join(base, n));
    const warnings: string[] = [];
    const store = await OffsetStore.open({
      dir: live!,
      bucketCount: 4,
      onWarning: (m) => warnings.push(m),
    });
    const groups = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    await Promise.all(
      groups.map((g) => store.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset: 1 }])),
    );
    const copy = replaceByCopy(live!, moved!);
    expect(readdirSync(path.join(live!, 'journal'))).toContain('00000000000000000001.journal');
    // Its last store.json is not written there: the close says so, and the logs and the journal
    // stay as they are in the moved folder, whose next open reads them.
    await expect(store.close()).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/no longer the directory this process opened the store in/),
    });
    expect(dirFingerprint(live!), 'the copy under the name is untouched').toEqual(copy);
    expect(warnings).toEqual([]);
    const reopened = await OffsetStore.open({ dir: moved!, bucketCount: 4 });
    for (const g of groups) expect((await reopened.fetchOffsets(g))[0]?.offset).toBe(1);
    await reopened.close();
  });
});

describe('close', () => {
  async function closedStore(): Promise<OffsetStore> {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await store.close();
    return store;
  }

  it('is idempotent: a second close, sequential or concurrent, resolves', async () => {
    const store = await openStore(tempDir());
    await Promise.all([store.close(), store.close()]);
    await store.close();
  });

  it('makes every call reject with STORE_CLOSED (errno 1000)', async () => {
    const store = await closedStore();
    const b = { tableId: 1, bucketId: 0 };
    const calls: [string, () => unknown][] = [
      ['commitOffsets', () => store.commitOffsets('g', [{ ...b, offset: 2 }])],
      ['fetchOffsets', () => store.fetchOffsets('g')],
      ['fetchOffsets with buckets', () => store.fetchOffsets('g', [b], { requireStable: true })],
      ['listGroups', () => store.listGroups()],
      ['describeGroup', () => store.describeGroup('g')],
      ['resetOffsets', () => store.resetOffsets('g', [{ ...b, offset: 0 }])],
      ['deleteOffsets', () => store.deleteOffsets('g', [b])],
      ['deleteGroup', () => store.deleteGroup('g')],
      ['stats', () => store.stats()],
      ['compact', () => store.compact()],
      ['scanner', () => store.scanner('g')],
      ['heartbeat', () => store.heartbeat('g', { memberEpoch: 0, subscribedTableIds: [1] })],
      ['joinGroup', () => store.joinGroup('g', { subscribedTableIds: [1] } as never)],
      ['setTableLayout', () => store.setTableLayout(1, { bucketCount: 4 })],
      ['ready', () => store.ready()],
      ['fetchOffsetsSync', () => store.fetchOffsetsSync('g')],
      ['groupType', () => store.groupType('g')],
      ['removeMembers', () => store.removeMembers('g', { memberIds: ['m'] } as never)],
      ['convertCompaction', () => store.convertCompaction('key-dedup')],
      ['highestTableId', () => store.highestTableId()],
    ];
    for (const [name, call] of calls) {
      let error: unknown;
      try {
        await call();
      } catch (e) {
        error = e;
      }
      expect(error, name).toMatchObject({ code: 'STORE_CLOSED', errno: 1000 });
    }
  });

  it('takes no commit, scanner or member once close has begun (a commit made before lands, a scanner commits), and stops a member whose join it overtook: none outlives the store', async () => {
    const store = await openStore(tempDir());
    store.setTableLayout(1, { bucketCount: 2 });
    const joining = store.joinGroup('members', { subscribedTableIds: [1] });
    const scanner = store.scanner('scanned');
    await scanner.assign([{ tableId: 2, bucketId: 0 }]);
    scanner.advance({ tableId: 2, bucketId: 0 }, 9);
    const before = store.commitOffsets('early', [{ tableId: 1, bucketId: 0, offset: 3 }]);
    const closing = store.close();
    expect(() => store.scanner('late')).toThrow(expect.objectContaining({ code: 'STORE_CLOSED' }));
    await expect(store.joinGroup('late', { subscribedTableIds: [1] })).rejects.toMatchObject({
      code: 'STORE_CLOSED',
    });
    // A commit made after close was called is refused; one made before it lands, as does the
    // scanner's, which close commits.
    await expect(
      store.commitOffsets('late', [{ tableId: 1, bucketId: 0, offset: 1 }]),
    ).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    // Joined as close began: it is stopped with the others, not left running against a closed store.
    const joined = await joining.then(
      (member) => member,
      (error: unknown) => error,
    );
    if (!isOffsetStoreError(joined, 'STORE_CLOSED'))
      expect((joined as GroupMember).runState).not.toBe('running');
    await before;
    await closing;
    const reopened = await openStore(store.dir);
    expect((await reopened.fetchOffsets('early'))[0]?.offset).toBe(3);
    expect((await reopened.fetchOffsets('scanned'))[0]?.offset).toBe(9);
    expect(await reopened.fetchOffsets('late')).toEqual([]);
    await reopened.close();
  });

  it('releases the directory and keeps everything committed', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    for (let i = 0; i < 30; i++)
      await store.commitOffsets(`g${i % 3}`, [{ tableId: 1, bucketId: i, offset: i }]);
    const image = await imageOf(store);
    await store.close();
    const reopened = await openStore(dir);
    expect(await imageOf(reopened)).toEqual(image);
    await reopened.close();
  });
});

describe('recovery in the background', () => {
  it('answers COORDINATOR_LOAD_IN_PROGRESS (retriable) for an offsets-bucket still recovering, then serves the recovered state', async () => {
    const dir = tempDir();
    const first = await openStore(dir, { bucketCount: 2 });
    await first.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 42 }]);
    await first.close();

    const fs = new GatedFileSystem();
    const store = await openStore(dir, { bucketCount: 2, fs, awaitRecovery: false });
    await expect(store.fetchOffsets('g')).rejects.toMatchObject({
      code: 'COORDINATOR_LOAD_IN_PROGRESS',
      errno: 14,
      retriable: true,
    });
    await expect(
      store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 43 }]),
    ).rejects.toMatchObject({ code: 'COORDINATOR_LOAD_IN_PROGRESS' });
    await expect(store.describeGroup('g')).rejects.toMatchObject({
      code: 'COORDINATOR_LOAD_IN_PROGRESS',
    });
    expect((await store.stats()).buckets.map((b) => b.state)).toEqual(['loading', 'loading']);

    fs.release();
    await store.ready();
    expect((await store.fetchOffsets('g'))[0]?.offset).toBe(42);
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 43 }]);
    expect((await store.fetchOffsets('g'))[0]?.offset).toBe(43);
    await store.close();
  });

  it('ready() rejects with STORE_CLOSED when close stopped buckets from recovering', async () => {
    const dir = tempDir();
    await (await openStore(dir, { bucketCount: 8 })).close();
    const fs = new GatedFileSystem();
    const store = await openStore(dir, { bucketCount: 8, fs, awaitRecovery: false });
    const ready = store.ready().then(
      () => 'recovered',
      (error: { code?: string }) => error.code,
    );
    const closing = store.close();
    fs.release();
    await closing;
    expect(await ready).toBe('STORE_CLOSED');
  });

  it('refuses a log written past its exact recorded end at every open, not only the first', async () => {
    const dir = tempDir();
    const store = await openStore(dir, { bucketCount: 2 });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await store.close();
    const manifest = path.join(dir, 'store.json');
    const older = readFileSync(manifest);
    const again = await openStore(dir, { bucketCount: 2 });
    await again.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 2 }]);
    await again.close();
    writeFileSync(manifest, older); // an older store.json restored over newer logs
    for (const awaitRecovery of [false, false, true]) {
      const opened = openStore(dir, { bucketCount: 2, awaitRecovery });
      const outcome = awaitRecovery
        ? await opened.then(
            () => 'open',
            (error: { code?: string }) => error.code,
          )
        : await opened.then(async (lazy) => {
            const code = await lazy.ready().then(
              () => 'open',
              (error: { code?: string }) => error.code,
            );
            await lazy.close();
            return code;
          });
      expect(outcome, `awaitRecovery ${awaitRecovery}`).toBe('CORRUPT_MESSAGE');
    }
  });

  it('gives a table layout set while a bucket finishes recovering to that bucket too', async () => {
    const dir = tempDir();
    const first = await openStore(dir, { bucketCount: 2 });
    const groups = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (const g of groups) await first.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset: 5 }]);
    // A crash image: store.json records log ends below what the logs hold, so each bucket's
    // recovery writes store.json before the bucket serves.
    const image = tempDir();
    copyStoreDir(dir, image);
    await first.close();
    const fs = new NodeFileSystem();
    const held: (() => void)[] = [];
    let holding = false;
    const rename = fs.rename.bind(fs);
    fs.rename = async (from: string, to: string) => {
      if (holding && path.basename(to) === 'store.json')
        await new Promise<void>((resume) => held.push(resume));
      return rename(from, to);
    };
    holding = true;
    const store = await openStore(image, { bucketCount: 2, fs, awaitRecovery: false });
    while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    store.setTableLayout(7, { bucketCount: 4 });
    holding = false;
    for (const resume of held.splice(0)) resume();
    await store.ready();
    for (const g of groups) {
      const member = await store.joinGroup(g, { subscribedTableIds: [7] });
      expect(member.assignment.length, g).toBe(4);
      await member.leave();
    }
    await store.close();
  });

  it('refuses a compaction conversion with STORE_CLOSED when close begins while buckets recover', async () => {
    const dir = tempDir();
    const first = await openStore(dir, { bucketCount: 8 });
    const strategy = (await first.stats()).compactionStrategy;
    await first.close();
    const fs = new GatedFileSystem();
    const store = await openStore(dir, { bucketCount: 8, fs, awaitRecovery: false });
    // The conversion waits for recovery; close stops the buckets not loading yet (4 load at a
    // time) from loading.
    const conversion = store.convertCompaction('checkpoint');
    const closing = store.close();
    fs.release();
    const outcome = await conversion.then(
      () => 'converted',
      (error: { code?: string }) => error.code,
    );
    await closing;
    expect(outcome).toBe('STORE_CLOSED');
    const reopened = await openStore(dir, { bucketCount: 8 });
    expect((await reopened.stats()).compactionStrategy).toBe(strategy);
    await reopened.close();
  });
});
