/**
 * The LOCK file where the kernel lock is unsupported (a file system whose `holdLock` has none): a LOCK
 * file is this process's only once it is whole, so a write of it that fails leaves none behind, and a
 * torn one (no newline: its pid cut short, which may name some other live process) is stale.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  NodeFileSystem,
  type DirectoryLockResult,
  type FileHandle,
  type FileSystem,
  type OpenFlags,
} from '../../src/io/index.js';
import { DirectoryLock, forgetHeldDirectories } from '../../src/log/index.js';
import { tempDir } from '../support/temp-dir.js';

/** The real file system without the kernel lock; writes to LOCK write one byte, then fail (ENOSPC) while `full`. */
class PidFileOnlyFileSystem extends NodeFileSystem {
  full = false;

  override holdLock(): Promise<DirectoryLockResult> {
    return Promise.resolve('unsupported');
  }

  override async open(filePath: string, flags: OpenFlags): Promise<FileHandle> {
    const handle = await super.open(filePath, flags);
    if (!filePath.endsWith('LOCK')) return handle;
    return {
      ...handle,
      path: handle.path,
      writev: async (buffers, position) => {
        if (!this.full) return handle.writev(buffers, position);
        await handle.writev([buffers[0]!.subarray(0, 1)], position);
        throw Object.assign(new Error('ENOSPC: injected, no space left on device'), {
          code: 'ENOSPC',
        });
      },
      datasync: () => handle.datasync(),
      close: () => handle.close(),
      read: (b, o, l, p) => handle.read(b, o, l, p),
      truncate: (n) => handle.truncate(n),
      sizeBytes: () => handle.sizeBytes(),
    };
  }
}

describe('the LOCK file without a kernel lock', () => {
  it('leaves no LOCK file behind when writing it fails, so the next open takes the lock', async () => {
    const dir = tempDir();
    const fs = new PidFileOnlyFileSystem();
    fs.full = true;
    await expect(DirectoryLock.acquire(fs as FileSystem, dir)).rejects.toMatchObject({
      code: 'ENOSPC',
    });
    expect(existsSync(path.join(dir, 'LOCK'))).toBe(false);
    fs.full = false;
    const lock = await DirectoryLock.acquire(fs as FileSystem, dir);
    await lock.release();
  });

  it('takes over a torn LOCK file (no newline) even when the pid it was cut to is alive', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'LOCK'), '1'); // pid 1 is always alive
    const lock = await DirectoryLock.acquire(new PidFileOnlyFileSystem() as FileSystem, dir);
    await lock.release();
    forgetHeldDirectories();
  });

  it('takes over a LOCK that is not a file (a FIFO, which no process writes), as with the kernel lock (log verify takes it for replaced)', async () => {
    const dir = tempDir();
    execFileSync('mkfifo', [path.join(dir, 'LOCK')]);
    const lock = await DirectoryLock.acquire(new PidFileOnlyFileSystem() as FileSystem, dir);
    expect(readFileSync(path.join(dir, 'LOCK'), 'utf8')).toBe(`${process.pid}\n`);
    await lock.release();
  });
});
