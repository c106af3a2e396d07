/**
 * One etcd member of three stopped (a frozen VM, a partition: it takes calls and never answers):
 * the loss of a minority is survived. The client sends each call to one member it picks; here it
 * picks the stopped one first every time (its deterministic order, the stopped member listed
 * last), the worst case of its random pick. Reads (ranges, and transactions of ranges only) are
 * answered by another member, and a node's
 * lease is kept alive through the others. Then the avoidance itself, without etcd: a member that
 * left a call unanswered is skipped at once, never all of them, and etcd's own answers do not count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The client's own switch for its pick of a member (not part of its typed interface).
import { ConnectionPool } from 'etcd3/lib/connection-pool.js';
import { GRPCDeadlineExceededError, GRPCUnavailableError } from 'etcd3';
import { isBrokenCircuitError } from 'cockatiel';
import { EtcdConnection, NodeLease } from '../../src/cluster/index.js';
import { MemberAvoidance } from '../../src/cluster/etcd-connection.js';
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
      const failedReads: string[] = [];
      const startedMs = performance.now();
      while (performance.now() - startedMs < 9_000) {
        if (!lease.valid()) invalid.push(Math.round(performance.now() - startedMs));
        // Reads keep going to the members that answer, also while the stopped one is tried again:
        // range reads, and transactions that only read (what `cluster status` sends).
        await Promise.all([
          ...Array.from({ length: 4 }, () =>
            connection
              .range({ key: Buffer.from('/down/k') }, 'test')
              .catch((error: unknown) => void failedReads.push((error as Error).message)),
          ),
          ...Array.from({ length: 2 }, () =>
            connection
              .txn({ success: [{ request_range: { key: Buffer.from('/down/k') } }] }, 'test')
              .catch((error: unknown) => void failedReads.push((error as Error).message)),
          ),
        ]);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(losses).toEqual([]);
      expect(invalid).toEqual([]);
      expect(failedReads).toEqual([]);
    } finally {
      etcd.kill(stopped, 'SIGCONT');
      await lease.stop(true);
      connection.close();
    }
  });
});

describe('the members a connection avoids', () => {
  const answered = () => Promise.resolve('ok');
  it('skips a member that left a call unanswered, at once, until every member is avoided', async () => {
    const avoidance = new MemberAvoidance(2);
    const [a, b] = [avoidance.policy('a'), avoidance.policy('b')];
    await expect(
      a.execute(() => Promise.reject(new GRPCDeadlineExceededError('deadline'))),
    ).rejects.toThrow(/deadline/);
    let called = false;
    const refused = await a
      .execute(() => {
        called = true;
        return answered();
      })
      .catch((e: unknown) => e);
    expect(isBrokenCircuitError(refused)).toBe(true);
    expect(called).toBe(false);
    expect(await b.execute(answered)).toBe('ok');
    await expect(
      b.execute(() => Promise.reject(new GRPCUnavailableError('connect failed'))),
    ).rejects.toThrow();
    // Both avoided: neither is, so calls still go somewhere.
    expect(await a.execute(answered)).toBe('ok');
  });

  it("does not avoid a member for an answer of etcd's (no leader during an election)", async () => {
    const avoidance = new MemberAvoidance(3);
    const a = avoidance.policy('a');
    await expect(
      a.execute(() => Promise.reject(new GRPCUnavailableError('etcdserver: no leader'))),
    ).rejects.toThrow(/no leader/);
    expect(await a.execute(answered)).toBe('ok');
  });
});
