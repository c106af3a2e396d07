/**
 * Commit throughput and latency of cluster mode (offsets in etcd through EtcdLog) on a 3-member etcd
 * on this machine, with 1 and 3 nodes (in this process, each with its own etcd connection; each
 * commit goes to the node that owns its group's bucket), for:
 * - 64 concurrent small committers (one offset per commit, each its own group);
 * - 8 concurrent committers of batched commits of 1000 offsets (one group each);
 * side by side with the floor: raw etcd transactions carrying the same bytes (one put of a batch's
 * size per transaction, with the same concurrency), which is what etcd itself can do for them.
 *
 * Expected order of magnitude: a 3-member etcd on one machine acknowledges a transaction after a
 * quorum fsync, ~2-5 ms, and ~2-4k transactions/s with many in flight. Small commits: the log groups
 * up to 120 batches per transaction, so the store reaches a few thousand commits/s, above the raw
 * floor of one transaction per commit. Batched commits of 1000 offsets (~45 KB each): bounded by
 * etcd's bytes per second, a few MB/s, i.e. ~50-200 commits/s; target at least 60% of the floor's
 * bytes/s.
 *
 * Failover: three `offset-store serve --etcd` processes with the default lease (3 s), committers
 * on twelve groups through the Kafka protocol; the owner of a busy bucket is SIGKILLed and the time
 * until a commit begun after the kill is acknowledged on one of its buckets is measured, over
 * several runs (median and range). Target: under 5 s. It is about the lease TTL (the dead node's
 * buckets are claimed only once etcd expires its lease) plus a reconcile interval and the replay.
 *
 * Needs the `etcd` binary (Debian etcd-server). BENCH_SCALE=quick|default|full sets the duration.
 */
import { ClusterNode, EtcdConnection } from '../src/cluster/index.js';
import { buildOffsetBatch, loadChecksum } from '../src/codec/index.js';
import { OffsetStore, type OffsetCommit } from '../src/index.js';
import {
  Committers,
  bucketOf,
  nodeDirs,
  startNode,
  status,
  stopNode,
  waitSettled,
} from '../test/cluster/cluster-harness.js';
import { EtcdCluster, etcdAvailable } from '../test/support/etcd-cluster.js';
import { percentiles } from './support/measure.js';
import {
  formatCount,
  formatMs,
  formatRatio,
  printBanner,
  printTable,
  type Column,
} from './support/report.js';
import { atScale } from './support/scale.js';
import { createTempDir, removeTempDir } from './support/temp-dir.js';

const DURATION_MS = atScale({ quick: 1500, default: 4000, full: 15_000 });
const SMALL_COMMITTERS = 64;
const BATCH_COMMITTERS = 8;
const BATCH_OFFSETS = 1000;
const FAILOVER_RUNS = atScale({ quick: 1, default: 3, full: 5 });
const FAILOVER_TARGET_MS = 5000;
/** The CLI's default lease TTL, seconds. */
const DEFAULT_LEASE_TTL_S = 3;

interface Row {
  task: string;
  commits: number;
  offsetsPerCommit: number;
  bytesPerCommit: number;
  elapsedMs: number;
  latenciesMs: number[];
}

/** Runs `committers` loops of `once` for DURATION_MS; returns what they did. */
async function timed(
  task: string,
  committers: number,
  offsetsPerCommit: number,
  bytesPerCommit: number,
  once: (committer: number, n: number) => Promise<void>,
): Promise<Row> {
  const latenciesMs: number[] = [];
  let commits = 0;
  const started = performance.now();
  const end = started + DURATION_MS;
  await Promise.all(
    Array.from({ length: committers }, async (_, c) => {
      for (let n = 0; performance.now() < end; n++) {
        const t = performance.now();
        await once(c, n);
        latenciesMs.push(performance.now() - t);
        commits++;
      }
    }),
  );
  return {
    task,
    commits,
    offsetsPerCommit,
    bytesPerCommit,
    elapsedMs: performance.now() - started,
    latenciesMs,
  };
}

async function startNodes(
  etcd: EtcdCluster,
  count: number,
  prefix: string,
): Promise<{ nodes: ClusterNode[]; stores: OffsetStore[]; dirs: string[] }> {
  const nodes: ClusterNode[] = [];
  const stores: OffsetStore[] = [];
  const dirs: string[] = [];
  for (let i = 0; i < count; i++) {
    const dir = createTempDir('cluster-bench-');
    dirs.push(dir);
    const store = await OffsetStore.openHosted({ dir, bucketCount: 16 });
    stores.push(store);
    nodes.push(
      await ClusterNode.start({
        endpoints: etcd.endpoints,
        prefix,
        store,
        node: { nodeId: `n${i + 1}`, brokerId: i + 1, host: '127.0.0.1', port: 9000 + i },
        checkpointBatches: 50_000,
      }),
    );
  }
  // Settled: every bucket owned by some node.
  for (
    let attempt = 0;
    attempt < 200 && nodes.reduce((n, node) => n + node.ownedBuckets().length, 0) < 16;
    attempt++
  )
    await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 1500)); // hand-offs after the first node took everything
  return { nodes, stores, dirs };
}

function ownerStore(nodes: ClusterNode[], stores: OffsetStore[], groupId: string): OffsetStore {
  const bucket = stores[0]!.bucketFor(groupId);
  const i = nodes.findIndex((n) => n.ownedBuckets().includes(bucket));
  return stores[i < 0 ? 0 : i]!;
}

async function storeRows(etcd: EtcdCluster, nodeCount: number): Promise<Row[]> {
  const { nodes, stores, dirs } = await startNodes(etcd, nodeCount, `/bench-${nodeCount}/`);
  try {
    const batch: OffsetCommit[] = Array.from({ length: BATCH_OFFSETS }, (_, i) => ({
      tableId: 1,
      bucketId: i,
      offset: 1,
    }));
    const batchBytes = buildOffsetBatch(
      'batch-group-0',
      batch.map((o) => ({
        tableId: 1,
        partitionId: null,
        bucketId: o.bucketId,
        offset: 1,
        leaderEpoch: -1,
        metadata: '',
      })),
      0,
    ).length;
    const smallBytes = buildOffsetBatch(
      'small-group-0',
      [{ tableId: 1, partitionId: null, bucketId: 0, offset: 1, leaderEpoch: -1, metadata: '' }],
      0,
    ).length;
    const small = await timed(
      `store, ${nodeCount} node(s): ${SMALL_COMMITTERS} committers x 1 offset`,
      SMALL_COMMITTERS,
      1,
      smallBytes,
      async (c, n) => {
        const groupId = `small-group-${c}`;
        await ownerStore(nodes, stores, groupId).commitOffsets(groupId, [
          { tableId: 1, bucketId: 0, offset: n + 1 },
        ]);
      },
    );
    const batched = await timed(
      `store, ${nodeCount} node(s): ${BATCH_COMMITTERS} committers x ${BATCH_OFFSETS} offsets`,
      BATCH_COMMITTERS,
      BATCH_OFFSETS,
      batchBytes,
      async (c, n) => {
        const groupId = `batch-group-${c}`;
        await ownerStore(nodes, stores, groupId).commitOffsets(
          groupId,
          batch.map((o) => ({ ...o, offset: n + 1 })),
        );
      },
    );
    return [small, batched];
  } finally {
    for (const node of nodes) await node.close();
    for (const store of stores) await store.close();
    for (const dir of dirs) removeTempDir(dir);
  }
}

async function floorRows(
  etcd: EtcdCluster,
  smallBytes: number,
  batchBytes: number,
): Promise<Row[]> {
  const connection = new EtcdConnection({ endpoints: etcd.endpoints });
  try {
    const put = (key: string, bytes: number) =>
      connection.txn(
        { success: [{ request_put: { key: Buffer.from(key), value: Buffer.alloc(bytes, 7) } }] },
        'bench',
      );
    const small = await timed(
      `raw etcd txn: ${SMALL_COMMITTERS} writers x ${smallBytes} B`,
      SMALL_COMMITTERS,
      1,
      smallBytes,
      async (c, n) => {
        await put(`/floor/small/${c}/${n}`, smallBytes);
      },
    );
    const batched = await timed(
      `raw etcd txn: ${BATCH_COMMITTERS} writers x ${batchBytes} B`,
      BATCH_COMMITTERS,
      BATCH_OFFSETS,
      batchBytes,
      async (c, n) => {
        await put(`/floor/batch/${c}/${n}`, batchBytes);
      },
    );
    return [small, batched];
  } finally {
    connection.close();
  }
}

/**
 * One failover: a fresh 3-node cluster under `prefix`, committers on twelve groups, the owner of
 * group-0's bucket SIGKILLed; resolves with the ms from the kill to the first acknowledged commit,
 * begun after the kill, on a group whose bucket moved.
 */
async function failoverOnce(etcd: EtcdCluster, prefix: string): Promise<number> {
  const made = nodeDirs(3);
  const ids = ['n1', 'n2', 'n3'];
  const nodes = await Promise.all(
    ids.map((id, i) => startNode(id, etcd.endpoints, prefix, made.dirs[i]!, DEFAULT_LEASE_TTL_S)),
  );
  const live = () =>
    nodes
      .filter((n) => n.child.exitCode === null && n.child.signalCode === null)
      .map((n) => n.port);
  const committers = new Committers(live);
  try {
    await waitSettled(etcd.endpoints, prefix, ids);
    const groups = Array.from({ length: 12 }, (_, i) => `group-${i}`);
    committers.start(groups);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = await status(etcd.endpoints, prefix);
    const victimId = before.buckets[await bucketOf('group-0')]!.owner!.nodeId;
    const moved = new Set<string>();
    for (const g of groups) {
      if (before.buckets[await bucketOf(g)]!.owner?.nodeId === victimId) moved.add(g);
    }
    const killedAt = performance.now();
    nodes.find((n) => n.nodeId === victimId)!.child.kill('SIGKILL');
    for (let i = 0; i < 600; i++) {
      const resumed = committers.history.acks.find(
        (a) => a.startedAtMs > killedAt && moved.has(a.groupId),
      );
      if (resumed !== undefined) return resumed.atMs - killedAt;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('commits on the moved buckets did not resume within 30 s');
  } finally {
    await committers.stop();
    await committers.close();
    for (const node of nodes) await stopNode(node, 'SIGKILL');
    made.remove();
  }
}

async function failoverRows(etcd: EtcdCluster): Promise<void> {
  const timesMs: number[] = [];
  for (let run = 0; run < FAILOVER_RUNS; run++)
    timesMs.push(await failoverOnce(etcd, `/bench-failover-${run}/`));
  timesMs.sort((a, b) => a - b);
  const median = timesMs[Math.floor(timesMs.length / 2)]!;
  printTable(
    `failover after SIGKILL of a node (default lease ${DEFAULT_LEASE_TTL_S} s), ${FAILOVER_RUNS} runs`,
    [
      { header: 'median', align: 'right', value: () => formatMs(median) },
      {
        header: 'range',
        align: 'right',
        value: () => `${formatMs(timesMs[0]!)} - ${formatMs(timesMs.at(-1)!)}`,
      },
      { header: 'target', align: 'right', value: () => `< ${formatMs(FAILOVER_TARGET_MS)}` },
      {
        header: 'met',
        align: 'right',
        value: () => (median < FAILOVER_TARGET_MS ? 'yes' : 'no'),
      },
    ],
    [undefined],
  );
}

async function main(): Promise<void> {
  if (!etcdAvailable()) {
    console.log('cluster bench skipped: no etcd binary (apt-get install etcd-server)');
    return;
  }
  await loadChecksum();
  printBanner('cluster mode: commits through etcd (3-member etcd on this machine)', [
    `${DURATION_MS} ms per task; latency is per commit call; bytes are the KvRecordBatch bytes each commit writes`,
  ]);
  const etcd = await EtcdCluster.start({ members: 3 });
  try {
    const one = await storeRows(etcd, 1);
    const three = await storeRows(etcd, 3);
    const floor = await floorRows(etcd, one[0]!.bytesPerCommit, one[1]!.bytesPerCommit);
    const rows = [floor[0]!, one[0]!, three[0]!, floor[1]!, one[1]!, three[1]!];
    const rate = (r: Row) => (r.commits * 1000) / r.elapsedMs;
    const columns: Column<Row>[] = [
      { header: 'task', value: (r) => r.task },
      { header: 'commits/s', align: 'right', value: (r) => formatCount(rate(r)) },
      {
        header: 'offsets/s',
        align: 'right',
        value: (r) => formatCount(rate(r) * r.offsetsPerCommit),
      },
      {
        header: 'MB/s',
        align: 'right',
        value: (r) => ((rate(r) * r.bytesPerCommit) / 1e6).toFixed(2),
      },
      { header: 'p50', align: 'right', value: (r) => formatMs(percentiles(r.latenciesMs).p50Ms) },
      { header: 'p99', align: 'right', value: (r) => formatMs(percentiles(r.latenciesMs).p99Ms) },
      {
        header: 'bytes/s vs floor',
        align: 'right',
        value: (r) =>
          formatRatio(
            (rate(r) * r.bytesPerCommit) /
              (rate(r.offsetsPerCommit === 1 ? floor[0]! : floor[1]!) * r.bytesPerCommit),
          ),
      },
    ];
    printTable('commits', columns, rows);
    await failoverRows(etcd);
  } finally {
    await etcd.stop();
  }
}

await main();
