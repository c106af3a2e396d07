/**
 * A full disk, for real: a small tmpfs, so it needs to mount one (root, as on CI; skipped otherwise). A
 * 'checkpoint' compaction that runs out of space fails as a compaction (LOG_STORAGE_ERROR), and the
 * process goes on: LMDB rejects more promises for a failed commit than the one the store awaits,
 * and one left unhandled ends a Node process. A store filled until its commits fail loses none it
 * acknowledged: a read-only open reads them on the full disk, and a writable one once there is room.
 */
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { exited, forkTs } from '../support/fork-child.js';
import { Mounts, canMount } from '../support/mounts.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = path.join(import.meta.dirname, 'full-disk-child.ts');
const FILL_CHILD = path.join(import.meta.dirname, 'full-disk-fill-child.ts');
const mounts = new Mounts();
afterEach(() => mounts.unmountAll());

/** A tmpfs of `size` (e.g. '4m') mounted in a new temporary folder. */
function smallDisk(size: string): string {
  return mounts.mount(['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs'], path.join(tempDir(), 'disk'));
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

  it('loses no acknowledged commit: what failed names the full disk, an open says to free space or read only, a read-only open reads everything, and with room again every commit is there', async () => {
    const disk = smallDisk('3m');
    const dir = path.join(disk, 'store');
    const child = forkTs(FILL_CHILD, [dir]);
    const said = new Promise<{ acked: number[]; failures: string[] }>((resolve) =>
      child.once('message', (m) => resolve(m as { acked: number[]; failures: string[] })),
    );
    const code = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const { acked, failures } = await said;
    expect(await code).toBe(0);
    expect(acked.length).toBeGreaterThan(1000);
    expect(failures.join('\n')).toMatch(/ENOSPC/);
    // LMDB says EIO where the disk was full: the store adds how much room is left.
    const lmdbFailures = failures.filter((f) => f.includes('LMDB commit failed'));
    expect(lmdbFailures.length, 'a checkpoint failed for want of room').toBeGreaterThan(0);
    for (const failure of lmdbFailures) expect(failure).toMatch(/has only \d+ bytes free/);
    // Its close freed what it had preallocated: the disk is filled up again.
    const filler = path.join(disk, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(16 << 20));
    } catch {
      // Full.
    }
    const store = OffsetStore.open({ dir });
    await expect(store).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/ENOSPC.*is full.*free space.*readOnly: true/),
    });
    const expectEveryCommit = async (store: OffsetStore) => {
      for (const i of acked)
        expect((await store.fetchOffsets(`g${i}`))[0]?.offset, `g${i}`).toBe(i);
      await store.close();
    };
    await expectEveryCommit(await OffsetStore.open({ dir, readOnly: true }));
    rmSync(filler);
    execFileSync('mount', ['-o', 'remount,size=16m', disk]);
    await expectEveryCommit(await OffsetStore.open({ dir }));
  }, 90_000);
});
