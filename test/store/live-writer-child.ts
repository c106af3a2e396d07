/**
 * Read-only test child: opens the store in `dir` (strategy `strategy`, segments of `segmentBytes`,
 * compacting often) and commits group `g<offset % groups>` bucket 0 at offsets 1, 2, 3..., four
 * commits in flight, reporting each offset as it starts and once it is acknowledged, until it is
 * told to stop; then it closes the store and exits.
 */
import { OffsetStore } from '../../src/index.js';

const [dir, strategy, groupsArg, segmentBytesArg] = process.argv.slice(2);
const groups = Number(groupsArg);
const store = await OffsetStore.open({
  dir: dir!,
  bucketCount: 4,
  segmentBytesMax: Number(segmentBytesArg),
  compaction: { strategy: strategy as 'log-cleaner', intervalMs: 50, minDirtyRatio: 0.01 },
});
let stopping = false;
process.on('message', (message: { type: string }) => {
  if (message.type === 'stop') stopping = true;
});
process.send!({ type: 'open' });
let next = 1;
const committer = async () => {
  while (!stopping) {
    const offset = next++;
    process.send!({ type: 'started', offset });
    await store.commitOffsets(`g${offset % groups}`, [
      { tableId: 1, bucketId: 0, offset, metadata: 'x'.repeat(offset % 50) },
    ]);
    process.send!({ type: 'acked', offset });
  }
};
await Promise.all(Array.from({ length: 4 }, committer));
await store.close();
process.send!({ type: 'closed' });
process.disconnect();
