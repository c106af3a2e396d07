/**
 * A simulated disk: a tree of directories and files that keeps, for each, what was written and what
 * is durable, so that a power loss can be played against the store with every outcome POSIX allows.
 *
 * Model (what a crash-safe program may rely on, and no more):
 * - File data lives in SECTOR_BYTES sectors. A write changes the file's contents at once (the page
 *   cache) and marks its sectors dirty; fdatasync copies the dirty sectors and the size into the
 *   durable state. A process crash loses nothing (the page cache survives it).
 * - A power loss keeps the durable state, and for each dirty sector independently (so writes come
 *   back reordered and torn at sector boundaries) one outcome chosen by the seed: its new bytes, or
 *   its old ones (zeros past the durable size). A sector's write is atomic, as disks make it: a
 *   sector is never torn inside, and its bytes that were durable and not rewritten are never lost. A size that was not made durable comes
 *   back as the durable size or the written one; sectors past the durable size that were not kept
 *   read as zeros.
 * - A directory's entries (creations, renames, unlinks, mkdir, removal of a subtree) are durable only
 *   after an fsync of that directory. A power loss keeps, per directory, a seed-chosen prefix of the
 *   operations made since its last fsync (a journal commits them in order) and forgets the rest. A
 *   directory whose own creation is forgotten is gone with everything in it.
 * - A failed writeback (of an fdatasync, or of the kernel's own flushing in the background) is
 *   played as Linux leaves it: each dirty sector reached the device or not (the seed chooses), the
 *   size did or did not, and every one of them is marked clean. The page cache keeps the new bytes,
 *   so reads still return them, but a later fdatasync succeeds without writing them again: only a
 *   program that gives up on the file after the error is safe. Until the cache drops those clean
 *   pages (`evictClean`, at a seed-chosen read of the file, in this process or a later one): reads
 *   then return what the device has. The error is counted on the file (`writebackErrors`, Linux's
 *   errseq): each open descriptor reports it once, at its next fdatasync, whichever descriptor's
 *   writeback failed; a descriptor opened later reports it too if no one has yet.
 * - Faults at rest: `rot` flips a bit of a file's durable bytes (the store must detect it, never
 *   serve it); `latentSector` makes reads of a sector fail with EIO until a write covers it.
 *
 * Everything here is synchronous and deterministic; sim-file-system.ts schedules these operations as
 * I/O completions. Paths are absolute, with '/' separators.
 */
import { createHash } from 'node:crypto';
import type { SimRandom } from './sim-random.js';

/** Unit of durability and of tearing. */
export const SECTOR_BYTES = 512;

/** An errno-carrying error like node:fs raises. */
export function fsError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

/** A file's contents: what was written, and what is durable. */
export class SimFile {
  readonly kind = 'file';
  readonly id: number;
  data = Buffer.alloc(0);
  sizeBytes = 0;
  durable = Buffer.alloc(0);
  durableSizeBytes = 0;
  /** Sectors written since they were last made durable. */
  readonly dirty = new Set<number>();
  /** Sectors whose reads fail with EIO until a write covers them. */
  readonly latent = new Set<number>();
  /** A failed fdatasync left clean sectors whose bytes the device may not have (`failedSync`). */
  cleanNotDurable = false;
  /** Writeback errors so far (Linux's errseq counter of the file's pages). */
  writebackErrors = 0;
  /** Whether some descriptor has reported the latest writeback error. */
  writebackErrorSeen = true;

  constructor(id: number) {
    this.id = id;
  }

  #reserve(bytes: number): void {
    if (this.data.length >= bytes) return;
    const grown = Buffer.alloc(Math.max(bytes, this.data.length * 2, 4096));
    this.data.copy(grown, 0, 0, this.sizeBytes);
    this.data = grown;
  }

  write(bytes: Buffer, position: number): void {
    if (bytes.length === 0) return;
    this.#reserve(position + bytes.length);
    // A write past the end leaves a hole that reads as zeros.
    if (position > this.sizeBytes) this.data.fill(0, this.sizeBytes, position);
    bytes.copy(this.data, position);
    this.sizeBytes = Math.max(this.sizeBytes, position + bytes.length);
    for (
      let s = Math.floor(position / SECTOR_BYTES);
      s * SECTOR_BYTES < position + bytes.length;
      s++
    ) {
      this.dirty.add(s);
      this.latent.delete(s);
    }
  }

  read(into: Buffer, offset: number, length: number, position: number): number {
    const end = Math.min(this.sizeBytes, position + length);
    if (end <= position) return 0;
    for (let s = Math.floor(position / SECTOR_BYTES); s * SECTOR_BYTES < end; s++) {
      if (this.latent.has(s))
        throw fsError('EIO', `latent sector error at byte ${s * SECTOR_BYTES} of file #${this.id}`);
    }
    this.data.copy(into, offset, position, end);
    return end - position;
  }

  truncate(sizeBytes: number): void {
    if (sizeBytes < this.sizeBytes) {
      this.data.fill(0, sizeBytes, this.sizeBytes);
      for (let s = Math.floor(sizeBytes / SECTOR_BYTES); s * SECTOR_BYTES < this.sizeBytes; s++)
        this.dirty.add(s);
    } else if (sizeBytes > this.sizeBytes) {
      this.#reserve(sizeBytes);
      this.data.fill(0, this.sizeBytes, sizeBytes);
      for (let s = Math.floor(this.sizeBytes / SECTOR_BYTES); s * SECTOR_BYTES < sizeBytes; s++)
        this.dirty.add(s);
    }
    this.sizeBytes = sizeBytes;
  }

  /** fdatasync: the written bytes and the size become durable. */
  sync(): void {
    if (this.durable.length < this.sizeBytes) {
      const grown = Buffer.alloc(Math.max(this.sizeBytes, this.durable.length * 2));
      this.durable.copy(grown, 0, 0, this.durableSizeBytes);
      this.durable = grown;
    }
    for (const s of this.dirty) {
      const start = s * SECTOR_BYTES;
      if (start >= this.sizeBytes) continue;
      this.data.copy(this.durable, start, start, Math.min(this.sizeBytes, start + SECTOR_BYTES));
    }
    if (this.durableSizeBytes > this.sizeBytes)
      this.durable.fill(0, this.sizeBytes, this.durableSizeBytes);
    this.durableSizeBytes = this.sizeBytes;
    this.dirty.clear();
  }

  /**
   * A failed fdatasync (Linux): a seed-chosen part of the dirty sectors, and perhaps the size, became
   * durable, and all of them are clean now, so no later fdatasync writes the rest.
   */
  failedSync(random: SimRandom): void {
    const size = random.chance(0.5) ? this.sizeBytes : this.durableSizeBytes;
    if (this.durable.length < size) {
      const grown = Buffer.alloc(Math.max(size, this.durable.length * 2));
      this.durable.copy(grown, 0, 0, this.durableSizeBytes);
      this.durable = grown;
    }
    if (size > this.durableSizeBytes) this.durable.fill(0, this.durableSizeBytes, size);
    for (const s of [...this.dirty].sort((a, b) => a - b)) {
      const start = s * SECTOR_BYTES;
      if (start >= Math.min(size, this.sizeBytes) || !random.chance(0.5)) continue;
      this.data.copy(
        this.durable,
        start,
        start,
        Math.min(size, this.sizeBytes, start + SECTOR_BYTES),
      );
    }
    if (this.durableSizeBytes > size) this.durable.fill(0, size, this.durableSizeBytes);
    this.durableSizeBytes = size;
    this.dirty.clear();
    this.cleanNotDurable = true;
    this.writebackErrors++;
    this.writebackErrorSeen = false;
  }

  /**
   * The page cache drops the file's clean pages (memory pressure, at any time): later reads take
   * them from the device. That changes what reads return only after a failed fdatasync: the sectors
   * it marked clean then read as what reached the device (their old bytes, or zeros past the
   * durable size), no longer as what was written.
   */
  evictClean(): void {
    if (!this.cleanNotDurable) return;
    for (let start = 0; start < this.sizeBytes; start += SECTOR_BYTES) {
      if (this.dirty.has(start / SECTOR_BYTES)) continue;
      const end = Math.min(this.sizeBytes, start + SECTOR_BYTES);
      if (start < this.durableSizeBytes)
        this.durable.copy(this.data, start, start, Math.min(end, this.durableSizeBytes));
      if (end > this.durableSizeBytes)
        this.data.fill(0, Math.max(start, this.durableSizeBytes), end);
    }
    this.cleanNotDurable = false;
  }

  /** The file after a power loss: durable bytes, plus a seed-chosen fate for each dirty sector. */
  powerLoss(random: SimRandom): void {
    if (!this.cleanNotDurable && this.dirty.size === 0 && this.sizeBytes === this.durableSizeBytes)
      return;
    this.cleanNotDurable = false;
    const size =
      this.sizeBytes === this.durableSizeBytes || random.chance(0.5)
        ? this.durableSizeBytes
        : this.sizeBytes;
    const next = Buffer.alloc(Math.max(size, 1));
    this.durable.copy(next, 0, 0, Math.min(size, this.durableSizeBytes));
    for (const s of [...this.dirty].sort((a, b) => a - b)) {
      const start = s * SECTOR_BYTES;
      if (start >= size) continue;
      const end = Math.min(size, start + SECTOR_BYTES);
      // Each sector is written whole or not at all (devices make a sector's write atomic): it holds
      // its new bytes, or its old ones (zeros past the durable size).
      if (random.chance(0.5) && start < this.sizeBytes)
        this.data.copy(next, start, start, Math.min(end, this.sizeBytes));
    }
    this.data = Buffer.from(next);
    this.durable = next;
    this.sizeBytes = this.durableSizeBytes = size;
    this.dirty.clear();
    // The machine restarted: no error is left in memory to report.
    this.writebackErrorSeen = true;
  }
}

/** One entry change of a directory: a node linked under a name, or null for an unlink. */
type EntryChange = readonly [name: string, node: SimNode | null];

/** A directory: its entries now, and as of its last fsync. */
export class SimDir {
  readonly kind = 'dir';
  readonly id: number;
  readonly entries = new Map<string, SimNode>();
  durableEntries = new Map<string, SimNode>();
  /**
   * Operations since the last fsync, in order, each atomic: one change, or the two of a rename
   * inside this directory (a journal commits a rename whole: the file is under one name or the other).
   */
  pending: EntryChange[][] = [];

  constructor(id: number) {
    this.id = id;
  }

  apply(changes: EntryChange[]): void {
    for (const [name, node] of changes) {
      if (node === null) this.entries.delete(name);
      else this.entries.set(name, node);
    }
    this.pending.push(changes);
  }

  link(name: string, node: SimNode | null): void {
    this.apply([[name, node]]);
  }

  sync(): void {
    this.durableEntries = new Map(this.entries);
    this.pending = [];
  }

  /** Nodes linked here now, durably, or by a pending change: any of them may be here after a power loss. */
  *nodes(): Generator<SimNode> {
    yield* this.entries.values();
    yield* this.durableEntries.values();
    for (const changes of this.pending)
      for (const [, node] of changes) if (node !== null) yield node;
  }

  /** Keeps the durable entries plus a seed-chosen prefix of the pending operations. */
  powerLoss(random: SimRandom): void {
    if (this.pending.length === 0) return;
    const kept = random.chance(0.3)
      ? 0
      : random.chance(0.3)
        ? this.pending.length
        : random.int(0, this.pending.length);
    const entries = new Map(this.durableEntries);
    for (const changes of this.pending.slice(0, kept)) {
      for (const [name, node] of changes) {
        if (node === null) entries.delete(name);
        else entries.set(name, node);
      }
    }
    this.entries.clear();
    for (const [name, node] of entries) this.entries.set(name, node);
    this.durableEntries = new Map(entries);
    this.pending = [];
  }
}

/** A node of the tree. */
export type SimNode = SimFile | SimDir;

/** A bit flipped at rest, for the checker to explain a CORRUPT_MESSAGE with. */
export interface RotRecord {
  path: string;
  position: number;
}

/** The simulated disk. */
export class SimDisk {
  readonly root: SimDir;
  #nextId = 1;
  /** Every fault at rest injected so far (paths as they were then). */
  readonly rotted: RotRecord[] = [];
  readonly latentSectors: RotRecord[] = [];

  constructor() {
    this.root = new SimDir(this.#nextId++);
    this.root.sync();
  }

  static parts(path: string): string[] {
    if (!path.startsWith('/')) throw new RangeError(`simulated paths are absolute: ${path}`);
    return path.split('/').filter((p) => p.length > 0 && p !== '.');
  }

  lookup(path: string): SimNode | undefined {
    let node: SimNode = this.root;
    for (const part of SimDisk.parts(path)) {
      if (node.kind !== 'dir') return undefined;
      const next: SimNode | undefined = node.entries.get(part);
      if (next === undefined) return undefined;
      node = next;
    }
    return node;
  }

  /** The directory holding `path` and the last name of it; ENOENT/ENOTDIR when the parent is missing. */
  parentOf(path: string): { dir: SimDir; name: string } {
    const parts = SimDisk.parts(path);
    const name = parts.pop();
    if (name === undefined) throw fsError('EPERM', 'the root has no parent');
    const dir = this.lookup(`/${parts.join('/')}`);
    if (dir === undefined) throw fsError('ENOENT', `no such directory: /${parts.join('/')}`);
    if (dir.kind !== 'dir') throw fsError('ENOTDIR', `not a directory: /${parts.join('/')}`);
    return { dir, name };
  }

  file(path: string): SimFile {
    const node = this.lookup(path);
    if (node === undefined) throw fsError('ENOENT', `no such file: ${path}`);
    if (node.kind !== 'file') throw fsError('EISDIR', `is a directory: ${path}`);
    return node;
  }

  createFile(path: string, exclusive: boolean): SimFile {
    const { dir, name } = this.parentOf(path);
    const existing = dir.entries.get(name);
    if (existing !== undefined) {
      if (exclusive) throw fsError('EEXIST', `file exists: ${path}`);
      if (existing.kind !== 'file') throw fsError('EISDIR', `is a directory: ${path}`);
      existing.truncate(0);
      return existing;
    }
    const file = new SimFile(this.#nextId++);
    dir.link(name, file);
    return file;
  }

  mkdirp(path: string): void {
    let dir = this.root;
    for (const part of SimDisk.parts(path)) {
      const next = dir.entries.get(part);
      if (next === undefined) {
        const created = new SimDir(this.#nextId++);
        dir.link(part, created);
        dir = created;
      } else if (next.kind === 'dir') {
        dir = next;
      } else {
        throw fsError('EEXIST', `not a directory: ${part} in ${path}`);
      }
    }
  }

  rename(fromPath: string, toPath: string): void {
    const from = this.parentOf(fromPath);
    const node = from.dir.entries.get(from.name);
    if (node === undefined) throw fsError('ENOENT', `no such file: ${fromPath}`);
    const to = this.parentOf(toPath);
    const target = to.dir.entries.get(to.name);
    if (target !== undefined && target.kind !== node.kind)
      throw fsError(
        target.kind === 'dir' ? 'EISDIR' : 'ENOTDIR',
        `cannot rename ${fromPath} over ${toPath}`,
      );
    if (from.dir === to.dir) {
      from.dir.apply([
        [from.name, null],
        [to.name, node],
      ]);
    } else {
      // Across directories each side is its own operation: a power loss can keep either.
      from.dir.link(from.name, null);
      to.dir.link(to.name, node);
    }
  }

  unlink(path: string): void {
    const { dir, name } = this.parentOf(path);
    const node = dir.entries.get(name);
    if (node === undefined) return;
    if (node.kind === 'dir') throw fsError('EISDIR', `is a directory: ${path}`);
    dir.link(name, null);
  }

  removeTree(path: string): void {
    const { dir, name } = this.parentOf(path);
    if (dir.entries.has(name)) dir.link(name, null);
  }

  syncDir(path: string): void {
    const node = this.lookup(path);
    if (node === undefined) throw fsError('ENOENT', `no such directory: ${path}`);
    if (node.kind === 'dir') node.sync();
    // fsync of a file opened as a directory path: its data, as fsync would.
    else node.sync();
  }

  /** Every directory and file reachable now, depth first, names sorted. */
  *walk(dir: SimDir = this.root, prefix = ''): Generator<[string, SimNode]> {
    for (const name of [...dir.entries.keys()].sort()) {
      const node = dir.entries.get(name)!;
      const path = `${prefix}/${name}`;
      yield [path, node];
      if (node.kind === 'dir') yield* this.walk(node, path);
    }
  }

  /**
   * Power loss: every directory keeps its durable entries plus a prefix of its pending changes, every
   * file its durable bytes plus what the seed keeps of its dirty sectors. Unreachable files (unlinked,
   * or in a directory whose creation was forgotten) do not matter any more.
   */
  powerLoss(random: SimRandom): void {
    const dirs: SimDir[] = [];
    const files = new Set<SimFile>();
    const visit = (dir: SimDir, seen: Set<SimDir>) => {
      if (seen.has(dir)) return;
      seen.add(dir);
      dirs.push(dir);
      // Nodes linked now or durably: either may be reachable after the loss.
      for (const node of dir.nodes()) {
        if (node.kind === 'dir') visit(node, seen);
        else files.add(node);
      }
    };
    visit(this.root, new Set());
    for (const dir of dirs) dir.powerLoss(random);
    for (const file of [...files].sort((a, b) => a.id - b.id)) file.powerLoss(random);
  }

  /** Flips one bit of a random durable, unmodified sector of a file whose path passes `eligible`. */
  rot(random: SimRandom, eligible: (path: string) => boolean): RotRecord | undefined {
    const candidates = [...this.walk()].filter(
      ([path, node]) => node.kind === 'file' && node.durableSizeBytes > 0 && eligible(path),
    ) as [string, SimFile][];
    if (candidates.length === 0) return undefined;
    const [path, file] = random.pick(candidates);
    const position = random.int(0, file.durableSizeBytes - 1);
    if (file.dirty.has(Math.floor(position / SECTOR_BYTES))) return undefined;
    const bit = 1 << random.int(0, 7);
    file.durable[position]! ^= bit;
    file.data[position]! ^= bit;
    const record = { path, position };
    this.rotted.push(record);
    return record;
  }

  /**
   * Zeros one durable, unmodified sector of a random file whose path passes `eligible`, as a disk that
   * lost it (or remapped it to zeros) would read it back: damage a torn write can look like, in data
   * that was durable.
   */
  loseSector(random: SimRandom, eligible: (path: string) => boolean): RotRecord | undefined {
    const candidates = [...this.walk()].filter(
      ([path, node]) =>
        node.kind === 'file' && node.durableSizeBytes > SECTOR_BYTES && eligible(path),
    ) as [string, SimFile][];
    if (candidates.length === 0) return undefined;
    const [path, file] = random.pick(candidates);
    const sector = random.int(0, Math.floor(file.durableSizeBytes / SECTOR_BYTES) - 1);
    if (file.dirty.has(sector)) return undefined;
    file.durable.fill(0, sector * SECTOR_BYTES, (sector + 1) * SECTOR_BYTES);
    file.data.fill(0, sector * SECTOR_BYTES, (sector + 1) * SECTOR_BYTES);
    const record = { path, position: sector * SECTOR_BYTES };
    this.rotted.push(record);
    return record;
  }

  /** Removes a random file whose path passes `eligible`, durably (an operator's mistake, a file-system bug). */
  loseFile(random: SimRandom, eligible: (path: string) => boolean): RotRecord | undefined {
    const candidates = [...this.walk()].filter(
      ([path, node]) => node.kind === 'file' && eligible(path),
    );
    if (candidates.length === 0) return undefined;
    const [path] = random.pick(candidates);
    const { dir, name } = this.parentOf(path);
    dir.entries.delete(name);
    dir.durableEntries.delete(name);
    dir.pending = dir.pending
      .map((changes) => changes.filter(([n]) => n !== name))
      .filter((changes) => changes.length > 0);
    const record = { path, position: 0 };
    this.rotted.push(record);
    return record;
  }

  /** Makes reads of one sector of a random file fail until it is rewritten. */
  latentSector(random: SimRandom, eligible: (path: string) => boolean): RotRecord | undefined {
    const candidates = [...this.walk()].filter(
      ([path, node]) => node.kind === 'file' && node.sizeBytes > 0 && eligible(path),
    ) as [string, SimFile][];
    if (candidates.length === 0) return undefined;
    const [path, file] = random.pick(candidates);
    const sector = random.int(0, Math.ceil(file.sizeBytes / SECTOR_BYTES) - 1);
    file.latent.add(sector);
    const record = { path, position: sector * SECTOR_BYTES };
    this.latentSectors.push(record);
    return record;
  }

  /** sha256 over every path (relative to `under`) and file's bytes below `under`: equal for byte-identical trees. */
  digest(under = '/'): string {
    const hash = createHash('sha256');
    const top = this.lookup(under);
    if (top?.kind === 'dir') {
      for (const [path, node] of this.walk(top, '')) {
        hash.update(`${node.kind} ${path}\n`);
        if (node.kind === 'file') hash.update(node.data.subarray(0, node.sizeBytes));
      }
    }
    return hash.digest('hex');
  }
}
