/**
 * Writes that fail in the kernel's writeback, for real: ext4 on a loop device whose backing file
 * lies on a small tmpfs, so that once the tmpfs is full the device fails the writes the page cache
 * sends it (EIO or ENOSPC from fdatasync, pages marked clean), as a failing disk does. The process
 * is then killed and the device's contents are what a power loss would leave: they are checked
 * (e2fsck, as a reboot would) and opened, and every commit that was acknowledged must be there.
 * Needs root with mount, losetup, mkfs.ext4, debugfs and e2fsck (as on CI); skipped otherwise.
 *
 * The device must fail a write whole or not at all. The loop driver completes a write that its
 * backing file took only part of (a tmpfs that filled in the middle of it) as a success, and the
 * rest of the write is then simply not there: an fdatasync "succeeds" for bytes no device holds,
 * which no program can tell. So the loop device is given requests of one page at most, and ext4
 * blocks of one page, so that each request is one page of the tmpfs: written, or refused.
 *
 * Two devices: on the first, any write may fail, ext4's own journal's first of all, and ext4 then
 * aborts its journal and turns read-only at once; on the second, the blocks of ext4's journal are
 * written before the test (zeros, as mkfs leaves them), so the writes that fail are the store's
 * data and new metadata, fdatasyncs fail file by file, and ext4 turns read-only only once it finds
 * that a metadata write failed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { exited, forkTs } from '../support/fork-child.js';
import { Mounts, canMountLoop } from '../support/mounts.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = path.join(import.meta.dirname, 'failed-writeback-child.ts');
/** A page of the tmpfs the device's image lies on, and the size of every ext4 block and request. */
const PAGE_BYTES = 4096;

/** Limits the requests of the loop device that `image` is attached to to one page each. */
function onePagePerRequest(image: string): void {
  const device = execFileSync('losetup', ['-j', image], { encoding: 'utf8' }).split(':')[0]!;
  const limit = `/sys/block/${path.basename(device)}/queue/max_sectors_kb`;
  writeFileSync(limit, String(PAGE_BYTES / 1024));
  expect(readFileSync(limit, 'utf8').trim()).toBe(String(PAGE_BYTES / 1024));
}
/**
 * Writes zeros over the log area of ext4's journal in `image` (all but the journal's superblock),
 * so that its blocks are allocated in the backing tmpfs and the device never fails them.
 */
function writeJournalBlocks(image: string, blockBytes: number): void {
  const stat = execFileSync('debugfs', ['-R', 'stat <8>', image], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const extents = [...stat.matchAll(/\((\d+)-(\d+)\):(\d+)-(\d+)/g)];
  expect(extents.length, stat).toBeGreaterThan(0);
  for (const [, first, , start, end] of extents) {
    const skip = Number(first) === 0 ? 1 : 0; // logical block 0: the journal's superblock
    execFileSync(
      'dd',
      [
        'if=/dev/zero',
        `of=${image}`,
        `bs=${blockBytes}`,
        `seek=${Number(start) + skip}`,
        `count=${Number(end) - Number(start) + 1 - skip}`,
        'conv=notrunc',
      ],
      { stdio: 'ignore' },
    );
  }
}

/** `ms` (from a moment) in words: "12 ms after", "3 ms before". */
const when = (ms: number) => `${Math.abs(Math.round(ms))} ms ${ms < 0 ? 'before' : 'after'}`;

const mounts = new Mounts();
afterEach(() => mounts.unmountAll());
const mount = (args: string[], at: string) => mounts.mount(args, at);

const hasDebugfs = spawnSync('debugfs', ['-V']).error === undefined;

describe.skipIf(!canMountLoop() || !hasDebugfs)(
  'writes failing in the writeback of a real ext4',
  () => {
    const cases = [
      ...(['log-cleaner', 'checkpoint'] as const).flatMap((strategy) => [
        { journalFails: true, strategy, journal: 'journal' },
        { journalFails: true, strategy, journal: 'no-journal' },
        { journalFails: false, strategy, journal: 'journal' },
      ]),
    ] as const;
    for (const { journalFails, strategy, journal } of cases)
      it(`lose no acknowledged commit${journalFails ? '' : " (ext4's own journal written ahead)"}: the device as the failure left it opens with every one (compaction ${strategy}, ${journal === 'journal' ? 'commit journal' : 'no commit journal'})`, async () => {
        const root = tempDir();
        const backing = path.join(root, 'backing');
        // The journal's 4 MiB written ahead take that much more room on the tmpfs.
        mount(['-t', 'tmpfs', '-o', `size=${journalFails ? 12 : 16}m`, 'tmpfs'], backing);
        const image = path.join(backing, 'disk.img');
        execFileSync('truncate', ['-s', '64M', image]); // more than the tmpfs holds
        execFileSync('mkfs.ext4', ['-q', '-F', '-b', String(PAGE_BYTES), image], {
          stdio: 'ignore',
        });
        if (!journalFails) writeJournalBlocks(image, PAGE_BYTES);
        const disk = path.join(root, 'disk');
        mount(['-o', 'loop', image], disk);
        onePagePerRequest(image);

        const acks = path.join(root, 'acks');
        const child = forkTs(CHILD, [path.join(disk, 'store'), acks, strategy, journal]);
        const failedAtMs = await Promise.race([
          new Promise<number>((resolve) =>
            child.once('message', (m) => resolve((m as { failedAtMs: number }).failedAtMs)),
          ),
          new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 60_000)),
        ]);
        // A little more of failing writes, then the process ends as in a crash.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        child.kill('SIGKILL');
        await exited(child);
        expect(failedAtMs, 'the device failed writes within a minute').toBeDefined();

        // The device's contents, as a power loss now would leave them.
        const lost = path.join(root, 'after.img');
        copyFileSync(image, lost);
        mounts.unmount(disk);
        const fsck = spawnSync('e2fsck', ['-fy', lost], { encoding: 'utf8' });
        expect(fsck.status, fsck.stdout).toBeLessThan(4); // 0: clean, 1: errors corrected
        const after = path.join(root, 'after');
        mount(['-o', 'loop', lost], after);

        const last = new Map<string, { offset: number; atMs: number }>();
        for (const line of readFileSync(acks, 'utf8').split('\n')) {
          const [groupId, bucketId, offset, atMs] = line.split(' ');
          if (atMs === undefined) continue;
          const key = `${groupId} ${bucketId}`;
          if (Number(offset) > (last.get(key)?.offset ?? -1))
            last.set(key, { offset: Number(offset), atMs: Number(atMs) });
        }
        expect(last.size).toBeGreaterThan(1000);
        const store = await OffsetStore.open({
          dir: path.join(after, 'store'),
          onWarning: () => {},
        });
        const wrong: string[] = [];
        for (const [key, { offset, atMs }] of last) {
          const [groupId, bucketId] = key.split(' ') as [string, string];
          const [found] = await store.fetchOffsets(groupId, [
            { tableId: 1, bucketId: Number(bucketId) },
          ]);
          if (found != null && found.offset >= offset) continue;
          wrong.push(
            `${key}: ${found?.offset ?? 'none'}, acknowledged ${offset} ${when(atMs - failedAtMs!)} the first refused commit`,
          );
        }
        await store.close();
        expect(wrong).toEqual([]);
        rmSync(lost);
      }, 120_000);
  },
);
