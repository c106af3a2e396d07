/**
 * A call that is refused has changed nothing, and one that is let in is done whole: the appends
 * pending (pendingCommitsMax) refuse a deleteGroup before any of its tombstones, but never the
 * snapshot of a group operation that already changed the group in memory; and a clock that fails
 * in the middle of an operation, after a good reading, does not leave half of it done.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore, type OffsetStoreOptions } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';

/** A ManualClock whose readings fail (NaN) from the `failAt`-th one on, while `failAt` is set. */
class FlakyClock extends ManualClock {
  reads = 0;
  failAt: number | undefined;
  override nowMs(): number {
    this.reads++;
    if (this.failAt !== undefined && this.reads >= this.failAt) return NaN;
    return super.nowMs();
  }
}

const described = async (store: OffsetStore, groupId: string) => {
  const d = await store.describeGroup(groupId);
  return {
    groupType: d.groupType,
    state: d.state,
    groupEpoch: d.groupEpoch,
    members: d.members.map((m) => m.memberId),
    offsets: d.offsets.map((o) => o.offset),
  };
};

/** An Empty consumer group 'g' with one offset, in a store of one bucket. */
async function emptyConsumerGroup(options: Partial<OffsetStoreOptions>) {
  const dir = tempDir();
  const opened = { dir, bucketCount: 1, commitJournal: false, ...options } as OffsetStoreOptions;
  const store = await OffsetStore.open(opened);
  store.setTableLayout(1, { bucketCount: 2 });
  const joined = await store.heartbeat('g', {
    memberEpoch: 0,
    memberId: 'm1',
    subscribedTableIds: [1],
  });
  await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 10 }], {
    memberId: 'm1',
    memberEpoch: joined.memberEpoch,
  });
  await store.heartbeat('g', { memberEpoch: -1, memberId: 'm1' });
  return { store, opened };
}

describe('refusals', () => {
  for (const commitJournal of [true, false]) {
    it(`never refuses for the appends pending a caller that commits again as soon as its commit resolved (pendingCommitsMax 1, ${commitJournal ? 'with' : 'without'} the commit journal)`, async () => {
      const store = await OffsetStore.open({
        dir: tempDir(),
        bucketCount: 2,
        commitJournal,
        pendingCommitsMax: 1,
      });
      // Two callers on different offsets-buckets, so that rounds of several logs (the journal's)
      // are exercised too.
      const groups = ['g0', 'g1', 'g2', 'g3', 'g4', 'g5'];
      const a = groups.find((g) => store.bucketFor(g) === 0)!;
      const b = groups.find((g) => store.bucketFor(g) === 1)!;
      await Promise.all(
        [a, b].map(async (groupId) => {
          for (let offset = 1; offset <= 30; offset++)
            await store.commitOffsets(groupId, [{ tableId: 1, bucketId: 0, offset }]);
        }),
      );
      for (const groupId of [a, b])
        expect((await store.fetchOffsets(groupId, [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(
          30,
        );
      await store.close();
    });
  }

  it('a deleteGroup refused for the appends pending deletes nothing, not even the group record (which used to go)', async () => {
    const { store, opened } = await emptyConsumerGroup({ pendingCommitsMax: 1 });
    const before = await described(store, 'g');
    const pending = store.commitOffsets('other', [{ tableId: 9, bucketId: 0, offset: 1 }]);
    await expect(store.deleteGroup('g')).rejects.toMatchObject({
      code: 'TOO_MANY_PENDING_WRITES',
    });
    await pending;
    expect(await described(store, 'g')).toEqual(before);
    await store.close();
    const reopened = await OffsetStore.open(opened);
    expect(await described(reopened, 'g')).toEqual(before);
    // Made again once the cause is gone, it is done whole.
    await reopened.deleteGroup('g');
    await expect(reopened.describeGroup('g')).rejects.toMatchObject({
      code: 'GROUP_ID_NOT_FOUND',
    });
    await reopened.close();
  });

  it('a group operation is not refused for the appends pending once it changed the group (a static join and a removal used to stay done in memory, their retry refused for good)', async () => {
    const dir = tempDir();
    const opened = { dir, bucketCount: 1, commitJournal: false, pendingCommitsMax: 1 };
    const store = await OffsetStore.open(opened);
    store.setTableLayout(1, { bucketCount: 2 });
    await store.heartbeat('g', { memberEpoch: 0, memberId: 'm1', subscribedTableIds: [1] });
    const pending = store.commitOffsets('other', [{ tableId: 9, bucketId: 0, offset: 1 }]);
    const joined = await store.heartbeat('g', {
      memberEpoch: 0,
      memberId: 'm2',
      instanceId: 'inst-1',
      subscribedTableIds: [1],
    });
    expect(joined.memberEpoch).toBeGreaterThan(0);
    const pendingToo = store.commitOffsets('other', [{ tableId: 9, bucketId: 1, offset: 1 }]);
    expect(await store.removeMembers('g', { memberIds: ['m1'] })).toEqual([
      { memberId: 'm1', instanceId: null },
    ]);
    await Promise.all([pending, pendingToo]);
    expect((await described(store, 'g')).members).toEqual(['m2']);
    await store.close();
    const reopened = await OffsetStore.open(opened);
    expect((await described(reopened, 'g')).members).toEqual(['m2']);
    await reopened.close();
  });

  it('a clock that fails in the middle of a join or a deleteGroup, after a good reading, does not leave it half done (a member used to stay without a session timer, offsets deleted without their group)', async () => {
    for (const failAt of [2, 3, 4]) {
      const clock = new FlakyClock();
      const warnings: string[] = [];
      const { store, opened } = await emptyConsumerGroup({
        clock,
        onWarning: (w) => warnings.push(w),
        group: { assignmentIntervalMs: 0 },
      });
      // A join whose later readings fail: done whole, and its member's session runs out.
      clock.failAt = clock.reads + failAt;
      const joined = await store.heartbeat('g', {
        memberEpoch: 0,
        memberId: 'm2',
        instanceId: 'i2',
        subscribedTableIds: [1],
        sessionTimeoutMs: 1000,
      });
      clock.failAt = undefined;
      expect(joined.memberEpoch, `clock failing from read ${failAt}`).toBeGreaterThan(0);
      expect(warnings.join('\n')).toMatch(/a moment before/);
      clock.advance(1500);
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect((await described(store, 'g')).members).toEqual([]);
      // A deleteGroup whose later readings fail: its offsets and its record go together.
      clock.failAt = clock.reads + failAt;
      await store.deleteGroup('g');
      clock.failAt = undefined;
      await store.close();
      const reopened = await OffsetStore.open({ ...opened, clock: new ManualClock() });
      await expect(reopened.describeGroup('g')).rejects.toMatchObject({
        code: 'GROUP_ID_NOT_FOUND',
      });
      await reopened.close();
    }
  });

  it('a clock that fails at the first reading of a call still refuses it, changing nothing', async () => {
    const clock = new FlakyClock();
    const { store } = await emptyConsumerGroup({ clock });
    const before = await described(store, 'g');
    clock.failAt = clock.reads + 1;
    await expect(
      store.heartbeat('g', { memberEpoch: 0, memberId: 'm2', subscribedTableIds: [1] }),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    await expect(store.deleteGroup('g')).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    clock.failAt = undefined;
    expect(await described(store, 'g')).toEqual(before);
    await store.close();
  });
});
