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
  it('refuses the join that would take the members past 262,144 subscribed tables together, changing nothing (the member used to stay in the group, its snapshot unwritable)', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open({ dir, bucketCount: 1, durability: 'os' });
    const tables = (from: number) => Array.from({ length: 65_536 }, (_, i) => from + i);
    for (let m = 0; m < 4; m++)
      await store.heartbeat('wide', {
        memberEpoch: 0,
        memberId: `m${m}`,
        subscribedTableIds: tables(m * 65_536),
      });
    await expect(
      store.heartbeat('wide', { memberEpoch: 0, memberId: 'm4', subscribedTableIds: tables(0) }),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(/would subscribe to 327680 tables together, more than 262144/),
    });
    expect((await store.describeGroup('wide')).members.map((m) => m.memberId).sort()).toEqual([
      'm0',
      'm1',
      'm2',
      'm3',
    ]);
    // A member may still change its own subscription within the bound.
    await store.heartbeat('wide', {
      memberEpoch: (await store.describeGroup('wide')).members.find((m) => m.memberId === 'm3')!
        .memberEpoch,
      memberId: 'm3',
      subscribedTableIds: tables(1_000_000),
    });
    await store.close();
    const reopened = await OffsetStore.open({ dir, durability: 'os' });
    expect((await reopened.describeGroup('wide')).members).toHaveLength(4);
    await reopened.close();
  });
});
