/**
 * What opening a store reports when the file system refuses it. A raw Node error (`EEXIST`,
 * `EMFILE`, `EACCES`, ...) cannot be told from a bug by a caller, and the command line would print
 * it as an internal error with a stack; so `OffsetStore.open` and the tools that read a store
 * directory report an OffsetStoreError instead, whose code says what to do and whose message names
 * the path, with the Node error as its `cause`:
 * - INVALID_CONFIG when the store directory cannot be one (a file, or a path through a file): the
 *   caller named the wrong place;
 * - LOG_STORAGE_ERROR for any other I/O failure, with a hint when the process ran out of file
 *   descriptors (a store keeps one log file open per offsets-bucket) or the disk is full (an open
 *   writes; a read-only one does not).
 * OffsetStoreErrors (CORRUPT_MESSAGE, STORE_LOCKED, ...) and programmer errors pass unchanged.
 */
import { OffsetStoreError } from './errors/index.js';

/** The `code` of a Node system error (`'ENOENT'`, `'EMFILE'`, ...), or undefined for anything else. */
export function systemErrorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error &&
    !(error instanceof OffsetStoreError) &&
    typeof code === 'string' &&
    /^E[A-Z0-9]+$/.test(code)
    ? code
    : undefined;
}

/**
 * INVALID_CONFIG when `error`, from creating or reading the store directory `dir`, says that `dir`
 * cannot be a directory (EEXIST from creating it: a file is there; ENOTDIR: `dir` or a folder on
 * its path is a file); undefined for any other error.
 */
export function notADirectory(error: unknown, dir: string): OffsetStoreError | undefined {
  const code = systemErrorCode(error);
  if (code === 'EEXIST')
    return new OffsetStoreError('INVALID_CONFIG', `${dir} is not a directory`, { cause: error });
  if (code === 'ENOTDIR')
    return new OffsetStoreError(
      'INVALID_CONFIG',
      `${dir} is not a directory: it or a folder on its path is a file`,
      { cause: error },
    );
  return undefined;
}

/**
 * The error an open that failed with `error` reports: for a Node system error, LOG_STORAGE_ERROR
 * saying `what` failed (e.g. `offsets-bucket 3 of /srv/offsets failed to open`), with the Node
 * message (which names the file) and, for EMFILE, what to raise; anything else — an OffsetStoreError,
 * a TypeError or RangeError for a programmer mistake, an assertion — unchanged.
 */
export function openFailure(error: unknown, what: string, bucketCount?: number): unknown {
  const code = systemErrorCode(error);
  if (code === undefined) return error;
  const { message } = error as Error;
  const hint =
    code === 'EMFILE'
      ? `: the process may open too few files for ${bucketCount === undefined ? 'this store' : `${bucketCount} offsets-buckets`} (one log file each, and about four more each with a checkpointing compaction strategy): raise its limit (ulimit -n), or use a store with fewer offsets-buckets`
      : code === 'ENOSPC' || code === 'EDQUOT'
        ? `: the file system (or this user's quota) is full: free space (a store opened to read only, readOnly: true or the command line's --read-only, reads what it holds without writing)`
        : '';
  return new OffsetStoreError('LOG_STORAGE_ERROR', `${what}: ${message}${hint}`, { cause: error });
}
