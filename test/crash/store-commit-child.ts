/**
 * Store crash-test child: COMMITTERS concurrent committers commit planned multi-bucket commits
 * (see store-commit-plan.ts) and report each acknowledged commit number over IPC until killed.
 * argv: dir, seed, first commit number.
 */
import { OffsetStore } from '../../src/index.js';
import { BUCKET_COUNT, COMMITTERS, plannedCommit } from './store-commit-plan.js';

const [dir, seedArg, baseArg] = process.argv.slice(2);
const seed = Number(seedArg);
const base = Number(baseArg);
const store = await OffsetStore.open({
  dir: dir!,
  bucketCount: BUCKET_COUNT,
  segmentBytesMax: 16_384,
  compaction: { strategy: 'none' },
});
process.send!({ type: 'ready' });

async function committer(j: number): Promise<void> {
  for (let k = 0; ; k++) {
    const commit = plannedCommit(seed, base + j + k * COMMITTERS);
    await store.commitOffsets(commit.groupId, commit.offsets);
    process.send!({ type: 'ack', n: commit.n });
  }
}

try {
  await Promise.all(Array.from({ length: COMMITTERS }, (_, j) => committer(j)));
} catch (error) {
  process.send!({ type: 'error', message: String(error) });
  process.exitCode = 1;
}
