/**
 * librdkafka 2.15.1, through @confluentinc/kafka-javascript 1.10.1's KafkaJS-compatible API,
 * unmodified, against the server on port 0: consumers of the classic protocol (JoinGroup v5 after
 * MEMBER_ID_REQUIRED, SyncGroup v3, Heartbeat v3, OffsetCommit v9 read as a generation, LeaveGroup
 * v1) and of `group.protocol=consumer` (KIP-848: ConsumerGroupHeartbeat v1, OffsetCommit v9 under the
 * member epoch) join, split a topic's partitions, and commit; a KIP-848 consumer subscribed by a
 * regular expression gets the matching topics, one created after it joined included.
 *
 * Its own tier (`npm run test:librdkafka`, run by .ci/run): the client is a native addon installed
 * into test/librdkafka/node_modules by install.sh, not a dependency of the package. Real clients run
 * on real time, so the store and the server run on the system clock, with short client timeouts.
 */
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock } from '../../src/index.js';
import { API_KEYS } from '../../src/kafka/protocol/index.js';
import { RawKafkaClient } from '../kafka/support/raw-kafka-client.js';
import { startTestServer, type TestServer } from '../kafka/support/server-fixture.js';

/** The part of the KafkaJS-compatible API these tests use. */
interface RdConsumer {
  connect(): Promise<void>;
  subscribe(subscription: { topics: (string | RegExp)[] }): Promise<void>;
  run(config: { eachMessage: () => Promise<void> }): Promise<void>;
  assignment(): { topic: string; partition: number }[];
  commitOffsets(offsets: { topic: string; partition: number; offset: string }[]): Promise<void>;
  disconnect(): Promise<void>;
}
interface RdKafka {
  consumer(config: Record<string, unknown>): RdConsumer;
}
interface RdModule {
  KafkaJS: {
    Kafka: new (config: Record<string, unknown>) => RdKafka;
    logLevel: { NOTHING: number };
  };
}

const { KafkaJS } = createRequire(import.meta.url)('@confluentinc/kafka-javascript') as RdModule;

let running: TestServer | undefined;
const consumers: RdConsumer[] = [];

afterEach(async () => {
  for (const consumer of consumers.splice(0).reverse()) await consumer.disconnect().catch(() => {});
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
});

async function start(): Promise<TestServer> {
  running = await startTestServer({
    clock: new SystemClock(),
    store: {
      group: { assignmentIntervalMs: 0, initialRebalanceDelayMs: 0, heartbeatIntervalMs: 200 },
    },
    server: { topics: [{ name: 'orders', partitions: 4 }] },
  });
  return running;
}

async function consumerOf(
  t: TestServer,
  groupId: string,
  clientId: string,
  config: Record<string, unknown>,
  topics: (string | RegExp)[] = ['orders'],
): Promise<RdConsumer> {
  const kafka = new KafkaJS.Kafka({
    kafkaJS: { brokers: [...t.server.brokers], clientId, logLevel: KafkaJS.logLevel.NOTHING },
  });
  const { kafkaJS: kafkaJSConfig, ...rdkafkaConfig } = config;
  const consumer = kafka.consumer({
    ...rdkafkaConfig,
    kafkaJS: {
      groupId,
      fromBeginning: true,
      autoCommit: false,
      ...(kafkaJSConfig as object | undefined),
    },
  });
  consumers.push(consumer);
  await consumer.connect();
  await consumer.subscribe({ topics });
  void consumer.run({ eachMessage: async () => {} });
  return consumer;
}

const owned = (c: RdConsumer) =>
  c
    .assignment()
    .map((a) => a.partition)
    .sort((x, y) => x - y);

/** Waits (real time: the clients' and the store's timers run on it) until `condition` holds. */
async function eventually(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600 && !condition(); i++)
    await new Promise((resolve) => setTimeout(resolve, 25));
  expect(condition(), what).toBe(true);
}

async function splitAndCommit(
  t: TestServer,
  groupId: string,
  config: Record<string, unknown>,
): Promise<void> {
  const first = await consumerOf(t, groupId, `${groupId}-first`, config);
  await eventually(() => owned(first).length === 4, 'the first consumer owns all 4 partitions');
  const second = await consumerOf(t, groupId, `${groupId}-second`, config);
  await eventually(
    () => owned(first).length === 2 && owned(second).length === 2,
    'two partitions each',
  );
  expect([...owned(first), ...owned(second)].sort()).toEqual([0, 1, 2, 3]);
  const partition = owned(second)[0]!;
  await second.commitOffsets([{ topic: 'orders', partition, offset: '42' }]);
  // This client's commitOffsets may resolve before the broker answers: wait for the store to have it.
  let stored: number | undefined;
  await eventually(() => {
    void t.store.fetchOffsets(groupId, [{ tableId: 1, bucketId: partition }]).then(([o]) => {
      stored = o?.offset;
    });
    return stored === 42;
  }, 'the commit reached the store');
}

describe('librdkafka 2.15.1 consumers', () => {
  it('of the classic protocol join, split the partitions and commit under their generation', async () => {
    const t = await start();
    await splitAndCommit(t, 'rdk-classic', {
      kafkaJS: { sessionTimeout: 6_000, heartbeatInterval: 100 },
    });
    expect((await t.store.describeGroup('rdk-classic')).classic).toMatchObject({
      state: 'Stable',
      protocolType: 'consumer',
    });
  });

  it('of group.protocol=consumer (KIP-848) join, split the partitions and commit under their member epoch', async () => {
    const t = await start();
    await splitAndCommit(t, 'rdk-consumer', { 'group.protocol': 'consumer' });
    const description = await t.store.describeGroup('rdk-consumer');
    expect([description.groupType, description.members.length]).toEqual(['consumer', 2]);
  });

  it('of group.protocol=consumer (KIP-848) subscribed by regular expression get the matching topics, one created later included', async () => {
    const t = await start();
    const consumer = await consumerOf(
      t,
      'rdk-regex',
      'rdk-regex',
      { 'group.protocol': 'consumer' },
      [/^ord.*/],
    );
    await eventually(
      () => owned(consumer).length === 4,
      'the consumer owns the 4 partitions of orders',
    );
    expect(consumer.assignment().every((a) => a.topic === 'orders')).toBe(true);
    expect((await t.store.describeGroup('rdk-regex')).members[0]!.subscribedTableIds).toEqual([1]);
    const admin = await RawKafkaClient.connect(t.server.port, {});
    try {
      await admin.send(API_KEYS.Metadata, 12, {
        topics: [
          { name: 'orders-late', topicId: '00000000-0000-0000-0000-000000000000' },
          { name: 'audit', topicId: '00000000-0000-0000-0000-000000000000' },
        ],
        allowAutoTopicCreation: true,
      });
    } finally {
      await admin.close();
    }
    await eventually(
      () => consumer.assignment().some((a) => a.topic === 'orders-late'),
      'the topic created later is assigned',
    );
    expect(consumer.assignment().some((a) => a.topic === 'audit')).toBe(false);
  });
});
