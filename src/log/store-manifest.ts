/**
 * `store.json`, the manifest that fixes what cannot change after creation:
 * `{ formatVersion: 1, bucketCount, createdAtMs }`. Written once, atomically (temp file, fdatasync,
 * rename, directory fsync), before any bucket exists, so a directory with buckets always has one.
 */
import * as path from 'node:path';
import { OffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';

/** The current on-disk format version. */
export const FORMAT_VERSION = 1;

/** The manifest's content. */
export interface StoreManifest {
  formatVersion: number;
  bucketCount: number;
  createdAtMs: number;
}

/**
 * Reads the manifest of `dir`, or creates it with `bucketCount` (default when undefined) if the store
 * is new. A requested bucketCount that differs from the stored one is INVALID_CONFIG.
 */
export async function loadOrCreateManifest(fs: FileSystem, dir: string, requestedBucketCount: number | undefined, defaultBucketCount: number, nowMs: number): Promise<StoreManifest> {
  const manifestPath = path.join(dir, MANIFEST_FILE);
  const existing = await readManifest(fs, dir);
  if (existing === null) {
    if ((await fs.readdir(path.join(dir, 'buckets'))).length > 0) {
      throw new OffsetStoreError('CORRUPT_MESSAGE', `${manifestPath} is missing but ${dir}/buckets exists`);
    }
    const manifest: StoreManifest = { formatVersion: FORMAT_VERSION, bucketCount: requestedBucketCount ?? defaultBucketCount, createdAtMs: nowMs };
    await writeDurably(fs, manifestPath, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`));
    return manifest;
  }
  const manifest = existing;
  if (requestedBucketCount !== undefined && requestedBucketCount !== manifest.bucketCount) {
    throw new OffsetStoreError('INVALID_CONFIG', `bucketCount ${requestedBucketCount} contradicts the store in ${dir}, created with bucketCount ${manifest.bucketCount}`);
  }
  return manifest;
}

/** Name of the manifest file inside a store directory. */
export const MANIFEST_FILE = 'store.json';

/** Reads and checks the manifest of `dir` without creating anything; null when there is none. */
export async function readManifest(fs: FileSystem, dir: string): Promise<StoreManifest | null> {
  const manifestPath = path.join(dir, MANIFEST_FILE);
  const bytes = await fs.readFile(manifestPath);
  return bytes === null ? null : parseManifest(manifestPath, bytes);
}

/** Folder name of offsets-bucket `bucket` in a store of `bucketCount` buckets: zero-padded, at least 3 digits. */
export function bucketDirName(bucketCount: number, bucket: number): string {
  return String(bucket).padStart(Math.max(3, String(bucketCount - 1).length), '0');
}

function parseManifest(manifestPath: string, bytes: Buffer): StoreManifest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new OffsetStoreError('CORRUPT_MESSAGE', `${manifestPath} is not valid JSON`, { cause: error });
  }
  const m = parsed as Partial<StoreManifest> | null;
  if (m === null || typeof m !== 'object' || !Number.isSafeInteger(m.bucketCount) || (m.bucketCount ?? 0) < 1 || typeof m.formatVersion !== 'number') {
    throw new OffsetStoreError('CORRUPT_MESSAGE', `${manifestPath} lacks a valid formatVersion and bucketCount`);
  }
  if (m.formatVersion !== FORMAT_VERSION) {
    throw new OffsetStoreError('INVALID_CONFIG', `${manifestPath} has format version ${m.formatVersion}; this build reads version ${FORMAT_VERSION}`);
  }
  return { formatVersion: m.formatVersion, bucketCount: m.bucketCount!, createdAtMs: m.createdAtMs ?? 0 };
}

/** Writes a whole file so that after a crash it is either absent/old or complete and new. */
export async function writeDurably(fs: FileSystem, filePath: string, bytes: Buffer): Promise<void> {
  const tempPath = `${filePath}.tmp`;
  const handle = await fs.open(tempPath, 'w');
  try {
    await handle.writev([bytes], 0);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await fs.rename(tempPath, filePath);
  await fs.syncDir(path.dirname(filePath));
}
