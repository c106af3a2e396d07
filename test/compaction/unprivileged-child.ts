/**
 * Child of unprivileged-workers.test.ts, run as another user: opens a one-bucket log-cleaner store in
 * argv[2] with the default worker policy, applies a history, compacts, and prints the bucket
 * report's `workerPriority` as JSON on stdout.
 */
import { OffsetStore } from '../../src/index.js';
import { applyHistory, compactionOptions, generateHistory } from './compaction-fixtures.js';

const options = compactionOptions(process.argv[2]!, 'log-cleaner', {
  bucketCount: 1,
  segmentBytesMax: 1024,
});
const store = await OffsetStore.open(options);
try {
  await applyHistory(store, generateHistory(47, 400, 10, 10));
  const report = await store.compact();
  process.stdout.write(
    `${JSON.stringify({ workerPriority: report.buckets[0]!.workerPriority })}\n`,
  );
} finally {
  await store.close();
}
