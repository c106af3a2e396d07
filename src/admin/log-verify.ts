/**
 * `verifyLog`: checks every offsets-bucket of a store the way recovery reads it — the same
 * inspection (log/log-inspection.ts), with the same expectations from the manifest and the same
 * choice of checkpoint (OffsetsTable.inspect) — and also decodes every record of every batch. It
 * never opens the store, because opening repairs (truncates a torn tail, completes an interrupted
 * compaction swap); nothing here writes. So its verdict is what the next open will do:
 * - `ok`: the next open changes nothing but preallocation and swap leftovers;
 * - `torn-tail`: damage at the end of a bucket's log that a crash or power loss can leave; the next
 *   open truncates it, losing only writes nobody was told were durable;
 * - `corrupt`: anything else (a damaged sealed segment, damage to durable data, a missing segment or
 *   bucket folder, a log that ends before the store last knew it to, an invalid swap intent); the next
 *   open refuses that offsets-bucket with CORRUPT_MESSAGE.
 * After damage in a segment the check goes on with the next segment, so one report lists them all.
 */
import * as path from 'node:path';
import { NodeFileSystem, type FileSystem } from '../io/index.js';
import { isOffsetStoreError } from '../errors/index.js';
import { decodeBatchRecords, loadChecksum, xxh32 } from '../codec/index.js';
import {
  BUCKETS_DIR,
  JOURNAL_DIR,
  LOG_DEFAULTS,
  readJournal,
  missingBucketDirs,
  strayBucketDirs,
  strayReason,
  type InspectedSegment,
} from '../log/index.js';
import { OffsetsTable } from '../kv/index.js';
import { recordedStrategy } from '../compaction/index.js';
import { storedSnapshotProblem } from '../group/index.js';
import {
  listSwapLeftovers,
  vanished,
  liveLockHolder,
  MANIFEST_FILE,
  readStoreLayout,
  type StoreLayout,
} from './store-directory.js';

/**
 * `LogProblem.bucket` of damage to what the store reads before any offsets-bucket (its commit
 * journal, `buckets/` itself): the next open refuses the whole store for it.
 */
export const STORE_WIDE_BUCKET = -1;

/** One damaged place. */
export interface LogProblem {
  /**
   * 'torn-tail': the next open truncates it, losing only unacknowledged writes; 'corrupt': the next
   * open refuses the offsets-bucket.
   */
  kind: 'corrupt' | 'torn-tail';
  /** The offsets-bucket; STORE_WIDE_BUCKET for the commit journal and `buckets/` itself. */
  bucket: number;
  /** The damaged (or missing) file. */
  file: string;
  /** Byte position in `file` of the first byte that is not part of a valid batch (or of the bad record). */
  position: number;
  /** Bytes from `position` to the end of the file. */
  bytesAfter: number;
  /** What is wrong there. */
  reason: string;
}

/** What the check found in one segment file. */
export interface SegmentVerification {
  /** Path of the segment file. */
  file: string;
  /** Log offset of its first batch, from its name. */
  baseOffset: number;
  /** Size of the file. */
  sizeBytes: number;
  /** Bytes of valid batches from the start of the file. */
  validBytes: number;
  /** Zero bytes after the last batch of the active segment (written ahead by the log; not damage). */
  preallocatedBytes: number;
  /** Valid batches in it. */
  batchCount: number;
  /** Records in those batches, each decoded. */
  recordCount: number;
  /** Log offset of its first valid batch, null when it has none. */
  firstLogOffset: number | null;
  /** Log offset of its last valid batch, null when it has none. */
  lastLogOffset: number | null;
}

/** What the check found in one offsets-bucket. */
export interface BucketVerification {
  /** The offsets-bucket. */
  bucket: number;
  /** Its folder. */
  dir: string;
  /** The worst problem found: what the next open will do with it. */
  status: 'ok' | 'torn-tail' | 'corrupt';
  /** Each segment, oldest first. */
  segments: SegmentVerification[];
  /** Valid batches in all its segments. */
  batchCount: number;
  /** Records in those batches. */
  recordCount: number;
  /** Bytes of all its segment files. */
  sizeBytes: number;
  /** Log offset of its first valid batch, null when it has none. */
  firstLogOffset: number | null;
  /** Log offset of its last valid batch, null when it has none. */
  lastLogOffset: number | null;
  /** Files an interrupted compaction left (the next open completes or discards the swap). */
  swapLeftovers: string[];
  /**
   * Segment files wholly below where recovery starts (a checkpoint) that do not chain with the
   * segments after them: put back from an older copy, or beside one removed by hand. The next open
   * removes them; they are not in `segments`.
   */
  staleSegments: string[];
}

/** What `verifyLog` returns. */
export interface VerifyReport {
  /** The store directory, absolute. */
  dir: string;
  /** Offsets-buckets checked (all of the store's). */
  bucketCount: number;
  /** True when no problem was found. */
  ok: boolean;
  /** Problems of kind 'corrupt' (the CLI exits 1 when there is any). */
  corruptCount: number;
  /** Problems of kind 'torn-tail' (the CLI exits 3 when these are the only ones). */
  tornTailCount: number;
  /** Pid of a live process that has the store open (a torn tail may then be an append in flight). */
  openByPid: number | null;
  /** Sums over every offsets-bucket. */
  totals: { segmentCount: number; batchCount: number; recordCount: number; sizeBytes: number };
  /** One entry per offsets-bucket, in bucket order. */
  buckets: BucketVerification[];
  /** Every damaged place, bucket by bucket, in file order. */
  problems: LogProblem[];
  /**
   * The commit journal: files and rounds read (0 when there is none: after a clean close), and
   * where the record of refused rounds that could not be erased ended a file, if it did.
   */
  journal: {
    files: number;
    rounds: number;
    batches: number;
    refusedFrom?: { file: string; position: number };
  };
  /** Wall time of the check, in ms. */
  durationMs: number;
}

/** Options of `verifyLog`. */
export interface VerifyOptions {
  /** Called after each offsets-bucket is checked (progress). */
  onBucketChecked?: (bucket: BucketVerification, bucketCount: number) => void;
  /** The file-system port to read through (default: the real one). */
  fs?: FileSystem;
}

/**
 * Names an open writes at the store's root, and what under them makes it fail (LOG_STORAGE_ERROR):
 * `store.json` is written to `store.json.tmp` first, which must be a file if anything; a stale `LOCK`
 * is removed and written again, which a directory refuses (a FIFO or a socket there is replaced).
 */
const WRITTEN_AT_OPEN: readonly (readonly [string, (type: string) => boolean])[] = [
  [`${MANIFEST_FILE}.tmp`, (type) => type !== 'file'],
  ['LOCK', (type) => type === 'a directory'],
];

/** What is not a file where the next open writes one, so that it fails: a problem each (corrupt). */
async function blockedStoreFiles(fs: FileSystem, dir: string): Promise<LogProblem[]> {
  const problems: LogProblem[] = [];
  for (const [name, blocks] of WRITTEN_AT_OPEN) {
    const file = path.join(dir, name);
    const type = (await fs.fileType?.(file)) ?? 'missing';
    if (type !== 'missing' && blocks(type))
      problems.push({
        kind: 'corrupt',
        bucket: STORE_WIDE_BUCKET,
        file,
        position: 0,
        bytesAfter: 0,
        reason: `${name} is ${type}, where an open writes a file: the next open fails (LOG_STORAGE_ERROR) until it is removed`,
      });
  }
  return problems;
}

/** Verifies the store in `dir` without modifying anything; INVALID_CONFIG when `dir` holds no store. */
export async function verifyLog(dir: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  const startedMs = performance.now();
  const fs = options.fs ?? new NodeFileSystem();
  await loadChecksum();
  const layout = await readStoreLayout(fs, dir);
  const report: VerifyReport = {
    dir: layout.dir,
    bucketCount: layout.manifest.bucketCount,
    ok: true,
    corruptCount: 0,
    tornTailCount: 0,
    openByPid: await liveLockHolder(fs, layout.dir),
    totals: { segmentCount: 0, batchCount: 0, recordCount: 0, sizeBytes: 0 },
    buckets: [],
    problems: [],
    journal: { files: 0, rounds: 0, batches: 0 },
    durationMs: 0,
  };
  // The commit journal, read as the next open reads it: what it holds continues the logs.
  let journaled: Map<number, Buffer[]> = new Map();
  try {
    const contents = await readJournal(
      fs,
      layout.dir,
      layout.manifest.bucketCount,
      LOG_DEFAULTS.batchBytesMax,
    );
    journaled = contents.batches;
    let batches = 0;
    for (const list of contents.batches.values()) batches += list.length;
    report.journal = { files: contents.files.length, rounds: contents.rounds, batches };
    if (contents.refusedFrom !== undefined) report.journal.refusedFrom = contents.refusedFrom;
    for (const torn of contents.tornRounds)
      report.problems.push({
        kind: 'torn-tail',
        bucket: STORE_WIDE_BUCKET,
        file: torn.file,
        position: torn.position,
        bytesAfter: 0,
        reason: `a commit-journal round cut short by a crash (${torn.reason}); the next open drops it`,
      });
  } catch (error) {
    if (!isOffsetStoreError(error, 'CORRUPT_MESSAGE')) throw error;
    report.problems.push({
      kind: 'corrupt',
      bucket: STORE_WIDE_BUCKET,
      file: path.join(layout.dir, JOURNAL_DIR),
      position: 0,
      bytesAfter: 0,
      reason: error.message,
    });
  }
  report.problems.push(...(await blockedStoreFiles(fs, layout.dir)));
  const missing = new Set(await missingBucketDirs(fs, layout.dir, layout.manifest.bucketCount));
  // What the next open refuses the whole store for.
  const stray = await strayBucketDirs(fs, layout.dir, layout.manifest.bucketCount);
  if (stray.length > 0)
    report.problems.push({
      kind: 'corrupt',
      bucket: STORE_WIDE_BUCKET,
      file: path.join(layout.dir, BUCKETS_DIR),
      position: 0,
      bytesAfter: 0,
      reason: strayReason(layout.manifest, stray),
    });
  for (let bucket = 0; bucket < layout.bucketDirs.length; bucket++) {
    // A store open in another process is compacted meanwhile: a file listed may be gone (swapped
    // for its compacted output) when it is read. The bucket is then read again from its listing.
    const check = async (found: LogProblem[]): Promise<BucketVerification> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await verifyBucket(
            fs,
            layout,
            bucket,
            missing.has(bucket),
            found,
            journaled.get(bucket),
          );
        } catch (error) {
          if (!vanished(error) || attempt >= VANISHED_RETRIES) throw error;
          found.length = 0;
          await new Promise((resolve) => setTimeout(resolve, LIVE_CHECK_PAUSE_MS));
        }
      }
    };
    let found: LogProblem[] = [];
    let result = await check(found);
    if (report.openByPid !== null && found.length > 0)
      [result, found] = await recheckLive(check, result, found, report.openByPid);
    report.problems.push(...found);
    report.buckets.push(result);
    report.totals.segmentCount += result.segments.length;
    report.totals.batchCount += result.batchCount;
    report.totals.recordCount += result.recordCount;
    report.totals.sizeBytes += result.sizeBytes;
    options.onBucketChecked?.(result, layout.bucketDirs.length);
  }
  report.corruptCount = report.problems.filter((p) => p.kind === 'corrupt').length;
  report.tornTailCount = report.problems.length - report.corruptCount;
  report.ok = report.problems.length === 0;
  report.durationMs = performance.now() - startedMs;
  return report;
}

/** Reads of a bucket when files it listed vanished under them (a live store compacting). */
const VANISHED_RETRIES = 16;

/** Reads of a live store's bucket made before its problems are taken as what they say. */
const LIVE_CHECKS = 4;
/** Pause between them, ms. */
const LIVE_CHECK_PAUSE_MS = 100;

/**
 * A store another process has open is read while it writes: a read that meets the end of its
 * active segment while an append is landing sees a batch cut short, and what follows it later,
 * which reads like damage (even like corruption). So a bucket with problems is read again, up to
 * LIVE_CHECKS times: problems that go away were appends in flight; problems that move or change
 * are reported as a tail being written (not corruption: the CLI warns that the store is open);
 * only problems that read the same every time stand as found.
 */
async function recheckLive(
  check: (found: LogProblem[]) => Promise<BucketVerification>,
  result: BucketVerification,
  found: LogProblem[],
  pid: number,
): Promise<[BucketVerification, LogProblem[]]> {
  const keyOf = (p: LogProblem) => JSON.stringify([p.kind, p.file, p.position, p.reason]);
  // Problems found the same way by every read so far.
  let stable = new Set(found.map(keyOf));
  for (let attempt = 1; attempt < LIVE_CHECKS; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, LIVE_CHECK_PAUSE_MS));
    const again: LogProblem[] = [];
    const next = await check(again);
    if (again.length === 0) return [next, again];
    const keys = new Set(again.map(keyOf));
    stable = new Set([...stable].filter((k) => keys.has(k)));
    [result, found] = [next, again];
  }
  const problems = found.map((p): LogProblem =>
    stable.has(keyOf(p))
      ? p
      : {
          ...p,
          kind: 'torn-tail',
          reason: `${p.reason} (read while live process ${pid} writes, and it changed between reads: an append in progress, not damage found at rest)`,
        },
  );
  const status = problems.some((p) => p.kind === 'corrupt') ? 'corrupt' : 'torn-tail';
  return [{ ...result, status }, problems];
}

async function verifyBucket(
  fs: FileSystem,
  layout: StoreLayout,
  bucket: number,
  missing: boolean,
  problems: LogProblem[],
  journaled: readonly Buffer[] | undefined,
): Promise<BucketVerification> {
  const bucketDir = layout.bucketDirs[bucket]!;
  const result: BucketVerification = {
    bucket,
    dir: bucketDir,
    status: 'ok',
    segments: [],
    batchCount: 0,
    recordCount: 0,
    sizeBytes: 0,
    firstLogOffset: null,
    lastLogOffset: null,
    swapLeftovers: await listSwapLeftovers(fs, bucketDir),
    staleSegments: [],
  };
  if (missing) {
    problems.push({
      kind: 'corrupt',
      bucket,
      file: bucketDir,
      position: 0,
      bytesAfter: 0,
      reason: `${path.basename(bucketDir)} is missing: the folder of offsets-bucket ${bucket} does not exist`,
    });
    result.status = 'corrupt';
    return result;
  }
  const record = layout.manifest.buckets[bucket]!;
  // [log offset, record count] of every batch, in log order.
  let records: [number, number][] = [];
  // The last snapshot of each group in the log (what an open loads), with its batch's log offset.
  let snapshots = new Map<string, { snapshot: unknown; logOffset: number }>();
  // Groups seen, and the first that lives in another bucket (files moved between buckets' folders).
  let groupsSeen = new Set<string>();
  let foreign: { groupId: string; home: number; logOffset: number; count: number } | undefined;
  const bucketCount = layout.manifest.bucketCount;
  const { inspection, checkpointProblems } = await OffsetsTable.inspect(
    {
      log: {
        fs,
        dir: bucketDir,
        durability: 'fsync',
        segmentBytesMax: LOG_DEFAULTS.segmentBytesMax,
        batchBytesMax: LOG_DEFAULTS.batchBytesMax,
        pendingAppendsMax: 1,
        flushBytesMax: LOG_DEFAULTS.flushBytesMax,
        // As a default open reads it: with the commit journal, and what it holds for this bucket.
        journal: { bucket, replay: journaled },
      },
      useCheckpoints: recordedStrategy(layout.manifest.compactionStrategy)?.checkpoints === true,
      logStart: record.logStart,
      knownEnd: { logOffset: record.logEnd, exact: record.endExact },
      onWarning: () => {},
    },
    () => {
      records = [];
      snapshots = new Map();
      groupsSeen = new Set();
      foreign = undefined;
      return (buf, position, logOffset) => {
        let count = 0;
        decodeBatchRecords(buf, position, (r) => {
          count++;
          if (!groupsSeen.has(r.groupId)) {
            groupsSeen.add(r.groupId);
            const home = xxh32(Buffer.from(r.groupId, 'utf8')) % bucketCount;
            if (home !== bucket) {
              if (foreign === undefined)
                foreign = { groupId: r.groupId, home, logOffset, count: 0 };
              foreign.count++;
            }
          }
          if (r.type !== 1) return;
          if (r.tombstone) snapshots.delete(r.groupId);
          else snapshots.set(r.groupId, { snapshot: r.snapshot, logOffset });
        });
        records.push([logOffset, count]);
      };
    },
  );
  result.staleSegments = inspection.staleSegments.map((p) => path.basename(p));
  // The stale segments' batches were read before the break after them was found.
  let next = 0;
  const firstKept = inspection.segments[0]?.baseOffset ?? 0;
  while (next < records.length && records[next]![0] < firstKept) next++;
  for (const segment of inspection.segments) {
    let recordCount = 0;
    while (next < records.length && records[next]![0] <= segment.lastLogOffset)
      recordCount += records[next++]![1];
    const verified = segmentVerification(segment, recordCount);
    result.segments.push(verified);
    result.batchCount += verified.batchCount;
    result.recordCount += verified.recordCount;
    result.sizeBytes += verified.sizeBytes;
    if (verified.firstLogOffset !== null) result.firstLogOffset ??= verified.firstLogOffset;
    if (verified.lastLogOffset !== null) result.lastLogOffset = verified.lastLogOffset;
  }
  // A damaged checkpoint is ignored as an open ignores it, and the log replays from further back;
  // it is still damage at rest, and it explains a log found missing its older segments.
  for (const { file, reason } of checkpointProblems)
    problems.push({ kind: 'corrupt', bucket, file, position: 0, bytesAfter: 0, reason });
  for (const damage of inspection.damage) problems.push({ ...damage, bucket });
  // Checks of the batches' content an open makes too (it refuses the bucket): reported at the batch.
  let unloadable = false;
  const corruptBatch = (logOffset: number, reason: string): void => {
    const segment = inspection.segments.find(
      (s) => s.firstLogOffset <= logOffset && logOffset <= s.lastLogOffset,
    );
    problems.push({
      kind: 'corrupt',
      bucket,
      file: segment?.path ?? bucketDir,
      position: 0,
      bytesAfter: 0,
      reason: `batch ${logOffset}: ${reason}`,
    });
    unloadable = true;
  };
  if (foreign !== undefined) {
    const { groupId, home, logOffset, count } = foreign;
    corruptBatch(
      logOffset,
      `group ${JSON.stringify(groupId)} lives in offsets-bucket ${home}${count > 1 ? ` (and ${count - 1} more groups of other buckets)` : ''}: this bucket's files hold another bucket's data (segments or whole bucket folders moved or copied between buckets)`,
    );
  }
  // A snapshot whose checksum holds but that an open could not load.
  for (const [groupId, { snapshot, logOffset }] of snapshots) {
    const problem = storedSnapshotProblem(groupId, snapshot);
    if (problem !== undefined)
      corruptBatch(
        logOffset,
        `the last snapshot of group ${JSON.stringify(groupId)} cannot be loaded: ${problem}`,
      );
  }
  result.status =
    unloadable ||
    checkpointProblems.length > 0 ||
    inspection.damage.some((d) => d.kind === 'corrupt')
      ? 'corrupt'
      : inspection.damage.length > 0
        ? 'torn-tail'
        : 'ok';
  return result;
}

function segmentVerification(segment: InspectedSegment, recordCount: number): SegmentVerification {
  return {
    file: segment.path,
    baseOffset: segment.baseOffset,
    sizeBytes: segment.fileBytes,
    validBytes: segment.validBytes,
    preallocatedBytes: segment.zeroTailBytes,
    batchCount: segment.batchCount,
    recordCount,
    firstLogOffset: segment.firstLogOffset < 0 ? null : segment.firstLogOffset,
    lastLogOffset: segment.lastLogOffset < 0 ? null : segment.lastLogOffset,
  };
}
