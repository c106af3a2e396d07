/**
 * Recovery: how long `OffsetStore.open` takes on an existing store, measured in a fresh child
 * process (cold JIT, as after a restart; the files were just written, so the page cache is warm and
 * the figure is the CPU cost of recovery, not the disk's read speed). Three scenarios:
 * 1. N live offsets (default 200k, full 1M; groups of 100 buckets, each committed once) recovered by
 *    full log replay (strategy 'none'): log records replayed per second;
 * 2. the same store after a checkpoint (strategy 'checkpoint' and `compact()` before close), so
 *    recovery loads the LMDB checkpoint and replays only the tail after it;
 * 3. a long log: M log records (default 2M, full 10M) overwriting 100k live offsets, full replay.
 * Each reopen runs 3 times; the median is reported. Loading uses durability 'os' (the bytes on disk
 * are the same as with 'fsync').
 *
 * Expected order of magnitude: replay reads, checksums (xxh32) and decodes ~45-65 bytes per record
 * and updates the index: ~1-5M records/s, so 1M records in 0.2-1 s; a checkpoint restore copies
 * one binary image per group out of LMDB: ~10-50M offsets/s, well under 1 s for 1M (the log is
 * still scanned and checksummed on open, even below the checkpoint).
 * Targets (docs/performance.md) checked at the end: >= 2M log records/s replayed; reopening 1M live
 * offsets with a checkpoint in under 1 s.
 */
import { fileURLToPath } from 'node:url';
import { OffsetStore, type CompactionStrategy } from '../src/index.js';
import { reportToParent, runChild } from './support/child.js';
import { dirBytes } from './support/disk.js';
import {
  formatBytes,
  formatCount,
  formatMs,
  printBanner,
  printTable,
  verdict,
} from './support/report.js';
import { atScale, benchScale } from './support/scale.js';
import { createTempDir, removeTempDir } from './support/temp-dir.js';
import { groupName, offsetCommits } from './support/workload.js';

const LIVE_OFFSETS = atScale({ quick: 20_000, default: 200_000, full: 1_000_000 });
const LONG_LOG_RECORDS = atScale({ quick: 200_000, default: 2_000_000, full: 10_000_000 });
const LONG_LOG_LIVE_OFFSETS = atScale({ quick: 20_000, default: 100_000, full: 100_000 });
const BUCKETS_PER_GROUP = 100;
const REOPENS = 3;
const LOAD_CONCURRENCY = 64;
const SELF = fileURLToPath(import.meta.url);

/** What a child reports about one reopen. */
interface Reopen {
  openMs: number;
  /** CPU time (user + system, all threads) spent in open: less sensitive than wall time to a busy machine. */
  openCpuMs: number;
  liveOffsets: number;
  batchesReplayed: number;
  checkpointsLoaded: number;
  slowestBucketMs: number;
}

/** Child side: open the store, report, close. */
async function reopenInChild(dir: string, strategy: CompactionStrategy): Promise<void> {
  const startedMs = performance.now();
  const cpu = process.cpuUsage();
  const store = await OffsetStore.open({ dir, compaction: { strategy } });
  const openMs = performance.now() - startedMs;
  const { user, system } = process.cpuUsage(cpu);
  const stats = await store.stats();
  const reports = store.recoveryReports();
  reportToParent({
    openMs,
    openCpuMs: (user + system) / 1000,
    liveOffsets: stats.totals.liveOffsets,
    batchesReplayed: reports.reduce((sum, r) => sum + (r?.batchesReplayed ?? 0), 0),
    checkpointsLoaded: reports.filter((r) => r?.checkpointLogOffset !== undefined).length,
    slowestBucketMs: Math.max(...reports.map((r) => r?.recoveryMs ?? 0)),
  } satisfies Reopen);
  await store.close();
}

/** Commits `rounds` passes over `groups` groups of 100 buckets (each pass overwrites every offset). */
async function load(dir: string, groups: number, rounds: number): Promise<void> {
  const store = await OffsetStore.open({ dir, durability: 'os', compaction: { strategy: 'none' } });
  try {
    for (let round = 0; round < rounds; round++) {
      let next = 0;
      await Promise.all(
        Array.from({ length: LOAD_CONCURRENCY }, async () => {
          while (next < groups) {
            const g = next++;
            await store.commitOffsets(
              groupName(g),
              offsetCommits(BUCKETS_PER_GROUP, 1_000 + round),
            );
          }
        }),
      );
    }
  } finally {
    await store.close();
  }
}

/** Reopens `REOPENS` times in fresh children and keeps the median by open time. */
async function reopenMedian(dir: string, strategy: CompactionStrategy): Promise<Reopen> {
  const runs: Reopen[] = [];
  for (let i = 0; i < REOPENS; i++)
    runs.push(
      await runChild<Reopen>(SELF, ['--reopen', dir, strategy], {
        env: { ...process.env, BENCH_SCALE: benchScale() },
      }),
    );
  runs.sort((a, b) => a.openMs - b.openMs);
  return runs[Math.floor(runs.length / 2)]!;
}

interface Row {
  scenario: string;
  logRecords: number;
  logBytes: number;
  reopen: Reopen;
}

async function main(): Promise<void> {
  printBanner(
    'recovery: OffsetStore.open on an existing store (fresh child process, warm page cache)',
    [`median of ${REOPENS} reopens; durability of the load: 'os'`],
  );
  const rows: Row[] = [];

  const emptyDir = createTempDir('recovery-empty');
  try {
    await load(emptyDir, 0, 0);
    rows.push({
      scenario: 'empty store (fixed cost of open)',
      logRecords: 0,
      logBytes: 0,
      reopen: await reopenMedian(emptyDir, 'none'),
    });
  } finally {
    await removeTempDir(emptyDir);
  }

  const liveDir = createTempDir('recovery');
  try {
    const groups = LIVE_OFFSETS / BUCKETS_PER_GROUP;
    await load(liveDir, groups, 1);
    const logBytes = dirBytes(liveDir).apparentBytes;
    rows.push({
      scenario: `${formatCount(LIVE_OFFSETS)} live offsets, full log replay`,
      logRecords: LIVE_OFFSETS,
      logBytes,
      reopen: await reopenMedian(liveDir, 'none'),
    });

    const store = await OffsetStore.open({ dir: liveDir, compaction: { strategy: 'checkpoint' } });
    const report = await store.compact();
    await store.close();
    console.log(
      `checkpoint written in ${formatMs(report.durationMs)} (store with ${formatCount(LIVE_OFFSETS)} live offsets)`,
    );
    rows.push({
      scenario: `${formatCount(LIVE_OFFSETS)} live offsets, checkpoint + tail`,
      logRecords: LIVE_OFFSETS,
      logBytes,
      reopen: await reopenMedian(liveDir, 'checkpoint'),
    });
  } finally {
    await removeTempDir(liveDir);
  }

  const longDir = createTempDir('recovery-long');
  try {
    const groups = LONG_LOG_LIVE_OFFSETS / BUCKETS_PER_GROUP;
    const rounds = Math.ceil(LONG_LOG_RECORDS / LONG_LOG_LIVE_OFFSETS);
    const loadStartedMs = performance.now();
    await load(longDir, groups, rounds);
    console.log(
      `loaded ${formatCount(rounds * LONG_LOG_LIVE_OFFSETS)} log records in ${formatMs(performance.now() - loadStartedMs)}`,
    );
    const logBytes = dirBytes(longDir).apparentBytes;
    rows.push({
      scenario: `${formatCount(rounds * LONG_LOG_LIVE_OFFSETS)} log records over ${formatCount(LONG_LOG_LIVE_OFFSETS)} live, full replay`,
      logRecords: rounds * LONG_LOG_LIVE_OFFSETS,
      logBytes,
      reopen: await reopenMedian(longDir, 'none'),
    });
  } finally {
    await removeTempDir(longDir);
  }

  const fixedMs = rows[0]!.reopen.openMs;
  printTable(
    'Reopen time (wall time of OffsetStore.open in a fresh process; "net" subtracts the empty store\'s open time)',
    [
      { header: 'scenario', value: (r) => r.scenario },
      { header: 'log bytes', value: (r) => formatBytes(r.logBytes) },
      { header: 'live offsets', value: (r) => formatCount(r.reopen.liveOffsets) },
      { header: 'batches replayed', value: (r) => formatCount(r.reopen.batchesReplayed) },
      { header: 'checkpoints loaded', value: (r) => String(r.reopen.checkpointsLoaded) },
      { header: 'open time', value: (r) => formatMs(r.reopen.openMs) },
      { header: 'open CPU', value: (r) => formatMs(r.reopen.openCpuMs) },
      { header: 'slowest bucket', value: (r) => formatMs(r.reopen.slowestBucketMs) },
      {
        header: 'log records/s',
        value: (r) =>
          r.reopen.batchesReplayed === 0
            ? '-'
            : formatCount(r.logRecords / (r.reopen.openMs / 1000)),
      },
      {
        header: 'per CPU s',
        value: (r) =>
          r.reopen.batchesReplayed === 0
            ? '-'
            : formatCount(r.logRecords / (r.reopen.openCpuMs / 1000)),
      },
      {
        header: 'net of fixed cost',
        value: (r) =>
          r.reopen.batchesReplayed === 0
            ? '-'
            : formatCount(r.logRecords / ((r.reopen.openMs - fixedMs) / 1000)),
      },
      {
        header: 'live offsets/s',
        value: (r) =>
          r.reopen.liveOffsets === 0
            ? '-'
            : formatCount(r.reopen.liveOffsets / (r.reopen.openMs / 1000)),
      },
    ],
    rows,
  );

  const [, replay, checkpoint, long] = rows as [Row, Row, Row, Row];
  const rate = (r: Row) => r.logRecords / (r.reopen.openMs / 1000);
  console.log('\nTargets (docs/performance.md)');
  console.log(
    `- full log replay >= 2M log records/s: ${formatCount(rate(replay))}/s at ${formatCount(replay.logRecords)} records (${verdict(rate(replay) >= 2e6)}), ${formatCount(rate(long))}/s at ${formatCount(long.logRecords)} (${verdict(rate(long) >= 2e6)})`,
  );
  const netRate = (r: Row) => r.logRecords / ((r.reopen.openMs - fixedMs) / 1000);
  const cpuRate = (r: Row) => r.logRecords / (r.reopen.openCpuMs / 1000);
  console.log(
    `  (net of the fixed cost of opening an empty store: ${formatCount(netRate(replay))}/s and ${formatCount(netRate(long))}/s; per CPU second: ${formatCount(cpuRate(replay))} and ${formatCount(cpuRate(long))})`,
  );
  if (LIVE_OFFSETS === 1_000_000) {
    console.log(
      `- reopen of 1M live offsets with a checkpoint < 1 s: ${formatMs(checkpoint.reopen.openMs)} (${verdict(checkpoint.reopen.openMs < 1000)})`,
    );
  } else {
    // Fixed cost plus the part that grows with the offsets, scaled linearly: an estimate only.
    const estimateMs = fixedMs + ((checkpoint.reopen.openMs - fixedMs) * 1_000_000) / LIVE_OFFSETS;
    console.log(
      `- reopen of 1M live offsets with a checkpoint < 1 s: ~${formatMs(estimateMs)} estimated from ${formatCount(LIVE_OFFSETS)} (fixed cost + the rest scaled linearly; BENCH_SCALE=full measures 1M) (${verdict(estimateMs < 1000)}, estimate)`,
    );
  }
}

if (process.argv[2] === '--reopen')
  await reopenInChild(process.argv[3]!, process.argv[4] as CompactionStrategy);
else await main();
