/**
 * retention-heavy: groups commit once or twice and go quiet; the store's clock is driven forward
 * each step, so their offsets expire (offsetsRetentionMs) and the store writes their tombstones: the
 * log fills with expiry tombstones that compaction must carry for deleteRetentionMs, then drop.
 */
import { atScale, bucketRange, type WorkloadDefinition, type WorkloadOp } from './workload.js';

const RETENTION_MS = 10 * 60_000;
const STEP_CLOCK_MS = 2 * 60_000;

/** The retention-heavy workload. */
export const retentionHeavy: WorkloadDefinition = {
  name: 'retention-heavy',
  description:
    'groups commit and go quiet; the clock moves 2 min a step and offsets expire after 10 min (expiry tombstones)',
  create(scale) {
    const { groupsPerStep, buckets, steps } = atScale(scale, {
      small: { groupsPerStep: 20, buckets: 20, steps: 10 },
      default: { groupsPerStep: 500, buckets: 40, steps: 20 },
      full: { groupsPerStep: 4000, buckets: 50, steps: 24 },
    });
    return {
      parameters: {
        groupsPerStep,
        bucketsPerGroup: buckets,
        offsetsRetentionMs: RETENTION_MS,
        clockPerStepMs: STEP_CLOCK_MS,
        steps,
        liveOffsetsSteady: groupsPerStep * buckets * (RETENTION_MS / STEP_CLOCK_MS),
      },
      steps,
      storeOptions: { offsetsRetentionMs: RETENTION_MS, offsetsRetentionCheckIntervalMs: 60_000 },
      step(i) {
        const ops: WorkloadOp[] = [];
        for (let g = 0; g < groupsPerStep; g++) {
          const groupId = `ret-${i}-${g}`;
          ops.push({ kind: 'commit', groupId, offsets: bucketRange(0, buckets, 1) });
          ops.push({ kind: 'commit', groupId, offsets: bucketRange(0, buckets / 2, 2) });
        }
        return { advanceClockMs: i === 0 ? 0 : STEP_CLOCK_MS, ops };
      },
    };
  },
};
