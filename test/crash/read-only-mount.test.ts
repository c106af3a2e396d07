/**
 * A store on a file system mounted read-only (a snapshot, a recovery mount), for real: a tmpfs
 * remounted read-only, so it needs to mount one (root, as on CI; skipped otherwise). The commands
 * that only read work there without `--read-only`, saying they read without the lock; a command that
 * writes fails naming the file system's refusal.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { Mounts, canMount } from '../support/mounts.js';
import { tempDir } from '../support/temp-dir.js';
import { runCliCaptured } from '../support/run-cli.js';

const mounts = new Mounts();
afterEach(() => mounts.unmountAll());

const run = runCliCaptured;

describe.skipIf(!canMount())('a store on a read-only mount', () => {
  it('is read by the commands that only read, without --read-only; a command that writes is refused', async () => {
    const disk = mounts.mount(
      ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs'],
      path.join(tempDir(), 'disk'),
    );
    const dir = path.join(disk, 'store');
    const store = await OffsetStore.open({ dir, compaction: { background: false } });
    await store.commitOffsets('orders-readers', [{ tableId: 3, bucketId: 1, offset: 42 }]);
    await store.close();
    execFileSync('mount', ['-o', 'remount,ro', disk]);
    for (const args of [['groups', 'list'], ['groups', 'describe', 'orders-readers'], ['stats']]) {
      const { code, stdout, stderr } = await run([...args, '--dir', dir]);
      expect(code, stderr).toBe(0);
      expect(stderr).toMatch(/cannot be written here \(EROFS\): read without its lock/);
      if (args[0] === 'groups') expect(stdout).toContain('orders-readers');
    }
    const described = await run(['groups', 'describe', 'orders-readers', '--dir', dir, '--json']);
    expect(JSON.stringify(JSON.parse(described.stdout))).toContain('42');
    const refused = await run(['groups', 'delete', 'orders-readers', '--dir', dir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/EROFS/);
  });

  it('on a full disk too: the commands that only read work without --read-only (the lock file cannot be written), one that writes names the full disk and --read-only', async () => {
    const disk = mounts.mount(
      ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs'],
      path.join(tempDir(), 'disk'),
    );
    const dir = path.join(disk, 'store');
    const store = await OffsetStore.open({
      dir,
      bucketCount: 1,
      compaction: { background: false },
    });
    await store.commitOffsets('orders-readers', [{ tableId: 3, bucketId: 1, offset: 42 }]);
    await store.close();
    // Fill the file system: the open's lock file then has no room.
    try {
      writeFileSync(path.join(disk, 'filler'), Buffer.alloc(4 * 1024 * 1024));
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    }
    for (const args of [['groups', 'list'], ['groups', 'describe', 'orders-readers'], ['stats']]) {
      const { code, stdout, stderr } = await run([...args, '--dir', dir]);
      expect(code, stderr).toBe(0);
      expect(stderr).toMatch(/cannot be written here \(ENOSPC\): read without its lock/);
      if (args[0] === 'groups') expect(stdout).toContain('orders-readers');
    }
    const refused = await run(['groups', 'delete', 'orders-readers', '--dir', dir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/ENOSPC.*is full: free space .*--read-only/);
  });
});
