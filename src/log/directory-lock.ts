/**
 * The store directory's single-process lock: a `LOCK` file created exclusively, holding the owner's
 * pid. A second open while the owner lives fails with STORE_LOCKED; a lock whose pid is no longer
 * alive (the owner crashed) is taken over. Within one process the set of held directories stands in
 * for the pid check, so opening the same directory twice in one process is refused too.
 *
 * Limitation: two processes taking over the same stale lock at the same instant can race; the pid
 * check is advisory, as in every pid-file lock.
 */
import * as path from 'node:path';
import { OffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';

const heldInThisProcess = new Set<string>();

function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid in `<dir>/LOCK` if that process is alive (the store is open there), else null. Reads only. */
export async function liveLockHolder(fs: FileSystem, dir: string): Promise<number | null> {
  const pid = Number.parseInt((await fs.readFile(path.resolve(dir, 'LOCK')))?.toString('utf8') ?? '', 10);
  return Number.isSafeInteger(pid) && pid > 0 && pidAlive(pid) ? pid : null;
}

/** A held directory lock; `release()` removes it. */
export class DirectoryLock {
  readonly #fs: FileSystem;
  readonly #lockPath: string;
  #released = false;

  private constructor(fs: FileSystem, lockPath: string) {
    this.#fs = fs;
    this.#lockPath = lockPath;
  }

  /** Takes the lock of `dir` or fails with STORE_LOCKED. */
  static async acquire(fs: FileSystem, dir: string): Promise<DirectoryLock> {
    const lockPath = path.resolve(dir, 'LOCK');
    if (heldInThisProcess.has(lockPath)) {
      throw new OffsetStoreError('STORE_LOCKED', `${dir} is already open in this process (pid ${process.pid})`);
    }
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const handle = await fs.open(lockPath, 'wx');
        try {
          await handle.writev([Buffer.from(`${process.pid}\n`)], 0);
          await handle.datasync();
        } finally {
          await handle.close();
        }
        heldInThisProcess.add(lockPath);
        return new DirectoryLock(fs, lockPath);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = Number.parseInt((await fs.readFile(lockPath))?.toString('utf8') ?? '', 10);
      if (Number.isSafeInteger(holder) && holder > 0 && holder !== process.pid && pidAlive(holder)) {
        throw new OffsetStoreError('STORE_LOCKED', `${dir} is locked by live process ${holder}`);
      }
      await fs.unlink(lockPath);
    }
    throw new OffsetStoreError('STORE_LOCKED', `${dir}: could not take over the stale lock`);
  }

  /** Removes the lock file; idempotent. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    heldInThisProcess.delete(this.#lockPath);
    await this.#fs.unlink(this.#lockPath);
  }
}
