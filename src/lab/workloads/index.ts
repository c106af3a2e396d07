/** The lab's standard workloads, by name, in the order the report shows them. */
import { allDistinct } from './all-distinct.js';
import { fewHugeGroups } from './few-huge-groups.js';
import { groupChurn } from './group-churn.js';
import { hotOverwrite } from './hot-overwrite.js';
import { manyTinyGroups } from './many-tiny-groups.js';
import { mixed } from './mixed.js';
import { retentionHeavy } from './retention-heavy.js';
import type { WorkloadDefinition } from './workload.js';

/** Every standard workload. */
export const WORKLOADS: readonly WorkloadDefinition[] = [
  hotOverwrite,
  allDistinct,
  groupChurn,
  retentionHeavy,
  fewHugeGroups,
  manyTinyGroups,
  mixed,
];

export {
  LAB_SCALES,
  type LabOffset,
  type LabScale,
  type WorkloadDefinition,
  type WorkloadOp,
  type WorkloadPlan,
  type WorkloadStep,
} from './workload.js';
