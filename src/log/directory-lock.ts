/**
 * The store directory's single-process lock, in two layers:
 * 1. a lock the kernel holds for the process and drops when it dies (io/process-lock.ts; Linux), taken
 *    first: a second live process in the same network namespace is refused there, whatever the LOCK
 *    file says, and two processes can no longer both take over one stale LOCK file;
 * 2. a `LOCK` file created exclusively, holding the owner's pid: it names the owner in messages and
 *    `log verify`, and it is the only check where the kernel lock is unsupported. Where the kernel
 *    lock was taken, a LOCK file found is stale whatever pid it names: a live owner would hold the
 *    kernel lock, and the pid of a crashed owner may since have been given to another process. Where
 *    it is unsupported, a LOCK file whose pid is no longer alive (the owner crashed) is taken over.
 * Within one process the set of held directories stands in for both, so opening the same directory
 * twice in one process is refused too. A second open while the owner lives fails with STORE_LOCKED.
 *
 * Limitations: without the kernel lock (not Linux), two processes taking over the same stale LOCK
 * file at the same instant can race, as with every pid file; and neither layer protects a store
 * opened from two containers with their own network and pid namespaces (see process-lock.ts).
 */
import * as path from 'node:path';
import { OffsetStoreError } from '../errors/index.js';
import type { FileSystem, HeldDirectoryLock } from '../io/index.js';

const heldInThisProcess = new Set<string>();
/** LOCK files this process is taking now: a second open meanwhile is this process's, not another's. */
const takingInThisProcess = new Set<string>();

/**
 * Forgets the directories this process holds, as a restarted process would have: for a simulator
 * that abandons a store (a simulated crash) and reopens its directory in the same process.
 */
export function forgetHeldDirectories(): void {
  heldInThisProcess.clear();
  takingInThisProcess.clear();
}

function pidAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The pid the LOCK file at `lockPath` names, or undefined for a torn one (the file is written as
 * `<pid>\n`, so one without its newline was cut short, and the digits it has may be another
 * process's pid), for none, and for a LOCK that is not a regular file (a FIFO, a directory): no
 * store writes one, so it names no owner, and an open replaces it.
 */
async function lockPid(fs: FileSystem, lockPath: string): Promise<number | undefined> {
  const bytes = await fs.readFile(lockPath).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'EFTYPE') return null;
    throw error;
  });
  const text = bytes?.toString('utf8') ?? '';
  if (!/^[0-9]+\n$/.test(text)) return undefined;
  const pid = Number.parseInt(text, 10);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * The pid in `<dir>/LOCK` if that process has the store open there, else null. Reads only. Where the
 * file system can tell (FileSystem.ownerLive: the kernel-held lock, or the process's open files), a
 * live pid is the owner's only while that process has the store open: a stale LOCK file names the
 * pid of an owner that crashed, which the system may since have given to any other process.
 * Elsewhere a live pid is taken as the owner. A LOCK that is not a regular file names no owner.
 */
export async function liveLockHolder(fs: FileSystem, dir: string): Promise<number | null> {
  const pid = await lockPid(fs, path.resolve(dir, 'LOCK'));
  if (pid === undefined || !pidAlive(pid)) return null;
  return (await fs.ownerLive?.(dir, pid).catch(() => 'unsupported' as const)) === false
    ? null
    : pid;
}

/** A held directory lock; `release()` removes it. */
export class DirectoryLock {
  readonly #fs: FileSystem;
  readonly #dir: string;
  readonly #lockPath: string;
  readonly #kernelLock: HeldDirectoryLock | undefined;
  /** The directory's identity when locked (FileSystem.identity), or null where there is none. */
  readonly #identity: string | null;
  #released = false;

  private constructor(
    fs: FileSystem,
    dir: string,
    lockPath: string,
    kernelLock: HeldDirectoryLock | undefined,
    identity: string | null,
  ) {
    this.#fs = fs;
    this.#dir = dir;
    this.#lockPath = lockPath;
    this.#kernelLock = kernelLock;
    this.#identity = identity;
  }

  /**
   * Whether the directory's path leads to another directory than the one locked (or to none). A
   * failure to find out (a stat's EIO) is thrown as it is, not taken for a move.
   */
  async #moved(): Promise<boolean> {
    if (this.#identity === null) return false;
    const now = await this.#fs.identity?.(this.#dir);
    return now !== this.#identity;
  }

  /**
   * Refuses (LOG_STORAGE_ERROR) once the directory's path no longer leads to the directory this
   * lock was taken on: it was renamed or replaced while the store was open. The store finds its
   * files by path, so what it would create next (a segment, store.json) would land in whatever has
   * the name now, another store perhaps, whose own process may hold it. Called before each file
   * the store creates or replaces in it.
   */
  async check(): Promise<void> {
    if (this.#released || !(await this.#moved())) return;
    throw new OffsetStoreError(
      'LOG_STORAGE_ERROR',
      `${this.#dir} is no longer the directory this process opened the store in (it was renamed or replaced while the store was open): nothing more is written there; stop this process and put the store's directory back under its name`,
    );
  }

  /** Takes the lock of `dir` (which must exist) or fails with STORE_LOCKED. */
  static async acquire(fs: FileSystem, dir: string): Promise<DirectoryLock> {
    const lockPath = path.resolve(dir, 'LOCK');
    if (heldInThisProcess.has(lockPath) || takingInThisProcess.has(lockPath)) {
      throw new OffsetStoreError(
        'STORE_LOCKED',
        `${dir} is already open in this process (pid ${process.pid})${heldInThisProcess.has(lockPath) ? '' : ', or being opened'}`,
      );
    }
    takingInThisProcess.add(lockPath);
    try {
      return await DirectoryLock.#acquire(fs, dir, lockPath);
    } finally {
      takingInThisProcess.delete(lockPath);
    }
  }

  static async #acquire(fs: FileSystem, dir: string, lockPath: string): Promise<DirectoryLock> {
    const kernelLock = (await fs.holdLock?.(dir)) ?? 'unsupported';
    if (kernelLock === 'held-elsewhere') {
      const holder = await liveLockHolder(fs, dir);
      throw new OffsetStoreError(
        'STORE_LOCKED',
        `${dir} is locked by live process ${holder ?? '(pid unknown: its LOCK file is gone)'}`,
      );
    }
    const held = kernelLock === 'unsupported' ? undefined : kernelLock;
    try {
      await DirectoryLock.#takeLockFile(fs, dir, lockPath, held !== undefined);
    } catch (error) {
      await held?.release();
      throw error;
    }
    heldInThisProcess.add(lockPath);
    const identity = (await fs.identity?.(dir).catch(() => null)) ?? null;
    return new DirectoryLock(fs, dir, lockPath, held, identity);
  }

  /**
   * Creates the LOCK file with this process's pid, taking over a stale one: any, when this process
   * holds the kernel lock (`kernelLockHeld`); else one whose pid is dead.
   */
  static async #takeLockFile(
    fs: FileSystem,
    dir: string,
    lockPath: string,
    kernelLockHeld: boolean,
  ): Promise<void> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const handle = await fs.open(lockPath, 'wx');
        try {
          await handle.writev([Buffer.from(`${process.pid}\n`)], 0);
          await handle.datasync();
        } catch (error) {
          // The file is this process's (created exclusively): a torn one must not stay to be read
          // as some other process's pid.
          await handle.close().catch(() => {});
          await fs.unlink(lockPath).catch(() => {});
          throw error;
        }
        await handle.close();
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (!kernelLockHeld) {
        const holder = await lockPid(fs, lockPath);
        if (holder !== undefined && holder !== process.pid && pidAlive(holder)) {
          throw new OffsetStoreError('STORE_LOCKED', `${dir} is locked by live process ${holder}`);
        }
      }
      await fs.unlink(lockPath);
    }
    throw new OffsetStoreError('STORE_LOCKED', `${dir}: could not take over the stale lock`);
  }

  /** Removes the lock file, then drops the kernel lock; idempotent. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    heldInThisProcess.delete(this.#lockPath);
    try {
      // A LOCK file under a name that now leads elsewhere is another store's.
      if (!(await this.#moved())) await this.#fs.unlink(this.#lockPath);
    } finally {
      await this.#kernelLock?.release();
    }
  }
}

/** The directories whose lock this process holds now (their LOCK files): for tests that look for stores left open. */
export function directoriesLockedByThisProcess(): string[] {
  return [...heldInThisProcess];
}
