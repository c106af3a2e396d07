/**
 * A seeded random fault schedule against a 3-node cluster on a 3-member etcd, with a checker:
 * committers run throughout while the schedule SIGKILLs and restarts nodes, SIGSTOPs and resumes
 * them (short pauses and pauses past the lease), and kills and restarts etcd members (at most one
 * at a time, so etcd keeps quorum). After the schedule the checker asserts:
 * - no acknowledged commit lost (each group answers at least its last acknowledged offset, and at
 *   most its last one sent);
 * - no stale fetch after an acknowledged commit from the same client;
 * - never two owners of a bucket at once, from the epochs recorded in the log: along each bucket's
 *   log the coordinator epochs never go back.
 *
 * Seeds: CLUSTER_SEEDS random ones (default 1), or CLUSTER_SEED=<n> to replay one; a failure
 * prints its seed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EtcdCluster } from '../support/etcd-cluster.js';
import { seededRandom } from '../support/seeded-random.js';
import {
  Committers,
  fetchAll,
  logEpochs,
  nodeDirs,
  startNode,
  stopNode,
  waitSettled,
  type NodeProcess,
} from './cluster-harness.js';

const GROUPS = Array.from({ length: 8 }, (_, i) => `fault-group-${i}`);
const STEPS = 6;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const seeds =
  process.env.CLUSTER_SEED !== undefined
    ? [Number(process.env.CLUSTER_SEED)]
    : Array.from({ length: Number(process.env.CLUSTER_SEEDS ?? 1) }, () =>
        Math.floor(Math.random() * 2 ** 31),
      );

let etcd: EtcdCluster | undefined;
let nodes: NodeProcess[] = [];
let removeDirs: () => void = () => {};

afterEach(async () => {
  for (const node of nodes) await stopNode(node, 'SIGKILL');
  nodes = [];
  await etcd?.stop();
  etcd = undefined;
  removeDirs();
});

describe('a seeded random fault schedule', () => {
  for (const seed of seeds) {
    it(`loses no acknowledged commit, serves no stale fetch and never has two owners of a bucket (CLUSTER_SEED=${seed})`, async () => {
      const next = seededRandom(seed);
      const random = { int: (n: number) => Math.floor(next() * n), bool: () => next() < 0.5 };
      const prefix = `/faults-${seed}/`;
      etcd = await EtcdCluster.start({ members: 3 });
      const made = nodeDirs(3);
      removeDirs = made.remove;
      const ids = ['n1', 'n2', 'n3'];
      nodes = await Promise.all(
        ids.map((id, i) => startNode(id, etcd!.endpoints, prefix, made.dirs[i]!)),
      );
      await waitSettled(etcd.endpoints, prefix, ids);
      const alive = () =>
        nodes
          .filter((n) => n.child.exitCode === null && n.child.signalCode === null)
          .map((n) => n.port);
      const committers = new Committers(alive);
      committers.start(GROUPS);
      const schedule: string[] = [];
      try {
        for (let step = 0; step < STEPS; step++) {
          await sleep(300 + random.int(700));
          const fault = random.int(4);
          const i = random.int(3);
          const node = nodes[i]!;
          if (fault === 0) {
            schedule.push(`SIGKILL ${node.nodeId}, restart`);
            await stopNode(node, 'SIGKILL');
            nodes[i] = await startNode(node.nodeId, etcd.endpoints, prefix, made.dirs[i]!);
          } else if (fault === 1) {
            const pauseMs = random.bool() ? 300 : 3000; // a short pause, or one past the 2 s lease
            schedule.push(`SIGSTOP ${node.nodeId} for ${pauseMs} ms`);
            node.child.kill('SIGSTOP');
            await sleep(pauseMs);
            node.child.kill('SIGCONT');
          } else if (fault === 2) {
            const member = etcd.memberNames[i]!;
            schedule.push(`SIGKILL etcd ${member}, restart`);
            etcd.kill(member);
            await sleep(1000 + random.int(1000));
            etcd.restart(member);
            await etcd.waitHealthy();
          } else {
            schedule.push('no fault');
          }
        }
        await waitSettled(etcd.endpoints, prefix, ids, 30_000);
        await sleep(500);
      } finally {
        await committers.stop();
      }
      const where = `seed ${seed} (replay: CLUSTER_SEED=${seed} npm run test:cluster), schedule: ${schedule.join('; ')}`;
      const found = await fetchAll(committers, alive, GROUPS).catch((error: unknown) => {
        const warnings = nodes.map((n) => `${n.nodeId} (port ${n.port}):\n${n.stderr.join('')}`);
        throw new Error(
          `${(error as Error).message}; ${where}; what the nodes said:\n${warnings.join('\n')}`,
        );
      });
      for (const [groupId, offset] of committers.history.acknowledged) {
        expect(found.get(groupId), `${groupId}, ${where}`).toBeGreaterThanOrEqual(offset);
        expect(found.get(groupId), `${groupId}, ${where}`).toBeLessThanOrEqual(
          committers.history.attempted.get(groupId)!,
        );
      }
      expect(committers.history.staleReads, where).toEqual([]);
      expect(committers.history.fatal, where).toEqual([]);
      expect(committers.history.acks.length, where).toBeGreaterThan(0);
      for (let bucket = 0; bucket < 16; bucket++) {
        const epochs = (await logEpochs(etcd.endpoints, prefix, bucket)).map((e) => e.epoch);
        expect(epochs, `bucket ${bucket}, ${where}`).toEqual([...epochs].sort((a, b) => a - b));
      }
      await committers.close();
    });
  }
});
