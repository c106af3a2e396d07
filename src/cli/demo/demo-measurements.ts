/**
 * The demo's two measurements of the store itself (not of the scenario): durable commits per second
 * under concurrency (where group commit shows), and the latency of fetching one committed offset.
 */
import type { BucketRef, OffsetStore } from '../../index.js';

const BURST_COMMITTERS = 64;
/** Commits each committer makes before the timing starts (creating its group, warming up). */
const BURST_WARMUP_COMMITS_EACH = 10;
/** How long the committers commit once timed. */
const BURST_TIMED_MS = 1000;
const FETCH_SAMPLES = 5000;

/**
 * 64 committers, each committing 1-10 offsets to its own group (no members, so plain commits), one
 * durable commit after another: first 10 commits each, untimed (a group's first commit, a log's
 * first segment and a cold JIT are one-time costs, not the rate), then for BURST_TIMED_MS, counted.
 * The groups are deleted afterwards.
 */
export async function measureBurstCommits(
  store: OffsetStore,
): Promise<{ committers: number; commitsPerSecond: number; offsetRecords: number }> {
  let offsetRecords = 0;
  const commit = async (c: number, i: number): Promise<void> => {
    const count = 1 + ((c + i) % 10);
    await store.commitOffsets(
      `demo-burst-${c}`,
      Array.from({ length: count }, (_, b) => ({ tableId: 2, bucketId: b, offset: (i + 1) * 100 })),
    );
    offsetRecords += count;
  };
  const committers = Array.from({ length: BURST_COMMITTERS }, (_, c) => c);
  await Promise.all(
    committers.map(async (c) => {
      for (let i = 0; i < BURST_WARMUP_COMMITS_EACH; i++) await commit(c, i);
    }),
  );
  const startedMs = performance.now();
  const endMs = startedMs + BURST_TIMED_MS;
  const timed = await Promise.all(
    committers.map(async (c) => {
      let i = BURST_WARMUP_COMMITS_EACH;
      while (performance.now() < endMs) await commit(c, i++);
      return i - BURST_WARMUP_COMMITS_EACH;
    }),
  );
  const timedCommits = timed.reduce((sum, n) => sum + n, 0);
  const elapsedMs = performance.now() - startedMs;
  for (const c of committers) await store.deleteGroup(`demo-burst-${c}`);
  return {
    committers: BURST_COMMITTERS,
    commitsPerSecond: timedCommits / (elapsedMs / 1000),
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
