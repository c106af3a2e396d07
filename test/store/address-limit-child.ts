/**
 * Opens a store of 16 offsets-buckets with the 'checkpoint' strategy in a process whose address
 * space is limited (the parent runs it under `ulimit -v`), commits, checkpoints and closes it, then
 * reports over stdout, as one JSON line, what happened. Usage: address-limit-child.ts <dir>.
 */
import { OffsetStore } from '../../src/index.js';

const dir = process.argv[2]!;
let result: string;
try {
  const store = await OffsetStore.open({
    dir,
    bucketCount: 16,
    compaction: { strategy: 'checkpoint', background: false },
  });
  for (let i = 0; i < 64; i++)
    await store.commitOffsets(`g${i}`, [{ tableId: 1, bucketId: 0, offset: i }]);
  await store.compact();
  await store.close();
  result = 'ok';
} catch (error) {
  result = String((error as Error).message);
}
process.stdout.write(`${JSON.stringify({ result })}\n`);
