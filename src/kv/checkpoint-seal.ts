/**
 * The seal of a checkpoint environment, and the check of `data.mdb` before LMDB maps it.
 *
 * After every checkpoint write (both LMDB transactions committed and flushed), the checkpoint store
 * reads `data.mdb` back through the FileSystem port and records in `data.mdb.seal`, next to it, the
 * txnid of its newest meta page and the checksum of the bytes LMDB interprets (lmdb-tree-check.ts:
 * meta pages, branch and leaf pages, the free-page lists). The seal is written durably (temp file,
 * fdatasync, rename, directory fsync), so it is the old seal or the new one, never torn. Seal layout
 * (little-endian):
 * | bytes | field                                           |
 * |-------|-------------------------------------------------|
 * | 0-3   | magic "OSCS"                                    |
 * | 4-7   | seal format version (1)                         |
 * | 8-15  | txnid of data.mdb's newest meta when sealed     |
 * | 16-19 | checksum of the structure (checkLmdbTrees)      |
 * | 20-23 | xxh32 of bytes 0-19 (a damaged seal is no seal) |
 *
 * `inspectCheckpointFile`, before the environment is opened:
 * 1. No data.mdb and no seal: a new environment, which LMDB creates ('new').
 * 2. No data.mdb but a seal, or an empty data.mdb: damaged. (LMDB would silently start an empty
 *    environment over an empty file, losing every checkpoint; an empty data.mdb that LMDB created and
 *    crashed before writing can only belong to an environment that never held a checkpoint, and then
 *    the log is whole and recovery from it costs nothing but time.)
 * 3. Both meta pages are read and checked (`readLmdbMeta`), then every page LMDB can reach
 *    (`checkLmdbTrees`); any problem is damage.
 * 4. A seal for the newest meta's txnid: the structure's checksum must be the sealed one, or the file
 *    is damaged ('sealed'): this catches what the page checks cannot judge, such as a changed key or
 *    free-page list. No seal, a damaged one, or one of another txnid (a crash between LMDB's commit
 *    and the seal's rename; a store written before seals; an edit by another LMDB client): the page
 *    checks alone decide ('checked'), and the store seals the file again once it has opened it.
 * Why not a checksum of the whole file: LMDB writes a transaction's pages before its meta page, so a
 * crash in a commit changes free pages (and may grow the file) under an unchanged txnid, which a
 * whole-file checksum would call damage; and the file holds about four checkpoints' worth of pages
 * (two kept, two freed), so hashing all of it cost ~170 ms per open and per write at 1M live offsets.
 * The bytes left out, free pages and values, LMDB never interprets, and each checkpoint checks its
 * values against its own checksum.
 */
import * as path from 'node:path';
import { xxh32 } from '../codec/index.js';
import { isOffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import { writeDurably } from '../log/index.js';
import { assert } from '../util/index.js';
import { lmdbFileDamage, readLmdbMeta } from './lmdb-meta.js';
import { checkLmdbTrees } from './lmdb-tree-check.js';

/** LMDB's data file in an environment directory. */
export const LMDB_DATA_FILE = 'data.mdb';
/** LMDB's lock file in an environment directory. */
export const LMDB_LOCK_FILE = 'lock.mdb';
/** The seal next to the data file. */
export const SEAL_FILE = 'data.mdb.seal';

const SEAL_MAGIC = 0x5343534f; // "OSCS"
const SEAL_FORMAT_VERSION = 1;
const SEAL_BYTES = 24;

/** What a seal records of the data file. */
export interface CheckpointSeal {
  /** txnid of data.mdb's newest meta page when the seal was written; a seal of another txnid says nothing. */
  txnid: number;
  /** Checksum of the bytes LMDB interprets (`checkLmdbTrees`). */
  checksum: number;
}

/** How `inspectCheckpointFile` found the environment. */
export type CheckpointFileState = 'new' | 'sealed' | 'checked';

function encodeSeal(seal: CheckpointSeal): Buffer {
  const bytes = Buffer.alloc(SEAL_BYTES);
  bytes.writeUInt32LE(SEAL_MAGIC, 0);
  bytes.writeUInt32LE(SEAL_FORMAT_VERSION, 4);
  bytes.writeBigUInt64LE(BigInt(seal.txnid), 8);
  bytes.writeUInt32LE(seal.checksum, 16);
  bytes.writeUInt32LE(xxh32(bytes, 0, 20), 20);
  return bytes;
}

function decodeSeal(bytes: Buffer): CheckpointSeal | undefined {
  if (
    bytes.length !== SEAL_BYTES ||
    bytes.readUInt32LE(0) !== SEAL_MAGIC ||
    bytes.readUInt32LE(4) !== SEAL_FORMAT_VERSION
  )
    return undefined;
  if (bytes.readUInt32LE(20) !== xxh32(bytes, 0, 20)) return undefined;
  return { txnid: Number(bytes.readBigUInt64LE(8)), checksum: bytes.readUInt32LE(16) };
}

/** Reads the seal of the environment in `dir`; undefined when there is none or it is unreadable. */
export async function readSeal(fs: FileSystem, dir: string): Promise<CheckpointSeal | undefined> {
  const bytes = await fs.readFile(path.join(dir, SEAL_FILE));
  return bytes === null ? undefined : decodeSeal(bytes);
}

/** Checks of a data file a live writer changed while it was read, before its damage is believed. */
const INSPECTIONS_MAX = 8;

/**
 * Checks the data file of the LMDB environment in `dir` before it is opened (see the header);
 * throws OffsetStoreError('CORRUPT_MESSAGE') naming the file, its size and what is wrong.
 *
 * The check reads the file as plain bytes, without an LMDB read transaction: a live writer (beside
 * a read-only view) may commit meanwhile, growing the file past the size the check took and, two
 * commits on, reusing pages the meta it read still reaches. Pages a meta reaches stay as they are
 * until a later transaction commits, so damage found while the file kept the size and the newest
 * transaction the check saw is damage; found while either changed, the file is checked again (up to
 * INSPECTIONS_MAX times).
 */
export async function inspectCheckpointFile(
  fs: FileSystem,
  dir: string,
): Promise<CheckpointFileState> {
  for (let attempt = 1; ; attempt++) {
    const checked: FileVersion = {};
    try {
      return await inspectOnce(fs, dir, checked);
    } catch (error) {
      if (!isOffsetStoreError(error, 'CORRUPT_MESSAGE') || attempt >= INSPECTIONS_MAX) throw error;
      const now = await versionOf(fs, path.join(dir, LMDB_DATA_FILE));
      if (now === undefined || (now.txnid === checked.txnid && now.sizeBytes === checked.sizeBytes))
        throw error;
    }
  }
}

/** What a check saw of the data file: its size, and its newest meta's transaction (once read). */
interface FileVersion {
  sizeBytes?: number;
  txnid?: number;
}

/** The data file's size and newest transaction now, or undefined when they cannot be read. */
async function versionOf(fs: FileSystem, dataPath: string): Promise<FileVersion | undefined> {
  try {
    const file = await fs.open(dataPath, 'r');
    try {
      const sizeBytes = await file.sizeBytes();
      return { sizeBytes, txnid: (await readLmdbMeta(file, sizeBytes)).txnid };
    } finally {
      await file.close();
    }
  } catch {
    return undefined;
  }
}

/** One check of the data file (inspectCheckpointFile), noting in `checked` what it saw of it. */
async function inspectOnce(
  fs: FileSystem,
  dir: string,
  checked: FileVersion,
): Promise<CheckpointFileState> {
  const dataPath = path.join(dir, LMDB_DATA_FILE);
  const seal = await readSeal(fs, dir);
  const sizeBytes = await fs.sizeBytes(dataPath);
  checked.sizeBytes = sizeBytes ?? undefined;
  if (sizeBytes === null) {
    if (seal === undefined) return 'new';
    throw lmdbFileDamage(dataPath, 0, `missing, but sealed for LMDB transaction ${seal.txnid}`);
  }
  if (sizeBytes === 0)
    throw lmdbFileDamage(
      dataPath,
      0,
      seal === undefined ? 'empty' : `empty, but sealed for LMDB transaction ${seal.txnid}`,
    );
  const file = await fs.open(dataPath, 'r');
  try {
    const meta = await readLmdbMeta(file, sizeBytes);
    checked.txnid = meta.txnid;
    const { checksum } = await checkLmdbTrees(file, sizeBytes, meta);
    if (seal?.txnid !== meta.txnid) return 'checked';
    if (checksum !== seal.checksum) {
      throw lmdbFileDamage(
        dataPath,
        sizeBytes,
        `its structure's checksum ${checksum} differs from the seal's ${seal.checksum} for LMDB transaction ${seal.txnid} (its pages pass every check: remove ${SEAL_FILE} to open it on those checks alone)`,
      );
    }
    return 'sealed';
  } finally {
    await file.close();
  }
}

/**
 * Seals the data file of the environment in `dir` as it is now: its newest txnid and the checksum of
 * its structure, written durably. The file is checked on the way (a damaged one is CORRUPT_MESSAGE).
 * The caller guarantees that LMDB writes nothing meanwhile.
 */
export async function sealCheckpointFile(fs: FileSystem, dir: string): Promise<CheckpointSeal> {
  const file = await fs.open(path.join(dir, LMDB_DATA_FILE), 'r');
  let seal: CheckpointSeal;
  try {
    const sizeBytes = await file.sizeBytes();
    const meta = await readLmdbMeta(file, sizeBytes);
    seal = { txnid: meta.txnid, checksum: (await checkLmdbTrees(file, sizeBytes, meta)).checksum };
    assert(
      (await readLmdbMeta(file, await file.sizeBytes())).txnid === meta.txnid,
      `${file.path} changed while it was sealed`,
    );
  } finally {
    await file.close();
  }
  await writeDurably(fs, path.join(dir, SEAL_FILE), encodeSeal(seal));
  return seal;
}

/** Suffix of a damaged data file moved aside. */
export const DAMAGED_SUFFIX = '.damaged';

/**
 * Moves a damaged environment's data file aside (to `data.mdb.damaged`, replacing an older one) and
 * removes its lock file and seal, so that LMDB creates a new environment in `dir`.
 */
export async function setAsideCheckpointFile(fs: FileSystem, dir: string): Promise<void> {
  const dataPath = path.join(dir, LMDB_DATA_FILE);
  if ((await fs.sizeBytes(dataPath)) !== null)
    await fs.rename(dataPath, `${dataPath}${DAMAGED_SUFFIX}`);
  await fs.unlink(path.join(dir, SEAL_FILE));
  await fs.unlink(path.join(dir, LMDB_LOCK_FILE));
  await fs.syncDir(dir);
}
