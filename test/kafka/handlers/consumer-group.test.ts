/**
 * ConsumerGroupHeartbeat (KIP-848) through the store's coordinator, and ConsumerGroupDescribe.
 * A member joins with topic names and gets partitions by topic id; a v0 join without a member id
 * gets one from the server, v1 members bring their own; two members split the partitions
 * cooperatively (a partition moves only after its owner released it); leaving frees them; a
 * member's commit is fenced by its epoch. Requests are checked as Kafka checks them, an unknown
 * assignor is UNSUPPORTED_ASSIGNOR, and a topic created after a member subscribed to it reaches
 * the member even when its heartbeats omit the subscription (as librdkafka's do).
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  API_KEYS,
  KAFKA_ERROR,
  encodeRequest,
  type RequestInputOf,
  type ResponseOf,
} from '../../../src/kafka/protocol/index.js';
import { RawKafkaClient } from '../support/raw-kafka-client.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

let running: TestServer | undefined;
let client: RawKafkaClient | undefined;

async function start(): Promise<{ t: TestServer; client: RawKafkaClient }> {
  running = await startTestServer({
    server: {
      topics: [
        { name: 'orders', partitions: 4 },
        { name: 'audit', partitions: 1 },
      ],
    },
  });
  client = await RawKafkaClient.connect(running.server.port, {});
  return { t: running, client };
}

afterEach(async () => {
  await client?.close();
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
  client = undefined;
});

type Heartbeat = RequestInputOf<typeof API_KEYS.ConsumerGroupHeartbeat>;
type HeartbeatResponse = ResponseOf<typeof API_KEYS.ConsumerGroupHeartbeat>;

const JOIN: Heartbeat = {
  groupId: 'g',
  memberId: '',
  memberEpoch: 0,
  rebalanceTimeoutMs: 60_000,
  subscribedTopicNames: ['orders'],
  topicPartitions: [],
};

/** A heartbeat of member `memberId` of group 'g' that changes nothing (every field "as it was"). */
function unchanged(memberId: string, memberEpoch: number): Heartbeat {
  return {
    groupId: 'g',
    memberId,
    memberEpoch,
    rebalanceTimeoutMs: -1,
    subscribedTopicNames: null,
    topicPartitions: null,
  };
}

async function topicIds(c: RawKafkaClient): Promise<Record<string, string>> {
  const metadata = await c.send(API_KEYS.Metadata, 12, { topics: null });
  return Object.fromEntries(metadata.topics.map((t) => [t.name!, t.topicId]));
}

function partitionsOf(response: HeartbeatResponse, topicId: string): number[] | undefined {
  return response.assignment?.topicPartitions.find((tp) => tp.topicId === topicId)?.partitions;
}

/** Creates the topic 'later' (auto-creation by a Metadata request); its topic id. */
async function createLater(c: RawKafkaClient): Promise<string> {
  const created = await c.send(API_KEYS.Metadata, 12, {
    topics: [{ name: 'later', topicId: '00000000-0000-0000-0000-000000000000' }],
    allowAutoTopicCreation: true,
  });
  return created.topics[0]!.topicId;
}

/**
 * Creates the topic 'later', then heartbeats as member 'm' of group 'g' at `memberEpoch` without
 * its subscription (as librdkafka does): the partitions of 'later' the member is given.
 */
async function laterReaches(c: RawKafkaClient, memberEpoch: number): Promise<number[] | undefined> {
  const laterId = await createLater(c);
  const beat = await c.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
    groupId: 'g',
    memberId: 'm',
    memberEpoch,
  });
  expect(beat.errorCode).toBe(0);
  return partitionsOf(beat, laterId);
}

describe('ConsumerGroupHeartbeat', () => {
  it('joins (v0: the server makes the member id), assigns partitions by topic id, heartbeats, and leaves', async () => {
    const { t, client } = await start();
    const ids = await topicIds(client);
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 0, JOIN);
    expect(joined).toMatchObject({
      errorCode: 0,
      memberEpoch: expect.any(Number),
      heartbeatIntervalMs: 5000,
    });
    expect(joined.memberId).toMatch(/^[0-9a-f-]{36}$/);
    expect(partitionsOf(joined, ids.orders!)).toEqual([0, 1, 2, 3]);
    const owned = [{ topicId: ids.orders!, partitions: [0, 1, 2, 3] }];
    const beat = await client.send(API_KEYS.ConsumerGroupHeartbeat, 0, {
      groupId: 'g',
      memberId: joined.memberId!,
      memberEpoch: joined.memberEpoch,
      topicPartitions: owned,
    });
    expect(beat).toMatchObject({ errorCode: 0, memberEpoch: joined.memberEpoch, assignment: null });
    expect((await t.store.describeGroup('g')).state).toBe('Stable');
    const left = await client.send(API_KEYS.ConsumerGroupHeartbeat, 0, {
      groupId: 'g',
      memberId: joined.memberId!,
      memberEpoch: -1,
    });
    expect(left).toMatchObject({ errorCode: 0, memberEpoch: -1 });
    expect((await t.store.describeGroup('g')).members).toEqual([]);
  });

  it('reads an empty subscribed_topic_regex as no regular expression, as Kafka does (librdkafka 2.15.1 sends "" with its topic names)', async () => {
    const { client } = await start();
    const ids = await topicIds(client);
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'librdkafka-member',
      subscribedTopicRegex: '',
    });
    expect(joined).toMatchObject({ errorCode: 0, memberId: 'librdkafka-member' });
    expect(partitionsOf(joined, ids.orders!)).toEqual([0, 1, 2, 3]);
  });

  it('splits partitions between two v1 members cooperatively: a partition moves only once its owner released it', async () => {
    const { client } = await start();
    const ids = await topicIds(client);
    const a = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'member-a',
    });
    expect(a.memberId).toBe('member-a');
    const owning = (partitions: number[]) => [{ topicId: ids.orders!, partitions }];
    await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'member-a',
      memberEpoch: a.memberEpoch,
      topicPartitions: owning([0, 1, 2, 3]),
    });
    const b = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'member-b',
    });
    expect(
      partitionsOf(b, ids.orders!) ?? [],
      'nothing yet: member-a still owns everything',
    ).toEqual([]);
    const revoke = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'member-a',
      memberEpoch: a.memberEpoch,
      topicPartitions: owning([0, 1, 2, 3]),
    });
    const kept = partitionsOf(revoke, ids.orders!)!;
    expect(kept).toHaveLength(2);
    const released = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'member-a',
      memberEpoch: revoke.memberEpoch,
      topicPartitions: owning(kept),
    });
    expect(released.errorCode).toBe(0);
    const bAgain = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'member-b',
      memberEpoch: b.memberEpoch,
      topicPartitions: [],
    });
    expect([...kept, ...partitionsOf(bAgain, ids.orders!)!].sort()).toEqual([0, 1, 2, 3]);
  });

  it("fences commits by member epoch: the current epoch commits, an older or a newer one is STALE_MEMBER_EPOCH (a broker's answer to any other epoch, which a client retries after its next heartbeat)", async () => {
    const { client } = await start();
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
    });
    const commit = (epoch: number) =>
      client.send(API_KEYS.OffsetCommit, 9, {
        groupId: 'g',
        generationIdOrMemberEpoch: epoch,
        memberId: 'm',
        topics: [{ name: 'orders', partitions: [{ partitionIndex: 0, committedOffset: 11n }] }],
      });
    expect((await commit(joined.memberEpoch)).topics[0]!.partitions[0]!.errorCode).toBe(0);
    expect((await commit(joined.memberEpoch - 1)).topics[0]!.partitions[0]!.errorCode).toBe(
      KAFKA_ERROR.STALE_MEMBER_EPOCH,
    );
    expect((await commit(joined.memberEpoch + 1)).topics[0]!.partitions[0]!.errorCode).toBe(
      KAFKA_ERROR.STALE_MEMBER_EPOCH,
    );
    const auditCommit = await client.send(API_KEYS.OffsetCommit, 9, {
      groupId: 'g',
      generationIdOrMemberEpoch: joined.memberEpoch,
      memberId: 'm',
      topics: [{ name: 'audit', partitions: [{ partitionIndex: 0, committedOffset: 1n }] }],
    });
    expect(
      auditCommit.topics[0]!.partitions[0]!.errorCode,
      'a partition the member does not own',
    ).toBe(KAFKA_ERROR.STALE_MEMBER_EPOCH);
  });

  it('checks requests as Kafka does, and answers an unknown assignor with UNSUPPORTED_ASSIGNOR', async () => {
    const { t, client } = await start();
    const refused: [string, number, Heartbeat][] = [
      ['empty group id', 1, { ...JOIN, groupId: '', memberId: 'm' }],
      ['v1 without a member id', 1, JOIN],
      ['a join without a rebalance timeout', 0, { ...JOIN, rebalanceTimeoutMs: -1 }],
      ['a join without a subscription', 0, { ...JOIN, subscribedTopicNames: null }],
      ['a join subscribed to no name', 0, { ...JOIN, subscribedTopicNames: [] }],
      [
        'a join with an empty regular expression only',
        1,
        { ...JOIN, memberId: 'm', subscribedTopicNames: null, subscribedTopicRegex: '' },
      ],
      [
        'a join owning partitions',
        0,
        {
          ...JOIN,
          topicPartitions: [{ topicId: '8f3c1a52-0b47-4e2b-9a8e-6f0c2d1e3b4a', partitions: [0] }],
        },
      ],
      ['epoch -3', 0, { ...JOIN, memberId: 'm', memberEpoch: -3 }],
      ['-2 without an instance id', 0, { groupId: 'g', memberId: 'm', memberEpoch: -2 }],
      ['an empty instance id', 0, { ...JOIN, instanceId: '' }],
      ['an empty rack id', 0, { ...JOIN, rackId: '' }],
      [
        'more names than the server can have topics',
        0,
        { ...JOIN, subscribedTopicNames: Array.from({ length: 10_001 }, (_, i) => `t${i}`) },
      ],
    ];
    for (const [what, version, request] of refused) {
      const response = await client.send(API_KEYS.ConsumerGroupHeartbeat, version, request);
      expect([response.errorCode, response.memberId], what).toEqual([
        KAFKA_ERROR.INVALID_REQUEST,
        null,
      ]);
      expect(response.errorMessage, what).toBeTruthy();
    }
    const assignor = await client.send(API_KEYS.ConsumerGroupHeartbeat, 0, {
      ...JOIN,
      serverAssignor: 'sticky',
    });
    expect(assignor.errorCode).toBe(KAFKA_ERROR.UNSUPPORTED_ASSIGNOR);
    // A name as long as a request's string allows: the message quoting it is cut, not refused by
    // the encoder (which closed the connection).
    const long = await client.send(API_KEYS.ConsumerGroupHeartbeat, 0, {
      ...JOIN,
      serverAssignor: 'a'.repeat(32_760),
    });
    expect([long.errorCode, long.errorMessage!.length]).toEqual([
      KAFKA_ERROR.UNSUPPORTED_ASSIGNOR,
      1024,
    ]);
    const unknown = await client.send(API_KEYS.ConsumerGroupHeartbeat, 0, {
      groupId: 'g',
      memberId: 'ghost',
      memberEpoch: 3,
    });
    expect(unknown.errorCode).toBe(KAFKA_ERROR.UNKNOWN_MEMBER_ID);
    expect(
      (await t.store.listGroups()).map((g) => g.groupId),
      'no refused join created a member',
    ).toEqual([]);
  });

  it('remembers only names that can be topics: a member subscribed to a name no topic can have is still described', async () => {
    const { t, client } = await start();
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 0, {
      ...JOIN,
      subscribedTopicNames: ['orders', 'é', 'no such/topic'],
    });
    expect(joined.errorCode).toBe(0);
    const described = await client.send(API_KEYS.DescribeGroups, 5, { groups: ['g'] });
    expect(described.groups[0]!.errorCode).toBe(0);
    expect(described.groups[0]!.members).toHaveLength(1);
    const consumer = await client.send(API_KEYS.ConsumerGroupDescribe, 0, { groupIds: ['g'] });
    expect(consumer.groups[0]!.members[0]!.subscribedTopicNames).toEqual(['orders']);
    expect(t.server.stats().connections).toHaveLength(1);
  });

  it('answers GROUP_ID_NOT_FOUND for a group that is not a consumer group, as Kafka does (its admin then uses DescribeGroups)', async () => {
    const { t, client } = await start();
    await t.store.commitOffsets('offsets-only', [{ tableId: 1, bucketId: 0, offset: 5 }]);
    const described = await client.send(API_KEYS.ConsumerGroupDescribe, 0, {
      groupIds: ['offsets-only'],
    });
    expect(described.groups[0]).toMatchObject({
      groupId: 'offsets-only',
      errorCode: KAFKA_ERROR.GROUP_ID_NOT_FOUND,
      errorMessage: expect.stringMatching(/Group offsets-only is not a consumer group/),
    });
    const classic = await client.send(API_KEYS.DescribeGroups, 5, { groups: ['offsets-only'] });
    expect(classic.groups[0]).toMatchObject({ errorCode: 0, groupState: 'Empty' });
  });

  it('takes range as an assignor, and gives a topic created after the subscription to a member whose heartbeats omit it', async () => {
    const { client } = await start();
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
      subscribedTopicNames: ['orders', 'later'],
      serverAssignor: 'range',
    });
    expect(joined.errorCode).toBe(0);
    const laterId = await createLater(client);
    const beat = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'm',
      memberEpoch: joined.memberEpoch,
    });
    expect(beat.errorCode).toBe(0);
    expect(partitionsOf(beat, laterId)).toEqual([0]);
  });

  it("splits a topic created after members subscribed to it between them at the next heartbeat of any one of them, in one epoch (as Kafka refreshes the group's subscriptions)", async () => {
    running = await startTestServer({
      server: { topics: [{ name: 'orders', partitions: 4 }], defaultPartitions: 4 },
    });
    client = await RawKafkaClient.connect(running.server.port, {});
    const c = client;
    for (const memberId of ['m', 'n'])
      expect(
        (
          await c.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
            ...JOIN,
            memberId,
            subscribedTopicNames: ['orders', 'later'],
          })
        ).errorCode,
      ).toBe(0);
    const describe = async () =>
      (await c.send(API_KEYS.ConsumerGroupDescribe, 0, { groupIds: ['g'] })).groups[0]!;
    const epochBefore = (await describe()).groupEpoch;
    const memberEpoch = (await describe()).members.find((m) => m.memberId === 'm')!.memberEpoch;
    const laterId = await createLater(c);
    // A heartbeat with m's id and a wrong epoch (member ids are public) is fenced and moves no one.
    const fenced = await c.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'm',
      memberEpoch: memberEpoch + 5,
    });
    expect(fenced.errorCode).toBe(KAFKA_ERROR.FENCED_MEMBER_EPOCH);
    expect((await describe()).groupEpoch).toBe(epochBefore);
    // m heartbeats without its subscription (as librdkafka does); n says nothing.
    const beat = await c.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'm',
      memberEpoch,
    });
    expect(beat.errorCode).toBe(0);
    const after = await describe();
    expect(after.groupEpoch, 'one epoch for both members').toBe(epochBefore + 1);
    const targetOf = (memberId: string) =>
      after.members
        .find((m) => m.memberId === memberId)!
        .targetAssignment.topicPartitions.find((tp) => tp.topicId === laterId)?.partitions ?? [];
    expect(targetOf('m')).toHaveLength(2);
    expect(targetOf('n')).toHaveLength(2);
    expect(after.members.find((m) => m.memberId === 'n')!.subscribedTopicNames).toEqual([
      'later',
      'orders',
    ]);
  });

  it("keeps a member's subscription when another connection's heartbeat with its id and a wrong epoch, or an instance id no member holds, is refused", async () => {
    const { t, client } = await start();
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
      subscribedTopicNames: ['orders', 'later'],
    });
    expect(joined.errorCode).toBe(0);
    // Member ids are public (ConsumerGroupDescribe): anyone can send one with a wrong epoch.
    const stranger = await RawKafkaClient.connect(t.server.port, {});
    try {
      const fenced = await stranger.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
        groupId: 'g',
        memberId: 'm',
        memberEpoch: joined.memberEpoch + 5,
      });
      expect(fenced.errorCode).toBe(KAFKA_ERROR.FENCED_MEMBER_EPOCH);
      // With an instance id no member holds: UNKNOWN_MEMBER_ID, as Kafka answers, for a heartbeat
      // and for a static member's leave (-2), and the member m stays as it was.
      for (const memberEpoch of [joined.memberEpoch, -2]) {
        const spoofed = await stranger.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
          groupId: 'g',
          memberId: 'm',
          memberEpoch,
          instanceId: 'nobody',
        });
        expect(spoofed.errorCode, `epoch ${memberEpoch}`).toBe(KAFKA_ERROR.UNKNOWN_MEMBER_ID);
      }
    } finally {
      await stranger.close();
    }
    const described = await client.send(API_KEYS.ConsumerGroupDescribe, 0, { groupIds: ['g'] });
    expect(described.groups[0]!.members.map((m) => m.subscribedTopicNames)).toEqual([
      ['later', 'orders'],
    ]);
    expect(await laterReaches(client, joined.memberEpoch)).toEqual([0]);
  });

  it("cuts a member's client id as JoinGroup does: one of 20,000 malformed bytes (60,000 of U+FFFD) no longer breaks describing its group", async () => {
    const { client } = await start();
    const frame = encodeRequest(
      {
        apiKey: API_KEYS.ConsumerGroupHeartbeat,
        apiVersion: 0,
        correlationId: 9001,
        clientId: 'x',
      },
      { ...JOIN, memberId: 'm' },
    );
    // The header's client id (int16 length at byte 12, after size, key, version, correlation id).
    const raw = Buffer.alloc(20_000, 0xff);
    const head = Buffer.from(frame.subarray(0, 14));
    head.writeInt16BE(raw.length, 12);
    const spoiled = Buffer.concat([head, raw, frame.subarray(14 + 1)]);
    spoiled.writeInt32BE(spoiled.length - 4, 0);
    const answer = client.responseTo(9001);
    client.write(spoiled);
    expect(client.decode(API_KEYS.ConsumerGroupHeartbeat, 0, await answer).errorCode).toBe(0);
    const described = await client.send(API_KEYS.ConsumerGroupDescribe, 0, { groupIds: ['g'] });
    expect(described.groups[0]!.errorCode).toBe(0);
    expect(described.groups[0]!.members.map((m) => m.clientId)).toEqual(['\ufffd'.repeat(255)]);
  });

  it('keeps the subscriptions of the members it holds when others would fill its notes: a heartbeat that would need their room is refused, retriably', async () => {
    running = await startTestServer({
      server: { topics: [{ name: 'orders', partitions: 4 }], membersNotedMax: 3 },
    });
    const c = (client = await RawKafkaClient.connect(running.server.port, {}));
    const victim = await c.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
      subscribedTopicNames: ['orders', 'later'],
    });
    expect(victim.errorCode).toBe(0);
    const join = (groupId: string) =>
      c.send(API_KEYS.ConsumerGroupHeartbeat, 1, { ...JOIN, groupId, memberId: `${groupId}-m` });
    expect((await join('x1')).errorCode).toBe(0);
    expect((await join('x2')).errorCode).toBe(0);
    const refused = await join('x3');
    expect(refused.errorCode).toBe(KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE);
    expect(refused.errorMessage).toMatch(/at most 3 members/);
    expect(await laterReaches(c, victim.memberEpoch)).toEqual([0]);
    // A member that leaves frees its room.
    const left = await c.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'x1',
      memberId: 'x1-m',
      memberEpoch: -1,
    });
    expect(left.errorCode).toBe(0);
    expect((await join('x3')).errorCode).toBe(0);
  });

  it('subscribes by regular expression: the topics whose whole name matches, a topic created later included; a bad expression is INVALID_REGULAR_EXPRESSION', async () => {
    const { t, client } = await start();
    const ids = await topicIds(client);
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
      subscribedTopicNames: null,
      subscribedTopicRegex: 'ord.*',
    });
    expect(joined.errorCode).toBe(0);
    expect(partitionsOf(joined, ids.orders!)).toEqual([0, 1, 2, 3]);
    expect(partitionsOf(joined, ids.audit!)).toBeUndefined();
    // A whole-name match: 'ord' alone matches no topic.
    const partial = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      groupId: 'g2',
      memberId: 'p',
      subscribedTopicNames: null,
      subscribedTopicRegex: 'ord',
    });
    expect([partial.errorCode, partial.assignment?.topicPartitions ?? []]).toEqual([0, []]);
    const created = await client.send(API_KEYS.Metadata, 12, {
      topics: [{ name: 'orders-eu', topicId: '00000000-0000-0000-0000-000000000000' }],
      allowAutoTopicCreation: true,
    });
    const euId = created.topics[0]!.topicId;
    const beat = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'm',
      memberEpoch: joined.memberEpoch,
      topicPartitions: [{ topicId: ids.orders!, partitions: [0, 1, 2, 3] }],
    });
    expect([beat.errorCode, partitionsOf(beat, euId)]).toEqual([0, [0]]);
    const described = await client.send(API_KEYS.ConsumerGroupDescribe, 0, { groupIds: ['g'] });
    expect(described.groups[0]!.members[0]).toMatchObject({
      subscribedTopicRegex: 'ord.*',
      subscribedTopicNames: [],
    });
    // '' drops the expression: the member is then subscribed to its names alone.
    const dropped = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'm',
      memberEpoch: beat.memberEpoch,
      subscribedTopicNames: ['audit'],
      subscribedTopicRegex: '',
    });
    expect(dropped.errorCode).toBe(0);
    // Tables are numbered in the order the topics were created: orders 1, audit 2.
    expect((await t.store.describeGroup('g')).members[0]!.subscribedTableIds).toEqual([2]);
    for (const [regex, reason] of [
      ['(ord', /missing \)/],
      ['(?=orders)', /unsupported \(\? group/],
      ['ord**', /quantifier cannot follow/],
      ['(o{100}){100}', /more than 2000 instructions/],
      ['x'.repeat(1001), /1001 characters/],
    ] as const) {
      const refused = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
        ...JOIN,
        groupId: 'g3',
        memberId: 'r',
        subscribedTopicNames: null,
        subscribedTopicRegex: regex,
      });
      expect(refused.errorCode, regex).toBe(KAFKA_ERROR.INVALID_REGULAR_EXPRESSION);
      expect(refused.errorMessage, regex).toMatch(reason);
    }
    expect((await t.store.listGroups()).map((g) => g.groupId).sort()).toEqual(['g', 'g2']);
  });
});

describe('ConsumerGroupHeartbeat at the edges of what Kafka accepts', () => {
  it('joins with a rebalance timeout of 0, which Kafka takes (only -1 is refused on a join)', async () => {
    const { client } = await start();
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
      rebalanceTimeoutMs: 0,
    });
    expect([joined.errorCode, joined.errorMessage]).toEqual([0, null]);
  });

  it('takes a subscription naming as many topics as the server can hold, and refuses one naming more', async () => {
    running = await startTestServer({
      server: {
        topics: [
          { name: 'orders', partitions: 4 },
          { name: 'audit', partitions: 1 },
        ],
        topicsMax: 2,
      },
    });
    const c = (client = await RawKafkaClient.connect(running.server.port, {}));
    const atLimit = await c.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
      subscribedTopicNames: ['orders', 'audit'],
    });
    expect(atLimit.errorCode).toBe(0);
    const over = await c.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'n',
      subscribedTopicNames: ['orders', 'audit', 'later'],
    });
    expect(over.errorCode).toBe(KAFKA_ERROR.INVALID_REQUEST);
  });
});

describe('ConsumerGroupHeartbeat with an expression that a grown catalog makes too costly', () => {
  it('is refused only when sent: members already on it keep their topics, heartbeat and leave', async () => {
    const { t, client } = await start();
    const expression = '(?:.?){900}|.*a.{10}x';
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
      subscribedTopicNames: null,
      subscribedTopicRegex: expression,
    });
    expect(joined.errorCode).toBe(0);
    // 20 topics of 249 characters: a pass of the expression over them is over the step budget.
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const names = Array.from({ length: 20 }, () =>
      Array.from({ length: 249 }, () => (random() < 0.5 ? 'a' : 'b')).join(''),
    );
    await client.send(API_KEYS.Metadata, 12, {
      topics: names.map((name) => ({ name, topicId: '00000000-0000-0000-0000-000000000000' })),
      allowAutoTopicCreation: true,
    });
    const sentAgain = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      groupId: 'other',
      memberId: 'o',
      subscribedTopicNames: null,
      subscribedTopicRegex: expression,
    });
    expect(sentAgain.errorCode).toBe(KAFKA_ERROR.INVALID_REGULAR_EXPRESSION);
    expect(sentAgain.errorMessage).toMatch(/too costly to match against the 22 topics/);
    for (let beat = 0; beat < 2; beat++) {
      const kept = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
        groupId: 'g',
        memberId: 'm',
        memberEpoch: joined.memberEpoch,
      });
      expect(kept.errorCode).toBe(0);
    }
    // (.?){900} matches both topics it was resolved against: orders and audit.
    expect((await t.store.describeGroup('g')).members[0]!.subscribedTableIds).toEqual([1, 2]);
    // Names sent meanwhile are added to the topics the expression matched before.
    const named = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'm',
      memberEpoch: joined.memberEpoch,
      subscribedTopicNames: [names[0]!],
    });
    expect(named.errorCode).toBe(0);
    expect((await t.store.describeGroup('g')).members[0]!.subscribedTableIds).toEqual([1, 2, 3]);
    const left = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g',
      memberId: 'm',
      memberEpoch: -1,
    });
    expect(left.errorCode).toBe(0);
    expect((await t.store.describeGroup('g')).members).toEqual([]);
    // Reported once, not at every heartbeat.
    expect(t.warnings.splice(0)).toEqual([
      expect.stringMatching(
        /consumer group g: members keep the topics their expression matched before: .*too costly/,
      ),
    ]);
  });
});

describe('ConsumerGroupDescribe', () => {
  it('describes members with their epochs, client id and host, subscribed names and assignments; an unknown group is GROUP_ID_NOT_FOUND', async () => {
    const { client } = await start();
    const ids = await topicIds(client);
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
      subscribedTopicNames: ['orders', 'audit'],
    });
    const response = await client.send(API_KEYS.ConsumerGroupDescribe, 0, {
      groupIds: ['g', 'nope'],
    });
    const [group, unknown] = response.groups;
    expect(group).toMatchObject({
      errorCode: 0,
      groupId: 'g',
      groupState: 'Stable',
      groupEpoch: expect.any(Number),
      assignorName: 'uniform',
    });
    expect(group!.members).toHaveLength(1);
    expect(group!.members[0]).toMatchObject({
      memberId: 'm',
      memberEpoch: joined.memberEpoch,
      clientId: 'raw-test',
      clientHost: '/127.0.0.1',
      subscribedTopicNames: ['audit', 'orders'],
    });
    expect(group!.members[0]!.assignment.topicPartitions).toEqual([
      { topicId: ids.audit, topicName: 'audit', partitions: [0] },
      { topicId: ids.orders, topicName: 'orders', partitions: [0, 1, 2, 3] },
    ]);
    expect(unknown).toMatchObject({ errorCode: KAFKA_ERROR.GROUP_ID_NOT_FOUND, groupId: 'nope' });
  });

  it('reports the rack a member named, kept while its heartbeats send none (null: unchanged)', async () => {
    const { client } = await start();
    const describeRacks = async () =>
      (
        await client.send(API_KEYS.ConsumerGroupDescribe, 0, { groupIds: ['g'] })
      ).groups[0]!.members.map((m) => [m.memberId, m.rackId]);
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
      rackId: 'eu-west-1a',
    });
    await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'n',
    });
    expect(await describeRacks()).toEqual([
      ['m', 'eu-west-1a'],
      ['n', null],
    ]);
    await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...unchanged('m', joined.memberEpoch),
      rackId: null,
    });
    expect(await describeRacks()).toEqual([
      ['m', 'eu-west-1a'],
      ['n', null],
    ]);
  });

  it("keeps showing a member's subscription after a restart, when its heartbeats omit it", async () => {
    const { t, client: first } = await start();
    const joined = await first.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      ...JOIN,
      memberId: 'm',
      subscribedTopicNames: ['orders', 'audit'],
    });
    await first.close();
    await t.close();
    // The restarted server has the member from the store, and nothing of what it remembered.
    running = await startTestServer({
      dir: t.dir,
      server: {
        topics: [
          { name: 'orders', partitions: 4 },
          { name: 'audit', partitions: 1 },
        ],
      },
    });
    client = await RawKafkaClient.connect(running.server.port, {});
    const beat = await client.send(
      API_KEYS.ConsumerGroupHeartbeat,
      1,
      unchanged('m', joined.memberEpoch),
    );
    expect(beat.errorCode).toBe(0);
    const described = await client.send(API_KEYS.ConsumerGroupDescribe, 0, { groupIds: ['g'] });
    expect(described.groups[0]!.members[0]).toMatchObject({
      memberId: 'm',
      subscribedTopicNames: ['audit', 'orders'],
    });
  });
});
