/**
 * Durable commit through the public API (`OffsetStore.commitOffsets`, durability 'fsync', default
 * options: 16 offsets-buckets, log-cleaner compaction) of 1, 10, 100 and 1000 offsets per commit,
 * with 1 committer and with 64 concurrent committers (64 groups, so the commits spread over the
 * offsets-buckets and group-commit inside each), next to lmdb-js in the same run:
 * `transactionSync` per commit (one durable LMDB commit each, the baseline of docs/performance.md; with
 * 64 "concurrent" callers it is the same figure, since the call blocks) and the async `transaction`
 * for the concurrent case (lmdb-js batches the queued transactions into one commit).
 * See bench/support/lmdb-offsets.ts for the lmdb-js layout and its durability settings.
 *
 * Expected order of magnitude (fdatasync ~0.3-3 ms): 1 committer, either store, a few hundred to
 * ~2k commits/s (offset-store one fdatasync per commit, LMDB one fdatasync plus a synchronous meta
 * write); 64 committers on offset-store 3-30k commits/s of small commits (group commit is per
 * offsets-bucket: 64 groups over the default 16 offsets-buckets share each fdatasync ~4 at a time,
 * and 16 files' fdatasyncs queue for libuv's 4 threads; the extra rows with `bucketCount: 1` show
 * the same committers sharing one log), lmdb-js async ~5-30k (one commit for everything queued);
 * 1000 offsets per commit is bound by encoding and bytes written: offset-store ~0.2-1M offsets/s,
 * lmdb-js ~0.05-0.3M (one B-tree put per offset, page copies).
 * Targets (docs/performance.md) checked at the end: 1000 offsets per commit >= 2.5x lmdb-js's
 * offsets/s; small commits (1-10 offsets) from 64 committers >= 10x lmdb-js putSync commits/s.
 */
import { OffsetStore, type OffsetCommit } from '../src/index.js';
import { LmdbOffsets } from './support/lmdb-offsets.js';
import {
  measureInterleaved,
  type MeasureOptions,
  type TaskResult,
  type TaskSpec,
} from './support/measure.js';
import {
  formatCount,
  formatMs,
  formatRatio,
  printBanner,
  printTable,
  verdict,
  type Column,
} from './support/report.js';
import { atScale } from './support/scale.js';
import { createTempDir, removeTempDir } from './support/temp-dir.js';
import { advance, groupName, offsetCommits } from './support/workload.js';

const OFFSETS_PER_COMMIT = [1, 10, 100, 1000];
const CONCURRENT_COMMITTERS = 64;
/** Commits of at most this many offsets are "small" (docs/performance.md) and also run on one offsets-bucket. */
const SMALL_COMMIT_OFFSETS_MAX = 10;
const TIMING: MeasureOptions = atScale({
  quick: { timeMs: 300, warmupMs: 50, rounds: 1 },
  default: { timeMs: 2400, warmupMs: 300, rounds: 4 },
  full: { timeMs: 12_000, warmupMs: 1000, rounds: 6 },
});

type Subject =
  | 'offset-store'
  | 'offset-store, 1 offsets-bucket'
  | 'offset-store, spread-built input'
  | 'lmdb transactionSync'
  | 'lmdb transaction (async)';

interface Row extends TaskResult {
  subject: Subject;
  offsets: number;
}

/** One offsets array per committer group; each call advances its group's offsets (a scanner moving on). */
function committerOffsets(groups: number, offsets: number): OffsetCommit[][] {
  return Array.from({ length: groups }, () => offsetCommits(offsets, 1_000));
}

/** A task ready to measure, with what it opened. */
interface Prepared {
  subject: Subject;
  offsets: number;
  spec: TaskSpec;
  close(): Promise<void>;
}

/**
 * `spread`: each commit's input is built the way much user code builds it, a fresh object per offset
 * with object spread (`refs.map((r) => ({ ...r, offset }))`), instead of one array advanced in place.
 */
async function offsetStoreTask(
  offsets: number,
  committers: number,
  bucketCount?: number,
  spread = false,
): Promise<Prepared> {
  const dir = createTempDir('commit');
  const store = await OffsetStore.open({ dir, durability: 'fsync', bucketCount });
  const perGroup = committerOffsets(committers, offsets);
  const groups = perGroup.map((_, i) => groupName(i));
  let next = 0;
  let offset = 1_000;
  return {
    subject: spread
      ? 'offset-store, spread-built input'
      : bucketCount === 1
        ? 'offset-store, 1 offsets-bucket'
        : 'offset-store',
    offsets,
    spec: {
      name: `offset-store commitOffsets, ${offsets} offsets, ${committers} committer${committers > 1 ? 's' : ''}${bucketCount === 1 ? ', bucketCount 1' : ''}${spread ? ', input built by spread' : ''}, fsync`,
      async: true,
      concurrency: committers,
      unitsPerCall: offsets,
      fn: () => {
        const g = next++ % committers;
        if (!spread) return store.commitOffsets(groups[g]!, advance(perGroup[g]!));
        offset++;
        return store.commitOffsets(
          groups[g]!,
          perGroup[g]!.map((r) => ({ ...r, offset })),
        );
      },
    },
    close: async () => {
      await store.close();
      await removeTempDir(dir);
    },
  };
}

function lmdbTask(offsets: number, committers: number, mode: 'sync' | 'async'): Prepared {
  const dir = createTempDir('commit-lmdb');
  const db = LmdbOffsets.open(dir, 'fsync');
  const perGroup = committerOffsets(committers, offsets);
  const groups = perGroup.map((_, i) => groupName(i));
  let next = 0;
  const who = `${committers} committer${committers > 1 ? 's' : ''}`;
  const spec: TaskSpec =
    mode === 'sync'
      ? {
          name: `lmdb-js transactionSync, ${offsets} offsets, ${who}, fdatasync`,
          async: false,
          unitsPerCall: offsets,
          fn: () => {
            const g = next++ % committers;
            db.commitSync(groups[g]!, advance(perGroup[g]!));
          },
        }
      : {
          name: `lmdb-js transaction (async), ${offsets} offsets, ${who}, fdatasync`,
          async: true,
          concurrency: committers,
          unitsPerCall: offsets,
          fn: () => {
            const g = next++ % committers;
            return db.commitAsync(groups[g]!, advance(perGroup[g]!));
          },
        };
  return {
    subject: mode === 'sync' ? 'lmdb transactionSync' : 'lmdb transaction (async)',
    offsets,
    spec,
    close: async () => {
      await db.close();
      await removeTempDir(dir);
    },
  };
}

/** Measures the four tasks of one commit size side by side, in interleaved rounds. */
async function measureSize(offsets: number): Promise<Row[]> {
  const prepared = [
    await offsetStoreTask(offsets, 1),
    lmdbTask(offsets, 1, 'sync'),
    await offsetStoreTask(offsets, CONCURRENT_COMMITTERS),
    lmdbTask(offsets, CONCURRENT_COMMITTERS, 'async'),
  ];
  if (offsets <= SMALL_COMMIT_OFFSETS_MAX)
    prepared.push(await offsetStoreTask(offsets, CONCURRENT_COMMITTERS, 1));
  if (offsets === 1000) prepared.push(await offsetStoreTask(offsets, 1, undefined, true));
  try {
    const results = await measureInterleaved(
      prepared.map((p) => p.spec),
      TIMING,
    );
    return results.map((r, i) => ({ ...r, subject: prepared[i]!.subject, offsets }));
  } finally {
    for (const p of prepared) await p.close();
  }
}

async function main(): Promise<void> {
  printBanner('commit: durable OffsetStore.commitOffsets vs lmdb-js', [
    `timed ${TIMING.timeMs} ms per task in ${TIMING.rounds} interleaved rounds after ${TIMING.warmupMs} ms warm-up; latency is per commit call`,
  ]);
  const rows: Row[] = [];
  for (const offsets of OFFSETS_PER_COMMIT) rows.push(...(await measureSize(offsets)));
  const find = (subject: Subject, offsets: number, committers: number) =>
    rows.find(
      (r) => r.subject === subject && r.offsets === offsets && r.concurrency === committers,
    );
  const lmdbSync = (offsets: number) => find('lmdb transactionSync', offsets, 1)!;
  const columns: Column<Row>[] = [
    { header: 'task', value: (r) => r.name },
    { header: 'commits/s', value: (r) => formatCount(r.callsPerSec) },
    { header: 'offsets/s', value: (r) => formatCount(r.unitsPerSec) },
    { header: 'p50', value: (r) => formatMs(r.p50Ms) },
    { header: 'p99', value: (r) => formatMs(r.p99Ms) },
    {
      header: 'vs lmdb transactionSync',
      value: (r) => formatRatio(r.callsPerSec / lmdbSync(r.offsets).callsPerSec),
    },
  ];
  printTable('Durable commit: commits/s, offsets/s, latency per commit', columns, rows);

  const ratios = OFFSETS_PER_COMMIT.map((offsets) => ({
    offsets,
    single: find('offset-store', offsets, 1)!.unitsPerSec / lmdbSync(offsets).unitsPerSec,
    concurrentVsSync:
      find('offset-store', offsets, CONCURRENT_COMMITTERS)!.unitsPerSec /
      lmdbSync(offsets).unitsPerSec,
    concurrentVsAsync:
      find('offset-store', offsets, CONCURRENT_COMMITTERS)!.unitsPerSec /
      find('lmdb transaction (async)', offsets, CONCURRENT_COMMITTERS)!.unitsPerSec,
    oneBucketVsAsync:
      (find('offset-store, 1 offsets-bucket', offsets, CONCURRENT_COMMITTERS)?.unitsPerSec ?? NaN) /
      find('lmdb transaction (async)', offsets, CONCURRENT_COMMITTERS)!.unitsPerSec,
  }));
  printTable(
    'Ratios offset-store / lmdb-js (offsets/s, = commits/s at equal offsets per commit)',
    [
      { header: 'offsets/commit', value: (r) => String(r.offsets) },
      { header: '1 committer / transactionSync', value: (r) => formatRatio(r.single) },
      { header: '64 committers / transactionSync', value: (r) => formatRatio(r.concurrentVsSync) },
      {
        header: '64 committers / async transaction x64',
        value: (r) => formatRatio(r.concurrentVsAsync),
      },
      { header: 'same, bucketCount 1', value: (r) => formatRatio(r.oneBucketVsAsync) },
    ],
    ratios,
  );

  const spreadBuilt = find('offset-store, spread-built input', 1000, 1)!;
  console.log(
    `Input built by object spread, 1000 offsets, 1 committer: ${formatCount(spreadBuilt.unitsPerSec)} offsets/s, ${formatRatio(spreadBuilt.unitsPerSec / find('offset-store', 1000, 1)!.unitsPerSec)} of the same commits from an array advanced in place.`,
  );
  const batched = ratios.find((r) => r.offsets === 1000)!;
  const small = ratios.filter((r) => r.offsets <= SMALL_COMMIT_OFFSETS_MAX);
  console.log('\nTargets (docs/performance.md)');
  console.log(
    `- 1000 offsets per commit, 1 committer, >= 2.5x lmdb-js transactionSync offsets/s: ${formatRatio(batched.single)} (${verdict(batched.single >= 2.5)}); 64 committers vs lmdb-js async x64: ${formatRatio(batched.concurrentVsAsync)}`,
  );
  for (const r of small) {
    console.log(
      `- ${r.offsets} offset(s) per commit, 64 committers, >= 10x lmdb-js sync commits/s: ${formatRatio(r.concurrentVsSync)} (${verdict(r.concurrentVsSync >= 10)}); vs lmdb-js async x64: ${formatRatio(r.concurrentVsAsync)}`,
    );
  }
}

await main();
