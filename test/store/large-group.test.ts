/**
 * Groups larger than one batch can hold: with a 200-byte group id, the tombstones of 200k committed
 * offsets take ~46 MB, far over the log's batch size limit (8 MiB); deleting or expiring the group
 * must still work.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';

const OFFSETS = 200_000;
const CHUNK = 20_000;
const GROUP = `huge-${'x'.repeat(195)}`;

async function bigGroup(store: OffsetStore): Promise<void> {
  for (let start = 0; start < OFFSETS; start += CHUNK) {
    await store.commitOffsets(
      GROUP,
      Array.from({ length: CHUNK }, (_, i) => ({ tableId: 1, bucketId: start + i, offset: i })),
    );
  }
}

describe('a group beyond one batch', () => {
  it('deleteGroup tombstones 200k offsets in bounded batches', async () => {
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 1, durability: 'os' });
    await bigGroup(store);
    expect((await store.stats()).totals.liveOffsets).toBe(OFFSETS);
    await store.deleteGroup(GROUP);
    expect(await store.listGroups()).toEqual([]);
    expect((await store.stats()).totals.liveOffsets).toBe(0);
    await store.close();
  });

  it('retention expires 200k offsets of a group in bounded batches', async () => {
    const clock = new ManualClock();
    const dir = tempDir();
    const store = await OffsetStore.open({
      dir,
      bucketCount: 1,
      durability: 'os',
      clock,
      offsetsRetentionMs: 1_000,
      offsetsRetentionCheckIntervalMs: 1_000,
    });
    await bigGroup(store);
    clock.advance(1_000);
    for (let i = 0; i < 200 && (await store.stats()).totals.liveOffsets > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await store.stats()).totals.liveOffsets).toBe(0);
    await store.close();
    const reopened = await OffsetStore.open({ dir, durability: 'os', clock });
    expect((await reopened.stats()).totals.liveOffsets).toBe(0);
    await reopened.close();
  });
});

describe('a consumer group whose subscriptions would outgrow its snapshot', () => {
  it('refuses the join that would take its snapshot past one batch, changing nothing: the group stays writable (the member used to stay in it, and every later write failed)', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open({ dir, bucketCount: 1, durability: 'os' });
    const tables = (from: number) => Array.from({ length: 40_000 }, (_, i) => from + i);
    // Every table with a layout, as every Kafka topic has: each adds its layout and its assignment.
    for (const t of [...tables(0), ...tables(40_000)]) store.setTableLayout(t, { bucketCount: 1 });
    await store.heartbeat('wide', {
      memberEpoch: 0,
      memberId: 'm0',
      subscribedTableIds: tables(0),
    });
    // The same tables again: the second member adds little (its subscription, its share).
    await store.heartbeat('wide', {
      memberEpoch: 0,
      memberId: 'm1',
      subscribedTableIds: tables(0),
    });
    // 40,000 more tables: estimated past the budget that keeps a snapshot inside one 8 MiB batch
    // (about 6.7 MB written; the 65,536 more of a first version of this test made 11 MB).
    await expect(
      store.heartbeat('wide', {
        memberEpoch: 0,
        memberId: 'm2',
        subscribedTableIds: tables(40_000),
      }),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(/snapshot could take \d+ bytes \(80000 distinct tables/),
    });
    const members = async (s: OffsetStore) =>
      (await s.describeGroup('wide')).members.map((m) => m.memberId).sort();
    expect(await members(store)).toEqual(['m0', 'm1']);
    // Still written to: a member's heartbeat and a commit of the group.
    const m0 = (await store.describeGroup('wide')).members.find((m) => m.memberId === 'm0')!;
    await store.heartbeat('wide', { memberId: 'm0', memberEpoch: m0.memberEpoch });
    await store.commitOffsets('wide', [{ tableId: 0, bucketId: 0, offset: 1 }], {
      memberId: 'm0',
      memberEpoch: (await store.describeGroup('wide')).members.find((m) => m.memberId === 'm0')!
        .memberEpoch,
    });
    await store.close();
    const reopened = await OffsetStore.open({ dir, durability: 'os' });
    expect(await members(reopened)).toEqual(['m0', 'm1']);
    await reopened.close();
  });

  it('refuses a join to a table too large for one snapshot, and a layout that would make a live group too large, changing nothing (the group used to stay with the member and fail every heartbeat)', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const store = await OffsetStore.open({ dir, clock, bucketCount: 1, durability: 'os' });
    // 2M buckets: within a layout's bounds, past what one group's snapshot holds.
    store.setTableLayout(2, { bucketCount: 2 ** 20, partitionIds: [0, 1] });
    await expect(
      store.heartbeat('g', { memberEpoch: 0, memberId: 'A', subscribedTableIds: [2] }),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(/snapshot could take \d+ bytes .*2097152 buckets/),
    });
    await expect(store.describeGroup('g')).rejects.toMatchObject({ code: 'GROUP_ID_NOT_FOUND' });
    // A live group on a small table: growing it past the snapshot's limit is refused.
    store.setTableLayout(1, { bucketCount: 8 });
    let a = await store.heartbeat('g', { memberEpoch: 0, memberId: 'A', subscribedTableIds: [1] });
    expect(() => store.setTableLayout(1, { bucketCount: 2 ** 20, partitionIds: [0, 1] })).toThrow(
      expect.objectContaining({
        code: 'INVALID_REQUEST',
        message: expect.stringContaining('group g'),
      }),
    );
    // Nothing changed: the member heartbeats, keeps its buckets, and commits.
    for (let i = 0; i < 3; i++) {
      clock.advance(20_000);
      a = await store.heartbeat('g', {
        memberId: 'A',
        memberEpoch: a.memberEpoch,
        ownedBuckets: (await store.describeGroup('g')).members[0]!.assignment,
      });
    }
    const described = await store.describeGroup('g');
    expect(described.state).toBe('Stable');
    expect(described.members[0]!.assignment).toHaveLength(8);
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 5 }], {
      memberId: 'A',
      memberEpoch: a.memberEpoch,
    });
    // A growth that fits is applied.
    store.setTableLayout(1, { bucketCount: 64 });
    await store.close();
  });

  it('a delete of more offsets than one batch holds is refused whole or done whole (a refusal for the appends pending used to leave most of it done)', async () => {
    const dir = tempDir();
    const options = { dir, bucketCount: 1, pendingCommitsMax: 2, durability: 'os' as const };
    const store = await OffsetStore.open(options);
    const N = 25_000; // three batches of tombstones
    const offsets = Array.from({ length: N }, (_, i) => ({ tableId: 1, bucketId: i, offset: i }));
    for (const group of ['a', 'b', 'c']) await store.commitOffsets(group, offsets);
    // Two commits pending fill the log's queue: the deletes are refused, and nothing is deleted.
    const pending = [
      store.commitOffsets('x', [{ tableId: 1, bucketId: 0, offset: 1 }]),
      store.commitOffsets('y', [{ tableId: 1, bucketId: 0, offset: 1 }]),
    ];
    const refused = [
      store.deleteGroup('a'),
      store.deleteOffsets(
        'b',
        offsets.map(({ tableId, bucketId }) => ({ tableId, bucketId })),
      ),
    ];
    for (const call of refused)
      await expect(call).rejects.toMatchObject({ code: 'TOO_MANY_PENDING_WRITES' });
    await Promise.all(pending);
    expect(await store.fetchOffsets('a')).toHaveLength(N);
    expect(await store.fetchOffsets('b')).toHaveLength(N);
    // With room, the same calls are done whole, the group's record with them.
    await store.deleteGroup('a');
    await store.deleteOffsets(
      'b',
      offsets.map(({ tableId, bucketId }) => ({ tableId, bucketId })),
    );
    await store.deleteGroup('c');
    await store.close();
    const reopened = await OffsetStore.open(options);
    for (const group of ['a', 'b', 'c']) expect(await reopened.fetchOffsets(group)).toEqual([]);
    expect((await reopened.listGroups()).map((g) => g.groupId).sort()).toEqual(['x', 'y']);
    await reopened.close();
  });

  it('a reopened store told its 20,000 layouts again does not check its groups against each (that took minutes, the event loop held)', async () => {
    const dir = tempDir();
    const options = { dir, bucketCount: 1, durability: 'os' as const };
    const tables = Array.from({ length: 20_000 }, (_, i) => i + 1);
    let store = await OffsetStore.open(options);
    for (const t of tables) store.setTableLayout(t, { bucketCount: 1 });
    for (const memberId of ['m1', 'm2'])
      await store.heartbeat('g', { memberEpoch: 0, memberId, subscribedTableIds: tables });
    await store.close();
    store = await OffsetStore.open(options);
    const started = performance.now();
    for (const t of tables) store.setTableLayout(t, { bucketCount: 1 });
    // Generous: ~0.1 s here, and minutes when each call estimated the group's snapshot.
    expect(performance.now() - started).toBeLessThan(20_000);
    await store.close();
  });
});
