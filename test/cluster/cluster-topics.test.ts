/**
 * The cluster's topic catalog in etcd: every node serves the same topics under the same table ids,
 * topic ids and cluster id, whichever `--topic` list it was started with; a node learns the topics
 * and partitions other nodes add while it runs; a node whose own catalog contradicts the cluster's
 * is refused at start, naming the file to remove; nodes starting together with new topics give
 * them distinct tables.
 */
import { readFileSync, rmSync } from 'node:fs';
import { Consumer } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import {
  startClusterServer,
  type ClusterServer,
  type ClusterServerOptions,
} from '../../src/cluster/index.js';
import { ClusterKeys } from '../../src/cluster/cluster-keys.js';
import { EtcdConnection } from '../../src/cluster/etcd-connection.js';
import { mergeNodeTopics } from '../../src/cluster/cluster-topics.js';
import { API_KEYS, KAFKA_ERROR } from '../../src/kafka/protocol/index.js';
import type { EtcdCluster } from '../support/etcd-cluster.js';
import { cleanups, sleep, startEtcd } from './in-process-cluster.js';
import { tempDir } from '../support/temp-dir.js';
import { RawKafkaClient } from '../kafka/support/raw-kafka-client.js';

async function startNode(
  etcd: EtcdCluster,
  nodeId: string,
  brokerId: number,
  options: Partial<ClusterServerOptions> = {},
): Promise<ClusterServer> {
  const server = await startClusterServer({
    dir: tempDir(),
    etcdEndpoints: etcd.endpoints,
    nodeId,
    brokerId,
    bucketCount: 2,
    host: '127.0.0.1',
    port: 0,
    onWarning: () => {},
    ...options,
  });
  cleanups.push(() => server.close());
  return server;
}

interface Described {
  clusterId: string | null;
  topics: [string, string, number][];
}

/** The cluster id and topics (name, topic id, partitions) a node's Metadata v12 reports. */
async function described(server: ClusterServer): Promise<Described> {
  const c = await RawKafkaClient.connect(server.server.listeners[0]!.port);
  try {
    const md = (await c.send(API_KEYS.Metadata, 12, {
      topics: null,
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    } as never)) as {
      clusterId: string | null;
      topics: { name: string; topicId: string; partitions: unknown[] }[];
    };
    return {
      clusterId: md.clusterId,
      topics: md.topics
        .map((t): [string, string, number] => [t.name, t.topicId, t.partitions.length])
        .sort((x, y) => x[0].localeCompare(y[0])),
    };
  } finally {
    await c.close();
  }
}

async function eventually(check: () => Promise<boolean>, ms = 8000): Promise<void> {
  const until = performance.now() + ms;
  while (!(await check()) && performance.now() < until) await sleep(100);
}

describe("the cluster's topic catalog", () => {
  it('nodes given the same --topic list, and a node given none, serve the same topics under one topic id each, and report one cluster id (a KIP-848 assignment names topics by id, read against Metadata from any node)', async () => {
    const etcd = await startEtcd();
    const topics = [
      { name: 'orders', partitions: 2 },
      { name: 'payments', partitions: 1 },
    ];
    const a = await startNode(etcd, 'n1', 1, { topics });
    const b = await startNode(etcd, 'n2', 2, { topics });
    const c = await startNode(etcd, 'n3', 3);
    const onA = await described(a);
    expect(onA.topics.map((t) => [t[0], t[2]])).toEqual([
      ['orders', 2],
      ['payments', 1],
    ]);
    expect(await described(b)).toEqual(onA);
    expect(await described(c)).toEqual(onA);
  });

  it('a running node takes, within seconds and without a restart, the topics and partitions another node adds; a commit to the new topic on it reads back through the other', async () => {
    const etcd = await startEtcd();
    const a = await startNode(etcd, 'n1', 1, { topics: [{ name: 'orders', partitions: 1 }] });
    const b = await startNode(etcd, 'n2', 2, {
      topics: [
        { name: 'orders', partitions: 3 },
        { name: 'refunds', partitions: 2 },
      ],
    });
    const onB = await described(b);
    expect(onB.topics.map((t) => [t[0], t[2]])).toEqual([
      ['orders', 3],
      ['refunds', 2],
    ]);
    await eventually(async () => JSON.stringify(await described(a)) === JSON.stringify(onB));
    expect(await described(a)).toEqual(onB);
    // Both nodes take their buckets; the group's coordinator, whichever it is, accepts the new topic.
    for (let i = 0; i < 200 && a.node.ownedBuckets().length + b.node.ownedBuckets().length < 2; i++)
      await sleep(50);
    const bucket = a.store.bucketFor('g');
    const [owner, other] = a.node.ownedBuckets().includes(bucket) ? [a, b] : [b, a];
    const toOwner = await RawKafkaClient.connect(owner.server.listeners[0]!.port);
    cleanups.push(() => toOwner.close());
    const commit = await toOwner.send(API_KEYS.OffsetCommit, 8, {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [
        {
          name: 'refunds',
          partitions: [{ partitionIndex: 1, committedOffset: 42n, committedMetadata: null }],
        },
      ],
    });
    expect(commit.topics[0]!.partitions[0]!.errorCode).toBe(0);
    // The owner leaves; the other node takes the bucket and reads the commit under the same topic.
    await owner.close();
    for (let i = 0; i < 200 && !other.node.ownedBuckets().includes(bucket); i++) await sleep(50);
    const toOther = await RawKafkaClient.connect(other.server.listeners[0]!.port);
    cleanups.push(() => toOther.close());
    const fetched = await toOther.send(API_KEYS.OffsetFetch, 8, {
      groups: [{ groupId: 'g', topics: [{ name: 'refunds', partitionIndexes: [1] }] }],
    });
    expect(fetched.groups[0]!.topics[0]!.partitions[0]!.committedOffset).toBe(42n);
  });

  it('a KIP-848 consumer (@platformatic/kafka) that bootstraps from a node that does not coordinate its group gets every partition from the node that does', async () => {
    const etcd = await startEtcd();
    const options = { topics: [{ name: 'orders', partitions: 4 }] };
    const a = await startNode(etcd, 'n1', 1, options);
    const b = await startNode(etcd, 'n2', 2, options);
    for (let i = 0; i < 200 && a.node.ownedBuckets().length + b.node.ownedBuckets().length < 2; i++)
      await sleep(50);
    const groupId = 'readers';
    const other = a.node.ownedBuckets().includes(a.store.bucketFor(groupId)) ? b : a;
    const consumer = new Consumer({
      clientId: 'reader',
      groupId,
      bootstrapBrokers: [...other.server.brokers],
      groupProtocol: 'consumer',
      maxWaitTime: 100,
      autocommit: false,
      retries: 5,
      retryDelay: 100,
    });
    // Closed at once (force), without waiting for its in-flight fetches.
    cleanups.push(
      () =>
        new Promise<void>((resolve, reject) =>
          consumer.close(true, (error) => (error ? reject(error) : resolve())),
        ),
    );
    const stream = await consumer.consume({
      topics: ['orders'],
      mode: 'committed',
      fallbackMode: 'earliest',
    });
    cleanups.push(() => stream.close());
    const owned = () => consumer.assignments?.flatMap((p) => p.partitions) ?? [];
    await eventually(async () => owned().length === 4, 20_000);
    expect(owned().sort()).toEqual([0, 1, 2, 3]);
  });

  it("with autoCreateTopics, a topic a client's Metadata creates on one node is the cluster's: the other node serves it under the same id and table; creations on two nodes at once take tables of their own; a name colliding with another node's creation is refused; without it (the default), nothing is created", async () => {
    const etcd = await startEtcd();
    const a = await startNode(etcd, 'n1', 1, {
      topics: [{ name: 'orders', partitions: 1 }],
      autoCreateTopics: true,
    });
    const b = await startNode(etcd, 'n2', 2, { autoCreateTopics: true });
    const byDefault = await startNode(etcd, 'n3', 3);
    const create = async (server: ClusterServer, names: string[]) => {
      const c = await RawKafkaClient.connect(server.server.listeners[0]!.port);
      try {
        const md = (await c.send(API_KEYS.Metadata, 12, {
          topics: names.map((name) => ({ name, topicId: '00000000-0000-0000-0000-000000000000' })),
          allowAutoTopicCreation: true,
          includeTopicAuthorizedOperations: false,
        } as never)) as { topics: { name: string; errorCode: number }[] };
        return Object.fromEntries(md.topics.map((t) => [t.name, t.errorCode]));
      } finally {
        await c.close();
      }
    };
    const [onA, onB] = await Promise.all([
      create(a, ['made-on-a', 'both']),
      create(b, ['made-on-b', 'both']),
    ]);
    expect({ ...onA, ...onB }).toEqual({ 'made-on-a': 0, 'made-on-b': 0, both: 0 });
    await eventually(async () => (await described(a)).topics.length === 4);
    const seen = await described(a);
    expect(seen.topics.map((t) => t[0])).toEqual(['both', 'made-on-a', 'made-on-b', 'orders']);
    await eventually(async () => JSON.stringify(await described(b)) === JSON.stringify(seen));
    expect(await described(b)).toEqual(seen);
    const tables = (
      JSON.parse(readFileSync(`${b.store.dir}/kafka-topics.json`, 'utf8')) as {
        topics: { tableId: number }[];
      }
    ).topics.map((t) => t.tableId);
    expect(new Set(tables).size, 'a table per topic').toBe(4);
    await create(a, ['with.dot']);
    const collision = await create(b, ['with_dot']);
    expect(collision).toEqual({ with_dot: KAFKA_ERROR.INVALID_TOPIC_EXCEPTION });
    expect(await create(byDefault, ['not-made'])).toEqual({
      'not-made': KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
    });
  });

  it("refuses to start a node whose own catalog names a topic under another table than the cluster's (INVALID_CONFIG naming the file); without the file it starts and serves the cluster's", async () => {
    const etcd = await startEtcd();
    // A node's catalog made in another cluster (another prefix of the same etcd): the same topics,
    // in another order, so under other tables.
    const dir = tempDir();
    const alone = await startNode(etcd, 'n2', 2, {
      dir,
      prefix: '/elsewhere/',
      topics: [
        { name: 'payments', partitions: 1 },
        { name: 'orders', partitions: 1 },
      ],
    });
    await alone.close();
    await startNode(etcd, 'n1', 1, {
      topics: [
        { name: 'orders', partitions: 1 },
        { name: 'payments', partitions: 1 },
      ],
    });
    const refused = await startNode(etcd, 'n2', 2, { dir }).then(
      () => undefined,
      (error: unknown) => error as { code: string; message: string },
    );
    expect(refused?.code).toBe('INVALID_CONFIG');
    expect(refused?.message).toMatch(
      /topic (orders|payments) is table \d in this node's catalog .*kafka-topics\.json but table \d in the cluster's.*remove .*kafka-topics\.json/,
    );
    rmSync(`${dir}/kafka-topics.json`);
    const b = await startNode(etcd, 'n2', 2, { dir });
    expect((await described(b)).topics.map((t) => t[0])).toEqual(['orders', 'payments']);
  });

  it("writes the cluster's catalog again from a running node's copy when etcd lost it (restored empty or wiped): a node started next serves the same topics", async () => {
    const etcd = await startEtcd();
    await startNode(etcd, 'n1', 1, { topics: [{ name: 'orders', partitions: 2 }] });
    const before = await startNode(etcd, 'n2', 2);
    const seen = await described(before);
    const connection = new EtcdConnection({ endpoints: etcd.endpoints });
    cleanups.push(async () => connection.close());
    const key = Buffer.from(new ClusterKeys().topics);
    await connection.deleteRange({ key }, 'test');
    await eventually(async () => (await connection.range({ key }, 'test')).kvs.length === 1);
    const later = await startNode(etcd, 'n3', 3);
    expect(await described(later)).toEqual(seen);
  });

  it('nodes starting together, each with topics of its own, give every topic a table of its own, and agree', async () => {
    const etcd = await startEtcd();
    const started = await Promise.allSettled(
      [1, 2, 3].map((i) =>
        startNode(etcd, `n${i}`, i, {
          topics: [
            { name: `own-${i}-a`, partitions: 1 },
            { name: `own-${i}-b`, partitions: 1 },
            { name: 'shared', partitions: 2 },
          ],
        }),
      ),
    );
    expect(started.map((s) => (s.status === 'rejected' ? String(s.reason) : 'started'))).toEqual([
      'started',
      'started',
      'started',
    ]);
    const nodes = started.map((s) => (s as PromiseFulfilledResult<ClusterServer>).value);
    await eventually(async () => {
      const seen = await Promise.all(nodes.map(described));
      return seen.every(
        (s) => JSON.stringify(s) === JSON.stringify(seen[0]) && s.topics.length === 7,
      );
    });
    const seen = await Promise.all(nodes.map(described));
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[2]).toEqual(seen[0]);
    expect(seen[0]!.topics.length).toBe(7);
    expect(seen[0]!.topics.find((t) => t[0] === 'shared')?.[2]).toBe(2);
    const ids = new Set(
      nodes.map((n) =>
        JSON.stringify(
          (
            JSON.parse(readFileSync(`${n.store.dir}/kafka-topics.json`, 'utf8')) as {
              topics: { name: string; tableId: number }[];
            }
          ).topics.map((t) => [t.name, t.tableId]),
        ),
      ),
    );
    expect(ids.size, 'the same tables on every node').toBe(1);
    const pairs = JSON.parse([...ids][0]!) as [string, number][];
    expect(new Set(pairs.map((p) => p[1])).size, 'a table per topic').toBe(7);
  });
});

describe('mergeNodeTopics', () => {
  const keys = new ClusterKeys();
  const base = { keys, topicsMax: 100, nowMs: () => 0 };
  const topic = (name: string, tableId: number, partitions = 1, n = tableId) => ({
    name,
    topicId: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    tableId,
    partitions,
    createdAtMs: 0,
  });
  const cluster = { clusterId: 'CCCCCCCCCCCCCCCCCCCCCC', topics: [topic('orders', 1, 2)] };

  it('refuses a shrink, a colliding or bad name and a partition count out of range with the reason', () => {
    const merge = (wanted: { name: string; partitions: number }[]) => () =>
      mergeNodeTopics(cluster, { ...base, local: undefined, wanted });
    expect(merge([{ name: 'orders', partitions: 1 }])).toThrow(/never shrink/);
    expect(merge([{ name: 'orders', partitions: 1 }])).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
    expect(merge([{ name: 'or.ders', partitions: 1 }])).not.toThrow();
    expect(merge([{ name: 'a b', partitions: 1 }])).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIG' }),
    );
    expect(merge([{ name: 'x', partitions: 0 }])).toThrow(/partition count/);
    expect(
      () =>
        mergeNodeTopics(
          { ...cluster, topics: [topic('a.b', 1)] },
          { ...base, local: undefined, wanted: [{ name: 'a_b', partitions: 1 }] },
        ),
      "'.' and '_' collide",
    ).toThrow(/collides with the cluster's topic a\.b/);
  });

  it("takes a node's own topics the cluster lacks with their table and id, refuses one whose table another topic holds, and keeps the cluster's id for a topic both have", () => {
    const local = (topics: ReturnType<typeof topic>[]) => ({
      content: { clusterId: 'LLLLLLLLLLLLLLLLLLLLLL', topics },
      path: '/node/kafka-topics.json',
    });
    const merged = mergeNodeTopics(cluster, {
      ...base,
      local: local([topic('orders', 1, 5, 99), topic('audit', 4)]),
      wanted: [{ name: 'new', partitions: 1 }],
    });
    expect(merged.clusterId).toBe('CCCCCCCCCCCCCCCCCCCCCC');
    expect(merged.topics).toEqual([
      topic('audit', 4),
      { ...topic('new', 5), topicId: expect.any(String) },
      topic('orders', 1, 5),
    ]);
    expect(() =>
      mergeNodeTopics(cluster, { ...base, local: local([topic('billing', 1)]), wanted: [] }),
    ).toThrow(/topic billing .* is table 1, but the cluster's .* has orders as table 1: remove/);
    expect(
      mergeNodeTopics(undefined, { ...base, local: local([]), wanted: [] }).clusterId,
      "a cluster without a catalog takes the node's cluster id",
    ).toBe('LLLLLLLLLLLLLLLLLLLLLL');
  });
});
