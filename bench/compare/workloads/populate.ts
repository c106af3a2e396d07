/**
 * Fills a store with live offsets the same way for every adapter: `groups` groups named `g<i>`, each
 * with `bucketsPerGroup` buckets of table 1 (non-partitioned) committed in one commit per group, from
 * 8 concurrent writers (group-committing stores batch them; synchronous ones serialize). Offsets are
 * `i * 1000 + bucketId`, so `expectedOffset` can check a read.
 */
import type { BucketRef, OffsetCommit, OffsetStoreAdapter } from '../adapter.js';

const POPULATE_WRITERS = 8;

/** Group id of group `i`. */
export function groupName(i: number): string {
  return `g${i}`;
}

/** The buckets of every populated group. */
export function groupBuckets(bucketsPerGroup: number): BucketRef[] {
  return Array.from({ length: bucketsPerGroup }, (_, bucketId) => ({
    tableId: 1,
    partitionId: null,
    bucketId,
  }));
}

/** The offset `populate` commits for group `i`, bucket `bucketId`. */
export function expectedOffset(i: number, bucketId: number): number {
  return i * 1000 + bucketId;
}

/** Commits `groups * bucketsPerGroup` live offsets; returns the elapsed milliseconds. */
export async function populate(
  adapter: OffsetStoreAdapter,
  groups: number,
  bucketsPerGroup: number,
): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  const writer = async (): Promise<void> => {
    for (let i = next++; i < groups; i = next++) {
      const offsets: OffsetCommit[] = new Array(bucketsPerGroup);
      for (let b = 0; b < bucketsPerGroup; b++)
        offsets[b] = { tableId: 1, partitionId: null, bucketId: b, offset: expectedOffset(i, b) };
      await adapter.commit(groupName(i), offsets);
    }
  };
  await Promise.all(Array.from({ length: POPULATE_WRITERS }, writer));
  return performance.now() - t0;
}

/** Throws unless `adapter` returns the populated offsets of group `i`. */
export async function checkPopulated(
  adapter: OffsetStoreAdapter,
  i: number,
  bucketsPerGroup: number,
): Promise<void> {
  const fetched = await adapter.fetch(groupName(i), groupBuckets(bucketsPerGroup));
  for (let b = 0; b < bucketsPerGroup; b++) {
    const got = fetched[b]?.offset;
    if (got !== expectedOffset(i, b))
      throw new Error(
        `group ${groupName(i)} bucket ${b}: expected offset ${expectedOffset(i, b)}, got ${String(got)}`,
      );
  }
}
