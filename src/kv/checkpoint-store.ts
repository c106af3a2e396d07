/**
 * LMDB checkpoints of one offsets-bucket's materialized state (the `checkpoint` compaction
 * strategy): an image of the state as of log offset X (every batch below X applied, none above),
 * from which recovery replays only the log tail [X, end).
 *
 * Layout of the LMDB environment `<bucket>/checkpoint` (ordered-binary keys, binary values):
 * | key                    | value                                                            |
 * |------------------------|------------------------------------------------------------------|
 * | ['m', X]               | JSON meta: formatVersion, logOffset X, groupCount, snapshotCount, |
 * |                        | liveOffsets, checksum, createdAtMs, logDurable                   |
 * | ['g', X, groupId]      | u32 entryCount, u32 metadataCount, entryCount*6 float64 (the      |
 * |                        | GroupOffsets entry array), then per metadata: u32 entry index,   |
 * |                        | u32 byte length, UTF-8 bytes                                     |
 * | ['s', X, groupId]      | msgpack group snapshot                                           |
 * The meta is written in the same LMDB transaction as the entries and lists their checksum (the
 * sum mod 2^32 of xxh32(groupId) + xxh32(value) over all entries), so a checkpoint is either whole
 * and verified or ignored. Each write is one transaction committed and flushed (fsync) before the
 * promise resolves; the two newest checkpoints are kept, so when the newest is unreadable the
 * previous one plus the log tail still recover the state (segments are deleted only below it).
 * The LMDB write itself runs on lmdb-js's own writer thread, off the main thread.
 *
 * LMDB maps `data.mdb` and trusts it: a truncated or overwritten file crashes the process (SIGBUS,
 * SIGSEGV) rather than failing a read. So `open` checks the file through the FileSystem port before
 * LMDB maps it, and refuses a damaged one with CORRUPT_MESSAGE (the caller then recovers without
 * checkpoints); each write ends by sealing the file (checkpoint-seal.ts: its txnid and the checksum
 * of the bytes LMDB interprets, stored durably next to it), which the next open checks it against.
 *
 * lmdb-js also crashes the process (SIGSEGV) whenever LMDB's open of an environment fails: its error
 * path frees a structure, then reads it. Two ways an open fails are made to fail before it instead:
 * - for want of a file descriptor (EMFILE): `open` first takes and gives back a few descriptors
 *   itself, synchronously right before LMDB's own synchronous open, and a process at its open-file
 *   limit gets EMFILE from Node, which the store reports as LOG_STORAGE_ERROR saying which limit to
 *   raise;
 * - a failed write while LMDB creates a new environment (a full disk, a quota, a folder that
 *   cannot be written, a failing device): `open` first writes, fdatasyncs and removes a probe of
 *   64 KiB in the folder (`probeRoom`), and a failure is LOG_STORAGE_ERROR naming it. An
 *   environment that exists is only read by LMDB's open, after `inspectCheckpointFile` has read the
 *   same bytes through the port;
 * - a data or lock file this process may not open to write (another user's): `open` first opens
 *   each that exists to write, through the port (`checkLmdbFilesWritable`).
 * What is left ends the process still: an I/O error of LMDB's own open of its files (a device
 * failing between those checks and LMDB's calls). Where lmdb-js throws instead, its error is
 * LOG_STORAGE_ERROR naming the folder.
 */
import { getSystemErrorName } from 'node:util';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { packSnapshot, unpackSnapshot, xxh32 } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import { HeldPaths, addressSpaceLimit, reserveDescriptors, type FileSystem } from '../io/index.js';
import { assert, externalWork, nextTurn } from '../util/index.js';
import {
  LMDB_DATA_FILE,
  LMDB_LOCK_FILE,
  inspectCheckpointFile,
  sealCheckpointFile,
  setAsideCheckpointFile,
} from './checkpoint-seal.js';
import { GroupOffsets } from './group-offsets.js';
import type { OffsetsTableState } from './offsets-table-state.js';

/** The folder of a bucket's checkpoint environment, inside the bucket's log folder. */
export const CHECKPOINT_DIR = 'checkpoint';
const CHECKPOINT_FORMAT_VERSION = 1;
const STRIDE_BYTES = 6 * 8;
/** Entries `verify` checks between two turns of the event loop. */
const VERIFY_CHUNK_ENTRIES = 256;

/** A checkpoint's meta record. */
export interface CheckpointInfo {
  /**
   * The checkpoint holds the state after every batch below this log offset; recovery replays the log
   * from here.
   */
  logOffset: number;
  /** Groups with committed offsets in it. */
  groupCount: number;
  /** Group snapshots in it. */
  snapshotCount: number;
  /** Committed offsets in it. */
  liveOffsets: number;
  /** Sum mod 2^32 of xxh32(groupId) + xxh32(value) over its entries, checked when it is loaded. */
  checksum: number;
  /** When it was written, ms since the epoch. */
  createdAtMs: number;
  /**
   * The log was durable through `logOffset` when the checkpoint was written (true for every
   * checkpoint this version writes; absent from older ones, which in durability 'os' could be
   * written of batches a power loss then took): one past the log's end is damage in any durability.
   */
  logDurable?: boolean;
}

/** A checkpoint read back and verified, ready to restore. */
export interface LoadedCheckpoint {
  /** The checkpoint's meta. */
  info: CheckpointInfo;
  /** Each group's offsets table, decoded. */
  groups: [string, GroupOffsets][];
  /** Each group's latest snapshot, msgpack-decoded but not parsed (the group layer parses it). */
  snapshots: [string, unknown][];
}

function encodeGroup(offsets: GroupOffsets): Buffer {
  const { entries, metadata } = offsets.toImage();
  const texts = metadata.map(([i, text]) => [i, Buffer.from(text, 'utf8')] as const);
  let size = 8 + entries.byteLength;
  for (const [, bytes] of texts) size += 8 + bytes.length;
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32LE(entries.length / 6, 0);
  out.writeUInt32LE(texts.length, 4);
  Buffer.from(entries.buffer, entries.byteOffset, entries.byteLength).copy(out, 8);
  let p = 8 + entries.byteLength;
  for (const [i, bytes] of texts) {
    out.writeUInt32LE(i, p);
    out.writeUInt32LE(bytes.length, p + 4);
    p += 8 + bytes.copy(out, p + 8);
  }
  return out;
}

function decodeGroup(value: Buffer): GroupOffsets {
  if (value.length < 8) throw new RangeError('group image shorter than its header');
  const count = value.readUInt32LE(0);
  const metadataCount = value.readUInt32LE(4);
  const entriesEnd = 8 + count * STRIDE_BYTES;
  if (entriesEnd > value.length) throw new RangeError(`group image of ${count} entries truncated`);
  const entries = new Float64Array(count * 6);
  value.copy(Buffer.from(entries.buffer), 0, 8, entriesEnd);
  const metadata: [number, string][] = [];
  let p = entriesEnd;
  for (let m = 0; m < metadataCount; m++) {
    if (p + 8 > value.length) throw new RangeError('group image metadata truncated');
    const i = value.readUInt32LE(p);
    const length = value.readUInt32LE(p + 4);
    if (i >= count || p + 8 + length > value.length)
      throw new RangeError('group image metadata out of bounds');
    metadata.push([i, value.toString('utf8', p + 8, p + 8 + length)]);
    p += 8 + length;
  }
  if (p !== value.length) throw new RangeError('trailing bytes in a group image');
  return GroupOffsets.fromImage(entries, metadata);
}

/**
 * Environments this process has open, with the address space each reserved for its map: so that a
 * simulated process end can release them, and new ones reserve what is left (mapBytesForNext).
 */
const openEnvironments = new Map<RootDatabase<Buffer, (string | number)[]>, number>();

/** An environment's map while address space is plenty: far more than a bucket's checkpoint needs. */
const MAP_BYTES_MAX = 2 ** 34;
/** The least an environment reserves (lmdb-js grows a map a checkpoint outgrows). */
const MAP_BYTES_MIN = 2 ** 26;

/**
 * Address space the process's environments may reserve between them: a quarter of what it may
 * map. Read once.
 */
const mapBudget = addressSpaceLimit() / 4;

/**
 * The map the next environment reserves: 16 GiB while the budget allows, then a 256th of what is
 * left of it, never under 64 MiB. Each map is address space reserved whatever the checkpoint's
 * size: at 16 GiB apiece, 8,192 offsets-buckets would take all of x86-64's user space, and a map
 * that cannot be reserved crashes the process inside lmdb-js.
 */
function mapBytesForNext(): number {
  let reserved = 0;
  for (const bytes of openEnvironments.values()) reserved += bytes;
  const share = Math.floor((mapBudget - reserved) / 256 / 2 ** 20) * 2 ** 20;
  return Math.max(MAP_BYTES_MIN, Math.min(MAP_BYTES_MAX, share));
}

/**
 * Environments this process has open read-only (a store open to read only). LMDB keeps one
 * environment per file in a process, whatever name it is opened by: an open for writing would get
 * the read-only one, fail, and leave it unusable for the rest of the process.
 */
const readOnlyPaths = new HeldPaths();

/**
 * Closes every checkpoint environment this process still has open, as the end of a real process
 * would release its LMDB reader slots: for a simulator that abandons stores in a simulated crash
 * and reopens them in the same process. The abandoned stores must not be used afterwards.
 */
export async function forgetCheckpointProcessState(): Promise<void> {
  const envs = [...openEnvironments.keys()];
  openEnvironments.clear();
  readOnlyPaths.clear();
  // Not through externalWork: the caller awaits these closes before anything else happens.
  for (const db of envs) await db.close().catch(() => {});
}

/** What a read of a checkpoint found, to hold against its meta. */
interface CheckpointFound {
  groups: number;
  snapshots: number;
  liveOffsets: number;
  checksum: number;
}

/** Throws RangeError unless what was read is what the meta `info` says was written. */
function checkAgainstMeta(info: CheckpointInfo, found: CheckpointFound): void {
  const X = info.logOffset;
  if (
    found.groups !== info.groupCount ||
    found.snapshots !== info.snapshotCount ||
    found.liveOffsets !== info.liveOffsets
  ) {
    throw new RangeError(
      `checkpoint at log offset ${X} is incomplete: ${found.groups}/${info.groupCount} groups, ${found.snapshots}/${info.snapshotCount} snapshots, ${found.liveOffsets}/${info.liveOffsets} offsets`,
    );
  }
  if (found.checksum !== info.checksum)
    throw new RangeError(
      `checkpoint at log offset ${X} fails its checksum (${found.checksum} != ${info.checksum})`,
    );
}

function entryChecksum(groupId: string, value: Uint8Array): number {
  return (xxh32(Buffer.from(groupId, 'utf8')) + xxh32(value)) >>> 0;
}

/**
 * Descriptors an environment's open takes (data file, lock file, and what lmdb-js opens beside
 * them), with room to spare: taken and given back right before it (see the header).
 */
const ENVIRONMENT_DESCRIPTORS = 8;

/** The probe file `probeRoom` writes and removes in a new environment's folder. */
export const ROOM_PROBE_FILE = 'open-probe.tmp';
/**
 * Bytes the probe writes: more than LMDB writes and maps to create an environment (its two meta
 * pages, its lock file's reader table, the first pages of its first transaction).
 */
const ROOM_PROBE_BYTES = 64 * 1024;

/**
 * Writes, fdatasyncs and removes ROOM_PROBE_BYTES in `dir` (made if missing) before LMDB creates an
 * environment there, so that a full disk, a quota, a folder that cannot be written or a device
 * that fails writes is a LOG_STORAGE_ERROR naming the folder rather than the end of the process
 * (see the header). It cannot exclude a failure that begins between the probe and LMDB's writes.
 */
async function probeRoom(fs: FileSystem, dir: string): Promise<void> {
  const probe = join(dir, ROOM_PROBE_FILE);
  try {
    await fs.mkdir(dir);
    const file = await fs.open(probe, 'w');
    try {
      await file.writev([Buffer.alloc(ROOM_PROBE_BYTES)], 0);
      await file.datasync();
    } finally {
      await file.close();
    }
    await fs.unlink(probe);
  } catch (error) {
    await fs.unlink(probe).catch(() => {});
    const code = (error as NodeJS.ErrnoException).code;
    throw new OffsetStoreError(
      'LOG_STORAGE_ERROR',
      `cannot create the checkpoint environment in ${dir}: writing ${ROOM_PROBE_BYTES} bytes there first failed (${code ?? (error as Error).message}), and LMDB ends the process when its own writes fail while it creates an environment; free space on that file system (or make the folder writable), then open again`,
      { cause: error },
    );
  }
}

/**
 * Refuses LMDB's files in `dir` that are neither regular files nor missing (a FIFO, a directory, a
 * symbolic link to nothing), found without opening them: LMDB's open, to read only too, ends the
 * process on them (it maps a FIFO, or creates a file through a dangling link). Without opening them,
 * so that a read-only view drops no POSIX lock LMDB holds on `lock.mdb` for a writer of this
 * process. A file system without `fileType` is not checked.
 */
async function checkLmdbFileTypes(fs: FileSystem, dir: string): Promise<void> {
  for (const name of [LMDB_DATA_FILE, LMDB_LOCK_FILE]) {
    const file = join(dir, name);
    const type = await fs.fileType?.(file);
    if (type === undefined || type === 'file' || type === 'missing') continue;
    throw new OffsetStoreError(
      'LOG_STORAGE_ERROR',
      `cannot open the checkpoint environment in ${dir}: ${file} is ${type}, where LMDB needs a regular file (and LMDB ends the process when it cannot open its files); ${name === LMDB_LOCK_FILE ? 'remove it: LMDB makes its lock file again' : 'put the checkpoint file back from a backup (docs/recovery.md)'}`,
    );
  }
}

/**
 * Opens LMDB's files in `dir` that exist to read and write, and closes them, before LMDB opens
 * them itself: one this process may not write (left by another user, made read-only) would end
 * the process inside lmdb-js's open (see the header); here it is a LOG_STORAGE_ERROR naming it.
 * Closing a descriptor of `lock.mdb` drops the POSIX locks this process holds on it, LMDB's among
 * them: this runs only before this process opens the environment to write, which it does once per
 * folder at a time (the store's directory lock; a read-only view of the same folder refuses it).
 */
async function checkLmdbFilesWritable(fs: FileSystem, dir: string): Promise<void> {
  for (const name of [LMDB_DATA_FILE, LMDB_LOCK_FILE]) {
    const file = join(dir, name);
    let handle;
    try {
      handle = await fs.open(file, 'r+');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new OffsetStoreError(
        'LOG_STORAGE_ERROR',
        `cannot open the checkpoint environment in ${dir}: ${file} cannot be opened to write (${(error as Error).message}), and LMDB ends the process when it cannot open its files; give this process's user write access to it`,
        { cause: error },
      );
    }
    await handle.close();
  }
}

/** The checkpoints of one offsets-bucket. */
export class CheckpointStore {
  /** Checkpoints written in this process that failed their read-back (see `reject`). */
  readonly #rejected = new Set<number>();
  /** The environment's directory (`<bucket>/checkpoint`). */
  readonly path: string;
  readonly #fs: FileSystem;
  readonly #db: RootDatabase<Buffer, (string | number)[]>;
  #writing = false;

  /** Opened read-only: releases its hold in readOnlyPaths. */
  readonly #releaseReadOnly: (() => void) | undefined;

  private constructor(
    fs: FileSystem,
    path: string,
    db: RootDatabase<Buffer, (string | number)[]>,
    releaseReadOnly: (() => void) | undefined,
  ) {
    this.#fs = fs;
    this.path = path;
    this.#db = db;
    this.#releaseReadOnly = releaseReadOnly;
  }

  /**
   * Opens (creating, unless `readOnly`) the LMDB environment at `path`, after checking its data file
   * through `fs` without mapping it: a damaged one is refused with OffsetStoreError('CORRUPT_MESSAGE')
   * saying which file, its size and which check failed. A file that was not sealed as it is now (a
   * new environment, a crash before the seal, a store written before seals) is sealed once opened,
   * unless `readOnly` (`log verify` writes nothing).
   */
  static async open(
    fs: FileSystem,
    path: string,
    options: { readOnly?: boolean } = {},
  ): Promise<CheckpointStore> {
    const readOnly = options.readOnly === true;
    if (!readOnly && readOnlyPaths.held(path))
      throw new OffsetStoreError(
        'STORE_LOCKED',
        `${path}: this process has the store open to read only; close that store before opening it to write (LMDB shares one environment per path in a process)`,
      );
    const state = await inspectCheckpointFile(fs, path);
    await checkLmdbFileTypes(fs, path);
    if (!readOnly) {
      await checkLmdbFilesWritable(fs, path);
      if (state === 'new') await probeRoom(fs, path);
    }
    // lmdb-js crashes the process when a descriptor runs out inside its open: see the header.
    reserveDescriptors(ENVIRONMENT_DESCRIPTORS);
    const mapBytes = mapBytesForNext();
    let db: RootDatabase<Buffer, (string | number)[]>;
    try {
      db = open<Buffer, (string | number)[]>({
        path,
        encoding: 'binary',
        overlappingSync: false,
        mapSize: mapBytes,
        readOnly,
        // The writes here are whole transactions. With batching across an event turn, LMDB starts
        // each batch with a write whose promise it keeps to itself, and a failed commit (a full
        // disk) rejects it unhandled: on Node's defaults, that kills the process.
        eventTurnBatching: false,
      });
    } catch (error) {
      // Where lmdb-js reports a failed open rather than ending the process (see the header).
      throw new OffsetStoreError(
        'LOG_STORAGE_ERROR',
        `LMDB could not open the checkpoint environment in ${path}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    openEnvironments.set(db, mapBytes);
    const store = new CheckpointStore(
      fs,
      path,
      db,
      readOnly ? readOnlyPaths.hold(path) : undefined,
    );
    if (state !== 'sealed' && !readOnly) {
      try {
        await sealCheckpointFile(fs, path);
      } catch (error) {
        openEnvironments.delete(db);
        await externalWork(db.close());
        throw error;
      }
    }
    return store;
  }

  /**
   * Moves the damaged data file of the environment at `path` aside (to `data.mdb.damaged`) so that
   * the next `open` starts an empty environment; for when recovery no longer needs its checkpoints.
   */
  static setAside(fs: FileSystem, path: string): Promise<void> {
    return setAsideCheckpointFile(fs, path);
  }

  /** Every checkpoint's meta, newest first (unreadable metas are skipped: see `unreadable`). */
  list(): CheckpointInfo[] {
    return this.#scan().infos;
  }

  /**
   * Why each checkpoint that `list()` skips is unreadable: a meta that is not JSON or has no log
   * offset, or one of another format version (written by a later version of the store, which this
   * one must not misread). For recovery's warnings and `log verify`.
   */
  unreadable(): string[] {
    return this.#scan().problems;
  }

  #scan(): { infos: CheckpointInfo[]; problems: string[] } {
    const infos: CheckpointInfo[] = [];
    const problems: string[] = [];
    const rejected = this.#rejected;
    for (const { key, value } of this.#db.getRange({
      start: ['m'],
      end: ['m', Number.MAX_SAFE_INTEGER],
    })) {
      const at = `the checkpoint at log offset ${String((key as unknown[])[1])}`;
      let meta: CheckpointInfo & { formatVersion: unknown };
      try {
        meta = JSON.parse(Buffer.from(value).toString('utf8')) as typeof meta;
      } catch {
        problems.push(`${at} is ignored: its description is not JSON`);
        continue;
      }
      if (meta === null || typeof meta !== 'object' || !Number.isSafeInteger(meta.logOffset))
        problems.push(`${at} is ignored: its description has no log offset`);
      else if (meta.formatVersion !== CHECKPOINT_FORMAT_VERSION)
        problems.push(
          `${at} is ignored: its format version is ${JSON.stringify(meta.formatVersion)}, and this version of the store reads ${CHECKPOINT_FORMAT_VERSION} only (was it written by a later one?)`,
        );
      else if (!rejected.has(meta.logOffset)) infos.push(meta);
    }
    return { infos: infos.sort((a, b) => b.logOffset - a.logOffset), problems };
  }

  /**
   * Reads one checkpoint back and checks it against its meta (its groups, snapshots and offsets
   * counted, its checksum recomputed) without decoding it into tables, `VERIFY_CHUNK_ENTRIES`
   * entries at a time with the event loop let run in between, so that checking a large checkpoint
   * right after writing it does not hold up the commits meanwhile. Throws RangeError describing what
   * is wrong, as `load` does. A checkpoint that reads back is trusted (listed) from then on.
   */
  async verify(info: CheckpointInfo): Promise<void> {
    const X = info.logOffset;
    let checksum = 0;
    let groups = 0;
    let snapshots = 0;
    let liveOffsets = 0;
    let inChunk = 0;
    for (const prefix of ['g', 's'] as const) {
      for (const { key, value } of this.#db.getRange({
        start: [prefix, X],
        end: [prefix, X + 1],
      })) {
        checksum = (checksum + entryChecksum(String(key[2]), value)) >>> 0;
        if (prefix === 's') {
          snapshots++;
        } else {
          if (value.length < 8 || 8 + value.readUInt32LE(0) * STRIDE_BYTES > value.length)
            throw new RangeError(`checkpoint at log offset ${X}: group image truncated`);
          liveOffsets += value.readUInt32LE(0);
          groups++;
        }
        if (++inChunk === VERIFY_CHUNK_ENTRIES) {
          inChunk = 0;
          await externalWork(nextTurn());
        }
      }
    }
    checkAgainstMeta(info, { groups, snapshots, liveOffsets, checksum });
    this.#rejected.delete(X);
  }

  /**
   * Leaves the checkpoint at `logOffset` out of `list()` from now on in this process: one written
   * that did not read back as written (a damaged environment). Nothing may be freed under it, and
   * the next open's `load` refuses it again.
   */
  reject(logOffset: number): void {
    this.#rejected.add(logOffset);
  }

  /** Reads and verifies one checkpoint; throws RangeError describing what is wrong. */
  load(info: CheckpointInfo): LoadedCheckpoint {
    const X = info.logOffset;
    let checksum = 0;
    const groups: [string, GroupOffsets][] = [];
    let liveOffsets = 0;
    for (const { key, value } of this.#db.getRange({ start: ['g', X], end: ['g', X + 1] })) {
      const groupId = String(key[2]);
      checksum = (checksum + entryChecksum(groupId, value)) >>> 0;
      const offsets = decodeGroup(Buffer.from(value));
      liveOffsets += offsets.size;
      groups.push([groupId, offsets]);
    }
    const snapshots: [string, unknown][] = [];
    for (const { key, value } of this.#db.getRange({ start: ['s', X], end: ['s', X + 1] })) {
      const groupId = String(key[2]);
      checksum = (checksum + entryChecksum(groupId, value)) >>> 0;
      snapshots.push([groupId, unpackSnapshot(value)]);
    }
    checkAgainstMeta(info, {
      groups: groups.length,
      snapshots: snapshots.length,
      liveOffsets,
      checksum,
    });
    return { info, groups, snapshots };
  }

  /**
   * Writes the state's image as of `logOffset` (= state.appliedLogOffset + 1) in one durable
   * transaction, then drops all but the two newest checkpoints, then seals the data file. Returns
   * the new checkpoint's meta. The image is taken synchronously, so later commits cannot leak into
   * it. One write at a time (the seal reads a file LMDB must not be writing).
   */
  async write(
    state: OffsetsTableState,
    logOffset: number,
    createdAtMs: number,
  ): Promise<{ info: CheckpointInfo; bytesWritten: number }> {
    return this.#oneWriteAtATime(() => this.#write(state, logOffset, createdAtMs));
  }

  /** Runs `work`, a change to the environment, alone (the seal reads a file LMDB must not be writing). */
  async #oneWriteAtATime<T>(work: () => Promise<T>): Promise<T> {
    assert(!this.#writing, `${this.path}: one checkpoint write at a time`);
    this.#writing = true;
    try {
      return await work();
    } finally {
      this.#writing = false;
    }
  }

  async #write(
    state: OffsetsTableState,
    logOffset: number,
    createdAtMs: number,
  ): Promise<{ info: CheckpointInfo; bytesWritten: number }> {
    const X = logOffset;
    // Untrusted (left out of `list()`) from now until it reads back (`verify`): a write that fails
    // part way, or a read-back that fails, leaves it so.
    this.#rejected.add(X);
    const puts: [(string | number)[], Buffer][] = [];
    let checksum = 0;
    let liveOffsets = 0;
    for (const [groupId, offsets] of state.groupTables()) {
      const value = encodeGroup(offsets);
      liveOffsets += offsets.size;
      checksum = (checksum + entryChecksum(groupId, value)) >>> 0;
      puts.push([['g', X, groupId], value]);
    }
    let snapshotCount = 0;
    for (const [groupId, snapshot] of state.snapshots()) {
      const value = packSnapshot(snapshot);
      checksum = (checksum + entryChecksum(groupId, value)) >>> 0;
      puts.push([['s', X, groupId], value]);
      snapshotCount++;
    }
    const info: CheckpointInfo = {
      logOffset: X,
      groupCount: puts.length - snapshotCount,
      snapshotCount,
      liveOffsets,
      checksum,
      createdAtMs,
      // The caller made the log durable through X first (OffsetsTable #whenAppliedDurable).
      logDurable: true,
    };
    let valueBytes = 0;
    for (const [, value] of puts) valueBytes += value.length;
    // Keep the new checkpoint and the newest trusted other one; drop the rest. (A checkpoint at X
    // written before and not trusted is overwritten, not counted: the previous one must stay, as
    // the one to fall back on if this one does not read back either.)
    const drop = this.list()
      .filter((c) => c.logOffset !== X)
      .slice(1)
      .map((c) => c.logOffset);
    const pagesBefore = this.sizeBytes();
    await this.#commit(
      this.#db.transaction(() => {
        for (const [key, value] of puts) handled(this.#db.put(key, value));
        handled(
          this.#db.put(
            ['m', X],
            Buffer.from(JSON.stringify({ formatVersion: CHECKPOINT_FORMAT_VERSION, ...info })),
          ),
        );
      }),
    );
    await this.#commit(this.#db.flushed);
    // LMDB copies on write, so the transaction wrote at least the pages the new checkpoint added to
    // the tree; the values alone undercount it (page headers, keys, branch pages).
    const bytesWritten = Math.max(valueBytes, this.sizeBytes() - pagesBefore);
    if (drop.length > 0) await this.#remove(drop);
    await sealCheckpointFile(this.#fs, this.path);
    return { info, bytesWritten };
  }

  /**
   * Removes the checkpoint at `logOffset` for good, durably, and seals the file again: one past the
   * end of a log that lost its unsynced tail (durability 'os'), which describes batches the log no
   * longer holds and must never be restored once the log has grown past it again.
   */
  async discard(logOffset: number): Promise<void> {
    await this.#oneWriteAtATime(async () => {
      await this.#remove([logOffset]);
      this.#rejected.delete(logOffset);
      await sealCheckpointFile(this.#fs, this.path);
    });
  }

  /** Deletes the checkpoints at these log offsets (meta, groups and snapshots) in one durable transaction. */
  async #remove(logOffsets: readonly number[]): Promise<void> {
    await this.#commit(
      this.#db.transaction(() => {
        for (const old of logOffsets) {
          handled(this.#db.remove(['m', old]));
          for (const prefix of ['g', 's']) {
            for (const key of this.#db.getKeys({ start: [prefix, old], end: [prefix, old + 1] }))
              handled(this.#db.remove(key));
          }
        }
      }),
    );
    await this.#commit(this.#db.flushed);
  }

  /**
   * lmdbCommit, and when it fails, the free space of the file system the environment is on: LMDB
   * reports a write that found the disk full as EIO ("Input/output error", seen on ext4 and tmpfs),
   * which alone would send an operator looking for a failing device.
   */
  async #commit<T>(commit: Promise<T>): Promise<T> {
    try {
      return await lmdbCommit(commit);
    } catch (error) {
      const free = await this.#fs.freeBytes?.(this.path).catch(() => undefined);
      if (free === undefined || free >= FULL_DISK_BYTES || !(error instanceof Error)) throw error;
      error.message += `; the file system holding ${this.path} has only ${free} bytes free (LMDB reports a write that found the disk full as an I/O error)`;
      throw error;
    }
  }

  /** Bytes used by the environment's data file. */
  sizeBytes(): number {
    const stat = this.#db.getStats() as {
      treeBranchPageCount?: number;
      treeLeafPageCount?: number;
      overflowPages?: number;
      pageSize?: number;
    };
    return (
      ((stat.treeBranchPageCount ?? 0) +
        (stat.treeLeafPageCount ?? 0) +
        (stat.overflowPages ?? 0)) *
      (stat.pageSize ?? 4096)
    );
  }

  /** Closes the LMDB environment (the store calls it once no checkpoint write is running). */
  close(): Promise<void> {
    // (Not released when a simulated process end forgot it already.)
    if (openEnvironments.delete(this.#db)) this.#releaseReadOnly?.();
    return externalWork(this.#db.close());
  }
}

/**
 * A failed LMDB commit (a full disk) rejects more than the transaction: every write made in it
 * (`put` and `remove` return promises inside a transaction too) and the `commitError` promise the
 * error carries. Unhandled, any of them kills a process on Node's defaults, after the compaction
 * itself was already reported as failed. Each gets a handler; the transaction's rejection is the
 * one that is raised.
 */
function handled(result: unknown): void {
  if (isPromiseLike(result)) result.then(undefined, () => {});
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}

/** Free bytes under which a failed LMDB commit is said to have found the disk (nearly) full. */
const FULL_DISK_BYTES = 16 * 1024 * 1024;

/** How long a failed commit's `commitError` is waited for, to say what failed. */
const COMMIT_ERROR_WAIT_MS = 1000;

/**
 * Awaits an LMDB commit (or flush), handling the `commitError` its failure carries (see `handled`).
 * LMDB's own error only says "Commit failed (see commitError for details)": what failed (ENOSPC,
 * EIO) is in `commitError`, so the error raised names it and carries its code.
 */
export async function lmdbCommit<T>(commit: Promise<T>): Promise<T> {
  try {
    return await externalWork(commit);
  } catch (error) {
    const commitError = (error as { commitError?: unknown } | null)?.commitError;
    handled(commitError);
    throw await withCommitError(error, commitError);
  }
}

async function withCommitError(error: unknown, commitError: unknown): Promise<unknown> {
  if (!isPromiseLike(commitError)) return error;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const reason = await Promise.race([
    Promise.resolve(commitError).then(
      () => undefined,
      (r: unknown) => r,
    ),
    new Promise<undefined>((resolve) => {
      // Only on a failure, outside any simulated clock: a real timer, not holding the process.
      timer = setTimeout(() => resolve(undefined), COMMIT_ERROR_WAIT_MS);
      (timer as { unref?: () => void }).unref?.();
    }),
  ]);
  clearTimeout(timer);
  if (reason === undefined) return error;
  const code = errnoName((reason as { code?: unknown } | null)?.code);
  return Object.assign(
    new Error(
      `the checkpoint's LMDB commit failed: ${(reason as Error | null)?.message ?? String(reason)}`,
      { cause: reason },
    ),
    code === undefined ? {} : { code },
  );
}

/**
 * LMDB reports a system error by its number (28 for ENOSPC): the name, as Node's own errors carry
 * it, so that the store reports it as the storage failure it is (LOG_STORAGE_ERROR).
 */
export function errnoName(code: unknown): unknown {
  if (typeof code !== 'number' || !Number.isInteger(code) || code <= 0) return code;
  const name = getSystemErrorName(-code); // libuv's errors are the negated errnos
  return /^E[A-Z0-9]+$/.test(name) ? name : code;
}
