/**
 * The classic (JoinGroup/SyncGroup) protocol over a real store, as a Kafka client drives it: three
 * members join (MEMBER_ID_REQUIRED first), the leader assigns buckets, members commit fenced by
 * generation, one dies and is removed at its session timeout, the others rejoin, one leaves, and the
 * store is reopened with the group still Stable at the same generation and assignment. Also: a static
 * member rejoining without a rebalance, closing the store while calls are parked, one type per group
 * id, and the admin rules (commits, resets, deletes) against classic members.
 */
import { describe, expect, it } from 'vitest';
import {
  ManualClock,
  OffsetStore,
  type ClassicGroupDescription,
  type ClassicJoinedGroup,
  type ClassicJoinGroupRequest,
} from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { TrackingFileSystem, ioIdle } from './store-fixtures.js';
import { outcomeCode as code } from '../support/outcome-code.js';

const TABLE = 7;
const BUCKETS = 6;
const GROUP = 'kafka-readers';

/** Lets I/O callbacks and the answers they release run. */
async function drain(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 1));
}

/** Waits until `store` lists `count` members of the classic group (a loaded machine's writes take longer than a drain). */
async function untilMembers(store: OffsetStore, count: number): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if ((await store.describeGroup(GROUP)).classic?.members.length === count) return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** A consumer speaking the classic protocol, as a Kafka client's coordinator code does. */
class ClassicClient {
  memberId = '';
  generationId = -1;
  buckets: number[] = [];
  constructor(
    readonly store: OffsetStore,
    readonly clientId: string,
    readonly extra: Partial<ClassicJoinGroupRequest> = {},
  ) {}

  request(): ClassicJoinGroupRequest {
    return {
      memberId: this.memberId,
      clientId: this.clientId,
      clientHost: '127.0.0.1',
      protocolType: 'consumer',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 20_000,
      requireKnownMemberId: true,
      protocols: [{ name: 'range', metadata: Buffer.from(JSON.stringify({ tables: [TABLE] })) }],
      ...this.extra,
    };
  }

  /** JoinGroup until it is in a generation (a first join is answered MEMBER_ID_REQUIRED). */
  async join(): Promise<ClassicJoinedGroup> {
    let result = await this.store.classic.joinGroup(GROUP, this.request());
    if (result.outcome === 'member-id-required') {
      this.memberId = result.memberId;
      result = await this.store.classic.joinGroup(GROUP, this.request());
    }
    if (result.outcome !== 'joined') throw new TypeError('expected to join');
    this.memberId = result.memberId;
    this.generationId = result.generationId;
    return result;
  }

  /** SyncGroup; the leader spreads the buckets over the members round robin. */
  async sync(joined: ClassicJoinedGroup): Promise<void> {
    const assignments = joined.members.map((m, i) => ({
      memberId: m.memberId,
      assignment: Buffer.from(
        JSON.stringify(
          Array.from({ length: BUCKETS }, (_, b) => b).filter(
            (b) => b % joined.members.length === i,
          ),
        ),
      ),
    }));
    const result = await this.store.classic.syncGroup(GROUP, {
      memberId: this.memberId,
      generationId: this.generationId,
      protocolType: 'consumer',
      protocolName: 'range',
      assignments,
    });
    this.buckets = JSON.parse(result.assignment.toString() || '[]') as number[];
  }

  heartbeat(): Promise<void> {
    return this.store.classic.heartbeat(GROUP, {
      memberId: this.memberId,
      generationId: this.generationId,
      groupInstanceId: this.extra.groupInstanceId ?? null,
    });
  }

  commit(offset: number, generationId = this.generationId): Promise<void> {
    const offsets = this.buckets.map((bucketId) => ({ tableId: TABLE, bucketId, offset }));
    return this.store.commitOffsets(
      GROUP,
      offsets.length > 0 ? offsets : [{ tableId: TABLE, bucketId: 99, offset }],
      { generationId, memberId: this.memberId },
    );
  }
}

/** Joins and syncs `clients` into one generation: joins run together, the leader syncs last. */
async function rebalance(
  clock: ManualClock,
  clients: readonly ClassicClient[],
): Promise<ClassicJoinedGroup[]> {
  const joins = Promise.all(clients.map((c) => c.join()));
  let settled = false;
  joins.then(
    () => (settled = true),
    () => (settled = true),
  );
  // The initial delay (0 here) ends on a timer, armed once the joins reached the group (which may
  // first wait for the log's first durable write): the clock moves until they are answered.
  for (let i = 0; !settled && i < 2000; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    clock.advance(0);
  }
  const joined = await joins;
  const leaderIndex = joined.findIndex((j) => j.memberId === j.leader);
  const followerSyncs = clients
    .map((c, i) => (i === leaderIndex ? null : c.sync(joined[i]!)))
    .filter((p) => p !== null);
  await drain();
  await clients[leaderIndex]!.sync(joined[leaderIndex]!);
  await Promise.all(followerSyncs);
  return joined;
}

async function openStore(dir: string, clock: ManualClock): Promise<OffsetStore> {
  return OffsetStore.open({
    dir,
    clock,
    durability: 'os',
    bucketCount: 4,
    group: { initialRebalanceDelayMs: 0 },
  });
}

describe('the classic protocol over a real store', () => {
  it("joins, syncs, commits fenced by generation, survives a member's death and a leave, and comes back Stable after a reopen", async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    let store = await openStore(dir, clock);
    const clients = ['a', 'b', 'c'].map((id) => new ClassicClient(store, `client-${id}`));
    const gen1 = await rebalance(clock, clients);
    expect(gen1.map((j) => j.generationId)).toEqual([1, 1, 1]);
    expect(clients.flatMap((c) => c.buckets).sort()).toEqual([0, 1, 2, 3, 4, 5]);

    const description = await store.describeGroup(GROUP);
    expect(description).toMatchObject({
      state: 'Stable',
      groupType: 'classic',
      protocolType: 'consumer',
      members: [],
    });
    expect(description.classic).toMatchObject({
      generationId: 1,
      protocolName: 'range',
      leaderId: gen1[0]!.leader,
    });
    expect(description.classic!.members.map((m) => [m.clientId, m.clientHost])).toEqual(
      clients.map((c) => [c.clientId, '127.0.0.1']).sort((x, y) => (x[0]! < y[0]! ? -1 : 1)),
    );
    expect(await store.listGroups()).toEqual([
      {
        groupId: GROUP,
        state: 'Stable',
        offsetsBucket: store.bucketFor(GROUP),
        groupType: 'classic',
        protocolType: 'consumer',
      },
    ]);

    // Commits are fenced by generation and member; admin operations need an Empty group.
    for (const c of clients) await c.commit(10);
    const [a, b, c] = clients as [ClassicClient, ClassicClient, ClassicClient];
    expect(await code(a.commit(11, 0))).toBe('ILLEGAL_GENERATION');
    // A generation the group never had (newer than its own) is refused too, as Kafka refuses it.
    expect(await code(a.commit(11, 2))).toBe('ILLEGAL_GENERATION');
    expect(
      await code(
        store.commitOffsets(GROUP, [{ tableId: TABLE, bucketId: 0, offset: 1 }], {
          generationId: 1,
          memberId: 'ghost',
        }),
      ),
    ).toBe('UNKNOWN_MEMBER_ID');
    expect(
      await code(store.commitOffsets(GROUP, [{ tableId: TABLE, bucketId: 0, offset: 1 }])),
    ).toBe('UNKNOWN_MEMBER_ID');
    expect(
      await code(
        store.commitOffsets(GROUP, [{ tableId: TABLE, bucketId: 0, offset: 1 }], {
          generationId: -1,
        }),
      ),
    ).toBe('UNKNOWN_MEMBER_ID');
    expect(
      await code(store.resetOffsets(GROUP, [{ tableId: TABLE, bucketId: 0, offset: 0 }])),
    ).toBe('NON_EMPTY_GROUP');
    expect(await code(store.deleteOffsets(GROUP, [{ tableId: TABLE, bucketId: 0 }]))).toBe(
      'NON_EMPTY_GROUP',
    );
    // A caller that reads the members' metadata (here JSON naming the tables) says what they subscribe to.
    const subscriptions = (group: ClassicGroupDescription) =>
      new Set(
        group.members.flatMap(
          (m) => (JSON.parse(m.metadata.toString()) as { tables: number[] }).tables,
        ),
      );
    expect(
      await code(
        store.deleteOffsets(GROUP, [{ tableId: TABLE, bucketId: 0 }], {
          classicSubscriptions: subscriptions,
        }),
      ),
    ).toBe('GROUP_SUBSCRIBED_TO_BUCKET');
    expect(
      await code(
        store.deleteOffsets(GROUP, [{ tableId: TABLE + 1, bucketId: 0 }], {
          classicSubscriptions: subscriptions,
        }),
      ),
    ).toBe('OK');
    expect(
      await code(
        store.deleteOffsets(GROUP, [{ tableId: TABLE + 1, bucketId: 0 }], {
          classicSubscriptions: () => undefined,
        }),
      ),
    ).toBe('NON_EMPTY_GROUP');
    // Table ids as an array, not the Set asked for: said so, not an internal error.
    await expect(
      store.deleteOffsets(GROUP, [{ tableId: TABLE + 1, bucketId: 0 }], {
        classicSubscriptions: () => [TABLE] as never,
      }),
    ).rejects.toThrow(
      new TypeError(
        'options.classicSubscriptions must return a Set of table ids or undefined, got an array',
      ),
    );
    expect(await code(store.deleteGroup(GROUP))).toBe('NON_EMPTY_GROUP');
    expect(
      await code(store.heartbeat(GROUP, { memberEpoch: 0, subscribedTableIds: [TABLE] })),
    ).toBe('INCONSISTENT_GROUP_PROTOCOL');

    // c dies: the others heartbeat; at c's session timeout the group rebalances without it.
    for (let t = 0; t < 3; t++) {
      clock.advance(3000);
      await a.heartbeat();
      await b.heartbeat();
    }
    clock.advance(1000);
    await drain();
    expect(await code(a.heartbeat())).toBe('REBALANCE_IN_PROGRESS');
    expect(await code(a.commit(12))).toBe('OK'); // the old generation may commit until the join completes
    const gen2 = await rebalance(clock, [a, b]);
    expect(gen2.map((j) => j.generationId)).toEqual([2, 2]);
    expect(await code(c.heartbeat())).toBe('UNKNOWN_MEMBER_ID');
    expect(await code(a.commit(13, 1))).toBe('ILLEGAL_GENERATION');
    expect([...a.buckets, ...b.buckets].sort()).toEqual([0, 1, 2, 3, 4, 5]);

    // b leaves; a rejoins alone.
    const left = await store.classic.leaveGroup(GROUP, { members: [{ memberId: b.memberId }] });
    expect(left.members).toEqual([
      { memberId: b.memberId, groupInstanceId: null, errorCode: null },
    ]);
    expect(await code(a.heartbeat())).toBe('REBALANCE_IN_PROGRESS');
    await rebalance(clock, [a]);
    expect(a.generationId).toBe(3);
    expect(a.buckets).toEqual([0, 1, 2, 3, 4, 5]);
    await a.commit(20);
    await store.close();

    // Reopened: Stable at generation 3, the same leader and assignment; a carries on without rejoining.
    store = await openStore(dir, clock);
    const restored = await store.describeGroup(GROUP);
    expect(restored).toMatchObject({
      state: 'Stable',
      groupType: 'classic',
      classic: { generationId: 3, leaderId: a.memberId },
    });
    const reborn = Object.assign(new ClassicClient(store, 'client-a'), {
      memberId: a.memberId,
      generationId: 3,
    });
    await reborn.heartbeat();
    const synced = await store.classic.syncGroup(GROUP, { memberId: a.memberId, generationId: 3 });
    expect(JSON.parse(synced.assignment.toString())).toEqual([0, 1, 2, 3, 4, 5]);
    reborn.buckets = [0, 1];
    await reborn.commit(21);
    expect(
      (
        await store.fetchOffsets(GROUP, [
          { tableId: TABLE, bucketId: 0 },
          { tableId: TABLE, bucketId: 5 },
        ])
      ).map((o) => o?.offset),
    ).toEqual([21, 20]);

    // Nobody heartbeats: after the session timeout the group is Empty, and the admin rules let go.
    clock.advance(10_000);
    await drain();
    expect((await store.describeGroup(GROUP)).state).toBe('Empty');
    await store.resetOffsets(GROUP, [{ tableId: TABLE, bucketId: 0, offset: 0 }]);
    await store.commitOffsets(GROUP, [{ tableId: TABLE, bucketId: 0, offset: 1 }], {
      generationId: -1,
    });
    await store.deleteGroup(GROUP);
    expect(await store.listGroups()).toEqual([]);
    await store.close();
  });

  it('a static member restarting rejoins under a new member id with its assignment, without a rebalance; its old id is fenced', async () => {
    const clock = new ManualClock();
    const store = await openStore(tempDir(), clock);
    const clients = ['a', 'b'].map(
      (id) =>
        new ClassicClient(store, `client-${id}`, {
          groupInstanceId: `instance-${id}`,
          requireKnownMemberId: false,
        }),
    );
    const joined = await rebalance(clock, clients);
    const follower = clients[joined.findIndex((j) => j.memberId !== j.leader)]!;
    const oldId = follower.memberId;
    const before = [...follower.buckets];
    const restarted = new ClassicClient(store, follower.clientId, follower.extra);
    const rejoined = await restarted.join();
    expect(rejoined).toMatchObject({ generationId: 1, members: [] });
    expect(restarted.memberId).not.toBe(oldId);
    await restarted.sync(rejoined);
    expect(restarted.buckets).toEqual(before);
    expect(await code(follower.heartbeat())).toBe('FENCED_INSTANCE_ID');
    expect(
      await code(
        store.commitOffsets(GROUP, [{ tableId: TABLE, bucketId: before[0]!, offset: 5 }], {
          generationId: 1,
          memberId: oldId,
          groupInstanceId: follower.extra.groupInstanceId!,
        }),
      ),
    ).toBe('FENCED_INSTANCE_ID');
    expect((await store.describeGroup(GROUP)).state).toBe('Stable');
    await store.close();
  });

  it("a pending member (MEMBER_ID_REQUIRED, never back) whose session runs out does not cut the initial rebalance's delay short", async () => {
    const clock = new ManualClock();
    const store = await OffsetStore.open({
      dir: tempDir(),
      clock,
      durability: 'os',
      bucketCount: 1,
      group: { initialRebalanceDelayMs: 3000 },
    });
    try {
      let answered = false;
      const joining = store.classic
        .joinGroup(GROUP, new ClassicClient(store, 'a', { requireKnownMemberId: false }).request())
        .finally(() => (answered = true));
      const pending = await store.classic.joinGroup(
        GROUP,
        new ClassicClient(store, 'b', { sessionTimeoutMs: 500 }).request(),
      );
      expect(pending.outcome).toBe('member-id-required');
      await drain();
      clock.advance(500); // b's session runs out: it stops being waited for
      await drain();
      expect(answered, 'the initial delay still runs').toBe(false);
      clock.advance(2500);
      expect(await joining).toMatchObject({ outcome: 'joined', generationId: 1 });
    } finally {
      await store.close();
    }
  });

  it('closing the store settles parked JoinGroup and SyncGroup calls with STORE_CLOSED', async () => {
    const clock = new ManualClock();
    const store = await OffsetStore.open({
      dir: tempDir(),
      clock,
      durability: 'os',
      bucketCount: 1,
      group: { initialRebalanceDelayMs: 3000 },
    });
    const request = new ClassicClient(store, 'x', { requireKnownMemberId: false }).request();
    const [j1, j2] = [
      store.classic.joinGroup(GROUP, request),
      store.classic.joinGroup(GROUP, request),
    ];
    await drain();
    clock.advance(3000); // the second member joined during the first delay: one more delay
    clock.advance(3000);
    const joined = [await j1, await j2] as ClassicJoinedGroup[];
    const follower = joined.find((j) => j.memberId !== j.leader)!;
    const parkedSync = code(
      store.classic.syncGroup(GROUP, {
        memberId: follower.memberId,
        generationId: follower.generationId,
      }),
    );
    const parkedJoin = code(store.classic.joinGroup('waiting', request));
    await drain();
    await store.close();
    expect(await parkedJoin).toBe('STORE_CLOSED');
    expect(await parkedSync).toBe('STORE_CLOSED');
    expect(await code(store.classic.joinGroup(GROUP, request))).toBe('STORE_CLOSED');
  });

  it("a commit at generation 0 without a member id is a classic member's, not an admin commit: a group without a generation refuses it, writing nothing", async () => {
    const store = await openStore(tempDir(), new ManualClock());
    const offsets = [{ tableId: TABLE, bucketId: 0, offset: 1 }];
    expect(await code(store.commitOffsets(GROUP, offsets, { generationId: 0 }))).toBe(
      'ILLEGAL_GENERATION',
    );
    expect(await store.fetchOffsets(GROUP, [{ tableId: TABLE, bucketId: 0 }])).toEqual([null]);
    // Generation -1 (any negative) with no member is Kafka's admin commit.
    await store.commitOffsets(GROUP, offsets, { generationId: -1 });
    expect((await store.fetchOffsets(GROUP, [{ tableId: TABLE, bucketId: 0 }]))[0]?.offset).toBe(1);
    await store.close();
  });

  it('a group id has one type: a classic JoinGroup into a consumer group with members is INCONSISTENT_GROUP_PROTOCOL; an Empty one is taken over', async () => {
    const clock = new ManualClock();
    const store = await openStore(tempDir(), clock);
    store.setTableLayout(TABLE, { bucketCount: BUCKETS });
    const member = await store.heartbeat(GROUP, { memberEpoch: 0, subscribedTableIds: [TABLE] });
    const client = new ClassicClient(store, 'k', { requireKnownMemberId: false });
    expect(await code(client.join())).toBe('INCONSISTENT_GROUP_PROTOCOL');
    await store.heartbeat(GROUP, { memberId: member.memberId, memberEpoch: -1 });
    expect((await store.listGroups())[0]).toMatchObject({ groupType: 'consumer', state: 'Empty' });
    await rebalance(clock, [client]);
    expect((await store.listGroups())[0]).toMatchObject({
      groupType: 'classic',
      state: 'Stable',
      protocolType: 'consumer',
    });
    const removed = await store.removeMembers(GROUP, { all: true });
    expect(removed.map((m) => m.memberId)).toEqual([client.memberId]);
    expect((await store.describeGroup(GROUP)).state).toBe('Empty');
    await store.deleteGroup(GROUP);
    await store.close();
  });

  it("an Empty group's offsets expire retention after the group became Empty, not after their commit, across a reopen", async () => {
    const HOUR = 3_600_000;
    const DAY = 24 * HOUR;
    const RETENTION_MS = 7 * DAY;
    const dir = tempDir();
    const clock = new ManualClock(1_700_000_000_000);
    const fs = new TrackingFileSystem();
    const open = () =>
      OffsetStore.open({
        dir,
        clock,
        fs,
        durability: 'os',
        bucketCount: 1,
        offsetsRetentionMs: RETENTION_MS,
        offsetsRetentionCheckIntervalMs: HOUR,
        group: { initialRebalanceDelayMs: 0 },
      });
    /** Moves the clock in retention-check steps, letting each check's writes land. */
    const pass = async (ms: number) => {
      for (let moved = 0; moved < ms; moved += HOUR) {
        clock.advance(Math.min(HOUR, ms - moved));
        await drain();
        await ioIdle(fs); // a loaded machine's writes take longer than a drain
      }
    };
    let store = await open();
    const a = new ClassicClient(store, 'a', { sessionTimeoutMs: DAY });
    await rebalance(clock, [a]);
    await a.commit(42);
    const committedAt = clock.nowMs();
    // Eight quiet days: the member heartbeats but never commits again (its position did not move).
    for (let day = 0; day < 8; day++) {
      await pass(DAY / 2);
      await a.heartbeat();
      await pass(DAY / 2);
      await a.heartbeat();
    }
    const fetch = async () =>
      (await store.fetchOffsets(GROUP, [{ tableId: TABLE, bucketId: 0 }]))[0];
    expect(await fetch(), 'a group with members keeps its offsets').toMatchObject({
      offset: 42,
      commitTimestampMs: committedAt,
    });
    await store.classic.leaveGroup(GROUP, { members: [{ memberId: a.memberId }] });
    expect((await store.describeGroup(GROUP)).state).toBe('Empty');
    const emptyAt = clock.nowMs();
    await pass(DAY);
    expect((await fetch())?.offset, 'a day after the group emptied').toBe(42);
    await store.close();
    store = await open();
    await pass(RETENTION_MS - DAY - HOUR);
    expect(clock.nowMs()).toBe(emptyAt + RETENTION_MS - HOUR);
    expect((await fetch())?.offset, 'after a reopen, an hour before retention ends').toBe(42);
    await pass(HOUR);
    expect(await fetch(), 'retention after the group became Empty').toBeNull();
    await store.close();
  });

  it('a group rebalancing with no members (its only member left during the initial delay) keeps its offsets: they used to expire by their commit time', async () => {
    const dir = tempDir();
    const clock = new ManualClock(1_700_000_000_000);
    const store = await OffsetStore.open({
      dir,
      clock,
      durability: 'os',
      bucketCount: 1,
      offsetsRetentionMs: 10_000,
      offsetsRetentionCheckIntervalMs: 1000,
      group: { initialRebalanceDelayMs: 3000 },
    });
    const a = new ClassicClient(store, 'a', { sessionTimeoutMs: 30_000 });
    const joins = a.join();
    // Its join waits out the initial delay once it is in the group; advanced earlier, the clock
    // would run a retention pass over the group still Empty, which drops it (it has no offsets).
    await untilMembers(store, 1);
    clock.advance(3000);
    await a.sync(await joins);
    await a.commit(42);
    for (let t = 0; t < 4; t++) {
      clock.advance(4000);
      await a.heartbeat();
    }
    await store.classic.leaveGroup(GROUP, { members: [{ memberId: a.memberId }] });
    await drain();
    // Empty for 5 s, its offset committed 21 s ago: kept (retention runs from when it emptied).
    clock.advance(5000);
    await drain();
    const fetch = async () =>
      (await store.fetchOffsets(GROUP, [{ tableId: TABLE, bucketId: 0 }]))[0]?.offset;
    expect(await fetch()).toBe(42);
    // A consumer joins (the initial delay starts) and leaves before it ends.
    const b = new ClassicClient(store, 'b', { requireKnownMemberId: false });
    const parked = store.classic.joinGroup(GROUP, b.request()).catch(() => undefined);
    await untilMembers(store, 1);
    const joining = (await store.describeGroup(GROUP)).classic!.members[0]!.memberId;
    await store.classic.leaveGroup(GROUP, { members: [{ memberId: joining }] });
    await parked;
    expect((await store.describeGroup(GROUP)).classic).toMatchObject({
      state: 'PreparingRebalance',
      members: [],
    });
    clock.advance(1000); // a retention check while it rebalances with no members
    await drain();
    expect(await fetch()).toBe(42);
    await store.close();
  });

  it('removing every member while a consumer is still to join (MEMBER_ID_REQUIRED) is durable: the removed members used to come back after a reopen', async () => {
    const dir = tempDir();
    const clock = new ManualClock(1_700_000_000_000);
    let store = await openStore(dir, clock);
    const [a, b] = [new ClassicClient(store, 'a'), new ClassicClient(store, 'b')];
    await rebalance(clock, [a, b]);
    const generation = (await store.describeGroup(GROUP)).classic!.generationId;
    const third = new ClassicClient(store, 'c');
    expect((await store.classic.joinGroup(GROUP, third.request())).outcome).toBe(
      'member-id-required',
    );
    expect(await store.removeMembers(GROUP, { all: true })).toHaveLength(2);
    await store.close();
    store = await openStore(dir, clock);
    expect((await store.describeGroup(GROUP)).classic).toMatchObject({
      state: 'Empty',
      members: [],
      generationId: generation + 1,
    });
    // The group works on from there: the third consumer joins it.
    const c = new ClassicClient(store, 'c');
    await rebalance(clock, [c]);
    expect((await store.describeGroup(GROUP)).classic).toMatchObject({
      state: 'Stable',
      generationId: generation + 2,
    });
    await store.close();
  });

  it('a clock with fractions of a millisecond leaves an Empty snapshot the next open reads', async () => {
    const dir = tempDir();
    const clock = new ManualClock(1_700_000_000_000);
    clock.advance(0.25);
    let store = await openStore(dir, clock);
    const a = new ClassicClient(store, 'a');
    await rebalance(clock, [a]);
    await a.commit(7);
    await store.classic.leaveGroup(GROUP, { members: [{ memberId: a.memberId }] });
    expect((await store.describeGroup(GROUP)).state).toBe('Empty');
    await store.close();
    store = await openStore(dir, clock);
    expect((await store.describeGroup(GROUP)).state).toBe('Empty');
    await store.close();
  });
});

describe('the bytes a classic call answers with', () => {
  it('are copies: a caller that changes them changes nothing of the group, in memory or on disk', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open({ dir, group: { initialRebalanceDelayMs: 0 } });
    const join = await store.classic.joinGroup('C', {
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: new Uint8Array([1, 2, 3]) }],
      sessionTimeoutMs: 30_000,
    });
    if (join.outcome !== 'joined') throw new Error(`not joined: ${join.outcome}`);
    const sync = await store.classic.syncGroup('C', {
      memberId: join.memberId,
      generationId: join.generationId,
      assignments: [{ memberId: join.memberId, assignment: new Uint8Array([5, 5]) }],
    });
    join.members[0]!.metadata.fill(0);
    sync.assignment.fill(0xff);

    const member = (await store.describeGroup('C')).classic!.members[0]!;
    expect([...member.metadata, ...member.assignment]).toEqual([1, 2, 3, 5, 5]);
    const again = await store.classic.syncGroup('C', {
      memberId: join.memberId,
      generationId: join.generationId,
    });
    expect([...again.assignment]).toEqual([5, 5]);
    await store.close();
    const reopened = await OffsetStore.open({ dir });
    const restored = (await reopened.describeGroup('C')).classic!.members[0]!;
    expect([...restored.metadata, ...restored.assignment]).toEqual([1, 2, 3, 5, 5]);
    await reopened.close();
  });
});
