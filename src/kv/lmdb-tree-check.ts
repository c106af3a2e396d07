/**
 * Checks every page LMDB can reach in a data file, through the FileSystem port and before LMDB maps
 * it, and computes a checksum of the bytes LMDB interprets (the structure), for the seal.
 *
 * Node (in branch and leaf pages; pointer i is the u16 at byte 24 + 2i, the node starts at 24 +
 * pointer; nodes are packed from the node area start to the page end, each padded to an even size):
 * | 0-1 lo | 2-3 hi | 4-5 flags | 6-7 key bytes | key | data |
 * In a branch page the child page is lo | hi << 16 | flags << 32. In a leaf page the data size is
 * lo | hi << 16, and the flags say what the data is: 0x01 an overflow run {first page u64, txnid u64,
 * page count u64} holding the value, 0x02 a sub-tree record, 0x04 duplicates (never written here).
 *
 * `checkLmdbTrees` walks the free-page tree, the main tree and any sub-tree from the newest meta's
 * roots and requires:
 * 1. of every page it reaches: a number inside the file and below the meta's last page, reached once
 *    (no cycle, no page shared by two parents), its own number in its header, the page type its
 *    depth calls for, at least one node (two in a branch of a keyed tree, as LMDB asserts), node
 *    pointers and nodes inside the page and tiling its node area exactly (LMDB moves nodes by their
 *    recorded sizes on its next write to the page);
 * 2. of every overflow run: inside the file, reached once, long enough for its value, and a first
 *    page whose header names the run (its number, the overflow flag, the page count LMDB reads back
 *    when it frees the run).
 * Tree pages are read a batch at a time, concurrently; overflow runs after the walk, in page order,
 * with nearby run heads read together and a few reads in flight, so the reads stay few and large.
 *
 * The checksum is the sum (mod 2^32) of the xxh32 of: the bytes LMDB reads of each meta page; each
 * branch and leaf page; and all of each free-page tree overflow run (the page lists LMDB allocates
 * from). It leaves out what LMDB hands over without interpreting, the bytes of values in overflow
 * runs (each checkpoint verifies its values against its own checksum), the run headers (fully
 * determined by the leaf nodes, which it covers, once checked), and the free pages, which LMDB only
 * ever overwrites. Not checked by the walk, but covered by the checksum when the file is sealed:
 * keys and values inside leaf pages (a misordered key makes a lookup miss, not a crash) and the page
 * lists of the free-page tree (LMDB would hand out a listed page again).
 */
import { xxh32 } from '../codec/index.js';
import type { OffsetStoreError } from '../errors/index.js';
import type { FileHandle } from '../io/index.js';
import {
  PAGE_HEADER_BYTES,
  PAGE_TYPE_FLAGS,
  P_BRANCH,
  P_LEAF,
  P_OVERFLOW,
  TREE_RECORD_BYTES,
  lmdbFileDamage,
  parseTree,
  readFully,
  readU64,
  type LmdbMeta,
  type LmdbTree,
} from './lmdb-meta.js';

const NODE_HEADER_BYTES = 8;
const OVERFLOW_REF_BYTES = 24;
const F_BIGDATA = 0x01;
const F_SUBDATA = 0x02;
const F_DUPDATA = 0x04;
/** Tree pages read at once (a page-sized buffer each). */
const TREE_READ_BATCH_PAGES = 64;
/** Largest single read of overflow runs: run heads this close together are read in one go. */
const RUN_READ_BYTES_MAX = 1 << 20;
/** Reads of overflow runs in flight at once (a RUN_READ_BYTES_MAX buffer each). */
const RUN_READS_IN_FLIGHT = 4;

/** What `checkLmdbTrees` found. */
export interface LmdbTreeCheck {
  /** Checksum of the bytes LMDB interprets (see the header). */
  checksum: number;
  /** Branch and leaf pages reached and checked. */
  treePages: number;
  /** Overflow runs reached and checked. */
  overflowRuns: number;
}

/** One read of overflow pages: from page `start`, `pages` pages, holding the heads of `runs`. */
interface RunRead {
  start: number;
  pages: number;
  runs: OverflowRun[];
}

/** A page waiting to be checked: its number, its depth in its tree, and the tree. */
interface PendingPage {
  pgno: number;
  level: number;
  tree: LmdbTree;
  /** Least number of nodes in a branch page: 2 in keyed trees (an LMDB assertion), 1 in the free-page tree. */
  branchKeysMin: number;
  name: string;
  /** The free-page tree, whose values (page lists) LMDB interprets. */
  isFreeTree: boolean;
}

/** An overflow run found in a leaf. */
interface OverflowRun {
  first: number;
  count: number;
  /** A free-page tree value (page lists LMDB interprets): checked and hashed whole, not only its head. */
  whole: boolean;
  /** The leaf page and node that point to it, for messages. */
  leafPgno: number;
  node: number;
}

/**
 * Walks every tree reachable from `meta` and checks what LMDB can reach (see the header); throws
 * OffsetStoreError('CORRUPT_MESSAGE') at the first problem. Memory: a bitmap of one bit per page of
 * the file, the list of overflow runs, and buffers of TREE_READ_BATCH_PAGES pages and 1 MiB.
 */
export async function checkLmdbTrees(
  file: FileHandle,
  sizeBytes: number,
  meta: LmdbMeta,
): Promise<LmdbTreeCheck> {
  const walk = new TreeWalk(file, sizeBytes, meta);
  walk.push(meta.freeTree, 'free-page tree', 1, true);
  walk.push(meta.mainTree, 'main tree', 2, false);
  await walk.walkTrees();
  await walk.checkOverflowRuns();
  return walk.result();
}

/** The state of one `checkLmdbTrees`. */
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
  readonly #runs: OverflowRun[] = [];
  #checksum: number;
  #treePages = 0;

  constructor(file: FileHandle, sizeBytes: number, meta: LmdbMeta) {
    this.#file = file;
    this.#sizeBytes = sizeBytes;
    this.#pageBytes = meta.pageBytes;
    this.#lastPage = meta.lastPage;
    this.#filePages = Math.floor(sizeBytes / meta.pageBytes);
    this.#pageEnd = Math.min(meta.lastPage + 1, this.#filePages);
    this.#seen = new Uint8Array(Math.ceil(this.#pageEnd / 8));
    this.#checksum = meta.metaPagesChecksum;
  }

  push(tree: LmdbTree, name: string, branchKeysMin: number, isFreeTree: boolean): void {
    if (tree.root !== undefined)
      this.#pending.push({ pgno: tree.root, level: 1, tree, branchKeysMin, name, isFreeTree });
  }

  result(): LmdbTreeCheck {
    return {
      checksum: this.#checksum,
      treePages: this.#treePages,
      overflowRuns: this.#runs.length,
    };
  }

  /** Checks the tree pages, TREE_READ_BATCH_PAGES at a time, each batch read concurrently. */
  async walkTrees(): Promise<void> {
    const buffers = Array.from({ length: TREE_READ_BATCH_PAGES }, () =>
      Buffer.allocUnsafe(this.#pageBytes),
    );
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(Math.max(0, this.#pending.length - TREE_READ_BATCH_PAGES));
      for (const next of batch) this.#claim(next.pgno, 1, next.name);
      const lengths = await Promise.all(
        batch.map((next, i) =>
          readFully(this.#file, buffers[i]!, this.#pageBytes, next.pgno * this.#pageBytes),
        ),
      );
      batch.forEach((next, i) => {
        const where = `${next.name} page ${next.pgno}`;
        if (lengths[i]! < this.#pageBytes) throw this.#damage(`${where} cut short`);
        const upper = this.#checkHeader(buffers[i]!, next, where);
        this.#checkNodes(buffers[i]!, next, where, upper);
        this.#checksum = (this.#checksum + xxh32(buffers[i]!)) >>> 0;
        this.#treePages++;
      });
    }
  }

  /**
   * Checks each overflow run's header (and hashes all of a free-page tree run), in page order: run
   * heads less than RUN_READ_BYTES_MAX apart are read in one go, RUN_READS_IN_FLIGHT reads at a time.
   */
  async checkOverflowRuns(): Promise<void> {
    const runs = this.#runs.sort((a, b) => a.first - b.first);
    const pagesMax = Math.max(1, Math.floor(RUN_READ_BYTES_MAX / this.#pageBytes));
    const reads: RunRead[] = [];
    for (let i = 0; i < runs.length;) {
      const start = runs[i]!.first;
      let end = i + 1;
      let pages = runs[i]!.whole ? Math.min(runs[i]!.count, pagesMax) : 1;
      while (
        end < runs.length &&
        !runs[end - 1]!.whole &&
        !runs[end]!.whole &&
        runs[end]!.first - start < pagesMax
      )
        pages = runs[end++]!.first - start + 1;
      reads.push({ start, pages, runs: runs.slice(i, end) });
      i = end;
    }
    const inFlight = Math.min(RUN_READS_IN_FLIGHT, reads.length);
    const buffers = Array.from({ length: inFlight }, () =>
      Buffer.allocUnsafe(pagesMax * this.#pageBytes),
    );
    const readAt = (r: number): Promise<number> => {
      const reading = readFully(
        this.#file,
        buffers[r % inFlight]!,
        reads[r]!.pages * this.#pageBytes,
        reads[r]!.start * this.#pageBytes,
      );
      reading.catch(() => undefined); // awaited below; this only keeps a read abandoned by a throw from being unhandled
      return reading;
    };
    const readings = Array.from({ length: inFlight }, (_, r) => readAt(r));
    for (let r = 0; r < reads.length; r++) {
      const { start, pages, runs: inRead } = reads[r]!;
      const buffer = buffers[r % inFlight]!;
      if ((await readings[r]!) < pages * this.#pageBytes)
        throw this.#damage(`overflow pages from ${start} cut short`);
      for (const run of inRead)
        this.#checkRunHead(buffer, (run.first - start) * this.#pageBytes, run);
      if (inRead[0]!.whole) await this.#hashWholeRun(inRead[0]!, buffer, pages);
      if (r + inFlight < reads.length) readings.push(readAt(r + inFlight));
    }
  }

  #damage(what: string): OffsetStoreError {
    return lmdbFileDamage(this.#file.path, this.#sizeBytes, what);
  }

  /** Marks pages [first, first + count) as reached; each may be reached once, inside the file. */
  #claim(first: number, count: number, what: string): void {
    if (first < 2 || count < 1 || first + count > this.#pageEnd) {
      const pages = count === 1 ? `page ${first}` : `pages ${first}..${first + count - 1}`;
      throw this.#damage(
        `${what} at ${pages} is not among the data pages 2..${this.#pageEnd - 1} (the file holds ${this.#filePages} pages, the meta's last page is ${this.#lastPage})`,
      );
    }
    for (let p = first; p < first + count; p++) {
      if ((this.#seen[p >> 3]! & (1 << (p & 7))) !== 0)
        throw this.#damage(`${what} at page ${first} reuses page ${p}, already reached`);
      this.#seen[p >> 3]! |= 1 << (p & 7);
    }
  }

  /** Checks a branch or leaf page's header; returns the start of its node area (from byte 24). */
  #checkHeader(
    page: Buffer,
    { pgno, level, tree, branchKeysMin }: PendingPage,
    where: string,
  ): number {
    if (readU64(page, 0) !== pgno)
      throw this.#damage(`${where} holds page number ${page.readBigUInt64LE(0)}`);
    const isLeaf = level === tree.depth;
    const flags = page.readUInt16LE(18) & PAGE_TYPE_FLAGS;
    if (flags !== (isLeaf ? P_LEAF : P_BRANCH))
      throw this.#damage(
        `${where} at depth ${level} of ${tree.depth} has page flags 0x${flags.toString(16)}`,
      );
    const lower = page.readUInt16LE(20);
    const upper = page.readUInt16LE(22);
    if ((lower & 1) !== 0 || lower > upper || PAGE_HEADER_BYTES + upper > this.#pageBytes)
      throw this.#damage(`${where} has free space bounds ${lower}..${upper}`);
    if (lower >> 1 < (isLeaf ? 1 : branchKeysMin))
      throw this.#damage(`${where} has ${lower >> 1} nodes`);
    return upper;
  }

  /** Checks the nodes of a branch or leaf page and queues what they point to. */
  #checkNodes(page: Buffer, next: PendingPage, where: string, upper: number): void {
    const pageBytes = this.#pageBytes;
    const isLeaf = next.level === next.tree.depth;
    /** Each node as start * 2^17 + end (both at most 65536), so that sorting numbers sorts by start. */
    const extents: number[] = [];
    const nodeCount = page.readUInt16LE(20) >> 1;
    for (let i = 0; i < nodeCount; i++) {
      const node = PAGE_HEADER_BYTES + page.readUInt16LE(PAGE_HEADER_BYTES + 2 * i);
      if (node < PAGE_HEADER_BYTES + upper || node + NODE_HEADER_BYTES > pageBytes)
        throw this.#damage(`${where} node ${i} at byte ${node} is outside the node area`);
      const lo = page.readUInt16LE(node);
      const hi = page.readUInt16LE(node + 2);
      const nodeFlags = page.readUInt16LE(node + 4);
      const keyEnd = node + NODE_HEADER_BYTES + page.readUInt16LE(node + 6);
      const dataBytes = lo + hi * 0x10000;
      const nodeEnd = isLeaf
        ? keyEnd + ((nodeFlags & F_BIGDATA) !== 0 ? OVERFLOW_REF_BYTES : dataBytes)
        : keyEnd;
      if (nodeEnd > pageBytes) throw this.#damage(`${where} node ${i} overruns the page`);
      extents.push(node * 0x20000 + nodeEnd + (nodeEnd & 1));
      if (!isLeaf) {
        this.#pending.push({
          ...next,
          pgno: lo + hi * 0x10000 + nodeFlags * 0x100000000,
          level: next.level + 1,
        });
      } else if ((nodeFlags & F_DUPDATA) !== 0) {
        throw this.#damage(`${where} node ${i} has duplicates, which are never written here`);
      } else if ((nodeFlags & F_BIGDATA) !== 0) {
        const first = readU64(page, keyEnd) ?? -1;
        const count = readU64(page, keyEnd + 16) ?? -1;
        const needed = Math.floor((PAGE_HEADER_BYTES - 1 + dataBytes) / pageBytes) + 1;
        if (count < needed)
          throw this.#damage(
            `${where} node ${i}: a value of ${dataBytes} bytes in an overflow run of ${count} pages`,
          );
        this.#claim(first, count, `${where} node ${i}'s overflow run`);
        this.#runs.push({ first, count, whole: next.isFreeTree, leafPgno: next.pgno, node: i });
      } else if ((nodeFlags & F_SUBDATA) !== 0) {
        const sub =
          dataBytes === TREE_RECORD_BYTES
            ? parseTree(page, keyEnd)
            : `a sub-tree record of ${dataBytes} bytes`;
        if (typeof sub === 'string') throw this.#damage(`${where} node ${i}: ${sub}`);
        this.push(sub, `sub-tree of ${where}`, 2, false);
      }
    }
    checkNodesPacked(extents, PAGE_HEADER_BYTES + upper, pageBytes, (what) =>
      this.#damage(`${where}: ${what}`),
    );
  }

  /**
   * Checks the header of a run's first page, at `offset` in `buffer`: LMDB frees the run by the page
   * number and page count written there. Fully determined by the leaf node (its page number and page
   * count, and the overflow flag), so checking it is enough; the checksum need not cover it.
   */
  #checkRunHead(buffer: Buffer, offset: number, run: OverflowRun): void {
    const storedPgno = buffer.readUInt32LE(offset) + buffer.readUInt32LE(offset + 4) * 0x100000000;
    const flags = buffer.readUInt16LE(offset + 18) & PAGE_TYPE_FLAGS;
    const count = buffer.readUInt32LE(offset + 20);
    if (storedPgno !== run.first || flags !== P_OVERFLOW || count !== run.count) {
      throw this.#damage(
        `the overflow run at page ${run.first} (${run.count} pages, from node ${run.node} of page ${run.leafPgno}) has a header for page ${storedPgno}, flags 0x${flags.toString(16)}, ${count} pages`,
      );
    }
  }

  /** Adds every page of a free-page tree run to the checksum; its first `pagesRead` pages are in `buffer`. */
  async #hashWholeRun(run: OverflowRun, buffer: Buffer, pagesRead: number): Promise<void> {
    const pagesMax = buffer.length / this.#pageBytes;
    for (
      let done = 0, pages = pagesRead;
      done < run.count;
      done += pages, pages = Math.min(pagesMax, run.count - done)
    ) {
      if (
        done > 0 &&
        (await readFully(
          this.#file,
          buffer,
          pages * this.#pageBytes,
          (run.first + done) * this.#pageBytes,
        )) <
          pages * this.#pageBytes
      ) {
        throw this.#damage(`the overflow run at page ${run.first} is cut short`);
      }
      for (let p = 0; p < pages; p++)
        this.#checksum =
          (this.#checksum + xxh32(buffer, p * this.#pageBytes, (p + 1) * this.#pageBytes)) >>> 0;
    }
  }
}

/**
 * LMDB keeps a page's nodes packed from `upper` to the page end, each padded to an even size, and
 * moves them by those sizes when it adds or removes one: a node whose size fields lie would make its
 * next write to the page move the wrong bytes (heap corruption in the writer). So the nodes must
 * tile the node area exactly.
 */
function checkNodesPacked(
  extents: number[],
  areaStart: number,
  pageBytes: number,
  damage: (what: string) => OffsetStoreError,
): void {
  extents.sort((a, b) => a - b);
  let expected = areaStart;
  for (const extent of extents) {
    const start = Math.floor(extent / 0x20000);
    if (start !== expected)
      throw damage(`a node at byte ${start} where the node area continues at byte ${expected}`);
    expected = extent % 0x20000;
  }
  if (expected !== pageBytes)
    throw damage(`its nodes end at byte ${expected}, not at the page end`);
}
