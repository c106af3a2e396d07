/**
 * (e) Reopen/recovery: a store is filled with COMPARE_LIVE_OFFSETS live offsets (one commit of 100
 * buckets per group), closed, then reopened three times; each reopen is timed from `open()` until a
 * first fetch of a whole group returned the right offsets (a store that loads lazily pays there).
 * The page cache is warm (the files were just written), so this is recovery CPU work, not disk reads.
 *
 * Expected order of magnitude: lmdb-js ~1 ms (mmap, nothing to replay); sqlite ~1-10 ms (WAL index
 * rebuild); classic-level ~10-500 ms (write-ahead log replay into the memtable); offset-store replays
 * its log or loads a checkpoint. Target: offset-store < 1 s for 1M live offsets (COMPARE_SCALE=full).
 */
import { checkPopulated, populate } from './populate.js';
import type { Workload } from './workload.js';

const REOPENS = 3;

export const recovery: Workload = {
  id: 'e',
  title: 'reopen with live offsets, until the first fetch answers',
  runsVariants: false,
  peerRatio: true,
  targets: [
    { kind: 'absolute', max: 1000, text: '< 1000 ms at 1M live offsets', onlyAtScale: 'full' },
  ],
  async run(spec, context) {
    const { config } = context;
    const groups = Math.ceil(config.liveOffsets / config.bucketsPerGroup);
    const liveOffsets = groups * config.bucketsPerGroup;
    const dir = context.freshDir();
    const writer = spec.create();
    await writer.open(dir);
    let populateMs: number;
    try {
      populateMs = await populate(writer, groups, config.bucketsPerGroup);
    } finally {
      await writer.close();
    }
    const reopenMs: number[] = [];
    for (let r = 0; r < REOPENS; r++) {
      const adapter = spec.create();
      const t0 = performance.now();
      await adapter.open(dir);
      try {
        await checkPopulated(adapter, (r * 7919) % groups, config.bucketsPerGroup);
        reopenMs.push(performance.now() - t0);
      } finally {
        await adapter.close();
      }
    }
    const sorted = [...reopenMs].sort((x, y) => x - y);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    return {
      headline: { label: 'reopen (median)', value: median, unit: 'ms', better: 'lower' },
      details: [
        { label: 'reopen (min)', value: sorted[0]!, unit: 'ms', better: 'lower' },
        {
          label: 'live offsets/s recovered',
          value: (liveOffsets * 1000) / median,
          unit: 'ops/s',
          better: 'higher',
        },
      ],
      notes: [
        `${liveOffsets} live offsets; populated in ${(populateMs / 1000).toFixed(1)} s; reopens ${reopenMs.map((ms) => ms.toFixed(1)).join(', ')} ms`,
      ],
    };
  },
};
