/**
 * hot-overwrite: G groups of B buckets are filled once, then committed again and again with Zipf's
 * law over groups and over buckets within a group (s = 1.1): a few keys take most commits, most keys
 * are rarely rewritten. The workload compaction exists for.
 */
import { ZipfSampler, seededRandom } from '../random.js';
import { atScale, fillGroup, type WorkloadDefinition, type WorkloadOp } from './workload.js';

/** The hot-overwrite workload. */
export const hotOverwrite: WorkloadDefinition = {
  name: 'hot-overwrite',
  description:
    'G groups of B buckets filled once, then overwritten with Zipf (s = 1.1) over groups and over buckets: a few hot keys, a long cold tail',
  create(scale, seed) {
    const { groups, buckets, steps, commitsPerStep } = atScale(scale, {
      small: { groups: 20, buckets: 100, steps: 8, commitsPerStep: 300 },
      default: { groups: 200, buckets: 500, steps: 20, commitsPerStep: 6000 },
      full: { groups: 1000, buckets: 1000, steps: 24, commitsPerStep: 40_000 },
    });
    const random = seededRandom(seed);
    const groupZipf = new ZipfSampler(groups, 1.1, random);
    const bucketZipf = new ZipfSampler(buckets, 1.1, random);
    return {
      parameters: {
        groups,
        bucketsPerGroup: buckets,
        liveOffsets: groups * buckets,
        overwriteSteps: steps,
        commitsPerStep,
        offsetsPerCommit: '1-10',
      },
      steps: steps + 1,
      step(i) {
        if (i === 0)
          return {
            ops: Array.from({ length: groups }, (_, g) => fillGroup(`hot-${g}`, buckets, 0)).flat(),
          };
        const ops: WorkloadOp[] = [];
        for (let c = 0; c < commitsPerStep; c++) {
          const chosen = new Set<number>();
          const count = 1 + Math.floor(random() * 10);
          for (let k = 0; k < count; k++) chosen.add(bucketZipf.next());
          ops.push({
            kind: 'commit',
            groupId: `hot-${groupZipf.next()}`,
            offsets: [...chosen].map((bucketId) => ({
              tableId: 1,
              bucketId,
              offset: i * 1_000_000 + c,
            })),
          });
        }
        return { ops };
      },
    };
  },
};
