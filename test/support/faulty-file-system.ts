import type { DirectoryLockResult, FileHandle, FileSystem, OpenFlags } from '../../src/io/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Bytes of the regular files under `dir`, recursively (0 when it does not exist). */
function bytesUnder(dir: string): number {
  let total = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const at = join(dir, entry.name);
    if (entry.isDirectory()) total += bytesUnder(at);
    else if (entry.isFile()) total += statSync(at).size;
  }
  return total;
}

/** Which operation to fail and when. */
export interface FaultPlan {
  /** Fail the Nth fdatasync (1-based) from now on; undefined = never. */
  failDatasyncAt?: number;
  /** Fail the Nth writev (1-based); undefined = never. */
  failWritevAt?: number;
  /** Fail the Nth directory operation (rename, unlink, syncDir; 1-based, counted in metaOpCount). */
  failMetaOpAt?: number;
  /**
   * A full disk: a writev that would make a file longer than this many bytes writes what fits and
   * then fails with ENOSPC, like a short write on a full file system.
   */
  fileBytesMax?: number;
  /**
   * A full disk for one folder: a writev into a file under `dir` that would take the regular files
   * under it past `bytes` in all fails with ENOSPC and writes nothing (removing files there frees
   * their bytes, as on a real file system).
   */
  folderBytesMax?: { dir: string; bytes: number };
  /** Fail every truncate from the Nth on (1-based); undefined = never. */
  failTruncateAt?: number;
  /** Fail every read from the Nth on (1-based); undefined = never. */
  failReadAt?: number;
  /** Fail writes to files whose name ends with this (e.g. '.cleaned'); undefined = none. */
  failWritesToSuffix?: string;
  /** Fail the next fdatasync of a file whose name ends with this (e.g. '.journal'; once, then cleared). */
  failNextDatasyncOfSuffix?: string;
  /** Fail unlinks of files whose name ends with this (e.g. 'LOCK'); undefined = none. */
  failUnlinksOfSuffix?: string;
  /** Fail the Nth close (1-based, counted in closeCount; the file is closed all the same, as on Linux); undefined = never. */
  failCloseAt?: number;
}

/**
 * The real file system with counters and injectable faults, for tests that need to see syscalls
 * (how many fdatasyncs a group commit made) or make one fail. It also knows which of its files are
 * open: every instance made during a test is checked when the test ends (no-stray-warnings.ts), so a
 * path that fails part-way and forgets to close a file fails the test that took it.
 */
export class FaultyFileSystem implements FileSystem {
  /** Instances made since the last `takeInstances()`. */
  static #instances: FaultyFileSystem[] = [];
  /** The instances made since the last call, forgetting them. */
  static takeInstances(): FaultyFileSystem[] {
    return FaultyFileSystem.#instances.splice(0);
  }

  readonly inner = new NodeFileSystem();
  /** Paths of the files opened through this file system and not closed yet (one entry per open). */
  readonly openFiles: string[] = [];
  datasyncCount = 0;
  writevCount = 0;
  /** Directory operations so far (rename, unlink, syncDir), for crash-point enumeration. */
  metaOpCount = 0;
  truncateCount = 0;
  readCount = 0;
  closeCount = 0;
  plan: FaultPlan = {};

  constructor() {
    FaultyFileSystem.#instances.push(this);
  }

  #metaOp(what: string): void {
    this.metaOpCount++;
    if (this.plan.failMetaOpAt !== undefined && this.metaOpCount >= this.plan.failMetaOpAt) {
      throw Object.assign(new Error(`EIO: injected ${what} failure`), { code: 'EIO' });
    }
  }

  async open(path: string, flags: OpenFlags, mode?: number): Promise<FileHandle> {
    const handle = await this.inner.open(path, flags, mode);
    const self = this;
    self.openFiles.push(path);
    let closed = false;
    return {
      path: handle.path,
      async writev(buffers, position) {
        self.writevCount++;
        if (
          (self.plan.failWritevAt !== undefined && self.writevCount >= self.plan.failWritevAt) ||
          (self.plan.failWritesToSuffix !== undefined &&
            path.endsWith(self.plan.failWritesToSuffix))
        ) {
          throw Object.assign(new Error('EIO: injected write failure'), { code: 'EIO' });
        }
        const folder = self.plan.folderBytesMax;
        if (folder !== undefined && path.startsWith(folder.dir + '/')) {
          const size = await handle.sizeBytes();
          const end = position + buffers.reduce((sum, b) => sum + b.length, 0);
          const growth = Math.max(end, size) - size;
          if (bytesUnder(folder.dir) + growth > folder.bytes)
            throw Object.assign(new Error('ENOSPC: no space left on device (injected)'), {
              code: 'ENOSPC',
            });
        }
        const limit = self.plan.fileBytesMax;
        const totalBytes = buffers.reduce((sum, b) => sum + b.length, 0);
        if (limit !== undefined && position + totalBytes > limit) {
          const fits = Buffer.concat(buffers).subarray(0, Math.max(0, limit - position));
          if (fits.length > 0) await handle.writev([fits], position);
          throw Object.assign(new Error('ENOSPC: no space left on device (injected)'), {
            code: 'ENOSPC',
          });
        }
        return handle.writev(buffers, position);
      },
      async read(b, o, l, p) {
        self.readCount++;
        if (self.plan.failReadAt !== undefined && self.readCount >= self.plan.failReadAt) {
          throw Object.assign(new Error('EIO: injected read failure'), { code: 'EIO' });
        }
        return handle.read(b, o, l, p);
      },
      async datasync() {
        self.datasyncCount++;
        if (
          (self.plan.failDatasyncAt !== undefined &&
            self.datasyncCount === self.plan.failDatasyncAt) ||
          (self.plan.failNextDatasyncOfSuffix !== undefined &&
            path.endsWith(self.plan.failNextDatasyncOfSuffix) &&
            (self.plan.failNextDatasyncOfSuffix = undefined) === undefined)
        ) {
          throw Object.assign(new Error('EIO: injected fdatasync failure'), { code: 'EIO' });
        }
        return handle.datasync();
      },
      async truncate(n) {
        self.truncateCount++;
        if (
          self.plan.failTruncateAt !== undefined &&
          self.truncateCount >= self.plan.failTruncateAt
        ) {
          throw Object.assign(new Error('EIO: injected truncate failure'), { code: 'EIO' });
        }
        return handle.truncate(n);
      },
      sizeBytes: () => handle.sizeBytes(),
      async close() {
        self.closeCount++;
        const fail =
          self.plan.failCloseAt !== undefined && self.closeCount === self.plan.failCloseAt;
        if (!closed) {
          closed = true;
          self.openFiles.splice(self.openFiles.indexOf(path), 1);
        }
        await handle.close();
        // As on Linux, a close that reports an error has still released the file.
        if (fail) throw Object.assign(new Error('EIO: injected close failure'), { code: 'EIO' });
      },
    };
  }

  /**
   * From now on, every file opened gets `hooks(file, handle, flags)`'s methods in place of its
   * handle's (each hook may call the handle's own); the others stay as they are. For a test that must
   * see or delay particular writes or fdatasyncs; the counters and the plan still apply underneath.
   */
  hookHandles(
    hooks: (file: string, handle: FileHandle, flags: OpenFlags) => Partial<FileHandle>,
  ): void {
    const open = this.open.bind(this);
    this.open = async (file, flags, mode) => {
      const handle = await open(file, flags, mode);
      return { ...handle, ...hooks(file, handle, flags) };
    };
  }

  async readFile(path: string) {
    this.readCount++;
    if (this.plan.failReadAt !== undefined && this.readCount >= this.plan.failReadAt)
      throw Object.assign(new Error('EIO: injected read failure'), { code: 'EIO' });
    return this.inner.readFile(path);
  }
  readdir(path: string) {
    return this.inner.readdir(path);
  }
  mkdir(path: string) {
    return this.inner.mkdir(path);
  }
  async rename(from: string, to: string) {
    this.#metaOp('rename');
    return this.inner.rename(from, to);
  }
  async unlink(path: string) {
    this.#metaOp('unlink');
    if (this.plan.failUnlinksOfSuffix !== undefined && path.endsWith(this.plan.failUnlinksOfSuffix))
      throw Object.assign(new Error('EIO: injected unlink failure'), { code: 'EIO' });
    return this.inner.unlink(path);
  }
  removeTree(path: string) {
    return this.inner.removeTree(path);
  }
  async syncDir(path: string) {
    this.#metaOp('syncDir');
    return this.inner.syncDir(path);
  }
  sizeBytes(path: string) {
    return this.inner.sizeBytes(path);
  }
  holdLock(dir: string): Promise<DirectoryLockResult> {
    return this.inner.holdLock(dir);
  }
  /** The real free bytes, or under `folderBytesMax`'s folder what is left of its bytes. */
  async freeBytes(path: string): Promise<number> {
    const folder = this.plan.folderBytesMax;
    if (folder !== undefined && (path === folder.dir || path.startsWith(folder.dir + '/')))
      return Math.max(0, folder.bytes - bytesUnder(folder.dir));
    return this.inner.freeBytes(path);
  }
}
