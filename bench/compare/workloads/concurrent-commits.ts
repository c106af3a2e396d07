/**
 * (b) Durable small commits from 64 concurrent committers: committer k owns group `c<k>` with 10
 * buckets and commits 1-10 of them (a random run of consecutive buckets) per call, issuing the next
 * commit when the previous one is durable (closed loop). Synchronous stores (lmdb-js transactionSync,
 * better-sqlite3) block the event loop per commit, so the 64 committers serialize: that is what a user
 * of those calls gets. lmdb-js's async `transaction` and classic-level batch concurrent commits.
 *
 * Expected order of magnitude: serialized stores ~1-2k commits/s (one device flush each, see the disk
 * floor); group-committing stores up to tens of thousands. Target: offset-store >= 10x lmdb-js.
 */
import type { OffsetCommit } from '../adapter.js';
import { Random } from '../random.js';
import { closedLoop, latencyMetrics, withAdapter, type Workload } from './workload.js';

const BUCKETS_PER_COMMITTER = 10;

export const concurrentCommits: Workload = {
  id: 'b',
  title: 'small commits (1-10 offsets) from 64 concurrent committers, durable',
  runsVariants: true,
  peerRatio: true,
  runsFloor: true,
  targets: [
    { kind: 'vs-peer', peerId: 'lmdb', factor: 10, text: '>= 10x lmdb-js commits/s' },
    {
      kind: 'vs-peer',
      peerId: 'lmdb-async',
      factor: 1.5,
      text: '>= 1.5x lmdb-js async transaction',
    },
  ],
  async run(spec, context) {
    const { config } = context;
    return withAdapter(spec, context.freshDir(), async (adapter) => {
      const randoms = Array.from(
        { length: config.concurrentCommitters },
        (_, k) => new Random(config.seed * 1000 + k),
      );
      const nextOffset = new Array<number>(config.concurrentCommitters).fill(0);
      const result = await closedLoop(
        {
          workers: config.concurrentCommitters,
          warmupMs: config.warmupSeconds * 1000,
          measureMs: config.concurrentSeconds * 1000,
        },
        async (k) => {
          const random = randoms[k]!;
          const count = random.int(1, BUCKETS_PER_COMMITTER);
          const first = random.int(0, BUCKETS_PER_COMMITTER - 1);
          const offset = ++nextOffset[k]!;
          const offsets: OffsetCommit[] = new Array(count);
          for (let i = 0; i < count; i++)
            offsets[i] = {
              tableId: 1,
              partitionId: null,
              bucketId: (first + i) % BUCKETS_PER_COMMITTER,
              offset,
            };
          await adapter.commit(`c${k}`, offsets);
          return 'commit';
        },
      );
      const commits = result.histograms.get('commit');
      if (commits === undefined || commits.count === 0)
        throw new Error('no commit completed in the measured window');
      const seconds = result.elapsedMs / 1000;
      return {
        headline: {
          label: 'commits/s',
          value: commits.count / seconds,
          unit: 'ops/s',
          better: 'higher',
        },
        details: latencyMetrics('commit', commits),
        notes: [`${commits.count} commits in ${seconds} s after ${config.warmupSeconds} s warmup`],
      };
    });
  },
};
