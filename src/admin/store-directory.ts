/**
 * Read-only access to a store directory for the offline tools (`dumpLog`, `verifyLog`) and for the
 * checks made before a store is opened: the manifest, the bucket folders, the segment files and the
 * lock holder. Nothing here writes, creates or renames a file — opening a store truncates a torn
 * tail and completes interrupted compaction swaps, which is exactly what a verifier must not do.
 *
 * The folder naming (`buckets/<nnn>`, nnn zero-padded to at least 3 digits) and the manifest format
 * are those of docs/on-disk-format.md.
 */
import * as path from 'node:path';
import { OffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import {
  CLEANED_SUFFIX,
  MANIFEST_FILE,
  bucketDirName,
  parseSegmentFileName,
  readManifest,
  type StoreManifest,
} from '../log/index.js';
import { notADirectory, openFailure } from '../open-failure.js';

export { MANIFEST_FILE, bucketDirName, liveLockHolder } from '../log/index.js';

/** What the manifest says plus where the buckets live. */
export interface StoreLayout {
  /** The store directory, absolute. */
  dir: string;
  /** The checked content of `store.json`. */
  manifest: StoreManifest;
  /** Folder of each offsets-bucket, index = bucket number. */
  bucketDirs: string[];
}

/** One segment file as found on disk. */
export interface SegmentFile {
  /** Its file name (20-digit base offset + `.log`). */
  name: string;
  /** Its path. */
  path: string;
  /** Log offset of its first batch, from its name. */
  baseOffset: number;
  /** Size of the file in bytes. */
  sizeBytes: number;
}

/**
 * Reads and checks `<dir>/store.json`. A directory without one is not a store: INVALID_CONFIG (the
 * tools never create a store by accident, unlike `OffsetStore.open`); so is a `dir` that is not a
 * directory. Other read failures are LOG_STORAGE_ERROR naming the file.
 */
export async function readStoreLayout(fs: FileSystem, dir: string): Promise<StoreLayout> {
  const absoluteDir = path.resolve(dir);
  const manifest = await readManifest(fs, absoluteDir).catch((error: unknown) => {
    throw (
      notADirectory(error, absoluteDir) ??
      openFailure(error, `cannot read ${path.join(absoluteDir, MANIFEST_FILE)}`)
    );
  });
  if (manifest === null)
    throw new OffsetStoreError(
      'INVALID_CONFIG',
      `no offset store in ${absoluteDir}: ${MANIFEST_FILE} not found`,
    );
  const bucketDirs = Array.from({ length: manifest.bucketCount }, (_, i) =>
    path.join(absoluteDir, 'buckets', bucketDirName(manifest.bucketCount, i)),
  );
  return { dir: absoluteDir, manifest, bucketDirs };
}

/**
 * True when `error` is a file that was not found (directly, or as the cause of a store error): what
 * a tool reading a store that another process compacts meets when a file it listed is swapped away.
 */
export function vanished(error: unknown): boolean {
  const code = (e: unknown) => (e as { code?: unknown } | null)?.code;
  return (
    code(error) === 'ENOENT' || code((error as { cause?: unknown } | null)?.cause) === 'ENOENT'
  );
}

/** The segment files of one bucket folder in log order (empty when the folder does not exist). */
export async function listSegmentFiles(fs: FileSystem, bucketDir: string): Promise<SegmentFile[]> {
  const segments: SegmentFile[] = [];
  for (const name of await fs.readdir(bucketDir)) {
    const baseOffset = parseSegmentFileName(name);
    if (baseOffset === undefined) continue;
    const filePath = path.join(bucketDir, name);
    segments.push({
      name,
      path: filePath,
      baseOffset,
      sizeBytes: (await fs.sizeBytes(filePath)) ?? 0,
    });
  }
  return segments.sort((a, b) => a.baseOffset - b.baseOffset);
}

/**
 * Files of a bucket folder that an interrupted compaction left behind (`.cleaned` outputs, the
 * `compaction.swap` intent, `.tmp` files). The next open completes or discards them.
 */
export async function listSwapLeftovers(fs: FileSystem, bucketDir: string): Promise<string[]> {
  return (await fs.readdir(bucketDir))
    .filter(
      (name) =>
        name.endsWith(CLEANED_SUFFIX) || name.endsWith('.tmp') || name === 'compaction.swap',
    )
    .sort();
}
