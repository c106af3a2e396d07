/**
 * The classic group protocol on the wire, over store.classic, with a raw client and a manual clock
 * (the store's join delay, session and rebalance timers move only when a test advances it):
 * JoinGroup (MEMBER_ID_REQUIRED from v4, KIP-394; a member id at once before), the answer held
 * until the join phase completes, the leader's member list, SyncGroup handing out the leader's
 * assignments, Heartbeat, OffsetCommit fenced by generation (v2-8 and v9 alike), LeaveGroup one
 * member (v0-2) or a batch (v3+), DescribeGroups and ListGroups reporting classic groups; held
 * answers released when their connection or the server closes; and a Stable group that stays
 * Stable, with its generation and assignments, across a restart of the server and the store.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/index.js';
import { encodeSubscription } from '../../../src/kafka/handlers/consumer-protocol.js';
import { API_KEYS, KAFKA_ERROR } from '../../../src/kafka/protocol/index.js';
import { tempDir } from '../../support/temp-dir.js';
import { RawKafkaClient } from '../support/raw-kafka-client.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

const INITIAL_DELAY_MS = 3_000;
const clients: RawKafkaClient[] = [];
const servers: TestServer[] = [];

async function start(dir = tempDir(), clock = new ManualClock()): Promise<TestServer> {
  const t = await startTestServer({
    dir,
    clock,
    store: { group: { assignmentIntervalMs: 0, initialRebalanceDelayMs: INITIAL_DELAY_MS } },
    server: { topics: [{ name: 'orders', partitions: 4 }] },
  });
  servers.push(t);
  return t;
}

async function connect(t: TestServer): Promise<RawKafkaClient> {
  const client = await RawKafkaClient.connect(t.server.port);
  clients.push(client);
  return client;
}

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const t of servers.splice(0)) {
    await t.close();
    expect(t.warnings).toEqual([]);
  }
});

/** Polls (real time: the server's I/O, not the store's timers) until `condition` holds; at least one turn. */
async function until(condition: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (await condition()) return;
  }
  throw new Error('condition not reached in 1 s');
}

const protocols = (tag: string) => [
  { name: 'range', metadata: Buffer.from(`range-of-${tag}`) },
  { name: 'roundrobin', metadata: Buffer.from(`rr-of-${tag}`) },
];

function join(client: RawKafkaClient, memberId: string, tag: string, version = 5) {
  return client.send(
    API_KEYS.JoinGroup,
    version,
    {
      groupId: 'g',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 20_000,
      memberId,
      protocolType: 'consumer',
      protocols: protocols(tag),
    },
    `client-${tag}`,
  );
}

/** Two members, a and b, through MEMBER_ID_REQUIRED, the join delay and SyncGroup: a Stable group. */
async function stableGroup(t: TestServer, clock: ManualClock) {
  const a = await connect(t);
  const b = await connect(t);
  const firstA = await join(a, '', 'a');
  const firstB = await join(b, '', 'b');
  expect([firstA.errorCode, firstB.errorCode]).toEqual([
    KAFKA_ERROR.MEMBER_ID_REQUIRED,
    KAFKA_ERROR.MEMBER_ID_REQUIRED,
  ]);
  expect(firstA.memberId).toMatch(/^client-a-/);
  const joinA = join(a, firstA.memberId, 'a');
  const joinB = join(b, firstB.memberId, 'b');
  await until(async () => (await t.store.describeGroup('g')).classic?.members.length === 2);
  clock.advance(INITIAL_DELAY_MS);
  await until(async () => true);
  expect(
    a.pendingCount + b.pendingCount,
    'members joined during the delay: it is waited once more, answers held',
  ).toBe(2);
  clock.advance(INITIAL_DELAY_MS);
  const [joinedA, joinedB] = await Promise.all([joinA, joinB]);
  expect([joinedA.errorCode, joinedB.errorCode]).toEqual([0, 0]);
  expect(joinedA.generationId).toBe(joinedB.generationId);
  const [leader, follower] =
    joinedA.leader === joinedA.memberId
      ? [
          { c: a, j: joinedA, tag: 'a' },
          { c: b, j: joinedB, tag: 'b' },
        ]
      : [
          { c: b, j: joinedB, tag: 'b' },
          { c: a, j: joinedA, tag: 'a' },
        ];
  expect(leader.j.protocolName).toBe('range');
  expect(leader.j.members.map((m) => [m.memberId, m.metadata.toString()]).sort()).toEqual(
    [
      [joinedA.memberId, 'range-of-a'],
      [joinedB.memberId, 'range-of-b'],
    ].sort(),
  );
  expect(follower.j.members, 'only the leader gets the member list').toEqual([]);
  const generationId = joinedA.generationId;
  const assignments = [
    { memberId: leader.j.memberId, assignment: Buffer.from(`parts-of-${leader.tag}`) },
    { memberId: follower.j.memberId, assignment: Buffer.from(`parts-of-${follower.tag}`) },
  ];
  const [leaderSync, followerSync] = await Promise.all([
    leader.c.send(API_KEYS.SyncGroup, 3, {
      groupId: 'g',
      generationId,
      memberId: leader.j.memberId,
      assignments,
    }),
    follower.c.send(API_KEYS.SyncGroup, 3, {
      groupId: 'g',
      generationId,
      memberId: follower.j.memberId,
      assignments: [],
    }),
  ]);
  expect([leaderSync.errorCode, leaderSync.assignment.toString()]).toEqual([
    0,
    `parts-of-${leader.tag}`,
  ]);
  expect([followerSync.errorCode, followerSync.assignment.toString()]).toEqual([
    0,
    `parts-of-${follower.tag}`,
  ]);
  return { a, b, memberA: joinedA.memberId, memberB: joinedB.memberId, generationId };
}

describe('JoinGroup, SyncGroup, Heartbeat', () => {
  it('form a Stable group: MEMBER_ID_REQUIRED from v4, answers held for the join delay, the leader assigns, heartbeats succeed; a wrong generation is ILLEGAL_GENERATION', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const { a, memberA, generationId } = await stableGroup(t, clock);
    for (let version = 0; version <= 4; version++) {
      expect(
        (
          await a.send(API_KEYS.Heartbeat, version, {
            groupId: 'g',
            generationId,
            memberId: memberA,
          })
        ).errorCode,
        `Heartbeat v${version}`,
      ).toBe(0);
    }
    expect(
      (
        await a.send(API_KEYS.Heartbeat, 3, {
          groupId: 'g',
          generationId: generationId + 1,
          memberId: memberA,
        })
      ).errorCode,
    ).toBe(KAFKA_ERROR.ILLEGAL_GENERATION);
    expect(
      (await a.send(API_KEYS.Heartbeat, 3, { groupId: 'g', generationId, memberId: 'nobody' }))
        .errorCode,
    ).toBe(KAFKA_ERROR.UNKNOWN_MEMBER_ID);
  });

  it('v0-3 join a new member at once with a generated id (no MEMBER_ID_REQUIRED); v4+ (flexible v6 too) ask for it first', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const client = await connect(t);
    for (let version = 4; version <= 6; version++) {
      const first = await join(client, '', `v${version}`, version);
      expect([first.errorCode, first.memberId.length > 0], `v${version}`).toEqual([
        KAFKA_ERROR.MEMBER_ID_REQUIRED,
        true,
      ]);
    }
    const joining = join(client, '', 'v3', 3);
    await until(async () => (await t.store.describeGroup('g')).classic?.members.length === 1);
    clock.advance(INITIAL_DELAY_MS);
    const joined = await joining;
    expect(joined).toMatchObject({ errorCode: 0, generationId: 1, protocolName: 'range' });
    expect(joined.leader).toBe(joined.memberId);
  });

  it('takes a rebalance timeout of 2^31-1 ms (a Java consumer with max.poll.interval.ms = Integer.MAX_VALUE) as the longest the store keeps, one day', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const client = await connect(t);
    const request = {
      groupId: 'g',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 2_147_483_647,
      memberId: '',
      protocolType: 'consumer',
      protocols: protocols('java'),
    };
    const first = await client.send(API_KEYS.JoinGroup, 5, request);
    expect(first.errorCode).toBe(KAFKA_ERROR.MEMBER_ID_REQUIRED);
    const joining = client.send(API_KEYS.JoinGroup, 5, { ...request, memberId: first.memberId });
    await until(async () => (await t.store.describeGroup('g')).classic?.members.length === 1);
    clock.advance(INITIAL_DELAY_MS);
    expect(await joining).toMatchObject({
      errorCode: 0,
      generationId: 1,
      memberId: first.memberId,
    });
    expect((await t.store.describeGroup('g')).classic?.members[0]).toMatchObject({
      rebalanceTimeoutMs: 86_400_000,
    });
  });

  it('takes a rebalance timeout of 0 or below -1, which Kafka takes too, as 1 ms rather than refusing the join', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const client = await connect(t);
    for (const [groupId, rebalanceTimeoutMs] of [
      ['zero', 0],
      ['negative', -5],
    ] as const) {
      const request = {
        groupId,
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs,
        memberId: '',
        protocolType: 'consumer',
        protocols: protocols('java'),
      };
      const first = await client.send(API_KEYS.JoinGroup, 5, request);
      expect(first.errorCode, groupId).toBe(KAFKA_ERROR.MEMBER_ID_REQUIRED);
      const joining = client.send(API_KEYS.JoinGroup, 5, { ...request, memberId: first.memberId });
      await until(async () => (await t.store.describeGroup(groupId)).classic?.members.length === 1);
      clock.advance(INITIAL_DELAY_MS);
      expect(await joining, groupId).toMatchObject({ errorCode: 0, generationId: 1 });
      expect((await t.store.describeGroup(groupId)).classic?.members[0]).toMatchObject({
        rebalanceTimeoutMs: 1,
      });
    }
  });

  it('refuses a JoinGroup of another protocol type (INCONSISTENT_GROUP_PROTOCOL), an unknown member id (UNKNOWN_MEMBER_ID) and an empty group id (INVALID_GROUP_ID)', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    await stableGroup(t, clock);
    const c = await connect(t);
    const other = await c.send(API_KEYS.JoinGroup, 5, {
      groupId: 'g',
      sessionTimeoutMs: 10_000,
      memberId: '',
      protocolType: 'connect',
      protocols: protocols('x'),
    });
    expect(other.errorCode).toBe(KAFKA_ERROR.INCONSISTENT_GROUP_PROTOCOL);
    expect((await join(c, 'made-up', 'x')).errorCode).toBe(KAFKA_ERROR.UNKNOWN_MEMBER_ID);
    expect(
      (
        await c.send(API_KEYS.JoinGroup, 5, {
          groupId: '',
          sessionTimeoutMs: 10_000,
          memberId: '',
          protocolType: 'consumer',
          protocols: protocols('x'),
        })
      ).errorCode,
    ).toBe(KAFKA_ERROR.INVALID_GROUP_ID);
  });
});

describe('client ids', () => {
  it('joins a member whose client id is long or has characters outside the BMP: its generated member id is usable, and describes report the client id cut to 255 characters', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const a = await connect(t);
    const b = await connect(t);
    // 241 UTF-16 units: a member id prefix cut at 200 would split the 100th emoji in half.
    const emoji = 'a' + '\u{1F600}'.repeat(120);
    const long = 'c'.repeat(1000);
    const joinAs = (clientId: string, memberId: string, client = a) =>
      client.send(
        API_KEYS.JoinGroup,
        5,
        {
          groupId: 'g',
          sessionTimeoutMs: 10_000,
          rebalanceTimeoutMs: 20_000,
          memberId,
          protocolType: 'consumer',
          protocols: protocols('x'),
        },
        clientId,
      );
    const first = await joinAs(emoji, '');
    expect(first.errorCode).toBe(KAFKA_ERROR.MEMBER_ID_REQUIRED);
    expect(first.memberId.isWellFormed()).toBe(true);
    expect(first.memberId).not.toContain('\uFFFD');
    const firstLong = await joinAs(long, '', b);
    expect(firstLong.errorCode).toBe(KAFKA_ERROR.MEMBER_ID_REQUIRED);
    const joining = [joinAs(emoji, first.memberId), joinAs(long, firstLong.memberId, b)];
    await until(async () => (await t.store.describeGroup('g')).classic?.members.length === 2);
    clock.advance(INITIAL_DELAY_MS);
    await until(async () => true);
    clock.advance(INITIAL_DELAY_MS);
    const joined = await Promise.all(joining);
    expect(joined.map((j) => j.errorCode)).toEqual([0, 0]);
    expect(joined.map((j) => j.memberId)).toEqual([first.memberId, firstLong.memberId]);
    const [g] = (await a.send(API_KEYS.DescribeGroups, 5, { groups: ['g'] })).groups;
    expect(g!.members.map((m) => m.clientId).sort()).toEqual([emoji, long.slice(0, 255)].sort());
  });
});

describe('OffsetDelete in a classic group with members', () => {
  it("reads a consumer group's subscriptions from its members' metadata: refuses the subscribed topic (86), deletes the others; where it cannot read them every topic counts as subscribed (86); a group of another protocol type is refused whole (68), as Kafka does", async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const c = await connect(t);
    await c.send(API_KEYS.Metadata, 12, {
      topics: [{ name: 'other', topicId: '00000000-0000-0000-0000-000000000000' }],
      allowAutoTopicCreation: true,
    });
    const admin = await c.send(API_KEYS.OffsetCommit, 8, {
      groupId: 'readers',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: ['orders', 'other'].map((name) => ({
        name,
        partitions: [
          {
            partitionIndex: 0,
            committedOffset: 5n,
            committedLeaderEpoch: -1,
            committedMetadata: '',
          },
        ],
      })),
    });
    expect(admin.topics.map((tp) => tp.partitions[0]!.errorCode)).toEqual([0, 0]);
    const request = (memberId: string) => ({
      memberId,
      clientId: 'java-consumer',
      clientHost: '/127.0.0.1',
      protocolType: 'consumer',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      requireKnownMemberId: true,
      protocols: [{ name: 'range', metadata: encodeSubscription(['orders']) }],
    });
    const first = await t.store.classic.joinGroup('readers', request(''));
    const joining = t.store.classic.joinGroup('readers', request(first.memberId));
    await until(async () => (await t.store.describeGroup('readers')).classic?.members.length === 1);
    clock.advance(INITIAL_DELAY_MS);
    const joined = await joining;
    if (joined.outcome !== 'joined') throw new TypeError('expected to join');
    await t.store.classic.syncGroup('readers', {
      memberId: joined.memberId,
      generationId: joined.generationId,
      protocolType: 'consumer',
      protocolName: 'range',
      assignments: [{ memberId: joined.memberId, assignment: Buffer.alloc(0) }],
    });
    expect((await t.store.describeGroup('readers')).state).toBe('Stable');
    const deleted = await c.send(API_KEYS.OffsetDelete, 0, {
      groupId: 'readers',
      topics: ['orders', 'other'].map((name) => ({ name, partitions: [{ partitionIndex: 0 }] })),
    });
    expect(deleted.errorCode).toBe(0);
    expect(deleted.topics.map((tp) => [tp.name, tp.partitions[0]!.errorCode])).toEqual([
      ['orders', KAFKA_ERROR.GROUP_SUBSCRIBED_TO_TOPIC],
      ['other', 0],
    ]);
    const otherTable = (await t.store.fetchOffsets('readers')).map((v) => v?.tableId);
    expect(otherTable).toEqual([1]);

    await stableGroup(t, clock); // group 'g': metadata that is no consumer-protocol subscription
    const unreadable = await c.send(API_KEYS.OffsetDelete, 0, {
      groupId: 'g',
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 0 }] }],
    });
    expect(unreadable.errorCode).toBe(0);
    expect(unreadable.topics[0]!.partitions[0]!.errorCode).toBe(
      KAFKA_ERROR.GROUP_SUBSCRIBED_TO_TOPIC,
    );

    // A group of another protocol type, in its first rebalance.
    const connectJoin = t.store.classic.joinGroup('connectors', {
      ...request(''),
      protocolType: 'connect',
      requireKnownMemberId: false,
    });
    await until(
      async () => (await t.store.describeGroup('connectors')).classic?.members.length === 1,
    );
    const refused = await c.send(API_KEYS.OffsetDelete, 0, {
      groupId: 'connectors',
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 0 }] }],
    });
    clock.advance(INITIAL_DELAY_MS);
    expect((await connectJoin).outcome).toBe('joined');
    expect([refused.errorCode, refused.topics]).toEqual([KAFKA_ERROR.NON_EMPTY_GROUP, []]);
  });
});

describe('OffsetDelete in an empty classic group', () => {
  it('deletes the offsets of a group of another protocol type once its members have left (Kafka refuses such a group only while it has members)', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const c = await connect(t);
    await t.store.commitOffsets('connectors', [{ tableId: 1, bucketId: 0, offset: 5 }]);
    const joining = t.store.classic.joinGroup('connectors', {
      memberId: '',
      clientId: 'connect-worker',
      clientHost: '/127.0.0.1',
      protocolType: 'connect',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      requireKnownMemberId: false,
      protocols: [{ name: 'sessioned', metadata: Buffer.from('worker') }],
    });
    await until(
      async () => (await t.store.describeGroup('connectors')).classic?.members.length === 1,
    );
    clock.advance(INITIAL_DELAY_MS);
    const joined = await joining;
    if (joined.outcome !== 'joined') throw new TypeError('expected to join');
    await t.store.classic.leaveGroup('connectors', {
      members: [{ memberId: joined.memberId, groupInstanceId: null }],
    });
    expect((await t.store.describeGroup('connectors')).classic?.members).toEqual([]);
    const deleted = await c.send(API_KEYS.OffsetDelete, 0, {
      groupId: 'connectors',
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 0 }] }],
    });
    expect([deleted.errorCode, deleted.topics[0]?.partitions[0]?.errorCode]).toEqual([0, 0]);
    expect((await t.store.fetchOffsets('connectors', [{ tableId: 1, bucketId: 0 }]))[0]).toBeNull();
  });
});

describe('OffsetCommit in a classic group', () => {
  it('commits with the generation and member id (v5 and v9 alike), refuses a stale generation (ILLEGAL_GENERATION), an unknown member and an admin commit (UNKNOWN_MEMBER_ID)', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const { a, memberA, generationId } = await stableGroup(t, clock);
    const commit = (version: number, generation: number, memberId: string, offset: bigint) =>
      a
        .send(API_KEYS.OffsetCommit, version, {
          groupId: 'g',
          generationIdOrMemberEpoch: generation,
          memberId,
          topics: [
            { name: 'orders', partitions: [{ partitionIndex: 1, committedOffset: offset }] },
          ],
        })
        .then((r) => r.topics[0]!.partitions[0]!.errorCode);
    expect(await commit(5, generationId, memberA, 10n)).toBe(0);
    expect(
      await commit(9, generationId, memberA, 11n),
      'v9 reads a generation in a classic group',
    ).toBe(0);
    expect(await commit(5, generationId - 1, memberA, 12n)).toBe(KAFKA_ERROR.ILLEGAL_GENERATION);
    expect(await commit(9, generationId, 'nobody', 12n)).toBe(KAFKA_ERROR.UNKNOWN_MEMBER_ID);
    expect(
      await commit(5, -1, '', 12n),
      'no commit without a member while the group has members',
    ).toBe(KAFKA_ERROR.UNKNOWN_MEMBER_ID);
    expect((await t.store.fetchOffsets('g', [{ tableId: 1, bucketId: 1 }]))[0]?.offset).toBe(11);
  });
});

describe('LeaveGroup', () => {
  it('removes one member (v0-2, its outcome as the error code) or a batch (v3+, one answer each); the others must rejoin (REBALANCE_IN_PROGRESS)', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const { a, memberA, memberB, generationId } = await stableGroup(t, clock);
    const unknown = await a.send(API_KEYS.LeaveGroup, 1, { groupId: 'g', memberId: 'nobody' });
    expect(unknown.errorCode).toBe(KAFKA_ERROR.UNKNOWN_MEMBER_ID);
    // An entry naming no member (an empty id, or an empty instance id) is answered alone, as Kafka
    // does; the batch used to be refused whole (INVALID_REQUEST), the others staying in the group.
    expect((await a.send(API_KEYS.LeaveGroup, 0, { groupId: 'g', memberId: '' })).errorCode).toBe(
      KAFKA_ERROR.UNKNOWN_MEMBER_ID,
    );
    const batch = await a.send(API_KEYS.LeaveGroup, 3, {
      groupId: 'g',
      members: [
        { memberId: '' },
        { memberId: memberB },
        { memberId: 'nobody' },
        { memberId: '', groupInstanceId: '' },
        { memberId: 'x'.repeat(256) },
      ],
    });
    expect(batch.errorCode).toBe(0);
    expect(batch.members.map((m) => [m.memberId, m.errorCode])).toEqual([
      ['', KAFKA_ERROR.UNKNOWN_MEMBER_ID],
      [memberB, 0],
      ['nobody', KAFKA_ERROR.UNKNOWN_MEMBER_ID],
      ['', KAFKA_ERROR.UNKNOWN_MEMBER_ID],
      ['x'.repeat(256), KAFKA_ERROR.UNKNOWN_MEMBER_ID],
    ]);
    expect(
      (await a.send(API_KEYS.Heartbeat, 3, { groupId: 'g', generationId, memberId: memberA }))
        .errorCode,
    ).toBe(KAFKA_ERROR.REBALANCE_IN_PROGRESS);
    const left = await a.send(API_KEYS.LeaveGroup, 0, { groupId: 'g', memberId: memberA });
    expect(left.errorCode).toBe(0);
    expect(
      (await a.send(API_KEYS.LeaveGroup, 4, { groupId: 'nogroup', members: [{ memberId: 'm' }] }))
        .errorCode,
      'a group id with no group',
    ).toBe(KAFKA_ERROR.UNKNOWN_MEMBER_ID);
  });
});

describe('DescribeGroups and ListGroups', () => {
  it('report a classic group: state, protocol type, protocol, and members with client id, host, metadata and assignment', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const { a, memberA, memberB } = await stableGroup(t, clock);
    for (let version = 0; version <= 5; version++) {
      const [g] = (await a.send(API_KEYS.DescribeGroups, version, { groups: ['g'] })).groups;
      expect(g, `v${version}`).toMatchObject({
        errorCode: 0,
        groupState: 'Stable',
        protocolType: 'consumer',
        protocolData: 'range',
      });
      const members = g!.members.map((m) => [
        m.memberId,
        m.clientId,
        m.clientHost,
        m.memberMetadata.toString(),
        m.memberAssignment.toString(),
      ]);
      expect(members.sort()).toEqual(
        [
          [memberA, 'client-a', '/127.0.0.1', 'range-of-a', 'parts-of-a'],
          [memberB, 'client-b', '/127.0.0.1', 'range-of-b', 'parts-of-b'],
        ].sort(),
      );
    }
    const listed = await a.send(API_KEYS.ListGroups, 4, {});
    expect(listed.groups.map((g) => [g.groupId, g.protocolType, g.groupState])).toEqual([
      ['g', 'consumer', 'Stable'],
    ]);
    await a.send(API_KEYS.LeaveGroup, 3, { groupId: 'g', members: [{ memberId: memberB }] });
    const [rebalancing] = (await a.send(API_KEYS.DescribeGroups, 5, { groups: ['g'] })).groups;
    expect(rebalancing, 'no protocol or member bytes outside Stable, as Kafka').toMatchObject({
      groupState: 'PreparingRebalance',
      protocolType: 'consumer',
      protocolData: '',
    });
    expect(
      rebalancing!.members.map((m) => [
        m.memberId,
        m.memberMetadata.length,
        m.memberAssignment.length,
      ]),
    ).toEqual([[memberA, 0, 0]]);
  });
});

describe('held answers', () => {
  it('a JoinGroup held at the join barrier is answered COORDINATOR_NOT_AVAILABLE when the server closes, which does not wait for the barrier', async () => {
    const clock = new ManualClock();
    const t = await start(undefined, clock);
    const c = await connect(t);
    const first = await join(c, '', 'a');
    const held = join(c, first.memberId, 'a');
    await until(() => t.server.stats().connections[0]?.inFlightRequests === 1);
    await t.server.close();
    expect((await held).errorCode).toBe(KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE);
  });
});

describe('a restart of the server and the store', () => {
  it('keeps a Stable group Stable with the same generation and assignments; its members heartbeat on', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const before = await start(dir, clock);
    const { memberA, memberB, generationId } = await stableGroup(before, clock);
    for (const client of clients.splice(0)) await client.close();
    servers.splice(servers.indexOf(before), 1);
    await before.close();
    expect(before.warnings).toEqual([]);

    const after = await start(dir, clock);
    const c = await connect(after);
    const [g] = (await c.send(API_KEYS.DescribeGroups, 5, { groups: ['g'] })).groups;
    expect(g).toMatchObject({
      groupState: 'Stable',
      protocolType: 'consumer',
      protocolData: 'range',
    });
    expect(g!.members.map((m) => [m.memberId, m.memberAssignment.toString()]).sort()).toEqual(
      [
        [memberA, 'parts-of-a'],
        [memberB, 'parts-of-b'],
      ].sort(),
    );
    for (const memberId of [memberA, memberB]) {
      expect(
        (await c.send(API_KEYS.Heartbeat, 3, { groupId: 'g', generationId, memberId })).errorCode,
      ).toBe(0);
    }
    const sync = await c.send(API_KEYS.SyncGroup, 3, {
      groupId: 'g',
      generationId,
      memberId: memberB,
      assignments: [],
    });
    expect(
      [sync.errorCode, sync.assignment.toString()],
      'a Stable group answers SyncGroup at once',
    ).toEqual([0, 'parts-of-b']);
  });
});
