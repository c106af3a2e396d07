/**
 * Committed offsets may be negative: Kafka clients commit the sentinels -1 (latest) and -2 (earliest)
 * literally (kafkajs `admin.resetOffsets`), and a Kafka broker stores whatever it is sent. The store
 * takes any safe integer, -(2^53 - 1) to 2^53 - 1, and gives it back unchanged: from memory, after a
 * reopen (log replay), after the log cleaner rewrote the segments, and from a checkpoint. Below
 * -(2^53 - 1) is INVALID_REQUEST. A scanner treats a negative committed offset as no position at all
 * (as Kafka's consumers do) and asks its `onMissing` policy; the admin report gives such a bucket no lag.
 */
import { describe, expect, it } from 'vitest';
import { StoreAdmin } from '../../src/admin/index.js';
import type { OffsetCommit } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { openStore } from './store-fixtures.js';

const SENTINELS: OffsetCommit[] = [
  { tableId: 1, bucketId: 0, offset: -1, leaderEpoch: 4, metadata: 'latest' },
  { tableId: 1, bucketId: 1, offset: -2, metadata: 'earliest' },
  { tableId: 1, bucketId: 2, offset: Number.MIN_SAFE_INTEGER },
  { tableId: 1, bucketId: 3, offset: -(2 ** 32) - 5 },
];

async function offsetsOf(
  store: Awaited<ReturnType<typeof openStore>>,
): Promise<(number | undefined)[]> {
  return (await store.fetchOffsets('g', SENTINELS)).map((c) => c?.offset);
}

describe('negative committed offsets', () => {
  it('commits -1, -2 and MIN_SAFE_INTEGER and fetches them back unchanged, with leader epoch and metadata', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', SENTINELS);
    const fetched = await store.fetchOffsets('g', SENTINELS);
    expect(fetched.map((c) => c?.offset)).toEqual([
      -1,
      -2,
      Number.MIN_SAFE_INTEGER,
      -(2 ** 32) - 5,
    ]);
    expect(fetched[0]).toMatchObject({ leaderEpoch: 4, metadata: 'latest' });
    expect(fetched[1]).toMatchObject({ leaderEpoch: -1, metadata: 'earliest' });
    await store.resetOffsets('other', [{ tableId: 1, bucketId: 0, offset: -2 }]);
    expect((await store.fetchOffsets('other', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(-2);
    await store.close();
  });

  it('refuses an offset below -(2^53 - 1) with INVALID_REQUEST naming it, writing nothing', async () => {
    const store = await openStore(tempDir());
    for (const offset of [-(2 ** 53), -(2 ** 60), Number.NEGATIVE_INFINITY, -1.5]) {
      await expect(
        store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset }]),
        String(offset),
      ).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
        message: expect.stringContaining('offsets[0].offset'),
      });
    }
    expect((await store.stats()).totals.logBytes).toBe(0);
    await store.close();
  });

  it('survives a reopen (replayed from the log) and a log-cleaner rewrite of the segments', async () => {
    const dir = tempDir();
    const cleaner = { compaction: { strategy: 'log-cleaner', background: false } } as const;
    let store = await openStore(dir, cleaner);
    await store.commitOffsets('g', SENTINELS);
    // Enough later commits of other groups to seal segments (1 KiB each) under the sentinels.
    for (let i = 0; i < 40; i++)
      await store.commitOffsets(`filler-${i % 3}`, [{ tableId: 9, bucketId: 0, offset: i }]);
    await store.close();
    store = await openStore(dir, cleaner);
    expect(await offsetsOf(store)).toEqual([-1, -2, Number.MIN_SAFE_INTEGER, -(2 ** 32) - 5]);
    const report = await store.compact();
    expect(report.recordsDropped, 'the cleaner ran over sealed segments').toBeGreaterThan(0);
    await store.close();
    store = await openStore(dir, cleaner);
    expect(await offsetsOf(store)).toEqual([-1, -2, Number.MIN_SAFE_INTEGER, -(2 ** 32) - 5]);
    await store.close();
  });

  it('survives a checkpoint: the LMDB image holds them and a reopen restores them', async () => {
    const dir = tempDir();
    let store = await openStore(dir, { compaction: { strategy: 'checkpoint', background: false } });
    await store.commitOffsets('g', SENTINELS);
    const report = await store.compact();
    expect(report.buckets.some((b) => b.checkpointLogOffset !== undefined)).toBe(true);
    await store.close();
    store = await openStore(dir, { compaction: { strategy: 'checkpoint', background: false } });
    expect(
      store.recoveryReports().some((r) => r?.checkpointLogOffset !== undefined),
      'recovered from a checkpoint',
    ).toBe(true);
    expect(await offsetsOf(store)).toEqual([-1, -2, Number.MIN_SAFE_INTEGER, -(2 ** 32) - 5]);
    await store.close();
  });

  it('a scanner treats a negative committed offset as none: onMissing decides the position', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [
      { tableId: 1, bucketId: 0, offset: -1 },
      { tableId: 1, bucketId: 1, offset: 42 },
    ]);
    const scanner = store.scanner('g', { onMissing: (bucket) => 1000 + bucket.bucketId });
    await scanner.assign([
      { tableId: 1, bucketId: 0 },
      { tableId: 1, bucketId: 1 },
    ]);
    expect(scanner.position({ tableId: 1, bucketId: 0 })).toBe(1000);
    expect(scanner.position({ tableId: 1, bucketId: 1 })).toBe(42);
    await expect(
      store.scanner('g', { onMissing: 'error' }).assign([{ tableId: 1, bucketId: 0 }]),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await scanner.close();
    expect(
      (await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0]?.offset,
      'the resolved start was committed',
    ).toBe(1000);
    await store.close();
  });

  it('the admin report gives a bucket with a negative committed offset no lag and leaves it out of the total', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    await store.commitOffsets('g', [
      { tableId: 1, bucketId: 0, offset: -2 },
      { tableId: 1, bucketId: 1, offset: 40 },
    ]);
    await store.close();
    const admin = await StoreAdmin.open(dir);
    const report = await admin.describeGroup('g', [
      { tableId: 1, partitionId: null, bucketId: 0, offset: 100 },
      { tableId: 1, partitionId: null, bucketId: 1, offset: 100 },
    ]);
    expect(report.buckets.map((b) => [b.committedOffset, b.lag])).toEqual([
      [-2, null],
      [40, 60],
    ]);
    expect(report.totalLag).toBe(60);
    await admin.close();
  });
});
