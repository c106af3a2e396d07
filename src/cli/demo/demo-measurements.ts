/**
 * The demo's two measurements of the store itself (not of the scenario): durable commits per second
 * under concurrency (where group commit shows), and the latency of fetching one committed offset.
 */
import type { BucketRef, OffsetStore } from '../../index.js';

const BURST_COMMITTERS = 64;
const BURST_COMMITS_EACH = 10;
const FETCH_SAMPLES = 5000;

/**
 * 64 committers, each making 10 sequential durable commits of 1-10 offsets to its own group (no
 * members, so plain commits); the groups are deleted afterwards.
 */
export async function measureBurstCommits(
  store: OffsetStore,
): Promise<{ committers: number; commitsPerSecond: number; offsetRecords: number }> {
  let offsetRecords = 0;
  const startedMs = performance.now();
  await Promise.all(
    Array.from({ length: BURST_COMMITTERS }, async (_, c) => {
      for (let i = 0; i < BURST_COMMITS_EACH; i++) {
        const count = 1 + ((c + i) % 10);
        offsetRecords += count;
        await store.commitOffsets(
          `demo-burst-${c}`,
          Array.from({ length: count }, (_, b) => ({
            tableId: 2,
            bucketId: b,
            offset: (i + 1) * 100,
          })),
        );
      }
    }),
  );
  const elapsedMs = performance.now() - startedMs;
  for (let c = 0; c < BURST_COMMITTERS; c++) await store.deleteGroup(`demo-burst-${c}`);
  return {
    committers: BURST_COMMITTERS,
    commitsPerSecond: (BURST_COMMITTERS * BURST_COMMITS_EACH) / (elapsedMs / 1000),
    offsetRecords,
  };
}

/** p50 and p99 of `fetchOffsets(groupId, [bucket])`, in microseconds. */
export async function measureFetchLatency(
  store: OffsetStore,
  groupId: string,
  bucket: BucketRef,
): Promise<{ p50Us: number; p99Us: number }> {
  const samples: number[] = [];
  const buckets = [bucket];
  for (let i = 0; i < FETCH_SAMPLES; i++) {
    const t0 = performance.now();
    await store.fetchOffsets(groupId, buckets);
    samples.push((performance.now() - t0) * 1000);
  }
  samples.sort((a, b) => a - b);
  return {
    p50Us: samples[Math.floor(samples.length * 0.5)]!,
    p99Us: samples[Math.floor(samples.length * 0.99)]!,
  };
}
