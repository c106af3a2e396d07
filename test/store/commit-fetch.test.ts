/**
 * Committing and fetching through the store: a fetch returns every field of a bucket's last commit
 * (null where none) as a copy; concurrent commits are group-committed; a group lives in offsets-bucket
 * xxh32(utf8(groupId)) % bucketCount; close flushes commits in flight. requireStable refuses a bucket
 * with a commit in flight (UNSTABLE_OFFSET_COMMIT); a failed writev or fdatasync rejects its commit with
 * LOG_STORAGE_ERROR, shows none of it, then or after reopen, and fail-stops the offsets-bucket.
 */
import { describe, expect, it } from 'vitest';
import { loadChecksum, xxh32 } from '../../src/codec/index.js';
import { ManualClock, type OffsetCommit } from '../../src/index.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { tempDir } from '../support/temp-dir.js';
import {
  HeldDatasyncFileSystem,
  byBucket,
  groupsSharingABucket,
  imageOf,
  openStore,
} from './store-fixtures.js';

const T0 = 1_700_000_000_000;

describe('commitOffsets / fetchOffsets', () => {
  it('reads its writes: every field of a multi-bucket commit, in request order, null where nothing is committed', async () => {
    const clock = new ManualClock(T0);
    const store = await openStore(tempDir(), { clock });
    await store.commitOffsets('orders', [
      { tableId: 1, bucketId: 0, offset: 10 },
      { tableId: 1, partitionId: 0, bucketId: 0, offset: 20, leaderEpoch: 3, metadata: 'p0' },
      {
        tableId: 1,
        partitionId: null,
        bucketId: 1,
        offset: 0,
        leaderEpoch: 0,
        metadata: 'héllo ✓',
      },
      {
        tableId: Number.MAX_SAFE_INTEGER,
        partitionId: Number.MAX_SAFE_INTEGER,
        bucketId: 2 ** 31 - 1,
        offset: Number.MAX_SAFE_INTEGER,
      },
    ]);
    const fetched = await store.fetchOffsets('orders', [
      { tableId: 1, partitionId: 0, bucketId: 0 },
      { tableId: 1, bucketId: 0 },
      { tableId: 2, bucketId: 0 },
      { tableId: 1, partitionId: 1, bucketId: 0 },
      {
        tableId: Number.MAX_SAFE_INTEGER,
        partitionId: Number.MAX_SAFE_INTEGER,
        bucketId: 2 ** 31 - 1,
      },
      { tableId: 1, partitionId: null, bucketId: 1 },
    ]);
    expect(fetched).toEqual([
      {
        tableId: 1,
        partitionId: 0,
        bucketId: 0,
        offset: 20,
        leaderEpoch: 3,
        metadata: 'p0',
        commitTimestampMs: T0,
      },
      {
        tableId: 1,
        partitionId: null,
        bucketId: 0,
        offset: 10,
        leaderEpoch: -1,
        metadata: '',
        commitTimestampMs: T0,
      },
      null,
      null,
      {
        tableId: Number.MAX_SAFE_INTEGER,
        partitionId: Number.MAX_SAFE_INTEGER,
        bucketId: 2 ** 31 - 1,
        offset: Number.MAX_SAFE_INTEGER,
        leaderEpoch: -1,
        metadata: '',
        commitTimestampMs: T0,
      },
      {
        tableId: 1,
        partitionId: null,
        bucketId: 1,
        offset: 0,
        leaderEpoch: 0,
        metadata: 'héllo ✓',
        commitTimestampMs: T0,
      },
    ]);
    const all = (await store.fetchOffsets('orders')).sort((a, b) => byBucket(a!, b!));
    expect(all.map((o) => [o!.tableId, o!.partitionId, o!.bucketId, o!.offset])).toEqual([
      [1, null, 0, 10],
      [1, null, 1, 0],
      [1, 0, 0, 20],
      [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 2 ** 31 - 1, Number.MAX_SAFE_INTEGER],
    ]);
    expect(await store.fetchOffsets('nobody')).toEqual([]);
    expect(await store.fetchOffsets('nobody', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
    await store.close();
  });

  it('keeps the last commit of a bucket, stamped with the clock at commit time, and leaves other buckets and groups alone', async () => {
    const clock = new ManualClock(T0);
    const store = await openStore(tempDir(), { clock });
    await store.commitOffsets('g', [
      { tableId: 1, bucketId: 0, offset: 5, metadata: 'first' },
      { tableId: 1, bucketId: 1, offset: 6 },
    ]);
    await store.commitOffsets('other', [{ tableId: 1, bucketId: 0, offset: 99 }]);
    clock.advance(250);
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 7 }]);
    expect(
      await store.fetchOffsets('g', [
        { tableId: 1, bucketId: 0 },
        { tableId: 1, bucketId: 1 },
      ]),
    ).toEqual([
      {
        tableId: 1,
        partitionId: null,
        bucketId: 0,
        offset: 7,
        leaderEpoch: -1,
        metadata: '',
        commitTimestampMs: T0 + 250,
      },
      {
        tableId: 1,
        partitionId: null,
        bucketId: 1,
        offset: 6,
        leaderEpoch: -1,
        metadata: '',
        commitTimestampMs: T0,
      },
    ]);
    expect((await store.fetchOffsets('other'))[0]!.offset).toBe(99);
    await store.close();
  });

  it('answers repeated fetches from the current state through deletes of single buckets, of the whole group, and a new first commit', async () => {
    const store = await openStore(tempDir(), { clock: new ManualClock(T0) });
    const buckets = [
      { tableId: 1, bucketId: 0 },
      { tableId: 1, bucketId: 1 },
    ];
    const offsetsOf = async (): Promise<(number | null)[]> =>
      (await store.fetchOffsets('g', buckets)).map((v) => v?.offset ?? null);
    expect(await offsetsOf()).toEqual([null, null]);
    await store.commitOffsets('g', [
      { tableId: 1, bucketId: 0, offset: 5 },
      { tableId: 1, bucketId: 1, offset: 6 },
    ]);
    expect(await offsetsOf()).toEqual([5, 6]);
    expect(await offsetsOf()).toEqual([5, 6]);
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 1, offset: 7 }]);
    expect(await offsetsOf()).toEqual([5, 7]);
    await store.deleteOffsets('g', [{ tableId: 1, bucketId: 0 }]);
    expect(await offsetsOf()).toEqual([null, 7]);
    await store.deleteGroup('g');
    expect(await offsetsOf()).toEqual([null, null]);
    expect(await store.fetchOffsets('g')).toEqual([]);
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    expect(await offsetsOf()).toEqual([1, null]);
    await store.deleteOffsets('g', [{ tableId: 1, bucketId: 0 }]);
    expect(await offsetsOf()).toEqual([null, null]);
    await store.close();
    await expect(store.fetchOffsets('g', buckets)).rejects.toMatchObject({ code: 'STORE_CLOSED' });
  });

  it('hands out copies: mutating a fetched or described offset changes nothing in the store', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 5, metadata: 'm' }]);
    const [fetched] = await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]);
    fetched!.offset = 999;
    fetched!.metadata = 'changed';
    (await store.fetchOffsets('g'))[0]!.offset = 998;
    (await store.describeGroup('g')).offsets[0]!.offset = 997;
    expect((await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0]).toMatchObject({
      offset: 5,
      metadata: 'm',
    });
    await store.close();
  });

  it('group-commits concurrent commits: all resolve, fewer fdatasyncs than commits, and the last call of a bucket wins', async () => {
    const fs = new FaultyFileSystem();
    const store = await openStore(tempDir(), { fs, bucketCount: 1 });
    const datasyncsBefore = fs.datasyncCount;
    const commits = Array.from({ length: 200 }, (_, n) =>
      store.commitOffsets(`g${n % 5}`, [{ tableId: 1, bucketId: n % 3, offset: n }]),
    );
    await Promise.all(commits);
    expect(fs.datasyncCount - datasyncsBefore).toBeGreaterThan(0);
    expect(fs.datasyncCount - datasyncsBefore).toBeLessThan(100);
    for (let g = 0; g < 5; g++) {
      for (let b = 0; b < 3; b++) {
        const last = Math.max(
          ...Array.from({ length: 200 }, (_, n) => n).filter((n) => n % 5 === g && n % 3 === b),
        );
        expect(
          (await store.fetchOffsets(`g${g}`, [{ tableId: 1, bucketId: b }]))[0]?.offset,
          `g${g} bucket ${b}`,
        ).toBe(last);
      }
    }
    await store.close();
  });

  it('lets committers that commit again as soon as acknowledged share one fdatasync, even when they started a round apart', async () => {
    const fs = new FaultyFileSystem();
    // Segments large enough not to roll (a roll fdatasyncs too).
    const store = await openStore(tempDir(), { fs, bucketCount: 1, segmentBytesMax: 1 << 26 });
    const COMMITS_EACH = 25;
    const committer = async (k: number) => {
      for (let n = 1; n <= COMMITS_EACH; n++)
        await store.commitOffsets(`g${k}`, [{ tableId: 1, bucketId: 0, offset: n }]);
    };
    const datasyncsBefore = fs.datasyncCount;
    const first = [0, 1, 2, 3].map(committer);
    // The other four start while the first round is being flushed: they arrive a round later.
    while (fs.datasyncCount === datasyncsBefore) await new Promise((r) => setImmediate(r));
    const second = [4, 5, 6, 7].map(committer);
    await Promise.all([...first, ...second]);
    const datasyncs = fs.datasyncCount - datasyncsBefore;
    // One cohort of 8 after the first rounds: ~COMMITS_EACH + 2 fdatasyncs; two cohorts of 4
    // alternating would take ~2 * COMMITS_EACH.
    expect(datasyncs).toBeLessThanOrEqual(COMMITS_EACH + 5);
    await store.close();
  });

  it('puts a group in the offsets-bucket xxh32(utf8(groupId)) % bucketCount', async () => {
    await loadChecksum();
    const store = await openStore(tempDir(), { bucketCount: 7 });
    expect(store.bucketCount).toBe(7);
    for (const groupId of ['a', 'orders', 'grüße-✓', 'x'.repeat(255)]) {
      const expected = xxh32(Buffer.from(groupId, 'utf8')) % 7;
      expect(store.bucketFor(groupId)).toBe(expected);
      await store.commitOffsets(groupId, [{ tableId: 1, bucketId: 0, offset: 1 }]);
      expect((await store.listGroups()).find((g) => g.groupId === groupId)?.offsetsBucket).toBe(
        expected,
      );
      expect((await store.describeGroup(groupId)).offsetsBucket).toBe(expected);
      expect((await store.stats()).buckets[expected]!.groups).toBeGreaterThan(0);
    }
    await store.close();
  });

  it('flushes commits still in flight when closed, and they survive the reopen', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    const commits = Array.from({ length: 50 }, (_, n) =>
      store.commitOffsets(`g${n % 4}`, [{ tableId: 1, bucketId: n, offset: n }]),
    );
    const closed = store.close();
    await Promise.all(commits);
    await closed;
    const reopened = await openStore(dir);
    expect((await reopened.stats()).totals.liveOffsets).toBe(50);
    expect((await reopened.fetchOffsets('g1', [{ tableId: 1, bucketId: 49 }]))[0]?.offset).toBe(49);
    await reopened.close();
  });
});

describe('requireStable', () => {
  it('rejects a fetch of a bucket with a commit in flight with UNSTABLE_OFFSET_COMMIT while a plain fetch returns the previous value', async () => {
    const store = await openStore(tempDir());
    const { a, b } = groupsSharingABucket(store);
    const b0 = { tableId: 1, bucketId: 0 };
    const b1 = { tableId: 1, bucketId: 1 };
    const b0p = { tableId: 1, partitionId: 0, bucketId: 0 };
    await store.commitOffsets(a, [
      { ...b0, offset: 1 },
      { ...b1, offset: 1 },
      { ...b0p, offset: 1 },
    ]);
    await store.commitOffsets(b, [{ ...b0, offset: 1 }]);

    const inFlight = store.commitOffsets(a, [{ ...b0, offset: 2, metadata: 'new' }]);
    // Same tick: the commit is appended but not yet durable.
    const stable = store.fetchOffsets(a, [b1, b0], { requireStable: true });
    const stableAll = store.fetchOffsets(a, undefined, { requireStable: true });
    const plain = store.fetchOffsets(a, [b0]);
    const unaffected = [
      store.fetchOffsets(a, [b1, b0p], { requireStable: true }), // other buckets of the group, incl. partition 0 of the same table/bucket
      store.fetchOffsets(b, [b0], { requireStable: true }), // the same bucket of another group in the same offsets-bucket
    ];
    await expect(stable).rejects.toMatchObject({
      code: 'UNSTABLE_OFFSET_COMMIT',
      errno: 88,
      retriable: true,
    });
    await expect(stableAll).rejects.toMatchObject({ code: 'UNSTABLE_OFFSET_COMMIT' });
    expect((await plain)[0]).toMatchObject({ offset: 1, metadata: '' });
    expect((await unaffected[0])!.map((o) => o?.offset)).toEqual([1, 1]);
    expect((await unaffected[1])![0]?.offset).toBe(1);

    await inFlight;
    expect((await store.fetchOffsets(a, [b0], { requireStable: true }))[0]).toMatchObject({
      offset: 2,
      metadata: 'new',
    });
    expect((await store.fetchOffsets(a, [b0]))[0]).toMatchObject({ offset: 2, metadata: 'new' });
    expect((await store.fetchOffsets(a, undefined, { requireStable: true })).length).toBe(3);
    await store.close();
  });

  it('reports a first-ever commit in flight as unstable rather than as "nothing committed"', async () => {
    const store = await openStore(tempDir());
    const inFlight = store.commitOffsets('fresh', [{ tableId: 3, bucketId: 3, offset: 30 }]);
    const stable = store.fetchOffsets('fresh', [{ tableId: 3, bucketId: 3 }], {
      requireStable: true,
    });
    const plain = store.fetchOffsets('fresh', [{ tableId: 3, bucketId: 3 }]);
    await expect(stable).rejects.toMatchObject({ code: 'UNSTABLE_OFFSET_COMMIT' });
    expect(await plain).toEqual([null]);
    await inFlight;
    expect(
      (await store.fetchOffsets('fresh', [{ tableId: 3, bucketId: 3 }], { requireStable: true }))[0]
        ?.offset,
    ).toBe(30);
    await store.close();
  });

  it('stays unstable until the last of two overlapping commits of a bucket is durable', async () => {
    const fs = new HeldDatasyncFileSystem();
    const store = await openStore(tempDir(), { fs });
    const b0 = { tableId: 1, bucketId: 0 };
    // A log's first write also records in the store's manifest that the log holds it (an fdatasync
    // of its own): done before the fdatasyncs are counted.
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 9, offset: 0 }]);
    fs.holding = true;
    const first = store.commitOffsets('g', [{ ...b0, offset: 1 }]);
    await fs.heldCount(1); // the first commit is written, its fdatasync held
    const second = store.commitOffsets('g', [{ ...b0, offset: 2 }]); // queued for the next write
    fs.releaseOne();
    await first;
    await fs.heldCount(1); // the second commit is written, its fdatasync held
    await expect(
      store.fetchOffsets('g', [b0], { requireStable: true }),
      'the second commit is still in flight',
    ).rejects.toMatchObject({ code: 'UNSTABLE_OFFSET_COMMIT' });
    expect((await store.fetchOffsets('g', [b0]))[0]?.offset).toBe(1);
    fs.holding = false;
    fs.releaseOne();
    await second;
    expect((await store.fetchOffsets('g', [b0], { requireStable: true }))[0]?.offset).toBe(2);
    await store.close();
  });
});

describe('atomicity on a storage failure', () => {
  const previous: OffsetCommit[] = [
    { tableId: 1, bucketId: 0, offset: 5 },
    { tableId: 1, bucketId: 1, offset: 5, metadata: 'old' },
  ];
  const failing: OffsetCommit[] = [
    { tableId: 1, bucketId: 0, offset: 50 },
    { tableId: 1, bucketId: 1, offset: 50, metadata: 'new' },
    { tableId: 2, partitionId: 7, bucketId: 0, offset: 50 },
    { tableId: 3, bucketId: 9, offset: 50 },
  ];
  const requested = failing.map(({ tableId, partitionId, bucketId }) => ({
    tableId,
    partitionId,
    bucketId,
  }));

  async function failOneCommit(
    fault: 'datasync' | 'writev',
  ): Promise<{ dir: string; before: Awaited<ReturnType<typeof imageOf>> }> {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const store = await openStore(dir, { fs });
    const { a, b, elsewhere } = groupsSharingABucket(store);
    await store.commitOffsets(a, previous);
    await store.commitOffsets(b, previous);
    await store.commitOffsets(elsewhere, previous);
    const before = await imageOf(store);
    const sizeBefore = (await store.stats()).totals.logBytes;
    fs.plan =
      fault === 'datasync'
        ? { failDatasyncAt: fs.datasyncCount + 1 }
        : { failWritevAt: fs.writevCount + 1 };

    const commit = store.commitOffsets(a, failing);
    // A concurrent commit of another group in the same offsets-bucket shares the failed write.
    const sharing = store.commitOffsets(b, [{ tableId: 9, bucketId: 9, offset: 9 }]);
    await expect(commit).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR', errno: 1002 });
    await expect(sharing).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    fs.plan = {};

    expect(
      await store.fetchOffsets(a, requested),
      'nothing of the failed commit is visible',
    ).toEqual([
      expect.objectContaining({ offset: 5 }),
      expect.objectContaining({ offset: 5, metadata: 'old' }),
      null,
      null,
    ]);
    expect(
      await store.fetchOffsets(a, requested, { requireStable: true }),
      'pending marks are cleared',
    ).toHaveLength(4);
    expect(await store.fetchOffsets(b, undefined, { requireStable: true })).toHaveLength(2);
    expect(await imageOf(store)).toEqual(before);
    // The offsets-bucket is fail-stopped: later writes to it report the storage error.
    await expect(
      store.commitOffsets(a, [{ tableId: 1, bucketId: 0, offset: 60 }]),
    ).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    await expect(
      store.commitOffsets(b, [{ tableId: 1, bucketId: 0, offset: 60 }]),
    ).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    await expect(store.deleteOffsets(a, [{ tableId: 1, bucketId: 0 }])).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
    });
    await expect(store.deleteGroup(b)).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    expect(await imageOf(store)).toEqual(before);
    if (fault === 'writev') expect((await store.stats()).totals.logBytes).toBe(sizeBefore);
    await store.close();
    return { dir, before };
  }

  it('a failed writev rejects the commit with LOG_STORAGE_ERROR, shows nothing of it, clears pending marks and fail-stops the offsets-bucket; reopen shows none of it', async () => {
    const { dir, before } = await failOneCommit('writev');
    const reopened = await openStore(dir);
    expect(await imageOf(reopened)).toEqual(before);
    await reopened.commitOffsets(before.groups[0]!.groupId, [
      { tableId: 1, bucketId: 0, offset: 70 },
    ]);
    await reopened.close();
  });

  it('a failed fdatasync rejects the commit with LOG_STORAGE_ERROR, shows nothing of it, clears pending marks and fail-stops the offsets-bucket', async () => {
    await failOneCommit('datasync');
  });

  // After a failed fdatasync the log cuts the active segment back to where the failed write began,
  // so the rejected commits do not come back on reopen.
  it('after a failed fdatasync, reopening (with a healthy file system) shows none of the rejected commits', async () => {
    const { dir, before } = await failOneCommit('datasync');
    const reopened = await openStore(dir);
    try {
      expect(await imageOf(reopened)).toEqual(before);
    } finally {
      await reopened.close();
    }
  });
});

describe('fetchOffsetsSync', () => {
  it('answers as fetchOffsets does, without a promise, and throws what it would reject with', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [
      { tableId: 1, bucketId: 0, offset: 5, metadata: 'm' },
      { tableId: 1, partitionId: 2, bucketId: 1, offset: 6 },
    ]);
    const refs = [
      { tableId: 1, bucketId: 0 },
      { tableId: 1, partitionId: 2, bucketId: 1 },
      { tableId: 9, bucketId: 9 },
    ];
    for (let i = 0; i < 3; i++)
      expect(store.fetchOffsetsSync('g', refs)).toEqual(await store.fetchOffsets('g', refs)); // cold, then from the cache
    expect(store.fetchOffsetsSync('g')).toEqual(await store.fetchOffsets('g'));
    expect(store.fetchOffsetsSync('g', refs, { requireStable: true })).toEqual(
      await store.fetchOffsets('g', refs),
    );
    expect(() => store.fetchOffsetsSync('', refs)).toThrow(
      expect.objectContaining({ code: 'INVALID_GROUP_ID' }),
    );
    expect(() => store.fetchOffsetsSync('g', [{ tableId: -1, bucketId: 0 }])).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST' }),
    );
    await store.close();
    expect(() => store.fetchOffsetsSync('g', refs)).toThrow(
      expect.objectContaining({ code: 'STORE_CLOSED' }),
    );
  });
});
