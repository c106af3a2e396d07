/**
 * (g) Mixed workload: 64 closed-loop workers over COMPARE_MIXED_GROUPS groups (10 buckets each,
 * prefilled with one commit per group); each operation is, at random, a durable commit of 1-10
 * consecutive buckets of a random group (90%) or a fetch of 1-10 buckets of a random group (10%).
 * Runs COMPARE_MIXED_SECONDS (5 s default, 30 s full) after a warmup; reports throughput and
 * p50/p99/p999 latency of each kind. Fetches queue behind synchronous commits in the same event loop,
 * as they would in a real service using those stores.
 *
 * Expected order of magnitude: serialized peers ~1-2k ops/s with fetch p99 around a commit's latency
 * (~1 ms); group-committing stores higher throughput at similar commit p50.
 */
import type { BucketRef, OffsetCommit } from '../adapter.js';
import { Random } from '../random.js';
import { closedLoop, latencyMetrics, withAdapter, type Workload } from './workload.js';

const BUCKETS_PER_GROUP = 10;
const COMMIT_SHARE = 0.9;
const PREFILL_WRITERS = 64;

export const mixed: Workload = {
  id: 'g',
  title: 'mixed: 90% commits over 10k groups, 10% fetches, 64 workers',
  runsVariants: true,
  peerRatio: true,
  targets: [],
  async run(spec, context) {
    const { config } = context;
    const groups = config.mixedGroups;
    return withAdapter(spec, context.freshDir(), async (adapter) => {
      const prefillStart = performance.now();
      let nextGroup = 0;
      await Promise.all(
        Array.from({ length: PREFILL_WRITERS }, async () => {
          for (let g = nextGroup++; g < groups; g = nextGroup++) {
            const offsets: OffsetCommit[] = Array.from(
              { length: BUCKETS_PER_GROUP },
              (_, bucketId) => ({ tableId: 1, partitionId: null, bucketId, offset: 0 }),
            );
            await adapter.commit(`m${g}`, offsets);
          }
        }),
      );
      const prefillMs = performance.now() - prefillStart;

      const randoms = Array.from(
        { length: config.mixedWorkers },
        (_, k) => new Random(config.seed * 7919 + k),
      );
      let offset = 0;
      const result = await closedLoop(
        {
          workers: config.mixedWorkers,
          warmupMs: config.warmupSeconds * 1000,
          measureMs: config.mixedSeconds * 1000,
        },
        async (k) => {
          const random = randoms[k]!;
          const groupId = `m${random.int(0, groups - 1)}`;
          const count = random.int(1, BUCKETS_PER_GROUP);
          const first = random.int(0, BUCKETS_PER_GROUP - 1);
          if (random.next() < COMMIT_SHARE) {
            offset += 1;
            const offsets: OffsetCommit[] = new Array(count);
            for (let i = 0; i < count; i++)
              offsets[i] = {
                tableId: 1,
                partitionId: null,
                bucketId: (first + i) % BUCKETS_PER_GROUP,
                offset,
              };
            await adapter.commit(groupId, offsets);
            return 'commit';
          }
          const buckets: BucketRef[] = new Array(count);
          for (let i = 0; i < count; i++)
            buckets[i] = {
              tableId: 1,
              partitionId: null,
              bucketId: (first + i) % BUCKETS_PER_GROUP,
            };
          const fetched = await adapter.fetch(groupId, buckets);
          if (fetched[0] === null)
            throw new Error(`fetch of prefilled group ${groupId} returned null`);
          return 'fetch';
        },
      );
      const commits = result.histograms.get('commit');
      const fetches = result.histograms.get('fetch');
      const seconds = result.elapsedMs / 1000;
      const ops = (commits?.count ?? 0) + (fetches?.count ?? 0);
      if (ops === 0) throw new Error('no operation completed in the measured window');
      return {
        headline: { label: 'ops/s', value: ops / seconds, unit: 'ops/s', better: 'higher' },
        details: [
          {
            label: 'commits/s',
            value: (commits?.count ?? 0) / seconds,
            unit: 'ops/s',
            better: 'higher',
          },
          ...latencyMetrics('commit', commits),
          ...latencyMetrics('fetch', fetches),
        ],
        notes: [
          `${groups} groups prefilled in ${(prefillMs / 1000).toFixed(1)} s; ${ops} ops in ${seconds} s`,
        ],
      };
    });
  },
};
