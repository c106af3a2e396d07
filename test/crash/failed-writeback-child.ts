/**
 * Child of failed-writeback.test.ts: 24 committers over a store in argv[2] (on a file system whose
 * device fails its writes once it fills), compacted in the background with the strategy argv[4],
 * with the commit journal or without (argv[5]: 'journal' or 'no-journal'), each commit
 * acknowledged written to the file argv[3] (on another file system) as
 * `<group> <bucket> <offset> <time>` once it resolved (time: wall clock in milliseconds); sends
 * `{ failedAtMs }` to the parent at the first commit refused for a storage failure, and goes on
 * until killed.
 */
import * as fs from 'node:fs';
import { OffsetStore } from '../../src/index.js';

const [dir, ackFile, strategy, journal] = process.argv.slice(2) as [
  string,
  string,
  'log-cleaner' | 'checkpoint',
  'journal' | 'no-journal',
];
const acks = fs.openSync(ackFile, 'w');
const nowMs = () => performance.timeOrigin + performance.now();
const store = await OffsetStore.open({
  dir,
  bucketCount: 8,
  segmentBytesMax: 256 * 1024,
  commitJournal: journal === 'journal',
  compaction: { strategy, background: true, intervalMs: 300, minDirtyRatio: 0 },
  onWarning: () => {},
});
let told = false;
await Promise.all(
  Array.from({ length: 24 }, async (_, w) => {
    for (let i = 0; ; i++) {
      const groupId = `w${w}-${i % 300}`;
      const bucketId = i % 4;
      try {
        await store.commitOffsets(groupId, [
          { tableId: 1, bucketId, offset: i, metadata: 'm'.repeat(100) },
        ]);
        fs.writeSync(acks, `${groupId} ${bucketId} ${i} ${nowMs()}\n`);
      } catch (error) {
        if (!told && (error as { code?: string }).code === 'LOG_STORAGE_ERROR') {
          told = true;
          process.send!({ failedAtMs: nowMs() });
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
  }),
);
