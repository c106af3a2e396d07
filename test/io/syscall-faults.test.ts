/**
 * Real system calls that fail (through strace, test/support/strace.ts): what a user is told names
 * the file that failed, whichever way the failure reaches them. A read made on a descriptor fails
 * with a Node error that names no path ("EIO: i/o error, read"); the file-system port adds it.
 */
import { readdirSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { hasStrace, runTsWithFaults } from '../support/strace.js';
import { tempDir } from '../support/temp-dir.js';

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const OPEN_CHECKPOINTED = fileURLToPath(new URL('../kv/checkpoint-open-child.ts', import.meta.url));

describe.runIf(process.platform === 'linux')('real system-call failures', () => {
  it('a read that fails on a segment is named by its file in `log verify` and in an open', async () => {
    expect(hasStrace, 'this test needs the strace command (apt-get install strace)').toBe(true);
    const dir = tempDir();
    const store = await OffsetStore.open({ dir, bucketCount: 1, segmentBytesMax: 1024 });
    for (let i = 0; i < 50; i++)
      await store.commitOffsets('g', [{ tableId: 1, bucketId: i % 3, offset: i }]);
    await store.close();
    const bucketDir = path.join(dir, 'buckets', '000');
    const segments = readdirSync(bucketDir)
      .filter((f) => f.endsWith('.log'))
      .map((f) => path.join(bucketDir, f));
    const faults = { inject: ['pread64:error=EIO'], paths: segments };
    for (const command of [['log', 'verify'], ['stats']]) {
      const run = runTsWithFaults(faults, [CLI, ...command, '--dir', dir]);
      expect(run.status, `${command.join(' ')}: ${run.stderr}`).toBe(1);
      expect(run.stderr).toMatch(
        new RegExp(`LOG_STORAGE_ERROR: .*EIO: i/o error, read '${bucketDir}/\\d{20}\\.log'`),
      );
      expect(run.stderr).not.toMatch(/\n\s+at /); // no stack
    }
  });

  it("LMDB's lock file that this process may not open to write is refused with LOG_STORAGE_ERROR naming it, the process going on (lmdb-js's open ended it)", async () => {
    expect(hasStrace, 'this test needs the strace command (apt-get install strace)').toBe(true);
    const dir = tempDir();
    const options = { dir, bucketCount: 2, compaction: { strategy: 'checkpoint' as const } };
    const store = await OffsetStore.open(options);
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 7 }]);
    await store.close();
    const lockFile = path.join(dir, 'buckets', '001', 'checkpoint', 'lock.mdb');
    // As for a file another user left (a root process opening it is not refused).
    const run = runTsWithFaults({ inject: ['openat:error=EACCES'], paths: [lockFile] }, [
      OPEN_CHECKPOINTED,
      dir,
    ]);
    expect(run.signal, run.stderr).toBeNull();
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toEqual({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringContaining(
        `${lockFile} cannot be opened to write (EACCES: permission denied, open '${lockFile}')`,
      ),
    });
    const reopened = await OffsetStore.open(options);
    expect((await reopened.fetchOffsets('g'))[0]?.offset).toBe(7);
    await reopened.close();
  });
});
