/**
 * The classic protocol's JoinGroup, driven through the test context on a manual clock: the initial
 * rebalance delay and its extension, KIP-394's MEMBER_ID_REQUIRED and pending members, the join
 * barrier of a rebalance (complete when every member rejoined, or at the rebalance timeout, which
 * removes the members that did not), leader election, protocol selection by votes and
 * INCONSISTENT_GROUP_PROTOCOL, answers to members already in the generation, a JoinGroup superseding
 * a parked one, the group size limit; and replaying the emitted records gives the coordinator's
 * state.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';
import { ClassicTestContext, joined, protocols, tick } from './classic-test-context.js';

describe('the initial rebalance', () => {
  it("waits the initial delay for more members, then answers every member; the leader gets every member's metadata", async () => {
    const ctx = new ClassicTestContext({ initialRebalanceDelayMs: 3000 });
    const a = ctx.join({ clientId: 'client-a', protocols: protocols(['range'], 'meta-a') });
    await ctx.advance(1000);
    const b = ctx.join({ clientId: 'client-b', protocols: protocols(['range'], 'meta-b') });
    expect(ctx.state()).toBe('PreparingRebalance');
    await ctx.advance(1999);
    expect([a.state, b.state]).toEqual(['pending', 'pending']);
    await ctx.advance(1); // the first delay ended, but a member joined during it: another delay
    expect(a.state).toBe('pending');
    await ctx.advance(3000);
    const [ja, jb] = [joined(a), joined(b)];
    expect(ja).toMatchObject({
      memberId: 'client-a-m1',
      generationId: 1,
      protocolType: 'consumer',
      protocolName: 'range',
      leader: 'client-a-m1',
      skipAssignment: false,
    });
    expect(ja.members.map((m) => [m.memberId, m.metadata.toString()])).toEqual([
      ['client-a-m1', 'meta-a'],
      ['client-b-m2', 'meta-b'],
    ]);
    expect(jb).toMatchObject({
      memberId: 'client-b-m2',
      generationId: 1,
      leader: 'client-a-m1',
      members: [],
    });
    expect(ctx.state()).toBe('CompletingRebalance');
    expect(ctx.writer.writes).toEqual([]);
    expect(ctx.replayed()).toEqual(ctx.inspect());
  });

  it('never waits longer than the rebalance timeout however many members keep coming', async () => {
    const ctx = new ClassicTestContext({ initialRebalanceDelayMs: 3000 });
    const first = ctx.join({ rebalanceTimeoutMs: 7000 });
    for (let t = 0; t < 4; t++) {
      await ctx.advance(1500);
      ctx.join({ rebalanceTimeoutMs: 7000 });
    }
    // Delays of 3000, 3000 and 1000 ms (what is left of the 7000 ms rebalance timeout): done at 7000.
    await ctx.advance(6999 - 6000);
    expect(first.state).toBe('pending');
    await ctx.advance(1);
    expect(joined(first)).toMatchObject({ generationId: 1 });
    expect(joined(first).members).toHaveLength(5);
  });

  it('KIP-394: a new dynamic member that asks for it gets MEMBER_ID_REQUIRED and an id; the barrier waits for it until it joins or its session passes', async () => {
    const ctx = new ClassicTestContext({ initialRebalanceDelayMs: 0 });
    const first = ctx.join({ clientId: 'c', requireKnownMemberId: true });
    await tick();
    expect(first.ok).toEqual({ outcome: 'member-id-required', memberId: 'c-m1' });
    expect(ctx.inspect()).toMatchObject({ state: 'Empty', pendingMembers: ['c-m1'], members: [] });
    expect(ctx.writer.writes.map((w) => w.groupId)).toEqual(['g']); // the new group's Empty snapshot, once
    const again = ctx.join({ memberId: 'c-m1', requireKnownMemberId: true });
    await ctx.advance(0);
    expect(joined(again)).toMatchObject({ memberId: 'c-m1', generationId: 1, leader: 'c-m1' });

    await ctx.syncAll([joined(again)]);
    // In a rebalance, a pending member holds the barrier until its session timeout (10 s here) passes.
    const pending = ctx.join({ clientId: 'late', requireKnownMemberId: true });
    await tick();
    expect(pending.ok).toEqual({ outcome: 'member-id-required', memberId: 'late-m2' });
    expect(ctx.state()).toBe('Stable');
    const rejoin = ctx.join({ memberId: 'c-m1' });
    await tick();
    expect(rejoin.state).toBe('pending');
    await ctx.advance(9999);
    expect(rejoin.state).toBe('pending');
    await ctx.advance(1);
    expect(joined(rejoin)).toMatchObject({ generationId: 2, members: [{ memberId: 'c-m1' }] });
    expect(ctx.writer.writes).toHaveLength(2); // Empty when created, Stable after the first SyncGroup
  });

  it('without requireKnownMemberId (JoinGroup v0-3) a new member gets its id in the joined answer', async () => {
    const ctx = new ClassicTestContext();
    const call = ctx.join({ clientId: 'old-client' });
    await ctx.advance(0);
    expect(joined(call).memberId).toBe('old-client-m1');
    expect(ctx.inspect()?.pendingMembers).toEqual([]);
  });
});

describe('protocols', () => {
  it('selects the protocol every member offers that most members prefer', async () => {
    const ctx = new ClassicTestContext();
    const calls = [
      ctx.join({ protocols: protocols(['range', 'roundrobin']) }),
      ctx.join({ protocols: protocols(['roundrobin', 'range']) }),
      ctx.join({ protocols: protocols(['roundrobin', 'range', 'sticky']) }),
    ];
    await ctx.advance(0);
    expect(calls.map((c) => joined(c).protocolName)).toEqual([
      'roundrobin',
      'roundrobin',
      'roundrobin',
    ]);
    expect(joined(calls[0]!).members.map((m) => m.metadata.toString())).toEqual([
      'sub:roundrobin',
      'sub:roundrobin',
      'sub:roundrobin',
    ]);
  });

  it('breaks a tie of votes in favour of the smaller protocol name', async () => {
    const ctx = new ClassicTestContext();
    const calls = [
      ctx.join({ protocols: protocols(['roundrobin', 'range']) }),
      ctx.join({ protocols: protocols(['range', 'roundrobin']) }),
    ];
    await ctx.advance(0);
    expect(calls.map((c) => joined(c).protocolName)).toEqual(['range', 'range']);
  });

  it('refuses a member whose type differs, or who offers no protocol every member offers, with INCONSISTENT_GROUP_PROTOCOL', async () => {
    const ctx = new ClassicTestContext();
    expect((await ctx.join({ protocolType: '' }).settled()).code).toBe(
      'INCONSISTENT_GROUP_PROTOCOL',
    );
    expect((await ctx.join({ protocols: [] }).settled()).code).toBe('INCONSISTENT_GROUP_PROTOCOL');
    expect(ctx.inspect()).toBeNull(); // a refused first join creates no group
    ctx.join({ protocols: protocols(['range', 'sticky']) });
    expect(
      (await ctx.join({ protocolType: 'connect', protocols: protocols(['range']) }).settled()).code,
    ).toBe('INCONSISTENT_GROUP_PROTOCOL');
    expect((await ctx.join({ protocols: protocols(['roundrobin']) }).settled()).code).toBe(
      'INCONSISTENT_GROUP_PROTOCOL',
    );
    const ok = ctx.join({ protocols: protocols(['sticky']) });
    await ctx.advance(0);
    expect(joined(ok).protocolName).toBe('sticky');
    // An Empty group (its only member left) refuses a member offering no protocol too.
    const only = ctx.join({}, 'other');
    await ctx.advance(0);
    ctx.leave({ members: [{ memberId: joined(only).memberId }] }, 'other');
    await tick();
    expect(ctx.state('other')).toBe('Empty');
    const none = ctx.join({ protocols: [] }, 'other');
    await ctx.advance(0);
    expect(none.code).toBe('INCONSISTENT_GROUP_PROTOCOL');
    expect(ctx.inspect('other')?.members).toEqual([]);
  });
});

describe('rebalancing a Stable group', () => {
  it('the leader rejoining starts a rebalance: others learn it from their heartbeat, and the join completes once all rejoined', async () => {
    const ctx = new ClassicTestContext();
    const [a, b, c] = await ctx.stableGroup(3);
    const leader = [a!, b!, c!].find((j) => j.memberId === j.leader)!;
    const followers = [a!, b!, c!].filter((j) => j !== leader);
    const leaderJoin = ctx.join({ memberId: leader.memberId });
    await tick();
    expect(ctx.state()).toBe('PreparingRebalance');
    for (const f of followers)
      expect((await ctx.heartbeat({ memberId: f.memberId, generationId: 1 }).settled()).code).toBe(
        'REBALANCE_IN_PROGRESS',
      );
    const rejoins = followers.map((f) => ctx.join({ memberId: f.memberId }));
    await tick(); // no timer: the last rejoin completed the join phase
    expect([leaderJoin, ...rejoins].map((call) => joined(call).generationId)).toEqual([2, 2, 2]);
    expect(joined(leaderJoin).members).toHaveLength(3);
    expect(ctx.state()).toBe('CompletingRebalance');
  });

  it('at the rebalance timeout, dynamic members that did not rejoin are removed and a member that did becomes leader', async () => {
    const ctx = new ClassicTestContext();
    const [a, b, c] = await ctx.stableGroup(3, 'g', {
      rebalanceTimeoutMs: 5000,
      sessionTimeoutMs: 60_000,
    });
    const leaderId = a!.leader;
    const rejoining = [a!, b!, c!].filter((j) => j.memberId !== leaderId)[0]!;
    // A follower with new metadata starts the rebalance; the others never rejoin.
    const call = ctx.join({
      memberId: rejoining.memberId,
      rebalanceTimeoutMs: 5000,
      sessionTimeoutMs: 60_000,
      protocols: protocols(['range'], 'more topics'),
    });
    await ctx.advance(4999);
    expect(call.state).toBe('pending');
    await ctx.advance(1);
    expect(joined(call)).toMatchObject({
      generationId: 2,
      leader: rejoining.memberId,
      members: [{ memberId: rejoining.memberId }],
    });
    expect(ctx.inspect()?.members.map((m) => m.memberId)).toEqual([rejoining.memberId]);
    expect(ctx.replayed()).toEqual(ctx.inspect());
  });

  it('a follower rejoining with the same protocols gets the current generation at once; with new metadata it starts a rebalance', async () => {
    const ctx = new ClassicTestContext();
    const [a, b] = await ctx.stableGroup(2);
    const follower = [a!, b!].find((j) => j.memberId !== j.leader)!;
    const same = ctx.join({ memberId: follower.memberId });
    await tick();
    expect(joined(same)).toMatchObject({ generationId: 1, members: [], leader: follower.leader });
    expect(ctx.state()).toBe('Stable');
    const changed = ctx.join({
      memberId: follower.memberId,
      protocols: protocols(['range'], 'new-subscription'),
    });
    await tick();
    expect(changed.state).toBe('pending');
    expect(ctx.state()).toBe('PreparingRebalance');
  });

  it('a member that lost its JoinGroup answer gets it again while the group completes the rebalance (the leader with every member)', async () => {
    const ctx = new ClassicTestContext();
    const calls = [ctx.join(), ctx.join()];
    await ctx.advance(0);
    const leader = joined(calls[0]!);
    const again = ctx.join({ memberId: leader.memberId });
    await tick();
    expect(joined(again)).toEqual(leader);
    expect(ctx.state()).toBe('CompletingRebalance');
  });

  it('a JoinGroup of a member whose previous one is still parked supersedes it: the previous one is answered REBALANCE_IN_PROGRESS', async () => {
    const ctx = new ClassicTestContext();
    const [a, b] = await ctx.stableGroup(2);
    const first = ctx.join({ memberId: a!.memberId });
    const second = ctx.join({ memberId: a!.memberId });
    await tick();
    expect(first.code).toBe('REBALANCE_IN_PROGRESS');
    expect(second.state).toBe('pending');
    ctx.join({ memberId: b!.memberId });
    await tick();
    expect(joined(second).generationId).toBe(2);
  });
  it('a member rejoining takes the session and rebalance timeouts it rejoins with: the next join phase waits its new rebalance timeout', async () => {
    const ctx = new ClassicTestContext();
    const [a, b] = await ctx.stableGroup(2, 'g', {
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 30_000,
    });
    const shorter = { sessionTimeoutMs: 20_000, rebalanceTimeoutMs: 5000 };
    const rejoins = [a!, b!].map((m) => ctx.join({ memberId: m.memberId, ...shorter }));
    await tick();
    expect(rejoins.map((call) => joined(call).generationId)).toEqual([2, 2]);
    expect(ctx.inspect()?.members.map((m) => [m.sessionTimeoutMs, m.rebalanceTimeoutMs])).toEqual([
      [20_000, 5000],
      [20_000, 5000],
    ]);
    expect(ctx.classic.sessionDeadlineMs('g', a!.memberId)).toBe(ctx.clock.nowMs() + 20_000);
    await ctx.syncAll(rejoins.map(joined));
    // The leader asks for a rebalance; the follower never rejoins: the join phase ends after 5 s, not 30 s.
    const leader = ctx.join({ memberId: a!.leader, ...shorter });
    await ctx.advance(4999);
    expect(leader.state).toBe('pending');
    await ctx.advance(1);
    expect(joined(leader)).toMatchObject({ generationId: 3, members: [{ memberId: a!.leader }] });
  });

  it("the join phase's answer restarts every member's session: members that waited in JoinGroup have their whole session to sync and heartbeat", async () => {
    const ctx = new ClassicTestContext();
    const [a, b] = await ctx.stableGroup(2, 'g', {
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 60_000,
    });
    // Their last heartbeat was at 0 (sessions end at 10,000); both rejoin just before that.
    await ctx.advance(9000);
    const leaderJoin = ctx.join({ memberId: a!.leader, sessionTimeoutMs: 10_000 });
    await ctx.advance(500);
    const follower = [a!, b!].find((m) => m.memberId !== m.leader)!;
    const followerJoin = ctx.join({ memberId: follower.memberId, sessionTimeoutMs: 10_000 });
    await tick();
    expect([leaderJoin, followerJoin].map((call) => joined(call).generationId)).toEqual([2, 2]);
    for (const m of [a!, b!])
      expect(ctx.classic.sessionDeadlineMs('g', m.memberId)).toBe(ctx.clock.nowMs() + 10_000);
    await ctx.advance(2500); // past the sessions armed before the rebalance
    expect(ctx.memberIds()).toEqual([a!.memberId, b!.memberId].sort());
    expect(ctx.state()).toBe('CompletingRebalance');
    await ctx.syncAll([joined(leaderJoin), joined(followerJoin)]);
    expect(ctx.state()).toBe('Stable');
  });

  it('when no member rejoined by the rebalance timeout (only static members are left), the group waits another rebalance timeout rather than start a generation nobody joined', async () => {
    const ctx = new ClassicTestContext();
    const timeouts = { sessionTimeoutMs: 120_000, rebalanceTimeoutMs: 30_000 };
    const {
      all: [one, two],
      leader,
      follower,
    } = await ctx.joinPhase([
      { groupInstanceId: 'i-1', ...timeouts },
      { groupInstanceId: 'i-2', ...timeouts },
    ]);
    await ctx.syncAll([one!, two!]);
    const leaderInstance = leader === one ? 'i-1' : 'i-2';
    ctx.join({ memberId: leader.memberId, groupInstanceId: leaderInstance, ...timeouts });
    await tick();
    // The leader, the only member that rejoined, leaves: the static follower is left, not rejoined.
    ctx.leave({ members: [{ memberId: leader.memberId, groupInstanceId: leaderInstance }] });
    await ctx.advance(30_000);
    expect(ctx.inspect()).toMatchObject({
      state: 'PreparingRebalance',
      generationId: 1,
      leaderId: follower.memberId,
    });
    const beat = ctx.heartbeat({
      memberId: follower.memberId,
      generationId: 1,
      groupInstanceId: leader === one ? 'i-2' : 'i-1',
    });
    await tick();
    expect(beat.code).toBe('REBALANCE_IN_PROGRESS');
    const rejoin = ctx.join({
      memberId: follower.memberId,
      groupInstanceId: leader === one ? 'i-2' : 'i-1',
      ...timeouts,
    });
    await tick();
    expect(joined(rejoin)).toMatchObject({
      generationId: 2,
      leader: follower.memberId,
      members: [{ memberId: follower.memberId }],
    });
  });
});

describe('who may join', () => {
  it('a member id the group does not know is UNKNOWN_MEMBER_ID, also for a group that does not exist (which it does not create)', async () => {
    const ctx = new ClassicTestContext();
    expect((await ctx.join({ memberId: 'ghost' }).settled()).code).toBe('UNKNOWN_MEMBER_ID');
    expect(ctx.inspect()).toBeNull();
    await ctx.stableGroup(1);
    expect((await ctx.join({ memberId: 'ghost' }).settled()).code).toBe('UNKNOWN_MEMBER_ID');
  });

  it('a group at groupMembersMax still takes JoinGroups of its own members: one already in the generation, and one whose JoinGroup is parked', async () => {
    const ctx = new ClassicTestContext({ groupMembersMax: 2 });
    const [a, b] = await ctx.stableGroup(2);
    const follower = [a!, b!].find((m) => m.memberId !== m.leader)!;
    const same = ctx.join({ memberId: follower.memberId });
    await tick();
    expect(joined(same)).toMatchObject({ generationId: 1, leader: follower.leader });
    expect(ctx.state()).toBe('Stable');
    // The leader asks for a rebalance; a newcomer fills the parked JoinGroups up to the maximum.
    const first = ctx.join({ memberId: follower.leader });
    const newcomer = ctx.join({ clientId: 'new' });
    await tick();
    expect([first.state, newcomer.state]).toEqual(['pending', 'pending']);
    const again = ctx.join({ memberId: follower.leader }); // say, after a client-side timeout
    await tick();
    expect(first.code).toBe('REBALANCE_IN_PROGRESS');
    expect(again.state).toBe('pending');
    await ctx.advance(30_000); // the follower never rejoins
    expect(joined(again)).toMatchObject({ generationId: 2, leader: follower.leader });
    expect(joined(again).members.map((m) => m.memberId)).toEqual([follower.leader, 'new-m3']);
  });

  it('gives at most groupMembersMax member ids with MEMBER_ID_REQUIRED to members still to join', async () => {
    const ctx = new ClassicTestContext({ groupMembersMax: 2 });
    const calls = ['c1', 'c2', 'c3'].map((clientId) =>
      ctx.join({ clientId, requireKnownMemberId: true }),
    );
    await tick();
    expect(calls.slice(0, 2).map((c) => c.ok.outcome)).toEqual([
      'member-id-required',
      'member-id-required',
    ]);
    expect(calls[2]!.code).toBe('GROUP_MAX_SIZE_REACHED');
    expect(ctx.inspect()?.pendingMembers).toEqual(['c1-m1', 'c2-m2']);
  });

  it('a JoinGroup naming a member id given with MEMBER_ID_REQUIRED and an instance id is INVALID_REQUEST (a static member is never given one) and changes nothing', async () => {
    const ctx = new ClassicTestContext();
    const held = ctx.join({ groupInstanceId: 'i-1' });
    await ctx.advance(0);
    await ctx.syncAll([joined(held)]);
    const first = ctx.join({ clientId: 'c', requireKnownMemberId: true });
    await tick();
    expect(first.ok).toEqual({ outcome: 'member-id-required', memberId: 'c-m2' });
    for (const groupInstanceId of ['i-1', 'i-2']) {
      const call = await ctx
        .join({ memberId: 'c-m2', groupInstanceId, requireKnownMemberId: true })
        .settled();
      expect(call.code).toBe('INVALID_REQUEST');
    }
    expect(ctx.inspect()).toMatchObject({ state: 'Stable', pendingMembers: ['c-m2'] });
    expect(ctx.memberIds()).toEqual([joined(held).memberId]);
  });

  it("refuses a member whose protocols would take the group's snapshot past its bound (one batch) with INVALID_REQUEST", async () => {
    const ctx = new ClassicTestContext();
    const big = [{ name: 'range', metadata: Buffer.alloc(1024 * 1024) }];
    const calls = Array.from({ length: 7 }, () => ctx.join({ protocols: big }));
    await tick();
    expect(calls.slice(0, 6).map((c) => c.state)).toEqual(new Array(6).fill('pending')); // 6 MiB and a little fit in 7 MiB
    expect(calls[6]!.code).toBe('INVALID_REQUEST');
    expect(ctx.inspect()?.members).toHaveLength(6);
    const huge = Array.from({ length: 8 }, (_, i) => ({
      name: `p${i}`,
      metadata: Buffer.alloc(1024 * 1024),
    }));
    expect((await ctx.join({ protocols: huge }, 'other').settled()).code).toBe('INVALID_REQUEST');
    expect(ctx.inspect('other')).toBeNull(); // refused before the group was created
    expect(ctx.writer.writes).toEqual([]);
  });

  it('takes the bound of a log of smaller batches (a log in etcd): a join that would pass it is refused before anything changes', async () => {
    const ctx = new ClassicTestContext({ snapshotBytesMax: 896 * 1024 });
    const protocols = (kib: number) => [
      { name: 'range', metadata: Buffer.alloc(kib * 1024) },
      { name: 'roundrobin', metadata: Buffer.alloc(kib * 1024) },
    ];
    // Two protocols of 700 KB each: under Kafka's 1 MiB per protocol, over this log's batch.
    expect((await ctx.join({ protocols: protocols(700) }).settled()).code).toBe('INVALID_REQUEST');
    expect(ctx.inspect()).toBeNull();
    const small = ctx.join({ protocols: protocols(300) });
    await ctx.advance(0);
    expect(joined(small).generationId).toBe(1);
    // The leader's assignment is held to the same bound.
    const { memberId } = joined(small);
    const sync = ctx.sync({
      memberId,
      generationId: 1,
      assignments: [{ memberId, assignment: Buffer.alloc(400 * 1024) }],
    });
    expect((await sync.settled()).code).toBe('INVALID_REQUEST');
  });

  it('refuses a member beyond groupMembersMax with GROUP_MAX_SIZE_REACHED', async () => {
    const ctx = new ClassicTestContext({ groupMembersMax: 2 });
    const calls = [ctx.join(), ctx.join(), ctx.join()];
    await tick();
    expect(calls[2]!.code).toBe('GROUP_MAX_SIZE_REACHED');
    await ctx.advance(0);
    expect(calls.slice(0, 2).map((c) => joined(c).generationId)).toEqual([1, 1]);
  });
});

describe('a process awaiting a JoinGroup', () => {
  it("is kept alive until the join phase answers it, though the store arms its timers unref'd", async () => {
    // Before: Node found nothing keeping the event loop alive and exited with code 13 (an
    // unsettled top-level await), before `joined` was printed and without closing the store.
    const child = fileURLToPath(new URL('./classic-join-child.ts', import.meta.url));
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', child, tempDir('offset-store-join-exit-')],
        { timeout: 30_000 },
        (error, stdout) => resolve({ code: error === null ? 0 : (error.code as number), stdout }),
      );
    });
    expect(result).toEqual({ code: 0, stdout: 'joined joined\nclosed\n' });
  });
});
