/**
 * Read-only test child: opens the store in `dir` (strategy `strategy`, compacting often) and commits
 * group `g<i % groups>` bucket 0 at offsets 1, 2, 3... one after another, reporting the highest offset
 * acknowledged after every commit, until it is told to stop; then it closes the store and exits.
 */
import { OffsetStore } from '../../src/index.js';

const [dir, strategy, groupsArg] = process.argv.slice(2);
const groups = Number(groupsArg);
const store = await OffsetStore.open({
  dir: dir!,
  bucketCount: 4,
  segmentBytesMax: 4096,
  compaction: { strategy: strategy as 'log-cleaner', intervalMs: 50, minDirtyRatio: 0.01 },
});
let stopping = false;
process.on('message', (message: { type: string }) => {
  if (message.type === 'stop') stopping = true;
});
process.send!({ type: 'open' });
for (let offset = 1; !stopping; offset++) {
  await store.commitOffsets(`g${offset % groups}`, [{ tableId: 1, bucketId: 0, offset }]);
  process.send!({ type: 'acked', offset });
}
await store.close();
process.send!({ type: 'closed' });
process.disconnect();
