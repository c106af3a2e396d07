/**
 * Child process of workload (f): measures the memory one adapter holds per live offset, alone in a
 * fresh process started with --expose-gc so that nothing else shares the heap.
 *
 *   node --expose-gc --import tsx bench/compare/memory-probe.ts <adapterId> <liveOffsets> <dir>
 *
 * 1. Open the store on the empty `dir`; warm it up with 20 throwaway groups (so code, caches and
 *    buffers that do not grow with the data are in the baseline); collect garbage; take the baseline.
 * 2. Commit `liveOffsets` offsets (groups of 100 buckets); collect; measure ("after writes").
 * 3. Close; collect; take a second baseline; reopen and fetch one group; collect; measure
 *    ("after reopen": the steady state of a restarted service).
 * Prints one JSON line of `MemoryProbeResult` on stdout.
 *
 * Expected order of magnitude: peers keep offsets on disk and in bounded native caches, so ~0 B of
 * heap per offset and RSS bounded by their caches; an in-memory index costs tens of bytes of heap per
 * offset (target: offset-store <= 80 B).
 */
import { loadAdapterSpec } from './adapters/index.js';
import { checkPopulated, populate } from './workloads/populate.js';

const BUCKETS_PER_GROUP = 100;
const WARMUP_GROUPS = 20;

/** Bytes per live offset, by measure and moment. */
export interface MemoryProbeResult {
  liveOffsets: number;
  heapAfterWrites: number;
  externalAfterWrites: number;
  rssAfterWrites: number;
  heapAfterReopen: number;
  externalAfterReopen: number;
  rssAfterReopen: number;
}

interface Snapshot {
  heap: number;
  external: number;
  rss: number;
}

async function collect(): Promise<Snapshot> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('memory-probe needs node --expose-gc');
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const usage = process.memoryUsage();
  // `external` already includes `arrayBuffers` (every ArrayBuffer and Buffer).
  return { heap: usage.heapUsed, external: usage.external, rss: usage.rss };
}

async function main(): Promise<void> {
  const [adapterId, offsetsArg, dir] = process.argv.slice(2);
  if (adapterId === undefined || offsetsArg === undefined || dir === undefined) {
    throw new Error('usage: memory-probe.ts <adapterId> <liveOffsets> <dir>');
  }
  const groups = Math.ceil(Number(offsetsArg) / BUCKETS_PER_GROUP);
  const liveOffsets = groups * BUCKETS_PER_GROUP;
  const spec = await loadAdapterSpec(adapterId);

  let adapter = spec.create();
  await adapter.open(dir);
  for (let g = 0; g < WARMUP_GROUPS; g++) {
    await adapter.commit(
      `warmup${g}`,
      Array.from({ length: BUCKETS_PER_GROUP }, (_, bucketId) => ({
        tableId: 1,
        partitionId: null,
        bucketId,
        offset: 1,
      })),
    );
  }
  const base = await collect();
  await populate(adapter, groups, BUCKETS_PER_GROUP);
  const afterWrites = await collect();
  await adapter.close();

  const base2 = await collect();
  adapter = spec.create();
  await adapter.open(dir);
  await checkPopulated(adapter, groups - 1, BUCKETS_PER_GROUP);
  const afterReopen = await collect();
  await adapter.close();

  const per = (after: number, before: number): number => (after - before) / liveOffsets;
  const result: MemoryProbeResult = {
    liveOffsets,
    heapAfterWrites: per(afterWrites.heap, base.heap),
    externalAfterWrites: per(afterWrites.external, base.external),
    rssAfterWrites: per(afterWrites.rss, base.rss),
    heapAfterReopen: per(afterReopen.heap, base2.heap),
    externalAfterReopen: per(afterReopen.external, base2.external),
    rssAfterReopen: per(afterReopen.rss, base2.rss),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
