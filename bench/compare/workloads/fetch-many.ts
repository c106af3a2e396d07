/**
 * (d) Fetch of 100 buckets in one call: a store holding COMPARE_LIVE_OFFSETS live offsets answers
 * fetches of all 100 buckets of a random group (lmdb-js: 100 `getBinary`; sqlite: 100 prepared
 * SELECTs in one read transaction; classic-level: one `getMany`). Timed with tinybench.
 *
 * Expected order of magnitude: ~50-300 µs per call for the peers, i.e. ~0.5-3 µs per offset.
 * Target: offset-store >= 10x lmdb-js per offset.
 */
import { Random } from '../random.js';
import { checkPopulated, groupBuckets, groupName, populate } from './populate.js';
import { tinybench, withAdapter, type Workload } from './workload.js';

const PICKS = 1024;

export const fetchMany: Workload = {
  id: 'd',
  title: 'fetch of 100 buckets in one call',
  runsVariants: false,
  peerRatio: true,
  targets: [
    { kind: 'vs-peer', peerId: 'lmdb', factor: 10, text: '>= 10x lmdb-js (time per offset)' },
  ],
  async run(spec, context) {
    const { config } = context;
    const groups = Math.ceil(config.liveOffsets / config.bucketsPerGroup);
    return withAdapter(spec, context.freshDir(), async (adapter) => {
      await populate(adapter, groups, config.bucketsPerGroup);
      await checkPopulated(adapter, 0, config.bucketsPerGroup);
      const random = new Random(config.seed + 1);
      const picks = Array.from({ length: PICKS }, () => groupName(random.int(0, groups - 1)));
      const buckets = groupBuckets(config.bucketsPerGroup);
      let next = 0;
      const stats = await tinybench(
        `${spec.id} fetch ${buckets.length} buckets`,
        async () => {
          const result = await adapter.fetch(picks[next++ & (PICKS - 1)]!, buckets);
          if (result[buckets.length - 1] === null)
            throw new Error('fetch returned null for a populated bucket');
        },
        config.benchMs,
      );
      const nsPerCall = stats.meanMs * 1e6;
      return {
        headline: {
          label: 'per offset',
          value: nsPerCall / buckets.length,
          unit: 'ns',
          better: 'lower',
        },
        details: [
          { label: 'per call', value: nsPerCall, unit: 'ns', better: 'lower' },
          { label: 'call p99', value: stats.p99Ms * 1e6, unit: 'ns', better: 'lower' },
        ],
        notes: [`${config.liveOffsets} live offsets in ${groups} groups`],
      };
    });
  },
};
