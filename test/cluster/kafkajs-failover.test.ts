/**
 * kafkajs 2.2.4 consumers, unmodified, on a 3-node cluster on a 3-member etcd: each of six groups
 * has one consumer (classic protocol) subscribed to the topic, which commits its partitions over and
 * over with growing offsets (consumer.commitOffsets). The owner of a busy bucket is SIGKILLed:
 * - the consumers of the groups on its buckets find the new coordinator themselves and commit again
 *   (the time from the kill to the first commit begun after it is printed: kafkajs does not look
 *   for a new coordinator when the old one refuses connections, so its consumer gives up after its
 *   retries and restarts, and joins under a new member id, which waits out the old member's
 *   session on the new owner, where the group was restored with it);
 * - every commit kafkajs reported acknowledged (its COMMIT_OFFSETS event, which it emits only on
 *   the coordinator's answer) is there afterwards, and nothing above what was sent;
 * - every group ends Stable with its one consumer, wherever its bucket went.
 * Real clients run on real time; the nodes run on the system clock.
 */
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EtcdCluster } from '../support/etcd-cluster.js';
import {
  TOPIC,
  bucketOf,
  nodeDirs,
  startNode,
  status,
  stopNode,
  waitSettled,
  type NodeProcess,
} from './cluster-harness.js';

const PARTITIONS = 8; // startNode serves the topic with 8 partitions
const GROUPS = Array.from({ length: 6 }, (_, i) => `kj-${i}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let etcd: EtcdCluster;
let nodes: NodeProcess[] = [];
let removeDirs: () => void = () => {};
const closers: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  etcd = await EtcdCluster.start({ members: 3 });
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  for (const node of nodes) await stopNode(node, 'SIGKILL');
  nodes = [];
  await etcd?.stop();
  removeDirs();
});

/** One group's consumer and what it did. */
interface Committer {
  readonly groupId: string;
  readonly consumer: Consumer;
  joined: boolean;
  /** The highest offset passed to commitOffsets (sent, or about to be). */
  attempted: number;
  /** The highest offset kafkajs reported committed, and when (performance.now()). */
  acknowledged: number;
  acks: { offset: number; atMs: number }[];
}

function brokers(): string[] {
  return nodes.map((n) => `127.0.0.1:${n.port}`);
}

async function startCommitter(groupId: string): Promise<Committer> {
  const kafka = new Kafka({
    clientId: `committer-${groupId}`,
    brokers: brokers(),
    logLevel: logLevel.NOTHING,
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 1000 },
  });
  const consumer = kafka.consumer({
    groupId,
    // A consumer that restarts joins under a new member id, and the group waits for the old one
    // (restored with the group on the new owner) until its session runs out: keep it short.
    sessionTimeout: 3_000,
    rebalanceTimeout: 10_000,
    heartbeatInterval: 300,
    maxWaitTimeInMs: 100,
    // Few, short retries: a consumer whose coordinator's connection is refused gives up soon and
    // restarts, finding the new coordinator (kafkajs refreshes it on NOT_COORDINATOR, not on a
    // refused connection).
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 500 },
  });
  const c: Committer = {
    groupId,
    consumer,
    joined: false,
    attempted: 0,
    acknowledged: 0,
    acks: [],
  };
  consumer.on(consumer.events.GROUP_JOIN, () => {
    c.joined = true;
  });
  consumer.on(consumer.events.COMMIT_OFFSETS, (event) => {
    const offsets = event.payload.topics.flatMap((t) => t.partitions.map((p) => Number(p.offset)));
    const offset = Math.min(...offsets);
    if (offset > c.acknowledged) c.acknowledged = offset;
    c.acks.push({ offset, atMs: performance.now() });
  });
  closers.push(() => consumer.disconnect());
  await consumer.connect();
  await consumer.subscribe({ topics: [TOPIC], fromBeginning: true });
  await consumer.run({ autoCommit: false, eachMessage: async () => {} });
  return c;
}

/** Commits every partition at a growing offset until `stopped()`; errors are retried by the next round. */
async function commitLoop(c: Committer, stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    if (!c.joined) {
      await sleep(50);
      continue;
    }
    const offset = c.attempted + 1;
    c.attempted = offset;
    try {
      await c.consumer.commitOffsets(
        Array.from({ length: PARTITIONS }, (_, partition) => ({
          topic: TOPIC,
          partition,
          offset: String(offset),
        })),
      );
    } catch {
      // retriable trouble (the coordinator moved, a rebalance): the next round commits again
    }
    await sleep(20);
  }
}

describe('kafkajs 2.2.4 consumers on a 3-node cluster', () => {
  it('commit through their groups while the owner of a busy bucket is SIGKILLed: the groups move, each consumer commits again, every acknowledged commit is there, and each group is Stable with its consumer', async () => {
    const prefix = '/kafkajs-failover/';
    const made = nodeDirs(3);
    removeDirs = made.remove;
    nodes = await Promise.all(
      ['n1', 'n2', 'n3'].map((id, i) => startNode(id, etcd.endpoints, prefix, made.dirs[i]!)),
    );
    await waitSettled(etcd.endpoints, prefix, ['n1', 'n2', 'n3']);

    const committers = await Promise.all(GROUPS.map((g) => startCommitter(g)));
    let stopped = false;
    const loops = committers.map((c) => commitLoop(c, () => stopped));
    try {
      for (let i = 0; i < 300 && !committers.every((c) => c.acknowledged > 0); i++)
        await sleep(100);
      expect(committers.filter((c) => c.acknowledged === 0).map((c) => c.groupId)).toEqual([]);
      await sleep(500);

      // The victim: the node coordinating the most groups.
      const before = await status(etcd.endpoints, prefix);
      const coordinatorOf = new Map<string, string>();
      for (const c of committers)
        coordinatorOf.set(c.groupId, before.buckets[await bucketOf(c.groupId)]!.owner!.nodeId);
      const count = (id: string) => [...coordinatorOf.values()].filter((n) => n === id).length;
      const victimId = nodes.map((n) => n.nodeId).sort((a, b) => count(b) - count(a))[0]!;
      const moved = committers.filter((c) => coordinatorOf.get(c.groupId) === victimId);
      const sentBeforeKill = new Map(committers.map((c) => [c.groupId, c.attempted]));
      const killedAt = performance.now();
      nodes.find((n) => n.nodeId === victimId)!.child.kill('SIGKILL');
      const resumedAt = (c: Committer) =>
        c.acks.find((a) => a.offset > sentBeforeKill.get(c.groupId)!)?.atMs;

      // Every consumer commits again, each one a commit begun after the kill (liveness: 30 s).
      for (let i = 0; i < 300 && !committers.every((c) => resumedAt(c) !== undefined); i++)
        await sleep(100);
      expect(
        committers.filter((c) => resumedAt(c) === undefined).map((c) => c.groupId),
        'groups whose consumer did not commit again after the kill',
      ).toEqual([]);
      const movedMs = moved.map((c) => resumedAt(c)! - killedAt);
      console.log(
        `kafkajs consumers after a SIGKILL of the owner of ${moved.length} of the ${GROUPS.length} groups: they committed again after ${movedMs.map((ms) => ms.toFixed(0)).join(', ')} ms`,
      );
      await sleep(500);
    } finally {
      stopped = true;
      await Promise.all(loops);
    }

    const survivors = nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
    const admin = new Kafka({
      clientId: 'checker',
      brokers: survivors.map((n) => `127.0.0.1:${n.port}`),
      logLevel: logLevel.NOTHING,
      retry: { retries: 8, initialRetryTime: 100 },
    }).admin();
    closers.push(() => admin.disconnect());
    await admin.connect();
    for (const c of committers) {
      const [topic] = await admin.fetchOffsets({ groupId: c.groupId, topics: [TOPIC] });
      for (const p of topic!.partitions) {
        expect(Number(p.offset), `${c.groupId}/${p.partition}`).toBeGreaterThanOrEqual(
          c.acknowledged,
        );
        expect(Number(p.offset), `${c.groupId}/${p.partition}`).toBeLessThanOrEqual(c.attempted);
      }
    }
    const described = await admin.describeGroups(GROUPS);
    for (const group of described.groups) {
      expect(group.state, group.groupId).toBe('Stable');
      expect(
        group.members.map((m) => m.clientId),
        group.groupId,
      ).toEqual([`committer-${group.groupId}`]);
    }
  });
});
