/**
 * The store's admin operations: listGroups and describeGroup (sorted, each group's offsets-bucket,
 * JSON-safe); deleteOffsets and deleteGroup remove exactly what was named, durably, leaving neighbours
 * in the same offsets-bucket alone and writing nothing when nothing matches; resetOffsets of a group
 * without members; removeMembers takes out members a process left behind, so the group can be reset and
 * deleted; unknown groups and members are GROUP_ID_NOT_FOUND and UNKNOWN_MEMBER_ID.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import { settleGroup } from '../support/settle-group.js';
import { tempDir } from '../support/temp-dir.js';
import { groupsSharingABucket, imageOf, openStore } from './store-fixtures.js';

const T0 = 1_700_000_000_000;

describe('listGroups / describeGroup', () => {
  it('list every group with committed offsets, sorted, with its offsets-bucket; describe shows its offsets', async () => {
    const clock = new ManualClock(T0);
    const store = await openStore(tempDir(), { clock, bucketCount: 3 });
    expect(await store.listGroups()).toEqual([]);
    for (const groupId of ['zeta', 'alpha', 'mü', 'beta']) {
      await store.commitOffsets(groupId, [
        { tableId: 1, bucketId: 0, offset: groupId.length },
        { tableId: 2, partitionId: 3, bucketId: 1, offset: 7, metadata: groupId },
      ]);
    }
    expect(await store.listGroups()).toEqual(
      ['alpha', 'beta', 'mü', 'zeta'].map((groupId) => ({
        groupId,
        state: 'Empty',
        offsetsBucket: store.bucketFor(groupId),
        groupType: 'classic',
        protocolType: '',
      })),
    );
    const description = await store.describeGroup('mü');
    expect(description).toMatchObject({
      groupId: 'mü',
      offsetsBucket: store.bucketFor('mü'),
      state: 'Empty',
      members: [],
      groupType: 'classic',
      protocolType: '',
      classic: null,
    });
    expect([...description.offsets].sort((a, b) => a.tableId - b.tableId)).toEqual([
      {
        tableId: 1,
        partitionId: null,
        bucketId: 0,
        offset: 2,
        leaderEpoch: -1,
        metadata: '',
        commitTimestampMs: T0,
      },
      {
        tableId: 2,
        partitionId: 3,
        bucketId: 1,
        offset: 7,
        leaderEpoch: -1,
        metadata: 'mü',
        commitTimestampMs: T0,
      },
    ]);
    expect(JSON.parse(JSON.stringify(description)), 'JSON-safe').toEqual(description);
    expect((await store.stats()).totals).toMatchObject({ liveOffsets: 8, groups: 4 });
    await store.close();
  });

  it('reject unknown groups with GROUP_ID_NOT_FOUND for describe, deleteGroup and deleteOffsets', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('known', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await expect(store.describeGroup('unknown')).rejects.toMatchObject({
      code: 'GROUP_ID_NOT_FOUND',
      errno: 69,
    });
    await expect(store.deleteGroup('unknown')).rejects.toMatchObject({
      code: 'GROUP_ID_NOT_FOUND',
    });
    await expect(
      store.deleteOffsets('unknown', [{ tableId: 1, bucketId: 0 }]),
    ).rejects.toMatchObject({ code: 'GROUP_ID_NOT_FOUND' });
    await store.close();
  });
});

describe('deleteOffsets', () => {
  it('deletes exactly the listed buckets durably; deleting the last one makes the group disappear', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    const { a, b } = groupsSharingABucket(store);
    const buckets = [
      { tableId: 1, bucketId: 0 },
      { tableId: 1, partitionId: 0, bucketId: 0 },
      { tableId: 2, bucketId: 5 },
    ];
    await store.commitOffsets(
      a,
      buckets.map((x) => ({ ...x, offset: 10 })),
    );
    await store.commitOffsets(
      b,
      buckets.map((x) => ({ ...x, offset: 20 })),
    );

    await store.deleteOffsets(a, [
      { tableId: 1, partitionId: null, bucketId: 0 },
      { tableId: 9, bucketId: 9 },
    ]);
    expect((await store.fetchOffsets(a, buckets)).map((o) => o?.offset ?? null)).toEqual([
      null,
      10,
      10,
    ]);
    expect(
      (await store.fetchOffsets(b, buckets)).map((o) => o?.offset ?? null),
      'the other group is untouched',
    ).toEqual([20, 20, 20]);
    expect((await store.describeGroup(a)).offsets).toHaveLength(2);

    await store.deleteOffsets(a, [
      { tableId: 1, partitionId: 0, bucketId: 0 },
      { tableId: 2, bucketId: 5 },
    ]);
    expect((await store.listGroups()).map((g) => g.groupId)).toEqual([b]);
    expect(await store.fetchOffsets(a)).toEqual([]);
    await expect(store.describeGroup(a)).rejects.toMatchObject({ code: 'GROUP_ID_NOT_FOUND' });
    const image = await imageOf(store);
    await store.close();

    const reopened = await openStore(dir);
    expect(await imageOf(reopened)).toEqual(image);
    await reopened.close();
  });

  it('writes nothing when none of the listed buckets has a committed offset', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    const before = (await store.stats()).totals.logBytes;
    await store.deleteOffsets('g', [
      { tableId: 1, bucketId: 1 },
      { tableId: 1, partitionId: 0, bucketId: 0 },
    ]);
    await store.deleteOffsets('g', []);
    expect((await store.stats()).totals.logBytes).toBe(before);
    expect((await store.fetchOffsets('g'))[0]?.offset).toBe(1);
    await store.close();
  });
});

describe('deleteGroup', () => {
  it('takes effect where it is called: a commit called right after it is kept, one called before it is gone', async () => {
    const store = await openStore(tempDir(), { clock: new ManualClock(T0) });
    const member = await store.heartbeat('g', { memberEpoch: 0, subscribedTableIds: [1] });
    await store.heartbeat('g', { memberId: member.memberId, memberEpoch: -1 }); // Empty, with a snapshot
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    const before = store.commitOffsets('g', [{ tableId: 1, bucketId: 1, offset: 2 }]);
    const deleted = store.deleteGroup('g');
    const after = store.commitOffsets('g', [{ tableId: 1, bucketId: 2, offset: 3 }]);
    await Promise.all([before, deleted, after]);
    expect((await store.fetchOffsets('g')).map((o) => [o!.bucketId, o!.offset])).toEqual([[2, 3]]);
    await store.close();
  });

  it('removes every offset of the group durably, leaves its neighbours, and lets the id be used afresh', async () => {
    const dir = tempDir();
    const clock = new ManualClock(T0);
    const store = await openStore(dir, { clock });
    const { a, b } = groupsSharingABucket(store);
    await store.commitOffsets(
      a,
      Array.from({ length: 12 }, (_, i) => ({ tableId: 1, bucketId: i, offset: i })),
    );
    await store.commitOffsets(b, [{ tableId: 1, bucketId: 0, offset: 99 }]);
    await store.deleteGroup(a);
    expect((await store.listGroups()).map((g) => g.groupId)).toEqual([b]);
    expect(await store.fetchOffsets(a)).toEqual([]);
    expect(await store.fetchOffsets(a, [{ tableId: 1, bucketId: 3 }])).toEqual([null]);
    expect((await store.stats()).totals.liveOffsets).toBe(1);
    await expect(store.deleteGroup(a), 'a deleted group is unknown').rejects.toMatchObject({
      code: 'GROUP_ID_NOT_FOUND',
    });
    await store.close();

    const reopened = await openStore(dir, { clock });
    expect((await reopened.listGroups()).map((g) => g.groupId)).toEqual([b]);
    expect(await reopened.fetchOffsets(a)).toEqual([]);
    clock.advance(5);
    await reopened.commitOffsets(a, [{ tableId: 1, bucketId: 3, offset: 1000 }]);
    expect(await reopened.fetchOffsets(a)).toEqual([
      {
        tableId: 1,
        partitionId: null,
        bucketId: 3,
        offset: 1000,
        leaderEpoch: -1,
        metadata: '',
        commitTimestampMs: T0 + 5,
      },
    ]);
    await reopened.close();
  });
});

describe('resetOffsets', () => {
  it('overwrites the given buckets of a group without members and leaves the others', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    await store.commitOffsets('g', [
      { tableId: 1, bucketId: 0, offset: 500 },
      { tableId: 1, bucketId: 1, offset: 500 },
    ]);
    await store.resetOffsets('g', [
      { tableId: 1, bucketId: 0, offset: 3, metadata: 'rewound' },
      { tableId: 1, bucketId: 2, offset: 0 },
    ]);
    const expected = [
      [1, 0, 3, 'rewound'],
      [1, 1, 500, ''],
      [1, 2, 0, ''],
    ];
    const fetched = () =>
      store.fetchOffsets('g', [
        { tableId: 1, bucketId: 0 },
        { tableId: 1, bucketId: 1 },
        { tableId: 1, bucketId: 2 },
      ]);
    expect((await fetched()).map((o) => [o!.tableId, o!.bucketId, o!.offset, o!.metadata])).toEqual(
      expected,
    );
    await store.close();
    const reopened = await openStore(dir);
    expect((await reopened.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(3);
    await reopened.close();
  });
});

describe('removeMembers', () => {
  /** A store in `dir` where group g has members a process left behind (closed without leave()), and a commit. */
  async function leftBehind(dir: string, clock: ManualClock): Promise<void> {
    const store = await openStore(dir, { clock });
    store.setTableLayout(1, { bucketCount: 4 });
    const members = [
      await store.joinGroup('g', { subscribedTableIds: [1] }),
      await store.joinGroup('g', { subscribedTableIds: [1], instanceId: 'host-b' }),
    ];
    await settleGroup(members, { clock, describe: (groupId) => store.describeGroup(groupId) });
    await members[0]!.commit([
      { tableId: 1, bucketId: members[0]!.assignment[0]!.bucketId, offset: 5 },
    ]);
    await store.close();
  }

  it('takes out the members a process left behind, durably, so the group can be reset and deleted', async () => {
    const dir = tempDir();
    const clock = new ManualClock(T0);
    await leftBehind(dir, clock);

    const store = await openStore(dir, { clock });
    const restored = (await store.describeGroup('g')).members;
    expect(restored).toHaveLength(2);
    await expect(
      store.resetOffsets('g', [{ tableId: 1, bucketId: 0, offset: 0 }]),
    ).rejects.toMatchObject({ code: 'NON_EMPTY_GROUP' });
    const removed = await store.removeMembers('g', { all: true });
    expect(removed).toEqual(
      restored
        .map((m) => ({ memberId: m.memberId, instanceId: m.instanceId }))
        .sort((a, b) => (a.memberId < b.memberId ? -1 : 1)),
    );
    expect(removed.map((m) => m.instanceId).sort()).toEqual(['host-b', null]);
    expect(await store.listGroups()).toEqual([
      {
        groupId: 'g',
        state: 'Empty',
        offsetsBucket: store.bucketFor('g'),
        groupType: 'consumer',
        protocolType: 'consumer',
      },
    ]);
    await store.close();

    const reopened = await openStore(dir, { clock });
    expect((await reopened.describeGroup('g')).state).toBe('Empty');
    await reopened.resetOffsets('g', [{ tableId: 1, bucketId: 0, offset: 0 }]);
    await reopened.deleteGroup('g');
    expect(await reopened.listGroups()).toEqual([]);
    await reopened.close();
  });

  it('GROUP_ID_NOT_FOUND for an unknown group, UNKNOWN_MEMBER_ID for an id not in the group (nothing removed)', async () => {
    const dir = tempDir();
    const clock = new ManualClock(T0);
    await leftBehind(dir, clock);
    const store = await openStore(dir, { clock });
    await store.commitOffsets('offsets-only', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await expect(store.removeMembers('ghost', { all: true })).rejects.toMatchObject({
      code: 'GROUP_ID_NOT_FOUND',
      errno: 69,
    });
    await expect(store.removeMembers('g', { memberIds: ['ghost'] })).rejects.toMatchObject({
      code: 'UNKNOWN_MEMBER_ID',
      errno: 25,
    });
    await expect(store.removeMembers('g', { instanceIds: ['host-a'] })).rejects.toMatchObject({
      code: 'UNKNOWN_MEMBER_ID',
    });
    expect(await store.removeMembers('offsets-only', { all: true })).toEqual([]);
    expect((await store.describeGroup('g')).members).toHaveLength(2);
    expect(await store.removeMembers('g', { instanceIds: ['host-b'] })).toEqual([
      { memberId: expect.any(String), instanceId: 'host-b' },
    ]);
    expect((await store.describeGroup('g')).members.map((m) => m.instanceId)).toEqual([null]);
    await store.close();
  });
});
