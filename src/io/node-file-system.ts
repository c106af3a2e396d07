/**
 * The FileSystem port on node:fs. The only module of `src/` that touches node:fs.
 *
 * Small writes are made synchronously. A write only copies bytes into the OS page cache (tens of
 * microseconds for a few KiB), while a round trip through libuv's thread pool costs a thread wake-up
 * on each side (about 80 us per call on a 2-core VM) and queues behind fdatasyncs in flight. So a
 * writev of at most `syncWriteBytesMax` bytes runs on the calling thread; larger ones, and every
 * read and directory operation, go through the thread pool so that the event loop never waits for
 * the device. `syncWriteBytesMax: 0` sends every write through the thread pool.
 *
 * An fdatasync goes through the thread pool (`datasync`), unless its caller knows nothing else could
 * run meanwhile: the log asks for `datasyncNow` when it is the only one of the process flushing,
 * where the round trip would cost more than the fdatasync of a fast device (a single committer makes
 * ~1.6x the commits per second). `syncFlushes: false` sends every fdatasync through the thread pool.
 *
 * A write into the page cache can still stall: the kernel throttles a process that dirties pages
 * faster than the disk takes them, and some devices make a write wait for the page's writeback. So
 * when a moving average of the synchronous writes' durations (the newest weighing WRITE_SMOOTHING)
 * reaches SLOW_SYNC_WRITE_MS, every write goes through the thread pool for the next
 * SYNC_WRITE_PAUSE_MS (SyncWriteGate): a disk that stalls every write, or one stall of 8 times that,
 * costs the event loop a few writes, not every commit. One write that stalls among fast ones does
 * not pause them: the pause costs far more than the stall did (after one write of 5.2 ms had paused
 * them, 64 committers over 16 buckets made 11-17k commits/s for those 5 s; 36-60k in runs without a
 * pause). fdatasyncs on the calling thread pause the same way, through a gate of their own
 * (FLUSH_SMOOTHING).
 *
 * A write or fdatasync made on the calling thread completes without a turn of the event loop, and so
 * does everything its caller continues with in microtasks. A lone caller that commits back to back
 * would then hold the event loop for as long as it commits: no timer, socket, thread-pool completion
 * or background task of the process (the store's own segment preparation and compaction included)
 * would run (400 ms of commits, 1,000 of them durable or 17,000 in 'os' durability, without one turn).
 * So once the calling thread has held the event loop for EVENT_LOOP_HOLD_MS_MAX through writes made
 * here (EventLoopWatch), the next synchronous write lets it turn once (a `setImmediate`) before
 * resolving.
 */
import * as fsSync from 'node:fs';
import * as fs from 'node:fs/promises';
import { dirname } from 'node:path';
import type { FileHandle, FileSystem, OpenFlags } from './file-system.js';
import { fileIdentity } from './file-identity.js';
import { nextTurn, onNextTurn } from '../util/index.js';
import { directoryOwnerLive, holdDirectoryLock, type DirectoryLockResult } from './process-lock.js';

const OPEN_FLAGS: Record<OpenFlags, number> = {
  r: fsSync.constants.O_RDONLY,
  'r+': fsSync.constants.O_RDWR,
  w: fsSync.constants.O_WRONLY | fsSync.constants.O_CREAT | fsSync.constants.O_TRUNC,
  wx: fsSync.constants.O_WRONLY | fsSync.constants.O_CREAT | fsSync.constants.O_EXCL,
};

/**
 * Opens `path` if it is a regular file, and fails with an error naming it (code EFTYPE) if it is
 * anything else: a FIFO where a store file belongs would otherwise block the open (and a thread of
 * the pool) until a writer came, and a directory fail later with a message that names no file.
 * O_NONBLOCK is what keeps a FIFO from blocking; it changes nothing for a regular file.
 */
async function openRegular(path: string, flags: OpenFlags, mode?: number): Promise<fs.FileHandle> {
  const handle = await fs.open(path, OPEN_FLAGS[flags] | (fsSync.constants.O_NONBLOCK ?? 0), mode);
  let stats: fsSync.Stats;
  try {
    stats = await handle.stat();
  } catch (error) {
    await handle.close();
    throw error;
  }
  if (stats.isFile()) return handle;
  await handle.close();
  throw Object.assign(
    new Error(`${path} is ${describeNotAFile(stats)}, where a regular file was expected`),
    { code: 'EFTYPE', path },
  );
}

/** What a file that is not a regular file is, for messages ('a FIFO'). */
function describeNotAFile(stats: fsSync.Stats): string {
  return stats.isDirectory()
    ? 'a directory'
    : stats.isFIFO()
      ? 'a FIFO'
      : stats.isSocket()
        ? 'a socket'
        : stats.isCharacterDevice() || stats.isBlockDevice()
          ? 'a device'
          : 'not a file';
}

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

/** Default of `NodeFileSystemOptions.syncWriteBytesMax`. */
export const SYNC_WRITE_BYTES_MAX_DEFAULT = 256 * 1024;
/** A synchronous write at least this long pauses synchronous writes. */
export const SLOW_SYNC_WRITE_MS = 5;
/** How long synchronous writes stay paused after a slow one. */
export const SYNC_WRITE_PAUSE_MS = 5_000;
/** Weight of the newest fdatasync in the moving average that pauses fdatasyncs on the calling thread. */
export const FLUSH_SMOOTHING = 1 / 8;
/** Weight of the newest synchronous write in the moving average that pauses synchronous writes. */
export const WRITE_SMOOTHING = 1 / 8;

/**
 * Decides which writes are made synchronously: small ones, unless they stalled recently. With
 * `smoothing` 1 one slow write pauses them; below 1 the pause follows a moving average of their
 * durations (each new one weighs `smoothing`), so one late fdatasync among fast ones does not, while
 * a device that is slow every time, or one very long stall, does.
 */
export class SyncWriteGate {
  readonly #bytesMax: number;
  readonly #nowMs: () => number;
  readonly #smoothing: number;
  #averageMs = 0;
  #pausedUntilMs = -Infinity;

  /** `bytesMax`: largest write made synchronously; `nowMs`: a monotonic clock in ms (injectable for tests); `smoothing` in (0, 1]. */
  constructor(bytesMax: number, nowMs: () => number = () => performance.now(), smoothing = 1) {
    this.#bytesMax = bytesMax;
    this.#nowMs = nowMs;
    this.#smoothing = smoothing;
  }

  /** Whether a write of `bytes` should be made on the calling thread now. */
  allows(bytes: number): boolean {
    return bytes <= this.#bytesMax && this.#nowMs() >= this.#pausedUntilMs;
  }

  /** Runs a synchronous write, timing it; a slow one (or a slow average) pauses synchronous writes. */
  time<T>(write: () => T): T {
    const startedMs = this.#nowMs();
    try {
      return write();
    } finally {
      const endedMs = this.#nowMs();
      this.#averageMs += this.#smoothing * (endedMs - startedMs - this.#averageMs);
      if (this.#averageMs >= SLOW_SYNC_WRITE_MS) {
        this.#pausedUntilMs = endedMs + SYNC_WRITE_PAUSE_MS;
        this.#averageMs = 0;
      }
    }
  }
}

/** Longest the calling thread holds the event loop through synchronous writes before one lets it turn. */
export const EVENT_LOOP_HOLD_MS_MAX = 2;

/**
 * Notices when the event loop has not turned for EVENT_LOOP_HOLD_MS_MAX since a synchronous write:
 * the first write of a turn schedules a callback for the next turn (`nextTurn`) and notes the time;
 * the watch is reset when that callback runs, so a write that finds it still pending, that long
 * after, knows the loop has been held since.
 */
export class EventLoopWatch {
  readonly #nowMs: () => number;
  readonly #nextTurn: (callback: () => void) => void;
  #heldSinceMs: number | undefined;

  /** `nowMs`: a monotonic clock in ms; `nextTurn`: runs a callback on a later turn of the event loop (both injectable for tests). */
  constructor(
    nowMs: () => number = () => performance.now(),
    nextTurn: (callback: () => void) => void = onNextTurn,
  ) {
    this.#nowMs = nowMs;
    this.#nextTurn = nextTurn;
  }

  /** Notes a synchronous write; true when the event loop has not turned for EVENT_LOOP_HOLD_MS_MAX. */
  held(): boolean {
    const since = this.#heldSinceMs;
    if (since === undefined) {
      this.#heldSinceMs = this.#nowMs();
      this.#nextTurn(() => {
        this.#heldSinceMs = undefined;
      });
      return false;
    }
    return this.#nowMs() - since >= EVENT_LOOP_HOLD_MS_MAX;
  }
}

/** One event loop per thread: the watch of every real file system of this thread. */
const eventLoop = new EventLoopWatch();

/** Options of the real file system. */
export interface NodeFileSystemOptions {
  /** Largest writev made synchronously on the calling thread; default 256 KiB; 0 = none. */
  syncWriteBytesMax?: number;
  /**
   * Let `datasyncNow` make an fdatasync on the calling thread (default true): the log asks for it
   * only when no other log of the process is flushing, where a thread-pool round trip would cost
   * ~30 us more than the fdatasync itself. When their moving average reaches SLOW_SYNC_WRITE_MS,
   * they pause for SYNC_WRITE_PAUSE_MS, like slow synchronous writes. False: every fdatasync goes
   * through the thread pool.
   */
  syncFlushes?: boolean;
}

class NodeFileHandle implements FileHandle {
  readonly path: string;
  readonly #handle: fs.FileHandle;
  readonly #syncWrites: SyncWriteGate;
  readonly #syncFlushes: SyncWriteGate;

  constructor(
    path: string,
    handle: fs.FileHandle,
    syncWrites: SyncWriteGate,
    syncFlushes: SyncWriteGate,
  ) {
    this.path = path;
    this.#handle = handle;
    this.#syncWrites = syncWrites;
    this.#syncFlushes = syncFlushes;
  }

  async writev(buffers: readonly Buffer[], position: number): Promise<void> {
    let pending = buffers.filter((b) => b.length > 0);
    let totalBytes = 0;
    for (const b of pending) totalBytes += b.length;
    let at = position;
    try {
      if (this.#syncWrites.allows(totalBytes)) {
        this.#syncWrites.time(() => {
          while (pending.length > 0) {
            const bytesWritten = fsSync.writevSync(this.#handle.fd, pending, at);
            at += bytesWritten;
            pending = dropWritten(pending, bytesWritten);
          }
        });
        if (eventLoop.held()) await nextTurn();
        return;
      }
      while (pending.length > 0) {
        const { bytesWritten } = await this.#handle.writev(pending, at);
        at += bytesWritten;
        pending = dropWritten(pending, bytesWritten);
      }
    } catch (error) {
      throw namingPath(error, this.path);
    }
  }

  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    try {
      const { bytesRead } = await this.#handle.read(buffer, offset, length, position);
      return bytesRead;
    } catch (error) {
      throw namingPath(error, this.path);
    }
  }

  datasyncNow(): boolean {
    if (!this.#syncFlushes.allows(0)) return false;
    try {
      this.#syncFlushes.time(() => fsSync.fdatasyncSync(this.#handle.fd));
    } catch (error) {
      throw namingPath(error, this.path);
    }
    return true;
  }

  datasync(): Promise<void> {
    // The callback API skips the promise API's per-call FileHandle bookkeeping (~30 us less here).
    return new Promise((resolve, reject) => {
      fsSync.fdatasync(this.#handle.fd, (error) =>
        error === null ? resolve() : reject(namingPath(error, this.path)),
      );
    });
  }

  truncate(sizeBytes: number): Promise<void> {
    return this.#handle.truncate(sizeBytes).catch((error: unknown) => {
      throw namingPath(error, this.path);
    });
  }

  async sizeBytes(): Promise<number> {
    try {
      return (await this.#handle.stat()).size;
    } catch (error) {
      throw namingPath(error, this.path);
    }
  }

  async identity(): Promise<string> {
    try {
      return fileIdentity(await this.#handle.stat({ bigint: true }));
    } catch (error) {
      throw namingPath(error, this.path);
    }
  }

  close(): Promise<void> {
    return this.#handle.close().catch((error: unknown) => {
      throw namingPath(error, this.path);
    });
  }
}

/**
 * `error` with the path of the file it concerns: Node names the path in the errors of calls made by
 * path (`open`, `rename`), not in those made on a descriptor (`read`, `write`, `fdatasync`), which
 * would otherwise reach a user as "EIO: i/o error, read" with no file named. Adds it to the message,
 * as Node writes it, and as `path`; an error that has a path, or is not a system error, is returned
 * as it is.
 */
function namingPath(error: unknown, path: string): unknown {
  const e = error as NodeJS.ErrnoException | null;
  if (!(e instanceof Error) || typeof e.code !== 'string' || e.path !== undefined) return error;
  e.path = path;
  e.message = `${e.message} '${path}'`;
  return e;
}

/** What is left of `buffers` after the first `bytes` of them were written. */
function dropWritten(buffers: Buffer[], bytes: number): Buffer[] {
  let left = bytes;
  let i = 0;
  while (i < buffers.length && left >= buffers[i]!.length) left -= buffers[i++]!.length;
  const rest = buffers.slice(i);
  if (left > 0 && rest.length > 0) rest[0] = rest[0]!.subarray(left);
  return rest;
}

/** The real file system. */
export class NodeFileSystem implements FileSystem {
  readonly #syncWrites: SyncWriteGate;
  readonly #syncFlushes: SyncWriteGate;

  /** RangeError when `syncWriteBytesMax` is not an integer >= 0; TypeError when `syncFlushes` is not a boolean. */
  constructor(options?: NodeFileSystemOptions) {
    const syncWriteBytesMax = options?.syncWriteBytesMax ?? SYNC_WRITE_BYTES_MAX_DEFAULT;
    if (!Number.isSafeInteger(syncWriteBytesMax) || syncWriteBytesMax < 0) {
      throw new RangeError(
        `syncWriteBytesMax must be a non-negative integer, got ${syncWriteBytesMax}`,
      );
    }
    const syncFlushes = options?.syncFlushes ?? true;
    if (typeof syncFlushes !== 'boolean')
      throw new TypeError(`syncFlushes must be a boolean, got ${typeof syncFlushes}`);
    this.#syncWrites = new SyncWriteGate(syncWriteBytesMax, undefined, WRITE_SMOOTHING);
    this.#syncFlushes = new SyncWriteGate(syncFlushes ? 0 : -1, undefined, FLUSH_SMOOTHING);
  }

  /**
   * Opens a file through node:fs; its writes share this file system's synchronous-write gate. Only
   * a regular file is opened (see `openRegular`).
   */
  async open(path: string, flags: OpenFlags, mode?: number): Promise<FileHandle> {
    return new NodeFileHandle(
      path,
      await openRegular(path, flags, mode),
      this.#syncWrites,
      this.#syncFlushes,
    );
  }

  /** Reads a whole regular file through the thread pool; null when it does not exist. */
  async readFile(path: string): Promise<Buffer | null> {
    let handle: fs.FileHandle;
    try {
      handle = await openRegular(path, 'r');
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
    try {
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  }

  /** Lists a directory; an empty list when it does not exist. */
  async readdir(path: string): Promise<string[]> {
    try {
      return await fs.readdir(path);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
  }

  /**
   * Creates the directory and its missing parents, succeeding if it exists. Parents are created one
   * by one, only those missing: Node's `recursive` mkdir never returns under /proc (it retries an
   * ENOENT there forever).
   */
  async mkdir(path: string): Promise<void> {
    try {
      await fs.mkdir(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException | null)?.code;
      if (code === 'EEXIST') {
        if ((await fs.stat(path)).isDirectory()) return;
        throw error;
      }
      const parent = dirname(path);
      if (code !== 'ENOENT' || parent === path || (await this.sizeBytes(parent)) !== null)
        throw error;
      await this.mkdir(parent);
      await this.mkdir(path);
    }
  }

  /** node:fs rename: atomic, replaces `toPath`; call `syncDir` to make it durable. */
  rename(fromPath: string, toPath: string): Promise<void> {
    return fs.rename(fromPath, toPath);
  }

  /** Removes a file; one already gone is not an error (recovery and swaps redo unlinks). */
  async unlink(path: string): Promise<void> {
    try {
      await fs.unlink(path);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  /** Removes a directory tree (rm -rf); nothing there is not an error. */
  removeTree(path: string): Promise<void> {
    return fs.rm(path, { recursive: true, force: true });
  }

  /** fsyncs the directory, so creations, renames and unlinks in it survive a power loss. */
  async syncDir(path: string): Promise<void> {
    const handle = await fs.open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** The kernel-held lock of `dir` (process-lock.ts). */
  holdLock(dir: string): Promise<DirectoryLockResult> {
    return holdDirectoryLock(dir);
  }

  /** Whether process `pid` has the store in `dir` open (process-lock.ts), without taking its lock. */
  ownerLive(dir: string, pid: number): Promise<boolean | 'unsupported'> {
    return directoryOwnerLive(dir, pid);
  }

  /** The file's size from stat; null when it does not exist. */
  async sizeBytes(path: string): Promise<number | null> {
    try {
      return (await fs.stat(path)).size;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  /** What is under `path` (FileSystem.fileType), from lstat and stat. */
  async fileType(path: string): Promise<string> {
    let stats: fsSync.Stats;
    try {
      stats = await fs.stat(path);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      const link = await fs.lstat(path).catch(() => undefined);
      return link?.isSymbolicLink() === true ? 'a symbolic link to nothing' : 'missing';
    }
    return stats.isFile() ? 'file' : describeNotAFile(stats);
  }

  /** The permission bits of the file under `path` (from stat); null when it does not exist. */
  async permissions(path: string): Promise<number | null> {
    try {
      return (await fs.stat(path)).mode & 0o777;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  /** Bytes available to this process on the file system of `path` (statfs). */
  async freeBytes(path: string): Promise<number> {
    const stats = await fs.statfs(path);
    return stats.bavail * stats.bsize;
  }

  /** The identity (fileIdentity) of the file under `path`; null when there is none. */
  async identity(path: string): Promise<string | null> {
    try {
      return fileIdentity(await fs.stat(path, { bigint: true }));
    } catch (error) {
      if (isNotFound(error) || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
      throw error;
    }
  }
}

/**
 * Reads a file a user named (a command-line option): any file the shell can hand over, a FIFO or
 * `/dev/stdin` included, unlike the store's own files, which are opened only if regular; null
 * when it does not exist. Read in chunks, and refused (a RangeError) past `bytesMax`: `/dev/zero`,
 * or a log file named by mistake, would otherwise be read into memory until the process dies.
 */
export async function readNamedFile(file: string, bytesMax: number): Promise<Buffer | null> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, 'r');
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(1024 * 1024);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) return Buffer.concat(chunks, total);
      total += bytesRead;
      if (total > bytesMax) throw new RangeError(`it holds more than ${bytesMax} bytes`);
      chunks.push(bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
}
