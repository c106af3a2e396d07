import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem } from '../../src/io/index.js';
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
    await expect(DirectoryLock.acquire(new NodeFileSystem(), dir)).rejects.toThrow(/STORE_LOCKED: .* locked by live process/);
    holder.kill('SIGKILL');
    await exited(holder);
    const lock = await DirectoryLock.acquire(new NodeFileSystem(), dir);
    await expect(DirectoryLock.acquire(new NodeFileSystem(), dir)).rejects.toThrow(/STORE_LOCKED: .* already open in this process/);
    await lock.release();
    await (await DirectoryLock.acquire(new NodeFileSystem(), dir)).release();
  });
  it.runIf(process.platform === 'linux')('refuses a second process while the holder lives even when the LOCK file is gone or names a dead pid (the kernel holds the lock)', async () => {
    const dir = tempDir();
    const holder = forkTs(CHILD, [dir]);
    expect(await firstMessage(holder)).toEqual({ type: 'locked' });
    const lockFile = path.join(dir, 'LOCK');
    // What a racing takeover of a stale pid file would do: remove the LOCK file, or leave a dead pid in it.
    rmSync(lockFile);
    await expect(DirectoryLock.acquire(new NodeFileSystem(), dir)).rejects.toThrow(/STORE_LOCKED: .* locked by live process \(pid unknown/);
    writeFileSync(lockFile, `${deadPid()}\n`);
    const second = forkTs(CHILD, [dir]);
    expect(await firstMessage(second)).toEqual({ type: 'refused', code: 'STORE_LOCKED' });
    await exited(second);
    holder.kill('SIGKILL');
    await exited(holder);
    // The kernel dropped the dead holder's lock; the stale LOCK file is taken over.
    const lock = await DirectoryLock.acquire(new NodeFileSystem(), dir);
    await lock.release();
  });

  it('lets exactly one of several processes racing for the same stale lock in', async () => {
    for (let round = 0; round < 3; round++) {
      const dir = tempDir();
      writeFileSync(path.join(dir, 'LOCK'), `${deadPid()}\n`);
      const racers = Array.from({ length: 4 }, () => forkTs(CHILD, [dir]));
      const outcomes = await Promise.all(racers.map(firstMessage));
      expect(outcomes.filter((o) => o.type === 'locked'), `round ${round}: ${JSON.stringify(outcomes)}`).toHaveLength(1);
      expect(outcomes.filter((o) => o.type === 'refused').every((o) => o.code === 'STORE_LOCKED')).toBe(true);
      for (const racer of racers) racer.kill('SIGKILL');
      await Promise.all(racers.map(exited));
    }
  });
});

/** The pid of a process that has exited (a short-lived child). */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid!;
}
