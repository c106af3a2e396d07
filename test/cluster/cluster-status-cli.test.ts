/**
 * `offset-store cluster status` against a real etcd, as an operator runs it: an empty prefix, a
 * running two-node cluster after a commit (human and --json output: the live nodes, every bucket
 * owned by one of them under an epoch, placed where it is owned, and the committed group's bucket
 * with its batch in etcd), an etcd that does not answer (a clear failure within its deadline), and
 * a missing --etcd (a usage error).
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EtcdConnection } from '../../src/cluster/index.js';
import { API_KEYS } from '../../src/kafka/protocol/index.js';
import { json, runCli } from '../cli/cli-harness.js';
import { RawKafkaClient } from '../kafka/support/raw-kafka-client.js';
import { EtcdCluster } from '../support/etcd-cluster.js';
import {
  TOPIC,
  bucketOf,
  nodeDirs,
  startNode,
  stopNode,
  waitSettled,
  type NodeProcess,
} from './cluster-harness.js';

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

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface StatusJson {
  bucketCount: number;
  clusterId?: string;
  topics: { name: string; tableId: number; partitions: number; topicId: string }[];
  nodes: { nodeId: string; brokerId: number; host: string; port: number }[];
  buckets: {
    bucket: number;
    owner?: { nodeId: string; epoch: number };
    assignedTo?: string;
    nextLogOffset: number;
    checkpointLogOffset: number;
    logBatches: number;
  }[];
}

describe('offset-store cluster status', () => {
  it('shows the live nodes and each bucket with its owner, epoch, placement and log', async () => {
    etcd = await EtcdCluster.start({ members: 1 });
    const endpoint = etcd.endpoints.join(',');
    const prefix = '/status-cli/';

    const empty = await runCli(['cluster', 'status', '--etcd', endpoint, '--etcd-prefix', prefix]);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toContain('0 live node(s)');
    expect(empty.stdout).toContain(
      'no cluster was ever started under the prefix /status-cli/ in this etcd (is --etcd-prefix right?)',
    );
    expect(empty.stdout).toContain('0 topic(s)\n');

    const made = nodeDirs(2);
    removeDirs = made.remove;
    nodes = await Promise.all(
      ['n1', 'n2'].map((id, i) => startNode(id, etcd!.endpoints, prefix, made.dirs[i]!)),
    );
    await waitSettled(etcd.endpoints, prefix, ['n1', 'n2']);
    // One commit to the group's coordinator, so its bucket holds a batch.
    const groupId = 'status-group';
    const probe = await RawKafkaClient.connect(nodes[0]!.port);
    const found = await probe.send(API_KEYS.FindCoordinator, 3, { key: groupId, keyType: 0 });
    await probe.close();
    expect(found.errorCode).toBe(0);
    const coordinator = await RawKafkaClient.connect(found.port);
    const commit = await coordinator.send(API_KEYS.OffsetCommit, 8, {
      groupId,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [
        {
          name: TOPIC,
          partitions: [{ partitionIndex: 0, committedOffset: 42n, committedMetadata: null }],
        },
      ],
    });
    await coordinator.close();
    expect(commit.topics[0]!.partitions[0]!.errorCode).toBe(0);

    const asJson = await runCli([
      'cluster',
      'status',
      '--etcd',
      endpoint,
      '--etcd-prefix',
      prefix,
      '--json',
    ]);
    expect(asJson.code, asJson.stderr).toBe(0);
    const status = json<StatusJson>(asJson);
    expect(status.bucketCount).toBe(16);
    expect(status.clusterId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(status.topics).toEqual([
      { name: TOPIC, tableId: 1, partitions: expect.any(Number), topicId: expect.any(String) },
    ]);
    expect(status.nodes.map((n) => n.nodeId).sort()).toEqual(['n1', 'n2']);
    expect(status.nodes.map((n) => n.port).sort()).toEqual(nodes.map((n) => n.port).sort());
    expect(status.buckets).toHaveLength(16);
    for (const b of status.buckets) {
      expect(['n1', 'n2'], `bucket ${b.bucket}`).toContain(b.owner?.nodeId);
      expect(b.owner!.epoch, `bucket ${b.bucket}`).toBeGreaterThan(0);
      expect(b.assignedTo, `bucket ${b.bucket}`).toBe(b.owner!.nodeId);
    }
    const busy = status.buckets[await bucketOf(groupId)]!;
    expect(busy.nextLogOffset).toBeGreaterThanOrEqual(1);
    expect(busy.logBatches).toBeGreaterThanOrEqual(1);
    expect(status.nodes.find((n) => n.nodeId === busy.owner!.nodeId)!.port).toBe(found.port);

    const human = await runCli(['cluster', 'status', '--etcd', endpoint, '--etcd-prefix', prefix]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('2 live node(s), 16 offsets-buckets');
    expect(human.stdout).toMatch(/BUCKET +OWNER +EPOCH +PLACED-ON +NEXT-LOG-OFFSET/);
    expect(human.stdout).toContain(`1 topic(s), cluster id ${status.clusterId}`);
    expect(human.stdout).toMatch(
      new RegExp(
        `^${TOPIC} +1 +${status.topics[0]!.partitions} +${status.topics[0]!.topicId}$`,
        'm',
      ),
    );
    const busyRow = human.stdout
      .split('\n')
      .find((line) => line.trim().startsWith(`${busy.bucket} `));
    expect(busyRow).toContain(busy.owner!.nodeId);
  });

  it('reports a damaged checkpoint pointer or next key as CORRUPT_MESSAGE naming the key (exit 1), not as an internal error', async () => {
    etcd = await EtcdCluster.start({ members: 1 });
    const connection = new EtcdConnection({ endpoints: etcd.endpoints });
    const status = () =>
      runCli(['cluster', 'status', '--etcd', etcd!.endpoints[0]!, '--etcd-prefix', '/damaged/']);
    try {
      await connection.client.put('/damaged/config').value('{"bucketCount": 2}');
      await connection.client.put('/damaged/buckets/00000/checkpoint').value('garbage');
      const pointer = await status();
      expect(pointer.code).toBe(1);
      expect(pointer.stderr).toMatch(
        /^error: CORRUPT_MESSAGE: \/damaged\/buckets\/00000\/checkpoint: not a checkpoint pointer/,
      );
      await connection.client.put('/damaged/buckets/00000/checkpoint').value('{"logOffset": 5}');
      expect((await status()).stderr).toMatch(/checkpoint: not a checkpoint pointer/);
      await connection.client.delete().key('/damaged/buckets/00000/checkpoint');
      await connection.client.put('/damaged/buckets/00001/next').value('twelve');
      const next = await status();
      expect(next.code).toBe(1);
      expect(next.stderr).toMatch(
        /^error: CORRUPT_MESSAGE: \/damaged\/buckets\/00001\/next cannot be read \("twelve"\)/,
      );
    } finally {
      connection.close();
    }
  });

  it('fails clearly, within its deadline, when etcd does not answer, and asks for --etcd without it', async () => {
    const port = await closedPort();
    const startedAt = performance.now();
    const down = await runCli(['cluster', 'status', '--etcd', `http://127.0.0.1:${port}`]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/[A-Z_]+: .*etcd/);
    expect(performance.now() - startedAt).toBeLessThan(30_000);

    const usage = await runCli(['cluster', 'status']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--etcd');
    // Not endpoints at all: a usage error as serve gives, not an internal error or a timeout.
    for (const etcd of [',', 'foo://bar', `http://127.0.0.1:${port}/path`]) {
      const bad = await runCli(['cluster', 'status', '--etcd', etcd]);
      expect(bad.code, etcd).toBe(2);
      expect(bad.stderr, etcd).toContain('--etcd must be http(s)://host:port URLs');
    }
  });
});
