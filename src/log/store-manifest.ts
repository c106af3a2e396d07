/**
 * `store.json`, the manifest of a store directory: what cannot change after creation (format
 * version, bucketCount, creation time), what changes only by an explicit conversion (the compaction
 * strategy), and what the store knows of each offsets-bucket's log between two runs (where it
 * starts, where it ended). Every version is written whole and atomically (temp file, fdatasync,
 * rename, directory fsync), carries a checksum of its content, and is never trusted without it.
 *
 * | field              | meaning                                                                   |
 * |--------------------|---------------------------------------------------------------------------|
 * | formatVersion      | 3 (2 is read too, and raised to 3 by the first open that writes: below)   |
 * | bucketCount        | number of offsets-buckets; fixed at creation                              |
 * | createdAtMs        | creation time                                                             |
 * | compactionStrategy | the strategy the store runs: a built-in's name, or `module:<name>` (+checkpoints) |
 * | buckets[i]         | `{ logStart, logEnd, endExact }` of offsets-bucket i (below)              |
 * | checksum           | xxh32 of the UTF-8 JSON of every other field, in this order               |
 *
 * Per bucket: `logStart`, the log offset below which the log holds nothing it needs (0, or where a
 * conversion from checkpoints rewrote the state into the log); `logEnd`, the log offset after the
 * last batch the log held when the store last closed (`endExact`) or opened (a lower bound: a log
 * never loses durable batches). Open records `endExact: false` for every bucket before anything is
 * written, and a clean close records each log's exact end; recovery refuses a log that ends
 * earlier (log-inspection.ts), which is how a missing last segment or cut-off batches are noticed.
 *
 * Versions: 3 and 2 share this layout. 3 says the store may hold what builds that wrote 2 do not
 * read and would misread rather than refuse (they know only the number): a commit journal holding
 * acknowledged batches its logs lack after a crash, consumer-group snapshots of a rebalance in
 * progress or of static members away. So every open that writes raises a store of version 2 to 3
 * before it writes anything else (`upgradeFormat`), and such builds refuse it from then on. Version 1
 * (a pre-release layout without the per-bucket records) is refused.
 *
 * Creation is crash-safe: the bucket folders are made first, the manifest last. A directory with
 * `buckets/` but no manifest is an interrupted creation when no bucket holds any data (it is
 * started over), and corruption otherwise.
 */
import * as path from 'node:path';
import { loadChecksum, xxh32 } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import { parseSegmentFileName } from './segment-name.js';

/** The current on-disk format version. */
export const FORMAT_VERSION = 3;
/** The versions this build reads (see the module comment): the current one and the one it raises. */
const READABLE_VERSIONS: readonly number[] = [2, FORMAT_VERSION];
/** Name of the manifest file inside a store directory. */
export const MANIFEST_FILE = 'store.json';
/** Name of the folder holding one folder per offsets-bucket. */
export const BUCKETS_DIR = 'buckets';

/** What the manifest records of one offsets-bucket's log. */
export interface BucketLogRecord {
  /**
   * Recovery without a checkpoint replays from this log offset (0, or where a conversion from
   * checkpoints rewrote the state).
   */
  logStart: number;
  /** The log offset after the last batch the log held when the store last closed or opened. */
  logEnd: number;
  /**
   * True after a clean close (the log must end exactly at `logEnd`); false while open or after a crash
   * (a lower bound).
   */
  endExact: boolean;
}

/** The manifest's content. */
export interface StoreManifest {
  /** FORMAT_VERSION (3), or 2 until the first open that writes raises it; another is refused with INVALID_CONFIG. */
  formatVersion: number;
  /** Number of offsets-buckets, fixed at creation. */
  bucketCount: number;
  /** When the store was created, ms since the epoch. */
  createdAtMs: number;
  /** The strategy the store runs; checked by the store, changed only by a conversion. */
  compactionStrategy: string;
  /** One record per offsets-bucket, in bucket order. */
  buckets: BucketLogRecord[];
}

/** Folder name of offsets-bucket `bucket` in a store of `bucketCount` buckets: zero-padded, at least 3 digits. */
export function bucketDirName(bucketCount: number, bucket: number): string {
  return String(bucket).padStart(Math.max(3, String(bucketCount - 1).length), '0');
}

/** Folder of offsets-bucket `bucket` of the store in `dir`. */
export function bucketDirPath(dir: string, bucketCount: number, bucket: number): string {
  return path.join(dir, BUCKETS_DIR, bucketDirName(bucketCount, bucket));
}

/** The JSON of a manifest's fields in their fixed order (what the checksum covers). */
function canonical(m: StoreManifest): string {
  return JSON.stringify({
    formatVersion: m.formatVersion,
    bucketCount: m.bucketCount,
    createdAtMs: m.createdAtMs,
    compactionStrategy: m.compactionStrategy,
    buckets: m.buckets.map((b) => ({
      logStart: b.logStart,
      logEnd: b.logEnd,
      endExact: b.endExact,
    })),
  });
}

/** The manifest as `store.json` holds it (with its checksum); `loadChecksum` must have run. */
export function encodeManifest(m: StoreManifest): Buffer {
  const lines = [
    '{',
    `  "formatVersion": ${m.formatVersion},`,
    `  "bucketCount": ${m.bucketCount},`,
    `  "createdAtMs": ${m.createdAtMs},`,
    `  "compactionStrategy": ${JSON.stringify(m.compactionStrategy)},`,
    '  "buckets": [',
    ...m.buckets.map(
      (b, i) =>
        `    ${JSON.stringify({ logStart: b.logStart, logEnd: b.logEnd, endExact: b.endExact })}${i < m.buckets.length - 1 ? ',' : ''}`,
    ),
    '  ],',
    `  "checksum": ${xxh32(Buffer.from(canonical(m), 'utf8'))}`,
    '}',
    '',
  ];
  return Buffer.from(lines.join('\n'), 'utf8');
}

function corrupt(manifestPath: string, reason: string, cause?: unknown): OffsetStoreError {
  return new OffsetStoreError('CORRUPT_MESSAGE', `${manifestPath}: ${reason}`, { cause });
}

function parseManifest(manifestPath: string, bytes: Buffer): StoreManifest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw corrupt(manifestPath, 'not valid JSON', error);
  }
  const m = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<
    string,
    unknown
  >;
  if (typeof m.formatVersion !== 'number') throw corrupt(manifestPath, 'no formatVersion');
  let manifest: StoreManifest;
  try {
    manifest = fieldsOf(manifestPath, m);
  } catch (error) {
    // A layout this build does not know, under another version number: another build's store.
    if (!READABLE_VERSIONS.includes(m.formatVersion))
      throw otherVersion(manifestPath, m.formatVersion);
    throw error;
  }
  // This layout under another number is another build's store when its checksum holds; when it
  // fails, the number was damaged with the rest.
  if (m.checksum !== xxh32(Buffer.from(canonical(manifest), 'utf8')))
    throw corrupt(manifestPath, 'checksum mismatch: the manifest was damaged or edited by hand');
  if (!READABLE_VERSIONS.includes(manifest.formatVersion))
    throw otherVersion(manifestPath, manifest.formatVersion);
  return manifest;
}

function otherVersion(manifestPath: string, version: number): OffsetStoreError {
  return new OffsetStoreError(
    'INVALID_CONFIG',
    version > FORMAT_VERSION
      ? `${manifestPath} has format version ${version}, written by a later build of offset-store; this build reads versions ${READABLE_VERSIONS.join(' and ')}: open it with that later build`
      : `${manifestPath} has format version ${version}; this build reads versions ${READABLE_VERSIONS.join(' and ')} (version 1 was an earlier pre-release layout, without the log records recovery now checks against)`,
  );
}

/** The fields of a parsed manifest in this build's layout, checked (not yet against its checksum). */
function fieldsOf(manifestPath: string, m: Record<string, unknown>): StoreManifest {
  const buckets = Array.isArray(m.buckets) ? (m.buckets as unknown[]) : [];
  const records: BucketLogRecord[] = buckets.map((b) => {
    const { logStart, logEnd, endExact } = (typeof b === 'object' && b !== null ? b : {}) as Record<
      string,
      unknown
    >;
    const offset = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
    if (!offset(logStart) || !offset(logEnd) || typeof endExact !== 'boolean')
      throw corrupt(manifestPath, `bucket record ${JSON.stringify(b)} is malformed`);
    return { logStart: logStart as number, logEnd: logEnd as number, endExact };
  });
  const manifest: StoreManifest = {
    formatVersion: m.formatVersion as number,
    bucketCount: m.bucketCount as number,
    createdAtMs: m.createdAtMs as number,
    compactionStrategy: m.compactionStrategy as string,
    buckets: records,
  };
  if (
    !Number.isSafeInteger(manifest.bucketCount) ||
    manifest.bucketCount < 1 ||
    records.length !== manifest.bucketCount ||
    !Number.isSafeInteger(manifest.createdAtMs) ||
    typeof manifest.compactionStrategy !== 'string'
  ) {
    throw corrupt(
      manifestPath,
      'lacks a valid bucketCount, createdAtMs, compactionStrategy or one record per bucket',
    );
  }
  return manifest;
}

/** Reads and checks the manifest of `dir` without creating anything; null when there is none. */
export async function readManifest(fs: FileSystem, dir: string): Promise<StoreManifest | null> {
  const manifestPath = path.join(dir, MANIFEST_FILE);
  const bytes = await fs.readFile(manifestPath);
  await loadChecksum();
  return bytes === null ? null : parseManifest(manifestPath, bytes);
}

/** What a new store is created with. */
export interface ManifestDefaults {
  /** Offsets-buckets of a store created now. */
  bucketCount: number;
  /** Strategy recorded in a store created now. */
  compactionStrategy: string;
  /** Creation time to record, ms since the epoch. */
  nowMs: number;
}

/** An update asked for and not written yet. */
interface PendingUpdate {
  change: (manifest: StoreManifest) => void;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * The directory of a store that holds `dir` (an ancestor of it with a manifest), if any: a store
 * created there would put its files among that store's own (`--dir` naming a store's `buckets/`
 * folder), which then refuses to open. Undefined when no folder above `dir` holds a manifest.
 */
export async function enclosingStoreDir(fs: FileSystem, dir: string): Promise<string | undefined> {
  let at = path.resolve(dir);
  for (;;) {
    const parent = path.dirname(at);
    if (parent === at) return undefined;
    at = parent;
    if ((await fs.sizeBytes(path.join(at, MANIFEST_FILE)).catch(() => null)) !== null) return at;
  }
}

/**
 * The manifest of an open store: read (or created) once, then rewritten whole on updates. Updates are
 * group-committed: those asked for while a write is under way (or in the same turn) are applied in
 * call order to one copy and written once, so n buckets recording their ends as they load cost a few
 * writes, not n writes of n entries each.
 */
export class ManifestFile {
  /** Path of `store.json`, for messages. */
  readonly path: string;
  readonly #fs: FileSystem;
  #manifest: StoreManifest;
  #pending: PendingUpdate[] = [];
  #writing = false;

  private constructor(fs: FileSystem, manifestPath: string, manifest: StoreManifest) {
    this.#fs = fs;
    this.path = manifestPath;
    this.#manifest = manifest;
  }

  /**
   * Reads the manifest of the store in `dir` (which must exist), or creates the store: its bucket
   * folders first, the manifest last (see the module comment). The bucket folders are then checked:
   * one per bucket, none beyond (CORRUPT_MESSAGE otherwise; a missing folder is reported by
   * `missingBucketDirs` for the caller to fail that bucket alone).
   */
  static async openOrCreate(
    fs: FileSystem,
    dir: string,
    defaults: ManifestDefaults,
  ): Promise<ManifestFile> {
    const manifestPath = path.join(dir, MANIFEST_FILE);
    let manifest = await readManifest(fs, dir);
    if (manifest === null) {
      await startOver(fs, dir, manifestPath);
      manifest = {
        formatVersion: FORMAT_VERSION,
        bucketCount: defaults.bucketCount,
        createdAtMs: defaults.nowMs,
        compactionStrategy: defaults.compactionStrategy,
        buckets: Array.from({ length: defaults.bucketCount }, () => ({
          logStart: 0,
          logEnd: 0,
          endExact: true,
        })),
      };
      for (let i = 0; i < manifest.bucketCount; i++)
        await fs.mkdir(bucketDirPath(dir, manifest.bucketCount, i));
      await fs.syncDir(path.join(dir, BUCKETS_DIR));
      await fs.syncDir(dir);
      await syncAncestors(fs, dir);
      await writeDurably(fs, manifestPath, encodeManifest(manifest));
    } else {
      // What the open reads it makes durable first. A process that died after renaming a new
      // manifest into place but before syncing the folder left it in the page cache only: a power
      // loss would bring the older one back, while this process relies on the newer (an end no
      // longer exact, which lets its logs grow past what the older one records).
      await fs.syncDir(dir);
    }
    const extra = await strayBucketDirs(fs, dir, manifest.bucketCount);
    if (extra.length > 0) throw corrupt(path.join(dir, BUCKETS_DIR), strayReason(manifest, extra));
    return new ManifestFile(fs, manifestPath, manifest);
  }

  /**
   * Raises a store of an earlier readable version to FORMAT_VERSION (durably), so that builds which
   * would misread what this one writes refuse the store from now on; returns the version it was
   * raised from, or undefined when it was FORMAT_VERSION already. The caller does it before it writes
   * anything else into the store.
   */
  async upgradeFormat(): Promise<number | undefined> {
    const from = this.#manifest.formatVersion;
    if (from === FORMAT_VERSION) return undefined;
    await this.update((m) => {
      m.formatVersion = FORMAT_VERSION;
    });
    return from;
  }

  /**
   * Awaited before each write of the file: rejects (and so fails the updates of that write) when
   * the store's directory was renamed or replaced under the process (DirectoryLock.check).
   */
  checkDirectory: (() => Promise<void>) | undefined;

  /** The current content (do not modify; use `update`). */
  get manifest(): Readonly<StoreManifest> {
    return this.#manifest;
  }

  /**
   * Applies `change` to a copy and writes it durably, together with the updates asked for meanwhile
   * (in call order). Resolves once written; a write that fails rejects every update it carried and
   * leaves the manifest as it was; a change that throws is rejected alone.
   */
  update(change: (manifest: StoreManifest) => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ change, resolve, reject });
      if (!this.#writing) {
        this.#writing = true;
        // A turn later: updates asked for in the same turn share the first write too.
        queueMicrotask(() => void this.#writeRounds());
      }
    });
  }

  async #writeRounds(): Promise<void> {
    while (this.#pending.length > 0) {
      let round = this.#pending.splice(0);
      let next: StoreManifest;
      for (;;) {
        next = { ...this.#manifest, buckets: this.#manifest.buckets.map((b) => ({ ...b })) };
        const thrower = applyAll(next, round);
        if (thrower === undefined) break;
        // Rare (a change is the store's own code): the round starts over without it.
        round = round.filter((update) => update !== thrower);
      }
      if (round.length === 0) continue;
      try {
        await this.checkDirectory?.();
        await writeDurably(this.#fs, this.path, encodeManifest(next));
        this.#manifest = next;
        for (const update of round) update.resolve();
      } catch (error) {
        for (const update of round) update.reject(error);
      }
    }
    this.#writing = false;
  }
}

/** Applies each update's change in turn; the first that throws is rejected and returned. */
function applyAll(manifest: StoreManifest, round: PendingUpdate[]): PendingUpdate | undefined {
  for (const update of round) {
    try {
      update.change(manifest);
    } catch (error) {
      update.reject(error);
      return update;
    }
  }
  return undefined;
}

/** Bucket folders of `dir` that do not exist although the manifest has their buckets. */
export async function missingBucketDirs(
  fs: FileSystem,
  dir: string,
  bucketCount: number,
): Promise<number[]> {
  const present = new Set(await fs.readdir(path.join(dir, BUCKETS_DIR)));
  const missing: number[] = [];
  for (let i = 0; i < bucketCount; i++)
    if (!present.has(bucketDirName(bucketCount, i))) missing.push(i);
  return missing;
}

/** Entries of `buckets/` that are not a folder of one of the `bucketCount` buckets. */
/**
 * Entries of `buckets/` that are not the folder of one of the store's offsets-buckets: the folders
 * of another store (a manifest that does not describe this one), or something put there. Hidden
 * entries (`.DS_Store`, an editor's or a sync tool's files) are no bucket's and are left alone.
 */
export async function strayBucketDirs(
  fs: FileSystem,
  dir: string,
  bucketCount: number,
): Promise<string[]> {
  const expected = new Set(
    Array.from({ length: bucketCount }, (_, i) => bucketDirName(bucketCount, i)),
  );
  return (await fs.readdir(path.join(dir, BUCKETS_DIR)))
    .filter((name) => !expected.has(name) && !name.startsWith('.'))
    .sort();
}

/** Why `stray` entries of `buckets/` refuse the store, and what to do. */
export function strayReason(manifest: { bucketCount: number }, stray: readonly string[]): string {
  return `holds ${stray.join(', ')}, which ${stray.length === 1 ? 'is not the folder' : 'are not folders'} of this store's ${manifest.bucketCount} offsets-buckets (${MANIFEST_FILE}: bucketCount ${manifest.bucketCount}): move what is not this store's out of it; if it is, ${MANIFEST_FILE} does not describe this store`;
}

/**
 * Before creating a store in `dir`: `buckets/` left by an interrupted creation is removed; one that
 * holds data (a segment with bytes, a checkpoint) means the manifest of a real store is missing.
 */
async function startOver(fs: FileSystem, dir: string, manifestPath: string): Promise<void> {
  const bucketsDir = path.join(dir, BUCKETS_DIR);
  for (const name of await fs.readdir(bucketsDir)) {
    if (name.startsWith('.')) continue; // no bucket's (see strayBucketDirs)
    const bucketDir = path.join(bucketsDir, name);
    for (const entry of await fs.readdir(bucketDir)) {
      const size =
        parseSegmentFileName(entry) === undefined
          ? -1
          : await fs.sizeBytes(path.join(bucketDir, entry));
      if (size !== 0)
        throw corrupt(manifestPath, `missing, but ${bucketDir} holds ${entry}: a store was here`);
    }
  }
  await fs.removeTree(bucketsDir);
}

/**
 * fsyncs every directory above `dir`, up to the root, so that `dir`'s own entry (and those of any
 * parents `mkdir` created with it) survive a power loss: without it, a new store's every durable
 * commit could vanish with the directory that holds it. Once, when a store is created. A directory
 * this process may not open (EACCES, EPERM) is one it did not create, and is skipped.
 */
export async function syncAncestors(fs: FileSystem, dir: string): Promise<void> {
  for (let parent = path.dirname(path.resolve(dir)); ; parent = path.dirname(parent)) {
    try {
      await fs.syncDir(parent);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException | null)?.code;
      if (code !== 'EACCES' && code !== 'EPERM') throw error;
    }
    if (path.dirname(parent) === parent) return;
  }
}

/** Writes a whole file so that after a crash it is either absent/old or complete and new. */
export async function writeDurably(
  fs: FileSystem,
  filePath: string,
  bytes: Buffer,
  mode?: number,
): Promise<void> {
  const tempPath = `${filePath}.tmp`;
  // A leftover temporary file would keep its own permissions: `mode` applies only to a new file.
  if (mode !== undefined) await fs.unlink(tempPath);
  const handle = await fs.open(tempPath, 'w', mode);
  try {
    await handle.writev([bytes], 0);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await fs.rename(tempPath, filePath);
  await fs.syncDir(path.dirname(filePath));
}
