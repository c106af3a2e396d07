/**
 * Online backup of an open store (`OffsetStore.backup`): a new store directory that holds every
 * offset and group snapshot the store had acknowledged when the backup began, and opens like any
 * store. Commits go on meanwhile; they are not in the backup.
 *
 * What is copied, and why it is consistent:
 * - The cut: every offsets-bucket's segment list, with the acknowledged bytes of its active segment
 *   and its log end, is taken in one synchronous step, so the backup is the state of the whole store
 *   at one instant (each bucket's log a prefix of its log then).
 * - Segments: bytes [0, acknowledged size) of each. Sealed segments change only by compaction, and
 *   the active one only grows past what was acknowledged (a failed write cuts back to where its run
 *   started, past the cut), so a copy made later reads what the cut saw. The copies come from the
 *   files, where every acknowledged batch is, whether or not the log has fdatasynced it itself: the
 *   commit journal is not needed and not copied.
 * - Compaction is paused for the whole backup (`Compactor.pause`: the runs in flight finish, no
 *   run starts until the backup is done, the schedule keeps counting), so no segment of the cut is
 *   rewritten or deleted, and the checkpoint environment (`checkpoint/data.mdb` and its seal) and
 *   the strategy's `compaction-state.json` do not change while they are copied.
 * - The files the layers above keep beside the store (the Kafka server's topic catalog, users, ACLs)
 *   are copied as they are when the copy reaches them: each is written whole by an atomic rename.
 *   They are created with mode 0600 (the users file holds SCRAM verifiers).
 * - store.json: the store's own, with each bucket's log end set to the cut's and marked exact.
 *
 * Crash safety: the backup is built in `<to>.partial` (with a BACKUP-IN-PROGRESS marker file, and a
 * lock on the folder that refuses a second backup to the same path), every file fdatasynced and every
 * folder synced, store.json written last, then the marker is removed and the folder renamed to `<to>`
 * (its parents synced; if that fails, the rename is taken back). So `<to>` exists only complete; a backup
 * interrupted by a crash leaves `<to>.partial`, marked, which the next backup to `<to>` removes. A
 * failed or interrupted backup (the store closing, a read or write error, damage found) removes
 * `<to>.partial` and changes nothing in the store.
 *
 * Verification: each segment copy is read back and scanned (lengths, checksums, log offsets in
 * order, consecutive in the active segment, ending at the cut's log end), so damage at rest in the
 * source is reported (CORRUPT_MESSAGE, naming the source file) instead of copied into a backup.
 */
import * as path from 'node:path';
import { OffsetStoreError, isOffsetStoreError, messageWithoutCode } from './errors/index.js';
import { checkBatchFormat, DecodeError } from './codec/index.js';
import { STATE_FILE } from './compaction/index.js';
import { isNameTaken, realPathOf, type FileSystem, type HeldDirectoryLock } from './io/index.js';
import { CHECKPOINT_DIR, inspectCheckpointFile } from './kv/index.js';
import {
  BUCKETS_DIR,
  JOURNAL_DIR,
  MANIFEST_FILE,
  bucketDirPath,
  encodeManifest,
  scanSegment,
  syncAncestors,
  writeDurably,
  type Log,
  type SegmentInfo,
  type StoreManifest,
} from './log/index.js';

/** Marker file of a backup being built (see the module comment). */
export const BACKUP_MARKER = 'BACKUP-IN-PROGRESS';
/** Suffix of the folder a backup is built in. */
export const PARTIAL_SUFFIX = '.partial';
/** What the store itself keeps at the top of its directory (the layers above keep other files there). */
export const STORE_OWN_NAMES: ReadonlySet<string> = new Set([
  MANIFEST_FILE,
  'LOCK',
  BUCKETS_DIR,
  JOURNAL_DIR,
]);
/** Files at the top of a store directory that a backup does not copy: the store's own, and the demo's marker. */
const NOT_COPIED = new Set([...STORE_OWN_NAMES, 'DEMO']);
/** Files of a bucket's checkpoint folder that a backup does not copy (LMDB's lock file, set-aside damage). */
const CHECKPOINT_NOT_COPIED = /^lock\.mdb$|\.damaged$|\.tmp$/;
const COPY_CHUNK_BYTES = 1 << 20;
/** Errors of a target path that cannot be one: INVALID_REQUEST. */
const PATH_ERRORS = new Set([
  'ENOTDIR',
  'ENAMETOOLONG',
  'ELOOP',
  'ENOENT',
  'EACCES',
  'EPERM',
  'EROFS',
  'EEXIST',
  'EISDIR',
]);

/** What `OffsetStore.backup` reports. */
export interface BackupReport {
  /** The backup's directory (absolute). */
  dir: string;
  /** Offsets-buckets copied. */
  buckets: number;
  /** Segment files copied. */
  segments: number;
  /** Bytes written: segments, checkpoints, strategy state and the files beside the store. */
  bytes: number;
  /** Each bucket's log end in the backup (the cut). */
  logEnds: number[];
  durationMs: number;
}

/** One offsets-bucket of the store being backed up. */
export interface BackupBucket {
  readonly index: number;
  readonly dir: string;
  readonly log: Log;
}

/** What the backup needs of the store (the store pauses compaction around it). */
export interface BackupSource {
  readonly fs: FileSystem;
  readonly dir: string;
  readonly batchBytesMax: number;
  /** The store's manifest as of now. */
  manifest(): Readonly<StoreManifest>;
  readonly buckets: readonly BackupBucket[];
  /** Throws STORE_CLOSED once the store is closing: the backup stops between two files. */
  checkOpen(): void;
}

/** A bucket as the cut saw it. */
interface BucketCut {
  readonly bucket: BackupBucket;
  readonly segments: SegmentInfo[];
  readonly logEnd: number;
}

/** Checks `to` and resolves it; INVALID_REQUEST for a target that cannot be one. */
export function resolveBackupTarget(storeDir: string, to: unknown): string {
  // A lone surrogate has no UTF-8 encoding: the directory made would be another name (U+FFFD).
  if (typeof to !== 'string' || to.length === 0 || to.includes('\0') || !to.isWellFormed())
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `a backup needs a directory path (a non-empty string), not ${describe(to)}`,
    );
  const target = path.resolve(to);
  const source = path.resolve(storeDir);
  if (holds(source, target) || holds(target, source))
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `cannot back up the store in ${source} to ${target}: one directory would hold the other`,
    );
  const partial = target + PARTIAL_SUFFIX;
  if (holds(source, partial) || holds(partial, source))
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `cannot back up the store in ${source} to ${target}: the backup is built in ${partial}, and one directory would hold the other`,
    );
  if (path.dirname(target) === target)
    throw new OffsetStoreError('INVALID_REQUEST', `cannot back up to the root directory ${target}`);
  return target;
}

/** Writes the backup (see the module comment); the caller has paused compaction. */
export async function writeBackup(source: BackupSource, target: string): Promise<BackupReport> {
  const startedMs = performance.now();
  const { fs } = source;
  const partial = target + PARTIAL_SUFFIX;
  let lock: HeldDirectoryLock | undefined;
  // The parent folders the backup creates for its path (mkdir -p), removed again if it fails.
  let created: string[] = [];
  try {
    checkRealPaths(source.dir, target);
    checkRealPaths(source.dir, partial, `the backup is built in ${partial}, and`);
    // A symbolic link is a name taken, even one that leads nowhere (a stat follows it: absent).
    if (isNameTaken(target) || (await exists(fs, target)))
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `cannot back up to ${target}: it exists (a backup never replaces anything; choose a new path)`,
      );
    const existed = await exists(fs, partial);
    created = await missingParents(fs, partial);
    await fs.mkdir(partial);
    // Held until the backup is done: another backup to the same path, from this process or another,
    // is refused instead of sharing (or removing) this one's folder.
    const held = await fs.holdLock?.(partial);
    if (held === 'held-elsewhere')
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `cannot back up to ${target}: another backup to it is running (it holds ${partial})`,
      );
    if (held !== undefined && held !== 'unsupported') lock = held;
    if (existed) await removeStalePartial(fs, partial);
  } catch (error) {
    await lock?.release().catch(() => {});
    await removeCreatedParents(fs, created);
    if (isOffsetStoreError(error)) throw error;
    const code = (error as NodeJS.ErrnoException | null)?.code ?? '';
    // What the file system says of a path that cannot be one (under a file, too long, a loop, not
    // ours to write); any other failure (EIO, ENOSPC) is the storage's.
    if (!PATH_ERRORS.has(code))
      throw storageError(`cannot back up to ${target}: preparing ${partial}`, error);
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `cannot back up to ${target}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  let renamed = false;
  try {
    await writeDurably(fs, path.join(partial, BACKUP_MARKER), Buffer.alloc(0));
    const manifest = structuredClone(source.manifest()) as StoreManifest;
    for (const bucket of source.buckets) await bucket.log.completeSwap();
    source.checkOpen();
    const cuts = cut(source);
    await fs.mkdir(path.join(partial, BUCKETS_DIR));
    const report: BackupReport = {
      dir: target,
      buckets: cuts.length,
      segments: 0,
      bytes: 0,
      logEnds: cuts.map((c) => c.logEnd),
      durationMs: 0,
    };
    for (const c of cuts) {
      const from = c.bucket.dir;
      const to = bucketDirPath(partial, manifest.bucketCount, c.bucket.index);
      await fs.mkdir(to);
      report.bytes += await copyCheckpoints(source, from, to);
      report.bytes += await copyIfPresent(source, from, to, STATE_FILE);
      report.bytes += await copySegments(source, c, to);
      report.segments += c.segments.length;
      await fs.syncDir(to);
      const record = manifest.buckets[c.bucket.index]!;
      record.logEnd = c.logEnd;
      record.endExact = true;
    }
    await fs.syncDir(path.join(partial, BUCKETS_DIR));
    for (const name of (await fs.readdir(source.dir)).sort()) {
      if (NOT_COPIED.has(name) || name.endsWith('.tmp') || name.startsWith('.')) continue;
      report.bytes += await copyIfPresent(source, source.dir, partial, name, 0o600);
    }
    source.checkOpen();
    await writeDurably(fs, path.join(partial, MANIFEST_FILE), encodeManifest(manifest));
    await fs.unlink(path.join(partial, BACKUP_MARKER));
    await fs.syncDir(partial);
    await fs.rename(partial, target);
    renamed = true;
    await syncAncestors(fs, target);
    report.durationMs = performance.now() - startedMs;
    return report;
  } catch (error) {
    // Not durable once renamed (a parent's fsync failed): taken back, so that a failed backup never
    // leaves a `to` that a power loss could still take away.
    if (renamed) await fs.rename(target, partial).catch(() => {});
    await fs.removeTree(partial).catch(() => {});
    await removeCreatedParents(fs, created);
    if (isOffsetStoreError(error)) throw error;
    throw storageError(`backing up the store in ${source.dir} to ${target} failed`, error);
  } finally {
    await lock?.release().catch(() => {});
  }
}

/**
 * Refuses a target that holds the store, or that the store holds, once symbolic links are resolved
 * (a path through a link into the store would write the backup into it).
 */
function checkRealPaths(storeDir: string, target: string, why = ''): void {
  const [store, to] = [realPathOf(storeDir), realPathOf(target)];
  if (holds(store, to) || holds(to, store))
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `cannot back up the store in ${storeDir} to ${target}: ${why}${why ? ' ' : ''}once links are resolved (${store}, ${to}), one directory would hold the other`,
    );
}

/** Whether directory `outer` is `inner` or holds it. */
export function holds(outer: string, inner: string): boolean {
  return inner === outer || inner.startsWith(outer.endsWith(path.sep) ? outer : outer + path.sep);
}

/** Every bucket's segments and log end, in one synchronous step. */
function cut(source: BackupSource): BucketCut[] {
  return source.buckets.map((bucket) => {
    const { log } = bucket;
    const failure = log.failure;
    if (failure !== undefined)
      throw new OffsetStoreError(
        'LOG_STORAGE_ERROR',
        `cannot back up offsets-bucket ${bucket.index}: its log (${log.dir}) has stopped (${messageWithoutCode(failure)}); reopen the store first`,
        { cause: failure },
      );
    return { bucket, segments: log.segments(), logEnd: log.acknowledgedEnd };
  });
}

/** The ancestors of `dir` that do not exist (what a mkdir -p of it creates), the outermost first. */
async function missingParents(fs: FileSystem, dir: string): Promise<string[]> {
  const missing: string[] = [];
  for (let d = path.dirname(dir); d !== path.dirname(d); d = path.dirname(d)) {
    if (await exists(fs, d)) break;
    missing.unshift(d);
  }
  return missing;
}

/**
 * After a failed backup: removes the parent folders it created for its path, the innermost first,
 * each only while empty (something put there meanwhile is not the backup's to remove). Best effort.
 */
async function removeCreatedParents(fs: FileSystem, created: readonly string[]): Promise<void> {
  for (const dir of [...created].reverse()) {
    try {
      if ((await fs.readdir(dir)).length > 0) return;
      await fs.removeTree(dir);
    } catch {
      return;
    }
  }
}

/** A partial backup a crash left at `partial` is removed; anything else there is refused. */
async function removeStalePartial(fs: FileSystem, partial: string): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(partial);
  } catch (error) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `cannot back up: ${partial} exists and is not a folder a backup left (${(error as Error).message})`,
    );
  }
  // Empty: a crash came between its creation and the marker's.
  if (names.length > 0 && !names.includes(BACKUP_MARKER))
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `cannot back up: ${partial} exists without a ${BACKUP_MARKER} marker, so it is not a backup interrupted while being built (if it holds a store.json, it may be a finished backup whose final rename was interrupted: rename it yourself); move it away first`,
    );
  await fs.removeTree(partial);
  await fs.mkdir(partial);
}

/** Copies the segments of a cut, each read back and scanned; returns the bytes copied. */
async function copySegments(source: BackupSource, c: BucketCut, to: string): Promise<number> {
  let bytes = 0;
  let previous = -1;
  for (let i = 0; i < c.segments.length; i++) {
    const segment = c.segments[i]!;
    const active = i === c.segments.length - 1;
    source.checkOpen();
    const copy = path.join(to, path.basename(segment.path));
    bytes += await copyFile(source.fs, segment.path, copy, segment.sizeBytes);
    // A batch of a format this version cannot read (checkBatchFormat) is damage too.
    let unreadable: string | undefined;
    const scan = await scanSegment(
      source.fs,
      copy,
      {
        batchBytesMax: source.batchBytesMax,
        previousLogOffset: previous,
        baseOffset: segment.baseOffset,
        consecutive: active,
      },
      (buf, position, logOffset) => {
        if (unreadable !== undefined) return;
        try {
          checkBatchFormat(buf, position);
        } catch (error) {
          if (!(error instanceof DecodeError)) throw error;
          unreadable = `batch ${logOffset}: ${error.message}`;
        }
      },
    );
    const problem =
      unreadable !== undefined
        ? unreadable
        : scan.damage !== undefined
          ? `${scan.damage.reason} at byte ${scan.damage.position}`
          : scan.validBytes !== segment.sizeBytes
            ? `${scan.validBytes} bytes of valid batches where the log holds ${segment.sizeBytes}`
            : active &&
                (scan.lastLogOffset < 0 ? segment.baseOffset : scan.lastLogOffset + 1) !== c.logEnd
              ? `it ends at log offset ${scan.lastLogOffset + 1}, not at the log end ${c.logEnd}`
              : undefined;
    if (problem !== undefined) {
      // Bytes the page cache dropped after a failed writeback read as damage too: the log's
      // fdatasync tells them apart (it reports that writeback's error), as for a compaction.
      const behind = await c.bucket.log.storageFailureBehindDamage();
      if (behind !== undefined) {
        throw new OffsetStoreError(
          'LOG_STORAGE_ERROR',
          `not backed up: reading ${segment.path} (offsets-bucket ${c.bucket.index}) found damage (${problem})${behind.why}`,
          { cause: behind.failure },
        );
      }
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `not backed up: ${segment.path} (offsets-bucket ${c.bucket.index}) is damaged: ${problem}; \`offset-store log verify\` reports the store's damage`,
      );
    }
    if (scan.lastLogOffset >= 0) previous = scan.lastLogOffset;
  }
  return bytes;
}

/** Copies the bucket's checkpoint environment, if it has one. */
async function copyCheckpoints(source: BackupSource, from: string, to: string): Promise<number> {
  const dir = path.join(from, CHECKPOINT_DIR);
  if (!(await exists(source.fs, dir))) return 0;
  const copyDir = path.join(to, CHECKPOINT_DIR);
  await source.fs.mkdir(copyDir);
  let bytes = 0;
  for (const name of (await source.fs.readdir(dir)).sort()) {
    if (CHECKPOINT_NOT_COPIED.test(name)) continue;
    bytes += await copyIfPresent(source, dir, copyDir, name);
  }
  await source.fs.syncDir(copyDir);
  // Checked as an open checks it: against its seal (what it held when last written).
  try {
    await inspectCheckpointFile(source.fs, copyDir);
  } catch (error) {
    if (!isOffsetStoreError(error, 'CORRUPT_MESSAGE')) throw error;
    throw new OffsetStoreError(
      'CORRUPT_MESSAGE',
      `not backed up: the checkpoint environment ${dir} is damaged (as copied: ${error.message}); \`offset-store log verify\` reports the store's damage`,
      { cause: error },
    );
  }
  return bytes;
}

/** Copies file `name` of `from` into `to` when it exists (and is a file); returns the bytes copied. */
async function copyIfPresent(
  source: BackupSource,
  from: string,
  to: string,
  name: string,
  mode?: number,
): Promise<number> {
  source.checkOpen();
  try {
    return await copyFile(source.fs, path.join(from, name), path.join(to, name), undefined, mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | null)?.code;
    if (code === 'ENOENT') return 0;
    // A folder (refused by the open, or by the first read), or a link that loops: nothing of it is
    // copied, as of a link that leads nowhere.
    if (code === 'EFTYPE' || code === 'EISDIR' || code === 'ELOOP') return 0;
    throw error;
  }
}

/**
 * Copies `from` to a new file `to` (fdatasynced): `bytes` of it, which must be there, or the whole
 * file. Returns the bytes copied. The first read comes before `to` is created, so a folder (which
 * opens, on some systems, and then refuses the read) creates nothing.
 */
async function copyFile(
  fs: FileSystem,
  from: string,
  to: string,
  bytes: number | undefined,
  mode?: number,
): Promise<number> {
  try {
    return await copyOpened(fs, from, to, bytes, mode);
  } catch (error) {
    if (isOffsetStoreError(error)) throw error;
    // Unnamed errors (a full disk's ENOSPC names no file) are told with both paths.
    const code = (error as NodeJS.ErrnoException | null)?.code;
    if (code === 'ENOENT' || code === 'EISDIR' || code === 'EFTYPE' || code === 'ELOOP')
      throw error;
    throw storageError(`copying ${from} to ${to}`, error);
  }
}

async function copyOpened(
  fs: FileSystem,
  from: string,
  to: string,
  bytes: number | undefined,
  mode: number | undefined,
): Promise<number> {
  const input = await fs.open(from, 'r');
  try {
    const buf = Buffer.allocUnsafe(
      Math.max(1, Math.min(COPY_CHUNK_BYTES, bytes ?? COPY_CHUNK_BYTES)),
    );
    const next = async (position: number): Promise<number> => {
      const want = bytes === undefined ? buf.length : Math.min(buf.length, bytes - position);
      if (want === 0) return 0;
      const read = await input.read(buf, 0, want, position);
      if (read === 0 && bytes !== undefined)
        throw new OffsetStoreError(
          'CORRUPT_MESSAGE',
          `not backed up: ${from} ends at byte ${position}, before the ${bytes} bytes its log holds`,
        );
      return read;
    };
    let read = await next(0);
    const output = await fs.open(to, 'wx', mode);
    try {
      let position = 0;
      while (read > 0) {
        await output.writev([buf.subarray(0, read)], position);
        position += read;
        read = await next(position);
      }
      await output.datasync();
      return position;
    } finally {
      await output.close();
    }
  } finally {
    await input.close();
  }
}

/** Whether something (a file or a folder) is at `p`. */
async function exists(fs: FileSystem, p: string): Promise<boolean> {
  try {
    return (await fs.sizeBytes(p)) !== null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException | null)?.code === 'EISDIR') return true;
    throw error;
  }
}

function storageError(what: string, error: unknown): OffsetStoreError {
  return new OffsetStoreError(
    'LOG_STORAGE_ERROR',
    `${what}: ${(error as Error | undefined)?.message ?? String(error)}`,
    { cause: error },
  );
}

function describe(value: unknown): string {
  if (typeof value === 'string')
    return value.length === 0
      ? 'an empty string'
      : value.includes('\0')
        ? 'a path with NUL'
        : 'a path with a lone surrogate (it has no UTF-8 encoding)';
  return value === null ? 'null' : typeof value;
}
