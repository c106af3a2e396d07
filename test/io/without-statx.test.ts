/**
 * A store on a system where Node reads no file birth times: Linux without the statx system call
 * (kernels before 4.11, or a seccomp profile that refuses it), where Node reports each file's ctime
 * as its birth time. The ctime moves with every write, chmod, rename and entry made in a directory,
 * so a file identity built on it changed under the store's own feet: the store refused to open,
 * taking its own directory for one renamed away, and a compaction's renamed outputs for lost ones.
 * The child runs under strace, which makes every statx fail with ENOSYS as such a kernel would.
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { birthTimeIsReal, fileIdentity } from '../../src/io/file-identity.js';
import { hasStrace, runTsWithFaults } from '../support/strace.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = fileURLToPath(new URL('./without-statx-child.ts', import.meta.url));

describe('file identity where Node reads no birth time', () => {
  it('trusts a birth time only where the system reports a real one', () => {
    // With statx, procfs reports no birth time (0); without it, Node reports the ctime there.
    expect(birthTimeIsReal('linux', { birthtimeNs: 0n, ctimeNs: 17n })).toBe(true);
    expect(birthTimeIsReal('linux', { birthtimeNs: 17n, ctimeNs: 17n })).toBe(false);
    expect(birthTimeIsReal('linux', undefined)).toBe(false);
    // A probe that reports neither a birth time nor a ctime tells nothing: not trusted.
    expect(birthTimeIsReal('linux', { birthtimeNs: 0n, ctimeNs: 0n })).toBe(false);
    expect(birthTimeIsReal('darwin', undefined)).toBe(true);
    expect(birthTimeIsReal('aix', undefined)).toBe(false);
    const stats = { dev: 1n, ino: 2n, birthtimeNs: 3n };
    expect(fileIdentity(stats, true)).toBe('1:2:3');
    expect(fileIdentity(stats, false)).toBe('1:2:-');
  });

  it.runIf(process.platform === 'linux')(
    'opens, commits across segment rolls, compacts and reopens a store with statx refused',
    () => {
      expect(hasStrace, 'this test needs the strace command (apt-get install strace)').toBe(true);
      const root = tempDir();
      const dir = path.join(root, 'store');
      const run = runTsWithFaults({ inject: ['statx:error=ENOSYS'] }, [CHILD, dir]);
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const seen = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
      expect(seen.birthTimeFollowsCtime, 'statx was not refused: the test proves nothing').toBe(
        true,
      );
      expect(seen.compactedBuckets).toBe(4);
      expect(seen.bytesAfter).toBeLessThan(seen.bytesBefore);
      expect(seen.offsets).toEqual([1992, 1993, 1994, 1995, 1996, 1997, 1998, 1999]);
    },
    120_000,
  );
});
