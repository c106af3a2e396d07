/**
 * Fetch without a cliff. V8 allocates objects of an allocation site straight in old space
 * ("pretenuring") once a garbage collection finds many of them alive; fetch results built as object
 * literals then became 10-20x slower for the rest of the process. This bench provokes exactly that:
 * at L live offsets (default 1M, full 5M), it times single-bucket and 100-bucket fetches, then keeps
 * the results of R fetches alive while forcing garbage collections (scavenges and a full GC), then
 * times the same fetches again. The ratio after/before must stay under 2x.
 *
 * Whether V8 takes the pretenuring decision depends on its heuristics (survival ratio per allocation
 * site at a scavenge), so the trigger is a heavy dose of it: a ring of the latest R results refilled
 * ten times over, with scavenges forced as it fills, then a full collection.
 *
 * It also times a single fetch at 100k live offsets in the same process before growing the store to
 * L, so the cost of size (hash probes missing the CPU cache) is seen next to the cost of GC: the
 * target is single-fetch time at L within 1.5x of 100k.
 *
 * Expected order of magnitude: ~0.1-0.5 us per single fetch (fetchOffsetsSync has no promise), ~20-60
 * ns per offset at 100 buckets, at any size; a pretenured result would be ~1-2 us.
 */
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { OffsetStore, type BucketRef } from '../src/index.js';
import { measureInterleaved, type MeasureOptions } from './support/measure.js';
import {
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

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as (options?: { type: 'major' | 'minor' }) => void;

const BUCKETS_PER_GROUP = 100;
const SMALL_GROUPS = 1_000;
const GROUPS = atScale({ quick: 2_000, default: 10_000, full: 50_000 });
const TIMING: MeasureOptions = atScale({
  quick: { timeMs: 200, warmupMs: 50, rounds: 1 },
  default: { timeMs: 1500, warmupMs: 200, rounds: 3 },
  full: { timeMs: 3000, warmupMs: 300, rounds: 5 },
});
const FETCHES_PER_CALL: Record<number, number> = { 1: 64, 100: 4 };
const SEQUENCE_LENGTH = 8192;
/** Results kept alive across the collections that provoke pretenuring. */
const RETAINED_RESULTS = 200_000;

interface Row {
  name: string;
  nsPerFetch: number;
}

async function load(store: OffsetStore, from: number, to: number): Promise<void> {
  let next = from;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < to) {
        const g = next++;
        await store.commitOffsets(groupName(g), offsetCommits(BUCKETS_PER_GROUP, 1_000_000 + g));
      }
    }),
  );
}

function requests(
  buckets: number,
  groups: number,
  seed: number,
): { groupIds: string[]; refs: BucketRef[][] } {
  const random = prng(seed);
  const groupIds: string[] = [];
  const refs: BucketRef[][] = [];
  for (let i = 0; i < SEQUENCE_LENGTH; i++) {
    groupIds.push(groupName(Math.floor(random() * groups)));
    const first =
      buckets === BUCKETS_PER_GROUP ? 0 : Math.floor(random() * (BUCKETS_PER_GROUP - buckets + 1));
    refs.push(bucketRefs(buckets, first));
  }
  return { groupIds, refs };
}

/** Mean ns per fetch of `buckets` buckets over `groups` groups, through fetchOffsetsSync. */
async function timeFetch(
  store: OffsetStore,
  buckets: number,
  groups: number,
  label: string,
): Promise<Row> {
  const { groupIds, refs } = requests(buckets, groups, buckets * 7919 + groups);
  const fetches = FETCHES_PER_CALL[buckets]!;
  let a = 0;
  const [result] = await measureInterleaved(
    [
      {
        name: label,
        async: false,
        unitsPerCall: fetches,
        fn: () => {
          for (let k = 0; k < fetches; k++) {
            const i = a++ % SEQUENCE_LENGTH;
            store.fetchOffsetsSync(groupIds[i]!, refs[i]!);
          }
        },
      },
    ],
    TIMING,
  );
  return { name: label, nsPerFetch: (result!.meanMs * 1e6) / fetches };
}

/** Keeps the results of many fetches alive through scavenges and a full collection: the pretenuring trigger. */
function provokePretenuring(store: OffsetStore, groups: number): unknown[] {
  const { groupIds, refs } = requests(1, groups, 4242);
  const kept: unknown[] = new Array(RETAINED_RESULTS);
  // A ring of the latest results, refilled for a while: every scavenge finds nearly all of the
  // youngest results alive, which is what makes V8 pretenure an allocation site.
  for (let i = 0; i < RETAINED_RESULTS * 10; i++) {
    kept[i % RETAINED_RESULTS] = store.fetchOffsetsSync(
      groupIds[i % SEQUENCE_LENGTH]!,
      refs[i % SEQUENCE_LENGTH]!,
    );
    if (i % 50_000 === 0) gc({ type: 'minor' });
  }
  gc({ type: 'minor' });
  gc({ type: 'major' });
  return kept;
}

async function main(): Promise<void> {
  printBanner('fetch across garbage collections: no allocation cliff', [
    `${GROUPS} groups x ${BUCKETS_PER_GROUP} buckets = ${GROUPS * BUCKETS_PER_GROUP} live offsets (100k first); ${RETAINED_RESULTS} results kept alive through forced collections`,
  ]);
  const dir = createTempDir('fetch-gc');
  const store = await OffsetStore.open({
    dir,
    durability: 'os',
    compaction: { background: false },
  });
  const rows: Row[] = [];
  try {
    await load(store, 0, SMALL_GROUPS);
    const small = await timeFetch(
      store,
      1,
      SMALL_GROUPS,
      `1 bucket at ${SMALL_GROUPS * BUCKETS_PER_GROUP} live offsets`,
    );
    rows.push(small);
    const loadStartedMs = performance.now();
    await load(store, SMALL_GROUPS, GROUPS);
    console.log(
      `loaded ${GROUPS * BUCKETS_PER_GROUP} offsets in ${((performance.now() - loadStartedMs) / 1000).toFixed(1)} s`,
    );
    gc({ type: 'major' });
    const before1 = await timeFetch(
      store,
      1,
      GROUPS,
      `1 bucket at ${GROUPS * BUCKETS_PER_GROUP}, before`,
    );
    const before100 = await timeFetch(
      store,
      100,
      GROUPS,
      `100 buckets at ${GROUPS * BUCKETS_PER_GROUP}, before`,
    );
    const kept = provokePretenuring(store, GROUPS);
    const after1 = await timeFetch(
      store,
      1,
      GROUPS,
      `1 bucket at ${GROUPS * BUCKETS_PER_GROUP}, after GC with ${kept.length} results alive`,
    );
    const after100 = await timeFetch(
      store,
      100,
      GROUPS,
      `100 buckets at ${GROUPS * BUCKETS_PER_GROUP}, after GC with ${kept.length} results alive`,
    );
    rows.push(before1, after1, before100, after100);
    const columns: Column<Row>[] = [
      { header: 'fetch (fetchOffsetsSync)', value: (r) => r.name },
      { header: 'per fetch', value: (r) => formatNs(r.nsPerFetch) },
    ];
    printTable('Fetch time before and after the pretenuring trigger', columns, rows);
    const cliff1 = after1.nsPerFetch / before1.nsPerFetch;
    const cliff100 = after100.nsPerFetch / before100.nsPerFetch;
    const size = before1.nsPerFetch / small.nsPerFetch;
    console.log('\nTargets');
    console.log(
      `- single fetch after the trigger within 2x of before: ${formatRatio(cliff1)} (${verdict(cliff1 <= 2)})`,
    );
    console.log(
      `- 100-bucket fetch after the trigger within 2x of before: ${formatRatio(cliff100)} (${verdict(cliff100 <= 2)})`,
    );
    console.log(
      `- single fetch at ${GROUPS * BUCKETS_PER_GROUP} within 1.5x of 100k: ${formatRatio(size)} (${verdict(size <= 1.5)})`,
    );
    if (kept.length === 0) console.log('(unreachable)');
  } finally {
    await store.close();
    await removeTempDir(dir);
  }
}

await main();
