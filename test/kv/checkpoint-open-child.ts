/**
 * Child of checkpoint-no-room.test.ts and checkpoint-lmdb-files.test.ts: opens the store with
 * checkpoints in argv[2] (to read only with argv[3] 'read-only') and prints how the open ended, as
 * one line of JSON ({ opened: true } or the error's code and message). LMDB may end the process.
 */
import { OffsetStore } from '../../src/index.js';

const dir = process.argv[2]!;
try {
  const store = await OffsetStore.open({
    dir,
    bucketCount: 2,
    compaction: { strategy: 'checkpoint' },
    readOnly: process.argv[3] === 'read-only',
  });
  await store.close();
  process.stdout.write(JSON.stringify({ opened: true }) + '\n');
} catch (error) {
  const { code, message } = error as { code?: string; message: string };
  process.stdout.write(JSON.stringify({ code, message }) + '\n');
}
