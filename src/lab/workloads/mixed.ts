/**
 * mixed: 90% commits (Zipf over groups, 1-5 buckets each) and 10% fetches of a group's buckets,
 * interleaved: what a service of scanners does, with fetch latency measured beside commit latency.
 */
import { ZipfSampler, seededRandom } from '../random.js';
import { atScale, fillGroup, type WorkloadDefinition, type WorkloadOp } from './workload.js';

/** The mixed workload. */
export const mixed: WorkloadDefinition = {
  name: 'mixed',
  description:
    '90% commits of 1-5 buckets (Zipf over groups), 10% fetches of 1-10 buckets, interleaved',
  create(scale, seed) {
    const { groups, buckets, opsPerStep, steps } = atScale(scale, {
      small: { groups: 100, buckets: 20, opsPerStep: 500, steps: 6 },
      default: { groups: 10_000, buckets: 10, opsPerStep: 10_000, steps: 16 },
      full: { groups: 100_000, buckets: 10, opsPerStep: 50_000, steps: 20 },
    });
    const random = seededRandom(seed);
    const zipf = new ZipfSampler(groups, 1.0, random);
    return {
      parameters: {
        groups,
        bucketsPerGroup: buckets,
        liveOffsets: groups * buckets,
        opsPerStep,
        fetchShare: 0.1,
        steps,
      },
      steps: steps + 1,
      step(i) {
        if (i === 0)
          return {
            ops: Array.from({ length: groups }, (_, g) =>
              fillGroup(`mixed-${g}`, buckets, 0),
            ).flat(),
          };
        const ops: WorkloadOp[] = [];
        for (let c = 0; c < opsPerStep; c++) {
          const groupId = `mixed-${zipf.next()}`;
          const first = Math.floor(random() * buckets);
          if (random() < 0.1) {
            const count = Math.min(buckets - first, 1 + Math.floor(random() * 10));
            ops.push({
              kind: 'fetch',
              groupId,
              buckets: Array.from({ length: count }, (_, k) => ({
                tableId: 1,
                bucketId: first + k,
              })),
            });
          } else {
            const count = Math.min(buckets - first, 1 + Math.floor(random() * 5));
            ops.push({
              kind: 'commit',
              groupId,
              offsets: Array.from({ length: count }, (_, k) => ({
                tableId: 1,
                bucketId: first + k,
                offset: i * 1_000_000 + c,
              })),
            });
          }
        }
        return { ops };
      },
    };
  },
};
