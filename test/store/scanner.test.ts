/**
 * ScannerOffsets, the positions of a scanner that assigns itself buckets (no group): assign starts at
 * the committed offset (or 0, an error, or a resolver's choice) and is all-or-nothing; advance only
 * moves forward, seek anywhere; commit() writes exactly what moved, as one batch, keeping what a failed
 * commit could not write for the next; auto-commit on the manual clock; close(), store.close() and a
 * re-assign commit what moved; after a crash a new scanner resumes at the last commit.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock, type OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { TrackingFileSystem, copyStoreDir, ioIdle, openStore } from './store-fixtures.js';

const T0 = 1_700_000_000_000;
const B0 = { tableId: 1, bucketId: 0 };
const B1 = { tableId: 1, bucketId: 1 };
const B2 = { tableId: 2, partitionId: 0, bucketId: 0 };
const B3 = { tableId: 2, partitionId: 1, bucketId: 0 };

/** Log batches written so far (one offsets-bucket stores, so this counts every write). */
/** A one-bucket store whose offsets expire after 7 days, checked hourly, on a manual clock. */
async function storeWithWeekRetention() {
  const DAY = 24 * 3600 * 1000;
  const clock = new ManualClock(T0);
  const fs = new TrackingFileSystem();
  const store = await openStore(tempDir(), {
    clock,
    fs,
    bucketCount: 1,
    offsetsRetentionMs: 7 * DAY,
    offsetsRetentionCheckIntervalMs: 3600 * 1000,
  });
  return { DAY, clock, fs, store };
}

async function batches(store: OffsetStore): Promise<number> {
  return (await store.stats()).buckets.reduce((n, b) => n + b.nextLogOffset, 0);
}

async function committed(
  store: OffsetStore,
  groupId: string,
  buckets: object[],
): Promise<(number | null)[]> {
  return (await store.fetchOffsets(groupId, buckets as never)).map((o) => o?.offset ?? null);
}

describe('ScannerOffsets', () => {
  it('assign loads committed offsets; a missing one starts at 0 by default ("earliest")', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [
      { ...B0, offset: 100 },
      { ...B2, offset: 7 },
    ]);
    const scanner = store.scanner('g');
    await scanner.assign([B0, B1, B2]);
    expect([scanner.position(B0), scanner.position(B1), scanner.position(B2)]).toEqual([100, 0, 7]);
    expect(
      scanner.position({ tableId: 1, partitionId: null, bucketId: 0 }),
      'null and omitted partition are one bucket',
    ).toBe(100);
    expect(scanner.assignment()).toHaveLength(3);
    expect(() => scanner.position(B3)).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST' }),
    );
    await store.close();
  });

  it('a close whose commit failed (retriable) commits on the next close, and the store would close it again', async () => {
    const store = await openStore(tempDir(), { bucketCount: 1, pendingCommitsMax: 1 });
    const scanner = store.scanner('sg');
    await scanner.assign([B0]);
    scanner.advance(B0, 100);
    // Another commit in flight to the one offsets-bucket: the close's own is refused, retriably.
    const other = store.commitOffsets('other', [{ tableId: 9, bucketId: 0, offset: 1 }]);
    await expect(scanner.close()).rejects.toMatchObject({ code: 'TOO_MANY_PENDING_WRITES' });
    await other;
    expect(scanner.movedBuckets()).toEqual([{ tableId: 1, partitionId: null, bucketId: 0 }]);
    expect(() => scanner.advance(B0, 101)).toThrow(
      expect.objectContaining({ code: 'STORE_CLOSED' }),
    );
    await scanner.close();
    expect(scanner.movedBuckets()).toEqual([]);
    expect(await committed(store, 'sg', [B0])).toEqual([100]);
    await scanner.close(); // nothing left: at once

    // A scanner whose close failed is still the store's to close: its close commits what moved.
    const second = store.scanner('sg2');
    await second.assign([B0]);
    second.advance(B0, 7);
    const blocking = store.commitOffsets('other', [{ tableId: 9, bucketId: 0, offset: 2 }]);
    await expect(second.close()).rejects.toMatchObject({ code: 'TOO_MANY_PENDING_WRITES' });
    await blocking;
    await store.close();
    const reopened = await openStore(store.dir, { bucketCount: 1 });
    expect((await reopened.fetchOffsets('sg2', [B0]))[0]?.offset).toBe(7);
    await reopened.close();
  });

  it("onMissing 'error' rejects assign with INVALID_REQUEST naming the bucket; a resolver function decides the start", async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [{ ...B0, offset: 100 }]);
    await expect(store.scanner('g', { onMissing: 'error' }).assign([B0, B2])).rejects.toMatchObject(
      { code: 'INVALID_REQUEST', message: expect.stringMatching(/2:0:0|2\/0\/0|tableId.*2/) },
    );
    const strict = store.scanner('g', { onMissing: 'error' });
    await strict.assign([B0]);
    expect(strict.position(B0)).toBe(100);

    const asked: object[] = [];
    const resolving = store.scanner('g', {
      onMissing: async (bucket) => {
        asked.push(bucket);
        return bucket.tableId * 1000 + (bucket.partitionId ?? 500);
      },
    });
    await resolving.assign([B0, B1, B3]);
    expect([resolving.position(B0), resolving.position(B1), resolving.position(B3)]).toEqual([
      100, 1500, 2001,
    ]);
    expect(asked).toEqual([
      { tableId: 1, partitionId: null, bucketId: 1 },
      { tableId: 2, partitionId: 1, bucketId: 0 },
    ]);
    await expect(store.scanner('g', { onMissing: () => -1 }).assign([B1])).rejects.toThrow(
      RangeError,
    );
    await store.close();
  });

  it('a bucket committed at offset 0 starts there: it is no missing offset, and nothing moved', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [{ ...B0, offset: 0 }]);
    let asked = 0;
    for (const onMissing of ['error', () => ++asked + 100] as const) {
      const scanner = store.scanner('g', { onMissing });
      await scanner.assign([B0]);
      expect(scanner.position(B0)).toBe(0);
      expect(scanner.movedBuckets()).toEqual([]);
      await scanner.close();
    }
    expect(asked).toBe(0);
    await store.close();
  });

  it('assign is all-or-nothing: when a new position cannot be resolved, the assignment stays as it was', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [
      { ...B0, offset: 100 },
      { ...B2, offset: 7 },
    ]);
    const scanner = store.scanner('g', { onMissing: 'error' });
    await scanner.assign([B2]);
    scanner.advance(B2, 9);
    await expect(scanner.assign([B0, B1])).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    expect(scanner.assignment()).toEqual([{ tableId: 2, partitionId: 0, bucketId: 0 }]);
    expect(scanner.position(B2)).toBe(9);
    expect(await committed(store, 'g', [B2]), 'nothing was committed by the failed assign').toEqual(
      [7],
    );
    await store.close();
  });

  it('advance moves forward only, seek anywhere; bad offsets and unassigned buckets are refused', async () => {
    const store = await openStore(tempDir());
    const scanner = store.scanner('g');
    await scanner.assign([B0]);
    scanner.advance(B0, 10);
    scanner.advance(B0, 10);
    expect(scanner.position(B0)).toBe(10);
    expect(() => scanner.advance(B0, 9)).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST' }),
    );
    scanner.seek(B0, 3);
    expect(scanner.position(B0)).toBe(3);
    scanner.seek(B0, 50);
    expect(scanner.position(B0)).toBe(50);
    expect(() => scanner.seek(B0, -1)).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST' }),
    );
    expect(() => scanner.advance(B0, 2 ** 53)).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST' }),
    );
    expect(() => scanner.advance(B1, 60)).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST' }),
    );
    expect(() => scanner.seek(B0, '7' as never)).toThrow(TypeError);
    expect(scanner.position(B0)).toBe(50);
    await expect(scanner.assign([B0, { ...B0, partitionId: null }])).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(/buckets\[1\] repeats bucket/),
    });
    // Not an array: a TypeError naming the argument (not one about .map).
    await expect(scanner.assign(undefined as never)).rejects.toThrow(
      new TypeError('buckets must be an array'),
    );
    await expect(scanner.assign({ length: 1, 0: B0 } as never)).rejects.toThrow(
      new TypeError('buckets must be an array'),
    );
    await store.close();
  });

  it('commit() commits exactly the positions that moved, as one batch, and is a no-op when nothing moved', async () => {
    const clock = new ManualClock(T0);
    const store = await openStore(tempDir(), { clock, bucketCount: 1 });
    await store.commitOffsets(
      'g',
      [B0, B1, B2, B3].map((b) => ({ ...b, offset: 10 })),
    );
    const scanner = store.scanner('g');
    await scanner.assign([B0, B1, B2, B3]);
    const start = await batches(store);
    await scanner.commit();
    expect(await batches(store), 'nothing moved: nothing written').toBe(start);

    clock.advance(1000);
    scanner.advance(B1, 15);
    scanner.seek(B3, 4);
    scanner.advance(B0, 10); // not a move
    expect(scanner.movedBuckets()).toEqual([
      { tableId: 1, partitionId: null, bucketId: 1 },
      { tableId: 2, partitionId: 1, bucketId: 0 },
    ]);
    await scanner.commit();
    expect(await batches(store), 'one atomic commit').toBe(start + 1);
    const fetched = await store.fetchOffsets('g', [B0, B1, B2, B3]);
    expect(fetched.map((o) => [o?.offset, o?.commitTimestampMs])).toEqual([
      [10, T0],
      [15, T0 + 1000],
      [10, T0],
      [4, T0 + 1000],
    ]);
    expect(scanner.movedBuckets()).toEqual([]);
    await scanner.commit();
    expect(await batches(store)).toBe(start + 1);

    // Moving back to the committed position is not a move.
    scanner.seek(B1, 20);
    scanner.seek(B1, 15);
    await scanner.commit();
    expect(await batches(store)).toBe(start + 1);
    await store.close();
  });

  it('keeps the positions of a failed commit pending and commits them with the next one', async () => {
    // With room for one pending commit, a commit issued while another is in flight fails (retriably).
    const store = await openStore(tempDir(), { bucketCount: 1, pendingCommitsMax: 1 });
    await store.commitOffsets('g', [
      { ...B0, offset: 0 },
      { ...B1, offset: 0 },
    ]);
    const scanner = store.scanner('g');
    await scanner.assign([B0, B1]);
    scanner.advance(B0, 5);
    const blocker = store.commitOffsets('other', [{ ...B0, offset: 1 }]);
    await expect(scanner.commit()).rejects.toMatchObject({
      code: 'TOO_MANY_PENDING_WRITES',
      retriable: true,
    });
    await blocker;
    expect(await committed(store, 'g', [B0])).toEqual([0]);
    expect(scanner.movedBuckets()).toEqual([{ tableId: 1, partitionId: null, bucketId: 0 }]);
    scanner.advance(B1, 6);
    await scanner.commit();
    expect(await committed(store, 'g', [B0, B1])).toEqual([5, 6]);
    expect(scanner.movedBuckets()).toEqual([]);
    await store.close();
  });

  it('auto-commits what moved every autoCommitIntervalMs of the manual clock, and retries after a failed auto-commit', async () => {
    const clock = new ManualClock(T0);
    const fs = new TrackingFileSystem();
    const store = await openStore(tempDir(), { clock, fs, bucketCount: 1, pendingCommitsMax: 1 });
    const errors: unknown[] = [];
    const scanner = store.scanner('g', {
      autoCommitIntervalMs: 100,
      onAutoCommitError: (e) => errors.push(e),
    });
    await scanner.assign([B0]);
    scanner.advance(B0, 1);
    clock.advance(99);
    await ioIdle(fs);
    expect(await committed(store, 'g', [B0]), 'not before the interval').toEqual([null]);
    clock.advance(1);
    await ioIdle(fs);
    expect(await committed(store, 'g', [B0])).toEqual([1]);

    const start = await batches(store);
    clock.advance(100);
    await ioIdle(fs);
    expect(await batches(store), 'an interval with nothing moved writes nothing').toBe(start);

    scanner.advance(B0, 2);
    const blocker = store.commitOffsets('other', [{ ...B0, offset: 1 }]);
    clock.advance(100); // the auto-commit meets the blocker in flight and fails
    await blocker;
    await ioIdle(fs);
    expect(errors).toEqual([expect.objectContaining({ code: 'TOO_MANY_PENDING_WRITES' })]);
    expect(await committed(store, 'g', [B0])).toEqual([1]);
    clock.advance(100);
    await ioIdle(fs);
    expect(
      await committed(store, 'g', [B0]),
      'the next auto-commit carries the pending position',
    ).toEqual([2]);
    await scanner.close();
    scanner.position(B0);
    clock.advance(1000); // closed: no more auto-commits
    await ioIdle(fs);
    expect(await batches(store)).toBe(start + 2);
    await store.close();
  });

  it("keeps a quiet bucket's offset from expiring while it runs: an auto-commit writes again, unmoved, a position committed half the retention ago", async () => {
    const { DAY, clock, fs, store } = await storeWithWeekRetention();
    const scanner = store.scanner('g', { autoCommitIntervalMs: 3600 * 1000 });
    await scanner.assign([B0, B1]);
    scanner.advance(B0, 1000);
    scanner.advance(B1, 5);
    await scanner.commit();
    // B0 gets no more records for 8 days; B1 moves on every hour.
    for (let hour = 1; hour <= 8 * 24; hour++) {
      scanner.advance(B1, 5 + hour);
      clock.advance(3600 * 1000);
      await ioIdle(fs);
    }
    expect(await committed(store, 'g', [B0, B1])).toEqual([1000, 5 + 8 * 24]);
    // An unmoved position is written again only every half retention (~3.5 days), not hourly.
    const before = await batches(store);
    clock.advance(3600 * 1000);
    await ioIdle(fs);
    expect(await batches(store), 'nothing moved, nothing due').toBe(before);
    await scanner.close();
    await store.close();
  });

  it("writes a quiet bucket's offset again with the leader epoch and metadata it was committed with", async () => {
    const { DAY, clock, fs, store } = await storeWithWeekRetention();
    // A consumer committed B0 with an epoch and metadata; the scanner takes over and never moves it.
    await store.commitOffsets('g', [{ ...B0, offset: 1000, leaderEpoch: 7, metadata: 'host-a' }]);
    const scanner = store.scanner('g', { autoCommitIntervalMs: 3600 * 1000 });
    await scanner.assign([B0, B1]);
    for (let hour = 1; hour <= 8 * 24; hour++) {
      scanner.advance(B1, hour);
      clock.advance(3600 * 1000);
      await ioIdle(fs);
    }
    const [b0, b1] = await store.fetchOffsets('g', [B0, B1]);
    expect(b0, 'refreshed, not expired').toMatchObject({
      offset: 1000,
      leaderEpoch: 7,
      metadata: 'host-a',
    });
    expect(b0!.commitTimestampMs, 'written again within the retention').toBeGreaterThan(T0 + DAY);
    expect(b1, "the scanner's own commits carry neither").toMatchObject({
      offset: 8 * 24,
      leaderEpoch: -1,
      metadata: '',
    });
    await scanner.close();
    await store.close();
  });

  it('after a crash without commit, a new scanner resumes at the last commit', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    const scanner = store.scanner('g');
    await scanner.assign([B0, B2]);
    scanner.advance(B0, 40);
    scanner.advance(B2, 7);
    await scanner.commit();
    scanner.advance(B0, 90); // processed but never committed
    scanner.seek(B2, 0);
    // The directory as a crash would leave it: the store and its scanner never closed.
    const crashed = tempDir();
    copyStoreDir(dir, crashed);
    const recovered = await openStore(crashed);
    const resumed = recovered.scanner('g');
    await resumed.assign([B0, B2]);
    expect([resumed.position(B0), resumed.position(B2)]).toEqual([40, 7]);
    await recovered.close();
    await store.close();
  });

  it('close() commits what moved, is idempotent, and the scanner refuses use afterwards', async () => {
    const store = await openStore(tempDir());
    const scanner = store.scanner('g');
    await scanner.assign([B0, B1]);
    scanner.advance(B1, 33);
    await scanner.close();
    expect(await committed(store, 'g', [B1])).toEqual([33]);
    await scanner.close();
    expect(() => scanner.advance(B1, 40)).toThrow(
      expect.objectContaining({ code: 'STORE_CLOSED' }),
    );
    expect(() => scanner.seek(B1, 40)).toThrow(expect.objectContaining({ code: 'STORE_CLOSED' }));
    await expect(scanner.assign([B0])).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    await store.close();
  });

  it('store.close() closes open scanners, committing what moved', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    const first = store.scanner('g1');
    const second = store.scanner('g2');
    await first.assign([B0]);
    await second.assign([B0, B2]);
    first.advance(B0, 11);
    second.advance(B2, 22);
    await store.close();
    const reopened = await openStore(dir);
    expect(await committed(reopened, 'g1', [B0])).toEqual([11]);
    expect(await committed(reopened, 'g2', [B2])).toEqual([22]);
    await reopened.close();
  });

  it('re-assigning commits the moved positions of dropped buckets and keeps the positions of kept ones', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [{ ...B1, offset: 50 }]);
    const scanner = store.scanner('g');
    await scanner.assign([B0, B1]);
    scanner.advance(B0, 8);
    scanner.advance(B1, 60);
    await scanner.assign([B1, B2]);
    expect(await committed(store, 'g', [B0])).toEqual([8]);
    expect(scanner.position(B1)).toBe(60);
    expect(scanner.position(B2)).toBe(0);
    expect(() => scanner.position(B0)).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST' }),
    );
    await scanner.commit();
    expect(await committed(store, 'g', [B1])).toEqual([60]);
    await store.close();
  });

  it('takes assignments made without awaiting the one before in the order they were made: the last one is the assignment', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [{ ...B1, offset: 10 }]);
    // B0 has no committed offset, and its resolver is slow; B1's offset is found at once.
    const slow = store.scanner('g', {
      onMissing: async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return 0;
      },
    });
    await Promise.all([slow.assign([B0]), slow.assign([B1])]);
    expect(slow.assignment()).toEqual([{ ...B1, partitionId: null }]);
    await slow.close();
    const scanner = store.scanner('h');
    await scanner.assign([B0]);
    scanner.advance(B0, 50);
    await Promise.all([scanner.assign([B1]), scanner.assign([B0, B2])]);
    expect(scanner.assignment().map((b) => b.tableId * 10 + b.bucketId)).toEqual([10, 20]);
    // B0 was dropped, then taken again: its progress was committed and is its position again.
    expect(await committed(store, 'h', [B0])).toEqual([50]);
    expect(scanner.position(B0)).toBe(50);
    await store.close();
  });

  it('commits progress on a dropped bucket recorded while the re-assignment commits: none is lost', async () => {
    const store = await openStore(tempDir());
    const scanner = store.scanner('g');
    await scanner.assign([B0, B1]);
    scanner.advance(B1, 10);
    const reassigned = scanner.assign([B0]);
    // The loop finishes a record of B1 while its commit is on its way to the disk.
    await new Promise((resolve) => setImmediate(resolve));
    scanner.advance(B1, 20);
    await reassigned;
    expect(await committed(store, 'g', [B1])).toEqual([20]);
    await store.close();
  });
});
