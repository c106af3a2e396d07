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

  it('a member given an id with MEMBER_ID_REQUIRED that leaves before joining stops holding the join phase', async () => {
    const ctx = new ClassicTestContext();
    const [a] = await ctx.stableGroup(1, 'g', { sessionTimeoutMs: 30_000 });
    const pending = ctx.join({ clientId: 'late', requireKnownMemberId: true });
    await tick();
    expect(pending.ok).toEqual({ outcome: 'member-id-required', memberId: 'late-m2' });
    const rejoin = ctx.join({ memberId: a!.memberId, sessionTimeoutMs: 30_000 });
    await tick();
    expect(rejoin.state).toBe('pending'); // the barrier waits for the pending member
    const left = ctx.leave({ members: [{ memberId: 'late-m2' }] });
    await tick();
    expect(left.ok.members).toEqual([
      { memberId: 'late-m2', groupInstanceId: null, errorCode: null },
    ]);
    expect(joined(rejoin)).toMatchObject({ generationId: 2, members: [{ memberId: a!.memberId }] });
    expect(ctx.inspect()?.pendingMembers).toEqual([]);
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

  it("a static leader that does not rejoin stays a member, but a member that did rejoin becomes the leader and gets every member's metadata", async () => {
    const ctx = new ClassicTestContext();
    const [one, two] = await staticGroup(ctx, 60_000);
    const leader = one!.memberId === one!.leader ? one! : two!;
    const follower = leader === one ? two! : one!;
    const rejoin = ctx.join({
      memberId: follower.memberId,
      groupInstanceId: follower === one ? 'i-1' : 'i-2',
      sessionTimeoutMs: 60_000,
      protocols: protocols(['range'], 'more topics'),
    });
    await ctx.advance(30_000); // the rebalance timeout: the leader did not rejoin, but it is static
    expect(joined(rejoin)).toMatchObject({ generationId: 2, leader: follower.memberId });
    expect(
      joined(rejoin)
        .members.map((m) => m.memberId)
        .sort(),
    ).toEqual([leader.memberId, follower.memberId].sort());
    expect(ctx.inspect()?.leaderId).toBe(follower.memberId);
  });

  it("a static member rejoining without its member id while the group waits for its leader's assignment: its parked SyncGroup is fenced and the group rebalances, so the assignment names its new id", async () => {
    const ctx = new ClassicTestContext();
    const calls = [ctx.join({ groupInstanceId: 'i-1' }), ctx.join({ groupInstanceId: 'i-2' })];
    await ctx.advance(0);
    const [one, two] = calls.map(joined);
    const leader = one!.memberId === one!.leader ? one! : two!;
    const follower = leader === one ? two! : one!;
    const followerInstance = follower === one ? 'i-1' : 'i-2';
    const parkedSync = ctx.sync({
      memberId: follower.memberId,
      generationId: 1,
      groupInstanceId: followerInstance,
    });
    await tick();
    expect(ctx.state()).toBe('CompletingRebalance');
    const replacement = ctx.join({ groupInstanceId: followerInstance });
    await tick();
    expect(parkedSync.code).toBe('FENCED_INSTANCE_ID');
    expect(replacement.state).toBe('pending');
    expect(ctx.state()).toBe('PreparingRebalance');
    const leaderSync = ctx.sync({ memberId: leader.memberId, generationId: 1 });
    await tick();
    expect(leaderSync.code).toBe('REBALANCE_IN_PROGRESS');
    const leaderJoin = ctx.join({
      memberId: leader.memberId,
      groupInstanceId: follower === one ? 'i-2' : 'i-1',
    });
    await tick();
    const newId = joined(replacement).memberId;
    expect(newId).not.toBe(follower.memberId);
    expect(joined(leaderJoin)).toMatchObject({ generationId: 2, leader: leader.memberId });
    expect(
      joined(leaderJoin)
        .members.map((m) => m.memberId)
        .sort(),
    ).toEqual([leader.memberId, newId].sort());
    expect(ctx.replayed()).toEqual(ctx.inspect());
  });

  it('a static member restarting before it sent its SyncGroup takes its new session timeout, and its new id syncing does not rebalance the group at the sync deadline', async () => {
    const ctx = new ClassicTestContext();
    const timeouts = { sessionTimeoutMs: 60_000, rebalanceTimeoutMs: 30_000 };
    const {
      all: [one],
      leader,
      follower,
    } = await ctx.joinPhase([
      { groupInstanceId: 'i-1', ...timeouts },
      { groupInstanceId: 'i-2', ...timeouts },
    ]);
    const followerInstance = follower === one ? 'i-1' : 'i-2';
    const leaderSync = ctx.sync({
      memberId: leader.memberId,
      generationId: 1,
      assignments: [{ memberId: follower.memberId, assignment: Buffer.from('F') }],
    });
    await tick();
    expect(leaderSync.state).toBe('fulfilled');
    expect(ctx.state()).toBe('Stable'); // the follower has not sent its SyncGroup
    const rejoin = ctx.join({
      groupInstanceId: followerInstance,
      sessionTimeoutMs: 45_000,
      rebalanceTimeoutMs: 30_000,
    });
    await tick();
    const answer = joined(rejoin);
    expect(answer.generationId).toBe(1);
    expect(ctx.classic.sessionDeadlineMs('g', answer.memberId)).toBe(ctx.clock.nowMs() + 45_000);
    const sync = ctx.sync({
      memberId: answer.memberId,
      generationId: 1,
      groupInstanceId: followerInstance,
    });
    await tick();
    expect(sync.ok.assignment.toString()).toBe('F');
    await ctx.advance(30_000); // the sync deadline of generation 1
    expect(ctx.inspect()).toMatchObject({ state: 'Stable', generationId: 1 });
    expect(ctx.memberIds()).toEqual([leader.memberId, answer.memberId].sort());
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

  it('a member parked in SyncGroup longer than its session gets its session back when the assignment answers it: if it then goes silent it is removed', async () => {
    const ctx = new ClassicTestContext();
    const timeouts = { sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 60_000 };
    const { leader, follower } = await ctx.joinPhase([timeouts, timeouts]);
    const parked = ctx.sync({ memberId: follower.memberId, generationId: 1 });
    const beat = async () => {
      const call = ctx.heartbeat({ memberId: leader.memberId, generationId: 1 });
      await tick();
      expect(call.state).toBe('fulfilled');
    };
    await ctx.advance(8000);
    await beat();
    await ctx.advance(7000); // the follower's session passed while it waited for the leader
    expect(ctx.memberIds()).toEqual([leader.memberId, follower.memberId].sort());
    const own = ctx.sync({ memberId: leader.memberId, generationId: 1, assignments: [] });
    await tick();
    expect([own.state, parked.state]).toEqual(['fulfilled', 'fulfilled']);
    // From now on only the leader heartbeats.
    for (const step of [5000, 4999]) {
      await ctx.advance(step);
      await beat();
    }
    expect(ctx.state()).toBe('Stable');
    await ctx.advance(1); // 10 s after the follower's answer
    expect(ctx.memberIds()).toEqual([leader.memberId]);
    expect(ctx.state()).toBe('PreparingRebalance');
  });

  it('a member parked in SyncGroup longer than its session and told to rejoin gets its session back: if it then goes silent it is removed and the join phase completes without waiting the rebalance timeout', async () => {
    const ctx = new ClassicTestContext();
    const timeouts = { sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 60_000 };
    const { leader, follower } = await ctx.joinPhase([timeouts, timeouts]);
    const parked = ctx.sync({ memberId: follower.memberId, generationId: 1 });
    await ctx.advance(8000);
    await ctx.heartbeat({ memberId: leader.memberId, generationId: 1 }).settled();
    await ctx.advance(7000); // the follower's session passed while it waited for the leader
    // The leader rejoins with new metadata instead of syncing: a rebalance.
    const leaderJoin = ctx.join({
      memberId: leader.memberId,
      ...timeouts,
      protocols: protocols(['range'], 'more topics'),
    });
    await tick();
    expect(parked.code).toBe('REBALANCE_IN_PROGRESS');
    // The follower never rejoins: its session, restarted by that answer, ends 10 s later.
    await ctx.advance(9999);
    expect(leaderJoin.state).toBe('pending');
    await ctx.advance(1);
    expect(joined(leaderJoin)).toMatchObject({
      generationId: 2,
      members: [{ memberId: leader.memberId }],
    });
  });

  it('a heartbeat that arrived before its session ended keeps the member, though a snapshot write held the group until after the deadline', async () => {
    const ctx = new ClassicTestContext();
    const timeouts = { sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 30_000 };
    const {
      all: [one, two],
    } = await ctx.joinPhase([
      { groupInstanceId: 'i-1', ...timeouts },
      { groupInstanceId: 'i-2', ...timeouts },
    ]);
    await ctx.syncAll([one!, two!]);
    await ctx.advance(9999); // one's session ends at 10,000
    ctx.writer.hold = true;
    // i-2 restarts: the snapshot with its new member id is being written; one's heartbeat waits behind it.
    const rejoin = ctx.join({ groupInstanceId: 'i-2', ...timeouts });
    const beat = ctx.heartbeat({
      memberId: one!.memberId,
      generationId: 1,
      groupInstanceId: 'i-1',
    });
    await ctx.advance(1);
    expect(beat.state).toBe('pending');
    ctx.writer.release();
    await tick();
    expect(joined(rejoin).generationId).toBe(1);
    expect(beat.state).toBe('fulfilled');
    expect(ctx.state()).toBe('Stable');
    expect(ctx.memberIds()).toEqual([one!.memberId, joined(rejoin).memberId].sort());
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
