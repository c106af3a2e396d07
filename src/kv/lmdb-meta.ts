/**
 * The meta pages of an LMDB data file (`data.mdb`), read through the FileSystem port so that a
 * damaged file can be recognized before LMDB maps it, and the layout constants shared with
 * lmdb-tree-check.ts. LMDB trusts its file: it follows page numbers into the map without comparing
 * them to the file's size (a page past the end is a SIGBUS) and reads whatever bytes a page holds as
 * node offsets and sizes (a SIGSEGV, or an abort on one of its assertions). The layout is that of
 * the LMDB bundled with lmdb-js 3.x (its patched copy of the LMDB development branch, data format
 * version 2, 64-bit page numbers, little-endian; see
 * node_modules/lmdb/dependencies/lmdb/libraries/liblmdb/mdb.c).
 *
 * Page header (24 bytes, every page):
 * | bytes | field | meaning                                                                      |
 * |-------|-------|------------------------------------------------------------------------------|
 * | 0-7   | pgno  | the page's own number (not kept up to date in meta pages)                    |
 * | 8-15  | txnid | the transaction that wrote the page                                          |
 * | 18-19 | flags | 0x01 branch, 0x02 leaf, 0x04 overflow, 0x08 meta, 0x20 leaf2, 0x40 sub-page |
 * | 20-21 | lower | branch/leaf: bytes of node pointers (2 per node), counted from byte 24       |
 * | 22-23 | upper | branch/leaf: start of the node area, counted from byte 24                   |
 * (bytes 20-23 of the first page of an overflow run: the run's page count)
 *
 * Meta (pages 0 and 1, from byte 24; transaction N writes page N % 2, LMDB opens the one with the
 * larger txnid, and checks only page 0's flags, magic and version):
 * | bytes   | field                                                                         |
 * |---------|-------------------------------------------------------------------------------|
 * | 24-27   | magic 0xBEEFC0DE                                                              |
 * | 28-31   | data format version (low 16 bits: 2)                                          |
 * | 40-47   | map size LMDB last used (it grows the map before using a page past it)       |
 * | 48-95   | free-page tree (a tree record, below); its pad is the page size, its flags   |
 * |         | also hold LMDB's persistent environment flags                                 |
 * | 96-143  | main tree (a tree record)                                                     |
 * | 144-151 | last page number in use (the file may be shorter: free pages are not written) |
 * | 152-159 | txnid of the transaction that wrote this meta                                 |
 * A tree record (48 bytes): 0 pad u32, 4 flags u16, 6 depth u16, 8 branch pages, 16 leaf pages,
 * 24 overflow pages, 32 entries, 40 root page (u64 each; root 2^64-1 is an empty tree).
 *
 * `readLmdbMeta` requires of both metas: the meta page flag, the magic and version, a power-of-two
 * page size (the same in both), a txnid and last page that fit in a double, only the LMDB flags that
 * change nothing in how the file is read (lmdb-js crashes on an encryption flag in page 0), a map
 * size of at most 16 TiB that holds the last page (lmdb-js maps that much and crashes when the mmap
 * fails), and tree records with a sane depth and no duplicate-sort flags; and of the file, a whole
 * number of pages. It returns the newer meta, which LMDB opens.
 */
import { xxh32 } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import type { FileHandle } from '../io/index.js';

/** Bytes of the page header. */
export const PAGE_HEADER_BYTES = 24;
/** Bytes of a meta page that LMDB reads: the page header and the meta (to the boot id). */
const META_BYTES = 168;
/** Bytes of a tree record (in a meta page or a sub-tree node). */
export const TREE_RECORD_BYTES = 48;
const LMDB_MAGIC = 0xbeefc0de;
const LMDB_DATA_VERSION = 2;
const PAGE_BYTES_MIN = 512;
const PAGE_BYTES_MAX = 65536;
/** LMDB's cursor stack: a tree deeper than this cannot be walked by LMDB either. */
const TREE_DEPTH_MAX = 32;
const NO_PAGE = 0xffffffffffffffffn;

/** Page flags. */
export const P_BRANCH = 0x01;
/** Page flag of a leaf page (nodes hold keys and values or overflow page numbers). */
export const P_LEAF = 0x02;
/** Page flag of the first page of an overflow run (a value too large for a leaf). */
export const P_OVERFLOW = 0x04;
const P_META = 0x08;
const P_LEAF2 = 0x20;
const P_SUBP = 0x40;
/** The flags that say what a page is. */
export const PAGE_TYPE_FLAGS = P_BRANCH | P_LEAF | P_OVERFLOW | P_META | P_LEAF2 | P_SUBP;
/** DUPSORT | DUPFIXED | INTEGERDUP | REVERSEDUP: tree flags that make LMDB read leaves as duplicates. */
const DUPLICATE_TREE_FLAGS = 0x04 | 0x10 | 0x20 | 0x40;
const MDB_INTEGERKEY = 0x08;
/**
 * Environment flags LMDB may store in the free-page tree's flags and that change nothing in how it
 * reads the file (track metrics, safe restore, overlapping sync, no subdirectory). The others are
 * refused: encryption (0x2000) in page 0 makes lmdb-js crash on open, a fixed map (0x01) is never
 * used here, and the free-page tree is always keyed by integers without duplicates.
 */
const HARMLESS_ENV_FLAGS = 0x400 | 0x800 | 0x1000 | 0x4000;
/**
 * Largest map size a meta may ask for: 16 TiB, far beyond any checkpoint, well inside a 47-bit
 * address space. lmdb-js maps at least (last page + 1) pages and crashes when that mmap fails.
 */
const MAP_BYTES_MAX = 2 ** 44;

/** A B-tree as a meta page or a sub-tree node records it. */
export interface LmdbTree {
  /** The tree's database flags (duplicate and integer-key flags change how LMDB reads its leaves). */
  flags: number;
  /** Levels of the tree (1 = the root is a leaf); bounded by LMDB's cursor stack. */
  depth: number;
  /** Root page number; undefined for an empty tree. */
  root: number | undefined;
}

/** The meta page LMDB opens (the newer of the two). */
export interface LmdbMeta {
  /** The environment's page size in bytes. */
  pageBytes: number;
  /** Number of the last page in use; every page number read must be at most this. */
  lastPage: number;
  /** Transaction id of this meta page (the newer one); the seal names it. */
  txnid: number;
  /** txnid of the other meta page. */
  previousTxnid: number;
  /** The free-page tree. */
  freeTree: LmdbTree;
  /** The main tree, whose entries are the checkpoint's records. */
  mainTree: LmdbTree;
  /** Sum of the xxh32 of the bytes LMDB reads of each meta page (header and meta). */
  metaPagesChecksum: number;
}

/** The error for a damaged data file. */
export function lmdbFileDamage(
  filePath: string,
  sizeBytes: number,
  what: string,
): OffsetStoreError {
  return new OffsetStoreError(
    'CORRUPT_MESSAGE',
    `${filePath} (${sizeBytes} bytes) is damaged: ${what}`,
  );
}

/** Reads up to `length` bytes at `position`, looping over short reads; returns the bytes read. */
export async function readFully(
  file: FileHandle,
  buffer: Buffer,
  length: number,
  position: number,
): Promise<number> {
  let done = 0;
  while (done < length) {
    const bytes = await file.read(buffer, done, length - done, position + done);
    if (bytes === 0) break;
    done += bytes;
  }
  return done;
}

/** The little-endian u64 at byte `at`, or undefined when it does not fit in a double's 53 bits. */
export function readU64(bytes: Buffer, at: number): number | undefined {
  const high = bytes.readUInt32LE(at + 4);
  return high < 0x200000 ? high * 0x100000000 + bytes.readUInt32LE(at) : undefined;
}

/** Parses a tree record at byte `at`; a string says what is wrong with it. */
export function parseTree(page: Buffer, at: number): LmdbTree | string {
  const flags = page.readUInt16LE(at + 4);
  const depth = page.readUInt16LE(at + 6);
  if (page.readBigUInt64LE(at + 40) === NO_PAGE)
    return depth === 0 ? { flags, depth, root: undefined } : `an empty tree of depth ${depth}`;
  const root = readU64(page, at + 40);
  if (root === undefined) return `root page ${page.readBigUInt64LE(at + 40)} out of range`;
  if (depth < 1 || depth > TREE_DEPTH_MAX) return `a tree of depth ${depth}`;
  if ((flags & DUPLICATE_TREE_FLAGS) !== 0)
    return `tree flags 0x${flags.toString(16)} (duplicates are never written here)`;
  return { flags, depth, root };
}

type ParsedMeta = Omit<LmdbMeta, 'previousTxnid' | 'metaPagesChecksum'>;

function parseMeta(page: Buffer, which: number): ParsedMeta | string {
  const flags = page.readUInt16LE(18);
  if ((flags & PAGE_TYPE_FLAGS) !== P_META)
    return `page ${which} is not a meta page (flags 0x${flags.toString(16)})`;
  const magic = page.readUInt32LE(24);
  if (magic !== LMDB_MAGIC)
    return `meta page ${which} has magic 0x${magic.toString(16)}, not 0xbeefc0de`;
  const version = page.readUInt32LE(28) & 0xffff;
  if (version !== LMDB_DATA_VERSION)
    return `meta page ${which} has data format version ${version}, not ${LMDB_DATA_VERSION}`;
  const pageBytes = page.readUInt32LE(48);
  if (
    pageBytes < PAGE_BYTES_MIN ||
    pageBytes > PAGE_BYTES_MAX ||
    (pageBytes & (pageBytes - 1)) !== 0
  )
    return `meta page ${which} has page size ${pageBytes}`;
  const envFlags = page.readUInt16LE(52);
  if ((envFlags & ~HARMLESS_ENV_FLAGS) !== MDB_INTEGERKEY)
    return `meta page ${which} has LMDB flags 0x${envFlags.toString(16)}`;
  const mapBytes = page.readBigUInt64LE(40);
  if (mapBytes > BigInt(MAP_BYTES_MAX)) return `meta page ${which} has map size ${mapBytes}`;
  const lastPage = readU64(page, 144);
  const txnid = readU64(page, 152);
  // LMDB grows the map before it uses a page past it, and records the map size in the same meta.
  if (lastPage === undefined || lastPage < 1 || (lastPage + 1) * pageBytes > Number(mapBytes)) {
    return `meta page ${which} has last page ${page.readBigUInt64LE(144)} (map size ${mapBytes})`;
  }
  if (txnid === undefined) return `meta page ${which} has txnid ${page.readBigUInt64LE(152)}`;
  const freeTree = parseTree(page, 48);
  if (typeof freeTree === 'string') return `meta page ${which}, free-page tree: ${freeTree}`;
  const mainTree = parseTree(page, 96);
  if (typeof mainTree === 'string') return `meta page ${which}, main tree: ${mainTree}`;
  return { pageBytes, lastPage, txnid, freeTree, mainTree };
}

/**
 * Reads both meta pages of the data file `file` of `sizeBytes` and returns the one LMDB will open.
 * Both must be whole and valid (LMDB itself only checks page 0, and would open a garbage page 1 whose
 * txnid happens to be larger), with the same page size, and the file a whole number of pages.
 */
export async function readLmdbMeta(file: FileHandle, sizeBytes: number): Promise<LmdbMeta> {
  const page = Buffer.alloc(META_BYTES);
  if (sizeBytes < 2 * PAGE_BYTES_MIN)
    throw lmdbFileDamage(file.path, sizeBytes, `shorter than two meta pages`);
  const metas: ParsedMeta[] = [];
  let metaPagesChecksum = 0;
  let position = 0;
  for (const which of [0, 1]) {
    if ((await readFully(file, page, META_BYTES, position)) < META_BYTES)
      throw lmdbFileDamage(file.path, sizeBytes, `meta page ${which} cut short`);
    const meta = parseMeta(page, which);
    if (typeof meta === 'string') throw lmdbFileDamage(file.path, sizeBytes, meta);
    metas.push(meta);
    metaPagesChecksum = (metaPagesChecksum + xxh32(page)) >>> 0;
    position += meta.pageBytes;
  }
  const [meta0, meta1] = metas as [ParsedMeta, ParsedMeta];
  if (meta0.pageBytes !== meta1.pageBytes)
    throw lmdbFileDamage(
      file.path,
      sizeBytes,
      `meta pages disagree on the page size (${meta0.pageBytes}, ${meta1.pageBytes})`,
    );
  if (sizeBytes % meta0.pageBytes !== 0)
    throw lmdbFileDamage(
      file.path,
      sizeBytes,
      `not a whole number of ${meta0.pageBytes}-byte pages`,
    );
  const [newest, other] = meta1.txnid > meta0.txnid ? [meta1, meta0] : [meta0, meta1];
  const { pageBytes, lastPage, txnid, freeTree, mainTree } = newest;
  return {
    pageBytes,
    lastPage,
    txnid,
    previousTxnid: other.txnid,
    freeTree,
    mainTree,
    metaPagesChecksum,
  };
}
