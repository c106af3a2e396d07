/**
 * Classic groups across a restart: a Stable group comes back Stable at the same generation, leader
 * and assignments, and its members' next heartbeats and syncs succeed, their sessions counted from
 * the reload; a group caught mid-rebalance comes back at its last snapshot; an Empty group keeps its
 * generation. Snapshots survive msgpack, and a snapshot no writer could have produced is
 * CORRUPT_MESSAGE.
 */
import { Packr } from 'msgpackr';
import { OffsetStoreError } from '../../src/errors/index.js';
import { describe, expect, it } from 'vitest';
import { classicSnapshotOf, type ClassicGroupSnapshot } from '../../src/group/classic-snapshot.js';
import {
  ClassicGroupStateMachine,
  GroupCoordinator,
  parseClassicSnapshot,
} from '../../src/group/index.js';
import { ClassicTestContext, joined, protocols, tick } from './classic-test-context.js';
import { InMemorySnapshotWriter } from './group-test-context.js';

describe('restart', () => {
  it('restores a Stable group as Stable with its generation, leader and assignments; members carry on without a rebalance', async () => {
    const ctx = new ClassicTestContext();
    const members = await ctx.stableGroup(3, 'g', {
      groupInstanceId: undefined,
      sessionTimeoutMs: 20_000,
    });
    const before = ctx.inspect();
    await ctx.advance(15_000);
    ctx.restart();
    expect(ctx.inspect()).toEqual(before);
    for (const m of members) {
      // Sessions start at the reload, not at the members' last heartbeat before it.
      expect(ctx.classic.sessionDeadlineMs('g', m.memberId)).toBe(ctx.clock.nowMs() + 20_000);
      const beat = ctx.heartbeat({ memberId: m.memberId, generationId: 1 });
      const sync = ctx.sync({ memberId: m.memberId, generationId: 1 });
      await tick();
      expect(beat.state).toBe('fulfilled');
      expect(sync.ok.assignment.toString()).toBe(`a:${m.memberId}`);
    }
    expect(ctx.state()).toBe('Stable');
  });

  it('a group in the middle of a rebalance comes back at its last snapshot', async () => {
    const ctx = new ClassicTestContext();
    const [a] = await ctx.stableGroup(2);
    ctx.join({ memberId: a!.leader });
    ctx.join({ clientId: 'newcomer' });
    await tick();
    expect(ctx.state()).toBe('PreparingRebalance');
    ctx.restart();
    expect(ctx.inspect()).toMatchObject({ state: 'Stable', generationId: 1 });
    expect(ctx.inspect()?.members).toHaveLength(2);
    const late = ctx.join({ memberId: 'newcomer-m3' });
    await late.promise.catch(() => {});
    expect(late.code).toBe('UNKNOWN_MEMBER_ID');
  });

  it("an admin's removal of some members is durable when it resolves: the group comes back without them, rebalancing, and the others rejoin", async () => {
    // An admin tool opens the store with no member connected, removes one, and closes: before, the
    // removal was written only when the rebalance it started completed, so the member came back.
    const ctx = new ClassicTestContext();
    const [a, b, c] = await ctx.stableGroup(3, 'g', { groupInstanceId: undefined });
    const removed = await ctx.coordinator.removeMembers('g', { memberIds: [c!.memberId] });
    expect(removed.map((m) => m.memberId)).toEqual([c!.memberId]);
    expect(ctx.writer.latest.get('g')).toMatchObject({
      version: 1,
      generationId: 1,
      members: [{ memberId: a!.memberId }, { memberId: b!.memberId }],
    });
    ctx.restart();
    await tick();
    expect(ctx.inspect()).toMatchObject({ state: 'PreparingRebalance', generationId: 1 });
    expect(ctx.memberIds()).toEqual([a!.memberId, b!.memberId].sort());
    const beat = ctx.heartbeat({ memberId: a!.memberId, generationId: 1 });
    await tick();
    expect(beat.code).toBe('REBALANCE_IN_PROGRESS');
    const joins = [a!, b!].map((m) => ctx.join({ memberId: m.memberId }));
    await tick();
    expect(joins.map((j) => joined(j).generationId)).toEqual([2, 2]);
    expect(ctx.state()).toBe('CompletingRebalance');
  });

  it("an admin's removal whose snapshot write failed is written by the group's next operation, and holds across a restart", async () => {
    const ctx = new ClassicTestContext();
    const [a, , c] = await ctx.stableGroup(3, 'g', { groupInstanceId: undefined });
    ctx.writer.failNext = new OffsetStoreError('LOG_STORAGE_ERROR', 'injected: the disk failed');
    await expect(
      ctx.coordinator.removeMembers('g', { memberIds: [c!.memberId] }),
    ).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    // Before: nothing wrote it again, and a retry was UNKNOWN_MEMBER_ID (c is gone from memory).
    const beat = ctx.heartbeat({ memberId: a!.memberId, generationId: 1 });
    await tick();
    expect(beat.code).toBe('REBALANCE_IN_PROGRESS');
    expect(ctx.writer.latest.get('g')).toMatchObject({ version: 1 });
    ctx.restart();
    await tick();
    expect(ctx.inspect()?.members.map((m) => m.memberId)).not.toContain(c!.memberId);
  });

  it("an admin's removal when no member left offers the group's protocol: resolves, answers the removed member's parked join, and writes the group Empty, so that the removal survives a restart (nothing was written, and the removed member came back)", async () => {
    const ctx = new ClassicTestContext();
    const joins = [0, 1].map(() => ctx.join({ protocols: protocols(['range', 'roundrobin']) }));
    await ctx.advance(0);
    const [a, b] = joins.map(joined);
    await ctx.syncAll([a!, b!]);
    expect(ctx.inspect()).toMatchObject({ state: 'Stable', protocolName: 'range' });
    // A pending member (MEMBER_ID_REQUIRED) keeps the join phase open; A rejoins without 'range'.
    ctx.join({ requireKnownMemberId: true, protocols: protocols(['roundrobin']) });
    await tick();
    ctx.join({ memberId: a!.memberId, protocols: protocols(['roundrobin']) });
    const rejoinB = ctx.join({
      memberId: b!.memberId,
      protocols: protocols(['range', 'roundrobin']),
    });
    await tick();
    const writes = ctx.writer.writes.length;
    // Before: a TypeError (no member to restore), B's parked JoinGroup never answered.
    const removed = await ctx.coordinator.removeMembers('g', { memberIds: [b!.memberId] });
    expect(removed.map((m) => m.memberId)).toEqual([b!.memberId]);
    await tick();
    expect(rejoinB.code).toBe('UNKNOWN_MEMBER_ID');
    expect(ctx.writer.writes.length, 'no member could be restored: the group written Empty').toBe(
      writes + 1,
    );
    ctx.restart();
    expect(ctx.inspect()).toMatchObject({ state: 'Empty', members: [], generationId: 2 });
  });

  it("an admin's removal while the leader rejoined without the group's protocol: the snapshot names a member it keeps as the leader, and the group comes back with it", async () => {
    const ctx = new ClassicTestContext();
    const joins = [0, 1, 2].map(() => ctx.join({ protocols: protocols(['range', 'roundrobin']) }));
    await ctx.advance(0);
    const all = joins.map(joined);
    await ctx.syncAll(all);
    const leader = all.find((j) => j.memberId === j.leader)!;
    const [kept, removed] = all.filter((j) => j !== leader);
    // A pending member (MEMBER_ID_REQUIRED) keeps the join phase open; the leader rejoins without 'range'.
    ctx.join({ requireKnownMemberId: true, protocols: protocols(['range', 'roundrobin']) });
    await tick();
    ctx.join({ memberId: leader.memberId, protocols: protocols(['roundrobin']) });
    ctx.join({ memberId: kept!.memberId, protocols: protocols(['range', 'roundrobin']) });
    await tick();
    expect(ctx.inspect()).toMatchObject({ state: 'PreparingRebalance', protocolName: 'range' });
    await ctx.coordinator.removeMembers('g', { memberIds: [removed!.memberId] });
    expect(ctx.writer.latest.get('g')).toMatchObject({
      version: 1,
      generationId: 1,
      protocolName: 'range',
      leaderId: kept!.memberId,
      members: [{ memberId: kept!.memberId }],
    });
    ctx.restart();
    await tick();
    expect(ctx.inspect()).toMatchObject({
      state: 'PreparingRebalance',
      generationId: 1,
      leaderId: kept!.memberId,
    });
    expect(ctx.memberIds()).toEqual([kept!.memberId]);
  });

  it('an Empty group keeps its generation and protocol type; the next member continues from it', async () => {
    const ctx = new ClassicTestContext();
    const [a] = await ctx.stableGroup(1);
    ctx.leave({ members: [{ memberId: a!.memberId }] });
    await tick();
    ctx.restart();
    expect(ctx.inspect()).toMatchObject({
      state: 'Empty',
      generationId: 2,
      protocolType: 'consumer',
      members: [],
    });
    const again = ctx.join();
    await ctx.advance(0);
    expect(joined(again).generationId).toBe(3);
  });

  it("replaying a snapshot's records gives the state the live records built", async () => {
    const ctx = new ClassicTestContext();
    await ctx.stableGroup(3, 'g', { groupInstanceId: undefined });
    const group = ctx.inspect('g');
    const fresh = new GroupCoordinator({ writer: new InMemorySnapshotWriter() });
    fresh.loadSnapshot('g', ctx.writer.latest.get('g')!);
    fresh.onLoadComplete();
    expect(fresh.classic.inspect('g')).toEqual(group);
    fresh.close();
    expect(new ClassicGroupStateMachine().inspect('g')).toBeNull();
  });
});

describe('loading', () => {
  it('a later record of the same group id replaces an earlier one of either type', async () => {
    const ctx = new ClassicTestContext();
    await ctx.stableGroup(2, 'g', { groupInstanceId: undefined });
    const classic = ctx.writer.latest.get('g')!;
    const consumer = { groupEpoch: 3, assignmentEpoch: 3, tableLayouts: [], members: [] };
    const fresh = new GroupCoordinator({ writer: new InMemorySnapshotWriter() });
    fresh.loadSnapshot('g', classic);
    fresh.loadSnapshot('g', consumer);
    fresh.loadSnapshot('h', consumer);
    fresh.loadSnapshot('h', classic);
    fresh.loadSnapshot('i', classic);
    fresh.loadSnapshot('i', null);
    fresh.onLoadComplete();
    expect([fresh.groupType('g'), fresh.groupType('h'), fresh.groupType('i')]).toEqual([
      'consumer',
      'classic',
      null,
    ]);
    expect(fresh.classic.inspect('h')?.members).toHaveLength(2);
    fresh.close();
  });
});

describe('the snapshot', () => {
  const packr = new Packr({ useRecords: false });

  async function snapshot(): Promise<ClassicGroupSnapshot> {
    const ctx = new ClassicTestContext();
    await ctx.stableGroup(2, 'g', { groupInstanceId: undefined });
    return ctx.writer.latest.get('g') as unknown as ClassicGroupSnapshot;
  }

  it('round-trips through msgpack and parses back to itself', async () => {
    const s = await snapshot();
    expect(parseClassicSnapshot('g', packr.unpack(packr.pack(s)))).toEqual(s);
  });

  it('never takes more bytes than the bound the coordinator checks joins and assignments against', async () => {
    const ctx = new ClassicTestContext();
    const calls = ['é', 'client-with-a-longer-id', ''].map((clientId, i) =>
      ctx.join({
        clientId,
        clientHost: `10.0.0.${i}`,
        groupInstanceId: i === 1 ? 'instance-\u{1F600}' : undefined,
        protocols: [
          { name: 'cooperative-sticky', metadata: Buffer.alloc(100 * i) },
          { name: 'range', metadata: Buffer.alloc(3) },
        ],
      }),
    );
    await ctx.advance(0);
    await ctx.syncAll(calls.map(joined));
    const machine = new ClassicGroupStateMachine();
    for (const record of ctx.records) machine.replay(record);
    const group = machine.get('g')!;
    expect(group.members.size).toBe(3);
    expect(packr.pack(classicSnapshotOf(group)).length).toBeLessThanOrEqual(group.snapshotBytes);
  });

  it('is CORRUPT_MESSAGE when it could not have been written', async () => {
    const s = await snapshot();
    const broken: Array<[string, unknown]> = [
      ['version', { ...s, version: 2 }],
      [
        'rebalance due without members',
        { ...s, version: 1, members: [], leaderId: null, protocolName: null },
      ],
      ['generation', { ...s, generationId: -1 }],
      ['leader', { ...s, leaderId: 'nobody' }],
      ['member twice', { ...s, members: [s.members[0], s.members[0]] }],
      ['protocol not offered', { ...s, protocolName: 'roundrobin' }],
      ['bytes', { ...s, members: [{ ...s.members[0], assignment: 'text' }, s.members[1]] }],
      ['empty with a leader', { ...s, members: [] }],
      ['not a map', [s]],
    ];
    for (const [what, value] of broken) {
      expect(() => parseClassicSnapshot('g', value), what).toThrow(
        expect.objectContaining({ code: 'CORRUPT_MESSAGE' }),
      );
    }
    expect(() => classicSnapshotOf({ state: 'PreparingRebalance', groupId: 'g' } as never)).toThrow(
      /invariant violated/,
    );
  });
});
