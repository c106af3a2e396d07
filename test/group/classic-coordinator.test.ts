/**
 * The classic protocol beside the consumer protocol in one coordinator: a group id has one type (a
 * JoinGroup into a consumer group with members, or a consumer heartbeat into a classic group with
 * members, is INCONSISTENT_GROUP_PROTOCOL; an Empty group of either type is taken over); commits of
 * classic members are fenced by generation; deletes need an Empty group; and closing settles every
 * parked call with STORE_CLOSED.
 */
import { describe, expect, it } from 'vitest';
import { ClassicTestContext, joined, tick } from './classic-test-context.js';
import { outcomeCode as code } from '../support/outcome-code.js';

const CONSUMER_JOIN = { memberEpoch: 0, subscribedTableIds: [1] };

describe('one type per group id', () => {
  it('refuses a JoinGroup into a consumer group with members, and a consumer join into a classic group with members', async () => {
    const ctx = new ClassicTestContext();
    await ctx.coordinator.heartbeat('consumers', CONSUMER_JOIN);
    const join = ctx.join({}, 'consumers');
    await join.promise.catch(() => {});
    expect(join.code).toBe('INCONSISTENT_GROUP_PROTOCOL');
    await ctx.stableGroup(1, 'classics');
    expect(await code(ctx.coordinator.heartbeat('classics', CONSUMER_JOIN))).toBe(
      'INCONSISTENT_GROUP_PROTOCOL',
    );
    expect(ctx.coordinator.groupType('consumers')).toBe('consumer');
    expect(ctx.coordinator.groupType('classics')).toBe('classic');
    expect(ctx.coordinator.groupIds()).toEqual(['classics', 'consumers']);
  });

  it("an Empty group of either type is taken over by the other protocol's join", async () => {
    const ctx = new ClassicTestContext();
    const joinedConsumer = await ctx.coordinator.heartbeat('g', CONSUMER_JOIN);
    await ctx.coordinator.heartbeat('g', { memberId: joinedConsumer.memberId, memberEpoch: -1 });
    expect(ctx.coordinator.groupState('g')).toBe('Empty');
    const classicJoin = ctx.join();
    await ctx.advance(0);
    expect(joined(classicJoin).generationId).toBe(1);
    expect(ctx.coordinator.groupType('g')).toBe('classic');
    expect(ctx.coordinator.describe('g')).toBeNull();
    ctx.leave({ members: [{ memberId: joined(classicJoin).memberId }] });
    await tick();
    expect(ctx.state()).toBe('Empty');
    await ctx.coordinator.heartbeat('g', CONSUMER_JOIN);
    expect(ctx.coordinator.groupType('g')).toBe('consumer');
    expect(ctx.inspect()).toBeNull();
  });
});

describe('LeaveGroup naming a consumer group', () => {
  it('answers each member on its own, as none speaks the classic protocol, and removes nobody', async () => {
    const ctx = new ClassicTestContext();
    const dynamic = await ctx.coordinator.heartbeat('consumers', CONSUMER_JOIN);
    const fixed = await ctx.coordinator.heartbeat('consumers', {
      ...CONSUMER_JOIN,
      instanceId: 'i-1',
    });
    const left = await ctx.leave(
      {
        members: [
          { memberId: dynamic.memberId },
          { memberId: '', groupInstanceId: 'i-1' },
          { memberId: 'someone-else', groupInstanceId: 'i-1' },
          { memberId: 'ghost' },
        ],
      },
      'consumers',
    ).promise;
    expect(left.members.map((m) => m.errorCode)).toEqual([
      'UNKNOWN_MEMBER_ID',
      'UNKNOWN_MEMBER_ID',
      'FENCED_INSTANCE_ID',
      'UNKNOWN_MEMBER_ID',
    ]);
    expect(
      ctx.coordinator
        .describe('consumers')!
        .members.map((m) => m.memberId)
        .sort(),
    ).toEqual([dynamic.memberId, fixed.memberId].sort());
    // A group id with no group at all is refused as a whole, as before.
    expect(await code(ctx.leave({ members: [{ memberId: 'x' }] }, 'nobody').promise)).toBe(
      'UNKNOWN_MEMBER_ID',
    );
  });
});

describe('commits of classic members', () => {
  const write = () => Promise.resolve();

  it('need the member in the group under its identity, at its generation, and not while the group waits for its leader', async () => {
    const ctx = new ClassicTestContext();
    const calls = [ctx.join({ groupInstanceId: 'i-1' }), ctx.join()];
    await ctx.advance(0);
    const [a, b] = calls.map(joined);
    const commit = (
      memberId: string,
      generationId: number,
      groupInstanceId: string | null = null,
    ) => code(ctx.classic.commit('g', { memberId, generationId, groupInstanceId }, write));
    expect(await commit(a!.memberId, 1, 'i-1')).toBe('REBALANCE_IN_PROGRESS'); // CompletingRebalance
    await ctx.syncAll([a!, b!]);
    expect(await commit(a!.memberId, 1, 'i-1')).toBe('OK');
    expect(await commit(b!.memberId, 1)).toBe('OK');
    expect(await commit(b!.memberId, 0)).toBe('ILLEGAL_GENERATION');
    expect(await commit('ghost', 1)).toBe('UNKNOWN_MEMBER_ID');
    expect(await commit(b!.memberId, 1, 'i-1')).toBe('FENCED_INSTANCE_ID');
    expect(await commit(b!.memberId, 1, 'i-9')).toBe('UNKNOWN_MEMBER_ID');
    expect(
      await code(
        ctx.classic.commit(
          'nothing-here',
          { memberId: 'm', generationId: 3, groupInstanceId: null },
          write,
        ),
      ),
    ).toBe('ILLEGAL_GENERATION');
    await ctx.coordinator.heartbeat('consumers', CONSUMER_JOIN);
    expect(
      await code(
        ctx.classic.commit(
          'consumers',
          { memberId: 'm', generationId: 1, groupInstanceId: null },
          write,
        ),
      ),
    ).toBe('UNKNOWN_MEMBER_ID');
    ctx.join({ memberId: a!.leader });
    await tick();
    expect(ctx.state()).toBe('PreparingRebalance');
    expect(await commit(b!.memberId, 1)).toBe('OK'); // Kafka takes commits of the old generation until the join completes
  });

  it('wait while a snapshot of the group is being written, and are issued before the next operation of the group', async () => {
    const ctx = new ClassicTestContext();
    const [a, b] = await ctx.stableGroup(2);
    ctx.join({ memberId: a!.leader });
    ctx.join({ memberId: a!.memberId === a!.leader ? b!.memberId : a!.memberId });
    await tick();
    expect(ctx.state()).toBe('CompletingRebalance');
    ctx.writer.hold = true;
    ctx.sync({ memberId: a!.leader, generationId: 2, assignments: [] });
    const order: string[] = [];
    const committed = ctx.classic.commit(
      'g',
      { memberId: a!.memberId, generationId: 2, groupInstanceId: null },
      () => {
        order.push('commit issued');
        return Promise.resolve();
      },
    );
    await tick();
    expect(order).toEqual([]); // the Stable snapshot is not durable yet
    ctx.writer.release();
    await committed;
    expect(order).toEqual(['commit issued']);
  });
});

describe('admin and lifecycle', () => {
  it('deletes a classic group only when it has no members', async () => {
    const ctx = new ClassicTestContext();
    const [a] = await ctx.stableGroup(1);
    expect(await code(ctx.coordinator.deleteGroup('g'))).toBe('NON_EMPTY_GROUP');
    ctx.leave({ members: [{ memberId: a!.memberId }] });
    await tick();
    expect(await ctx.coordinator.deleteGroup('g')).toBe(true);
    expect(ctx.inspect()).toBeNull();
    expect(ctx.writer.latest.get('g')).toBeNull();
    expect(ctx.coordinator.groupIds()).toEqual([]);
    expect(ctx.coordinator.metrics().groupLanes, 'the deleted group leaves no lane').toBe(0);
  });

  it('closing settles every parked JoinGroup and SyncGroup with STORE_CLOSED and refuses later calls', async () => {
    const ctx = new ClassicTestContext({ initialRebalanceDelayMs: 3000 });
    const parkedJoin = ctx.join();
    const other = new ClassicTestContext();
    const calls = [other.join(), other.join()];
    await other.advance(0);
    const follower = calls.map(joined).find((j) => j.memberId !== j.leader)!;
    const parkedSync = other.sync({ memberId: follower.memberId, generationId: 1 });
    await tick();
    ctx.coordinator.close();
    other.coordinator.close();
    await tick();
    expect(parkedJoin.code).toBe('STORE_CLOSED');
    expect(parkedSync.code).toBe('STORE_CLOSED');
    expect(
      await code(
        ctx.classic.joinGroup('g', {
          protocolType: 'consumer',
          protocols: [],
          sessionTimeoutMs: 1000,
        }),
      ),
    ).toBe('STORE_CLOSED');
    expect(ctx.clock.pendingTimerCount).toBe(0);
    expect(ctx.coordinator.metrics().parkedCalls).toBe(0);
  });

  it('validates requests at the edge: types are TypeErrors, values INVALID_REQUEST or INVALID_SESSION_TIMEOUT', async () => {
    const ctx = new ClassicTestContext();
    const base = {
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
      sessionTimeoutMs: 1000,
    };
    expect(await code(ctx.classic.joinGroup('g', { ...base, sessionTimeoutMs: 0 }))).toBe(
      'INVALID_SESSION_TIMEOUT',
    );
    expect(await code(ctx.classic.joinGroup('g', { ...base, rebalanceTimeoutMs: 0 }))).toBe(
      'INVALID_REQUEST',
    );
    expect(await code(ctx.classic.joinGroup('g', { ...base, groupInstanceId: '' }))).toBe(
      'INVALID_REQUEST',
    );
    expect(
      await code(
        ctx.classic.joinGroup('g', {
          ...base,
          protocols: [base.protocols[0]!, base.protocols[0]!],
        }),
      ),
    ).toBe('INVALID_REQUEST');
    expect(await code(ctx.classic.joinGroup('g', { ...base, memberId: 'm\uD800' }))).toBe(
      'INVALID_REQUEST',
    );
    await expect(
      ctx.classic.joinGroup('g', {
        ...base,
        protocols: [{ name: 'range', metadata: 'text' as never }],
      }),
    ).rejects.toBeInstanceOf(TypeError);
    await expect(
      ctx.classic.syncGroup('g', { memberId: 'm', generationId: '1' as never }),
    ).rejects.toBeInstanceOf(TypeError);
    expect(await code(ctx.classic.leaveGroup('g', { members: [] }))).toBe('INVALID_REQUEST');
    expect(await code(ctx.classic.leaveGroup('g', { members: [{}] }))).toBe('INVALID_REQUEST');
    expect(ctx.inspect()).toBeNull();
  });
});
