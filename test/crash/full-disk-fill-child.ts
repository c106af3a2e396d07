/**
 * Child of full-disk.test.ts: commits to a store in `dir` (a small file system, the 'checkpoint'
 * strategy) until the disk is full, compacting every 500 commits; sends `{ acked, failures }`:
 * every group whose commit was acknowledged (its offset is its number), and the messages of what
 * failed (commits, compactions, the close), then exits 0.
 */
import { OffsetStore } from '../../src/index.js';

const dir = process.argv[2]!;
const store = await OffsetStore.open({
  dir,
  bucketCount: 2,
  segmentBytesMax: 64 * 1024,
  compaction: { strategy: 'checkpoint', background: false, minDirtyRatio: 0 },
  onWarning: () => {},
});
const acked: number[] = [];
const failures: string[] = [];
let failed = 0;
for (let i = 0; failed < 50; i++) {
  try {
    await store.commitOffsets(`g${i}`, [
      { tableId: 1, bucketId: i % 4, offset: i, metadata: 'm'.repeat(200) },
    ]);
    acked.push(i);
  } catch (error) {
    failed++;
    failures.push((error as Error).message);
  }
  if (i % 500 === 499) await store.compact().catch((e: Error) => failures.push(e.message));
}
await store.close().catch((e: Error) => failures.push(e.message));
process.send!({ acked, failures });
await new Promise((resolve) => setTimeout(resolve, 100));
process.exit(0);
