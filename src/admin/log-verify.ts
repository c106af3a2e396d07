/**
 * `verifyLog`: checks every batch of every segment of every offsets-bucket of a store — length,
 * magic, checksum, log-offset order, and the structure of every record — and reports each place
 * where the log stops being valid, with its file and byte position. It reads the segment files
 * directly and never opens the store, because opening repairs: it truncates a torn tail and
 * completes an interrupted compaction swap. Nothing here writes.
 *
 * Classification follows recovery (DESIGN.md 3.3), so the report says what the next open will do:
 * 1. damage in the last segment of a bucket with no valid batch after it is a `torn-tail` (an
 *    append cut short by a crash; the next open truncates it, losing only unacknowledged writes), and
 *    so is damage there that is a lost sector of the last write round followed by more batches of
 *    that round (what a power loss leaves; see TailDamage in log/segment-scanner.ts);
 * 2. any other damage — in a sealed segment, or followed by valid batches otherwise, or a record
 *    that does not decode inside a batch whose checksum matches — is `corrupt` (the next open refuses
 *    the bucket with CORRUPT_MESSAGE).
 * After damage the rest of that segment is skipped and the check goes on with the next segment.
 */
import { NodeFileSystem, type FileSystem } from '../io/index.js';
import { DecodeError, decodeBatchRecords, loadChecksum } from '../codec/index.js';
import { LOG_DEFAULTS, classifyTailDamage, scanSegment } from '../log/index.js';
import { listSegmentFiles, listSwapLeftovers, liveLockHolder, readStoreLayout, type SegmentFile } from './store-directory.js';

/** One damaged place. */
export interface LogProblem {
  kind: 'corrupt' | 'torn-tail';
  bucket: number;
  file: string;
  /** Byte position in `file` of the first byte that is not part of a valid batch (or of the bad record). */
  position: number;
  /** Bytes from `position` to the end of the file. */
  bytesAfter: number;
  reason: string;
}

/** What the check found in one segment file. */
export interface SegmentVerification {
  file: string;
  baseOffset: number;
  sizeBytes: number;
  /** Bytes of valid batches from the start of the file. */
  validBytes: number;
  /** Zero bytes after the last batch of the active segment (written ahead by the log; not damage). */
  preallocatedBytes: number;
  batchCount: number;
  recordCount: number;
  firstLogOffset: number | null;
  lastLogOffset: number | null;
}

/** What the check found in one offsets-bucket. */
export interface BucketVerification {
  bucket: number;
  dir: string;
  status: 'ok' | 'torn-tail' | 'corrupt';
  segments: SegmentVerification[];
  batchCount: number;
  recordCount: number;
  sizeBytes: number;
  firstLogOffset: number | null;
  lastLogOffset: number | null;
  /** Files an interrupted compaction left (the next open completes or discards the swap). */
  swapLeftovers: string[];
}

/** What `verifyLog` returns. */
export interface VerifyReport {
  dir: string;
  bucketCount: number;
  /** True when no problem was found. */
  ok: boolean;
  corruptCount: number;
  tornTailCount: number;
  /** Pid of a live process that has the store open (a torn tail may then be an append in flight). */
  openByPid: number | null;
  totals: { segmentCount: number; batchCount: number; recordCount: number; sizeBytes: number };
  buckets: BucketVerification[];
  problems: LogProblem[];
  durationMs: number;
}

/** Options of `verifyLog`. */
export interface VerifyOptions {
  /** Called after each offsets-bucket is checked (progress). */
  onBucketChecked?: (bucket: BucketVerification, bucketCount: number) => void;
}

/** Verifies the store in `dir` without modifying anything; INVALID_CONFIG when `dir` holds no store. */
export async function verifyLog(dir: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  const startedMs = performance.now();
  const fs = new NodeFileSystem();
  const layout = await readStoreLayout(fs, dir);
  await loadChecksum();
  const report: VerifyReport = {
    dir: layout.dir, bucketCount: layout.manifest.bucketCount, ok: true, corruptCount: 0, tornTailCount: 0,
    openByPid: await liveLockHolder(fs, layout.dir),
    totals: { segmentCount: 0, batchCount: 0, recordCount: 0, sizeBytes: 0 }, buckets: [], problems: [], durationMs: 0,
  };
  for (let bucket = 0; bucket < layout.bucketDirs.length; bucket++) {
    const result = await verifyBucket(fs, bucket, layout.bucketDirs[bucket]!, report.problems);
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

async function verifyBucket(fs: FileSystem, bucket: number, bucketDir: string, problems: LogProblem[]): Promise<BucketVerification> {
  const files = await listSegmentFiles(fs, bucketDir);
  const result: BucketVerification = {
    bucket, dir: bucketDir, status: 'ok', segments: [], batchCount: 0, recordCount: 0, sizeBytes: 0, firstLogOffset: null, lastLogOffset: null,
    swapLeftovers: await listSwapLeftovers(fs, bucketDir),
  };
  const problemsBefore = problems.length;
  let previous = -1;
  for (let i = 0; i < files.length; i++) {
    const segment = await verifySegment(fs, bucket, files[i]!, previous, i === files.length - 1, problems);
    result.segments.push(segment);
    result.batchCount += segment.batchCount;
    result.recordCount += segment.recordCount;
    result.sizeBytes += segment.sizeBytes;
    if (segment.firstLogOffset !== null) result.firstLogOffset ??= segment.firstLogOffset;
    if (segment.lastLogOffset !== null) {
      result.lastLogOffset = segment.lastLogOffset;
      previous = segment.lastLogOffset;
    }
  }
  const found = problems.slice(problemsBefore);
  result.status = found.some((p) => p.kind === 'corrupt') ? 'corrupt' : found.length > 0 ? 'torn-tail' : 'ok';
  return result;
}

async function verifySegment(fs: FileSystem, bucket: number, file: SegmentFile, previous: number, isLast: boolean, problems: LogProblem[]): Promise<SegmentVerification> {
  const segment: SegmentVerification = {
    file: file.path, baseOffset: file.baseOffset, sizeBytes: file.sizeBytes, validBytes: 0, preallocatedBytes: 0, batchCount: 0, recordCount: 0, firstLogOffset: null, lastLogOffset: null,
  };
  const badRecords: LogProblem[] = [];
  const scan = await scanSegment(fs, file.path, { batchBytesMax: LOG_DEFAULTS.batchBytesMax, previousLogOffset: previous, baseOffset: file.baseOffset, endBytes: file.sizeBytes }, (buf, position, logOffset, _sizeBytes, filePosition) => {
    segment.firstLogOffset ??= logOffset;
    try {
      decodeBatchRecords(buf, position, () => {
        segment.recordCount++;
      });
    } catch (error) {
      if (!(error instanceof DecodeError)) throw error;
      const at = filePosition + (error.position - position);
      badRecords.push({
        kind: 'corrupt', bucket, file: file.path, position: at, bytesAfter: file.sizeBytes - at,
        reason: `batch ${logOffset}: checksum matches but a record does not decode: ${error.message.replace(/ at byte \d+$/, '')}`,
      });
    }
  });
  segment.validBytes = scan.validBytes;
  segment.preallocatedBytes = scan.zeroTailBytes;
  segment.batchCount = scan.batchCount;
  segment.lastLogOffset = scan.lastLogOffset >= 0 ? scan.lastLogOffset : null;
  problems.push(...badRecords);
  if (scan.zeroTailBytes > 0 && !isLast) {
    problems.push({
      kind: 'corrupt', bucket, file: file.path, position: scan.validBytes, bytesAfter: scan.zeroTailBytes,
      reason: `${scan.zeroTailBytes} zero bytes at the end of a sealed segment (only the active segment is preallocated)`,
    });
  }
  if (scan.damage !== undefined) {
    const { position, reason } = scan.damage;
    const lastValid = scan.lastLogOffset >= 0 ? scan.lastLogOffset : previous;
    const damage = isLast ? await classifyTailDamage(fs, file.path, scan.fileBytes, position, lastValid, LOG_DEFAULTS) : undefined;
    const truncated = `the next open truncates ${scan.fileBytes - position} bytes`;
    problems.push({
      kind: damage !== undefined && damage.kind !== 'corrupt' ? 'torn-tail' : 'corrupt', bucket, file: file.path, position, bytesAfter: scan.fileBytes - position,
      reason: damage === undefined ? `${reason} (in a sealed segment)`
        : damage.kind === 'torn' ? `${reason}; nothing valid follows (${truncated})`
          : damage.kind === 'torn-round' ? `${reason}; a write round cut short by a crash: a lost sector, then ${damage.batchesAfter} batch(es) of the same unsynced round (${truncated})`
            : `${reason}; a valid batch follows`,
    });
  }
  return segment;
}

