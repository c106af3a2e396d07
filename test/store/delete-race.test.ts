/**
 * Deletes and expiries of groups larger than one tombstone batch (10,000 offsets) racing commits:
 * a tombstone deletes only the value it was planned against. A commit issued after the delete or
 * expiry began is ordered after every one of its tombstones, so it is never deleted by them, not
 * even by a later batch of the same delete (also after reopen). A delete of a group is atomic with
 * respect to members joining: it deletes everything or nothing.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock, type OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { HeldDatasyncFileSystem, openStore } from './store-fixtures.js';

const T0 = 1_700_000_000_000;
const OFFSETS = 25_000;
const LAST = { tableId: 1, bucketId: OFFSETS - 1 };

async function bigGroup(store: OffsetStore, groupId: string): Promise<void> {
  await store.commitOffsets(
    groupId,
    Array.from({ length: OFFSETS }, (_, i) => ({ tableId: 1, bucketId: i, offset: i })),
  );
}

/** Reopens `dir` and returns the committed offset of LAST in group `g`, or null. */
async function lastAfterReopen(dir: string): Promise<number | null> {
  const reopened = await openStore(dir, { bucketCount: 1, clock: new ManualClock(T0) });
  const [value] = await reopened.fetchOffsets('g', [LAST]);
  await reopened.close();
  return value?.offset ?? null;
}

describe('a delete of a group larger than one batch, racing a commit', () => {
  it('retention never deletes a commit acknowledged after the expiry began', async () => {
    const dir = tempDir();
    const clock = new ManualClock(T0);
    const fs = new HeldDatasyncFileSystem();
    const store = await openStore(dir, {
      fs,
      clock,
      bucketCount: 1,
      durability: 'os',
      offsetsRetentionMs: 1_000,
      offsetsRetentionCheckIntervalMs: 1_000,
    });
    await bigGroup(store, 'g');
    await store.close();
    const live = await openStore(dir, {
      fs,
      clock,
      bucketCount: 1,
      offsetsRetentionMs: 1_000,
      offsetsRetentionCheckIntervalMs: 1_000,
    });
    fs.holding = true;
    clock.advance(1_000); // the expiry check runs: its first tombstone batch waits in fdatasync
    await fs.heldCount(1);
    const fresh = live.commitOffsets('g', [{ ...LAST, offset: 777 }]);
    fs.holding = false;
    fs.releaseOne();
    await fresh;
    await live.close(); // waits for the expiry pass to finish
    expect(await lastAfterReopen(dir)).toBe(777);
  });

  it('deleteGroup never deletes a commit issued after it began', async () => {
    const dir = tempDir();
    const fs = new HeldDatasyncFileSystem();
    const store = await openStore(dir, { fs, bucketCount: 1, clock: new ManualClock(T0) });
    await bigGroup(store, 'g');
    fs.holding = true;
    const deleted = store.deleteGroup('g');
    await fs.heldCount(1);
    const fresh = store.commitOffsets('g', [{ ...LAST, offset: 777 }]);
    fs.holding = false;
    fs.releaseOne();
    await Promise.all([deleted, fresh]);
    expect((await store.fetchOffsets('g', [LAST]))[0]?.offset).toBe(777);
    expect((await store.stats()).totals.liveOffsets).toBe(1);
    await store.close();
    expect(await lastAfterReopen(dir)).toBe(777);
  });

  it('deleteOffsets never deletes a commit issued after it began', async () => {
    const dir = tempDir();
    const fs = new HeldDatasyncFileSystem();
    const store = await openStore(dir, { fs, bucketCount: 1, clock: new ManualClock(T0) });
    await bigGroup(store, 'g');
    fs.holding = true;
    const deleted = store.deleteOffsets(
      'g',
      Array.from({ length: OFFSETS }, (_, i) => ({ tableId: 1, bucketId: i })),
    );
    await fs.heldCount(1);
    const fresh = store.commitOffsets('g', [{ ...LAST, offset: 777 }]);
    fs.holding = false;
    fs.releaseOne();
    await Promise.all([deleted, fresh]);
    expect((await store.fetchOffsets('g', [LAST]))[0]?.offset).toBe(777);
    await store.close();
    expect(await lastAfterReopen(dir)).toBe(777);
  });

  it('a deleteGroup queued behind another deleteGroup deletes what was committed before it, never a commit called after it', async () => {
    const dir = tempDir();
    const store = await openStore(dir, { bucketCount: 1, clock: new ManualClock(T0) });
    const b = { tableId: 1, bucketId: 0 };
    const other = { tableId: 1, bucketId: 1 };
    await store.commitOffsets('g', [{ ...b, offset: 1 }]);
    const first = store.deleteGroup('g');
    const between = store.commitOffsets('g', [{ ...other, offset: 5 }]);
    const second = store.deleteGroup('g'); // waits for the first's writes
    const after = store.commitOffsets('g', [{ ...b, offset: 99 }]);
    const reset = store.resetOffsets('g', [{ ...other, offset: 7 }]);
    await Promise.all([first, between, second, after, reset]);
    const expected = [
      [b.bucketId, 99],
      [other.bucketId, 7],
    ];
    const served = async (s: OffsetStore) =>
      (await s.fetchOffsets('g', [b, other])).map((o) =>
        o === null ? null : [o.bucketId, o.offset],
      );
    expect(await served(store)).toEqual(expected);
    await store.close();
    const reopened = await openStore(dir, { bucketCount: 1, clock: new ManualClock(T0) });
    expect(await served(reopened)).toEqual(expected);
    await reopened.close();
  });

  it('a deleteGroup called after a commit that waits for a queued deleteGroup deletes that commit too', async () => {
    const dir = tempDir();
    const store = await openStore(dir, { bucketCount: 1, clock: new ManualClock(T0) });
    const b = { tableId: 1, bucketId: 0 };
    await store.commitOffsets('g', [{ ...b, offset: 1 }]);
    const first = store.deleteGroup('g');
    const second = store.deleteGroup('g'); // waits for the first's writes
    const held = store.commitOffsets('g', [{ ...b, offset: 50 }]); // waits for the second
    const third = store.deleteGroup('g'); // called after it: deletes it
    await Promise.all([first, second, held, third]);
    expect(await store.fetchOffsets('g', [b])).toEqual([null]);
    await store.close();
    const reopened = await openStore(dir, { bucketCount: 1, clock: new ManualClock(T0) });
    expect(await reopened.fetchOffsets('g', [b])).toEqual([null]);
    await reopened.close();
  });

  it('deleteOffsets right after a commit still in flight deletes it (the group exists from the commit on)', async () => {
    const dir = tempDir();
    const store = await openStore(dir, { bucketCount: 1, clock: new ManualClock(T0) });
    const b = { tableId: 1, bucketId: 0 };
    const committed = store.commitOffsets('fresh', [{ ...b, offset: 42 }]);
    const deleted = store.deleteOffsets('fresh', [b]);
    await Promise.all([committed, deleted]);
    expect(await store.fetchOffsets('fresh', [b])).toEqual([null]);
    await store.close();
    const reopened = await openStore(dir, { bucketCount: 1, clock: new ManualClock(T0) });
    expect(await reopened.fetchOffsets('fresh', [b])).toEqual([null]);
    await reopened.close();
  });

  it('deleteGroup racing a member joining either deletes the group and its offsets, or nothing', async () => {
    const dir = tempDir();
    const store = await openStore(dir, { bucketCount: 1, clock: new ManualClock(T0) });
    store.setTableLayout(1, { bucketCount: 2 });
    // A group that had a member, now Empty: the coordinator knows it.
    await store.heartbeat('g', { memberId: 'first', memberEpoch: 0, subscribedTableIds: [1] });
    await store.heartbeat('g', { memberId: 'first', memberEpoch: -1 });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 5 }]);
    const deleted = store.deleteGroup('g');
    const joined = store.heartbeat('g', { memberId: 'm', memberEpoch: 0, subscribedTableIds: [1] });
    const [deleteOutcome, joinOutcome] = await Promise.allSettled([deleted, joined]);
    expect(joinOutcome.status).toBe('fulfilled');
    const [offset] = await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]);
    if (deleteOutcome.status === 'fulfilled')
      expect(offset, 'the delete succeeded: the offset is gone').toBeNull();
    else
      expect(
        offset?.offset,
        `the delete failed (${String(deleteOutcome.reason)}): nothing was deleted`,
      ).toBe(5);
    await store.close();
  });
});
