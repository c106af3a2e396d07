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
});
