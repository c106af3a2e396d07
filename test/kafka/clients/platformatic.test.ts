/**
 * @platformatic/kafka 1.35.0 against the server on port 0, unmodified: its admin client
 * (alterConsumerGroupOffsets with negative offsets, listConsumerGroupOffsets, deleteConsumerGroupOffsets,
 * listGroups, describeGroups, deleteGroups), consumers with groupProtocol 'consumer' (KIP-848)
 * that join, get the topic's partitions, share them when a second one joins, and commit; and
 * committed offsets that survive a restart of the server and the store (kafkajs reads them back).
 *
 * Real clients run on real time: the server's clock (which ends held Fetches) is the system clock
 * in these tests, with a short max wait; the store stays on a manual clock, so no session or
 * retention timer fires during a test.
 */
import { Admin, Consumer } from '@platformatic/kafka';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock } from '../../../src/index.js';
import { tempDir } from '../../support/temp-dir.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

let running: TestServer | undefined;
const closers: (() => Promise<unknown>)[] = [];

async function start(dir = tempDir()): Promise<TestServer> {
  running = await startTestServer({
    dir,
    store: { group: { assignmentIntervalMs: 0, heartbeatIntervalMs: 100 } },
    server: { clock: new SystemClock(), topics: [{ name: 'orders', partitions: 4 }] },
  });
  return running;
}

function adminOf(t: TestServer): Admin {
  const admin = new Admin({
    clientId: 'plt-admin',
    bootstrapBrokers: [...t.server.brokers],
    retries: 2,
    retryDelay: 50,
  });
  closers.push(() => admin.close());
  return admin;
}

function consumerOf(t: TestServer, clientId: string): Consumer<Buffer, Buffer, Buffer, Buffer> {
  const consumer = new Consumer({
    clientId,
    groupId: 'plt-readers',
    bootstrapBrokers: [...t.server.brokers],
    groupProtocol: 'consumer',
    maxWaitTime: 100,
    autocommit: false,
    retries: 2,
    retryDelay: 50,
  });
  closers.push(() => consumer.close());
  return consumer;
}

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
});

/** Waits (on real time: a client's heartbeats run on it) until `condition` holds. */
async function eventually(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++)
    await new Promise((resolve) => setTimeout(resolve, 25));
  expect(condition(), what).toBe(true);
}

function offsetsOf(
  groups: Awaited<ReturnType<Admin['listConsumerGroupOffsets']>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const g of groups)
    for (const topic of g.topics)
      for (const p of topic.partitions)
        out[`${g.groupId}/${topic.name}/${p.partitionIndex}`] =
          `${p.committedOffset}:${p.committedLeaderEpoch}:${p.metadata}`;
  return out;
}

describe('@platformatic/kafka 1.35 admin', () => {
  it('alters, lists and deletes consumer group offsets, negative ones included', async () => {
    const t = await start();
    const admin = adminOf(t);
    await admin.alterConsumerGroupOffsets({
      groupId: 'g',
      topics: [
        {
          name: 'orders',
          partitionOffsets: [
            { partition: 0, offset: 10n },
            { partition: 1, offset: -2n },
            { partition: 3, offset: -1n },
          ],
        },
      ],
    });
    expect(offsetsOf(await admin.listConsumerGroupOffsets({ groups: ['g'] }))).toEqual({
      'g/orders/0': '10:-1:',
      'g/orders/1': '-2:-1:',
      'g/orders/3': '-1:-1:',
    });
    const asked = await admin.listConsumerGroupOffsets({
      groups: [{ groupId: 'g', topics: [{ name: 'orders', partitionIndexes: [0, 2] }] }],
    });
    expect(offsetsOf(asked)).toEqual({ 'g/orders/0': '10:-1:', 'g/orders/2': '-1:-1:' });
    await admin.deleteConsumerGroupOffsets({
      groupId: 'g',
      topics: [{ name: 'orders', partitionIndexes: [1] }],
    });
    expect(Object.keys(offsetsOf(await admin.listConsumerGroupOffsets({ groups: ['g'] })))).toEqual(
      ['g/orders/0', 'g/orders/3'],
    );
    expect((await t.store.fetchOffsets('g', [{ tableId: 1, bucketId: 1 }]))[0]).toBeNull();
  });

  it('lists, describes and deletes groups', async () => {
    const t = await start();
    const admin = adminOf(t);
    await admin.alterConsumerGroupOffsets({
      groupId: 'old',
      topics: [{ name: 'orders', partitionOffsets: [{ partition: 0, offset: 1n }] }],
    });
    const listed = await admin.listGroups();
    expect([...listed.values()].map((g) => [g.id, g.state, g.protocolType])).toEqual([
      ['old', 'EMPTY', ''],
    ]);
    const described = await admin.describeGroups({ groups: ['old'] });
    expect(described.get('old')).toMatchObject({ state: 'EMPTY', protocolType: '' });
    await admin.deleteGroups({ groups: ['old'] });
    expect((await admin.listGroups()).size).toBe(0);
  });
});

describe('@platformatic/kafka 1.35 consumers with groupProtocol consumer (KIP-848)', () => {
  it('join, get the partitions, share them when a second joins, and commit under their member epoch', async () => {
    const t = await start();
    const first = consumerOf(t, 'first');
    await first.consume({ topics: ['orders'], mode: 'committed', fallbackMode: 'earliest' });
    await eventually(
      () => (first.assignments?.[0]?.partitions.length ?? 0) === 4,
      'the first consumer owns all 4 partitions',
    );
    const second = consumerOf(t, 'second');
    await second.consume({ topics: ['orders'], mode: 'committed', fallbackMode: 'earliest' });
    const owned = (c: Consumer<Buffer, Buffer, Buffer, Buffer>) =>
      c.assignments?.flatMap((a) => a.partitions) ?? [];
    await eventually(
      () => owned(first).length === 2 && owned(second).length === 2,
      'two partitions each',
    );
    expect([...owned(first), ...owned(second)].sort()).toEqual([0, 1, 2, 3]);
    const partition = owned(second)[0]!;
    await second.commit({
      offsets: [{ topic: 'orders', partition, offset: 123n, leaderEpoch: 0 }],
    });
    expect(
      (await t.store.fetchOffsets('plt-readers', [{ tableId: 1, bucketId: partition }]))[0],
    ).toMatchObject({ offset: 123, leaderEpoch: 0 });
    const description = await t.store.describeGroup('plt-readers');
    expect(description.members.map((m) => m.memberId).sort()).toEqual(
      [first.memberId, second.memberId].sort(),
    );
  });
});

describe('restart', () => {
  it('keeps committed offsets and topic ids across a restart of the server and the store', async () => {
    const dir = tempDir();
    let t = await start(dir);
    let admin = adminOf(t);
    await admin.alterConsumerGroupOffsets({
      groupId: 'durable',
      topics: [
        {
          name: 'orders',
          partitionOffsets: [
            { partition: 2, offset: 99n },
            { partition: 3, offset: -2n },
          ],
        },
      ],
    });
    const topicId = (await admin.metadata({ topics: ['orders'] })).topics.get('orders')?.id;
    for (const close of closers.splice(0).reverse()) await close();
    const firstPort = t.server.port;
    await t.close();
    running = undefined;
    t = await start(dir);
    admin = adminOf(t);
    expect((await admin.metadata({ topics: ['orders'] })).topics.get('orders')?.id).toBe(topicId);
    const kafka = new Kafka({
      clientId: 'after-restart',
      brokers: [...t.server.brokers],
      logLevel: logLevel.NOTHING,
    });
    const kafkajsAdmin = kafka.admin();
    await kafkajsAdmin.connect();
    closers.push(() => kafkajsAdmin.disconnect());
    const fetched = await kafkajsAdmin.fetchOffsets({ groupId: 'durable', topics: ['orders'] });
    expect(fetched[0]!.partitions.map((p) => p.offset)).toEqual(['-1', '-1', '99', '-2']);
    expect(t.server.port === firstPort || t.server.port > 0).toBe(true);
  });
});
