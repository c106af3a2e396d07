/**
 * How a connection tells that etcd went back in time (restored from a backup, or replaced, while
 * the process ran), from the headers of etcd's answers alone: a member that answers a call with a
 * lower revision than it answered with before the call was sent, or a cluster id that changed. A
 * member that lags another (a follower behind the leader) is not that, nor are answers of calls
 * in flight together that arrive out of order. (The whole path, a node that stops serving and
 * loads its buckets again after a restore under it, is in cluster-node.test.ts.)
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { IResponseHeader } from 'etcd3';
import { EtcdConnection } from '../../src/cluster/index.js';

/** No etcd is contacted: the client connects at its first call, and these tests make none. */
let connection: EtcdConnection;
beforeEach(() => {
  connection = new EtcdConnection({ endpoints: ['http://127.0.0.1:9'] });
});
afterEach(() => connection.close());

function header(member: string, revision: number, cluster = 'c1'): IResponseHeader {
  return { cluster_id: cluster, member_id: member, revision: String(revision), raft_term: '2' };
}

describe('a connection watching for etcd going back in time', () => {
  it('tells its listeners when a member answers a call with a lower revision than an answer before the call was sent', () => {
    const told: string[] = [];
    const stop = connection.onWentBack((reason) => told.push(reason));
    connection.observe(header('m1', 10));
    connection.observe(header('m1', 12));
    const before = connection.revisions();
    // Answers of calls in flight together arrive in any order: not compared.
    connection.observe(header('m1', 11));
    connection.observe(header('m1', 12), before);
    // A follower behind the leader: compared with its own revisions only.
    connection.observe(header('m2', 11), before);
    expect(told).toEqual([]);
    connection.observe(header('m1', 11), before);
    expect(told).toEqual([
      'etcd went back in time: member m1 answered at revision 11, after an answer at 12 (restored from a backup while this process ran?)',
    ]);
    // The restored cluster is the new start: its members' later answers are not a second restore.
    connection.observe(header('m1', 11), connection.revisions());
    connection.observe(header('m2', 11), connection.revisions());
    expect(told).toHaveLength(1);
    stop();
    connection.observe(header('m1', 1), connection.revisions());
    expect(told).toHaveLength(1);
  });

  it('tells its listeners when the cluster id changes, whatever the revision', () => {
    const told: string[] = [];
    const stop = connection.onWentBack((reason) => told.push(reason));
    connection.observe(header('m1', 5, 'a'));
    connection.observe(header('m9', 500, 'b'));
    expect(told).toEqual([
      "etcd's cluster id changed from a to b (etcd was restored from a backup, or replaced, while this process ran?)",
    ]);
    connection.observe(header('m9', 501, 'b'));
    expect(told).toHaveLength(1);
    stop();
  });

  it('ignores an answer without a header', () => {
    const told: string[] = [];
    const stop = connection.onWentBack((reason) => told.push(reason));
    connection.observe(undefined);
    expect(told).toEqual([]);
    stop();
  });
});
