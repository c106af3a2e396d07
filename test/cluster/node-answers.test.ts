/**
 * What a cluster node answers where a single server has nothing to say: broker-wide requests while
 * its lease is unconfirmed, clients on its second listener, new-protocol members of a bucket it gave
 * up, and topics a client asks one node alone for (each node keeps its own topic catalog).
 */
import { describe, expect, it } from 'vitest';
import {
  rendezvousOwner,
  startClusterServer,
  type ClusterServer,
  type ClusterServerOptions,
} from '../../src/cluster/index.js';
import { API_KEYS, KAFKA_ERROR } from '../../src/kafka/protocol/index.js';
import type { EtcdCluster } from '../support/etcd-cluster.js';
import { cleanups, sleep, startEtcd } from './in-process-cluster.js';
import { tempDir } from '../support/temp-dir.js';
import { RawKafkaClient } from '../kafka/support/raw-kafka-client.js';

async function waitServing(server: ClusterServer, buckets: number): Promise<void> {
  for (let i = 0; i < 200 && server.node.ownedBuckets().length < buckets; i++) await sleep(50);
  expect(server.node.ownedBuckets().length).toBe(buckets);
}

/**
 * A node of a cluster on `etcd` serving topic `orders` (one partition), warnings silenced: `options`
 * add its address (or listeners) and what the test is about.
 */
function startNode(
  etcd: EtcdCluster,
  nodeId: string,
  brokerId: number,
  options: Partial<ClusterServerOptions>,
): Promise<ClusterServer> {
  return startClusterServer({
    dir: tempDir(),
    etcdEndpoints: etcd.endpoints,
    nodeId,
    brokerId,
    topics: [{ name: 'orders', partitions: 1 }],
    onWarning: () => {},
    ...options,
  });
}

describe('a cluster node', () => {
  it("expires the offsets of a group without members by the node's offsetsRetentionMs, not by the default", async () => {
    const etcd = await startEtcd();
    const server = await startNode(etcd, 'n1', 1, {
      bucketCount: 2,
      port: 0,
      host: '127.0.0.1',
      offsetsRetentionMs: 300,
      offsetsRetentionCheckIntervalMs: 50,
    });
    cleanups.push(() => server.close());
    await waitServing(server, 2);
    await server.store.commitOffsets('idle', [{ tableId: 1, bucketId: 0, offset: 5 }]);
    expect(
      (await server.store.fetchOffsets('idle', [{ tableId: 1, bucketId: 0 }]))[0]?.offset,
    ).toBe(5);
    let left: unknown = 5;
    for (let i = 0; i < 100 && left !== undefined; i++) {
      await sleep(50);
      left = (await server.store.fetchOffsets('idle', [{ tableId: 1, bucketId: 0 }]))[0]?.offset;
    }
    expect(left, 'expired after 300 ms, not 7 days').toBeUndefined();
  });

  it('ListGroups is never answered NOT_COORDINATOR (a broker-wide request; Java admin fails listConsumerGroups on it): not while the lease is unconfirmed either', async () => {
    const etcd = await startEtcd();
    const [member] = etcd.memberNames;
    cleanups.push(async () => etcd.kill(member!, 'SIGCONT'));
    const server = await startNode(etcd, 'n1', 1, {
      bucketCount: 4,
      leaseTtlSeconds: 3,
      callTimeoutMs: 500,
      port: 0,
      host: '127.0.0.1',
      autoCreateTopics: false,
    });
    cleanups.push(() => server.close());
    await waitServing(server, 4);
    const client = await RawKafkaClient.connect(server.server.listeners[0]!.port);
    cleanups.push(() => client.close());
    const commit = await client.send(API_KEYS.OffsetCommit, 8, {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [
        {
          name: 'orders',
          partitions: [{ partitionIndex: 0, committedOffset: 5n, committedMetadata: null }],
        },
      ],
    });
    expect(commit.topics[0]!.partitions[0]!.errorCode).toBe(0);

    // etcd stops answering: the lease stops being confirmed a margin (TTL/6) before it is declared lost.
    etcd.kill(member!, 'SIGSTOP');
    const seen = new Set<number>();
    const until = performance.now() + 4500;
    while (performance.now() < until) {
      const res = await client.send(API_KEYS.ListGroups, 4, { statesFilter: [] });
      seen.add(res.errorCode);
      await sleep(20);
    }
    etcd.kill(member!, 'SIGCONT');
    expect([...seen]).not.toContain(KAFKA_ERROR.NOT_COORDINATOR);
  });

  it('FindCoordinator and Metadata answer a client on a second listener with the addresses of that listener, as a single node does', async () => {
    const etcd = await startEtcd();
    const server = await startNode(etcd, 'n1', 1, {
      bucketCount: 4,
      listeners: [
        { name: 'INTERNAL', securityProtocol: 'PLAINTEXT', host: '127.0.0.1', port: 0 },
        { name: 'EXTERNAL', securityProtocol: 'PLAINTEXT', host: '127.0.0.1', port: 0 },
      ],
      autoCreateTopics: false,
    });
    cleanups.push(() => server.close());
    await waitServing(server, 4);
    const external = server.server.listeners.find((l) => l.name === 'EXTERNAL')!;
    const client = await RawKafkaClient.connect(external.port);
    cleanups.push(() => client.close());
    const fc = await client.send(API_KEYS.FindCoordinator, 3, { key: 'g', keyType: 0 });
    const md = await client.send(API_KEYS.Metadata, 9, {
      topics: null,
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
    } as never);
    expect({ fc: [fc.errorCode, fc.port], brokers: md.brokers.map((b) => b.port) }).toEqual({
      fc: [0, external.port],
      brokers: [external.port],
    });
  });

  it('a node forgets the consumer-group members of a bucket it gave up: their notes do not fill its member directory for good and refuse the members of the groups it still serves', async () => {
    const etcd = await startEtcd();
    const start = (nodeId: string, brokerId: number) =>
      startNode(etcd, nodeId, brokerId, {
        bucketCount: 4,
        leaseTtlSeconds: 2,
        port: 0,
        host: '127.0.0.1',
        topics: [{ name: 'orders', partitions: 4 }],
        autoCreateTopics: false,
        membersNotedMax: 3,
      });
    const a = await start('n1', 1);
    cleanups.push(() => a.close());
    await waitServing(a, 4);
    // Buckets n2 will take from n1, and one n1 keeps.
    const moved = [0, 1, 2, 3].find((b) => rendezvousOwner(b, ['n1', 'n2']) === 'n2')!;
    const kept = [0, 1, 2, 3].find((b) => rendezvousOwner(b, ['n1', 'n2']) === 'n1')!;
    expect([moved, kept].every((b) => b !== undefined)).toBe(true);
    const groupIn = (bucket: number, tag: string) => {
      for (let i = 0; ; i++) if (a.store.bucketFor(`${tag}${i}`) === bucket) return `${tag}${i}`;
    };
    const join = (client: RawKafkaClient, groupId: string) =>
      client.send(API_KEYS.ConsumerGroupHeartbeat, 0, {
        groupId,
        memberId: '',
        memberEpoch: 0,
        rebalanceTimeoutMs: 5000,
        subscribedTopicNames: ['orders'],
        topicPartitions: [],
      } as never) as Promise<{
        errorCode: number;
        errorMessage: string | null;
        memberId: string | null;
      }>;
    const toA = await RawKafkaClient.connect(a.server.listeners[0]!.port);
    cleanups.push(() => toA.close());
    // Three members of groups in the bucket that will move fill n1's directory (3 notes at most).
    const joinedOnA: { groupId: string; memberId: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const groupId = groupIn(moved, `moved-${i}-`);
      const res = await join(toA, groupId);
      expect(res.errorCode).toBe(0);
      joinedOnA.push({ groupId, memberId: res.memberId! });
    }
    // n2 joins and takes the bucket; the members leave there (their groups are gone everywhere).
    const b = await start('n2', 2);
    cleanups.push(() => b.close());
    for (
      let i = 0;
      i < 200 && !(b.node.ownedBuckets().includes(moved) && !a.node.ownedBuckets().includes(moved));
      i++
    )
      await sleep(50);
    expect(b.node.ownedBuckets()).toContain(moved);
    const toB = await RawKafkaClient.connect(b.server.listeners[0]!.port);
    cleanups.push(() => toB.close());
    for (const { groupId, memberId } of joinedOnA) {
      const left = (await toB.send(API_KEYS.ConsumerGroupHeartbeat, 0, {
        groupId,
        memberId,
        memberEpoch: -1,
        rebalanceTimeoutMs: -1,
        subscribedTopicNames: null,
        topicPartitions: null,
      } as never)) as { errorCode: number };
      expect(left.errorCode).toBe(0);
    }
    // A new member of a group n1 still serves is refused by n1, for good (not only for 5 s).
    await sleep(6000);
    const res = await join(toA, groupIn(kept, 'kept-'));
    expect([res.errorCode, res.errorMessage]).toEqual([0, null]);
  });

  it('with the default auto-create, a client asking one node for a topic cannot make an acknowledged commit of another topic disappear when its bucket moves', async () => {
    const etcd = await startEtcd();
    // autoCreateTopics left to the cluster's default.
    const start = (nodeId: string, brokerId: number) =>
      startNode(etcd, nodeId, brokerId, {
        bucketCount: 1,
        leaseTtlSeconds: 2,
        port: 0,
        host: '127.0.0.1',
      });
    const a = await start('n1', 1);
    const b = await start('n2', 2);
    cleanups.push(() => b.close());
    let aClosed = false;
    cleanups.push(() => (aClosed ? Promise.resolve() : a.close()));
    const metadata = async (port: number, topic: string) => {
      const c = await RawKafkaClient.connect(port);
      await c.send(API_KEYS.Metadata, 9, {
        topics: [{ name: topic }],
        allowAutoTopicCreation: true,
        includeClusterAuthorizedOperations: false,
        includeTopicAuthorizedOperations: false,
      } as never);
      await c.close();
    };
    const [pa, pb] = [a.server.listeners[0]!.port, b.server.listeners[0]!.port];
    // A hostile (or merely curious) client asks n1 alone for a topic; then 'payments' is created on both.
    await metadata(pa, 'scratch');
    await metadata(pa, 'payments');
    await metadata(pb, 'payments');
    for (let i = 0; i < 200 && a.node.ownedBuckets().length + b.node.ownedBuckets().length < 1; i++)
      await sleep(50);
    const [owner, other] = a.node.ownedBuckets().length === 1 ? [a, b] : [b, a];
    const commitTo = await RawKafkaClient.connect(owner.server.listeners[0]!.port);
    const res = await commitTo.send(API_KEYS.OffsetCommit, 8, {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [
        {
          name: 'payments',
          partitions: [{ partitionIndex: 0, committedOffset: 100n, committedMetadata: null }],
        },
      ],
    });
    await commitTo.close();
    // Refused (the topic is not served) is fine; acknowledged, it must survive the move.
    if (res.topics[0]!.partitions[0]!.errorCode !== 0) {
      expect(res.topics[0]!.partitions[0]!.errorCode).toBe(KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION);
      return;
    }
    // The owner leaves; the other node takes the bucket.
    if (owner === a) aClosed = true;
    await owner.close();
    for (let i = 0; i < 200 && other.node.ownedBuckets().length < 1; i++) await sleep(50);
    const fetchFrom = await RawKafkaClient.connect(other.server.listeners[0]!.port);
    const f = await fetchFrom.send(API_KEYS.OffsetFetch, 8, {
      groups: [{ groupId: 'g', topics: [{ name: 'payments', partitionIndexes: [0] }] }],
    });
    await fetchFrom.close();
    expect(f.groups[0]!.errorCode).toBe(0);
    expect(f.groups[0]!.topics[0]!.partitions[0]!.committedOffset).toBe(100n);
  });
});
