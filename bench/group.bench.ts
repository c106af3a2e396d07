/**
 * Group coordinator benchmark: how long a group of N members takes to reach a stable assignment of
 * 10,000 buckets, what a rebalance costs in records and snapshot writes, and heartbeat throughput.
 *
 * Everything runs in-process on a ManualClock with an in-memory snapshot writer that resolves at
 * once (no disk: the store's durable write adds one fdatasync per snapshot write; heartbeats that
 * arrive while one is in flight share the next, so under concurrent members a rebalance costs about
 * as many fdatasyncs as fit in its duration).
 * Members reconcile instantly (release revoked buckets on the response that revokes them) and
 * heartbeat round-robin until the group is Stable, so "time to Stable" is coordinator CPU time.
 *
 * Scenarios, each with target computation on every change (assignmentIntervalMs 0, the default)
 * and batched (assignmentIntervalMs 1000, Kafka's default; simulated time costs nothing):
 *  - join storm: N members join an empty group, then heartbeat until Stable;
 *  - churn: in a Stable group of N, one member leaves and a new one joins, until Stable again;
 *  - heartbeat: one steady-state heartbeat (member reports its owned buckets, nothing changes).
 *
 * Expected orders of magnitude (measured on a 2-core VM shared with other jobs; an idle core is
 * roughly 2-4x faster):
 *  - join storm, immediate: 1 member ~10-30 ms, 10 ~100 ms, 100 ~1-2 s, 1000 ~5-15 s — one assignor
 *    run over 10,000 buckets per join plus O(N) per run, so O(N^2) overall: use batching for storms;
 *  - join storm, batched: 100 ~30 ms, 1000 ~150-300 ms (two assignor runs, then O(N) heartbeats);
 *  - churn: immediate ~50-100 ms, batched ~5 ms (10 members) to ~25 ms (1000 members);
 *  - per rebalance: O(N) in-memory records and O(N) snapshot writes (one per heartbeat that changed
 *    something, since heartbeats here run one after another and each write resolves at once); a
 *    snapshot reuses the runs of every member whose assignment did not change, so its CPU cost
 *    follows the members, not the buckets;
 *  - heartbeat: ~50k/s with 10 owned buckets reported, ~30k/s with 100, ~5k/s with 1000.
 * A result 100x off these is a regression (or a much slower machine).
 *
 * Run: npx tsx bench/group.bench.ts   (GROUP_BENCH_MEMBERS=1,10,100 to choose sizes)
 */
import { Bench } from 'tinybench';
import {
  GroupCoordinator,
  type TableBucket,
  type GroupSnapshot,
  type GroupSnapshotWriter,
} from '../src/group/index.js';
import { ManualClock } from '../src/util/index.js';

const BUCKETS = 10_000;
const SIZES = (process.env.GROUP_BENCH_MEMBERS ?? '1,10,100,1000').split(',').map(Number);

class CountingWriter implements GroupSnapshotWriter {
  writes = 0;
  writeSnapshot(_groupId: string, _snapshot: GroupSnapshot | null): Promise<void> {
    this.writes++;
    return Promise.resolve();
  }
}

interface Client {
  memberId: string;
  epoch: number;
  owned: TableBucket[];
}

/** One group under test and its simulated members. */
class Rig {
  readonly clock = new ManualClock();
  readonly writer = new CountingWriter();
  readonly coordinator: GroupCoordinator;
  readonly clients: Client[] = [];
  heartbeats = 0;
  #nextId = 0;

  constructor(readonly assignmentIntervalMs: number) {
    this.coordinator = new GroupCoordinator({
      writer: this.writer,
      clock: this.clock,
      assignmentIntervalMs,
      groupMembersMax: 10_000,
    });
    this.coordinator.onLoadComplete();
    this.coordinator.setTableLayout(1, { bucketCount: BUCKETS });
  }

  async join(): Promise<void> {
    const response = await this.coordinator.heartbeat('g', {
      memberId: `member-${this.#nextId++}`,
      memberEpoch: 0,
      subscribedTableIds: [1],
    });
    this.heartbeats++;
    this.clients.push({
      memberId: response.memberId,
      epoch: response.memberEpoch,
      owned: response.assignment ?? [],
    });
  }

  async leave(index: number): Promise<void> {
    const [client] = this.clients.splice(index, 1);
    if (client === undefined) return;
    await this.coordinator.heartbeat('g', { memberId: client.memberId, memberEpoch: -1 });
    this.heartbeats++;
  }

  async beat(client: Client): Promise<void> {
    const response = await this.coordinator.heartbeat('g', {
      memberId: client.memberId,
      memberEpoch: client.epoch,
      ownedBuckets: client.owned,
    });
    this.heartbeats++;
    client.epoch = response.memberEpoch;
    if (response.assignment !== undefined) client.owned = response.assignment;
  }

  /** Fires a deferred target computation (batched mode), then heartbeats round-robin until Stable. */
  async settle(): Promise<void> {
    if (this.assignmentIntervalMs > 0) this.clock.advance(this.assignmentIntervalMs);
    for (let round = 0; this.coordinator.groupState('g') !== 'Stable'; round++) {
      if (round > 20) throw new RangeError(`no Stable state after ${round} rounds`);
      for (const client of this.clients) await this.beat(client);
    }
  }
}

interface Row {
  task: string;
  'mean ms': string;
  'p99 ms': string;
  'ops/s': string;
  samples: number;
  'heartbeats/run': string;
  'records/run': string;
  'snapshots/run': string;
}

const rows: Row[] = [];

async function measure(
  name: string,
  iterations: number,
  fn: () => Promise<{ heartbeats: number; records: number; snapshots: number } | void>,
  hooks: { beforeEach?: () => Promise<void> | void; beforeAll?: () => Promise<void> | void } = {},
): Promise<void> {
  const totals = { runs: 0, heartbeats: 0, records: 0, snapshots: 0 };
  const bench = new Bench({
    time: 200,
    iterations,
    warmup: true,
    warmupIterations: Math.min(3, iterations),
    warmupTime: 0,
    throws: true,
  });
  bench.add(
    name,
    async () => {
      const counts = await fn();
      if (counts === undefined) return;
      totals.runs++;
      totals.heartbeats += counts.heartbeats;
      totals.records += counts.records;
      totals.snapshots += counts.snapshots;
    },
    {
      ...(hooks.beforeEach === undefined ? {} : { beforeEach: hooks.beforeEach }),
      ...(hooks.beforeAll === undefined ? {} : { beforeAll: hooks.beforeAll }),
    },
  );
  await bench.run();
  const task = bench.tasks[0];
  const result = task?.result;
  if (result === undefined || !('latency' in result))
    throw new RangeError(`${name}: no result (${result?.state})`);
  const per = (n: number) =>
    totals.runs === 0 ? '-' : (n / totals.runs).toFixed(n / totals.runs < 10 ? 2 : 0);
  rows.push({
    task: name,
    'mean ms': result.latency.mean.toFixed(3),
    'p99 ms': result.latency.p99.toFixed(3),
    'ops/s': (1000 / result.latency.mean).toFixed(result.latency.mean > 100 ? 2 : 0),
    samples: result.latency.samplesCount,
    'heartbeats/run': per(totals.heartbeats),
    'records/run': per(totals.records),
    'snapshots/run': per(totals.snapshots),
  });
  console.log(`done: ${name}`);
}

function counted(rig: Rig, before: { heartbeats: number; records: number; snapshots: number }) {
  return {
    heartbeats: rig.heartbeats - before.heartbeats,
    records: rig.coordinator.metrics().recordsEmitted - before.records,
    snapshots: rig.writer.writes - before.snapshots,
  };
}

function mark(rig: Rig) {
  return {
    heartbeats: rig.heartbeats,
    records: rig.coordinator.metrics().recordsEmitted,
    snapshots: rig.writer.writes,
  };
}

for (const intervalMs of [0, 1000]) {
  const mode = intervalMs === 0 ? 'immediate' : 'batched 1 s';
  for (const n of SIZES) {
    let rig = new Rig(intervalMs);
    await measure(
      `join storm: ${n} members -> Stable, ${BUCKETS} buckets, ${mode}`,
      n >= 1000 ? 2 : n >= 100 ? 5 : 20,
      async () => {
        const before = mark(rig);
        for (let i = 0; i < n; i++) await rig.join();
        await rig.settle();
        return counted(rig, before);
      },
      {
        beforeEach: () => {
          rig = new Rig(intervalMs);
        },
      },
    );
  }
}

for (const intervalMs of [0, 1000]) {
  const mode = intervalMs === 0 ? 'immediate' : 'batched 1 s';
  for (const n of SIZES.filter((s) => s > 1)) {
    const rig = new Rig(intervalMs);
    let victim = 0;
    await measure(
      `churn: 1 of ${n} leaves, 1 joins -> Stable, ${mode}`,
      n >= 1000 ? 10 : 30,
      async () => {
        const before = mark(rig);
        await rig.leave(victim++ % rig.clients.length);
        await rig.join();
        await rig.settle();
        return counted(rig, before);
      },
      {
        beforeAll: async () => {
          if (rig.clients.length > 0) return;
          for (let i = 0; i < n; i++) await rig.join();
          await rig.settle();
        },
      },
    );
  }
}

for (const n of SIZES.filter((s) => s >= 10)) {
  const rig = new Rig(0);
  let next = 0;
  await measure(
    `heartbeat: steady state, ${n} members, ~${Math.round(BUCKETS / n)} owned buckets reported`,
    1000,
    async () => {
      await rig.beat(rig.clients[next++ % rig.clients.length] as Client);
    },
    {
      beforeAll: async () => {
        if (rig.clients.length > 0) return;
        for (let i = 0; i < n; i++) await rig.join();
        await rig.settle();
      },
    },
  );
}

console.table(rows);
