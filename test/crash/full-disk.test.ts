/**
 * A full disk, for real: a small tmpfs, so it needs to mount one (root, as on CI; skipped otherwise). A
 * 'checkpoint' compaction that runs out of space fails as a compaction (LOG_STORAGE_ERROR), and the
 * process goes on: LMDB rejects more promises for a failed commit than the one the store awaits,
 * and one left unhandled ends a Node process.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exited, forkTs } from '../support/fork-child.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = path.join(import.meta.dirname, 'full-disk-child.ts');
/** Whether this process may mount a tmpfs (root, with the capability to mount: as on CI). */
function canMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  const at = mkdtempSync(path.join(tmpdir(), 'offset-store-mount-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', at], { stdio: 'ignore' });
    execFileSync('umount', [at]);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(at, { recursive: true, force: true });
  }
}
const mounted: string[] = [];

afterEach(() => {
  for (const at of mounted.splice(0)) execFileSync('umount', [at]);
});

/** A tmpfs of `size` (e.g. '4m') mounted in a new temporary folder. */
function smallDisk(size: string): string {
  const at = path.join(tempDir(), 'disk');
  mkdirSync(at);
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', at]);
  mounted.push(at);
  return at;
}

describe.skipIf(!canMount())('a full disk', () => {
  it("fails a 'checkpoint' compaction with LOG_STORAGE_ERROR, and the process lives on", async () => {
    const disk = smallDisk('4m');
    const child = forkTs(CHILD, [path.join(disk, 'store')]);
    const said = new Promise<unknown>((resolve) => child.once('message', resolve));
    const code = new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(await Promise.race([said, code.then((c) => `exited with ${c}`)])).toEqual({
      compact: 'LOG_STORAGE_ERROR',
    });
    await exited(child);
    expect(await code).toBe(0);
  }, 60_000);
});
