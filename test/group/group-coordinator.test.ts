/**
 * The group coordinator, driven through the test context on a manual clock: joins and heartbeats,
 * reconciliation (a bucket moves only after its owner releases it), epoch fencing, leaves of dynamic and
 * static members, session and rebalance timeouts, paced target assignment, layout changes, snapshots
 * written after every change and restored after a restart (a rebalance in flight goes on), commit
 * fencing, serialized operations; and replaying the emitted records gives the coordinator's state.
 */
import { describe, expect, it } from 'vitest';
import { isOffsetStoreError, OffsetStoreError } from '../../src/errors/index.js';
import { bucketKey, type GroupSnapshot, type TableBucket } from '../../src/group/index.js';
import type { Clock, Timer } from '../../src/util/index.js';
import { ManualClock } from '../../src/util/index.js';
import { buckets, GroupTestContext, range } from './group-test-context.js';
import { SteppingClock } from '../support/stepping-clock.js';

/** Bucket keys as strings, for sets and sorted comparisons in tests. */
const keyOf = (ref: TableBucket): string => String(bucketKey(ref));

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

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

/** A member's current assignment, as the coordinator holds it. */
function assignedOf(ctx: GroupTestContext, memberId: string): TableBucket[] {
  return ctx.coordinator.inspect('g')!.members.find((m) => m.memberId === memberId)!.assigned;
}

function keys(refs: readonly TableBucket[]): string[] {
  return refs.map(keyOf).sort();
}

describe('join and heartbeat', () => {
  it('a first join gets a generated member id, epoch 1 and every bucket', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const response = await ctx.heartbeat({ memberEpoch: 0, subscribedTableIds: [1] });
    expect(response.memberId).toMatch(UUID);
    expect(response.memberEpoch).toBe(1);
    expect(response.heartbeatIntervalMs).toBe(5000);
    expect(keys(response.assignment ?? [])).toEqual(keys(buckets(1, range(4))));
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    expect(ctx.writer.writesFor('g')).toHaveLength(1);
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
  });

  it('refreshes several members onto new tables in one epoch and one target; unknown members and unchanged ones are left alone, malformed ids refused', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 }, 2: { bucketCount: 4 } } });
    const [a, b] = [ctx.member([1]), ctx.member([1])];
    await a.beat();
    await b.beat();
    await ctx.settle(a, b);
    const epoch = ctx.coordinator.inspect('g')!.groupEpoch;
    const move = (from: number[], to: number[]) => ({ from, to });
    await ctx.coordinator.refreshSubscriptions(
      'g',
      new Map([
        [a.memberId!, move([1], [1, 2])],
        [b.memberId!, move([1], [1, 2])],
        ['ghost', move([1], [2])],
      ]),
    );
    const after = ctx.coordinator.inspect('g')!;
    expect(after.groupEpoch).toBe(epoch + 1);
    const description = ctx.coordinator.describe('g')!;
    for (const m of description.members) {
      expect(m.subscribedTableIds).toEqual([1, 2]);
      expect(m.targetAssignment.filter((t) => t.tableId === 2)).toHaveLength(2);
    }
    expect(description.members.map((m) => m.memberId)).not.toContain('ghost');
    // Nothing new, or a member no longer on the tables the caller saw (it moved itself since):
    // no epoch, no write.
    const writes = ctx.writer.writes.length;
    await ctx.coordinator.refreshSubscriptions('g', new Map([[a.memberId!, move([1], [1, 2])]]));
    await ctx.coordinator.refreshSubscriptions('g', new Map([[a.memberId!, move([2], [1])]]));
    expect(ctx.coordinator.inspect('g')!.groupEpoch).toBe(epoch + 1);
    expect(ctx.writer.writes).toHaveLength(writes);
    expect(ctx.coordinator.describe('g')!.members[0]!.subscribedTableIds).toEqual([1, 2]);
    await expect(
      ctx.coordinator.refreshSubscriptions('g', new Map([[a.memberId!, move([1, 2], [2, 1])]])),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
  });

  it("refuses a subscription that would take the group's snapshot past snapshotBytesMax (a log of 1 MiB batches), changing nothing", async () => {
    const ctx = new GroupTestContext({ snapshotBytesMax: 896 * 1024 });
    // ~84 bytes a distinct subscribed table: 10,000 fit in 896 KiB, 10,000 more do not.
    const tables = (from: number) => Array.from({ length: 10_000 }, (_, i) => from + i);
    const first = await ctx.heartbeat({ memberEpoch: 0, subscribedTableIds: tables(1) });
    expect(first.memberEpoch).toBe(1);
    const writes = ctx.writer.writes.length;
    await expect(
      ctx.heartbeat({ memberEpoch: 0, subscribedTableIds: tables(20_000) }),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining(`more than ${896 * 1024}: it must fit in one batch`),
    });
    expect(ctx.coordinator.inspect('g')?.members).toHaveLength(1);
    expect(ctx.writer.writes).toHaveLength(writes);
  });

  it('refuses a layout a live group could not be snapshotted with, and a heartbeat that would adopt one, changing nothing: the member still times out (it used to be re-armed by every refused heartbeat)', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 8 } } });
    const a = ctx.member([1], { memberId: 'a' });
    await ctx.settle(a);
    // 2M buckets: past what a group of them could write.
    const huge = { bucketCount: 2 ** 20, partitionIds: [0, 1] };
    expect(() => ctx.coordinator.checkTableLayout(1, huge)).toThrow(
      expect.objectContaining({
        code: 'INVALID_REQUEST',
        message: expect.stringMatching(
          /table 1 laid out as 1048576 buckets x 2 partitions, group g/,
        ),
      }),
    );
    // A layout set without the check (a coordinator that was still loading when it came): the
    // heartbeat that would adopt it is refused before anything changes.
    ctx.coordinator.setTableLayout(1, huge);
    const writes = ctx.writer.writes.length;
    const records = ctx.records.length;
    ctx.clock.advance(20_000);
    await expect(a.beat()).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('with the tables as they are laid out now'),
    });
    expect(ctx.writer.writes).toHaveLength(writes);
    expect(ctx.records).toHaveLength(records);
    // Not re-armed by the refusal: its session (45 s from its last accepted heartbeat) runs out.
    ctx.clock.advance(30_000);
    await Promise.resolve();
    expect(ctx.coordinator.describe('g')?.members ?? []).toEqual([]);
    await expect(a.beat()).rejects.toMatchObject({ code: 'UNKNOWN_MEMBER_ID' });
  });

  it('refuses a join when the clock cannot be read, before anything changes (the member used to stay, with no session timer)', async () => {
    class BrokenClock extends ManualClock {
      broken = false;
      override nowMs(): number {
        if (this.broken)
          throw new OffsetStoreError('INVALID_CONFIG', 'options.clock.nowMs() returned NaN');
        return super.nowMs();
      }
    }
    const clock = new BrokenClock();
    const ctx = new GroupTestContext({ clock, layouts: { 1: { bucketCount: 4 } } });
    clock.broken = true;
    await expect(
      ctx.heartbeat({ memberEpoch: 0, memberId: 'A', subscribedTableIds: [1] }),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    clock.broken = false;
    expect(ctx.coordinator.describe('g')).toBeNull();
    expect(ctx.records).toHaveLength(0);
    // A member that joins once the clock reads again times out as usual.
    await ctx.heartbeat({ memberEpoch: 0, memberId: 'B', subscribedTableIds: [1] });
    ctx.clock.advance(10 * 60_000);
    await Promise.resolve();
    expect(ctx.coordinator.describe('g')?.members ?? []).toEqual([]);
  });

  it('a heartbeat with nothing new carries no assignment and emits no record', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1]);
    await a.beat();
    const recordCount = ctx.records.length;
    const response = await a.beat();
    expect(response.assignment).toBeUndefined();
    expect(response.memberEpoch).toBe(1);
    expect(ctx.records).toHaveLength(recordCount);
  });

  it('rejects malformed requests with INVALID_REQUEST / INVALID_GROUP_ID / TypeError', async () => {
    const ctx = new GroupTestContext({
      heartbeatIntervalMs: 3000,
      layouts: { 1: { bucketCount: 4 } },
    });
    await rejectsWith(ctx.heartbeat({ memberEpoch: 0 }), 'INVALID_REQUEST');
    await rejectsWith(ctx.heartbeat({ memberEpoch: -3, memberId: 'x' }), 'INVALID_REQUEST');
    await rejectsWith(ctx.heartbeat({ memberEpoch: 2 }), 'INVALID_REQUEST');
    await rejectsWith(
      ctx.heartbeat({ memberEpoch: 0, subscribedTableIds: [1], assignor: 'sticky' }),
      'INVALID_REQUEST',
    );
    await rejectsWith(
      ctx.heartbeat({ memberEpoch: 0, subscribedTableIds: [1], ownedBuckets: buckets(1, [0]) }),
      'INVALID_REQUEST',
    );
    await rejectsWith(
      ctx.heartbeat({ memberEpoch: 0, subscribedTableIds: [-1] }),
      'INVALID_REQUEST',
    );
    await rejectsWith(
      ctx.heartbeat({ memberEpoch: 0, subscribedTableIds: [1], sessionTimeoutMs: 0 }),
      'INVALID_REQUEST',
    );
    await rejectsWith(ctx.heartbeat({ memberEpoch: -2, memberId: 'x' }), 'INVALID_REQUEST');
    await rejectsWith(
      ctx.coordinator.heartbeat('', { memberEpoch: 0, subscribedTableIds: [1] }),
      'INVALID_GROUP_ID',
    );
    await expect(ctx.heartbeat({ memberEpoch: '1' } as never)).rejects.toBeInstanceOf(TypeError);
    const ok = await ctx.heartbeat({ memberEpoch: 0, subscribedTableIds: [1, 1] });
    expect(ok.heartbeatIntervalMs).toBe(3000);
  });

  it('counts the distinct tables of a subscription against its limit of 65,536 (duplicates ignored)', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const all = range(65_536);
    const joined = await ctx.heartbeat({ memberEpoch: 0, subscribedTableIds: [...all, 1] });
    expect(joined.memberEpoch).toBeGreaterThan(0);
    await expect(
      ctx.heartbeat({ memberEpoch: 0, memberId: 'other', subscribedTableIds: [...all, 65_536] }),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('subscribedTableIds holds more than 65536 distinct tables'),
    });
  });

  it('tells a member whose session is shorter than three heartbeat intervals to heartbeat at a third of it, so it stays', async () => {
    for (const [settings, join, interval] of [
      [{ sessionTimeoutMs: 3000 }, {}, 1000],
      [{}, { sessionTimeoutMs: 1200 }, 400],
    ] as const) {
      const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } }, ...settings });
      const a = ctx.member([1]);
      const joined = await a.beat(join);
      expect(joined.heartbeatIntervalMs).toBe(interval);
      for (let i = 0; i < 10; i++) {
        ctx.clock.advance(interval);
        const beat = await a.beat();
        expect(beat.memberEpoch).toBe(1);
        expect(beat.heartbeatIntervalMs).toBe(interval);
      }
    }
  });

  it('revokes the buckets of a table a member unsubscribed from at once, while its new target waits for the assignment interval', async () => {
    const ctx = new GroupTestContext({
      assignmentIntervalMs: 1000,
      layouts: { 1: { bucketCount: 2 }, 2: { bucketCount: 2 } },
    });
    const a = ctx.member([1, 2]);
    const joined = await a.beat();
    expect(keys(joined.assignment ?? [])).toEqual(
      keys([...buckets(1, [0, 1]), ...buckets(2, [0, 1])]),
    );
    ctx.clock.advance(100);
    a.tableIds = [1];
    const narrowed = await a.beat();
    expect(keys(narrowed.assignment ?? []), 'table 2 is revoked now').toEqual(
      keys(buckets(1, [0, 1])),
    );
    const released = await a.beat();
    expect(released.memberEpoch).toBe(joined.memberEpoch);
    expect(keys(assignedOf(ctx, a.memberId!))).toEqual(keys(buckets(1, [0, 1])));
    // The deferred target, once computed, agrees.
    ctx.clock.advance(1000);
    const later = await a.beat();
    expect(later.memberEpoch).toBeGreaterThan(joined.memberEpoch);
    expect(keys(assignedOf(ctx, a.memberId!))).toEqual(keys(buckets(1, [0, 1])));
  });

  it('rejects strings with a lone surrogate, which the snapshot could not round-trip, naming the field', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const join = { memberEpoch: 0, subscribedTableIds: [1] };
    for (const [field, request] of [
      ['memberId', { ...join, memberId: 'm\uD800' }],
      ['instanceId', { ...join, memberId: 'm', instanceId: '\uDC00i' }],
      ['assignor', { ...join, assignor: 'uniform\uDBFF' }],
    ] as const) {
      const error = await rejectsWith(ctx.heartbeat(request), 'INVALID_REQUEST');
      expect(error.message).toMatch(new RegExp(`${field} is not well-formed UTF-16`));
    }
    await rejectsWith(ctx.coordinator.heartbeat('g\uD800', join), 'INVALID_GROUP_ID');
    expect(ctx.writer.writes).toEqual([]);
    // A surrogate pair is one well-formed character and survives the snapshot's round trip.
    const joined = await ctx.heartbeat({
      ...join,
      memberId: 'm\u{1F600}',
      instanceId: 'i\uD83D\uDE00',
    });
    expect(joined.memberId).toBe('m\u{1F600}');
  });

  it('refuses a join beyond groupMembersMax with GROUP_MAX_SIZE_REACHED', async () => {
    const ctx = new GroupTestContext({ groupMembersMax: 2, layouts: { 1: { bucketCount: 4 } } });
    await ctx.member([1]).beat();
    await ctx.member([1]).beat();
    await rejectsWith(ctx.member([1]).beat(), 'GROUP_MAX_SIZE_REACHED');
    expect(ctx.coordinator.describe('g')?.members).toHaveLength(2);
  });
});

describe('reconciliation', () => {
  it('three members: a newcomer gets buckets only as their previous owners release them', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 6 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    const c = ctx.member([1], { memberId: 'c' });
    await a.beat();
    expect(a.owned).toHaveLength(6);

    // b joins: epoch 2, target 3/3; a still owns all six, so b gets nothing yet.
    await b.beat();
    expect(b.epoch).toBe(2);
    expect(b.owned).toEqual([]);
    expect(ctx.coordinator.inspect('g')?.members.find((m) => m.memberId === 'b')?.state).toBe(
      'UNRELEASED_PARTITIONS',
    );
    expect(ctx.coordinator.groupState('g')).toBe('Reconciling');
    // a is asked to revoke three: it stays at epoch 1 until it reports releasing them.
    const revoke = await a.beat({ ownedBuckets: a.owned });
    expect(revoke.memberEpoch).toBe(1);
    expect(revoke.assignment).toHaveLength(3);
    expect(ctx.coordinator.inspect('g')?.members.find((m) => m.memberId === 'a')?.state).toBe(
      'UNREVOKED_PARTITIONS',
    );
    await b.beat();
    expect(b.owned).toEqual([]);
    ctx.expectExclusiveOwnership();
    await a.beat(); // reports owning only the three it keeps
    expect(a.epoch).toBe(2);
    await b.beat();
    expect(b.owned).toHaveLength(3);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    expect(keys([...a.owned, ...b.owned])).toEqual(keys(buckets(1, range(6))));

    // c joins: epoch 3, target 2/2/2; c gains one bucket per release.
    await c.beat();
    expect(c.epoch).toBe(3);
    expect(c.owned).toEqual([]);
    await a.beat({ ownedBuckets: a.owned }); // told to revoke one, has not yet
    await b.beat({ ownedBuckets: b.owned });
    await c.beat();
    expect(c.owned).toEqual([]);
    await a.beat(); // a releases
    await c.beat();
    expect(c.owned).toHaveLength(1);
    expect(ctx.coordinator.inspect('g')?.members.find((m) => m.memberId === 'c')?.state).toBe(
      'UNRELEASED_PARTITIONS',
    );
    ctx.expectExclusiveOwnership();
    await b.beat(); // b releases
    await c.beat();
    expect(c.owned).toHaveLength(2);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    expect([a.owned.length, b.owned.length, c.owned.length]).toEqual([2, 2, 2]);
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
  });

  it('fences newer and older epochs; accepts the previous epoch when owned is a subset of assigned', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await a.beat();
    await b.beat();
    await a.beat(); // revoke 2
    const lost = await a.beat({}, { lose: true }); // releases; moves to epoch 2, but the response is lost
    expect(lost.memberEpoch).toBe(2);
    expect(a.epoch).toBe(1);

    await rejectsWith(
      ctx.heartbeat({ memberId: 'a', memberEpoch: 3, ownedBuckets: a.owned }),
      'FENCED_MEMBER_EPOCH',
    );
    // previous epoch, but still claiming a bucket it no longer has
    await rejectsWith(
      ctx.heartbeat({ memberId: 'a', memberEpoch: 1, ownedBuckets: buckets(1, range(4)) }),
      'FENCED_MEMBER_EPOCH',
    );
    // previous epoch without owned buckets: cannot prove the subset
    await rejectsWith(ctx.heartbeat({ memberId: 'a', memberEpoch: 1 }), 'FENCED_MEMBER_EPOCH');
    const accepted = await a.beat();
    expect(accepted.memberEpoch).toBe(2);
    expect(accepted.assignment).toHaveLength(2);
    // the previous epoch stays acceptable while the member owns nothing beyond its assignment
    expect(
      (await ctx.heartbeat({ memberId: 'a', memberEpoch: 1, ownedBuckets: a.owned.slice(0, 1) }))
        .memberEpoch,
    ).toBe(2);
    await rejectsWith(ctx.heartbeat({ memberId: 'nobody', memberEpoch: 2 }), 'UNKNOWN_MEMBER_ID');
    await rejectsWith(
      ctx.coordinator.heartbeat('other', { memberId: 'a', memberEpoch: 2 }),
      'UNKNOWN_MEMBER_ID',
    );
  });

  it('accepts only the previous epoch: an older one is fenced although the member owns nothing beyond its assignment', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 2 } } });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat(); // epoch 1
    ctx.coordinator.setTableLayout(1, { bucketCount: 4 });
    await a.beat(); // epoch 2
    ctx.coordinator.setTableLayout(1, { bucketCount: 6 });
    await a.beat(); // epoch 3, previous 2
    expect(a.epoch).toBe(3);
    const owned = buckets(1, [0, 1]);
    await rejectsWith(
      ctx.heartbeat({ memberId: 'a', memberEpoch: 1, ownedBuckets: owned }),
      'FENCED_MEMBER_EPOCH',
    );
    expect(
      (await ctx.heartbeat({ memberId: 'a', memberEpoch: 2, ownedBuckets: owned })).memberEpoch,
    ).toBe(3);
  });

  it('a member that leaves ownedBuckets out still owns what it was asked to revoke: the buckets move only once it reports releasing them', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await a.beat();
    const all = a.owned;
    await b.beat(); // epoch 2: a is to give two buckets to b
    for (let i = 0; i < 3; i++) {
      const response = await ctx.heartbeat({ memberId: 'a', memberEpoch: 1 });
      expect(response.memberEpoch).toBe(1);
      await b.beat();
    }
    const revoking = ctx.coordinator.inspect('g')!.members.find((m) => m.memberId === 'a')!;
    expect(revoking.state).toBe('UNREVOKED_PARTITIONS');
    expect(revoking.pendingRevocation).toHaveLength(2);
    expect(b.owned).toEqual([]);
    ctx.coordinator.validateMemberCommit('g', 'a', 1, all); // its commits still count
    ctx.expectExclusiveOwnership();
    await a.beat({ ownedBuckets: assignedOf(ctx, 'a') }); // released
    await b.beat();
    expect(a.epoch).toBe(2);
    expect(b.owned).toHaveLength(2);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
  });

  it('a fenced member rejoins with epoch 0 under its member id and gets its target back', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await ctx.settle(a, b);
    const epochBefore = ctx.coordinator.describe('g')?.groupEpoch;
    a.reset();
    const rejoin = await a.beat();
    expect(rejoin.memberId).toBe('a');
    expect(rejoin.memberEpoch).toBe(epochBefore);
    expect(rejoin.assignment).toHaveLength(2);
    expect(ctx.coordinator.describe('g')?.groupEpoch).toBe(epochBefore); // no new generation
    ctx.expectExclusiveOwnership();
    // The rejoin starts the member over: an epoch from before it is not its previous one any more.
    await rejectsWith(
      ctx.heartbeat({ memberId: 'a', memberEpoch: 1, ownedBuckets: [] }),
      'FENCED_MEMBER_EPOCH',
    );
  });

  it('leave (-1) removes the member and its buckets go to the others; the last leave empties the group', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await ctx.settle(a, b);
    const response = await b.leave();
    expect(response.memberEpoch).toBe(-1);
    expect(ctx.coordinator.groupState('g')).toBe('Reconciling');
    await a.beat();
    expect(a.owned).toHaveLength(4);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    await a.leave();
    expect(ctx.coordinator.groupState('g')).toBe('Empty');
    expect(ctx.coordinator.hasMembers('g')).toBe(false);
    await rejectsWith(ctx.heartbeat({ memberId: 'a', memberEpoch: -1 }), 'UNKNOWN_MEMBER_ID');
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
  });

  it('a static member leaving with -2 keeps its buckets for its instance id; a new incarnation takes them over', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const s = ctx.member([1], { memberId: 's1', instanceId: 'inst' });
    const d = ctx.member([1], { memberId: 'd' });
    await ctx.settle(s, d);
    const kept = s.ownedKeys();
    const epoch = ctx.coordinator.describe('g')?.groupEpoch;
    expect((await s.leave(-2)).memberEpoch).toBe(-2);
    expect(ctx.coordinator.groupState('g')).toBe('Reconciling');
    await d.beat();
    expect(d.owned).toHaveLength(2); // d does not get the away member's buckets
    await rejectsWith(ctx.heartbeat({ memberId: 'x', memberEpoch: -2 }), 'INVALID_REQUEST'); // -2 needs an instance id
    // Another member naming the instance id: fenced, as Kafka's coordinator answers.
    await rejectsWith(
      ctx.heartbeat({ memberId: 'd', memberEpoch: -2, instanceId: 'inst' }),
      'FENCED_INSTANCE_ID',
    );

    const s2 = ctx.member([1], { memberId: 's2', instanceId: 'inst' });
    const back = await s2.beat();
    expect(back.memberEpoch).toBe(epoch);
    expect(s2.ownedKeys()).toEqual(kept);
    expect(ctx.coordinator.describe('g')?.groupEpoch).toBe(epoch); // no rebalance
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['d', 's2']);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    // the instance id is now held by a live member: another join with it is refused
    await rejectsWith(
      ctx.member([1], { memberId: 's3', instanceId: 'inst' }).beat(),
      'UNRELEASED_INSTANCE_ID',
    );
    await rejectsWith(
      ctx.heartbeat({ memberId: 's1', memberEpoch: epoch ?? 0 }),
      'UNKNOWN_MEMBER_ID',
    );
    // The replaced incarnation, naming its instance id: fenced (a Kafka client stops), not unknown
    // (which makes a member rejoin, and take the instance over again once it is free).
    await rejectsWith(
      ctx.heartbeat({ memberId: 's1', memberEpoch: epoch ?? 0, instanceId: 'inst' }),
      'FENCED_INSTANCE_ID',
    );
    await rejectsWith(
      ctx.heartbeat({ memberId: 's1', memberEpoch: -1, instanceId: 'inst' }),
      'FENCED_INSTANCE_ID',
    );
    await rejectsWith(
      ctx.heartbeat({ memberId: 'd', memberEpoch: d.epoch, instanceId: 'inst' }),
      'FENCED_INSTANCE_ID',
    );
    await rejectsWith(
      ctx.heartbeat({ memberId: 'd', memberEpoch: d.epoch, instanceId: 'nobody' }),
      'UNKNOWN_MEMBER_ID',
    );
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
  });

  it('a static member taking over with ownedBuckets left out owns nothing yet: it gets its buckets at once, not stuck at epoch 0', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const joined = await ctx.heartbeat({
      memberEpoch: 0,
      memberId: 'b',
      instanceId: 'ib',
      subscribedTableIds: [1],
    });
    expect(joined.assignment).toHaveLength(4);
    await ctx.heartbeat({ memberEpoch: -2, memberId: 'b', instanceId: 'ib' });
    const c = await ctx.heartbeat({
      memberEpoch: 0,
      memberId: 'c',
      subscribedTableIds: [1],
      ownedBuckets: [],
    });
    const back = await ctx.heartbeat({
      memberEpoch: 0,
      memberId: 'b2',
      instanceId: 'ib',
      subscribedTableIds: [1],
    });
    expect(back.memberEpoch).toBeGreaterThan(0);
    const described = ctx.coordinator.describe('g')!.members.find((m) => m.memberId === 'b2')!;
    expect(described.state).toBe('STABLE');
    // Its next heartbeat, as the protocol goes on, is accepted.
    await ctx.heartbeat({
      memberEpoch: back.memberEpoch,
      memberId: 'b2',
      instanceId: 'ib',
      ownedBuckets: back.assignment ?? [],
    });
    expect(c.memberEpoch).toBeGreaterThan(0);
  });

  it('a static member that does not come back is removed after its session timeout', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const s = ctx.member([1], { memberId: 's', instanceId: 'inst' });
    const d = ctx.member([1], { memberId: 'd' });
    await ctx.settle(s, d);
    await s.leave(-2);
    for (let t = 0; t < 50_000; t += 5000) {
      ctx.clock.advance(5000);
      await d.beat();
    }
    expect(d.owned).toHaveLength(4);
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['d']);
  });

  it('a static member leaving with -2 while it revokes releases those buckets to the others at once', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const s = ctx.member([1], { memberId: 's1', instanceId: 'inst' });
    const d = ctx.member([1], { memberId: 'd' });
    await s.beat();
    await d.beat(); // epoch 2: s is to give two buckets to d
    await s.beat({ ownedBuckets: s.owned }, { lose: true }); // told to revoke two; it has not yet
    expect(ctx.coordinator.inspect('g')?.members.find((m) => m.memberId === 's1')?.state).toBe(
      'UNREVOKED_PARTITIONS',
    );
    await s.leave(-2);
    const away = ctx.coordinator.inspect('g')!.members.find((m) => m.memberId === 's1')!;
    expect([away.memberEpoch, away.pendingRevocation]).toEqual([-2, []]);
    expect(away.assigned).toHaveLength(2);
    await d.beat();
    expect(d.owned).toHaveLength(2);
    ctx.expectExclusiveOwnership();
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
  });

  it("a static member's session after a leave with -2 runs from the leave, not from its last heartbeat", async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const s = ctx.member([1], { memberId: 's', instanceId: 'inst' });
    const d = ctx.member([1], { memberId: 'd' });
    await ctx.settle(s, d);
    ctx.clock.advance(40_000);
    await d.beat();
    await s.leave(-2);
    expect(ctx.coordinator.sessionDeadlineMs('g', 's')).toBe(ctx.clock.nowMs() + 45_000);
    ctx.clock.advance(40_000); // 80 s after its last heartbeat, 40 s after its leave
    await d.beat();
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['d', 's']);
    ctx.clock.advance(5_001);
    await d.beat();
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['d']);
  });

  it('a layout change starts a rebalance; members keep what they had and share the new buckets', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await ctx.settle(a, b);
    const [aBefore, bBefore] = [a.ownedKeys(), b.ownedKeys()];
    const epoch = ctx.coordinator.describe('g')?.groupEpoch ?? 0;
    ctx.coordinator.setTableLayout(1, { bucketCount: 4 }); // same layout: nothing happens
    expect(ctx.coordinator.describe('g')?.groupEpoch).toBe(epoch);
    ctx.coordinator.setTableLayout(1, { bucketCount: 8 });
    expect(ctx.coordinator.describe('g')?.groupEpoch).toBe(epoch + 1);
    expect(ctx.coordinator.groupState('g')).toBe('Reconciling');
    await a.beat();
    await b.beat();
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    expect(a.owned).toHaveLength(4);
    expect(b.owned).toHaveLength(4);
    expect(a.ownedKeys()).toEqual(expect.arrayContaining(aBefore));
    expect(b.ownedKeys()).toEqual(expect.arrayContaining(bBefore));
    // partitions: a partitioned table subscribed later
    ctx.coordinator.setTableLayout(2, { bucketCount: 2, partitionIds: [10, 11] });
    a.tableIds = [1, 2];
    b.tableIds = [1, 2];
    await ctx.settle(a, b);
    expect(a.owned.length + b.owned.length).toBe(12);
    expect(
      a.owned
        .filter((r) => r.tableId === 2)
        .every((r) => r.partitionId === 10 || r.partitionId === 11),
    ).toBe(true);
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
  });
});

describe('assignment pacing (assignmentIntervalMs)', () => {
  it('raises the group epoch once for a layout change that waits for the interval, not at every heartbeat meanwhile', async () => {
    const ctx = new GroupTestContext({
      assignmentIntervalMs: 1000,
      layouts: { 1: { bucketCount: 4 } },
    });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat();
    const epoch = ctx.coordinator.describe('g')!.groupEpoch;
    ctx.coordinator.setTableLayout(1, { bucketCount: 8 });
    expect(ctx.coordinator.describe('g')).toMatchObject({ groupEpoch: epoch + 1 });
    const records = ctx.records.length;
    for (let i = 0; i < 3; i++) {
      ctx.clock.advance(100);
      await a.beat();
    }
    expect(ctx.coordinator.describe('g')).toMatchObject({ groupEpoch: epoch + 1 });
    expect(ctx.records.length, 'the heartbeats meanwhile wrote nothing').toBe(records);
    ctx.clock.advance(1000);
    await a.beat();
    await a.beat();
    expect(a.owned).toHaveLength(8);
    expect(ctx.coordinator.describe('g')).toMatchObject({
      groupEpoch: epoch + 1,
      assignmentEpoch: epoch + 1,
    });
  });

  it('computes a target due after the interval on interval time: a wall clock stepping back an hour does not hold it back', async () => {
    const clock = new SteppingClock();
    const ctx = new GroupTestContext({
      clock,
      assignmentIntervalMs: 1000,
      layouts: { 1: { bucketCount: 4 } },
    });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat();
    clock.advance(100);
    clock.stepWall(-3_600_000);
    const b = ctx.member([1], { memberId: 'b' });
    await b.beat(); // its target waits for the interval
    clock.advance(1000);
    await new Promise((resolve) => setImmediate(resolve));
    await a.beat();
    await b.beat();
    await a.beat();
    await b.beat();
    expect(a.owned.length + b.owned.length).toBe(4);
    expect(b.owned.length).toBeGreaterThan(0);
  });

  it('computes the target of a group restored while its target was due, without waiting for a heartbeat', async () => {
    const ctx = new GroupTestContext({
      assignmentIntervalMs: 1000,
      layouts: { 1: { bucketCount: 4 } },
    });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat();
    ctx.clock.advance(100);
    await ctx.member([1], { memberId: 'b' }).beat(); // its target waits for the interval
    expect(ctx.coordinator.groupState('g')).toBe('Assigning');
    const coordinator = ctx.restart();
    ctx.clock.advance(1000);
    await new Promise((resolve) => setImmediate(resolve));
    const described = coordinator.describe('g')!;
    expect(described.assignmentEpoch).toBe(described.groupEpoch);
    expect(coordinator.groupState('g')).not.toBe('Assigning');
  });

  it('batches the changes inside the interval into one deferred target computation', async () => {
    const ctx = new GroupTestContext({
      assignmentIntervalMs: 1000,
      layouts: { 1: { bucketCount: 6 } },
    });
    const targetRuns = () => ctx.records.filter((r) => r.type === 'target-epoch').length;
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat(); // first computation: immediate
    expect(a.owned).toHaveLength(6);
    const joiners = ['b', 'c'].map((id) => ctx.member([1], { memberId: id }));
    for (const m of joiners) await m.beat();
    expect(ctx.coordinator.groupState('g')).toBe('Assigning');
    expect(ctx.coordinator.describe('g')).toMatchObject({ groupEpoch: 3, assignmentEpoch: 1 });
    expect(joiners.map((m) => [m.epoch, m.owned.length])).toEqual([
      [1, 0],
      [1, 0],
    ]); // at the old target epoch, nothing yet
    expect(targetRuns()).toBe(1);
    ctx.clock.advance(1000);
    expect(targetRuns()).toBe(2);
    expect(ctx.coordinator.describe('g')).toMatchObject({ groupEpoch: 3, assignmentEpoch: 3 });
    for (let i = 0; i < 3; i++) for (const m of [a, ...joiners]) await m.beat();
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    expect([a, ...joiners].map((m) => m.owned.length)).toEqual([2, 2, 2]);
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
  });
});

describe('timers', () => {
  it('a member silent for the session timeout is removed; a heartbeat in time resets it', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await ctx.settle(a, b);
    ctx.clock.advance(40_000);
    await a.beat();
    await b.beat();
    ctx.clock.advance(40_000); // 80 s since join, 40 s since the last heartbeats
    expect(ctx.coordinator.describe('g')?.members).toHaveLength(2);
    await b.beat();
    ctx.clock.advance(5_001); // a silent for 45 001 ms
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['b']);
    await b.beat();
    expect(b.owned).toHaveLength(4);
    ctx.clock.advance(45_000);
    expect(ctx.coordinator.groupState('g')).toBe('Empty');
    await rejectsWith(a.beat(), 'UNKNOWN_MEMBER_ID');
  });

  it('a member that does not release revoked buckets within its rebalance timeout is fenced', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 6 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await ctx.settle(a, b);
    await a.beat({ rebalanceTimeoutMs: 20_000 }); // no rebalance for a timeout change
    expect(ctx.coordinator.describe('g')?.groupEpoch).toBe(2);
    const c = ctx.member([1], { memberId: 'c' });
    await c.beat();
    const held = a.owned;
    await a.beat({ ownedBuckets: held }, { lose: true }); // asked to revoke one; it never reports releasing it
    await b.beat(); // b releases at once
    for (let t = 5000; t <= 30_000; t += 5000) {
      ctx.clock.advance(5000);
      if (t <= 15_000) await a.beat({ ownedBuckets: held }, { lose: true });
      await b.beat();
      await c.beat();
      if (t === 15_000) expect(ctx.coordinator.describe('g')?.members).toHaveLength(3);
    }
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['b', 'c']);
    await rejectsWith(a.beat({ ownedBuckets: held }), 'UNKNOWN_MEMBER_ID');
    await b.beat();
    await c.beat();
    await b.beat();
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    expect(b.owned.length + c.owned.length).toBe(6);
  });

  it('a member that revokes in two steps moves one epoch per step, with a fresh rebalance timeout for each', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 6 } } });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat({ rebalanceTimeoutMs: 20_000 }); // epoch 1, all six
    await ctx.member([1], { memberId: 'b' }).beat(); // epoch 2: a keeps three
    const first = await a.beat({ ownedBuckets: a.owned }, { lose: true }); // told to revoke three
    expect(first.memberEpoch).toBe(1);
    await ctx.member([1], { memberId: 'c' }).beat(); // epoch 3: a keeps two
    ctx.clock.advance(10_000);
    // a releases the first three, and is told to revoke one more of the three it kept
    const kept = first.assignment ?? [];
    const second = await ctx.heartbeat({ memberId: 'a', memberEpoch: 1, ownedBuckets: kept });
    expect(second.memberEpoch).toBe(2);
    expect(second.assignment).toHaveLength(2);
    expect(ctx.coordinator.inspect('g')?.members.find((m) => m.memberId === 'a')?.state).toBe(
      'UNREVOKED_PARTITIONS',
    );
    ctx.clock.advance(15_000); // 25 s since the first revocation, 15 s since the second
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['a', 'b', 'c']);
    ctx.clock.advance(5_001); // a never released the second: fenced 20 s after it was asked
    await new Promise((resolve) => setImmediate(resolve));
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['b', 'c']);
  });

  it("a rebalance timeout that runs out while the member's release waits on the group's lane does not fence it: the release runs first, and the next step has its own timeout", async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 6 } } });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat({ rebalanceTimeoutMs: 20_000 }); // epoch 1, all six
    await ctx.member([1], { memberId: 'b' }).beat(); // epoch 2: a keeps three
    const first = await a.beat({ ownedBuckets: a.owned }, { lose: true }); // told to revoke three
    ctx.clock.advance(19_000);
    ctx.writer.hold = true;
    const joined = ctx.member([1], { memberId: 'c' }).beat(); // epoch 3: its snapshot write is held
    // A deletion waits on the lane for the write; a's release of the three waits behind it.
    const deleted = ctx.coordinator.deleteGroup('g').catch((error: unknown) => error);
    const released = ctx.heartbeat({
      memberId: 'a',
      memberEpoch: 1,
      ownedBuckets: first.assignment ?? [],
    });
    ctx.clock.advance(1001); // the first revocation's timeout runs out meanwhile
    ctx.writer.hold = false;
    ctx.writer.release();
    expect(await deleted).toMatchObject({ code: 'NON_EMPTY_GROUP' });
    await joined;
    const second = await released;
    await new Promise((resolve) => setImmediate(resolve));
    expect(second.memberEpoch, 'a released in time and was told its next step').toBe(2);
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['a', 'b', 'c']);
    expect(ctx.coordinator.inspect('g')?.members.find((m) => m.memberId === 'a')?.state).toBe(
      'UNREVOKED_PARTITIONS',
    );
    ctx.clock.advance(19_000); // the second step's timeout is 20 s from its start
    expect(ctx.coordinator.describe('g')?.members).toHaveLength(3);
    ctx.clock.advance(1001);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['b', 'c']);
  });

  it("a heartbeat replaces the member's session timer: one timer per member however often it beats", async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await ctx.settle(a, b);
    for (let i = 0; i < 10; i++) {
      ctx.clock.advance(1000);
      await a.beat();
      await b.beat();
    }
    expect(ctx.clock.pendingTimerCount).toBe(2);
    expect(ctx.coordinator.metrics().armedTimers).toBe(2);
  });

  it("a session that expires while a heartbeat of the member waits on the group's lane is kept: the heartbeat runs first and renews it", async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat();
    ctx.clock.advance(44_000);
    ctx.writer.hold = true;
    const joined = ctx.member([1], { memberId: 'b' }).beat(); // its snapshot write is held
    // A deletion waits on the lane for the write; a's heartbeat waits behind it.
    const deleted = ctx.coordinator.deleteGroup('g').catch((error: unknown) => error);
    const beat = a.beat();
    ctx.clock.advance(1001); // a's session, from its last heartbeat, runs out meanwhile
    ctx.writer.hold = false;
    ctx.writer.release();
    expect(await deleted).toMatchObject({ code: 'NON_EMPTY_GROUP' });
    await Promise.all([joined, beat]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['a', 'b']);
    expect(ctx.coordinator.sessionDeadlineMs('g', 'a')).toBe(ctx.clock.nowMs() + 45_000);
  });

  it('a timer that fires after it was superseded is a no-op (clock that cannot cancel)', async () => {
    const inner = new ManualClock();
    const leaky: Clock & { advance(ms: number): void } = {
      nowMs: () => inner.nowMs(),
      setTimer: (delayMs: number, callback: () => void): Timer => {
        inner.setTimer(delayMs, callback);
        return { cancel: () => undefined };
      },
      advance: (ms: number) => inner.advance(ms),
    };
    const ctx = new GroupTestContext({ clock: leaky as never, layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await a.beat({ rebalanceTimeoutMs: 10_000 });
    await b.beat();
    await a.beat({ ownedBuckets: a.owned }); // UNREVOKED, rebalance timer armed for 10 s
    await a.beat(); // released: the rebalance timer is superseded
    await b.beat();
    for (let t = 0; t < 60_000; t += 5000) {
      leaky.advance(5000);
      await a.beat();
      await b.beat();
    }
    // dozens of superseded session timers and one rebalance timer fired; nobody was removed
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['a', 'b']);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
  });
});

describe('persistence', () => {
  it('writes a snapshot after every operation that changed the group, before it answers, none for a heartbeat that changed nothing, and a tombstone on delete', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await a.beat(); // Stable at 1
    expect(ctx.writer.writesFor('g')).toHaveLength(1);
    await b.beat(); // b joins: epoch 2, a must release two buckets
    expect(ctx.writer.writesFor('g')).toHaveLength(2);
    const joined = ctx.writer.latest.get('g') as GroupSnapshot;
    expect(joined.groupEpoch).toBe(2);
    await a.beat(); // a is told to release two buckets: that is written before it hears it
    const revoking = (ctx.writer.latest.get('g') as GroupSnapshot).members.find(
      (m) => m.memberId === 'a',
    )!;
    expect(revoking.state).toBe('UNREVOKED_PARTITIONS');
    expect(revoking.pendingRevocation?.[0]?.bucketIds).toHaveLength(2);
    expect(revoking.assignment[0]?.bucketIds).toHaveLength(2);
    await a.beat(); // released
    await b.beat(); // Stable at 2
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    const stable = ctx.writer.writesFor('g').length;
    for (let i = 0; i < 5; i++) {
      await a.beat();
      await b.beat();
    }
    expect(ctx.writer.writesFor('g'), 'Stable heartbeats change nothing').toHaveLength(stable);
    const last = ctx.writer.latest.get('g') as GroupSnapshot;
    for (const m of last.members) {
      expect(m.memberEpoch).toBe(last.assignmentEpoch);
      expect([m.state, m.pendingRevocation, m.target]).toEqual([undefined, undefined, undefined]);
    }
    await b.leave();
    await a.beat(); // Stable at 3
    await a.leave(); // Empty at 4
    expect(ctx.writer.latest.get('g')).toMatchObject({ groupEpoch: 4, members: [] });
    const writes = ctx.writer.writesFor('g').length;
    expect(await ctx.coordinator.deleteGroup('g')).toBe(true);
    expect(ctx.writer.writesFor('g')).toHaveLength(writes + 1);
    expect(ctx.writer.latest.get('g')).toBeNull();
    expect(ctx.coordinator.groupIds()).toEqual([]);
    expect(ctx.coordinator.metrics().groupLanes, 'the deleted group leaves no lane').toBe(0);
    expect(await ctx.coordinator.deleteGroup('g')).toBe(false);
    expect(ctx.coordinator.metrics().groupLanes).toBe(0);
  });

  it('deleteGroup refuses a group with members; a failed tombstone write changes nothing', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat();
    await rejectsWith(ctx.coordinator.deleteGroup('g'), 'NON_EMPTY_GROUP');
    await a.leave();
    ctx.writer.failNext = new OffsetStoreError('LOG_STORAGE_ERROR', 'disk full');
    await rejectsWith(ctx.coordinator.deleteGroup('g'), 'LOG_STORAGE_ERROR');
    expect(ctx.coordinator.groupIds()).toEqual(['g']);
    expect(await ctx.coordinator.deleteGroup('g')).toBe(true);
  });

  it('a failed snapshot write rejects the heartbeat with the writer error and is retried by the next operation', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    ctx.writer.failNext = new OffsetStoreError('LOG_STORAGE_ERROR', 'fsync failed');
    await rejectsWith(a.beat(), 'LOG_STORAGE_ERROR');
    expect(ctx.writer.writesFor('g')).toHaveLength(0);
    expect(ctx.coordinator.groupState('g')).toBe('Stable'); // in memory the join happened
    const retry = await a.beat({ memberEpoch: 1, ownedBuckets: [] }); // the member learned nothing; epoch 1 from a retry
    expect(retry.memberEpoch).toBe(1);
    expect(ctx.writer.writesFor('g')).toHaveLength(1);
    expect(ctx.writer.latest.get('g')?.members.map((m) => m.memberId)).toEqual(['a']);
  });

  it('restores Stable from the latest snapshot, with sessions re-armed from load time', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await ctx.settle(a, b);
    const before = ctx.coordinator.describe('g');
    ctx.clock.advance(30_000);
    const coordinator = ctx.restart();
    expect(coordinator.describe('g')).toEqual(before);
    expect(coordinator.groupState('g')).toBe('Stable');
    expect(coordinator.sessionDeadlineMs('g', 'a')).toBe(ctx.clock.nowMs() + 45_000);
    const response = await a.beat();
    expect(response.memberEpoch).toBe(a.epoch);
    expect(response.assignment).toBeUndefined();
    coordinator.validateMemberCommit('g', 'b', b.epoch, b.owned);
    ctx.clock.advance(45_001); // nobody heartbeats: both expire
    await new Promise((resolve) => setImmediate(resolve)); // each expiry's snapshot is written first
    expect(coordinator.groupState('g')).toBe('Empty');
  });

  it('restores Empty, and a tombstone removes the group', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat();
    await a.leave();
    await ctx.member([1], { groupId: 'h', memberId: 'x' }).beat();
    ctx.writer.latest.set('h', null);
    const coordinator = ctx.restart();
    expect(coordinator.groupState('g')).toBe('Empty');
    expect(coordinator.describe('g')?.groupEpoch).toBe(2);
    expect(coordinator.groupIds()).toEqual(['g']);
    const rejoin = await ctx.member([1], { memberId: 'a2' }).beat();
    expect(rejoin.memberEpoch).toBe(3); // epochs continue from the snapshot
  });

  it('restores a rebalance in flight where it stood: no member is fenced, no epoch goes back, no bucket gets a second owner, and the rebalance completes', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 6 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    const c = ctx.member([1], { memberId: 'c' });
    await ctx.settle(a, b); // Stable at 2
    await c.beat(); // epoch 3
    await a.beat();
    await a.beat(); // a released one, now at epoch 3
    await c.beat(); // c owns a's released bucket
    expect(c.owned).toHaveLength(1);
    expect(a.epoch).toBe(3);
    const before = ctx.coordinator.describe('g');
    const coordinator = ctx.restart();
    expect(coordinator.describe('g')).toEqual(before);
    expect(coordinator.describe('g')?.groupEpoch).toBe(3);
    // What the members were told stands: their commits at their epochs are accepted.
    coordinator.validateMemberCommit('g', 'c', c.epoch, c.owned);
    coordinator.validateMemberCommit('g', 'a', a.epoch, a.owned);
    const members = [a, b, c];
    for (let round = 0; round < 5; round++) {
      for (const m of members) {
        await m.beat();
        ctx.expectExclusiveOwnership();
      }
    }
    expect(coordinator.groupState('g')).toBe('Stable');
    expect(members.map((m) => m.owned.length)).toEqual([2, 2, 2]);
  });

  it('restores a member that was releasing buckets with a fresh rebalance timeout: it is fenced if it never releases them', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await a.beat();
    await b.beat();
    await a.beat(); // a is told to release two buckets
    const coordinator = ctx.restart();
    expect(coordinator.describe('g')?.members.find((m) => m.memberId === 'a')?.state).toBe(
      'UNREVOKED_PARTITIONS',
    );
    ctx.clock.advance(30_000);
    await b.beat();
    await a.beat({ ownedBuckets: buckets(1, range(4)) }); // a keeps its session, releases nothing
    ctx.clock.advance(30_001); // a's rebalance timeout (60 s) from the end of loading
    await new Promise((resolve) => setImmediate(resolve));
    expect(coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['b']);
  });

  it('restores the previous epoch with the member: after a restart, a member whose last response was lost is not fenced', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await a.beat();
    await b.beat();
    await a.beat(); // told to revoke two
    await a.beat({}, { lose: true }); // released: at epoch 2, which it never hears
    expect(a.epoch).toBe(1);
    ctx.restart();
    const response = await a.beat();
    expect(response.memberEpoch).toBe(2);
    expect(response.assignment).toHaveLength(2);
  });

  it('recovery rejects malformed snapshots with CORRUPT_MESSAGE', () => {
    const ctx = new GroupTestContext();
    ctx.coordinator.close();
    const fresh = new (
      ctx.coordinator.constructor as typeof import('../../src/group/index.js').GroupCoordinator
    )({ writer: ctx.writer });
    const good = { groupEpoch: 1, assignmentEpoch: 1, tableLayouts: [], members: [] };
    fresh.loadSnapshot('g', good);
    expect(() => fresh.loadSnapshot('g', { ...good, groupEpoch: -1 })).toThrow(/CORRUPT_MESSAGE/);
    expect(() => fresh.loadSnapshot('g', { ...good, assignmentEpoch: 2 })).toThrow(
      /CORRUPT_MESSAGE/,
    );
    const member = {
      memberId: 'a',
      instanceId: null,
      memberEpoch: 1,
      previousMemberEpoch: 0,
      subscribedTableIds: [1],
      assignor: null,
      sessionTimeoutMs: 45_000,
      rebalanceTimeoutMs: 60_000,
      assignment: [{ tableId: 1, partitionId: null, bucketIds: [0, 1] }],
    };
    expect(() =>
      fresh.loadSnapshot('g', { ...good, members: [member, { ...member, memberId: 'b' }] }),
    ).toThrow(/two members/);
    expect(() =>
      fresh.loadSnapshot('g', { ...good, members: [{ ...member, memberId: 7 }] } as never),
    ).toThrow(/CORRUPT_MESSAGE/);
    expect(() => fresh.loadSnapshot('g', [] as never)).toThrow(/CORRUPT_MESSAGE/);
    expect(() =>
      fresh.loadSnapshot('g', { ...good, members: [{ ...member, state: 'BOGUS' }] } as never),
    ).toThrow(/state is not a reconciliation state/);
    const pending = {
      ...member,
      pendingRevocation: [{ tableId: 1, partitionId: null, bucketIds: [1] }],
    };
    expect(() => fresh.loadSnapshot('g', { ...good, members: [pending] })).toThrow(/two members/);
    const targeting = { ...member, memberId: 'b', assignment: [], target: member.assignment };
    expect(() => fresh.loadSnapshot('g', { ...good, members: [member, targeting] })).toThrow(
      /two members' targets/,
    );
    expect(() =>
      fresh.loadSnapshot('g', { ...good, members: [{ ...member, memberEpoch: -1 }] }),
    ).toThrow(/CORRUPT_MESSAGE/);
    expect(() =>
      fresh.loadSnapshot('g', { ...good, members: [{ ...member, memberEpoch: 2 }] }),
    ).toThrow(/epoch 2 > groupEpoch 1/);
  });
});

describe('queries, concurrency and lifecycle', () => {
  it('validateMemberCommit fences by member, epoch and ownership (a bucket pending revocation is still owned)', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    const b = ctx.member([1], { memberId: 'b' });
    await a.beat();
    await b.beat();
    await a.beat({ ownedBuckets: a.owned }); // a: 2 assigned, 2 pending revocation
    const all = buckets(1, range(4));
    const v = (memberId: string, epoch: number, refs: TableBucket[]) => () =>
      ctx.coordinator.validateMemberCommit('g', memberId, epoch, refs);
    expect(v('a', 1, all)).not.toThrow();
    expect(v('b', 2, all.slice(0, 1))).toThrow(/BUCKET_NOT_ASSIGNED/);
    expect(v('a', 0, all)).toThrow(/STALE_MEMBER_EPOCH/);
    expect(v('a', 2, all)).toThrow(/FENCED_MEMBER_EPOCH/);
    expect(v('zzz', 1, all)).toThrow(/UNKNOWN_MEMBER_ID/);
    expect(ctx.coordinator.assignedOwner('g', all[0] as TableBucket)).toBe('a');
    expect(ctx.coordinator.isBucketAssigned('g', { tableId: 1, bucketId: 3 })).toBe(true);
    expect(ctx.coordinator.isBucketAssigned('g', { tableId: 1, bucketId: 4 })).toBe(false);
    await a.beat();
    const moved = (ctx.coordinator.describe('g')?.members.find((m) => m.memberId === 'b')
      ?.targetAssignment ?? [])[0] as TableBucket;
    expect(ctx.coordinator.assignedOwner('g', moved)).toBeNull(); // released, b has not picked it up
    expect(ctx.coordinator.isBucketAssigned('g', moved)).toBe(true); // but it is b's target
  });

  it('describe is JSON-safe and reports the group and every member', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 2, partitionIds: [5] } } });
    await ctx.member([1], { memberId: 'a', instanceId: 'i' }).beat({ assignor: 'range' });
    const description = ctx.coordinator.describe('g');
    expect(JSON.parse(JSON.stringify(description))).toEqual(description);
    expect(description).toMatchObject({
      groupId: 'g',
      state: 'Stable',
      groupEpoch: 1,
      assignmentEpoch: 1,
      assignor: 'range',
      members: [
        {
          memberId: 'a',
          instanceId: 'i',
          memberEpoch: 1,
          state: 'STABLE',
          subscribedTableIds: [1],
          assignment: [
            { tableId: 1, partitionId: 5, bucketId: 0 },
            { tableId: 1, partitionId: 5, bucketId: 1 },
          ],
        },
      ],
    });
    expect(ctx.coordinator.subscribedTableIds('g')).toEqual([1]);
    expect(ctx.coordinator.subscribedTableIds('nope')).toEqual([]);
    expect(ctx.coordinator.describe('nope')).toBeNull();
    expect(ctx.coordinator.groupState('nope')).toBeNull();
  });

  it('group-commits snapshot writes: heartbeats arriving during a write run at once, and none is answered before a write that covers it is durable', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    ctx.writer.hold = true;
    const order: string[] = [];
    const beat = (memberId: string) =>
      ctx
        .heartbeat({ memberId, memberEpoch: 0, subscribedTableIds: [1] })
        .then(() => order.push(memberId));
    const answers = [beat('a'), beat('b'), beat('c')];
    await Promise.resolve();
    // b and c ran while a's write was in flight; one write after it covers both.
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['a', 'b', 'c']);
    expect(ctx.writer.writesFor('g')).toHaveLength(1);
    expect(order).toEqual([]);
    ctx.writer.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['a']);
    expect(ctx.writer.writesFor('g')).toHaveLength(2);
    expect(ctx.writer.writesFor('g')[1]?.members).toHaveLength(3);
    ctx.writer.release();
    await Promise.all(answers);
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it('answers a heartbeat that arrives during a write only once a write covering what it saw is durable', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat();
    ctx.writer.hold = true;
    const joined = ctx.heartbeat({ memberId: 'b', memberEpoch: 0, subscribedTableIds: [1] });
    let answered = false;
    const unchanged = ctx
      .heartbeat({ memberId: 'a', memberEpoch: a.epoch, subscribedTableIds: [1] })
      .then((response) => {
        answered = true;
        return response;
      });
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    ctx.writer.hold = false;
    ctx.writer.release();
    await Promise.all([joined, unchanged]);
    expect(answered).toBe(true);
  });

  it('tells changes made without a member when the membership they see is in the log: not while a write waits behind another, nor after it failed (it is then written again)', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat();
    expect(ctx.coordinator.membershipLogged('g')).toBeNull();
    ctx.writer.hold = true;
    const changed = ctx.heartbeat({
      memberId: 'a',
      memberEpoch: a.epoch,
      subscribedTableIds: [1, 2],
    });
    // A write in flight was appended when it started: nothing to wait for yet.
    expect(ctx.coordinator.membershipLogged('g')).toBeNull();
    const left = a.leave().catch((error: unknown) => error);
    expect(ctx.coordinator.hasMembers('g')).toBe(false);
    const queued = ctx.coordinator.membershipLogged('g');
    expect(queued, 'the leave waits behind the write in flight').not.toBeNull();
    // The leave's write is refused (not a failed log): the leave is in memory only.
    ctx.writer.hold = false;
    ctx.writer.failNext = new Error('refused');
    ctx.writer.release();
    await changed;
    await expect(queued).rejects.toThrow('refused');
    expect(await left).toBeInstanceOf(Error);
    expect(ctx.writer.latest.get('g')?.members).toHaveLength(1);
    // Asking whether one is pending starts no write (the retention check leaves the group).
    const writes = ctx.writer.writes.length;
    expect(ctx.coordinator.membershipPending('g')).toBe(true);
    expect(ctx.writer.writes).toHaveLength(writes);
    const again = ctx.coordinator.membershipLogged('g');
    expect(again, 'the failed change is written again for it').not.toBeNull();
    await again;
    expect(ctx.writer.latest.get('g')?.members).toHaveLength(0);
    expect(ctx.coordinator.membershipLogged('g')).toBeNull();
    expect(ctx.coordinator.membershipPending('g')).toBe(false);
  });

  it('refuses operations past queuedOperationsMax while their snapshot writes wait (TOO_MANY_PENDING_WRITES), and takes them again once written', async () => {
    const ctx = new GroupTestContext({
      layouts: { 1: { bucketCount: 4 } },
      queuedOperationsMax: 3,
    });
    ctx.writer.hold = true;
    const joins = ['a', 'b', 'c'].map((memberId) =>
      ctx.heartbeat({ memberId, memberEpoch: 0, subscribedTableIds: [1] }),
    );
    await rejectsWith(
      ctx.heartbeat({ memberId: 'd', memberEpoch: 0, subscribedTableIds: [1] }),
      'TOO_MANY_PENDING_WRITES',
    );
    ctx.writer.hold = false;
    ctx.writer.release();
    await new Promise((resolve) => setImmediate(resolve));
    ctx.writer.release();
    await Promise.all(joins);
    await ctx.heartbeat({ memberId: 'd', memberEpoch: 0, subscribedTableIds: [1] });
    expect(ctx.coordinator.describe('g')?.members).toHaveLength(4);
  });

  it('runs a classic join that takes over an Empty consumer group only after its snapshot writes, so that none lands after the classic one', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const a = ctx.member([1], { memberId: 'a' });
    await a.beat();
    ctx.writer.hold = true;
    const left = a.leave(); // Empty: its snapshot write is held
    let joined = false;
    const join = ctx.coordinator.classic
      .joinGroup('g', {
        memberId: '',
        groupInstanceId: 'static-1',
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 30_000,
      })
      .then((result) => {
        joined = true;
        return result;
      });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ctx.coordinator.groupType('g')).toBe('consumer');
    ctx.writer.hold = false;
    ctx.writer.release();
    await left;
    ctx.clock.advance(10_000); // the classic group's initial rebalance delay
    await join;
    expect(joined).toBe(true);
    // The leave was written before the takeover: what is durable is the Empty consumer group.
    expect(ctx.writer.writesFor('g').at(-1)).toMatchObject({ members: [] });
    expect(ctx.coordinator.groupType('g')).toBe('classic');
  });

  it('rejects calls while loading and after close; close cancels every timer', async () => {
    const clock = new ManualClock();
    const ctx = new GroupTestContext({ clock, layouts: { 1: { bucketCount: 4 } } });
    await ctx.member([1]).beat();
    expect(clock.pendingTimerCount).toBe(1);
    ctx.coordinator.close();
    expect(clock.pendingTimerCount).toBe(0);
    await rejectsWith(ctx.member([1]).beat(), 'STORE_CLOSED');
    expect(() => ctx.coordinator.hasMembers('g')).toThrow(/STORE_CLOSED/);
    const loading = new (
      ctx.coordinator.constructor as typeof import('../../src/group/index.js').GroupCoordinator
    )({ writer: ctx.writer, clock });
    await rejectsWith(
      loading.heartbeat('g', { memberEpoch: 0, subscribedTableIds: [1] }),
      'COORDINATOR_LOAD_IN_PROGRESS',
    );
    loading.onLoadComplete();
    expect(() => loading.loadSnapshot('g', null)).toThrow(TypeError);
  });
});
