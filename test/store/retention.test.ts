/**
 * Offset retention on a manual clock: an offset survives the check at commit + R - 1 and is tombstoned
 * at the check at commit + R, each offset on its own commit time, its group gone with the last one; a
 * key whose fresher commit is in flight is not tombstoned; expiry survives a reopen, and offsets that
 * aged past R while the store was closed expire at the first check after it opens.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock, type OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { TrackingFileSystem, ioIdle, openStore } from './store-fixtures.js';

const T0 = 1_700_000_000_000;
const RETENTION_MS = 1000;

/**
 * A one-bucket store whose retention check runs every millisecond, so that after each
 * `step(ms)` a check has run at exactly the new time and its tombstones (if any) are applied.
 */
async function retentionStore(
  dir: string,
  clock: ManualClock,
): Promise<{ store: OffsetStore; step: (ms: number) => Promise<void>; fs: TrackingFileSystem }> {
  const fs = new TrackingFileSystem();
  const store = await openStore(dir, {
    fs,
    clock,
    bucketCount: 1,
    offsetsRetentionMs: RETENTION_MS,
    offsetsRetentionCheckIntervalMs: 1,
  });
  const step = async (ms: number) => {
    for (let i = 0; i < ms; i++) {
      clock.advance(1);
      await ioIdle(fs);
    }
  };
  return { store, step, fs };
}

const K0 = { tableId: 1, bucketId: 0 };
const K1 = { tableId: 1, partitionId: 0, bucketId: 1 };

describe('retention on a manual clock', () => {
  it('keeps an offset through the check at commit + R - 1 and tombstones it at the check at commit + R; the expiry survives reopen', async () => {
    const dir = tempDir();
    const clock = new ManualClock(T0);
    const { store, step } = await retentionStore(dir, clock);
    await store.commitOffsets('g', [{ ...K0, offset: 5 }]);
    await store.commitOffsets('keeper', [{ ...K0, offset: 1 }]);
    await step(RETENTION_MS - 1);
    expect(clock.nowMs()).toBe(T0 + RETENTION_MS - 1);
    const logOffsetBefore = (await store.stats()).buckets[0]!.nextLogOffset;
    expect((await store.fetchOffsets('g', [K0]))[0]?.offset, 'alive at commit + R - 1').toBe(5);
    expect((await store.listGroups()).map((g) => g.groupId)).toEqual(['g', 'keeper']);
    // Refresh the keeper: its offset is now younger than R.
    await store.commitOffsets('keeper', [{ ...K0, offset: 2 }]);

    await step(1);
    expect(clock.nowMs()).toBe(T0 + RETENTION_MS);
    expect(await store.fetchOffsets('g', [K0]), 'expired at commit + R').toEqual([null]);
    expect(await store.fetchOffsets('g')).toEqual([]);
    expect(
      (await store.listGroups()).map((g) => g.groupId),
      'a group with nothing left disappears',
    ).toEqual(['keeper']);
    await expect(store.describeGroup('g')).rejects.toMatchObject({ code: 'GROUP_ID_NOT_FOUND' });
    expect((await store.fetchOffsets('keeper'))[0]?.offset, 'a recommitted offset lives on').toBe(
      2,
    );
    const stats = (await store.stats()).buckets[0]!;
    expect(stats.nextLogOffset, 'expiry wrote tombstones through the log').toBeGreaterThan(
      logOffsetBefore + 1,
    );
    expect(stats.liveOffsets).toBe(1);
    await store.close();

    // Reopened on a clock set back to the commit time: nothing would expire now, so absence proves tombstones.
    const reopened = await openStore(dir, {
      clock: new ManualClock(T0),
      bucketCount: 1,
      offsetsRetentionMs: RETENTION_MS,
      offsetsRetentionCheckIntervalMs: 1,
    });
    expect(await reopened.fetchOffsets('g')).toEqual([]);
    expect((await reopened.listGroups()).map((g) => g.groupId)).toEqual(['keeper']);
    expect((await reopened.fetchOffsets('keeper'))[0]?.offset).toBe(2);
    await reopened.close();
  });

  it('expires each offset of a group on its own commit time; the group disappears with its last offset', async () => {
    const clock = new ManualClock(T0);
    const { store, step } = await retentionStore(tempDir(), clock);
    await store.commitOffsets('g', [
      { ...K0, offset: 1 },
      { ...K1, offset: 1 },
    ]);
    await step(400);
    await store.commitOffsets('g', [{ ...K1, offset: 2 }]);
    await step(RETENTION_MS - 400);
    expect(await store.fetchOffsets('g', [K0, K1])).toEqual([
      null,
      expect.objectContaining({ offset: 2, commitTimestampMs: T0 + 400 }),
    ]);
    expect((await store.listGroups()).map((g) => g.groupId)).toEqual(['g']);
    await step(399);
    expect((await store.fetchOffsets('g', [K1]))[0]?.offset).toBe(2);
    await step(1);
    expect(await store.fetchOffsets('g', [K0, K1])).toEqual([null, null]);
    expect(await store.listGroups()).toEqual([]);
    expect((await store.stats()).totals.liveOffsets).toBe(0);
    await store.close();
  });

  it('does not tombstone a key whose fresher commit is in flight when its old value expires', async () => {
    const clock = new ManualClock(T0);
    const { store, step, fs } = await retentionStore(tempDir(), clock);
    await store.commitOffsets('g', [{ ...K0, offset: 1 }]);
    await step(RETENTION_MS - 1);
    const fresher = store.commitOffsets('g', [{ ...K0, offset: 2 }]);
    clock.advance(1); // the check at commit + R runs while the fresher commit is pending
    await fresher;
    await ioIdle(fs);
    expect((await store.fetchOffsets('g', [K0]))[0]).toMatchObject({
      offset: 2,
      commitTimestampMs: T0 + RETENTION_MS - 1,
    });
    await step(RETENTION_MS - 2);
    expect((await store.fetchOffsets('g', [K0]))[0]?.offset).toBe(2);
    await step(1);
    expect(await store.fetchOffsets('g', [K0])).toEqual([null]);
    await store.close();
  });

  it('does not delete an Empty consumer group without offsets while a commit of it is in flight (its record used to go, the group turning into a classic one at epoch 0)', async () => {
    const clock = new ManualClock(T0);
    const { store, step, fs } = await retentionStore(tempDir(), clock);
    store.setTableLayout(1, { bucketCount: 1 });
    await store.heartbeat('cg', { memberId: 'm1', memberEpoch: 0, subscribedTableIds: [1] });
    await store.heartbeat('cg', { memberId: 'm1', memberEpoch: -1 });
    // The next check deletes the group, Empty without offsets (as Kafka's next cleanup does).
    const before = await store.describeGroup('cg');
    expect(before).toMatchObject({ groupType: 'consumer', state: 'Empty', offsets: [] });
    const commit = store.commitOffsets('cg', [{ ...K0, offset: 42 }]);
    clock.advance(1); // the check that finds the group empty runs while the commit is pending
    await commit;
    await ioIdle(fs);
    expect(await store.describeGroup('cg')).toMatchObject({
      groupType: 'consumer',
      groupEpoch: before.groupEpoch,
      offsets: [expect.objectContaining({ offset: 42 })],
    });
    await step(1);
    expect((await store.describeGroup('cg')).groupType).toBe('consumer');
    await store.close();
  });

  it('expires offsets that aged past R while the store was closed at the first check after reopening', async () => {
    const dir = tempDir();
    const clock = new ManualClock(T0);
    const first = await retentionStore(dir, clock);
    await first.store.commitOffsets('g', [{ ...K0, offset: 1 }]);
    await first.store.close();
    clock.advance(5 * RETENTION_MS);
    const { store, step } = await retentionStore(dir, clock);
    await step(1);
    expect(await store.fetchOffsets('g')).toEqual([]);
    expect(await store.listGroups()).toEqual([]);
    await store.close();
  });
});
