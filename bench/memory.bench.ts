/**
 * Heap per live committed offset: the materialized index's memory, measured in a child process run
 * with `--expose-gc` (nothing else on its heap) as (heapUsed + arrayBuffers) after a full GC, with
 * the store loaded, minus the same figure for the store open and empty. Four distributions of 1M
 * offsets (default and full; quick uses 100k): 10k groups x 100 buckets, 1k groups x 1000 buckets,
 * 100k groups x 10 buckets, and 10k groups x 10 tables x 10 buckets (a Kafka consumer group of ten
 * topics). Each is measured twice: after committing everything (durability 'os',
 * one commit per group, to load fast) and after reopening the store (the index rebuilt by replay).
 * `arrayBuffers` is included because a group's offsets live in typed arrays, whose backing stores
 * V8 keeps outside `heapUsed`.
 *
 * Expected order of magnitude: 24 bytes per entry of a group's dense prefix (3 float64 fields; the
 * buckets here are committed in order, table after table, so every entry is one) plus the growth slack of each group's
 * table, plus a fixed cost per group (its Map entry, id string and table objects, a few hundred
 * bytes): ~25-30 B/offset at 100-1000 buckets per group, more where groups are small (the per-group
 * cost is shared by only 10 offsets).
 * Target (docs/performance.md, (f)) checked at the end: at most 50 bytes of heap per live offset at
 * 1M, for each distribution (groups of 10 offsets sit at about the limit: their per-group cost).
 */
import * as fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { OffsetStore } from '../src/index.js';
import { reportToParent, runChild } from './support/child.js';
import {
  formatBytes,
  formatCount,
  formatMs,
  printBanner,
  printTable,
  verdict,
} from './support/report.js';
import { atScale, benchScale } from './support/scale.js';

/** Heap per live offset allowed at 1M (docs/performance.md, target (f)). */
const TARGET_BYTES = 50;
import { createTempDir, removeTempDir } from './support/temp-dir.js';
import { groupName, offsetCommits, TABLE_ID } from './support/workload.js';

const OFFSETS = atScale({ quick: 100_000, default: 1_000_000, full: 1_000_000 });
/** The distributions: each group commits `buckets` buckets of each of `tables` tables. */
const DISTRIBUTIONS = [
  { tables: 1, buckets: 100 },
  { tables: 1, buckets: 1000 },
  { tables: 1, buckets: 10 },
  { tables: 10, buckets: 10 },
];
const LOAD_CONCURRENCY = 64;
const SELF = fileURLToPath(import.meta.url);

/** What the child reports for one distribution. */
interface Measured {
  groups: number;
  tables: number;
  bucketsPerTable: number;
  liveOffsets: number;
  loadMs: number;
  committedBytes: number;
  reopenedBytes: number;
  reopenedLiveOffsets: number;
}

function heapBytes(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  for (let i = 0; i < 3; i++) gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

/** Loads one distribution into a fresh store; returns the heap it added and what it took. */
async function loadAndMeasure(dir: string, groups: number, tables: number, buckets: number) {
  const store = await OffsetStore.open({ dir, durability: 'os', compaction: { strategy: 'none' } });
  const baseline = heapBytes();
  const loadStartedMs = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: LOAD_CONCURRENCY }, async () => {
      while (next < groups) {
        const g = next++;
        const commits = Array.from({ length: tables }, (_, t) =>
          offsetCommits(buckets, 1_000_000 + g, 0, TABLE_ID + t),
        );
        await store.commitOffsets(groupName(g), commits.flat());
      }
    }),
  );
  const loadMs = performance.now() - loadStartedMs;
  const committedBytes = heapBytes() - baseline;
  const liveOffsets = (await store.stats()).totals.liveOffsets;
  await store.close();
  return { loadMs, committedBytes, liveOffsets };
}

/** Reopens the store (index rebuilt by replay); returns the heap it holds beyond an empty store. */
async function reopenAndMeasure(dir: string) {
  const baseline = heapBytes();
  const store = await OffsetStore.open({ dir, durability: 'os', compaction: { strategy: 'none' } });
  const reopenedBytes = heapBytes() - baseline;
  const reopenedLiveOffsets = (await store.stats()).totals.liveOffsets;
  await store.close();
  return { reopenedBytes, reopenedLiveOffsets };
}

/** Child side: load one distribution, measure, reopen, measure (no store reachable in between). */
async function measureInChild(
  dir: string,
  groups: number,
  tables: number,
  bucketsPerTable: number,
): Promise<void> {
  const loaded = await loadAndMeasure(dir, groups, tables, bucketsPerTable);
  const reopened = await reopenAndMeasure(dir);
  // An empty store's own heap (16 empty offsets-buckets, their logs) is subtracted from the reopen.
  const emptyDir = `${dir}-empty`;
  const empty = await reopenAndMeasure(emptyDir);
  await fs.promises.rm(emptyDir, { recursive: true, force: true });
  reportToParent({
    groups,
    tables,
    bucketsPerTable,
    ...loaded,
    reopenedBytes: reopened.reopenedBytes - empty.reopenedBytes,
    reopenedLiveOffsets: reopened.reopenedLiveOffsets,
  } satisfies Measured);
}

async function main(): Promise<void> {
  printBanner('memory: heap bytes per live committed offset (child process, --expose-gc)', [
    `${formatCount(OFFSETS)} offsets per distribution; heap = heapUsed + arrayBuffers after gc, store loaded minus store empty`,
  ]);
  const rows: Measured[] = [];
  for (const { tables, buckets } of DISTRIBUTIONS) {
    const dir = createTempDir('memory');
    try {
      const groups = OFFSETS / (tables * buckets);
      rows.push(
        await runChild<Measured>(
          SELF,
          ['--measure', dir, String(groups), String(tables), String(buckets)],
          {
            execArgv: ['--expose-gc'],
            env: { ...process.env, BENCH_SCALE: benchScale() },
          },
        ),
      );
    } finally {
      await removeTempDir(dir);
    }
  }
  printTable(
    'Heap per live offset',
    [
      {
        header: 'distribution',
        value: (r) => distribution(r),
      },
      { header: 'live offsets', value: (r) => formatCount(r.liveOffsets) },
      { header: 'load (os)', value: (r) => formatMs(r.loadMs) },
      { header: 'heap after commits', value: (r) => formatBytes(r.committedBytes) },
      { header: 'B/offset', value: (r) => (r.committedBytes / r.liveOffsets).toFixed(1) },
      { header: 'heap after reopen', value: (r) => formatBytes(r.reopenedBytes) },
      {
        header: 'B/offset (reopened)',
        value: (r) => (r.reopenedBytes / r.reopenedLiveOffsets).toFixed(1),
      },
    ],
    rows,
  );
  console.log('\nTarget (docs/performance.md)');
  for (const r of rows) {
    const worst = Math.max(
      r.committedBytes / r.liveOffsets,
      r.reopenedBytes / r.reopenedLiveOffsets,
    );
    console.log(
      `- <= ${TARGET_BYTES} B of heap per live offset at ${formatCount(r.liveOffsets)}, ${distribution(r)}: ${worst.toFixed(1)} B worst of the two (${verdict(worst <= TARGET_BYTES)})`,
    );
  }
}

/** `10k groups x 100 buckets`, or `10k groups x 10 tables x 10 buckets`. */
function distribution(r: Measured): string {
  const tables = r.tables === 1 ? '' : ` x ${r.tables} tables`;
  return `${formatCount(r.groups)} groups${tables} x ${r.bucketsPerTable} buckets`;
}

if (process.argv[2] === '--measure') {
  const [dir, groups, tables, buckets] = process.argv.slice(3);
  await measureInChild(dir!, Number(groups), Number(tables), Number(buckets));
} else await main();
