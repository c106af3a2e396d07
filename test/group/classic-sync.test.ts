/**
 * The classic protocol's SyncGroup and Heartbeat: the leader's assignment reaches every member
 * (parked followers included, a member it names none gets empty bytes), only once the Stable
 * snapshot is durable; a failed write fails every answer and is retried; wrong generations, unknown
 * members, syncs during a rebalance and inconsistent protocols are refused as Kafka refuses them;
 * members that never sync are removed at the sync deadline; heartbeats keep sessions and tell
 * members to rejoin.
 */
import { describe, expect, it } from 'vitest';
import type { ClassicGroupSnapshot } from '../../src/group/index.js';
import { ClassicTestContext, joined, tick } from './classic-test-context.js';

function completingGroup(ctx: ClassicTestContext, count: number, extra = {}) {
  return ctx.joinPhase(Array.from({ length: count }, () => extra));
}

describe('SyncGroup', () => {
  it('parks followers until the leader syncs, then gives each member its assignment once the Stable snapshot is durable', async () => {
    const ctx = new ClassicTestContext();
    const { leader, followers } = await completingGroup(ctx, 3);
    const [f1, f2] = followers;
    const early = ctx.sync({ memberId: f1!.memberId, generationId: 1 });
    await tick();
    expect(early.state).toBe('pending');
    ctx.writer.hold = true;
    const own = ctx.sync({
      memberId: leader.memberId,
      generationId: 1,
      protocolType: 'consumer',
      protocolName: 'range',
      assignments: [
        { memberId: leader.memberId, assignment: Buffer.from('L') },
        { memberId: f1!.memberId, assignment: Buffer.from('F1') },
        { memberId: 'not-a-member', assignment: Buffer.from('ignored') },
      ],
    });
    await tick();
    expect(ctx.state()).toBe('Stable');
    expect([early.state, own.state]).toEqual(['pending', 'pending']); // the snapshot is not durable yet
    ctx.writer.release();
    await tick();
    expect(own.ok).toEqual({
      protocolType: 'consumer',
      protocolName: 'range',
      assignment: Buffer.from('L'),
    });
    expect(early.ok.assignment.toString()).toBe('F1');
    const late = ctx.sync({ memberId: f2!.memberId, generationId: 1 });
    await tick();
    expect(late.ok.assignment).toEqual(Buffer.alloc(0)); // the leader named no assignment for it
    const snapshot = ctx.writer.latest.get('g') as unknown as ClassicGroupSnapshot;
    expect(snapshot).toMatchObject({
      protocol: 'classic',
      version: 0,
      generationId: 1,
      protocolType: 'consumer',
      protocolName: 'range',
      leaderId: leader.memberId,
    });
    expect(snapshot.members.map((m) => [m.memberId, Buffer.from(m.assignment).toString()])).toEqual(
      [
        [leader.memberId, 'L'],
        [f1!.memberId, 'F1'],
        [f2!.memberId, ''],
      ],
    );
    expect(ctx.writer.writes).toHaveLength(1); // the late follower's SyncGroup wrote nothing
    expect(ctx.replayed()).toEqual(ctx.inspect());
  });

  it('refuses a wrong generation, an unknown member, a sync during a rebalance and an inconsistent protocol', async () => {
    const ctx = new ClassicTestContext();
    const { leader, followers } = await completingGroup(ctx, 2);
    const settle = async (call: { promise: Promise<unknown>; code: string }) => {
      await call.promise.catch(() => {});
      return call.code;
    };
    expect(await settle(ctx.sync({ memberId: leader.memberId, generationId: 2 }))).toBe(
      'ILLEGAL_GENERATION',
    );
    expect(await settle(ctx.sync({ memberId: 'ghost', generationId: 1 }))).toBe(
      'UNKNOWN_MEMBER_ID',
    );
    expect(
      await settle(ctx.sync({ memberId: leader.memberId, generationId: 1 }, 'other-group')),
    ).toBe('UNKNOWN_MEMBER_ID');
    expect(
      await settle(
        ctx.sync({ memberId: leader.memberId, generationId: 1, protocolName: 'roundrobin' }),
      ),
    ).toBe('INCONSISTENT_GROUP_PROTOCOL');
    expect(
      await settle(
        ctx.sync({ memberId: leader.memberId, generationId: 1, protocolType: 'connect' }),
      ),
    ).toBe('INCONSISTENT_GROUP_PROTOCOL');
    const parked = ctx.sync({ memberId: followers[0]!.memberId, generationId: 1 });
    ctx.join({ clientId: 'newcomer' }); // a new member: CompletingRebalance -> PreparingRebalance
    await tick();
    expect(parked.code).toBe('REBALANCE_IN_PROGRESS');
    expect(await settle(ctx.sync({ memberId: leader.memberId, generationId: 1 }))).toBe(
      'REBALANCE_IN_PROGRESS',
    );
    expect(ctx.inspect()?.members.every((m) => m.assignment === '' && !m.awaitingSync)).toBe(true);
  });

  it('a SyncGroup of a member whose previous one is still parked supersedes it (REBALANCE_IN_PROGRESS for the previous one)', async () => {
    const ctx = new ClassicTestContext();
    const { leader, followers } = await completingGroup(ctx, 2);
    const first = ctx.sync({ memberId: followers[0]!.memberId, generationId: 1 });
    const second = ctx.sync({ memberId: followers[0]!.memberId, generationId: 1 });
    await tick();
    expect(first.code).toBe('REBALANCE_IN_PROGRESS');
    ctx.sync({
      memberId: leader.memberId,
      generationId: 1,
      assignments: [{ memberId: followers[0]!.memberId, assignment: Buffer.from('x') }],
    });
    await tick();
    expect(second.ok.assignment.toString()).toBe('x');
  });

  it("a leader's assignments that would take the group's snapshot past its bound (one batch) are INVALID_REQUEST and change nothing", async () => {
    const ctx = new ClassicTestContext();
    const { leader, followers } = await completingGroup(ctx, 8);
    const mib = Buffer.alloc(1024 * 1024, 1);
    const assignments = [leader, ...followers].map((j) => ({
      memberId: j.memberId,
      assignment: mib,
    }));
    const call = await ctx
      .sync({ memberId: leader.memberId, generationId: 1, assignments })
      .settled();
    expect(call.code).toBe('INVALID_REQUEST');
    expect(ctx.state()).toBe('CompletingRebalance');
    expect(ctx.inspect()?.members.every((m) => m.assignment === '' && !m.awaitingSync)).toBe(true);
    const small = await ctx
      .sync({
        memberId: leader.memberId,
        generationId: 1,
        assignments: [{ memberId: leader.memberId, assignment: Buffer.from('ok') }],
      })
      .settled();
    expect(small.ok.assignment.toString()).toBe('ok');
    expect(ctx.writer.writes).toHaveLength(1);
  });

  it('a failed snapshot write fails every answer the assignment would have given; the next operation writes it again', async () => {
    const ctx = new ClassicTestContext();
    const { leader, followers } = await completingGroup(ctx, 2);
    const follower = ctx.sync({ memberId: followers[0]!.memberId, generationId: 1 });
    ctx.writer.failNext = new Error('disk full');
    const own = ctx.sync({ memberId: leader.memberId, generationId: 1, assignments: [] });
    await tick();
    expect((own.error as Error).message).toBe('disk full');
    expect((follower.error as Error).message).toBe('disk full');
    expect(ctx.state()).toBe('Stable'); // in memory; the durable state lags behind
    expect(ctx.writer.writes).toEqual([]);
    const again = ctx.sync({ memberId: followers[0]!.memberId, generationId: 1 });
    await tick();
    expect(again.state).toBe('fulfilled');
    expect(ctx.writer.writes).toHaveLength(1);
  });

  it('members that do not sync within the rebalance timeout are removed and the group rebalances; a parked follower is told to rejoin', async () => {
    const ctx = new ClassicTestContext();
    const { leader, followers } = await completingGroup(ctx, 3, {
      rebalanceTimeoutMs: 5000,
      sessionTimeoutMs: 60_000,
    });
    const parked = ctx.sync({ memberId: followers[0]!.memberId, generationId: 1 });
    await ctx.advance(4999);
    expect(parked.state).toBe('pending');
    await ctx.advance(1); // the leader and the other follower never synced
    expect(parked.code).toBe('REBALANCE_IN_PROGRESS');
    expect(ctx.inspect()?.members.map((m) => m.memberId)).toEqual([followers[0]!.memberId]);
    expect(ctx.state()).toBe('PreparingRebalance');
    expect(ctx.inspect()?.members.some((m) => m.memberId === leader.memberId)).toBe(false);
    const rejoin = ctx.join({
      memberId: followers[0]!.memberId,
      rebalanceTimeoutMs: 5000,
      sessionTimeoutMs: 60_000,
    });
    await tick();
    expect(joined(rejoin)).toMatchObject({ generationId: 2, leader: followers[0]!.memberId });
  });
  it('at the sync deadline, a follower that has not sent its SyncGroup is removed though the leader synced (the group is Stable), one that synced late is kept, and the group rebalances', async () => {
    const ctx = new ClassicTestContext();
    const { leader, followers } = await completingGroup(ctx, 3, {
      rebalanceTimeoutMs: 5000,
      sessionTimeoutMs: 60_000,
    });
    const [late, never] = followers;
    const own = ctx.sync({ memberId: leader.memberId, generationId: 1, assignments: [] });
    await tick();
    expect(own.state).toBe('fulfilled');
    expect(ctx.state()).toBe('Stable');
    await ctx.advance(4000);
    const sync = ctx.sync({ memberId: late!.memberId, generationId: 1 });
    const beat = ctx.heartbeat({ memberId: never!.memberId, generationId: 1 });
    await tick();
    expect([sync.state, beat.state]).toEqual(['fulfilled', 'fulfilled']); // a heartbeat is not a SyncGroup
    await ctx.advance(999);
    expect(ctx.state()).toBe('Stable');
    await ctx.advance(1);
    expect(ctx.inspect()).toMatchObject({ state: 'PreparingRebalance', generationId: 1 });
    expect(ctx.memberIds()).toEqual([leader.memberId, late!.memberId].sort());
  });

  it('a static member that restarts in Stable before its SyncGroup still owes one: its new id is removed at the sync deadline if it never syncs, as the old one would have been', async () => {
    const ctx = new ClassicTestContext();
    const { leader, follower } = await ctx.joinPhase(
      ['i-0', 'i-1', 'i-2'].map((groupInstanceId) => ({
        groupInstanceId,
        rebalanceTimeoutMs: 5000,
        sessionTimeoutMs: 60_000,
      })),
    );
    const instanceOf = (memberId: string) =>
      ctx.inspect()!.members.find((m) => m.memberId === memberId)!.groupInstanceId!;
    const own = ctx.sync({ memberId: leader.memberId, generationId: 1, assignments: [] });
    await tick();
    expect([own.state, ctx.state()]).toEqual(['fulfilled', 'Stable']);
    // The follower restarts without its member id, before it sent its SyncGroup.
    const rejoin = ctx.join({
      groupInstanceId: instanceOf(follower.memberId),
      rebalanceTimeoutMs: 5000,
      sessionTimeoutMs: 60_000,
    });
    await tick();
    const replacement = joined(rejoin).memberId;
    expect(replacement).not.toBe(follower.memberId);
    // It heartbeats, but never syncs: at the sync deadline it goes, and the group rebalances.
    await ctx.advance(4000);
    const beat = ctx.heartbeat({ memberId: replacement, generationId: 1 });
    await tick();
    expect(beat.state).toBe('fulfilled');
    await ctx.advance(1000);
    expect(ctx.inspect()).toMatchObject({ state: 'PreparingRebalance', generationId: 1 });
    expect(ctx.memberIds()).not.toContain(replacement);
  });
});

describe('describing a classic group', () => {
  it("shows members' assignments only while the group is Stable: not the last generation's during a rebalance, nor before the leader's SyncGroup (as Kafka's DescribeGroups)", async () => {
    const ctx = new ClassicTestContext();
    const [a, b] = await ctx.stableGroup(2);
    const assignments = () =>
      ctx.classic.describe('g')!.members.map((m) => [m.memberId, m.assignment.toString()]);
    expect(assignments()).toEqual([
      [a!.memberId, `a:${a!.memberId}`],
      [b!.memberId, `a:${b!.memberId}`],
    ]);
    // A third member joins: the others rejoin, and the group waits for the leader's assignment.
    const calls = [
      ctx.join(),
      ctx.join({ memberId: a!.memberId }),
      ctx.join({ memberId: b!.memberId }),
    ];
    await ctx.advance(0);
    expect(ctx.state()).toBe('CompletingRebalance');
    expect(assignments().map(([, bytes]) => bytes)).toEqual(['', '', '']);
    await ctx.syncAll(calls.map(joined));
    expect(assignments().every(([id, bytes]) => bytes === `a:${id}`)).toBe(true);
  });
});

describe('Heartbeat', () => {
  it('keeps the session; answers REBALANCE_IN_PROGRESS during a rebalance, ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID otherwise', async () => {
    const ctx = new ClassicTestContext();
    const [a, b] = await ctx.stableGroup(2);
    const beat = async (request: { memberId: string; generationId: number }, groupId = 'g') => {
      const call = ctx.heartbeat(request, groupId);
      await call.promise.catch(() => {});
      return call.state === 'fulfilled' ? 'OK' : call.code;
    };
    await ctx.advance(9000);
    expect(await beat({ memberId: a!.memberId, generationId: 1 })).toBe('OK');
    expect(ctx.classic.sessionDeadlineMs('g', a!.memberId)).toBe(ctx.clock.nowMs() + 10_000);
    expect(await beat({ memberId: a!.memberId, generationId: 0 })).toBe('ILLEGAL_GENERATION');
    expect(await beat({ memberId: 'ghost', generationId: 1 })).toBe('UNKNOWN_MEMBER_ID');
    expect(await beat({ memberId: a!.memberId, generationId: 1 }, 'nope')).toBe(
      'UNKNOWN_MEMBER_ID',
    );
    await ctx.advance(1000); // b did not beat: its session (10 s) passed, so the group rebalances
    expect(ctx.inspect()?.members.map((m) => m.memberId)).toEqual([a!.memberId]);
    expect(await beat({ memberId: b!.memberId, generationId: 1 })).toBe('UNKNOWN_MEMBER_ID');
    expect(ctx.state()).toBe('PreparingRebalance');
    expect(await beat({ memberId: a!.memberId, generationId: 1 })).toBe('REBALANCE_IN_PROGRESS');
  });
});
