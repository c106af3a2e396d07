/**
 * The kernel-held directory lock names a directory by what stays the same while it lives (device,
 * inode, birth time) and by its real path. A directory deleted while its lock is held must not
 * lock the new directory the file system gives the same inode (ext4 hands a freed directory inode
 * to the next directory made at once).
 */
import { mkdirSync, rmdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { expect, it } from 'vitest';
import { holdDirectoryLock } from '../../src/io/process-lock.js';
import { thisProcessHasBirthTime } from '../../src/io/file-identity.js';
import { tempDir } from '../support/temp-dir.js';

it.runIf(process.platform === 'linux')(
  'a lock held on a deleted directory does not lock a new directory that reuses its inode',
  async (context) => {
    const parent = tempDir();
    const first = path.join(parent, 'first');
    mkdirSync(first);
    const inode = statSync(first).ino;
    const held = await holdDirectoryLock(first);
    expect(held).not.toBe('held-elsewhere');
    rmdirSync(first);
    let reused: string | undefined;
    for (let i = 0; i < 20 && reused === undefined; i++) {
      const candidate = path.join(parent, `next-${i}`);
      mkdirSync(candidate);
      if (statSync(candidate).ino === inode) reused = candidate;
    }
    // A file system that does not hand the inode on (tmpfs numbers inodes afresh) has no case, and
    // where the system reports no birth time, the inode is all that names the directory
    // (src/io/file-identity.ts): the new one is then taken for the deleted one.
    if (reused === undefined || !thisProcessHasBirthTime()) {
      if (typeof held === 'object') await held.release();
      context.skip();
    }
    const second = await holdDirectoryLock(reused!);
    expect(second).not.toBe('held-elsewhere');
    if (typeof second === 'object') await second.release();
    if (typeof held === 'object') await held.release();
  },
);
