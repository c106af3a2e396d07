/**
 * The files the server's security keeps in the store directory (`kafka-users.json`,
 * `kafka-acls.json`): one JSON document each, written whole and atomically the way the topic
 * catalog writes `kafka-topics.json` (the log's `writeDurably`: temp file, fdatasync, rename,
 * directory fsync, through the store's file-system port), checksummed, and never trusted without
 * the checksum. A crash at any step leaves either the old file or the new one; a damaged or
 * hand-edited file is CORRUPT_MESSAGE naming it, not a file read with entries missing (a missing
 * DENY would let someone in).
 *
 * Writers (`users add`, `acls add` of two operators at once, or of a script) change a file under
 * the directory's security-files lock (`underSecurityFilesLock`: kernel-held, so a crashed writer
 * never leaves it stale), so neither reads the file before the other's change and writes it back
 * without it. Files are created readable by their owner only (0600): the users file holds salted
 * SCRAM keys, from which a local reader could run a dictionary attack, or log in with the StoredKey
 * and one exchange it overheard.
 *
 * | field          | meaning                                                          |
 * |----------------|------------------------------------------------------------------|
 * | formatVersion  | 1                                                                |
 * | <entries key>  | the entries, one a line                                          |
 * | checksum       | xxh32 of the UTF-8 JSON of `{ formatVersion, <entries key> }`     |
 */
import { loadChecksum, xxh32 } from '../../codec/index.js';
import { OffsetStoreError } from '../../errors/index.js';
import { holdDirectoryLock, type FileSystem } from '../../io/index.js';
import { writeDurably } from '../../log/index.js';

/** The format version of both security files. */
export const SECURITY_FILE_FORMAT_VERSION = 1;

function canonical(key: string, entries: readonly unknown[]): Buffer {
  return Buffer.from(
    JSON.stringify({ formatVersion: SECURITY_FILE_FORMAT_VERSION, [key]: entries }),
    'utf8',
  );
}

/** The bytes of a security file holding `entries` under `key`. */
export function encodeSecurityFile(key: string, entries: readonly unknown[]): Buffer {
  const lines = entries.map(
    (e, i) => `    ${JSON.stringify(e)}${i < entries.length - 1 ? ',' : ''}`,
  );
  const text = [
    '{',
    `  "formatVersion": ${SECURITY_FILE_FORMAT_VERSION},`,
    `  ${JSON.stringify(key)}: [`,
    ...lines,
    '  ],',
    `  "checksum": ${xxh32(canonical(key, entries))}`,
    '}',
    '',
  ];
  return Buffer.from(text.join('\n'), 'utf8');
}

/** CORRUPT_MESSAGE naming the file. */
export function corruptSecurityFile(
  filePath: string,
  reason: string,
  cause?: unknown,
): OffsetStoreError {
  return new OffsetStoreError(
    'CORRUPT_MESSAGE',
    `${filePath}: ${reason}`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * The raw entries of a security file, checksum checked; an empty list when the file does not exist.
 * CORRUPT_MESSAGE for a damaged file, INVALID_CONFIG for another format version.
 */
export async function readSecurityFile(
  fs: FileSystem,
  filePath: string,
  key: string,
): Promise<unknown[]> {
  await loadChecksum();
  let bytes: Buffer | null;
  try {
    bytes = await fs.readFile(filePath);
  } catch (error) {
    throw new OffsetStoreError(
      'LOG_STORAGE_ERROR',
      `reading ${filePath} failed: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (bytes === null) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw corruptSecurityFile(filePath, 'not valid JSON', error);
  }
  const file = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<
    string,
    unknown
  >;
  if (typeof file.formatVersion !== 'number')
    throw corruptSecurityFile(filePath, 'no formatVersion');
  if (file.formatVersion !== SECURITY_FILE_FORMAT_VERSION) {
    throw new OffsetStoreError(
      'INVALID_CONFIG',
      `${filePath} has format version ${file.formatVersion}; this build reads version ${SECURITY_FILE_FORMAT_VERSION}`,
    );
  }
  const entries = file[key];
  if (!Array.isArray(entries)) throw corruptSecurityFile(filePath, `no ${key} array`);
  if (file.checksum !== xxh32(canonical(key, entries)))
    throw corruptSecurityFile(
      filePath,
      'checksum mismatch: the file was damaged or edited by hand',
    );
  return entries;
}

/** Permissions of a security file: its owner's only. */
const SECURITY_FILE_MODE = 0o600;

/** Writes a security file durably (see the header). */
export async function writeSecurityFile(
  fs: FileSystem,
  filePath: string,
  key: string,
  entries: readonly unknown[],
): Promise<void> {
  await loadChecksum();
  try {
    await writeDurably(fs, filePath, encodeSecurityFile(key, entries), SECURITY_FILE_MODE);
  } catch (error) {
    throw new OffsetStoreError(
      'LOG_STORAGE_ERROR',
      `writing ${filePath} failed: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** How long a writer waits for another's change of the security files before giving up. */
const LOCK_WAIT_MS = 10_000;
const LOCK_RETRY_MS = 20;

/**
 * Runs `change` (a read, change and write of a security file of the store in `dir`) under the
 * directory's security-files lock, waiting up to 10 s for another writer; STORE_LOCKED past that.
 * Without a kernel-held lock (another platform, a file system of its own, which has no `holdLock`)
 * it runs unlocked.
 */
export async function underSecurityFilesLock<T>(
  fs: FileSystem,
  dir: string,
  change: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    // Only on a file system with the machine's own locks (its paths are real ones); a lock of its
    // own, independent of the store's (a server holds that one while an operator adds a user).
    const lock =
      fs.holdLock === undefined ? 'unsupported' : await holdDirectoryLock(dir, 'security-files');
    if (lock === 'held-elsewhere') {
      if (Date.now() >= deadline)
        throw new OffsetStoreError(
          'STORE_LOCKED',
          `${dir}: another process has been changing its users or ACLs for ${LOCK_WAIT_MS / 1000} s; try again`,
        );
      await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
      continue;
    }
    try {
      return await change();
    } finally {
      if (lock !== 'unsupported') await lock.release();
    }
  }
}
