/**
 * What a lab workload is: a seeded, deterministic sequence of steps, each a list of operations on the
 * store (commits, group deletes, fetches) and an optional move of the store's clock before it. The
 * lab runs every strategy on the same steps, samples the store after each one, and checks at the
 * end that the store holds what the operations left (see lab-run.ts).
 */

/** The sizes of the lab: `small` for tests, `default` (about 100k live offsets), `full` (1M and more). */
export type LabScale = 'small' | 'default' | 'full';

/** Every scale, smallest first. */
export const LAB_SCALES: readonly LabScale[] = ['small', 'default', 'full'];

/** One offset of a commit. */
export interface LabOffset {
  /** The user table. */
  tableId: number;
  /** The bucket of that table. */
  bucketId: number;
  /** The committed offset. */
  offset: number;
}

/** One operation of a step. */
export type WorkloadOp =
  | { kind: 'commit'; groupId: string; offsets: LabOffset[] }
  | { kind: 'deleteGroup'; groupId: string }
  | { kind: 'fetch'; groupId: string; buckets: { tableId: number; bucketId: number }[] };

/** One step: operations issued concurrently (in order, a bounded number at a time). */
export interface WorkloadStep {
  /** Move the store's clock by this much before the operations (retention). */
  advanceClockMs?: number;
  /** The operations. */
  ops: WorkloadOp[];
}

/** A workload at one scale and seed. */
export interface WorkloadPlan {
  /** Its sizes, for the report. */
  parameters: Record<string, number | string>;
  /** Number of steps. */
  steps: number;
  /** The operations of step `i` (0-based); the same for the same scale and seed. */
  step(i: number): WorkloadStep;
  /** Store options the workload needs (retention). */
  storeOptions?: { offsetsRetentionMs?: number; offsetsRetentionCheckIntervalMs?: number };
}

/** A workload of the lab. */
export interface WorkloadDefinition {
  /** Its name on the command line. */
  name: string;
  /** One sentence for the report. */
  description: string;
  /** The plan at a scale, from a seed. */
  create(scale: LabScale, seed: number): WorkloadPlan;
}

/** `count` offsets of one table starting at bucket `first`, all at `offset`. */
export function bucketRange(
  first: number,
  count: number,
  offset: number,
  tableId = 1,
): LabOffset[] {
  return Array.from({ length: count }, (_, i) => ({ tableId, bucketId: first + i, offset }));
}

/** Commits of every bucket 0..buckets-1 of `groupId`, at most `perCommit` offsets each. */
export function fillGroup(
  groupId: string,
  buckets: number,
  offset: number,
  perCommit = 1000,
): WorkloadOp[] {
  const ops: WorkloadOp[] = [];
  for (let first = 0; first < buckets; first += perCommit)
    ops.push({
      kind: 'commit',
      groupId,
      offsets: bucketRange(first, Math.min(perCommit, buckets - first), offset),
    });
  return ops;
}

/** Picks the value for the scale. */
export function atScale<T>(scale: LabScale, values: Record<LabScale, T>): T {
  return values[scale];
}
