/**
 * Workload shapes shared by the benches: group names and the buckets and offsets a group commits.
 * Every offset is a plain one (leader epoch 0, no metadata), the common case of a scanner commit.
 */
import type { BucketRef, OffsetCommit } from '../../src/index.js';

/** The table every bench commits to. */
export const TABLE_ID = 1;

/** A group id: `group-000042`. */
export function groupName(index: number): string {
  return `group-${String(index).padStart(6, '0')}`;
}

/** Buckets `first` .. `first + count - 1` of a non-partitioned table. */
export function bucketRefs(count: number, first = 0, tableId = TABLE_ID): BucketRef[] {
  return Array.from({ length: count }, (_, i) => ({
    tableId,
    partitionId: null,
    bucketId: first + i,
  }));
}

/** Offsets for `count` buckets (from `first`), all at `offset`. */
export function offsetCommits(
  count: number,
  offset: number,
  first = 0,
  tableId = TABLE_ID,
): OffsetCommit[] {
  return Array.from({ length: count }, (_, i) => ({
    tableId,
    partitionId: null,
    bucketId: first + i,
    offset,
    leaderEpoch: 0,
  }));
}

/** Moves every offset of a commit forward by one, in place (a scanner that kept reading). */
export function advance(offsets: OffsetCommit[]): OffsetCommit[] {
  for (const o of offsets) o.offset++;
  return offsets;
}

/** A small deterministic PRNG (mulberry32), so every run reads the same sequence. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
