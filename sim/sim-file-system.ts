/**
 * The FileSystem port over a SimDisk, for one simulated process. Each call becomes an I/O event of
 * the scheduler, due after a seed-drawn latency; the operation takes effect on the disk when its
 * event runs (so calls in flight together complete, and land, in an order the seed chooses), and
 * may fail there with a fault the seed injects (FaultProfile: EIO on a write, read, fdatasync or
 * directory operation; ENOSPC after a short write; EIO or ENOSPC creating a file). A failed
 * fdatasync leaves the file as Linux does (SimFile.failedSync), and the process may die right at it
 * (`kill()`), before it can react.
 * The kernel's own writeback of a file's pages may fail between fdatasyncs too. Each descriptor
 * reports a writeback error once, at its next fdatasync, as Linux's errseq does: an error the
 * fdatasync of one descriptor ran into is reported by the next fdatasync of every other one.
 *
 * `kill()` ends the process: its calls in flight never complete (each pending write is applied to
 * the page cache or not, by the seed, as a write racing a SIGKILL), and calls made later hang. The
 * store object that used it is then abandoned by the simulator.
 *
 * Checkpoint environments (paths with a `checkpoint` directory) are LMDB's: it maps their files
 * itself, so they live on the real disk, in a temporary directory at the same absolute path, and
 * calls on them go to the real file system as external work (sim-scheduler.ts). Power loss and
 * faults do not reach them; LMDB's own durability is trusted there.
 */
import { appendFileSync, existsSync } from 'node:fs';
import {
  NodeFileSystem,
  type FileHandle,
  type FileSystem,
  type OpenFlags,
} from '../src/io/index.js';
import { SimDisk, fsError, type SimFile } from './sim-disk.js';
import type { SimRandom } from './sim-random.js';
import type { SimScheduler } from './sim-scheduler.js';

/** Probabilities of injected faults, per operation. */
export interface FaultProfile {
  writeError: number;
  readError: number;
  syncError: number;
  dirOpError: number;
  /** A write that fails with ENOSPC after writing part of its bytes. */
  noSpace: number;
}

/** No injected I/O faults. */
export const NO_FAULTS: FaultProfile = {
  writeError: 0,
  readError: 0,
  syncError: 0,
  dirOpError: 0,
  noSpace: 0,
};

/** Typical latencies (µs) of each kind of operation on the simulated device. */
const LATENCY_US = { write: 20, read: 15, sync: 150, dir: 60, meta: 10 } as const;

/** Whether a path is inside a checkpoint environment (LMDB's own files, kept on the real disk). */
export function isNativePath(path: string): boolean {
  return /\/checkpoint(\/|$)/.test(path);
}

interface InFlight {
  kind: string;
  path: string;
  /** For a write: applies it (used when the process dies with it in flight). */
  applyOnDeath?: () => void;
}

/** One process's view of the simulated disk. */
export class SimFileSystem implements FileSystem {
  readonly disk: SimDisk;
  readonly #scheduler: SimScheduler;
  readonly #random: SimRandom;
  readonly #faults: FaultProfile;
  readonly #native = new NodeFileSystem({ syncWriteBytesMax: 0, syncFlushes: false });
  readonly #inFlight = new Set<InFlight>();
  readonly #nativeHandles = new Set<FileHandle>();
  /** Every file opened through this file system and not closed yet (simulated and native). */
  readonly #open = new Set<FileHandle>();
  #dead = false;
  /** Faults injected in this process, for the checker and the trace. */
  readonly injected: string[] = [];
  readonly #evictions: boolean;
  /** Whether `datasyncNow` makes fdatasyncs on the calling thread (else it declines every time). */
  readonly #syncNow: boolean;
  /** Draws for failures of the kernel's own writeback (a stream of their own: see SimRandom.fork). */
  readonly #writeback: SimRandom;
  /** Draws for failed file creations (a stream of their own). */
  readonly #creation: SimRandom;
  /** Operations completed. */
  operationCount = 0;

  /**
   * `evictions`: the page cache may drop pages a failed fdatasync left clean (`maybeEvict`). Off
   * where the model cannot follow it: in durability 'os' a commit is acknowledged before it is
   * durable, and a failed writeback loses it then as a power loss would.
   *
   * `syncNow`: handles make an fdatasync on the calling thread when asked (`datasyncNow`), at once,
   * nothing else completing meanwhile, as the real file system does; without it they decline, and
   * every fdatasync is an I/O event of the scheduler.
   */
  constructor(
    disk: SimDisk,
    scheduler: SimScheduler,
    random: SimRandom,
    faults: FaultProfile,
    evictions = false,
    syncNow = false,
  ) {
    this.disk = disk;
    this.#scheduler = scheduler;
    this.#random = random;
    this.#faults = faults;
    this.#evictions = evictions;
    this.#syncNow = syncNow;
    this.#writeback = random.fork('background-writeback');
    this.#creation = random.fork('creation');
  }

  /** The process died: calls in flight never complete; pending writes land in the page cache or not. */
  kill(): void {
    this.#dead = true;
    // The kernel closes a dead process's files.
    for (const handle of this.#nativeHandles) void handle.close().catch(() => {});
    this.#nativeHandles.clear();
    for (const op of [...this.#inFlight].sort((a, b) =>
      a.path < b.path ? -1 : a.path > b.path ? 1 : 0,
    )) {
      if (op.applyOnDeath !== undefined && this.#random.chance(0.5)) op.applyOnDeath();
    }
    this.#inFlight.clear();
  }

  get dead(): boolean {
    return this.#dead;
  }

  /**
   * Schedules `operation` as an I/O completion after a latency of kind `kind`; rejects with the
   * fault when one is injected (`fault` returns the error to raise, or undefined).
   */
  #io<T>(
    kind: keyof typeof LATENCY_US,
    path: string,
    operation: () => T,
    fault?: () => NodeJS.ErrnoException | undefined,
    applyOnDeath?: () => void,
  ): Promise<T> {
    if (this.#dead) return new Promise<T>(() => {});
    return new Promise<T>((resolve, reject) => {
      const entry: InFlight = { kind, path, applyOnDeath };
      this.#inFlight.add(entry);
      const latency = this.#random.latencyUs(LATENCY_US[kind]);
      if (process.env.SIM_TRACE_FILE !== undefined)
        appendFileSync(
          process.env.SIM_TRACE_FILE,
          `   io ${kind} ${path.replace(/offset-store-sim-[A-Za-z0-9]+/, 'X')} +${latency} @${this.#scheduler.nowUs}\n`,
        );
      this.#scheduler.schedule(latency, () => {
        if (this.#dead || !this.#inFlight.delete(entry)) return;
        try {
          const done = this.#perform(kind, path, operation, fault);
          // The process died at the fault (failedSyncFor): nothing reaches it any more.
          if (done !== undefined) resolve(done.value);
        } catch (error) {
          reject(error);
        }
      });
    });
  }

  /**
   * Performs an operation now: throws its fault when one is drawn, else returns what `operation`
   * does; undefined when the process died at the fault.
   */
  #perform<T>(
    kind: string,
    path: string,
    operation: () => T,
    fault?: () => NodeJS.ErrnoException | undefined,
  ): { value: T } | undefined {
    this.operationCount++;
    const error = fault?.();
    if (this.#dead) return undefined;
    if (error !== undefined) {
      this.injected.push(`${error.code} on ${kind} of ${path}`);
      throw error;
    }
    return { value: operation() };
  }

  #native$<T>(work: () => Promise<T>): Promise<T> {
    if (this.#dead) return new Promise<T>(() => {});
    return this.#scheduler.deterministic(work());
  }

  #maybe(p: number, code: string, message: string): () => NodeJS.ErrnoException | undefined {
    return () => (this.#random.chance(p) ? fsError(code, `injected: ${message}`) : undefined);
  }

  async open(path: string, flags: OpenFlags): Promise<FileHandle> {
    if (isNativePath(path)) {
      const handle = await this.#native$(async () => {
        const opened = await this.#native.open(path, flags);
        // An open that finishes after the process died is closed with it, as the kernel would.
        if (this.#dead) await opened.close().catch(() => {});
        else this.#nativeHandles.add(opened);
        return opened;
      });
      const native: FileHandle = new NativeHandle(
        handle,
        (work) => this.#native$(work),
        () => {
          this.#nativeHandles.delete(handle);
          this.#open.delete(native);
        },
      );
      this.#open.add(native);
      return native;
    }
    const creates = flags === 'w' || flags === 'wx';
    const file = await this.#io(
      'meta',
      path,
      () => (creates ? this.disk.createFile(path, flags === 'wx') : this.disk.file(path)),
      creates ? this.#creationFault(path) : undefined,
    );
    const handle: FileHandle = new SimHandle(this, path, file, flags === 'r', () =>
      this.#open.delete(handle),
    );
    this.#open.add(handle);
    return handle;
  }

  /**
   * A file's creation may fail (at the rate of directory operations' faults), with EIO or ENOSPC
   * (no free inode or directory block), creating nothing. Drawn from a stream of its own.
   */
  #creationFault(path: string): (() => NodeJS.ErrnoException | undefined) | undefined {
    const p = this.#faults.dirOpError;
    if (p === 0) return undefined;
    return () =>
      this.#creation.chance(p)
        ? fsError(this.#creation.chance(0.5) ? 'EIO' : 'ENOSPC', `injected: creating ${path}`)
        : undefined;
  }

  /** Paths of the files opened and not closed yet: none once a store has closed, or failed to open. */
  openFiles(): string[] {
    return [...this.#open].map((handle) => handle.path).sort();
  }

  readFile(path: string): Promise<Buffer | null> {
    if (isNativePath(path)) return this.#native$(() => this.#native.readFile(path));
    return this.#io(
      'read',
      path,
      () => {
        const node = this.disk.lookup(path);
        if (node === undefined) return null;
        if (node.kind !== 'file') throw fsError('EISDIR', `is a directory: ${path}`);
        this.maybeEvict(node, path);
        const out = Buffer.alloc(node.sizeBytes);
        node.read(out, 0, node.sizeBytes, 0);
        return out;
      },
      this.#maybe(this.#faults.readError, 'EIO', `read of ${path}`),
    );
  }

  readdir(path: string): Promise<string[]> {
    if (isNativePath(path)) return this.#native$(() => this.#native.readdir(path));
    return this.#io('meta', path, () => {
      const node = this.disk.lookup(path);
      if (node === undefined) return [];
      if (node.kind !== 'dir') throw fsError('ENOTDIR', `not a directory: ${path}`);
      // In a seed-chosen order: nothing may depend on the order a file system lists names in.
      const names = [...node.entries.keys()].sort();
      for (let i = names.length - 1; i > 0; i--) {
        const j = this.#random.int(0, i);
        [names[i], names[j]] = [names[j]!, names[i]!];
      }
      return names;
    });
  }

  mkdir(path: string): Promise<void> {
    if (isNativePath(path)) return this.#native$(() => this.#native.mkdir(path));
    return this.#io(
      'dir',
      path,
      () => this.disk.mkdirp(path),
      this.#maybe(this.#faults.dirOpError, 'EIO', `mkdir ${path}`),
    );
  }

  rename(fromPath: string, toPath: string): Promise<void> {
    if (isNativePath(fromPath) || isNativePath(toPath))
      return this.#native$(() => this.#native.rename(fromPath, toPath));
    // A folder holding a checkpoint environment (a backup being completed) moves on the real disk
    // too, so that the two stay one namespace.
    return this.#io(
      'dir',
      fromPath,
      () => this.disk.rename(fromPath, toPath),
      this.#maybe(this.#faults.dirOpError, 'EIO', `rename ${fromPath}`),
    ).then(() =>
      this.#native$(async () => {
        if (this.disk.lookup(toPath)?.kind === 'dir' && existsSync(fromPath))
          await this.#native.rename(fromPath, toPath);
      }),
    );
  }

  unlink(path: string): Promise<void> {
    if (isNativePath(path)) return this.#native$(() => this.#native.unlink(path));
    return this.#io(
      'dir',
      path,
      () => this.disk.unlink(path),
      this.#maybe(this.#faults.dirOpError, 'EIO', `unlink ${path}`),
    );
  }

  removeTree(path: string): Promise<void> {
    if (isNativePath(path)) return this.#native$(() => this.#native.removeTree(path));
    // A tree holding a checkpoint environment goes on the real disk too.
    return this.#io('dir', path, () => this.disk.removeTree(path)).then(() =>
      this.#native$(() => this.#native.removeTree(path)),
    );
  }

  syncDir(path: string): Promise<void> {
    if (isNativePath(path)) return this.#native$(() => this.#native.syncDir(path));
    return this.#io(
      'sync',
      path,
      () => this.disk.syncDir(path),
      this.#maybe(this.#faults.dirOpError, 'EIO', `fsync of directory ${path}`),
    );
  }

  sizeBytes(path: string): Promise<number | null> {
    if (isNativePath(path)) return this.#native$(() => this.#native.sizeBytes(path));
    return this.#io('meta', path, () => {
      const node = this.disk.lookup(path);
      if (node === undefined) return null;
      if (node.kind !== 'file') throw fsError('EISDIR', `is a directory: ${path}`);
      return node.sizeBytes;
    });
  }

  identity(path: string): Promise<string | null> {
    if (isNativePath(path)) return this.#native$(() => this.#native.identity(path));
    return this.#io('meta', path, () => {
      const node = this.disk.lookup(path);
      return node === undefined || node.kind !== 'file' ? null : fileIdentity(node);
    });
  }

  /** @internal A handle's operations, scheduled like the file system's. */
  handleIo<T>(
    kind: 'write' | 'read' | 'sync' | 'meta',
    path: string,
    operation: () => T,
    fault?: () => NodeJS.ErrnoException | undefined,
    applyOnDeath?: () => void,
  ): Promise<T> {
    return this.#io(kind, path, operation, fault, applyOnDeath);
  }

  /**
   * @internal An fdatasync on the calling thread (`FileHandle.datasyncNow`): false, having done
   * nothing, where this process's file system does not make them (or the process is dead: the
   * caller's `datasync` then never completes, as a process killed inside the call would not return
   * from it). Otherwise the fault (if drawn) is thrown, or `operation` runs, at once; true.
   */
  syncNow(
    path: string,
    operation: () => void,
    fault?: () => NodeJS.ErrnoException | undefined,
  ): boolean {
    if (!this.#syncNow || this.#dead) return false;
    // Killed at the fault (failedSyncFor): the caller's datasync() hangs instead.
    return this.#perform('sync', path, operation, fault) !== undefined;
  }

  /** @internal */
  faultFor(
    kind: 'write' | 'read' | 'sync',
    path: string,
  ): (() => NodeJS.ErrnoException | undefined) | undefined {
    const p =
      kind === 'write'
        ? this.#faults.writeError
        : kind === 'read'
          ? this.#faults.readError
          : this.#faults.syncError;
    return p > 0 ? this.#maybe(p, 'EIO', `${kind} of ${path}`) : undefined;
  }

  /**
   * @internal Before a read of `file`: the page cache may have dropped its clean pages (a quarter of
   * the reads of a file a failed fdatasync left clean but not durable; no draw for any other file).
   */
  maybeEvict(file: SimFile, path: string): void {
    if (!this.#evictions || !file.cleanNotDurable || !this.#random.chance(0.25)) return;
    file.evictClean();
    this.injected.push(`page cache dropped the clean pages of ${path}`);
  }

  /**
   * @internal After a write: the kernel's own writeback of the file's dirty pages may fail (with
   * I/O faults, at the rate of fdatasync faults), leaving the file as a failed fdatasync does and
   * the error for its descriptors' next fdatasyncs to report. Only where `evictions` are on, for
   * the same reason: in durability 'os' such a failure loses acknowledged commits, as a power loss
   * would, which the model does not follow.
   */
  maybeFailWriteback(file: SimFile, path: string): void {
    if (!this.#evictions || this.#faults.syncError === 0) return;
    if (!this.#writeback.chance(this.#faults.syncError)) return;
    file.failedSync(this.#writeback);
    this.injected.push(`background writeback of ${path} failed`);
  }

  /** @internal A file's fdatasync fault, which leaves the file as a failed fdatasync on Linux does. */
  failedSyncFor(
    file: SimFile,
    path: string,
  ): (() => NodeJS.ErrnoException | undefined) | undefined {
    const fault = this.faultFor('sync', path);
    if (fault === undefined) return undefined;
    return () => {
      const error = fault();
      if (error !== undefined) {
        file.failedSync(this.#random);
        // The process may die right at the error, before it can cut the failed write back.
        if (this.#random.chance(0.3)) {
          this.injected.push(`process death at the failed fdatasync of ${path}`);
          this.kill();
        }
      }
      return error;
    };
  }

  /** @internal Whether this write runs out of space: the bytes that still fit, or undefined. */
  noSpace(totalBytes: number): number | undefined {
    return this.#faults.noSpace > 0 && totalBytes > 0 && this.#random.chance(this.#faults.noSpace)
      ? this.#random.int(0, totalBytes - 1)
      : undefined;
  }
}

/** An open simulated file. */
class SimHandle implements FileHandle {
  readonly path: string;
  readonly #fs: SimFileSystem;
  readonly #file: SimFile;
  readonly #readOnly: boolean;
  readonly #onClose: () => void;
  #closed = false;
  /**
   * The file's writeback errors this descriptor has reported (Linux samples errseq at open: an
   * error no descriptor has reported yet is reported by this one too).
   */
  #errorsReported: number;

  constructor(
    fs: SimFileSystem,
    path: string,
    file: SimFile,
    readOnly: boolean,
    onClose: () => void,
  ) {
    this.#fs = fs;
    this.path = path;
    this.#file = file;
    this.#readOnly = readOnly;
    this.#onClose = onClose;
    this.#errorsReported = file.writebackErrorSeen ? file.writebackErrors : -1;
  }

  /**
   * @internal For tests: plays an fdatasync of this descriptor that fails now (the file as
   * `SimFile.failedSync` leaves it, the error reported by this descriptor); returns its error.
   */
  failedDatasync(random: SimRandom): NodeJS.ErrnoException {
    this.#file.failedSync(random);
    return this.#takeWritebackError()!;
  }

  /** Reports (once per descriptor) a writeback error of the file since this one last reported. */
  #takeWritebackError(): NodeJS.ErrnoException | undefined {
    if (this.#errorsReported === this.#file.writebackErrors) return undefined;
    this.#errorsReported = this.#file.writebackErrors;
    this.#file.writebackErrorSeen = true;
    return fsError(
      'EIO',
      `fdatasync of ${this.path}: writeback failed since this descriptor's last fdatasync`,
    );
  }

  #check(): void {
    if (this.#closed) throw fsError('EBADF', `closed: ${this.path}`);
  }

  writev(buffers: readonly Buffer[], position: number): Promise<void> {
    try {
      this.#check();
      if (this.#readOnly) throw fsError('EBADF', `opened read-only: ${this.path}`);
    } catch (error) {
      return Promise.reject(error);
    }
    const bytes = Buffer.concat(buffers as Buffer[]);
    const fits = this.#fs.noSpace(bytes.length);
    const write = () => this.#file.write(bytes, position);
    return this.#fs.handleIo(
      'write',
      this.path,
      () => {
        if (fits !== undefined) {
          this.#file.write(bytes.subarray(0, fits), position);
          this.#fs.injected.push(
            `ENOSPC after ${fits} of ${bytes.length} bytes written to ${this.path}`,
          );
          throw fsError('ENOSPC', `injected: no space left writing ${this.path}`);
        }
        write();
        this.#fs.maybeFailWriteback(this.#file, this.path);
      },
      this.#fs.faultFor('write', this.path),
      write,
    );
  }

  read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    try {
      this.#check();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#fs.handleIo(
      'read',
      this.path,
      () => {
        this.#fs.maybeEvict(this.#file, this.path);
        return this.#file.read(buffer, offset, length, position);
      },
      this.#fs.faultFor('read', this.path),
    );
  }

  datasync(): Promise<void> {
    try {
      this.#check();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#fs.handleIo('sync', this.path, () => this.#sync(), this.#syncFault());
  }

  datasyncNow(): boolean {
    this.#check();
    return this.#fs.syncNow(this.path, () => this.#sync(), this.#syncFault());
  }

  /** An fdatasync that succeeds: the file made durable, then any writeback error not yet reported. */
  #sync(): void {
    this.#file.sync();
    // An error of writeback another descriptor (or the kernel's own flushing) ran into.
    const error = this.#takeWritebackError();
    if (error !== undefined) {
      this.#fs.injected.push(`fdatasync of ${this.path} reported an earlier writeback error`);
      throw error;
    }
  }

  /** The fault of an fdatasync, reported by this descriptor when drawn. */
  #syncFault(): (() => NodeJS.ErrnoException | undefined) | undefined {
    const failed = this.#fs.failedSyncFor(this.#file, this.path);
    if (failed === undefined) return undefined;
    return () => {
      const error = failed();
      // The descriptor whose fdatasync failed has reported the error.
      if (error !== undefined) void this.#takeWritebackError();
      return error;
    };
  }

  truncate(sizeBytes: number): Promise<void> {
    try {
      this.#check();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#fs.handleIo(
      'meta',
      this.path,
      () => this.#file.truncate(sizeBytes),
      this.#fs.faultFor('write', this.path),
    );
  }

  sizeBytes(): Promise<number> {
    return this.#fs.handleIo('meta', this.path, () => this.#file.sizeBytes);
  }

  identity(): Promise<string> {
    return this.#fs.handleIo('meta', this.path, () => fileIdentity(this.#file));
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#onClose();
  }
}

/** A real file of a checkpoint environment; every call is external work. */
class NativeHandle implements FileHandle {
  readonly path: string;
  readonly #inner: FileHandle;
  readonly #external: <T>(work: () => Promise<T>) => Promise<T>;
  readonly #onClose: () => void;

  constructor(
    inner: FileHandle,
    external: <T>(work: () => Promise<T>) => Promise<T>,
    onClose: () => void,
  ) {
    this.path = inner.path;
    this.#inner = inner;
    this.#external = external;
    this.#onClose = onClose;
  }

  writev(buffers: readonly Buffer[], position: number): Promise<void> {
    return this.#external(() => this.#inner.writev(buffers, position));
  }

  read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    return this.#external(() => this.#inner.read(buffer, offset, length, position));
  }

  datasync(): Promise<void> {
    return this.#external(() => this.#inner.datasync());
  }

  truncate(sizeBytes: number): Promise<void> {
    return this.#external(() => this.#inner.truncate(sizeBytes));
  }

  sizeBytes(): Promise<number> {
    return this.#external(() => this.#inner.sizeBytes());
  }

  identity(): Promise<string> {
    return this.#external(async () => (await this.#inner.identity?.()) ?? this.path);
  }

  close(): Promise<void> {
    this.#onClose();
    return this.#external(() => this.#inner.close());
  }
}

export { SimDisk };

/** Numbers the simulated files: a file keeps its number through renames, as an inode does. */
const fileNumbers = new WeakMap<SimFile, number>();
let filesNumbered = 0;

function fileIdentity(file: SimFile): string {
  let n = fileNumbers.get(file);
  if (n === undefined) fileNumbers.set(file, (n = ++filesNumbered));
  return `sim:${n}`;
}
