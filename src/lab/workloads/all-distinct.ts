/**
 * all-distinct: every commit writes buckets no one wrote before, so nothing ever becomes garbage:
 * the control for the cost of compacting a log that holds none.
 */
import { atScale, bucketRange, type WorkloadDefinition, type WorkloadOp } from './workload.js';

/** The all-distinct workload. */
export const allDistinct: WorkloadDefinition = {
  name: 'all-distinct',
  description:
    'every commit writes new buckets: the log is all live records, there is nothing to compact',
  create(scale) {
    const { groups, bucketsPerStep, steps } = atScale(scale, {
      small: { groups: 20, bucketsPerStep: 20, steps: 6 },
      default: { groups: 100, bucketsPerStep: 50, steps: 20 },
      full: { groups: 500, bucketsPerStep: 100, steps: 20 },
    });
    return {
      parameters: {
        groups,
        bucketsPerGroupPerStep: bucketsPerStep,
        steps,
        liveOffsetsAtEnd: groups * bucketsPerStep * steps,
      },
      steps,
      step(i) {
        const ops: WorkloadOp[] = [];
        for (let g = 0; g < groups; g++)
          ops.push({
            kind: 'commit',
            groupId: `distinct-${g}`,
            offsets: bucketRange(i * bucketsPerStep, bucketsPerStep, i + 1),
          });
        return { ops };
      },
    };
  },
};
