/**
 * OverlayFileSystem: a file-system port that reads another one and never writes to it. Every change
 * (a write, a truncation, a rename, an unlink, a new file or directory) is kept in memory, above the
 * files below, and read back from there; the files below are only ever opened for reading. A store
 * opened read-only recovers through it: what recovery would repair on the disk (a torn tail cut, a
 * journal's batches written into a log, `store.json` updated) is repaired in memory, so the state it
 * serves is the one a real open would serve, while the folder, possibly in use by a live process,
 * is left exactly as it was.
 *
 * Model. A path resolves, in order, to:
 * - a node of the overlay: a file (bytes of its own, or a file below read through an extent list)
 *   or a directory created here;
 * - a deletion recorded here (the path, or a directory above it, was unlinked, renamed away or
 *   removed): absent;
 * - the file system below, as it is when the call is made.
 * A file below is copied lazily: opening it for writing makes an overlay node that reads its bytes
 * from below and keeps only the extents written since (and a size of its own once truncated or
 * grown), so a 64 MiB segment costs memory only for what recovery rewrites in it.
 *
 * Invariants: the port below sees only `open(path, 'r')`, `readFile`, `readdir`, `sizeBytes`,
 * `identity` and `fileType`. fdatasync and directory fsync are no-ops (nothing here is meant to
 * outlive the process). There is no kernel lock (`holdLock` is absent): the overlay is private to
 * whoever made it.
 *
 * A live owner may change the files below while they are read: its compaction renames compacted
 * segments over the ones they replace and deletes the rest. Each file is read through one handle
 * (one file, whatever is renamed over its name meanwhile), but files read one after another can
 * mix states: an old segment holding a value beside a compacted one that dropped the tombstone
 * deleting it. So the overlay notes which file (`identity`: device, inode and creation time) it
 * read under each path, the first time, and `changedBelow` names a path whose file is no longer the
 * one read (or was not the same from one read to the next). What was read is a state the folder held, at the
 * moment `changedBelow` asks, when it names none: every file read is still in place. On a port
 * without `identity` nothing is noted and `changedBelow` names nothing.
 */
import * as path from 'node:path';
import type { FileHandle, FileSystem, OpenFlags } from './file-system.js';

/** A file of the overlay: its bytes are `below` (a path of the port below, read lazily) overlaid by `extents`. */
interface OverlayFile {
  kind: 'file';
  /** The file below whose bytes show through where no extent was written; null for a file made here. */
  below: string | null;
  /** How many of its first bytes show through (its size when it was taken over, less what was cut since). */
  belowBytes: number;
  /** Bytes written here, in the order written (a later extent wins where they overlap). */
  extents: { position: number; bytes: Buffer }[];
  /** The file's size. */
  sizeBytes: number;
}

interface OverlayDirectory {
  kind: 'dir';
  /** Made where the overlay had removed one: nothing below shows through it. */
  opaque: boolean;
}

type Node = OverlayFile | OverlayDirectory | 'deleted';

function fsError(code: string, message: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${code}: ${message}`);
  error.code = code;
  return error;
}

export class OverlayFileSystem implements FileSystem {
  readonly #below: FileSystem;
  /** Overlay nodes by absolute path. */
  readonly #nodes = new Map<string, Node>();

  /** The file read below under each path, by the first read of it (see `changedBelow`). */
  readonly #readBelow = new Map<string, string | null>();
  /** Paths found holding another file from one read to the next. */
  readonly #changed = new Set<string>();

  constructor(below: FileSystem) {
    this.#below = below;
  }

  /** Notes that the file read under `p` was `identity` (null: none was there). */
  #noteRead(p: string, identity: string | null): void {
    if (!this.#readBelow.has(p)) this.#readBelow.set(p, identity);
    else if (this.#readBelow.get(p) !== identity) this.#changed.add(p);
  }

  /** Notes which file is under `p` below, before it is read by path (a change after is then seen). */
  async #notePath(p: string): Promise<void> {
    if (this.#below.identity !== undefined) this.#noteRead(p, await this.#below.identity(p));
  }

  /** `#openBelow`, for the handles and reads of overlay files (whose bytes below are read late). */
  readonly #openBelowBound = (p: string): Promise<FileHandle> => this.#openBelow(p);

  /** Opens `p` below to read, noting which file the handle reads. */
  async #openBelow(p: string): Promise<FileHandle> {
    const handle = await this.#below.open(p, 'r');
    if (handle.identity !== undefined) {
      try {
        this.#noteRead(p, await handle.identity());
      } catch (error) {
        await handle.close();
        throw error;
      }
    }
    return handle;
  }

  /**
   * A path read below whose file has changed since (renamed over, deleted, or made) or changed
   * between two reads; undefined when every file read is still the one read. Paths for which
   * `ignored` answers true are not looked at (a file whose replacement cannot change what was
   * read from the rest).
   */
  async changedBelow(
    ignored: (path: string) => boolean = () => false,
  ): Promise<string | undefined> {
    if (this.#below.identity === undefined) return undefined;
    for (const p of this.#changed) if (!ignored(p)) return p;
    for (const [p, identity] of this.#readBelow)
      if (!ignored(p) && (await this.#below.identity(p)) !== identity) return p;
    return undefined;
  }

  /** Bytes the overlay holds in memory (written extents), for tests and reports. */
  get heldBytes(): number {
    let total = 0;
    for (const node of this.#nodes.values())
      if (node !== 'deleted' && node.kind === 'file')
        for (const e of node.extents) total += e.bytes.length;
    return total;
  }

  /** The overlay's node for `p`, 'deleted' when it or a directory above it was removed here, else undefined (look below). */
  #node(p: string): Node | undefined {
    const own = this.#nodes.get(p);
    if (own !== undefined) return own;
    for (let dir = path.dirname(p); ; dir = path.dirname(dir)) {
      const above = this.#nodes.get(dir);
      if (above === 'deleted') return 'deleted';
      if (above !== undefined) return above.kind === 'dir' && above.opaque ? 'deleted' : undefined;
      if (dir === path.dirname(dir)) return undefined;
    }
  }

  /** The file at `p` as an overlay node, made from the file below on first use; ENOENT when absent. */
  async #fileNode(p: string): Promise<OverlayFile> {
    const node = this.#node(p);
    if (node === 'deleted') throw fsError('ENOENT', `no such file: ${p}`);
    if (node !== undefined) {
      if (node.kind === 'dir') throw fsError('EISDIR', `is a directory: ${p}`);
      return node;
    }
    await this.#notePath(p);
    const sizeBytes = await this.#below.sizeBytes(p);
    if (sizeBytes === null) throw fsError('ENOENT', `no such file: ${p}`);
    const file: OverlayFile = {
      kind: 'file',
      below: p,
      belowBytes: sizeBytes,
      extents: [],
      sizeBytes,
    };
    this.#nodes.set(p, file);
    return file;
  }

  async #exists(p: string): Promise<boolean> {
    const node = this.#node(p);
    if (node === 'deleted') return false;
    if (node !== undefined) return true;
    if ((await this.#below.sizeBytes(p)) !== null) return true;
    try {
      return (await this.#below.readdir(p)).length > 0;
    } catch (error) {
      // A file made below since the size was asked for (the owner is live): it is there.
      if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') return true;
      throw error;
    }
  }

  async open(filePath: string, flags: OpenFlags): Promise<FileHandle> {
    const p = path.resolve(filePath);
    if (flags === 'w' || flags === 'wx') {
      const node = this.#node(p);
      const present =
        node === 'deleted'
          ? false
          : node !== undefined || (await this.#below.sizeBytes(p)) !== null;
      if (present && flags === 'wx') throw fsError('EEXIST', `file already exists: ${p}`);
      if (node !== undefined && node !== 'deleted' && node.kind === 'dir')
        throw fsError('EISDIR', `is a directory: ${p}`);
      const file: OverlayFile = {
        kind: 'file',
        below: null,
        belowBytes: 0,
        extents: [],
        sizeBytes: 0,
      };
      this.#nodes.set(p, file);
      return new OverlayHandle(filePath, file, this.#openBelowBound, false);
    }
    if (flags === 'r' && this.#node(p) === undefined) return this.#openBelow(p);
    const file = await this.#fileNode(p);
    return new OverlayHandle(filePath, file, this.#openBelowBound, flags === 'r');
  }

  async readFile(filePath: string): Promise<Buffer | null> {
    const p = path.resolve(filePath);
    const node = this.#node(p);
    if (node === 'deleted') return null;
    if (node === undefined) {
      await this.#notePath(p);
      return this.#below.readFile(p);
    }
    if (node.kind === 'dir') throw fsError('EISDIR', `is a directory: ${p}`);
    const bytes = Buffer.alloc(node.sizeBytes);
    await readInto(node, this.#openBelowBound, bytes, 0, node.sizeBytes, 0);
    return bytes;
  }

  async readdir(dirPath: string): Promise<string[]> {
    const p = path.resolve(dirPath);
    const node = this.#node(p);
    if (node === 'deleted' || (node !== undefined && node.kind === 'file')) return [];
    // A directory made here (over nothing, or over one removed here) shows nothing from below.
    const names = new Set(node === undefined ? await this.#below.readdir(p) : []);
    for (const [q, child] of this.#nodes) {
      if (path.dirname(q) !== p) continue;
      const name = path.basename(q);
      if (child === 'deleted') names.delete(name);
      else names.add(name);
    }
    return [...names].sort();
  }

  async mkdir(dirPath: string): Promise<void> {
    const p = path.resolve(dirPath);
    for (let dir = p; ; dir = path.dirname(dir)) {
      const node = this.#node(dir);
      if (node !== undefined && node !== 'deleted') {
        if (node.kind === 'file') throw fsError('EEXIST', `a file is in the way: ${dir}`);
        break;
      }
      // The port tells a directory below only by its entries: an empty one is made again here,
      // which reads the same.
      if (node === undefined && (await this.#below.readdir(dir)).length > 0) break;
      this.#nodes.set(dir, { kind: 'dir', opaque: node === 'deleted' });
      if (dir === path.dirname(dir)) break;
    }
  }

  async rename(fromPath: string, toPath: string): Promise<void> {
    const from = path.resolve(fromPath);
    const to = path.resolve(toPath);
    if (from === to) return;
    const node = this.#node(from);
    if (node === 'deleted') throw fsError('ENOENT', `no such file: ${from}`);
    if (node !== undefined && node.kind === 'dir') {
      // Directories are renamed by the store only when it sets a damaged one aside.
      const moved: [string, Node][] = [];
      for (const [q, child] of this.#nodes)
        if (q === from || q.startsWith(from + path.sep)) moved.push([q, child]);
      for (const [q] of moved) this.#nodes.delete(q);
      for (const [q, child] of moved) this.#nodes.set(to + q.slice(from.length), child);
      this.#nodes.set(from, 'deleted');
      return;
    }
    const file = await this.#fileNode(from);
    this.#nodes.set(to, file);
    this.#nodes.set(from, 'deleted');
  }

  async unlink(filePath: string): Promise<void> {
    const p = path.resolve(filePath);
    if (await this.#exists(p)) this.#nodes.set(p, 'deleted');
  }

  async removeTree(dirPath: string): Promise<void> {
    const p = path.resolve(dirPath);
    for (const q of [...this.#nodes.keys()]) if (q.startsWith(p + path.sep)) this.#nodes.delete(q);
    this.#nodes.set(p, 'deleted');
  }

  async syncDir(): Promise<void> {}

  async sizeBytes(filePath: string): Promise<number | null> {
    const p = path.resolve(filePath);
    const node = this.#node(p);
    if (node === 'deleted') return null;
    if (node === undefined) {
      await this.#notePath(p);
      return this.#below.sizeBytes(p);
    }
    return node.kind === 'file' ? node.sizeBytes : null;
  }

  /** What is under `filePath` here; below, as the port below says ('file' where it cannot tell). */
  async fileType(filePath: string): Promise<string> {
    const p = path.resolve(filePath);
    const node = this.#node(p);
    if (node === 'deleted') return 'missing';
    if (node === undefined) return (await this.#below.fileType?.(p)) ?? 'file';
    return node.kind === 'file' ? 'file' : 'a directory';
  }
}

/** Reads `length` bytes of `file` at `position` into `buffer[offset...]`: the file below, then the extents over it. */
async function readInto(
  file: OverlayFile,
  openBelow: (path: string) => Promise<FileHandle>,
  buffer: Buffer,
  offset: number,
  length: number,
  position: number,
): Promise<number> {
  const n = Math.max(0, Math.min(length, file.sizeBytes - position));
  if (n === 0) return 0;
  buffer.fill(0, offset, offset + n);
  const fromBelow = Math.min(n, file.belowBytes - position);
  if (file.below !== null && fromBelow > 0) {
    const handle = await openBelow(file.below);
    try {
      let got = 0;
      while (got < fromBelow) {
        const r = await handle.read(buffer, offset + got, fromBelow - got, position + got);
        if (r === 0) break; // the file below is shorter (cut by its owner): zeros, as past a hole
        got += r;
      }
    } finally {
      await handle.close();
    }
  }
  for (const { position: at, bytes } of file.extents) {
    const start = Math.max(at, position);
    const end = Math.min(at + bytes.length, position + n);
    if (start < end) bytes.copy(buffer, offset + (start - position), start - at, end - at);
  }
  return n;
}

class OverlayHandle implements FileHandle {
  readonly path: string;
  readonly #file: OverlayFile;
  readonly #openBelow: (path: string) => Promise<FileHandle>;
  readonly #readOnly: boolean;
  #closed = false;

  constructor(
    filePath: string,
    file: OverlayFile,
    openBelow: (path: string) => Promise<FileHandle>,
    readOnly: boolean,
  ) {
    this.path = filePath;
    this.#file = file;
    this.#openBelow = openBelow;
    this.#readOnly = readOnly;
  }

  #check(write: boolean): void {
    if (this.#closed) throw fsError('EBADF', `file closed: ${this.path}`);
    if (write && this.#readOnly) throw fsError('EBADF', `opened for reading only: ${this.path}`);
  }

  async writev(buffers: readonly Buffer[], position: number): Promise<void> {
    this.#check(true);
    const bytes = Buffer.concat(buffers);
    if (bytes.length === 0) return;
    this.#file.extents.push({ position, bytes });
    this.#file.sizeBytes = Math.max(this.#file.sizeBytes, position + bytes.length);
  }

  read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    this.#check(false);
    return readInto(this.#file, this.#openBelow, buffer, offset, length, position);
  }

  async datasync(): Promise<void> {
    this.#check(false);
  }

  async truncate(sizeBytes: number): Promise<void> {
    this.#check(true);
    const file = this.#file;
    if (sizeBytes < file.sizeBytes) {
      // What lies past the new end is gone: it reads as zeros if the file grows again.
      file.belowBytes = Math.min(file.belowBytes, sizeBytes);
      file.extents = file.extents
        .filter((e) => e.position < sizeBytes)
        .map((e) =>
          e.position + e.bytes.length <= sizeBytes
            ? e
            : { position: e.position, bytes: e.bytes.subarray(0, sizeBytes - e.position) },
        );
    }
    file.sizeBytes = sizeBytes;
  }

  async sizeBytes(): Promise<number> {
    this.#check(false);
    return this.#file.sizeBytes;
  }

  async close(): Promise<void> {
    this.#closed = true;
  }
}
