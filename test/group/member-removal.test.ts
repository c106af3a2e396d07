/**
 * Removing members by admin request (Kafka's Admin removeMembersFromConsumerGroup), driven through the
 * coordinator test context: members restored from a snapshot, that will never heartbeat again, leave
 * the group through the same records a leave (memberEpoch -1) emits; the group becomes Empty and
 * durable as such; a static member's instance id is released.
 */
import { describe, expect, it } from 'vitest';
import { isOffsetStoreError, type OffsetStoreError } from '../../src/errors/index.js';
import { GroupTestContext } from './group-test-context.js';

async function rejectsWith(promise: Promise<unknown>, code: string): Promise<OffsetStoreError> {
  try {
    await promise;
  } catch (error) {
    expect(isOffsetStoreError(error), String(error)).toBe(true);
    expect((error as OffsetStoreError).code).toBe(code);
    return error as OffsetStoreError;
  }
  throw new TypeError(`expected ${code}, but the call succeeded`);
}

/** A Stable group g of a dynamic member `a` and a static member `s` (instance `inst`), then a restart. */
async function restoredGroup(): Promise<GroupTestContext> {
  const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
  await ctx.settle(
    ctx.member([1], { memberId: 'a' }),
    ctx.member([1], { memberId: 's', instanceId: 'inst' }),
  );
  ctx.restart(); // the members' process is gone: they come back from the snapshot and never heartbeat
  return ctx;
}

describe('removeMembers', () => {
  it('removing every member of a restored group emits the records of their leaves, empties the group durably and releases the instance id', async () => {
    const ctx = await restoredGroup();
    const epoch = ctx.coordinator.describe('g')!.groupEpoch;

    const removed = await ctx.coordinator.removeMembers('g', { all: true });

    expect(removed).toEqual([
      { memberId: 'a', instanceId: null },
      { memberId: 's', instanceId: 'inst' },
    ]);
    expect(ctx.coordinator.groupState('g')).toBe('Empty');
    expect(ctx.coordinator.hasMembers('g')).toBe(false);
    expect(ctx.coordinator.describe('g')?.groupEpoch).toBe(epoch + 2);
    expect(ctx.coordinator.metrics().armedTimers).toBe(0);
    // The same records as the two members leaving with memberEpoch -1 themselves.
    const twin = await restoredGroup();
    await twin.heartbeat({ memberId: 'a', memberEpoch: -1 });
    await twin.heartbeat({ memberId: 's', memberEpoch: -1, instanceId: 'inst' });
    expect(ctx.records).toEqual(twin.records);
    // Durable: the Empty snapshot was written, and a restart restores Empty.
    expect(ctx.writer.latest.get('g')).toMatchObject({ groupEpoch: epoch + 2, members: [] });
    const coordinator = ctx.restart();
    expect(coordinator.groupState('g')).toBe('Empty');
    expect(coordinator.hasMembers('g')).toBe(false);
    // The instance id is free: a new incarnation joins without UNRELEASED_INSTANCE_ID and gets every bucket.
    const back = ctx.member([1], { memberId: 's2', instanceId: 'inst' });
    await back.beat();
    expect(back.owned).toHaveLength(4);
  });

  it('removes by member id or by instance id, a static member away with epoch -2 included', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 6 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    const s = ctx.member([1], { memberId: 's', instanceId: 'inst' });
    await ctx.settle(a, b, s);
    await s.leave(-2);
    expect(
      ctx.coordinator.describe('g')?.members.find((m) => m.memberId === 's')?.memberEpoch,
    ).toBe(-2);

    expect(await ctx.coordinator.removeMembers('g', { instanceIds: ['inst'] })).toEqual([
      { memberId: 's', instanceId: 'inst' },
    ]);
    expect(await ctx.coordinator.removeMembers('g', { memberIds: ['b', 'b'] })).toEqual([
      { memberId: 'b', instanceId: null },
    ]);
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['a']);
    await ctx.settle(a);
    expect(a.owned).toHaveLength(6);
    ctx.expectExclusiveOwnership();
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
    expect(ctx.writer.latest.get('g')?.members.map((m) => m.memberId)).toEqual(['a']);
  });

  it('refuses an id that is not in the group with UNKNOWN_MEMBER_ID and removes nothing', async () => {
    const ctx = await restoredGroup();
    const before = ctx.coordinator.inspect('g');
    const records = ctx.records.length;
    const writes = ctx.writer.writes.length;
    const unknown = await rejectsWith(
      ctx.coordinator.removeMembers('g', { memberIds: ['a', 'ghost'] }),
      'UNKNOWN_MEMBER_ID',
    );
    expect(unknown.message).toMatch(/ghost/);
    await rejectsWith(
      ctx.coordinator.removeMembers('g', { instanceIds: ['inst', 'nope'] }),
      'UNKNOWN_MEMBER_ID',
    );
    await rejectsWith(
      ctx.coordinator.removeMembers('other', { memberIds: ['a'] }),
      'UNKNOWN_MEMBER_ID',
    );
    expect(await ctx.coordinator.removeMembers('other', { all: true })).toEqual([]);
    expect(ctx.coordinator.inspect('g')).toEqual(before);
    expect(ctx.records).toHaveLength(records);
    expect(ctx.writer.writes).toHaveLength(writes);
    expect(ctx.coordinator.groupIds()).toEqual(['g']);
  });

  it('rejects a malformed request: INVALID_REQUEST for a wrong selection, TypeError for wrong types', async () => {
    const ctx = await restoredGroup();
    for (const request of [
      {},
      { all: false },
      { all: true, memberIds: ['a'] },
      { memberIds: ['a'], instanceIds: ['inst'] },
      { memberIds: [] },
      { instanceIds: [''] },
    ]) {
      await rejectsWith(ctx.coordinator.removeMembers('g', request), 'INVALID_REQUEST');
    }
    for (const request of [
      null,
      { all: 'yes' },
      { memberIds: 'a' },
      { memberIds: [7] },
      { instanceIds: [null] },
    ]) {
      await expect(ctx.coordinator.removeMembers('g', request as never)).rejects.toBeInstanceOf(
        TypeError,
      );
    }
    await rejectsWith(ctx.coordinator.removeMembers('', { all: true }), 'INVALID_GROUP_ID');
    expect(ctx.coordinator.describe('g')?.members).toHaveLength(2);
  });

  it('removing some members of a Stable group is durable although the others never heartbeat again', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await ctx.settle(a, b);
    const epoch = ctx.coordinator.describe('g')!.groupEpoch;
    ctx.restart();

    expect(await ctx.coordinator.removeMembers('g', { memberIds: ['a'] })).toEqual([
      { memberId: 'a', instanceId: null },
    ]);
    expect(ctx.coordinator.groupState('g')).toBe('Reconciling'); // b has yet to take a's buckets

    // The process ends here: the restart must not bring a back.
    const coordinator = ctx.restart();
    const restored = coordinator.describe('g')!;
    expect(restored.members.map((m) => m.memberId)).toEqual(['b']);
    expect(restored.groupEpoch).toBe(epoch + 1);
    expect(restored.state).toBe('Reconciling'); // restored as it stood
    expect(restored.members[0]!.assignment).toEqual(b.owned);
    // b comes back at its epoch, gets a's buckets and the group is Stable again.
    await ctx.settle(b);
    expect(b.owned).toHaveLength(4);
    ctx.expectExclusiveOwnership();
    expect(ctx.writer.latest.get('g')?.members.map((m) => m.memberId)).toEqual(['b']);
  });
});
