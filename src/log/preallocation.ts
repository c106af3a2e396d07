/**
 * Zeros written ahead of the data of a file that is fdatasynced after its writes (a log's active
 * segment, a commit-journal file): a later fdatasync then overwrites blocks already allocated
 * instead of growing the file, which would also commit the file system's journal (about twice the
 * cost). Shared by log.ts and commit-journal.ts.
 */
import type { FileHandle } from '../io/index.js';

/** Least zeros written ahead at once. */
export const PREALLOCATE_BYTES_MIN = 64 * 1024;
/** Most zeros written ahead at once (and the length of the shared zero buffer). */
export const PREALLOCATE_BYTES_MAX = 1024 * 1024;

let zeros: Buffer | undefined;

/** Read-only zeros, at most PREALLOCATE_BYTES_MAX of them (one shared buffer). */
export function zeroBytes(length: number): Buffer {
  zeros ??= Buffer.alloc(PREALLOCATE_BYTES_MAX);
  return zeros.subarray(0, length);
}

/** Zeros to write after data that ends at `endBytes`: a quarter of the file so far, within the bounds. */
export function preallocationWanted(endBytes: number): number {
  return Math.min(PREALLOCATE_BYTES_MAX, Math.max(PREALLOCATE_BYTES_MIN, Math.floor(endBytes / 4)));
}

/**
 * Writes `data` at `position`, then `zeroCount` zeros, in one write. When the disk has room for the
 * data perhaps but not for the zeros (ENOSPC), whatever reached past `fileBytes` (the file's size
 * before) is cut off and the data is written alone: it rewrites every byte the failed write may
 * have changed before the old end. Returns the zeros written (0 after ENOSPC: the caller stops
 * preallocating that file, so that a nearly full disk costs speed, not availability).
 */
export async function writeWithZerosAhead(
  handle: FileHandle,
  data: readonly Buffer[],
  position: number,
  zeroCount: number,
  fileBytes: number,
): Promise<number> {
  try {
    await handle.writev(zeroCount > 0 ? [...data, zeroBytes(zeroCount)] : data, position);
    return zeroCount;
  } catch (error) {
    if (zeroCount === 0 || (error as NodeJS.ErrnoException | null)?.code !== 'ENOSPC') throw error;
    await handle.truncate(Math.max(position, fileBytes));
    await handle.writev(data, position);
    return 0;
  }
}
