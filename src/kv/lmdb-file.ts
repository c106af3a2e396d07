/**
 * Reads an LMDB data file (`data.mdb`) through the FileSystem port, so that a damaged one can be
 * recognized before LMDB maps it. LMDB trusts its file: it follows page numbers into the map without
 * comparing them to the file's size (a page past the end is a SIGBUS) and reads whatever bytes a page
 * holds as node offsets and sizes (a SIGSEGV, or an abort on one of its assertions). This module knows
 * the on-disk layout of the LMDB bundled with lmdb-js 3.x (its patched copy of the LMDB development
 * branch, data format version 2, 64-bit page numbers, little-endian; see
 * node_modules/lmdb/dependencies/lmdb/libraries/liblmdb/mdb.c) and offers three things:
 * - `readLmdbMeta`: both meta pages checked as LMDB would use them, and the newer one returned;
 * - `checkLmdbTrees`: every page LMDB can reach from that meta read and checked (see below);
 * - `lmdbFileChecksum`: a checksum of the file's bytes, read in bounded chunks.
 * Damage is reported as OffsetStoreError('CORRUPT_MESSAGE') naming the file, its size and the check.
 *
 * Page header (24 bytes, every page):
 * | bytes | field | meaning                                                                      |
 * |-------|-------|------------------------------------------------------------------------------|
 * | 0-7   | pgno  | the page's own number (not kept up to date in meta pages)                    |
 * | 8-15  | txnid | the transaction that wrote the page                                          |
 * | 18-19 | flags | 0x01 branch, 0x02 leaf, 0x04 overflow, 0x08 meta, 0x20 leaf2, 0x40 sub-page |
 * | 20-21 | lower | branch/leaf: bytes of node pointers (2 per node), counted from byte 24       |
 * | 22-23 | upper | branch/leaf: start of the node area, counted from byte 24                   |
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
 * Node (pointer i is the u16 at byte 24 + 2i; the node starts at byte 24 + pointer):
 * | 0-1 lo | 2-3 hi | 4-5 flags | 6-7 key bytes | key | data |
 * In a branch page the child page is lo | hi << 16 | flags << 32. In a leaf page the data size is
 * lo | hi << 16, and the flags say what the data is: 0x01 an overflow run {first page u64, txnid u64,
 * page count u64} holding the value, 0x02 a sub-tree record, 0x04 duplicates (never written here).
 *
 * `readLmdbMeta` requires of both metas: the meta page flag, the magic and version, a power-of-two
 * page size (the same in both), a txnid and last page that fit in a double, only the LMDB flags that
 * change nothing in how the file is read (lmdb-js crashes on an encryption flag in page 0), a map
 * size of at most 16 TiB that holds the last page (lmdb-js maps that much and crashes when the mmap
 * fails), and tree records with a sane depth and no duplicate-sort flags; and of the file, a whole
 * number of pages.
 *
 * `checkLmdbTrees` walks the free-page tree, the main tree and any sub-tree from the newest meta's
 * roots and requires, for every page it reaches: a number inside the file and below the meta's last
 * page, reached once (no cycle, no page shared by two parents), its own number in its header, the
 * page type its depth calls for, at least one node (two in a branch of a keyed tree, as LMDB
 * asserts), node pointers and nodes inside the page and tiling its node area exactly (LMDB moves
 * nodes by their recorded sizes on its next write to the page); and for every overflow run: inside
 * the file, long enough for its value, and overlapping no other page. Overflow pages themselves are
 * not read: LMDB reads their bytes as the value (which the checkpoint's own checksum covers) and
 * nothing else. Not checked: key order inside a page (a misordered key makes a lookup miss, not a
 * crash) and the page lists stored as free-page tree values (LMDB would hand out a listed page again
 * on its next write).
 */
import { xxh32 } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import type { FileHandle } from '../io/index.js';

const PAGE_HEADER_BYTES = 24;
const META_BYTES = 168;
const NODE_HEADER_BYTES = 8;
const OVERFLOW_REF_BYTES = 24;
const TREE_RECORD_BYTES = 48;
const LMDB_MAGIC = 0xbeefc0de;
const LMDB_DATA_VERSION = 2;
const PAGE_BYTES_MIN = 512;
const PAGE_BYTES_MAX = 65536;
/** LMDB's cursor stack: a tree deeper than this cannot be walked by LMDB either. */
const TREE_DEPTH_MAX = 32;
const NO_PAGE = 0xffffffffffffffffn;

const P_BRANCH = 0x01;
const P_LEAF = 0x02;
const P_OVERFLOW = 0x04;
const P_META = 0x08;
const P_LEAF2 = 0x20;
const P_SUBP = 0x40;
const PAGE_TYPE_FLAGS = P_BRANCH | P_LEAF | P_OVERFLOW | P_META | P_LEAF2 | P_SUBP;
const F_BIGDATA = 0x01;
const F_SUBDATA = 0x02;
const F_DUPDATA = 0x04;
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
  flags: number;
  depth: number;
  /** Root page number; undefined for an empty tree. */
  root: number | undefined;
}

/** The meta page LMDB opens (the newer of the two). */
export interface LmdbMeta {
  pageBytes: number;
  lastPage: number;
  txnid: number;
  /** txnid of the other meta page. */
  previousTxnid: number;
  freeTree: LmdbTree;
  mainTree: LmdbTree;
}

/** The error for a damaged data file. */
export function lmdbFileDamage(filePath: string, sizeBytes: number, what: string): OffsetStoreError {
  return new OffsetStoreError('CORRUPT_MESSAGE', `${filePath} (${sizeBytes} bytes) is damaged: ${what}`);
}

async function readFully(file: FileHandle, buffer: Buffer, length: number, position: number): Promise<number> {
  let done = 0;
  while (done < length) {
    const bytes = await file.read(buffer, done, length - done, position + done);
    if (bytes === 0) break;
    done += bytes;
  }
  return done;
}

function safeNumber(value: bigint): number | undefined {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : undefined;
}

function parseTree(page: Buffer, at: number): LmdbTree | string {
  const flags = page.readUInt16LE(at + 4);
  const depth = page.readUInt16LE(at + 6);
  const rootField = page.readBigUInt64LE(at + 40);
  if (rootField === NO_PAGE) return depth === 0 ? { flags, depth, root: undefined } : `an empty tree of depth ${depth}`;
  const root = safeNumber(rootField);
  if (root === undefined) return `root page ${rootField} out of range`;
  if (depth < 1 || depth > TREE_DEPTH_MAX) return `a tree of depth ${depth}`;
  if ((flags & DUPLICATE_TREE_FLAGS) !== 0) return `tree flags 0x${flags.toString(16)} (duplicates are never written here)`;
  return { flags, depth, root };
}

type ParsedMeta = Omit<LmdbMeta, 'previousTxnid'>;

function parseMeta(page: Buffer, which: number): ParsedMeta | string {
  const flags = page.readUInt16LE(18);
  if ((flags & PAGE_TYPE_FLAGS) !== P_META) return `page ${which} is not a meta page (flags 0x${flags.toString(16)})`;
  const magic = page.readUInt32LE(24);
  if (magic !== LMDB_MAGIC) return `meta page ${which} has magic 0x${magic.toString(16)}, not 0xbeefc0de`;
  const version = page.readUInt32LE(28) & 0xffff;
  if (version !== LMDB_DATA_VERSION) return `meta page ${which} has data format version ${version}, not ${LMDB_DATA_VERSION}`;
  const pageBytes = page.readUInt32LE(48);
  if (pageBytes < PAGE_BYTES_MIN || pageBytes > PAGE_BYTES_MAX || (pageBytes & (pageBytes - 1)) !== 0) return `meta page ${which} has page size ${pageBytes}`;
  const envFlags = page.readUInt16LE(52);
  if ((envFlags & ~HARMLESS_ENV_FLAGS) !== MDB_INTEGERKEY) return `meta page ${which} has LMDB flags 0x${envFlags.toString(16)}`;
  const mapBytes = page.readBigUInt64LE(40);
  if (mapBytes > BigInt(MAP_BYTES_MAX)) return `meta page ${which} has map size ${mapBytes}`;
  const lastPage = safeNumber(page.readBigUInt64LE(144));
  const txnid = safeNumber(page.readBigUInt64LE(152));
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
  if (sizeBytes < 2 * PAGE_BYTES_MIN) throw lmdbFileDamage(file.path, sizeBytes, `shorter than two meta pages`);
  const metas: ParsedMeta[] = [];
  let position = 0;
  for (const which of [0, 1]) {
    if ((await readFully(file, page, META_BYTES, position)) < META_BYTES) throw lmdbFileDamage(file.path, sizeBytes, `meta page ${which} cut short`);
    const meta = parseMeta(page, which);
    if (typeof meta === 'string') throw lmdbFileDamage(file.path, sizeBytes, meta);
    metas.push(meta);
    position += meta.pageBytes;
  }
  const [meta0, meta1] = metas as [ParsedMeta, ParsedMeta];
  if (meta0.pageBytes !== meta1.pageBytes) throw lmdbFileDamage(file.path, sizeBytes, `meta pages disagree on the page size (${meta0.pageBytes}, ${meta1.pageBytes})`);
  if (sizeBytes % meta0.pageBytes !== 0) throw lmdbFileDamage(file.path, sizeBytes, `not a whole number of ${meta0.pageBytes}-byte pages`);
  const [newest, other] = meta1.txnid > meta0.txnid ? [meta1, meta0] : [meta0, meta1];
  const { pageBytes, lastPage, txnid, freeTree, mainTree } = newest;
  return { pageBytes, lastPage, txnid, previousTxnid: other.txnid, freeTree, mainTree };
}

/** A page waiting to be checked: its number, its depth in its tree, and the tree. */
interface PendingPage {
  pgno: number;
  level: number;
  tree: LmdbTree;
  /** Least number of nodes in a branch page: 2 in keyed trees (an LMDB assertion), 1 in the free-page tree. */
  branchKeysMin: number;
  name: string;
}

/**
 * Walks every tree reachable from `meta` and checks each page LMDB can reach (see the header);
 * throws CORRUPT_MESSAGE at the first problem. Reads each branch and leaf page once (one page-sized
 * buffer) and remembers the pages seen in a bitmap of one bit per page of the file.
 */
export async function checkLmdbTrees(file: FileHandle, sizeBytes: number, meta: LmdbMeta): Promise<void> {
  const walk = new TreeWalk(file, sizeBytes, meta);
  walk.push(meta.freeTree, 'free-page tree', 1);
  walk.push(meta.mainTree, 'main tree', 2);
  await walk.run();
}

/** The state of one `checkLmdbTrees`: pages still to check, pages already reached. */
class TreeWalk {
  readonly #file: FileHandle;
  readonly #sizeBytes: number;
  readonly #pageBytes: number;
  readonly #lastPage: number;
  readonly #filePages: number;
  /** Pages LMDB may reach: below both the meta's last page + 1 and the file's end. */
  readonly #pageEnd: number;
  readonly #seen: Uint8Array;
  readonly #pending: PendingPage[] = [];
  readonly #page: Buffer;

  constructor(file: FileHandle, sizeBytes: number, meta: LmdbMeta) {
    this.#file = file;
    this.#sizeBytes = sizeBytes;
    this.#pageBytes = meta.pageBytes;
    this.#lastPage = meta.lastPage;
    this.#filePages = Math.floor(sizeBytes / meta.pageBytes);
    this.#pageEnd = Math.min(meta.lastPage + 1, this.#filePages);
    this.#seen = new Uint8Array(Math.ceil(this.#pageEnd / 8));
    this.#page = Buffer.allocUnsafe(meta.pageBytes);
  }

  push(tree: LmdbTree, name: string, branchKeysMin: number): void {
    if (tree.root !== undefined) this.#pending.push({ pgno: tree.root, level: 1, tree, branchKeysMin, name });
  }

  async run(): Promise<void> {
    for (let next = this.#pending.pop(); next !== undefined; next = this.#pending.pop()) {
      const where = `${next.name} page ${next.pgno}`;
      this.#claim(next.pgno, 1, next.name);
      if ((await readFully(this.#file, this.#page, this.#pageBytes, next.pgno * this.#pageBytes)) < this.#pageBytes) throw this.#damage(`${where} cut short`);
      const upper = this.#checkHeader(next, where);
      this.#checkNodes(next, where, upper);
    }
  }

  #damage(what: string): OffsetStoreError {
    return lmdbFileDamage(this.#file.path, this.#sizeBytes, what);
  }

  /** Marks pages [first, first + count) as reached; each may be reached once, inside the file. */
  #claim(first: number, count: number, what: string): void {
    if (first < 2 || count < 1 || first + count > this.#pageEnd) {
      const pages = count === 1 ? `page ${first}` : `pages ${first}..${first + count - 1}`;
      throw this.#damage(`${what} at ${pages} is not among the data pages 2..${this.#pageEnd - 1} (the file holds ${this.#filePages} pages, the meta's last page is ${this.#lastPage})`);
    }
    for (let p = first; p < first + count; p++) {
      if ((this.#seen[p >> 3]! & (1 << (p & 7))) !== 0) throw this.#damage(`${what} at page ${first} reuses page ${p}, already reached`);
      this.#seen[p >> 3]! |= 1 << (p & 7);
    }
  }

  /** Checks the header of the page in the buffer; returns the start of its node area (from byte 24). */
  #checkHeader({ pgno, level, tree, branchKeysMin }: PendingPage, where: string): number {
    const page = this.#page;
    const storedPgno = page.readBigUInt64LE(0);
    if (storedPgno !== BigInt(pgno)) throw this.#damage(`${where} holds page number ${storedPgno}`);
    const isLeaf = level === tree.depth;
    const flags = page.readUInt16LE(18) & PAGE_TYPE_FLAGS;
    if (flags !== (isLeaf ? P_LEAF : P_BRANCH)) throw this.#damage(`${where} at depth ${level} of ${tree.depth} has page flags 0x${flags.toString(16)}`);
    const lower = page.readUInt16LE(20);
    const upper = page.readUInt16LE(22);
    if ((lower & 1) !== 0 || lower > upper || PAGE_HEADER_BYTES + upper > this.#pageBytes) throw this.#damage(`${where} has free space bounds ${lower}..${upper}`);
    if (lower >> 1 < (isLeaf ? 1 : branchKeysMin)) throw this.#damage(`${where} has ${lower >> 1} nodes`);
    return upper;
  }

  /** Checks the nodes of the page in the buffer and queues what they point to. */
  #checkNodes(next: PendingPage, where: string, upper: number): void {
    const page = this.#page;
    const pageBytes = this.#pageBytes;
    const isLeaf = next.level === next.tree.depth;
    const extents: [start: number, end: number][] = [];
    const nodeCount = page.readUInt16LE(20) >> 1;
    for (let i = 0; i < nodeCount; i++) {
      const node = PAGE_HEADER_BYTES + page.readUInt16LE(PAGE_HEADER_BYTES + 2 * i);
      if (node < PAGE_HEADER_BYTES + upper || node + NODE_HEADER_BYTES > pageBytes) throw this.#damage(`${where} node ${i} at byte ${node} is outside the node area`);
      const lo = page.readUInt16LE(node);
      const hi = page.readUInt16LE(node + 2);
      const nodeFlags = page.readUInt16LE(node + 4);
      const keyEnd = node + NODE_HEADER_BYTES + page.readUInt16LE(node + 6);
      const dataBytes = lo + hi * 0x10000;
      const nodeEnd = isLeaf ? keyEnd + ((nodeFlags & F_BIGDATA) !== 0 ? OVERFLOW_REF_BYTES : dataBytes) : keyEnd;
      if (nodeEnd > pageBytes) throw this.#damage(`${where} node ${i} overruns the page`);
      extents.push([node, nodeEnd + (nodeEnd & 1)]);
      if (!isLeaf) {
        this.#pending.push({ ...next, pgno: lo + hi * 0x10000 + nodeFlags * 0x100000000, level: next.level + 1 });
      } else if ((nodeFlags & F_DUPDATA) !== 0) {
        throw this.#damage(`${where} node ${i} has duplicates, which are never written here`);
      } else if ((nodeFlags & F_BIGDATA) !== 0) {
        const first = safeNumber(page.readBigUInt64LE(keyEnd)) ?? -1;
        const count = safeNumber(page.readBigUInt64LE(keyEnd + 16)) ?? -1;
        const needed = Math.floor((PAGE_HEADER_BYTES - 1 + dataBytes) / pageBytes) + 1;
        if (count < needed) throw this.#damage(`${where} node ${i}: a value of ${dataBytes} bytes in an overflow run of ${count} pages`);
        this.#claim(first, count, `${where} node ${i}'s overflow run`);
      } else if ((nodeFlags & F_SUBDATA) !== 0) {
        const sub = dataBytes === TREE_RECORD_BYTES ? parseTree(page, keyEnd) : `a sub-tree record of ${dataBytes} bytes`;
        if (typeof sub === 'string') throw this.#damage(`${where} node ${i}: ${sub}`);
        this.push(sub, `sub-tree of ${where}`, 2);
      }
    }
    checkNodesPacked(extents, PAGE_HEADER_BYTES + upper, pageBytes, (what) => this.#damage(`${where}: ${what}`));
  }
}

/**
 * LMDB keeps a page's nodes packed from `upper` to the page end, each padded to an even size, and
 * moves them by those sizes when it adds or removes one: a node whose size fields lie would make its
 * next write to the page move the wrong bytes (heap corruption in the writer). So the nodes must
 * tile the node area exactly.
 */
function checkNodesPacked(extents: [number, number][], areaStart: number, pageBytes: number, damage: (what: string) => OffsetStoreError): void {
  extents.sort((a, b) => a[0] - b[0]);
  let expected = areaStart;
  for (const [start, end] of extents) {
    if (start !== expected) throw damage(`a node at byte ${start} where the node area continues at byte ${expected}`);
    expected = end;
  }
  if (expected !== pageBytes) throw damage(`its nodes end at byte ${expected}, not at the page end`);
}

/** Bytes of `data.mdb` read (and hashed) at a time: a bounded buffer however large the file. */
const CHECKSUM_CHUNK_BYTES = 1 << 20;

/**
 * xxh32 over the xxh32 of each 1 MiB chunk of the file's first `sizeBytes` bytes (a chunked hash,
 * so memory stays bounded; reading the next chunk overlaps hashing the current one). Throws
 * CORRUPT_MESSAGE if the file is shorter than `sizeBytes`.
 */
export async function lmdbFileChecksum(file: FileHandle, sizeBytes: number): Promise<number> {
  const chunkCount = Math.ceil(sizeBytes / CHECKSUM_CHUNK_BYTES);
  const digests = Buffer.alloc(4 * chunkCount);
  const buffers = [Buffer.allocUnsafe(Math.min(CHECKSUM_CHUNK_BYTES, sizeBytes)), Buffer.allocUnsafe(Math.min(CHECKSUM_CHUNK_BYTES, sizeBytes))];
  const readChunk = (i: number): Promise<number> => readFully(file, buffers[i % 2]!, Math.min(CHECKSUM_CHUNK_BYTES, sizeBytes - i * CHECKSUM_CHUNK_BYTES), i * CHECKSUM_CHUNK_BYTES);
  let reading = chunkCount > 0 ? readChunk(0) : undefined;
  for (let i = 0; i < chunkCount; i++) {
    const bytes = await reading!;
    if (bytes < Math.min(CHECKSUM_CHUNK_BYTES, sizeBytes - i * CHECKSUM_CHUNK_BYTES)) throw lmdbFileDamage(file.path, sizeBytes, `cut short at byte ${i * CHECKSUM_CHUNK_BYTES + bytes}`);
    reading = i + 1 < chunkCount ? readChunk(i + 1) : undefined;
    digests.writeUInt32LE(xxh32(buffers[i % 2]!, 0, bytes), 4 * i);
  }
  return xxh32(digests);
}
