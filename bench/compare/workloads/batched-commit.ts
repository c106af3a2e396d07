/**
 * (a) Durable batched commit: one group commits 1000 offsets (table 1, buckets 0-999) per call, back
 * to back, each call waiting for durability. Measures offsets/s and commit latency with tinybench;
 * building the 1000 offsets runs outside the timed function.
 *
 * Expected order of magnitude: 1 device flush plus ~0.1-1 ms of CPU per commit: ~0.5-2 ms per commit,
 * 0.5-2M offsets/s for the peers. Target: offset-store >= 2.5x lmdb-js transactionSync.
 */
import type { OffsetCommit } from '../adapter.js';
import { tinybench, withAdapter, type Workload } from './workload.js';

const OFFSETS_PER_COMMIT = 1000;

export const batchedCommit: Workload = {
  id: 'a',
  title: `batched commit, ${OFFSETS_PER_COMMIT} offsets per commit, durable`,
  runsVariants: true,
  peerRatio: true,
  runsFloor: true,
  targets: [
    { kind: 'vs-peer', peerId: 'lmdb', factor: 3, text: '>= 3x lmdb-js offsets/s' },
    { kind: 'vs-peer', peerId: 'floor', factor: 0.7, text: '>= 0.7 of the write+fdatasync floor' },
  ],
  async run(spec, context) {
    return withAdapter(spec, context.freshDir(), async (adapter) => {
      let round = 0;
      let offsets: OffsetCommit[] = [];
      const prepare = (): void => {
        round += 1;
        offsets = new Array(OFFSETS_PER_COMMIT);
        for (let b = 0; b < OFFSETS_PER_COMMIT; b++)
          offsets[b] = {
            tableId: 1,
            partitionId: null,
            bucketId: b,
            offset: round * OFFSETS_PER_COMMIT + b,
          };
      };
      const stats = await tinybench(
        `${spec.id} commit ${OFFSETS_PER_COMMIT} offsets`,
        () => adapter.commit('batch-group', offsets),
        context.config.benchMs,
        prepare,
      );
      const last = await adapter.fetch('batch-group', [
        { tableId: 1, partitionId: null, bucketId: OFFSETS_PER_COMMIT - 1 },
      ]);
      if (
        spec.writeOnly !== true &&
        last[0]?.offset !== round * OFFSETS_PER_COMMIT + OFFSETS_PER_COMMIT - 1
      )
        throw new Error(`last commit not readable back (got ${String(last[0]?.offset)})`);
      return {
        headline: {
          label: 'offsets/s',
          value: (OFFSETS_PER_COMMIT * 1000) / stats.meanMs,
          unit: 'ops/s',
          better: 'higher',
        },
        details: [
          { label: 'commits/s', value: 1000 / stats.meanMs, unit: 'ops/s', better: 'higher' },
          { label: 'commit p50', value: stats.p50Ms * 1e6, unit: 'ns', better: 'lower' },
          { label: 'commit p99', value: stats.p99Ms * 1e6, unit: 'ns', better: 'lower' },
        ],
        notes: [`${stats.samples} commits timed`],
      };
    });
  },
};
