/**
 * Opens a store of 700 offsets-buckets in a process whose descriptor limit is too low for it
 * (the parent runs it under `ulimit -n 512`; a lower limit would starve the module loader
 * too, which reads many source files at once), then reports over stdout, as one JSON line, what the
 * failed open threw and what it left behind: descriptors, the LOCK file, and whether the directory
 * lock can be taken again. Usage: open-emfile-child.ts <dir> [compaction strategy].
 */
import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { OffsetStore } from '../../src/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { DirectoryLock } from '../../src/log/index.js';

const dir = process.argv[2]!;
const openDescriptors = (): number => readdirSync('/proc/self/fd').length;
const descriptorsBefore = openDescriptors();
let failure: { name: string; code: unknown; message: string } | null = null;
try {
  const store = await OffsetStore.open({
    dir,
    bucketCount: 700,
    compaction: { strategy: (process.argv[3] ?? 'log-cleaner') as 'log-cleaner' },
  });
  await store.close();
} catch (error) {
  failure = {
    name: (error as Error).name,
    code: (error as { code?: unknown }).code,
    message: (error as Error).message,
  };
}
const descriptorsAfter = openDescriptors();
const lockFileLeft = existsSync(path.join(dir, 'LOCK'));
let relock: string;
try {
  await (await DirectoryLock.acquire(new NodeFileSystem(), dir)).release();
  relock = 'ok';
} catch (error) {
  relock = String((error as Error).message);
}
process.stdout.write(
  `${JSON.stringify({ failure, descriptorsBefore, descriptorsAfter, lockFileLeft, relock })}\n`,
);
