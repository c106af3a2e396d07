/**
 * The group APIs: ListGroups (every group as a consumer group, states from v4, a case-blind states
 * filter), DescribeGroups (state, assignor, members with their subscription and assignment in the
 * consumer protocol's format; an unknown group Dead without error), DeleteGroups (NON_EMPTY_GROUP,
 * GROUP_ID_NOT_FOUND per group), and OffsetDelete (partitions of topics a member subscribes to
 * refused with GROUP_SUBSCRIBED_TO_TOPIC, the others deleted; group errors at the top level). The
 * classic group APIs are specified in classic-groups.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { API_KEYS, KAFKA_ERROR } from '../../../src/kafka/protocol/index.js';
import type { FileHandle, OpenFlags } from '../../../src/io/index.js';
import { FaultyFileSystem } from '../../support/faulty-file-system.js';
import { RawKafkaClient } from '../support/raw-kafka-client.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

let running: TestServer | undefined;
let client: RawKafkaClient | undefined;

async function start(): Promise<{ t: TestServer; client: RawKafkaClient }> {
  running = await startTestServer({
    server: {
      topics: [
        { name: 'orders', partitions: 4 },
        { name: 'audit', partitions: 2 },
      ],
    },
  });
  client = await RawKafkaClient.connect(running.server.port);
  return { t: running, client };
}

afterEach(async () => {
  await client?.close();
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
  client = undefined;
});

/** A group with offsets only ('idle'), and one with a member subscribed to orders ('live'). */
async function seed(t: TestServer): Promise<string> {
  await t.store.commitOffsets('idle', [
    { tableId: 1, bucketId: 0, offset: 5 },
    { tableId: 2, bucketId: 1, offset: 6 },
  ]);
  await t.store.commitOffsets('live', [
    { tableId: 1, bucketId: 0, offset: 1 },
    { tableId: 2, bucketId: 0, offset: 2 },
  ]);
  const { memberId } = await t.store.heartbeat('live', { memberEpoch: 0, subscribedTableIds: [1] });
  return memberId;
}

/** Reads a consumer-protocol subscription (v0): its topic names. */
function subscribedTopics(bytes: Buffer): string[] {
  const count = bytes.readInt32BE(2);
  const topics: string[] = [];
  for (let i = 0, p = 6; i < count; i++) {
    const length = bytes.readInt16BE(p);
    topics.push(bytes.toString('utf8', p + 2, p + 2 + length));
    p += 2 + length;
  }
  return topics;
}

/** Reads a consumer-protocol assignment (v0): topic name -> partitions. */
function assignedPartitions(bytes: Buffer): Record<string, number[]> {
  const count = bytes.readInt32BE(2);
  const assignment: Record<string, number[]> = {};
  for (let i = 0, p = 6; i < count; i++) {
    const length = bytes.readInt16BE(p);
    const topic = bytes.toString('utf8', p + 2, p + 2 + length);
    p += 2 + length;
    const partitions = bytes.readInt32BE(p);
    assignment[topic] = Array.from({ length: partitions }, (_, k) =>
      bytes.readInt32BE(p + 4 + 4 * k),
    );
    p += 4 + 4 * partitions;
  }
  return assignment;
}

describe('ListGroups', () => {
  it("lists every group with its protocol type ('' for offsets only), with its state from v4, filtered by state without regard to case", async () => {
    const { t, client } = await start();
    await seed(t);
    for (let version = 0; version <= 5; version++) {
      const response = await client.send(API_KEYS.ListGroups, version, {});
      expect(response.errorCode).toBe(0);
      expect(
        response.groups.map((g) => [g.groupId, g.protocolType, version >= 4 ? g.groupState : '']),
        `v${version}`,
      ).toEqual([
        ['idle', '', version >= 4 ? 'Empty' : ''],
        ['live', 'consumer', version >= 4 ? 'Stable' : ''],
      ]);
    }
    const filtered = await client.send(API_KEYS.ListGroups, 4, {
      statesFilter: ['stable', 'PreparingRebalance'],
    });
    expect(filtered.groups.map((g) => g.groupId)).toEqual(['live']);
  });

  it('gives each group its type from v5 (offsets only: classic), filtered by type without regard to case', async () => {
    const { t, client } = await start();
    await seed(t);
    const list = async (typesFilter: string[], statesFilter: string[] = []) =>
      (await client.send(API_KEYS.ListGroups, 5, { statesFilter, typesFilter })).groups.map((g) => [
        g.groupId,
        g.groupType,
      ]);
    expect(await list([])).toEqual([
      ['idle', 'classic'],
      ['live', 'consumer'],
    ]);
    expect(await list(['Consumer'])).toEqual([['live', 'consumer']]);
    expect(await list(['classic'])).toEqual([['idle', 'classic']]);
    expect(await list(['share'])).toEqual([]);
    expect(await list(['classic', 'consumer'], ['stable'])).toEqual([['live', 'consumer']]);
  });
});

describe('DescribeGroups', () => {
  it("describes a group's state, assignor and members with their subscription and assignment; an unknown group is Dead", async () => {
    const { t, client } = await start();
    const memberId = await seed(t);
    for (let version = 0; version <= 5; version++) {
      const response = await client.send(API_KEYS.DescribeGroups, version, {
        groups: ['live', 'idle', 'unknown'],
      });
      const [live, idle, unknown] = response.groups;
      expect(live, `v${version}`).toMatchObject({
        errorCode: 0,
        groupId: 'live',
        groupState: 'Stable',
        protocolType: 'consumer',
        protocolData: 'uniform',
      });
      expect(live!.members.map((m) => m.memberId)).toEqual([memberId]);
      expect(subscribedTopics(live!.members[0]!.memberMetadata)).toEqual(['orders']);
      expect(assignedPartitions(live!.members[0]!.memberAssignment)).toEqual({
        orders: [0, 1, 2, 3],
      });
      expect(idle, `v${version}`).toMatchObject({
        errorCode: 0,
        groupState: 'Empty',
        protocolType: '',
        protocolData: '',
        members: [],
      });
      expect(unknown, `v${version}`).toMatchObject({
        errorCode: 0,
        groupId: 'unknown',
        groupState: 'Dead',
        protocolType: '',
        members: [],
      });
    }
    expect(
      (await client.send(API_KEYS.DescribeGroups, 5, { groups: [''] })).groups[0]!.errorCode,
    ).toBe(KAFKA_ERROR.INVALID_GROUP_ID);
  });
});

describe('authorized operations (KIP-430)', () => {
  // Kafka's ACL operation codes: Read 3, Write 4, Delete 6, Describe 8; a set is a bit per code.
  const READ_DESCRIBE_DELETE = (1 << 3) | (1 << 6) | (1 << 8);
  const AND_WRITE = READ_DESCRIBE_DELETE | (1 << 4);
  const NOT_ASKED = -2147483648;

  it('are every operation the ACLs govern when asked for (no authorizer): groups Read, Describe and Delete, topics those and Write, the cluster none; MIN_VALUE when not asked or for a group answered with an error', async () => {
    const { t, client } = await start();
    await seed(t);
    for (const asked of [true, false]) {
      const groups = await client.send(API_KEYS.DescribeGroups, 5, {
        groups: ['live', 'idle', 'unknown', ''],
        includeAuthorizedOperations: asked,
      });
      const expected = asked ? READ_DESCRIBE_DELETE : NOT_ASKED;
      expect(groups.groups.map((g) => [g.groupId, g.authorizedOperations])).toEqual([
        ['live', expected],
        ['idle', expected],
        ['unknown', expected],
        ['', NOT_ASKED], // INVALID_GROUP_ID
      ]);
      const consumer = await client.send(API_KEYS.ConsumerGroupDescribe, 0, {
        groupIds: ['live', 'idle'],
        includeAuthorizedOperations: asked,
      });
      expect(consumer.groups.map((g) => [g.groupId, g.errorCode, g.authorizedOperations])).toEqual([
        ['live', 0, expected],
        ['idle', KAFKA_ERROR.GROUP_ID_NOT_FOUND, NOT_ASKED],
      ]);
      for (const version of [8, 10]) {
        const metadata = await client.send(API_KEYS.Metadata, version, {
          topics: [{ name: 'orders' }, { name: 'missing' }],
          allowAutoTopicCreation: false,
          includeClusterAuthorizedOperations: asked,
          includeTopicAuthorizedOperations: asked,
        });
        expect(metadata.clusterAuthorizedOperations, `v${version}`).toBe(asked ? 0 : NOT_ASKED);
        const topicExpected = asked ? AND_WRITE : NOT_ASKED;
        expect(
          metadata.topics.map((m) => [m.name, m.errorCode, m.topicAuthorizedOperations]),
        ).toEqual([
          ['orders', 0, topicExpected],
          ['missing', KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, topicExpected],
        ]);
      }
      const all = await client.send(API_KEYS.Metadata, 12, {
        topics: null,
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: asked,
      });
      const topicExpected = asked ? AND_WRITE : NOT_ASKED;
      expect(all.topics.map((m) => m.topicAuthorizedOperations)).toEqual([
        topicExpected,
        topicExpected,
      ]);
    }
  });
});

describe('DeleteGroups', () => {
  it('deletes a group without members; refuses one with members (NON_EMPTY_GROUP) and an unknown one (GROUP_ID_NOT_FOUND)', async () => {
    const { t, client } = await start();
    await seed(t);
    for (let version = 0; version <= 2; version++) {
      const response = await client.send(API_KEYS.DeleteGroups, version, {
        groupsNames: ['idle', 'live', 'unknown', ''],
      });
      expect(
        response.results.map((r) => [r.groupId, r.errorCode]),
        `v${version}`,
      ).toEqual([
        ['idle', version === 0 ? 0 : KAFKA_ERROR.GROUP_ID_NOT_FOUND],
        ['live', KAFKA_ERROR.NON_EMPTY_GROUP],
        ['unknown', KAFKA_ERROR.GROUP_ID_NOT_FOUND],
        ['', KAFKA_ERROR.INVALID_GROUP_ID],
      ]);
    }
    expect((await t.store.listGroups()).map((g) => g.groupId)).toEqual(['live']);
  });

  it('deletes thousands of groups in one request, turns of 256 not waiting for the fdatasyncs of the ones before (a slow disk made one round of them per turn)', async () => {
    // A disk whose fdatasync takes 15 ms: turns come faster than that.
    const fs = new (class extends FaultyFileSystem {
      override async open(p: string, flags: OpenFlags, mode?: number): Promise<FileHandle> {
        const handle = await super.open(p, flags, mode);
        const datasync = handle.datasync.bind(handle);
        handle.datasync = async () => {
          await new Promise((resolve) => setTimeout(resolve, 15));
          return datasync();
        };
        delete handle.datasyncNow; // every fdatasync through the slow path
        return handle;
      }
    })();
    running = await startTestServer({ store: { fs } });
    client = await RawKafkaClient.connect(running.server.port);
    const groups = Array.from({ length: 4096 }, (_, i) => `g-${i}`);
    await Promise.all(
      groups.map((g) => running!.store.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset: 1 }])),
    );
    const before = fs.datasyncCount;
    const response = await client.send(API_KEYS.DeleteGroups, 2, { groupsNames: groups });
    expect(response.results.every((r, i) => r.groupId === groups[i] && r.errorCode === 0)).toBe(
      true,
    );
    expect(await running.store.listGroups()).toEqual([]);
    // 16 turns each waiting for its deletions' fdatasyncs (one per bucket): 64.
    expect(fs.datasyncCount - before).toBeLessThan(40);
  });
});

describe('OffsetDelete', () => {
  it('refuses the partitions of topics a member subscribes to, deletes the others, and answers unknown partitions', async () => {
    const { t, client } = await start();
    await seed(t);
    const response = await client.send(API_KEYS.OffsetDelete, 0, {
      groupId: 'live',
      topics: [
        { name: 'orders', partitions: [{ partitionIndex: 0 }] },
        { name: 'audit', partitions: [{ partitionIndex: 0 }, { partitionIndex: 5 }] },
        { name: 'nope', partitions: [{ partitionIndex: 0 }] },
      ],
    });
    expect(response.errorCode).toBe(0);
    expect(response.topics.map((topic) => topic.partitions.map((p) => p.errorCode))).toEqual([
      [KAFKA_ERROR.GROUP_SUBSCRIBED_TO_TOPIC],
      [0, KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION],
      [KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION],
    ]);
    expect(
      (
        await t.store.fetchOffsets('live', [
          { tableId: 1, bucketId: 0 },
          { tableId: 2, bucketId: 0 },
        ])
      ).map((o) => o?.offset ?? null),
    ).toEqual([1, null]);
    const idle = await client.send(API_KEYS.OffsetDelete, 0, {
      groupId: 'idle',
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 0 }, { partitionIndex: 3 }] }],
    });
    expect(
      idle.topics[0]!.partitions.map((p) => p.errorCode),
      'a partition with nothing committed is deleted without error',
    ).toEqual([0, 0]);
    expect(
      (await client.send(API_KEYS.OffsetDelete, 0, { groupId: 'unknown', topics: [] })).errorCode,
    ).toBe(KAFKA_ERROR.GROUP_ID_NOT_FOUND);
  });
});

describe('DescribeGroups and OffsetDelete at their edges', () => {
  it('describes a consumer group whose last member left as Empty, with no assignor in its protocol data', async () => {
    const { t, client } = await start();
    const memberId = await seed(t);
    await t.store.heartbeat('live', { memberId, memberEpoch: -1 });
    const [live] = (await client.send(API_KEYS.DescribeGroups, 5, { groups: ['live'] })).groups;
    expect(live).toMatchObject({
      errorCode: 0,
      groupState: 'Empty',
      protocolType: 'consumer',
      protocolData: '',
      members: [],
    });
  });

  it('answers a negative partition UNKNOWN_TOPIC_OR_PARTITION and deletes the others of the request', async () => {
    const { t, client } = await start();
    await seed(t);
    const response = await client.send(API_KEYS.OffsetDelete, 0, {
      groupId: 'idle',
      topics: [{ name: 'orders', partitions: [{ partitionIndex: -1 }, { partitionIndex: 0 }] }],
    });
    expect([response.errorCode, response.topics[0]!.partitions.map((p) => p.errorCode)]).toEqual([
      0,
      [KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, 0],
    ]);
    expect(
      (await t.store.fetchOffsets('idle', [{ tableId: 1, bucketId: 0 }]))[0],
      'partition 0 deleted',
    ).toBeNull();
  });
});
