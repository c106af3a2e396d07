/**
 * Members coming and going in a classic group: LeaveGroup of one member or a batch (each answered on
 * its own, static members by instance id), static membership (a static member rejoining without its
 * member id replaces its old id without a rebalance, and the old id is fenced), session timeouts
 * (a silent member is removed; one parked in JoinGroup or SyncGroup is not; a new member's JoinGroup
 * has its own deadline), and removal by an admin.
 */
import { describe, expect, it } from 'vitest';
import type { ClassicGroupSnapshot } from '../../src/group/index.js';
import { ClassicTestContext, joined, protocols, tick } from './classic-test-context.js';

describe('LeaveGroup', () => {
  it('answers every named member; the ones that left start a rebalance, the last one leaving makes the group Empty at a new generation', async () => {
    const ctx = new ClassicTestContext();
    const [a, b, c] = await ctx.stableGroup(3, 'g', { groupInstanceId: undefined });
    const call = ctx.leave({
      members: [
        { memberId: a!.memberId },
        { memberId: 'ghost' },
        { memberId: b!.memberId, groupInstanceId: 'not-its-id' },
      ],
    });
    await tick();
    expect(call.ok.members).toEqual([
      { memberId: a!.memberId, groupInstanceId: null, errorCode: null },
      { memberId: 'ghost', groupInstanceId: null, errorCode: 'UNKNOWN_MEMBER_ID' },
      { memberId: b!.memberId, groupInstanceId: 'not-its-id', errorCode: 'UNKNOWN_MEMBER_ID' },
    ]);
    expect(ctx.state()).toBe('PreparingRebalance');
    const rest = ctx.leave({ members: [{ memberId: b!.memberId }, { memberId: c!.memberId }] });
    await tick();
    expect(rest.ok.members.map((m) => m.errorCode)).toEqual([null, null]);
    expect(ctx.inspect()).toMatchObject({
      state: 'Empty',
      generationId: 2,
      protocolName: null,
      leaderId: null,
      members: [],
    });
    expect(ctx.writer.latest.get('g')).toMatchObject({
      protocol: 'classic',
      generationId: 2,
      members: [],
    });
    const gone = ctx.leave({ members: [{ memberId: 'x' }] }, 'no-such-group');
    await gone.promise.catch(() => {});
    expect(gone.code).toBe('UNKNOWN_MEMBER_ID');
  });

  it('a member leaving while others are parked in JoinGroup lets the join phase complete; its own parked call is answered UNKNOWN_MEMBER_ID', async () => {
    const ctx = new ClassicTestContext();
    const [a, b] = await ctx.stableGroup(2);
    const joinA = ctx.join({ memberId: a!.leader === a!.memberId ? a!.memberId : b!.memberId });
    await tick();
    const other = a!.leader === a!.memberId ? b! : a!;
    const parkedOther = ctx.join({
      memberId: other.memberId,
      protocols: protocols(['range'], 'changed'),
    });
    await tick();
    expect(parkedOther.state).toBe('fulfilled'); // both rejoined: generation 2
    const [g2Leader] = [joined(joinA)];
    const syncOther = ctx.sync({ memberId: other.memberId, generationId: 2 });
    await tick();
    ctx.leave({ members: [{ memberId: other.memberId }] });
    await tick();
    expect(syncOther.code).toBe('UNKNOWN_MEMBER_ID');
    expect(g2Leader.generationId).toBe(2);
    expect(ctx.replayed()).toEqual(ctx.inspect());
  });
});

describe('static membership', () => {
  async function staticGroup(ctx: ClassicTestContext, sessionTimeoutMs = 10_000) {
    const calls = [
      ctx.join({ groupInstanceId: 'i-1', clientId: 'c1', sessionTimeoutMs }),
      ctx.join({ groupInstanceId: 'i-2', clientId: 'c2', sessionTimeoutMs }),
    ];
    await ctx.advance(0);
    const all = calls.map(joined);
    await ctx.syncAll(all);
    return all;
  }

  it('a static member rejoining without its member id in a Stable group takes a new id with its assignment, without a rebalance; the old id is fenced', async () => {
    const ctx = new ClassicTestContext();
    const [one, two] = await staticGroup(ctx);
    expect(one!.memberId).toBe('i-1-m1');
    const follower = one!.memberId === one!.leader ? two! : one!;
    const instanceId = follower === one ? 'i-1' : 'i-2';
    const writesBefore = ctx.writer.writes.length;
    const rejoin = ctx.join({ groupInstanceId: instanceId });
    await tick();
    const answer = joined(rejoin);
    expect(answer).toMatchObject({
      generationId: 1,
      members: [],
      leader: follower.leader,
      skipAssignment: false,
    });
    expect(answer.memberId).not.toBe(follower.memberId);
    expect(ctx.state()).toBe('Stable');
    expect(ctx.writer.writes.length).toBe(writesBefore + 1); // the new member id is durable before the answer
    const old = ctx.heartbeat({
      memberId: follower.memberId,
      generationId: 1,
      groupInstanceId: instanceId,
    });
    const fresh = ctx.sync({
      memberId: answer.memberId,
      generationId: 1,
      groupInstanceId: instanceId,
    });
    await tick();
    expect(old.code).toBe('FENCED_INSTANCE_ID');
    expect(fresh.ok.assignment.toString()).toBe(`a:${follower.memberId}`); // the old id's assignment
    const snapshot = ctx.writer.latest.get('g') as unknown as ClassicGroupSnapshot;
    expect(snapshot.members.map((m) => m.memberId).sort()).toEqual(
      [follower.leader, answer.memberId].sort(),
    );
  });

  it('a static leader rejoining is told the old leader id before JoinGroup v9, and to skip the assignment from v9', async () => {
    for (const supportsSkipAssignment of [false, true]) {
      const ctx = new ClassicTestContext();
      const [one] = await staticGroup(ctx);
      const leaderInstance = one!.leader === one!.memberId ? 'i-1' : 'i-2';
      const rejoin = ctx.join({ groupInstanceId: leaderInstance, supportsSkipAssignment });
      await tick();
      const answer = joined(rejoin);
      if (supportsSkipAssignment)
        expect(answer).toMatchObject({
          leader: answer.memberId,
          skipAssignment: true,
          members: [{}, {}],
        });
      else
        expect(answer).toMatchObject({ leader: one!.leader, skipAssignment: false, members: [] });
      expect(ctx.inspect()?.leaderId).toBe(answer.memberId);
      expect(ctx.state()).toBe('Stable');
    }
  });

  it("a static member rejoining with protocols that change the group's selection starts a rebalance", async () => {
    const ctx = new ClassicTestContext();
    const calls = [ctx.join({ groupInstanceId: 'i-1', protocols: protocols(['range', 'sticky']) })];
    await ctx.advance(0);
    await ctx.syncAll(calls.map(joined));
    const rejoin = ctx.join({ groupInstanceId: 'i-1', protocols: protocols(['sticky']) });
    await tick();
    expect(joined(rejoin)).toMatchObject({ generationId: 2, protocolName: 'sticky' });
  });

  it('a parked JoinGroup of the replaced member id is answered FENCED_INSTANCE_ID', async () => {
    const ctx = new ClassicTestContext();
    const [one, two] = await staticGroup(ctx);
    const leaderInstance = one!.leader === one!.memberId ? 'i-1' : 'i-2';
    const leaderId = one!.leader;
    const parked = ctx.join({ memberId: leaderId, groupInstanceId: leaderInstance });
    await tick();
    expect(ctx.state()).toBe('PreparingRebalance');
    const replacement = ctx.join({ groupInstanceId: leaderInstance });
    await tick();
    expect(parked.code).toBe('FENCED_INSTANCE_ID');
    expect(replacement.state).toBe('pending');
    const follower = one!.memberId === leaderId ? two! : one!;
    ctx.join({
      memberId: follower.memberId,
      groupInstanceId: leaderInstance === 'i-1' ? 'i-2' : 'i-1',
    });
    await tick();
    expect(joined(replacement).leader).toBe(joined(replacement).memberId);
  });

  it('static members that do not rejoin stay through the join phase; one named by instance id alone can be made to leave', async () => {
    const ctx = new ClassicTestContext();
    const [one, two] = await staticGroup(ctx, 60_000);
    const follower = one!.memberId === one!.leader ? two! : one!;
    const leaderInstance = follower === one ? 'i-2' : 'i-1';
    const rejoin = ctx.join({
      memberId: one!.leader,
      groupInstanceId: leaderInstance,
      sessionTimeoutMs: 60_000,
    });
    await ctx.advance(29_999);
    expect(rejoin.state).toBe('pending');
    await ctx.advance(1); // the rebalance timeout: the follower did not rejoin, but it is static
    expect(
      joined(rejoin)
        .members.map((m) => m.memberId)
        .sort(),
    ).toEqual([one!.memberId, two!.memberId].sort());
    const left = ctx.leave({
      members: [{ groupInstanceId: follower === one ? 'i-1' : 'i-2' }, { groupInstanceId: 'i-9' }],
    });
    await tick();
    expect(left.ok.members).toEqual([
      { memberId: '', groupInstanceId: follower === one ? 'i-1' : 'i-2', errorCode: null },
      { memberId: '', groupInstanceId: 'i-9', errorCode: 'UNKNOWN_MEMBER_ID' },
    ]);
    expect(ctx.inspect()?.members).toHaveLength(1);
  });
});

describe('sessions', () => {
  it("a member parked in JoinGroup is not expired by its session; a new member's JoinGroup has its own deadline; a silent member is removed", async () => {
    const ctx = new ClassicTestContext({ newMemberJoinTimeoutMs: 20_000 });
    const timeouts = { sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 60_000 };
    const [a, b] = await ctx.stableGroup(2, 'g', timeouts);
    const rejoin = ctx.join({
      memberId: a!.memberId,
      ...timeouts,
      protocols: protocols(['range'], 'changed'),
    });
    const newcomer = ctx.join({ clientId: 'new', ...timeouts });
    const beatB = async () => {
      const call = ctx.heartbeat({ memberId: b!.memberId, generationId: 1 });
      await tick();
      expect(call.code).toBe('REBALANCE_IN_PROGRESS'); // b keeps its session but does not rejoin
    };
    for (const step of [5000, 5000, 5000, 4999]) {
      await ctx.advance(step);
      await beatB();
    }
    // 19,999 ms: a's session passed long ago, but it waits in JoinGroup; so does the newcomer.
    expect(
      ctx
        .inspect()
        ?.members.map((m) => m.memberId)
        .sort(),
    ).toEqual([a!.memberId, b!.memberId, 'new-m3'].sort());
    expect([rejoin.state, newcomer.state]).toEqual(['pending', 'pending']);
    await ctx.advance(1);
    expect(newcomer.code).toBe('UNKNOWN_MEMBER_ID');
    expect(rejoin.state).toBe('pending');
    await ctx.advance(9_999); // b's last heartbeat was at 19,999: its session ends at 29,999
    expect(joined(rejoin)).toMatchObject({ generationId: 2, members: [{ memberId: a!.memberId }] });
    expect(ctx.replayed()).toEqual(ctx.inspect());
  });

  it('a commit keeps its member in the group as a heartbeat does (Kafka: a consumer busy processing may only commit)', async () => {
    const ctx = new ClassicTestContext();
    const [a, b] = await ctx.stableGroup(2, 'g', { sessionTimeoutMs: 10_000 });
    const commit = (memberId: string) =>
      ctx.classic.commit('g', { memberId, generationId: 1, groupInstanceId: null }, async () => {});
    const beatB = async () => {
      const beat = ctx.heartbeat({ memberId: b!.memberId, generationId: 1 });
      await tick();
      expect(beat.state).toBe('fulfilled');
    };
    // a commits every 4 s and never heartbeats; b heartbeats.
    for (let t = 0; t < 6; t++) {
      await ctx.advance(4000);
      await commit(a!.memberId);
      await beatB();
    }
    expect(ctx.state()).toBe('Stable');
    expect(ctx.memberIds()).toEqual([a!.memberId, b!.memberId].sort());
    // a is silent from now on: its session ends 10 s after its last commit.
    for (const step of [4000, 4000, 1999]) {
      await ctx.advance(step);
      await beatB();
    }
    expect(ctx.state()).toBe('Stable');
    await ctx.advance(1);
    expect(ctx.state()).toBe('PreparingRebalance');
    expect(ctx.inspect()?.members.map((m) => m.memberId)).toEqual([b!.memberId]);
  });
});

describe('removal by an admin', () => {
  it('removes named members (all checked first) or all of them; removing all makes the group Empty and durable', async () => {
    const ctx = new ClassicTestContext();
    const [a, b] = await ctx.stableGroup(2, 'g', { groupInstanceId: undefined });
    await expect(
      ctx.coordinator.removeMembers('g', { memberIds: [a!.memberId, 'ghost'] }),
    ).rejects.toMatchObject({ code: 'UNKNOWN_MEMBER_ID' });
    expect(ctx.inspect()?.members).toHaveLength(2);
    const removed = await ctx.coordinator.removeMembers('g', { all: true });
    expect(removed.map((m) => m.memberId)).toEqual([a!.memberId, b!.memberId].sort());
    expect(ctx.inspect()).toMatchObject({ state: 'Empty', members: [] });
    expect(ctx.writer.latest.get('g')).toMatchObject({ protocol: 'classic', members: [] });
    expect(ctx.coordinator.hasMembers('g')).toBe(false);
  });
});
