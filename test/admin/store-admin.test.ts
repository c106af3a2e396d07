/**
 * StoreAdmin, what the CLI's group and offsets commands run, on seeded store directories: describing a
 * group (committed offsets, lag from log-end offsets, members and the owner of each bucket), planning a
 * reset without writing anything and executing it in one commit, refusing to reset or delete a group
 * with members, deleting offsets and groups, stats per offsets-bucket; and no store created where there
 * is none.
 */
import { cpSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { StoreAdmin } from '../../src/admin/index.js';
import { ManualClock, OffsetStore } from '../../src/index.js';
import { fileTempDir, tempDir } from '../support/temp-dir.js';
import { SEEDED, seedStore, seedStoreWithMember, snapshotFiles } from './admin-fixtures.js';

describe('StoreAdmin', () => {
  let seeded: string;
  let withMember: string;

  beforeAll(async () => {
    seeded = fileTempDir();
    withMember = fileTempDir();
    await Promise.all([seedStore(seeded), seedStoreWithMember(withMember)]);
  });

  function copy(dir: string): string {
    const target = tempDir();
    cpSync(dir, target, { recursive: true });
    return target;
  }

  async function withAdmin<T>(
    dir: string,
    operation: (admin: StoreAdmin) => Promise<T>,
  ): Promise<T> {
    const admin = await StoreAdmin.open(dir);
    try {
      return await operation(admin);
    } finally {
      await admin.close();
    }
  }

  it('refuses a directory without a store and does not create one', async () => {
    const missing = path.join(tempDir(), 'not-here');
    await expect(StoreAdmin.open(missing)).rejects.toThrow(
      /INVALID_CONFIG: no offset store in .*not-here: store.json not found/,
    );
    expect(existsSync(missing)).toBe(false);
  });

  it('describes a group: committed buckets, lag from log-end offsets, JSON-safe', async () => {
    const report = await withAdmin(seeded, (admin) =>
      admin.describeGroup('orders', [
        { tableId: 1, partitionId: null, bucketId: 0, offset: 1500 },
        { tableId: 2, partitionId: 7, bucketId: 0, offset: 42 },
      ]),
    );
    expect(JSON.parse(JSON.stringify(report))).toEqual(report);
    expect(report).toMatchObject({ groupId: 'orders', state: 'Empty', members: [], totalLag: 500 });
    expect(
      report.buckets.map((b) => [
        b.tableId,
        b.partitionId,
        b.bucketId,
        b.committedOffset,
        b.logEndOffset,
        b.lag,
      ]),
    ).toEqual([
      [1, null, 0, 1000, 1500, 500],
      [1, null, 1, 1001, null, null],
      [1, null, 2, 1002, null, null],
      [1, null, 3, 1003, null, null],
      [2, 7, 0, 42, 42, 0],
    ]);
    expect(report.buckets[0]).toMatchObject({
      metadata: 'host-a',
      commitTimestampMs: expect.any(Number),
      memberId: null,
    });
  });

  it('counts the lag of a bucket committed at 0 from 0, and none for one committed at a sentinel', async () => {
    const dir = copy(seeded);
    const store = await OffsetStore.open({ dir, clock: new ManualClock() });
    await store.commitOffsets('fresh', [
      { tableId: 1, bucketId: 0, offset: 0 },
      { tableId: 1, bucketId: 1, offset: -1 },
      { tableId: 1, bucketId: 2, offset: 3 },
    ]);
    await store.close();
    const report = await withAdmin(dir, (admin) =>
      admin.describeGroup(
        'fresh',
        [0, 1, 2].map((bucketId) => ({ tableId: 1, partitionId: null, bucketId, offset: 10 })),
      ),
    );
    expect(report.buckets.map((b) => [b.bucketId, b.committedOffset, b.lag])).toEqual([
      [0, 0, 10],
      [1, -1, null],
      [2, 3, 7],
    ]);
    expect(report.totalLag).toBe(17);
  });

  it('describes members with their assignment and the owner of each bucket', async () => {
    const report = await withAdmin(copy(withMember), (admin) => admin.describeGroup('busy'));
    expect(report.state).toBe('Stable');
    expect(report.members).toHaveLength(1);
    const memberId = report.members[0]!.memberId;
    expect(report.members[0]!.assignment.map((b) => b.bucketId)).toEqual([0, 1, 2, 3]);
    expect(report.buckets.map((b) => [b.bucketId, b.committedOffset, b.memberId])).toEqual([
      [0, 5, memberId],
      [1, null, memberId],
      [2, null, memberId],
      [3, null, memberId],
    ]);
  });

  it('plans a reset without writing anything, then executes it in one commit', async () => {
    const dir = copy(seeded);
    const before = snapshotFiles(dir);
    const plan = await withAdmin(dir, (admin) =>
      admin.planReset('orders', {
        target: { kind: 'shift-by', delta: -1001 },
        selection: { tableId: 1 },
      }),
    );
    expect(snapshotFiles(dir)).toEqual(before);
    expect(plan).toMatchObject({
      groupId: 'orders',
      executed: false,
      memberCount: 0,
      target: 'shift by -1001',
      selection: 'table 1',
    });
    expect(plan.rows.map((r) => [r.currentOffset, r.newOffset, r.clamped])).toEqual([
      [1000, 0, true],
      [1001, 0, false],
      [1002, 1, false],
      [1003, 2, false],
    ]);
    const executed = await withAdmin(dir, (admin) =>
      admin.executeReset('orders', {
        target: { kind: 'shift-by', delta: -1001 },
        selection: { tableId: 1 },
      }),
    );
    expect(executed.executed).toBe(true);
    expect(executed.rows.map((r) => r.newOffset)).toEqual([0, 0, 1, 2]);
    const store = await OffsetStore.open({ dir, clock: new ManualClock() });
    const offsets = await store.fetchOffsets('orders');
    await store.close();
    expect(offsets.map((o) => [o!.bucketId, o!.offset, o!.metadata])).toEqual([
      [0, 0, 'host-a'],
      [1, 0, 'host-a'],
      [2, 1, 'host-a'],
      [3, 2, 'host-a'],
      [0, 42, ''],
    ]);
  });

  it('seeds a new group by a fully named bucket, but reports an unknown group otherwise', async () => {
    const dir = copy(seeded);
    await withAdmin(dir, async (admin) => {
      await expect(
        admin.planReset('ghost', { target: { kind: 'to-offset', offset: 0 } }),
      ).rejects.toThrow(/GROUP_ID_NOT_FOUND/);
      await admin.executeReset('ghost', {
        target: { kind: 'to-offset', offset: 77 },
        selection: { tableId: 4, bucketId: 1 },
      });
      expect(
        (await admin.describeGroup('ghost')).buckets.map((b) => [
          b.tableId,
          b.bucketId,
          b.committedOffset,
        ]),
      ).toEqual([[4, 1, 77]]);
    });
  });

  it('refuses to reset or delete a group with members', async () => {
    await withAdmin(copy(withMember), async (admin) => {
      const plan = await admin.planReset('busy', { target: { kind: 'to-offset', offset: 0 } });
      expect(plan.memberCount).toBe(1);
      await expect(
        admin.executeReset('busy', { target: { kind: 'to-offset', offset: 0 } }),
      ).rejects.toThrow(/NON_EMPTY_GROUP/);
      await expect(admin.deleteGroup('busy')).rejects.toThrow(/NON_EMPTY_GROUP/);
      await expect(admin.deleteOffsets('busy', { tableId: 1, bucketId: 0 })).rejects.toThrow(
        /GROUP_SUBSCRIBED_TO_BUCKET/,
      );
    });
  });

  it("counts a classic group's members in a reset plan", async () => {
    const dir = copy(seeded);
    const clock = new ManualClock();
    const store = await OffsetStore.open({ dir, clock, group: { initialRebalanceDelayMs: 0 } });
    const joining = store.classic.joinGroup('kafka', {
      memberId: '',
      clientId: 'c',
      clientHost: '127.0.0.1',
      protocolType: 'consumer',
      sessionTimeoutMs: 60_000,
      rebalanceTimeoutMs: 60_000,
      requireKnownMemberId: false,
      protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
    });
    let joined: Awaited<typeof joining> | undefined;
    void joining.then((j) => (joined = j));
    for (let i = 0; joined === undefined && i < 2000; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      clock.advance(0);
    }
    if (joined?.outcome !== 'joined') throw new TypeError('expected to join');
    await store.classic.syncGroup('kafka', {
      memberId: joined.memberId,
      generationId: joined.generationId,
      assignments: [{ memberId: joined.memberId, assignment: Buffer.alloc(0) }],
    });
    await store.close();
    const plan = await withAdmin(dir, (admin) =>
      admin.planReset('kafka', {
        target: { kind: 'to-offset', offset: 0 },
        selection: { tableId: 1, bucketId: 0 },
      }),
    );
    expect(plan.memberCount).toBe(1);
  });

  it('deletes selected offsets, then the whole group', async () => {
    await withAdmin(copy(seeded), async (admin) => {
      const deleted = await admin.deleteOffsets('orders', { tableId: 1, bucketId: 2 });
      expect(deleted.deleted).toEqual([{ tableId: 1, partitionId: null, bucketId: 2 }]);
      expect((await admin.deleteOffsets('orders', { tableId: 9 })).deleted).toEqual([]);
      expect((await admin.describeGroup('orders')).buckets).toHaveLength(SEEDED.orders.length - 1);
      expect(await admin.deleteGroup('orders')).toEqual({
        groupId: 'orders',
        offsetsDeleted: SEEDED.orders.length - 1,
      });
      expect((await admin.listGroups()).map((g) => g.groupId)).toEqual(['billing']);
      await expect(admin.deleteGroup('orders')).rejects.toThrow(/GROUP_ID_NOT_FOUND/);
      await expect(admin.deleteOffsets('orders', {})).rejects.toThrow(/GROUP_ID_NOT_FOUND/);
    });
  });

  it('reports stats per offsets-bucket with null where there is no checkpoint', async () => {
    const stats = await withAdmin(seeded, (admin) => admin.stats());
    expect(JSON.parse(JSON.stringify(stats))).toEqual(stats);
    expect(stats).toMatchObject({
      bucketCount: 4,
      totals: { liveOffsets: SEEDED.orders.length + SEEDED.billing.length, groups: 2 },
    });
    expect(stats.buckets.every((b) => b.lastCheckpoint === null && b.state === 'ready')).toBe(true);
    expect(stats.totals.segmentCount).toBeGreaterThan(4);
  });
});
