/**
 * The flushes of the real file-system port reach the kernel: with fdatasync made to fail (through
 * strace, test/support/strace.ts) on the file, both the calling-thread flush (`datasyncNow`) and the
 * thread-pool one (`datasync`) report the failure, and with fsync made to fail on the folder,
 * `syncDir` does. A flush that was never made would report success: a commit acknowledged as
 * durable that a power loss takes.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hasStrace, runTsWithFaults } from '../support/strace.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = fileURLToPath(new URL('./sync-calls-child.ts', import.meta.url));

function run(inject: string, paths: string[], dir: string) {
  const child = runTsWithFaults({ inject: [inject], paths }, [CHILD, dir]);
  expect(child.status, child.stderr).toBe(0);
  return JSON.parse(child.stdout) as Record<string, string>;
}

describe.runIf(process.platform === 'linux')('NodeFileSystem flushes', () => {
  it('makes the fdatasync of a file and the fsync of a folder: a failure of each is reported', () => {
    expect(hasStrace, 'this test needs the strace command (apt-get install strace)').toBe(true);
    const dir = path.join(tempDir(), 'd');
    mkdirSync(dir);
    expect(run('fdatasync:error=EIO', [path.join(dir, 'f')], dir)).toEqual({
      datasyncNow: 'EIO',
      datasync: 'EIO',
      syncDir: 'ok',
    });
    expect(run('fsync:error=EIO', [dir], dir)).toEqual({
      datasyncNow: 'ok',
      datasync: 'ok',
      syncDir: 'EIO',
    });
  });
});
