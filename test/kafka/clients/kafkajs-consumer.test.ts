/**
 * kafkajs 2.2.4 consumers, unmodified, in a classic consumer group of three on the server (on port
 * 0, behind a proxy that reads their requests, see kafka-proxy.ts): they join and split the six
 * partitions of a topic, commit through the group (OffsetCommit with their generation), rebalance
 * when a member is killed (its connections cut, no LeaveGroup: the server removes it after its
 * session timeout) and when one leaves (LeaveGroup), and after a restart of the server and the
 * store a new member finds the commits and resumes each partition's Fetch from its committed
 * offset.
 *
 * Real clients run on real time, so the store and the server run on the system clock here, with
 * short client timeouts (2 s sessions, 100 ms heartbeats and fetch waits) and no initial rebalance
 * delay.
 */
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock } from '../../../src/index.js';
import { tempDir } from '../../support/temp-dir.js';
import { KafkaProxy } from '../support/kafka-proxy.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

const TOPIC = 'events';
const PARTITIONS = 6;
const closers: (() => Promise<unknown>)[] = [];
const servers: TestServer[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  for (const t of servers.splice(0)) {
    await t.close();
    expect(t.warnings).toEqual([]);
  }
});

async function startServer(dir: string, proxy: KafkaProxy): Promise<TestServer> {
  const t = await startTestServer({
    dir,
    clock: new SystemClock(),
    store: { group: { assignmentIntervalMs: 0, initialRebalanceDelayMs: 0 } },
    server: { advertisedPort: proxy.port, topics: [{ name: TOPIC, partitions: PARTITIONS }] },
  });
  proxy.target = t.server.port;
  servers.push(t);
  return t;
}

/** A running consumer and the partitions of its last join. */
interface Member {
  readonly name: string;
  readonly consumer: Consumer;
  assigned: number[];
  joins: number;
}

async function member(proxy: KafkaProxy, name: string): Promise<Member> {
  const kafka = new Kafka({
    clientId: name,
    brokers: [`127.0.0.1:${proxy.port}`],
    logLevel: logLevel.NOTHING,
    retry: { retries: 2, initialRetryTime: 50 },
  });
  const consumer = kafka.consumer({
    groupId: 'readers',
    sessionTimeout: 2_000,
    rebalanceTimeout: 4_000,
    heartbeatInterval: 100,
    maxWaitTimeInMs: 100,
    retry: { retries: 2, initialRetryTime: 50, restartOnFailure: async () => false },
  });
  const m: Member = { name, consumer, assigned: [], joins: 0 };
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    m.assigned = [...(event.payload.memberAssignment[TOPIC] ?? [])].sort((a, b) => a - b);
    m.joins++;
  });
  closers.push(() => consumer.disconnect());
  await consumer.connect();
  await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
  await consumer.run({ eachMessage: async () => {} });
  return m;
}

/** Waits (real time: the clients' and the store's timers run on it) until `condition` holds. */
async function eventually(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i++)
    await new Promise((resolve) => setTimeout(resolve, 25));
  expect(condition(), what).toBe(true);
}

/** True when `members` own the topic's partitions between them, each partition once, each member some. */
function split(members: readonly Member[]): boolean {
  const all = members.flatMap((m) => m.assigned).sort((a, b) => a - b);
  return (
    members.every((m) => m.assigned.length > 0) &&
    all.length === PARTITIONS &&
    all.every((p, i) => p === i)
  );
}

async function commitAll(m: Member, base: number): Promise<void> {
  await m.consumer.commitOffsets(
    m.assigned.map((partition) => ({ topic: TOPIC, partition, offset: String(base + partition) })),
  );
}

async function committed(proxy: KafkaProxy): Promise<string[]> {
  const admin = new Kafka({
    clientId: 'checker',
    brokers: [`127.0.0.1:${proxy.port}`],
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const [topic] = await admin.fetchOffsets({ groupId: 'readers', topics: [TOPIC] });
    return topic!.partitions.sort((a, b) => a.partition - b.partition).map((p) => p.offset);
  } finally {
    await admin.disconnect();
  }
}

describe('a kafkajs 2.2.4 consumer group (classic protocol)', () => {
  it('splits the partitions among 3, commits, rebalances after a killed member and a leaving one, and resumes from the commits after a restart', async () => {
    const dir = tempDir();
    const proxy = await KafkaProxy.start();
    closers.push(() => proxy.close());
    let t = await startServer(dir, proxy);

    const [a, b, c] = [
      await member(proxy, 'member-a'),
      await member(proxy, 'member-b'),
      await member(proxy, 'member-c'),
    ];
    await eventually(
      () => split([a!, b!, c!]) && [a!, b!, c!].every((m) => m.assigned.length === 2),
      'three members with two partitions each',
    );
    expect((await t.store.describeGroup('readers')).classic).toMatchObject({
      state: 'Stable',
      protocolType: 'consumer',
      protocolName: 'RoundRobinAssigner',
    });
    for (const m of [a!, b!, c!]) await commitAll(m, 100);
    expect(await committed(proxy)).toEqual(['100', '101', '102', '103', '104', '105']);

    // Killed: member-c's connections are cut, so its LeaveGroup never arrives; its session runs out.
    const killedOwned = c!.assigned;
    proxy.cut('member-c');
    await eventually(
      () => split([a!, b!]),
      "the two survivors share the six partitions after member-c's session timeout",
    );
    expect((await t.store.describeGroup('readers')).classic!.members).toHaveLength(2);
    for (const m of [a!, b!])
      await m.consumer.commitOffsets(
        m.assigned
          .filter((p) => killedOwned.includes(p))
          .map((partition) => ({ topic: TOPIC, partition, offset: String(200 + partition) })),
      );
    expect((await committed(proxy)).filter((_, p) => killedOwned.includes(p))).toEqual(
      killedOwned.map((p) => String(200 + p)),
    );

    // Leaves: LeaveGroup, the last member gets everything at once.
    await b!.consumer.disconnect();
    await eventually(
      () => split([a!]) && a!.assigned.length === PARTITIONS,
      'member-a owns all six after member-b left',
    );
    await commitAll(a!, 300);
    await a!.consumer.disconnect();

    // Restart: the server and the store; a new member resumes each partition at its commit.
    await t.close();
    servers.splice(servers.indexOf(t), 1);
    expect(t.warnings).toEqual([]);
    t = await startServer(dir, proxy);
    proxy.dropAll();
    expect(await committed(proxy)).toEqual(['300', '301', '302', '303', '304', '305']);
    const fetchesBefore = proxy.fetches.length;
    const d = await member(proxy, 'member-d');
    await eventually(() => d.assigned.length === PARTITIONS, 'member-d owns all six');
    await eventually(
      () => proxy.fetches.slice(fetchesBefore).some((f) => f.clientId === 'member-d'),
      'member-d fetches',
    );
    const first = proxy.fetches
      .slice(fetchesBefore)
      .find((f) => f.clientId === 'member-d')!.request;
    const resumed = first.topics
      .flatMap((topic) => topic.partitions.map((p) => [p.partition, p.fetchOffset]))
      .sort((x, y) => Number(x[0]) - Number(y[0]));
    expect(resumed).toEqual([0, 1, 2, 3, 4, 5].map((p) => [p, BigInt(300 + p)]));
  });
});
