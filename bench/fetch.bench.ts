/**
 * Fetch of committed offsets through the public API (`OffsetStore.fetchOffsets`, awaited, served
 * from the in-memory index) for 1 and 100 buckets per call, next to lmdb-js `getBinary` (one get per
 * bucket, value decoded into the same `CommittedOffset` object) in the same run, over the same data:
 * G groups x 100 buckets (default 1,000 groups = 100k offsets; full 10,000 groups = 1M), read in a
 * fixed pseudo-random order of groups and buckets. Durability does not matter for reads; both stores
 * are loaded without fsync to save time.
 *
 * A timed call does several fetches in a row (so the timer's own cost is noise), and the table
 * reports the mean per fetch and per offset.
 *
 * Expected order of magnitude: offset-store ~0.3-1 us per 1-bucket fetch (validation, a hash probe,
 * one result object, one awaited promise) and ~20-60 ns per offset at 100 buckets; lmdb-js
 * `getBinary` ~0.5-2 us per get (key encoding, a native call, a B-tree walk, a Buffer copy).
 * Targets (docs/performance.md) checked at the end: 1-bucket fetch >= 3x lmdb-js; 100-bucket fetch
 * >= 10x per offset.
 */
import { OffsetStore, type BucketRef } from '../src/index.js';
import { LmdbOffsets } from './support/lmdb-offsets.js';
import {
  measureInterleaved,
  type MeasureOptions,
  type TaskResult,
  type TaskSpec,
} from './support/measure.js';
import {
  formatCount,
  formatNs,
  formatRatio,
  printBanner,
  printTable,
  verdict,
  type Column,
} from './support/report.js';
import { atScale } from './support/scale.js';
import { createTempDir, removeTempDir } from './support/temp-dir.js';
import { bucketRefs, groupName, offsetCommits, prng } from './support/workload.js';

const BUCKETS_PER_GROUP = 100;
const GROUPS = atScale({ quick: 200, default: 1_000, full: 10_000 });
const TIMING: MeasureOptions = atScale({
  quick: { timeMs: 300, warmupMs: 50, rounds: 1 },
  default: { timeMs: 3000, warmupMs: 300, rounds: 4 },
  full: { timeMs: 10_000, warmupMs: 1000, rounds: 5 },
});
/** Fetches per timed call, so that one call takes tens of microseconds. */
const FETCHES_PER_CALL: Record<number, number> = { 1: 64, 100: 4 };
/** Length of the pseudo-random access sequence. */
const SEQUENCE_LENGTH = 8192;
const LOAD_CONCURRENCY = 64;

interface Row extends TaskResult {
  subject: 'offset-store' | 'lmdb-js';
  buckets: number;
  nsPerFetch: number;
  nsPerOffset: number;
}

/** A fixed pseudo-random sequence of (group, buckets) requests of `buckets` buckets each. */
function requests(buckets: number): { groupIds: string[]; refs: BucketRef[][] } {
  const random = prng(buckets);
  const groupIds: string[] = [];
  const refs: BucketRef[][] = [];
  for (let i = 0; i < SEQUENCE_LENGTH; i++) {
    groupIds.push(groupName(Math.floor(random() * GROUPS)));
    const first =
      buckets === BUCKETS_PER_GROUP ? 0 : Math.floor(random() * (BUCKETS_PER_GROUP - buckets + 1));
    refs.push(bucketRefs(buckets, first));
  }
  return { groupIds, refs };
}

async function loadOffsetStore(store: OffsetStore): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: LOAD_CONCURRENCY }, async () => {
      while (next < GROUPS) {
        const g = next++;
        await store.commitOffsets(groupName(g), offsetCommits(BUCKETS_PER_GROUP, 1_000_000 + g));
      }
    }),
  );
}

async function loadLmdb(db: LmdbOffsets): Promise<void> {
  const writes: Promise<unknown>[] = [];
  for (let g = 0; g < GROUPS; g++)
    writes.push(db.commitAsync(groupName(g), offsetCommits(BUCKETS_PER_GROUP, 1_000_000 + g)));
  await Promise.all(writes);
}

function row(result: TaskResult, subject: Row['subject'], buckets: number): Row {
  const fetches = FETCHES_PER_CALL[buckets]!;
  const nsPerFetch = (result.meanMs * 1e6) / fetches;
  return { ...result, subject, buckets, nsPerFetch, nsPerOffset: nsPerFetch / buckets };
}

async function main(): Promise<void> {
  printBanner('fetch: OffsetStore.fetchOffsets vs lmdb-js getBinary', [
    `${GROUPS} groups x ${BUCKETS_PER_GROUP} buckets = ${GROUPS * BUCKETS_PER_GROUP} committed offsets in each store; timed ${TIMING.timeMs} ms per task in ${TIMING.rounds} interleaved rounds`,
  ]);
  const storeDir = createTempDir('fetch');
  const lmdbDir = createTempDir('fetch-lmdb');
  const store = await OffsetStore.open({ dir: storeDir, durability: 'os' });
  const db = LmdbOffsets.open(lmdbDir, 'os');
  try {
    const loadStartedMs = performance.now();
    await loadOffsetStore(store);
    await loadLmdb(db);
    console.log(
      `loaded both stores in ${((performance.now() - loadStartedMs) / 1000).toFixed(1)} s`,
    );

    const rows: Row[] = [];
    for (const buckets of [1, BUCKETS_PER_GROUP]) {
      const { groupIds, refs } = requests(buckets);
      const fetches = FETCHES_PER_CALL[buckets]!;
      let a = 0;
      let b = 0;
      const label = buckets === 1 ? '1 bucket' : `${buckets} buckets`;
      const specs: TaskSpec[] = [
        {
          name: `offset-store fetchOffsets, ${label} (awaited)`,
          async: true,
          unitsPerCall: fetches * buckets,
          fn: async () => {
            for (let k = 0; k < fetches; k++) {
              const i = a++ % SEQUENCE_LENGTH;
              await store.fetchOffsets(groupIds[i]!, refs[i]!);
            }
          },
        },
        {
          name: `lmdb-js getBinary x${buckets}, ${label}`,
          async: false,
          unitsPerCall: fetches * buckets,
          fn: () => {
            for (let k = 0; k < fetches; k++) {
              const i = b++ % SEQUENCE_LENGTH;
              db.fetch(groupIds[i]!, refs[i]!);
            }
          },
        },
      ];
      const [ours, theirs] = await measureInterleaved(specs, TIMING);
      rows.push(row(ours!, 'offset-store', buckets), row(theirs!, 'lmdb-js', buckets));
    }

    const peer = (r: Row) => rows.find((p) => p.subject === 'lmdb-js' && p.buckets === r.buckets)!;
    const columns: Column<Row>[] = [
      { header: 'task', value: (r) => r.name },
      { header: 'per fetch', value: (r) => formatNs(r.nsPerFetch) },
      { header: 'per offset', value: (r) => formatNs(r.nsPerOffset) },
      { header: 'fetches/s', value: (r) => formatCount(1e9 / r.nsPerFetch) },
      { header: 'offsets/s', value: (r) => formatCount(1e9 / r.nsPerOffset) },
      {
        header: 'speedup vs lmdb-js',
        value: (r) => formatRatio(peer(r).nsPerOffset / r.nsPerOffset),
      },
    ];
    printTable('Fetch (mean per fetch and per offset)', columns, rows);

    const speedup = (buckets: number) => {
      const ours = rows.find((r) => r.subject === 'offset-store' && r.buckets === buckets)!;
      return peer(ours).nsPerOffset / ours.nsPerOffset;
    };
    console.log('\nTargets (docs/performance.md)');
    console.log(
      `- fetch of 1 bucket >= 3x lmdb-js getBinary: ${formatRatio(speedup(1))} (${verdict(speedup(1) >= 3)})`,
    );
    console.log(
      `- fetch of 100 buckets >= 10x lmdb-js per offset: ${formatRatio(speedup(BUCKETS_PER_GROUP))} (${verdict(speedup(BUCKETS_PER_GROUP) >= 10)})`,
    );
  } finally {
    await store.close();
    await db.close();
    await removeTempDir(storeDir);
    await removeTempDir(lmdbDir);
  }
}

await main();
