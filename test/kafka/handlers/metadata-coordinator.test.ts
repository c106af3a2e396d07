/**
 * Metadata and FindCoordinator as each version speaks them: one broker (this server), topics with
 * their partitions led by it, topic ids from v10; all topics for an empty list in v0 and for null
 * from v1; an unknown topic created durably in the catalog (before it is named in the answer) when
 * the request and the server allow it, UNKNOWN_TOPIC_OR_PARTITION otherwise; INVALID_TOPIC_EXCEPTION
 * for an illegal or colliding name; POLICY_VIOLATION for a full catalog; UNKNOWN_TOPIC_ID for an
 * unknown id. FindCoordinator names this server for a group (v0-3 one key, v4 several), refuses
 * transaction keys with INVALID_REQUEST and an empty group id with INVALID_GROUP_ID, and answers
 * COORDINATOR_NOT_AVAILABLE while a cluster's view names no coordinator.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CATALOG_FILE } from '../../../src/kafka/index.js';
import { TopicCatalog } from '../../../src/kafka/catalog/index.js';
import { API_KEYS, KAFKA_ERROR, ZERO_UUID } from '../../../src/kafka/protocol/index.js';
import { RawKafkaClient } from '../support/raw-kafka-client.js';
import {
  startTestServer,
  type TestServer,
  type TestServerOptions,
} from '../support/server-fixture.js';

let running: TestServer | undefined;
let client: RawKafkaClient | undefined;

async function start(
  server: TestServerOptions['server'] = {},
): Promise<{ t: TestServer; client: RawKafkaClient }> {
  running = await startTestServer({
    server: {
      topics: [
        { name: 'orders', partitions: 3 },
        { name: 'audit', partitions: 1 },
      ],
      ...server,
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

describe('Metadata', () => {
  it('names this server as the only broker, controller and leader, with every replica on it, at every version', async () => {
    const { t, client } = await start();
    const onDisk = JSON.parse(readFileSync(path.join(t.dir, CATALOG_FILE), 'utf8')) as {
      topics: { name: string; topicId: string }[];
    };
    const ordersId = onDisk.topics.find((x) => x.name === 'orders')!.topicId;
    for (let version = 0; version <= 12; version++) {
      const response = await client.send(API_KEYS.Metadata, version, {
        topics: [{ name: 'orders' }],
      });
      expect(response.brokers, `v${version}`).toEqual([
        { nodeId: 0, host: '127.0.0.1', port: t.server.port, rack: null },
      ]);
      const [topic] = response.topics;
      expect(topic, `v${version}`).toMatchObject({
        errorCode: 0,
        name: 'orders',
        isInternal: false,
      });
      expect(
        topic!.partitions.map((p) => [p.partitionIndex, p.leaderId, p.replicaNodes, p.isrNodes]),
        `v${version}`,
      ).toEqual([0, 1, 2].map((p) => [p, 0, [0], [0]]));
      if (version >= 1) expect(response.controllerId).toBe(0);
      if (version >= 2) expect(response.clusterId).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(topic!.topicId, `v${version}: the catalog's id from v10`).toBe(
        version >= 10 ? ordersId : ZERO_UUID,
      );
    }
  });

  it('lists every topic for an empty list in v0 and for null from v1; none for an empty list from v1', async () => {
    const { client } = await start();
    expect(
      (await client.send(API_KEYS.Metadata, 0, { topics: [] })).topics.map((t) => t.name),
    ).toEqual(['audit', 'orders']);
    expect(
      (await client.send(API_KEYS.Metadata, 1, { topics: null })).topics.map((t) => t.name),
    ).toEqual(['audit', 'orders']);
    expect((await client.send(API_KEYS.Metadata, 9, { topics: [] })).topics).toEqual([]);
  });

  it('creates an unknown topic durably, with defaultPartitions, when the request allows it (always before v4)', async () => {
    const { t, client } = await start({ defaultPartitions: 2 });
    const created = await client.send(API_KEYS.Metadata, 9, {
      topics: [{ name: 'fresh' }],
      allowAutoTopicCreation: true,
    });
    expect(created.topics[0]).toMatchObject({ errorCode: 0, name: 'fresh' });
    expect(created.topics[0]!.partitions).toHaveLength(2);
    const onDisk = JSON.parse(readFileSync(path.join(t.dir, CATALOG_FILE), 'utf8')) as {
      topics: { name: string; partitions: number }[];
    };
    expect(
      onDisk.topics.find((x) => x.name === 'fresh')?.partitions,
      'written before the answer',
    ).toBe(2);
    expect(
      (await client.send(API_KEYS.Metadata, 3, { topics: [{ name: 'old-client' }] })).topics[0]!
        .errorCode,
      'v0-3 always allow',
    ).toBe(0);
    const refused = await client.send(API_KEYS.Metadata, 4, {
      topics: [{ name: 'not-asked' }],
      allowAutoTopicCreation: false,
    });
    expect(refused.topics[0]).toMatchObject({
      errorCode: KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
      name: 'not-asked',
      partitions: [],
    });
    expect(t.server.stats().topics).toBe(4);
  });

  it('creates nothing when the server does not allow it', async () => {
    const { t, client } = await start({ autoCreateTopics: false });
    const response = await client.send(API_KEYS.Metadata, 12, {
      topics: [{ name: 'fresh', topicId: ZERO_UUID }],
      allowAutoTopicCreation: true,
    });
    expect(response.topics[0]!.errorCode).toBe(KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION);
    expect(t.server.stats().topics).toBe(2);
  });

  it('answers INVALID_TOPIC_EXCEPTION for an illegal or colliding name, POLICY_VIOLATION for a full catalog', async () => {
    const { client } = await start({
      topicsMax: 1,
      topics: [{ name: 'metrics.cpu', partitions: 1 }],
    });
    const response = await client.send(API_KEYS.Metadata, 9, {
      topics: [
        { name: 'bad name' },
        { name: '..' },
        { name: 'metrics_cpu' },
        { name: 'x'.repeat(250) },
      ],
      allowAutoTopicCreation: true,
    });
    expect(response.topics.map((t) => t.errorCode)).toEqual([17, 17, 17, 17]);
    const full = await client.send(API_KEYS.Metadata, 9, {
      topics: [{ name: 'one-more' }],
      allowAutoTopicCreation: true,
    });
    expect(full.topics[0]!.errorCode).toBe(KAFKA_ERROR.POLICY_VIOLATION);
  });

  it('refuses the names a full catalog has no room for without asking it: a request naming 20,000 new topics asks for 3', async () => {
    const createTopic = vi.spyOn(TopicCatalog.prototype, 'createTopic');
    try {
      const { t, client } = await start({ topicsMax: 5 });
      const names = Array.from({ length: 20_000 }, (_, i) => `new-${i}`);
      const response = await client.send(API_KEYS.Metadata, 9, {
        topics: names.map((name) => ({ name })),
        allowAutoTopicCreation: true,
      });
      const codes = response.topics.map((x) => x.errorCode);
      expect(codes.slice(0, 3)).toEqual([0, 0, 0]);
      expect(codes.slice(3).every((code) => code === KAFKA_ERROR.POLICY_VIOLATION)).toBe(true);
      expect(response.topics.map((x) => x.name)).toEqual(names);
      expect(createTopic).toHaveBeenCalledTimes(3);
      expect(t.server.stats().topics).toBe(5);
    } finally {
      createTopic.mockRestore();
    }
  });

  it('finds topics by id from v10 and answers UNKNOWN_TOPIC_ID for an unknown one', async () => {
    const { client } = await start();
    const byName = await client.send(API_KEYS.Metadata, 12, {
      topics: [{ name: 'orders', topicId: ZERO_UUID }],
    });
    const topicId = byName.topics[0]!.topicId;
    expect(topicId).not.toBe(ZERO_UUID);
    const byId = await client.send(API_KEYS.Metadata, 12, {
      topics: [
        { name: null, topicId },
        { name: null, topicId: '8f3c1a52-0b47-4e2b-9a8e-6f0c2d1e3b4a' },
      ],
    });
    expect(byId.topics.map((t) => [t.errorCode, t.name])).toEqual([
      [0, 'orders'],
      [KAFKA_ERROR.UNKNOWN_TOPIC_ID, null],
    ]);
    // v10-11 carry ids but may not ask by them (Kafka: INVALID_REQUEST for every topic).
    for (const version of [10, 11]) {
      const asked = await client.send(API_KEYS.Metadata, version, {
        topics: [
          { name: 'orders', topicId: ZERO_UUID },
          { name: null, topicId },
        ],
      });
      expect(
        asked.topics.map((t) => [t.errorCode, t.name]),
        `v${version}`,
      ).toEqual([
        [KAFKA_ERROR.INVALID_REQUEST, 'orders'],
        [KAFKA_ERROR.INVALID_REQUEST, ''],
      ]);
    }
  });

  it("never creates Kafka's internal topics (__consumer_offsets, __transaction_state)", async () => {
    const { t, client } = await start();
    const before = t.server.stats().topics;
    const asked = await client.send(API_KEYS.Metadata, 12, {
      topics: [
        { name: '__consumer_offsets', topicId: ZERO_UUID },
        { name: '__transaction_state', topicId: ZERO_UUID },
      ],
      allowAutoTopicCreation: true,
    });
    expect(asked.topics.map((tp) => tp.errorCode)).toEqual([
      KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
      KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
    ]);
    expect(t.server.stats().topics).toBe(before);
  });
});

describe('Metadata: empty lists, repeated and colliding names', () => {
  it('answers no topics for an empty list at every version from v1', async () => {
    const { client } = await start();
    for (let version = 1; version <= 12; version++) {
      expect(
        (await client.send(API_KEYS.Metadata, version, { topics: [] })).topics,
        `v${version}`,
      ).toEqual([]);
    }
  });

  it('answers a topic named twice once, creating it once: a catalog with room for one more topic creates it', async () => {
    const { t, client } = await start({ topicsMax: 3 });
    const response = await client.send(API_KEYS.Metadata, 9, {
      topics: [{ name: 'orders' }, { name: 'fresh' }, { name: 'orders' }, { name: 'fresh' }],
      allowAutoTopicCreation: true,
    });
    expect(response.topics.map((x) => [x.name, x.errorCode])).toEqual([
      ['orders', 0],
      ['fresh', 0],
    ]);
    expect(t.server.stats().topics).toBe(3);
  });

  it("answers INVALID_TOPIC_EXCEPTION for the second of two new names of one request that collide ('.' like '_')", async () => {
    const { t, client } = await start();
    const response = await client.send(API_KEYS.Metadata, 9, {
      topics: [{ name: 'metrics.cpu' }, { name: 'metrics_cpu' }],
      allowAutoTopicCreation: true,
    });
    expect(response.topics.map((x) => [x.name, x.errorCode])).toEqual([
      ['metrics.cpu', 0],
      ['metrics_cpu', KAFKA_ERROR.INVALID_TOPIC_EXCEPTION],
    ]);
    expect(t.server.stats().topics).toBe(3);
  });
});

describe('FindCoordinator', () => {
  it('names this server for a group at v0-3, and for each key of a batch at v4', async () => {
    const { t, client } = await start();
    for (let version = 0; version <= 3; version++) {
      expect(
        await client.send(API_KEYS.FindCoordinator, version, { key: 'readers', keyType: 0 }),
        `v${version}`,
      ).toMatchObject({ errorCode: 0, nodeId: 0, host: '127.0.0.1', port: t.server.port });
    }
    const batch = await client.send(API_KEYS.FindCoordinator, 4, {
      keyType: 0,
      coordinatorKeys: ['a', 'b', ''],
    });
    expect(batch.coordinators.map((c) => [c.key, c.errorCode, c.nodeId])).toEqual([
      ['a', 0, 0],
      ['b', 0, 0],
      ['', KAFKA_ERROR.INVALID_GROUP_ID, -1],
    ]);
  });

  it('answers COORDINATOR_NOT_AVAILABLE, naming no node, while the cluster view can name no coordinator', async () => {
    const { client } = await start({
      clusterView: (self) => ({
        self,
        brokers: () => [self],
        coordinatorFor: (groupId) => (groupId.startsWith('moving') ? undefined : self),
        leaderOf: () => self,
      }),
    });
    for (let version = 0; version <= 3; version++) {
      const response = await client.send(API_KEYS.FindCoordinator, version, {
        key: 'moving-1',
        keyType: 0,
      });
      expect(response, `v${version}`).toMatchObject({
        errorCode: KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE,
        nodeId: -1,
        host: '',
        port: -1,
      });
      if (version >= 1) expect(response.errorMessage).toMatch(/ask again/);
    }
    const batch = await client.send(API_KEYS.FindCoordinator, 4, {
      keyType: 0,
      coordinatorKeys: ['moving-2', 'settled'],
    });
    expect(batch.coordinators.map((c) => [c.key, c.errorCode, c.nodeId])).toEqual([
      ['moving-2', KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE, -1],
      ['settled', 0, 0],
    ]);
  });

  it('refuses transaction keys (and unknown key types) with INVALID_REQUEST and no node', async () => {
    const { client } = await start();
    const response = await client.send(API_KEYS.FindCoordinator, 2, { key: 'tx-1', keyType: 1 });
    expect(response).toMatchObject({
      errorCode: KAFKA_ERROR.INVALID_REQUEST,
      nodeId: -1,
      host: '',
      port: -1,
    });
    expect(response.errorMessage).toMatch(/transaction/);
    const batch = await client.send(API_KEYS.FindCoordinator, 4, {
      keyType: 2,
      coordinatorKeys: ['x'],
    });
    expect(batch.coordinators[0]!.errorCode).toBe(KAFKA_ERROR.INVALID_REQUEST);
  });
});
