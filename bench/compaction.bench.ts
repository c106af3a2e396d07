/**
 * Compaction strategies side by side ('log-cleaner', 'incremental', 'checkpoint', 'none'), on two
 * workloads (the lab, `offset-store lab` and docs/compaction.md, compares them on seven, over time):
 * - overwrite: G groups repeatedly committing the same 50 buckets (every record but the last per
 *   key is garbage; overwrite ratio = rounds, 40 by default);
 * - distinct: G groups each round committing 50 new buckets (every record stays live).
 * For each workload and strategy, on a fresh store with small segments (so that there are sealed
 * segments to compact) and background compaction parked (`intervalMs` of an hour):
 * 1. load the workload (durability 'os'), compact (`store.compact()`, pass 1), commit 25% more of the
 *    same workload, compact again (pass 2: the checkpoint strategy deletes only the segments below
 *    the previous checkpoint, so its space comes back on the second pass);
 * 2. report disk bytes before and after (space amplification = bytes on disk, segments plus LMDB
 *    checkpoints, / live bytes, where live bytes = the live offsets encoded as one batch per group:
 *    the smallest log holding the state), bytes written by compaction per byte committed (write
 *    amplification; `wchar` of /proc/self/io during the passes, all threads, so the cleaner
 *    worker's and lmdb-js's writer thread's writes count), and compaction time;
 * 3. close and time a reopen (in process);
 * 4. run 16 concurrent committers (10 offsets each, durability 'fsync') in alternating phases (3
 *    pairs by default), each on the store reopened: idle (background compaction parked), then
 *    compacting (the store's own background scheduler every 100 ms with minDirtyRatio 0, so a
 *    bucket is compacted as soon as a segment is sealed: with small segments, the busiest
 *    background compaction there is). Commit p50/p99 of the compacting phases vs the idle ones
 *    (docs/performance.md: compaction raises commit p99 by at most 20%). The 'none' row is the
 *    control: nothing runs in its compacting phases, so its change is the noise of the machine.
 * A markdown table for the README is printed at the end.
 *
 * Expected order of magnitude, overwrite workload: ~40x the live bytes on disk before; after, the
 * log cleaner ~1-3x (the active segments are never compacted) and the checkpoint strategy ~5-15x
 * at this small live size (two checkpoint images kept, the log since the previous checkpoint, and
 * LMDB's own pages in each of the 16 environments); write amplification ~0.01-0.2. Distinct
 * workload: ~1x before; the log cleaner rewrites everything for nothing (write amplification
 * ~1-2, about one per pass) and the checkpoint strategy writes the whole index on each pass.
 * Compaction of a few tens of MB: ~0.2-1 s for checkpoints, seconds for the log cleaner (whose
 * pass 1 also starts its worker thread: ~1-2 s when run from source, where the worker loads tsx).
 * Commit p99 under durable load: a few ms to tens of ms on a virtual disk.
 */
import { buildOffsetBatch } from '../src/codec/index.js';
import {
  OffsetStore,
  type CompactionReport,
  type CompactionStrategy,
  type OffsetStoreOptions,
} from '../src/index.js';
import { dirBytes, processWriteBytes, segmentBytes } from './support/disk.js';
import { percentiles } from './support/measure.js';
import {
  formatBytes,
  formatChange,
  formatMs,
  markdownTable,
  printBanner,
  printTable,
  verdict,
  type Column,
} from './support/report.js';
import { atScale } from './support/scale.js';
import { createTempDir, removeTempDir } from './support/temp-dir.js';
import { groupName, offsetCommits } from './support/workload.js';

const STRATEGIES: CompactionStrategy[] = ['log-cleaner', 'incremental', 'checkpoint', 'none'];
const BUCKETS_PER_COMMIT = 50;
const SIZES = atScale({
  quick: { groups: 50, rounds: 20, segmentBytesMax: 64 * 1024, phaseMs: 500, phasePairs: 2 },
  default: { groups: 160, rounds: 40, segmentBytesMax: 128 * 1024, phaseMs: 1500, phasePairs: 3 },
  full: { groups: 1000, rounds: 40, segmentBytesMax: 1024 * 1024, phaseMs: 5000, phasePairs: 5 },
});
const EXTRA_ROUNDS = Math.max(1, Math.round(SIZES.rounds / 4));
const LOAD_CONCURRENCY = 64;
const LATENCY_COMMITTERS = 16;
const LATENCY_OFFSETS_PER_COMMIT = 10;
const PARKED_INTERVAL_MS = 3_600_000;
const BACKGROUND_INTERVAL_MS = 100;

type Workload = 'overwrite' | 'distinct';

interface Row {
  workload: Workload;
  strategy: CompactionStrategy;
  committedBytes: number;
  liveBeforeBytes: number;
  liveBytes: number;
  diskBeforeBytes: number;
  diskAfterPass1Bytes: number;
  diskAfterBytes: number;
  logAfterBytes: number;
  compactionWrittenBytes: number;
  /** Pass 1 and pass 2. */
  compactionMs: [number, number];
  reopenMs: number;
  latencyIdle: ReturnType<typeof percentiles>;
  latencyCompacting: ReturnType<typeof percentiles>;
  logBytesIdle: number;
  logBytesCompacting: number;
}

/** The buckets group `g` commits in `round`: the same ones every round, or new ones. */
function roundOffsets(workload: Workload, round: number): ReturnType<typeof offsetCommits> {
  const first = workload === 'overwrite' ? 0 : round * BUCKETS_PER_COMMIT;
  return offsetCommits(BUCKETS_PER_COMMIT, 1_000 + round, first);
}

async function commitRounds(
  store: OffsetStore,
  workload: Workload,
  fromRound: number,
  toRound: number,
): Promise<void> {
  for (let round = fromRound; round < toRound; round++) {
    let next = 0;
    await Promise.all(
      Array.from({ length: LOAD_CONCURRENCY }, async () => {
        while (next < SIZES.groups) {
          const g = next++;
          await store.commitOffsets(groupName(g), roundOffsets(workload, round));
        }
      }),
    );
  }
}

/** Bytes of the smallest log holding the live state: one batch per group with its live offsets. */
function liveBytes(workload: Workload, rounds: number): number {
  const livePerGroup = workload === 'overwrite' ? BUCKETS_PER_COMMIT : BUCKETS_PER_COMMIT * rounds;
  let total = 0;
  for (let g = 0; g < SIZES.groups; g++) {
    const records = offsetCommits(livePerGroup, 1_000 + rounds).map((o) => ({
      ...o,
      partitionId: null,
      leaderEpoch: 0,
      metadata: '',
    }));
    total += buildOffsetBatch(groupName(g), records, Date.now()).length;
  }
  return total;
}

/** Runs `compact()` and counts what the process wrote meanwhile. */
async function compactCounting(
  store: OffsetStore,
): Promise<{ report: CompactionReport; writtenBytes: number }> {
  const before = processWriteBytes();
  const report = await store.compact();
  return { report, writtenBytes: processWriteBytes() - before };
}

/** Latencies of one phase, and the log size when it ended. */
interface Phase {
  samplesMs: number[];
  logBytesAtEnd: number;
}

/** 16 committers, 10 offsets each, durability fsync, for `phaseMs`. */
async function commitPhase(
  store: OffsetStore,
  offsets: ReturnType<typeof offsetCommits>[],
): Promise<Phase> {
  const samplesMs: number[] = [];
  const endMs = performance.now() + SIZES.phaseMs;
  await Promise.all(
    offsets.map(async (mine, c) => {
      while (performance.now() < endMs) {
        for (const o of mine) o.offset++;
        const startedMs = performance.now();
        await store.commitOffsets(groupName(c), mine);
        samplesMs.push(performance.now() - startedMs);
      }
    }),
  );
  return { samplesMs, logBytesAtEnd: (await store.stats()).totals.logBytes };
}

/**
 * Commit latencies in alternating phases: idle (background compaction parked) and compacting (the
 * store's own scheduler every BACKGROUND_INTERVAL_MS with minDirtyRatio 0, so every bucket with a
 * newly sealed segment is compacted as soon as it is found).
 */
async function commitLatency(
  dir: string,
  strategy: CompactionStrategy,
): Promise<{ idle: Phase[]; compacting: Phase[] }> {
  const idle: Phase[] = [];
  const compacting: Phase[] = [];
  const offsets = Array.from({ length: LATENCY_COMMITTERS }, () =>
    offsetCommits(LATENCY_OFFSETS_PER_COMMIT, 1_000_000),
  );
  for (let i = 0; i < 2 * SIZES.phasePairs; i++) {
    const phase = i % 2 === 0 ? 'idle' : 'compacting';
    const compaction =
      phase === 'idle'
        ? { strategy, intervalMs: PARKED_INTERVAL_MS }
        : { strategy, intervalMs: BACKGROUND_INTERVAL_MS, minDirtyRatio: 0 };
    const store = await OffsetStore.open({
      dir,
      durability: 'fsync',
      segmentBytesMax: SIZES.segmentBytesMax,
      compaction,
    });
    try {
      // Untimed: starts the log cleaner's worker thread (and catches up), so that a phase measures
      // compaction in its steady state, not a worker starting; done before idle phases too, alike.
      await store.compact();
      (phase === 'idle' ? idle : compacting).push(await commitPhase(store, offsets));
    } finally {
      await store.close();
    }
  }
  return { idle, compacting };
}

async function run(workload: Workload, strategy: CompactionStrategy): Promise<Row> {
  const dir = createTempDir(`compaction-${strategy}`);
  const options = (durability: 'fsync' | 'os'): OffsetStoreOptions => ({
    dir,
    durability,
    segmentBytesMax: SIZES.segmentBytesMax,
    compaction: { strategy, intervalMs: PARKED_INTERVAL_MS },
  });
  try {
    let store = await OffsetStore.open(options('os'));
    await commitRounds(store, workload, 0, SIZES.rounds);
    const loadedBytes = segmentBytes(dir);
    const diskBeforeBytes = dirBytes(dir).apparentBytes;
    const pass1 = await compactCounting(store);
    const diskAfterPass1Bytes = dirBytes(dir).apparentBytes;
    const logAfterPass1Bytes = segmentBytes(dir);
    await commitRounds(store, workload, SIZES.rounds, SIZES.rounds + EXTRA_ROUNDS);
    const committedBytes = loadedBytes + (segmentBytes(dir) - logAfterPass1Bytes);
    const pass2 = await compactCounting(store);
    const compactionMs: [number, number] = [pass1.report.durationMs, pass2.report.durationMs];
    const diskAfterBytes = dirBytes(dir).apparentBytes;
    const logAfterBytes = segmentBytes(dir);
    await store.close();

    const reopenStartedMs = performance.now();
    store = await OffsetStore.open(options('os'));
    const reopenMs = performance.now() - reopenStartedMs;
    await store.close();

    const latency = await commitLatency(dir, strategy);
    return {
      workload,
      strategy,
      committedBytes,
      liveBeforeBytes: liveBytes(workload, SIZES.rounds),
      liveBytes: liveBytes(workload, SIZES.rounds + EXTRA_ROUNDS),
      diskBeforeBytes,
      diskAfterPass1Bytes,
      diskAfterBytes,
      logAfterBytes,
      compactionWrittenBytes: pass1.writtenBytes + pass2.writtenBytes,
      compactionMs,
      reopenMs,
      latencyIdle: percentiles(latency.idle.flatMap((p) => p.samplesMs)),
      latencyCompacting: percentiles(latency.compacting.flatMap((p) => p.samplesMs)),
      logBytesIdle: latency.idle.at(-1)!.logBytesAtEnd,
      logBytesCompacting: latency.compacting.at(-1)!.logBytesAtEnd,
    };
  } finally {
    await removeTempDir(dir);
  }
}

async function main(): Promise<void> {
  printBanner('compaction: log-cleaner vs incremental vs checkpoint vs none', [
    `${SIZES.groups} groups x ${BUCKETS_PER_COMMIT} buckets per commit, ${SIZES.rounds} + ${EXTRA_ROUNDS} rounds; segmentBytesMax ${formatBytes(SIZES.segmentBytesMax)}; default compaction workers (1)`,
    `latency: ${LATENCY_COMMITTERS} committers x ${LATENCY_OFFSETS_PER_COMMIT} offsets, durability fsync, ${SIZES.phasePairs} x (idle, compacting) phases of ${SIZES.phaseMs} ms each`,
  ]);
  const rows: Row[] = [];
  for (const workload of ['overwrite', 'distinct'] as const) {
    for (const strategy of STRATEGIES) rows.push(await run(workload, strategy));
  }
  const spaceBefore = (r: Row) => r.diskBeforeBytes / r.liveBeforeBytes;
  const spaceAfter = (r: Row) => r.diskAfterBytes / r.liveBytes;
  const writeAmp = (r: Row) => r.compactionWrittenBytes / r.committedBytes;
  const p99Change = (r: Row) => r.latencyCompacting.p99Ms / r.latencyIdle.p99Ms - 1;
  const name = (r: Row) => `${r.workload}, ${r.strategy}`;

  printTable(
    'Space and write amplification (disk = segments + checkpoints)',
    [
      { header: 'workload, strategy', value: name },
      { header: 'committed', value: (r) => formatBytes(r.committedBytes) },
      { header: 'live before', value: (r) => formatBytes(r.liveBeforeBytes) },
      { header: 'live after', value: (r) => formatBytes(r.liveBytes) },
      { header: 'disk before', value: (r) => formatBytes(r.diskBeforeBytes) },
      { header: 'after pass 1', value: (r) => formatBytes(r.diskAfterPass1Bytes) },
      { header: 'after pass 2', value: (r) => formatBytes(r.diskAfterBytes) },
      { header: 'of it log', value: (r) => formatBytes(r.logAfterBytes) },
      { header: 'space amp before', value: (r) => `${spaceBefore(r).toFixed(2)}x` },
      { header: 'space amp after', value: (r) => `${spaceAfter(r).toFixed(2)}x` },
      { header: 'compaction wrote', value: (r) => formatBytes(r.compactionWrittenBytes) },
      { header: 'write amp', value: (r) => writeAmp(r).toFixed(2) },
      {
        header: 'compaction time (pass 1 + 2)',
        value: (r) => `${formatMs(r.compactionMs[0])} + ${formatMs(r.compactionMs[1])}`,
      },
      { header: 'reopen', value: (r) => formatMs(r.reopenMs) },
    ],
    rows,
  );

  printTable(
    `Commit latency (fsync): background compaction parked vs running (every ${BACKGROUND_INTERVAL_MS} ms, minDirtyRatio 0)`,
    [
      { header: 'workload, strategy', value: name },
      { header: 'commits idle', value: (r) => String(r.latencyIdle.count) },
      { header: 'commits compacting', value: (r) => String(r.latencyCompacting.count) },
      { header: 'log at end idle', value: (r) => formatBytes(r.logBytesIdle) },
      { header: 'log at end compacting', value: (r) => formatBytes(r.logBytesCompacting) },
      { header: 'p50 idle', value: (r) => formatMs(r.latencyIdle.p50Ms) },
      { header: 'p50 compacting', value: (r) => formatMs(r.latencyCompacting.p50Ms) },
      { header: 'p99 idle', value: (r) => formatMs(r.latencyIdle.p99Ms) },
      { header: 'p99 compacting', value: (r) => formatMs(r.latencyCompacting.p99Ms) },
      { header: 'p99 change', value: (r) => formatChange(p99Change(r)) },
    ],
    rows,
  );

  const readme: Column<Row>[] = [
    { header: 'workload', value: (r) => r.workload },
    { header: 'strategy', value: (r) => r.strategy },
    {
      header: 'space amp before -> after',
      value: (r) => `${spaceBefore(r).toFixed(1)}x -> ${spaceAfter(r).toFixed(1)}x`,
    },
    { header: 'write amp', value: (r) => writeAmp(r).toFixed(2) },
    { header: 'compaction time', value: (r) => formatMs(r.compactionMs[0] + r.compactionMs[1]) },
    { header: 'reopen', value: (r) => formatMs(r.reopenMs) },
    {
      header: 'commit p99 idle -> compacting',
      value: (r) =>
        `${formatMs(r.latencyIdle.p99Ms)} -> ${formatMs(r.latencyCompacting.p99Ms)} (${formatChange(p99Change(r))})`,
    },
  ];
  console.log('\nMarkdown (README):\n');
  console.log(markdownTable(readme, rows));

  console.log(
    '\ntarget (docs/performance.md): compaction running in the background raises commit p99 by at most 20%',
  );
  for (const r of rows.filter((x) => x.strategy !== 'none')) {
    const control = rows.find((x) => x.workload === r.workload && x.strategy === 'none')!;
    console.log(
      `- ${name(r)}: ${formatChange(p99Change(r))} (${verdict(p99Change(r) <= 0.2)}; the 'none' control moved ${formatChange(p99Change(control))} between the same kind of phases)`,
    );
  }
}

await main();
