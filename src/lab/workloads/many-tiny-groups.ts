/**
 * many-tiny-groups: a very large number of groups of one offset each (1M at full scale), each
 * committed again with Zipf's law over groups: many keys, one record per batch.
 */
import { ZipfSampler, seededRandom } from '../random.js';
import { atScale, type WorkloadDefinition, type WorkloadOp } from './workload.js';

/** The many-tiny-groups workload. */
export const manyTinyGroups: WorkloadDefinition = {
  name: 'many-tiny-groups',
  description:
    'many groups of one offset each, filled once, then recommitted with Zipf (s = 1.0) over groups',
  create(scale, seed) {
    const { groups, commitsPerStep, steps } = atScale(scale, {
      small: { groups: 2000, commitsPerStep: 500, steps: 6 },
      default: { groups: 100_000, commitsPerStep: 10_000, steps: 16 },
      full: { groups: 1_000_000, commitsPerStep: 50_000, steps: 20 },
    });
    const random = seededRandom(seed);
    const zipf = new ZipfSampler(groups, 1.0, random);
    return {
      parameters: { groups, liveOffsets: groups, commitsPerStep, steps },
      steps: steps + 1,
      step(i) {
        if (i === 0)
          return {
            ops: Array.from({ length: groups }, (_, g): WorkloadOp => ({
              kind: 'commit',
              groupId: `tiny-${g}`,
              offsets: [{ tableId: 1, bucketId: 0, offset: 0 }],
            })),
          };
        const ops: WorkloadOp[] = [];
        for (let c = 0; c < commitsPerStep; c++)
          ops.push({
            kind: 'commit',
            groupId: `tiny-${zipf.next()}`,
            offsets: [{ tableId: 1, bucketId: 0, offset: i * 1_000_000 + c }],
          });
        return { ops };
      },
    };
  },
};
