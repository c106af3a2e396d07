/**
 * DirectoryLock across processes: a second live process is refused with STORE_LOCKED and gets in once
 * the holder is SIGKILLed; on Linux the kernel lock decides (a removed LOCK file or a dead pid in it
 * lets no second process in; a LOCK naming a live process that holds no lock is taken over); without a
 * kernel lock a LOCK naming a live process refuses; of several racers for a stale lock exactly one wins.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore } from '../../src/index.js';
import { NodeFileSystem, type OpenFlags } from '../../src/io/index.js';
import { DirectoryLock } from '../../src/log/index.js';
import { exited, forkTs } from '../support/fork-child.js';
import { tempDir } from '../support/temp-dir.js';

const CHILD = path.join(import.meta.dirname, 'lock-holder-child.ts');

function firstMessage(child: ReturnType<typeof forkTs>): Promise<{ type: string; code?: string }> {
  return new Promise((resolve) => child.once('message', resolve as never));
}

describe('DirectoryLock', () => {
  it('refuses a second live process with STORE_LOCKED and lets a new one in after the holder is SIGKILLed', async () => {
    const dir = tempDir();
    const holder = forkTs(CHILD, [dir]);
    expect(await firstMessage(holder)).toEqual({ type: 'locked' });
    const second = forkTs(CHILD, [dir]);
    expect(await firstMessage(second)).toEqual({ type: 'refused', code: 'STORE_LOCKED' });
    await exited(second);
    await expect(DirectoryLock.acquire(new NodeFileSystem(), dir)).rejects.toThrow(
      /STORE_LOCKED: .* locked by live process/,
    );
    holder.kill('SIGKILL');
    await exited(holder);
    const lock = await DirectoryLock.acquire(new NodeFileSystem(), dir);
    await expect(DirectoryLock.acquire(new NodeFileSystem(), dir)).rejects.toThrow(
      /STORE_LOCKED: .* already open in this process/,
    );
    await lock.release();
    await (await DirectoryLock.acquire(new NodeFileSystem(), dir)).release();
    // Two taken at once in this process: the second is told so, not that a live process (its own
    // pid) holds the lock.
    const [taken, refused] = await Promise.allSettled([
      DirectoryLock.acquire(new NodeFileSystem(), dir),
      DirectoryLock.acquire(new NodeFileSystem(), dir),
    ]);
    expect(refused).toMatchObject({
      status: 'rejected',
      reason: {
        message: expect.stringMatching(
          /already open in this process \(pid \d+\), or being opened$/,
        ),
      },
    });
    await (taken as PromiseFulfilledResult<DirectoryLock>).value.release();
  });
  it.runIf(process.platform === 'linux')(
    'refuses a second process at the new path of a directory renamed while the holder lives (the lock follows the directory, not its path)',
    async () => {
      const dir = tempDir();
      const holder = forkTs(CHILD, [dir]);
      expect(await firstMessage(holder)).toEqual({ type: 'locked' });
      const moved = `${dir}-moved`;
      renameSync(dir, moved);
      try {
        const second = forkTs(CHILD, [moved]);
        expect(await firstMessage(second)).toEqual({ type: 'refused', code: 'STORE_LOCKED' });
        await exited(second);
      } finally {
        holder.kill('SIGKILL');
        await exited(holder);
        renameSync(moved, dir);
      }
      await (await DirectoryLock.acquire(new NodeFileSystem(), dir)).release();
    },
  );
  it.runIf(process.platform === 'linux')(
    'refuses a second process while the holder lives even when the LOCK file is gone or names a dead pid (the kernel holds the lock)',
    async () => {
      const dir = tempDir();
      const holder = forkTs(CHILD, [dir]);
      expect(await firstMessage(holder)).toEqual({ type: 'locked' });
      const lockFile = path.join(dir, 'LOCK');
      // What a racing takeover of a stale pid file would do: remove the LOCK file, or leave a dead pid in it.
      rmSync(lockFile);
      await expect(DirectoryLock.acquire(new NodeFileSystem(), dir)).rejects.toThrow(
        /STORE_LOCKED: .* locked by live process \(pid unknown/,
      );
      writeFileSync(lockFile, `${deadPid()}\n`);
      const second = forkTs(CHILD, [dir]);
      expect(await firstMessage(second)).toEqual({ type: 'refused', code: 'STORE_LOCKED' });
      await exited(second);
      holder.kill('SIGKILL');
      await exited(holder);
      // The kernel dropped the dead holder's lock; the stale LOCK file is taken over.
      const lock = await DirectoryLock.acquire(new NodeFileSystem(), dir);
      await lock.release();
    },
  );

  it.runIf(process.platform === 'linux')(
    'takes over a LOCK file naming a live process that holds no lock (a reused pid): the kernel lock is the truth',
    async () => {
      const dir = tempDir();
      const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
      try {
        writeFileSync(path.join(dir, 'LOCK'), `${bystander.pid}\n`);
        const lock = await DirectoryLock.acquire(new NodeFileSystem(), dir);
        expect(readFileSync(path.join(dir, 'LOCK'), 'utf8')).toBe(`${process.pid}\n`);
        await lock.release();
        // So does a store: it opens although LOCK named a live process.
        writeFileSync(path.join(dir, 'LOCK'), `${process.ppid}\n`);
        const store = await OffsetStore.open({
          dir,
          bucketCount: 1,
          clock: new ManualClock(),
          compaction: { strategy: 'none' },
        });
        await store.close();
      } finally {
        bystander.kill('SIGKILL');
        await exited(bystander);
      }
    },
  );

  it('without the kernel lock (a directory with no real path), a LOCK file naming a live process still refuses the open', async () => {
    const real = tempDir();
    const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      writeFileSync(path.join(real, 'LOCK'), `${bystander.pid}\n`);
      const fs = new RelocatedFileSystem('/offset-store-virtual-dir', real);
      await expect(DirectoryLock.acquire(fs, '/offset-store-virtual-dir')).rejects.toThrow(
        new RegExp(`STORE_LOCKED: .* locked by live process ${bystander.pid}`),
      );
      writeFileSync(path.join(real, 'LOCK'), `${deadPid()}\n`);
      const lock = await DirectoryLock.acquire(fs, '/offset-store-virtual-dir');
      expect(readFileSync(path.join(real, 'LOCK'), 'utf8')).toBe(`${process.pid}\n`);
      await lock.release();
    } finally {
      bystander.kill('SIGKILL');
      await exited(bystander);
    }
  });

  it('lets exactly one of several processes racing for the same stale lock in', async () => {
    for (let round = 0; round < 3; round++) {
      const dir = tempDir();
      writeFileSync(path.join(dir, 'LOCK'), `${deadPid()}\n`);
      const racers = Array.from({ length: 4 }, () => forkTs(CHILD, [dir]));
      const outcomes = await Promise.all(racers.map(firstMessage));
      expect(
        outcomes.filter((o) => o.type === 'locked'),
        `round ${round}: ${JSON.stringify(outcomes)}`,
      ).toHaveLength(1);
      expect(
        outcomes.filter((o) => o.type === 'refused').every((o) => o.code === 'STORE_LOCKED'),
      ).toBe(true);
      for (const racer of racers) racer.kill('SIGKILL');
      await Promise.all(racers.map(exited));
    }
  });
});

/**
 * The real file system seen under another directory name, one that does not exist: the kernel lock
 * cannot resolve it (as on a platform without one), so only the LOCK file guards it.
 */
class RelocatedFileSystem extends NodeFileSystem {
  constructor(
    readonly shownDir: string,
    readonly realDir: string,
  ) {
    super();
  }

  #real(filePath: string): string {
    return filePath.startsWith(this.shownDir)
      ? path.join(this.realDir, filePath.slice(this.shownDir.length))
      : filePath;
  }

  override open(filePath: string, flags: OpenFlags) {
    return super.open(this.#real(filePath), flags);
  }
  override readFile(filePath: string) {
    return super.readFile(this.#real(filePath));
  }
  override readdir(filePath: string) {
    return super.readdir(this.#real(filePath));
  }
  override mkdir(filePath: string) {
    return super.mkdir(this.#real(filePath));
  }
  override rename(fromPath: string, toPath: string) {
    return super.rename(this.#real(fromPath), this.#real(toPath));
  }
  override unlink(filePath: string) {
    return super.unlink(this.#real(filePath));
  }
  override removeTree(filePath: string) {
    return super.removeTree(this.#real(filePath));
  }
  override syncDir(filePath: string) {
    return super.syncDir(this.#real(filePath));
  }
  override sizeBytes(filePath: string) {
    return super.sizeBytes(this.#real(filePath));
  }
}

/** The pid of a process that has exited (a short-lived child). */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid!;
}
