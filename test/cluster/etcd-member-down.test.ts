/**
 * One etcd member of three stopped (a frozen VM, a partition: it takes calls and never answers):
 * the loss of a minority is survived. The client sends each call to one member it picks; here it
 * picks the stopped one first every time (its deterministic order, the stopped member listed
 * last), the worst case of its random pick. Reads are answered by another member, and a node's
 * lease is kept alive through the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The client's own switch for its pick of a member (not part of its typed interface).
import { ConnectionPool } from 'etcd3/lib/connection-pool.js';
import { EtcdConnection, NodeLease } from '../../src/cluster/index.js';
import { EtcdCluster } from '../support/etcd-cluster.js';

let etcd: EtcdCluster;

beforeAll(async () => {
  etcd = await EtcdCluster.start({ members: 3 });
  ConnectionPool.deterministicOrder = true;
});

afterAll(async () => {
  ConnectionPool.deterministicOrder = false;
  await etcd?.stop();
});

describe('with one etcd member of three stopped', () => {
  it('answers reads and keeps a node lease alive through the other members', async () => {
    const leader = await etcd.leader();
    const names = ['e1', 'e2', 'e3'];
    const stopped = names.find((n) => n !== leader)!;
    const endpoint = (name: string) => etcd.endpoints[names.indexOf(name)]!;
    // The client's deterministic order tries the last endpoint first.
    const endpoints = [...names.filter((n) => n !== stopped).map(endpoint), endpoint(stopped)];
    const connection = new EtcdConnection({ endpoints, callTimeoutMs: 1000 });
    const losses: string[] = [];
    const lease = await NodeLease.grant(connection, {
      ttlSeconds: 3,
      onLost: (reason) => losses.push(reason),
    });
    try {
      await connection.txn(
        { success: [{ request_put: { key: Buffer.from('/down/k'), value: Buffer.from('v') } }] },
        'test',
      );
      etcd.kill(stopped, 'SIGSTOP');
      const read = await connection.range({ key: Buffer.from('/down/k') }, 'test');
      expect(read.kvs[0]?.value.toString()).toBe('v');
      const invalid: number[] = [];
      const startedMs = performance.now();
      while (performance.now() - startedMs < 9_000) {
        if (!lease.valid()) invalid.push(Math.round(performance.now() - startedMs));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(losses).toEqual([]);
      expect(invalid).toEqual([]);
    } finally {
      etcd.kill(stopped, 'SIGCONT');
      await lease.stop(true);
      connection.close();
    }
  });
});
