/**
 * few-huge-groups: a handful of groups of 100k buckets each (a scanner of a huge table), committed in
 * chunks of 1000 consecutive buckets chosen with Zipf's law: big batches, few keys per group id.
 */
import { ZipfSampler, seededRandom } from '../random.js';
import {
  atScale,
  bucketRange,
  fillGroup,
  type WorkloadDefinition,
  type WorkloadOp,
} from './workload.js';

const CHUNK = 1000;

/** The few-huge-groups workload. */
export const fewHugeGroups: WorkloadDefinition = {
  name: 'few-huge-groups',
  description:
    'a few groups of 100k buckets each, committed in chunks of 1000 consecutive buckets (Zipf over chunks)',
  create(scale, seed) {
    const { groups, buckets, chunksPerStep, steps } = atScale(scale, {
      small: { groups: 2, buckets: 2000, chunksPerStep: 8, steps: 6 },
      default: { groups: 2, buckets: 100_000, chunksPerStep: 60, steps: 16 },
      full: { groups: 10, buckets: 100_000, chunksPerStep: 300, steps: 20 },
    });
    const random = seededRandom(seed);
    const chunkZipf = new ZipfSampler(buckets / CHUNK, 1.0, random);
    return {
      parameters: {
        groups,
        bucketsPerGroup: buckets,
        liveOffsets: groups * buckets,
        offsetsPerCommit: CHUNK,
        chunksPerStep,
        steps,
      },
      steps: steps + 1,
      step(i) {
        if (i === 0)
          return {
            ops: Array.from({ length: groups }, (_, g) =>
              fillGroup(`huge-${g}`, buckets, 0, CHUNK),
            ).flat(),
          };
        const ops: WorkloadOp[] = [];
        for (let c = 0; c < chunksPerStep; c++) {
          ops.push({
            kind: 'commit',
            groupId: `huge-${Math.floor(random() * groups)}`,
            offsets: bucketRange(chunkZipf.next() * CHUNK, CHUNK, i * 1000 + c),
          });
        }
        return { ops };
      },
    };
  },
};
