/**
 * Test helpers that find pages in an LMDB data file's bytes (4 KiB pages; layout in
 * src/kv/lmdb-meta.ts and src/kv/lmdb-tree-check.ts), to damage a chosen one.
 */
export const PAGE_BYTES = 4096;

/** The meta page LMDB opens: the one with the larger txnid (bytes 152-159). */
export function newestMetaPage(bytes: Buffer): number {
  return bytes.readBigUInt64LE(PAGE_BYTES + 152) > bytes.readBigUInt64LE(152) ? 1 : 0;
}

/** The main tree's root page, from the newest meta (its tree record is at bytes 96-143). */
export function mainRootPage(bytes: Buffer): number {
  return Number(bytes.readBigUInt64LE(newestMetaPage(bytes) * PAGE_BYTES + 96 + 40));
}

/** Node `i` of a branch or leaf page: where it starts, its flags, key and data sizes. */
export function nodeOf(
  bytes: Buffer,
  page: number,
  i: number,
): { start: number; flags: number; keyBytes: number; dataBytes: number; keyEnd: number } {
  const base = page * PAGE_BYTES;
  const start = base + 24 + bytes.readUInt16LE(base + 24 + 2 * i);
  const keyBytes = bytes.readUInt16LE(start + 6);
  return {
    start,
    flags: bytes.readUInt16LE(start + 4),
    keyBytes,
    dataBytes: bytes.readUInt16LE(start) + bytes.readUInt16LE(start + 2) * 0x10000,
    keyEnd: start + 8 + keyBytes,
  };
}

/** The main tree's leftmost leaf page (following each branch's first child). */
export function leftmostLeafPage(bytes: Buffer): number {
  let page = mainRootPage(bytes);
  while ((bytes.readUInt16LE(page * PAGE_BYTES + 18) & 0x01) !== 0) {
    const { start } = nodeOf(bytes, page, 0);
    page =
      bytes.readUInt16LE(start) +
      bytes.readUInt16LE(start + 2) * 0x10000 +
      bytes.readUInt16LE(start + 4) * 0x100000000;
  }
  return page;
}

/** The first page of the first overflow run referenced from the main tree's leftmost leaf. */
export function firstOverflowRun(bytes: Buffer): number {
  const leaf = leftmostLeafPage(bytes);
  for (let i = 0; i < bytes.readUInt16LE(leaf * PAGE_BYTES + 20) >> 1; i++) {
    const node = nodeOf(bytes, leaf, i);
    if ((node.flags & 0x01) !== 0) return Number(bytes.readBigUInt64LE(node.keyEnd));
  }
  throw new RangeError('no overflow run in the leftmost leaf');
}
