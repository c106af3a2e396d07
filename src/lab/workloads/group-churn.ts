/**
 * group-churn: groups are created (all their buckets committed), committed a few times, and deleted
 * (tombstones): a live set of constant size whose keys keep changing.
 */
import { seededRandom } from '../random.js';
import {
  atScale,
  bucketRange,
  fillGroup,
  type WorkloadDefinition,
  type WorkloadOp,
} from './workload.js';

/** The group-churn workload. */
export const groupChurn: WorkloadDefinition = {
  name: 'group-churn',
  description:
    'groups created, committed a few times and deleted: a steady live set whose keys turn over (tombstones)',
  create(scale, seed) {
    const { live, buckets, turnover, commitsPerStep, steps } = atScale(scale, {
      small: { live: 40, buckets: 50, turnover: 10, commitsPerStep: 100, steps: 8 },
      default: { live: 1000, buckets: 100, turnover: 100, commitsPerStep: 2000, steps: 20 },
      full: { live: 5000, buckets: 200, turnover: 500, commitsPerStep: 10_000, steps: 20 },
    });
    const random = seededRandom(seed);
    let oldest = 0;
    let next = live;
    return {
      parameters: {
        liveGroups: live,
        bucketsPerGroup: buckets,
        liveOffsets: live * buckets,
        groupsReplacedPerStep: turnover,
        commitsPerStep,
        steps,
      },
      steps: steps + 1,
      step(i) {
        if (i === 0)
          return {
            ops: Array.from({ length: live }, (_, g) => fillGroup(`churn-${g}`, buckets, 0)).flat(),
          };
        const ops: WorkloadOp[] = [];
        for (let k = 0; k < turnover; k++)
          ops.push({ kind: 'deleteGroup', groupId: `churn-${oldest++}` });
        for (let k = 0; k < turnover; k++) ops.push(...fillGroup(`churn-${next++}`, buckets, i));
        for (let c = 0; c < commitsPerStep; c++) {
          const g = oldest + Math.floor(random() * (next - oldest));
          ops.push({
            kind: 'commit',
            groupId: `churn-${g}`,
            offsets: bucketRange(Math.floor(random() * (buckets - 5)), 5, i * 1_000_000 + c),
          });
        }
        return { ops };
      },
    };
  },
};
