/**
 * Writes that fail in the kernel's writeback, for real: ext4 on a loop device whose backing file
 * lies on a small tmpfs, so that once the tmpfs is full the device fails the writes the page cache
 * sends it (EIO from fdatasync, pages marked clean, and ext4 aborting its journal and going
 * read-only), as a failing disk does. The process is then killed and the device's contents are
 * what a power loss would leave: they are checked (e2fsck, as a reboot would) and opened, and every
 * commit that was acknowledged must be there. Needs root with mount, losetup, mkfs.ext4 and e2fsck
 * (as on CI); skipped otherwise.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { exited, forkTs } from '../support/fork-child.js';
import { Mounts, canMountLoop } from '../support/mounts.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = path.join(import.meta.dirname, 'failed-writeback-child.ts');

const mounts = new Mounts();
afterEach(() => mounts.unmountAll());
const mount = (args: string[], at: string) => mounts.mount(args, at);

describe.skipIf(!canMountLoop())('writes failing in the writeback of a real ext4', () => {
  for (const strategy of ['log-cleaner', 'checkpoint'] as const)
    it(`lose no acknowledged commit: the device as the failure left it opens with every one (compaction ${strategy})`, async () => {
      const root = tempDir();
      const backing = path.join(root, 'backing');
      mount(['-t', 'tmpfs', '-o', 'size=12m', 'tmpfs'], backing);
      const image = path.join(backing, 'disk.img');
      execFileSync('truncate', ['-s', '64M', image]); // more than the tmpfs holds
      execFileSync('mkfs.ext4', ['-q', '-F', image], { stdio: 'ignore' });
      const disk = path.join(root, 'disk');
      mount(['-o', 'loop', image], disk);

      const acks = path.join(root, 'acks');
      const child = forkTs(CHILD, [path.join(disk, 'store'), acks, strategy]);
      const failing = await Promise.race([
        new Promise<boolean>((resolve) => child.once('message', () => resolve(true))),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 60_000)),
      ]);
      // A little more of failing writes, then the process ends as in a crash.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      child.kill('SIGKILL');
      await exited(child);
      expect(failing, 'the device failed writes within a minute').toBe(true);

      // The device's contents, as a power loss now would leave them.
      const lost = path.join(root, 'after.img');
      copyFileSync(image, lost);
      mounts.unmount(disk);
      const fsck = spawnSync('e2fsck', ['-fy', lost], { encoding: 'utf8' });
      expect(fsck.status, fsck.stdout).toBeLessThan(4); // 0: clean, 1: errors corrected
      const after = path.join(root, 'after');
      mount(['-o', 'loop', lost], after);

      const last = new Map<string, number>();
      for (const line of readFileSync(acks, 'utf8').split('\n')) {
        const [groupId, bucketId, offset] = line.split(' ');
        if (offset === undefined) continue;
        const key = `${groupId} ${bucketId}`;
        last.set(key, Math.max(last.get(key) ?? -1, Number(offset)));
      }
      expect(last.size).toBeGreaterThan(1000);
      const store = await OffsetStore.open({ dir: path.join(after, 'store'), onWarning: () => {} });
      const wrong: string[] = [];
      for (const [key, offset] of last) {
        const [groupId, bucketId] = key.split(' ') as [string, string];
        const [found] = await store.fetchOffsets(groupId, [
          { tableId: 1, bucketId: Number(bucketId) },
        ]);
        if (found == null || found.offset < offset)
          wrong.push(`${key}: ${found?.offset ?? 'none'}, acknowledged ${offset}`);
      }
      await store.close();
      expect(wrong).toEqual([]);
      rmSync(lost);
    }, 120_000);
});
