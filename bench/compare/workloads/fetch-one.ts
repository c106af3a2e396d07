/**
 * (c) Fetch of one committed offset: a store holding COMPARE_LIVE_OFFSETS live offsets (groups of 100
 * buckets) answers fetches of one bucket of a random group, through each adapter's async `fetch`
 * (one promise per call for every store). tinybench times batches of 64 sequential fetches; the
 * headline is the mean per fetch.
 *
 * Expected order of magnitude: ~0.5-3 µs per fetch for the peers (lmdb-js `getBinary` ~1 µs, sqlite
 * prepared point SELECT ~2 µs, classic-level `getSync` ~2 µs), plus ~0.1 µs of promise overhead.
 * Target: offset-store >= 3x lmdb-js.
 */
import type { BucketRef } from '../adapter.js';
import { Random } from '../random.js';
import { checkPopulated, groupName, populate } from './populate.js';
import { tinybench, withAdapter, type Workload } from './workload.js';

const FETCHES_PER_SAMPLE = 64;
const PICKS = 4096;

export const fetchOne: Workload = {
  id: 'c',
  title: 'fetch of one bucket',
  runsVariants: false,
  peerRatio: true,
  targets: [{ kind: 'vs-peer', peerId: 'lmdb', factor: 3, text: '>= 3x lmdb-js (time per fetch)' }],
  async run(spec, context) {
    const { config } = context;
    const groups = Math.ceil(config.liveOffsets / config.bucketsPerGroup);
    return withAdapter(spec, context.freshDir(), async (adapter) => {
      await populate(adapter, groups, config.bucketsPerGroup);
      await checkPopulated(adapter, groups - 1, config.bucketsPerGroup);
      const random = new Random(config.seed);
      const picks = Array.from({ length: PICKS }, () => ({
        groupId: groupName(random.int(0, groups - 1)),
        buckets: [
          { tableId: 1, partitionId: null, bucketId: random.int(0, config.bucketsPerGroup - 1) },
        ] as BucketRef[],
      }));
      let next = 0;
      const stats = await tinybench(
        `${spec.id} fetch 1 bucket x${FETCHES_PER_SAMPLE}`,
        async () => {
          for (let i = 0; i < FETCHES_PER_SAMPLE; i++) {
            const pick = picks[next++ & (PICKS - 1)]!;
            const result = await adapter.fetch(pick.groupId, pick.buckets);
            if (result[0] === null) throw new Error(`fetch of ${pick.groupId} returned null`);
          }
        },
        config.benchMs,
      );
      const nsPerFetch = (stats.meanMs * 1e6) / FETCHES_PER_SAMPLE;
      return {
        headline: { label: 'per fetch', value: nsPerFetch, unit: 'ns', better: 'lower' },
        details: [
          { label: 'fetches/s', value: 1e9 / nsPerFetch, unit: 'ops/s', better: 'higher' },
          {
            label: `p99 per fetch (${FETCHES_PER_SAMPLE}-fetch samples)`,
            value: (stats.p99Ms * 1e6) / FETCHES_PER_SAMPLE,
            unit: 'ns',
            better: 'lower',
          },
        ],
        notes: [`${config.liveOffsets} live offsets in ${groups} groups`],
      };
    });
  },
};
