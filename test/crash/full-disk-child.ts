/**
 * Child of full-disk.test.ts: on a store in `dir` (a small file system), with the 'checkpoint'
 * strategy, takes checkpoints, then fills the file system but for 64 KiB, commits, and compacts
 * again. Sends `{ compact: <code or 'ok'> }` and exits 0 half a second later, unless something it
 * never saw (an unhandled rejection) ended the process first.
 */
import * as fs from 'node:fs';
import { OffsetStore } from '../../src/index.js';

const dir = process.argv[2]!;
const store = await OffsetStore.open({
  dir,
  bucketCount: 1,
  durability: 'os',
  segmentBytesMax: 16 * 1024,
  compaction: { strategy: 'checkpoint', background: false },
  onWarning: () => {},
});
let offset = 0;
for (let round = 0; round < 2; round++) {
  for (let i = 0; i < 300; i++)
    await store.commitOffsets(`g${i % 50}`, [
      { tableId: 1, bucketId: i % 7, offset: ++offset, metadata: 'm'.repeat(200) },
    ]);
  await store.compact();
}
const filler = fs.openSync(`${dir}.filler`, 'w');
try {
  for (;;) fs.writeSync(filler, Buffer.alloc(4096, 1));
} catch {
  // Full.
}
fs.ftruncateSync(filler, fs.fstatSync(filler).size - 64 * 1024);
fs.closeSync(filler);
for (let i = 0; i < 100; i++) {
  try {
    await store.commitOffsets(
      `h${i}`,
      Array.from({ length: 100 }, (_, b) => ({ tableId: 2, bucketId: b, offset: ++offset })),
    );
  } catch {
    break;
  }
}
const compact = await store.compact().then(
  () => 'ok',
  (error: { code?: string }) => error.code ?? String(error),
);
await new Promise((resolve) => setTimeout(resolve, 500));
process.send!({ compact });
await store.close().catch(() => {});
process.exit(0);
