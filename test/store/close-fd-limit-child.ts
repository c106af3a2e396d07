/**
 * Opens a store of 64 offsets-buckets with the 'checkpoint' strategy, then lowers this process's
 * own open-file limit to what it holds plus a few (util-linux's prlimit), commits to every bucket
 * and closes (each bucket writes its last checkpoint). Reports over stdout, as one JSON line, the
 * descriptors held and what the close did. Usage: close-fd-limit-child.ts <dir> <headroom>.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { OffsetStore } from '../../src/index.js';

const [dir, headroom] = [process.argv[2]!, Number(process.argv[3])];
const store = await OffsetStore.open({
  dir,
  bucketCount: 64,
  compaction: { strategy: 'checkpoint', background: false },
});
const held = readdirSync('/proc/self/fd').length;
execFileSync('prlimit', [`--pid=${process.pid}`, `--nofile=${held + headroom}:`]);
let close: string;
try {
  for (let i = 0; i < 400; i++)
    await store.commitOffsets(`g${i}`, [{ tableId: 1, bucketId: 0, offset: i }]);
  await store.close();
  close = 'ok';
} catch (error) {
  close = String((error as Error).message);
}
process.stdout.write(`${JSON.stringify({ held, close })}\n`);
