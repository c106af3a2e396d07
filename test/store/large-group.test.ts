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
      message: expect.stringMatching(/snapshot would take about \d+ bytes \(80000 distinct tables/),
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
});
