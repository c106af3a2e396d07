/**
 * `dumpLog`: decodes the log of one offsets-bucket straight from its segment files, batch by batch
 * and optionally record by record, like Kafka's `kafka-dump-log.sh`. Read-only: it works on a store
 * that is open elsewhere (it may then see a batch being appended as an incomplete tail) and on a
 * damaged one, where it reports the damage as an entry and goes on with the next segment.
 *
 * Entries are handed to a visitor as they are decoded, so a dump of a large log runs in bounded
 * memory; each entry is plain JSON-safe data.
 */
import * as path from 'node:path';
import { NodeFileSystem, type FileSystem } from '../io/index.js';
import {
  checkBatchFormat,
  DecodeError,
  decodeBatchRecords,
  loadChecksum,
  readBatchHeader,
  type DecodedRecord,
} from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import { LOG_DEFAULTS, logEndOf, scanSegment, segmentChainBreak } from '../log/index.js';
import { CHECKPOINT_DIR } from '../kv/index.js';
import { listSegmentFiles, readStoreLayout, vanished } from './store-directory.js';

/** A segment file begins. */
export interface DumpSegmentEntry {
  /** Discriminant: a segment file begins. */
  kind: 'segment';
  /** Path of the segment file. */
  file: string;
  /** Log offset of its first batch, from its name. */
  baseOffset: number;
  /** Size of the file (preallocated zeros included). */
  sizeBytes: number;
}

/** One batch. */
export interface DumpBatchEntry {
  /** Discriminant: one valid batch. */
  kind: 'batch';
  /** Path of its segment file. */
  file: string;
  /** Byte position of the batch in its file. */
  position: number;
  /** The batch's log offset. */
  logOffset: number;
  /** Bytes of the batch, its length field included. */
  sizeBytes: number;
  /** The stored xxh32, as 8 hex digits (it matched: damaged batches are `damage` entries). */
  checksum: string;
  /** When the batch was committed, ms since the epoch. */
  commitTimestampMs: number;
  /** The appender's fencing token (0 in a single-process store). */
  coordinatorEpoch: number;
  /** Records in the batch. */
  recordCount: number;
}

/** One record of a batch (with `records: true`). */
export interface DumpRecordEntry {
  /** Discriminant: one record of the batch before it. */
  kind: 'record';
  /** Log offset of its batch. */
  logOffset: number;
  /** Its index within the batch. */
  index: number;
  /** Record type 0 (an offset commit) or 1 (a group snapshot). */
  recordType: 'offset-commit' | 'group-snapshot';
  /** The group it belongs to. */
  groupId: string;
  /** True for a record without a value: a deleted offset or a deleted group's snapshot. */
  tombstone: boolean;
  /** Offset commits only (null for a snapshot). */
  tableId: number | null;
  /** Offset commits only: the partition, null for a non-partitioned table (and for a snapshot). */
  partitionId: number | null;
  /** Offset commits only: the bucket (null for a snapshot). */
  bucketId: number | null;
  /** Offset commit values only (null for a tombstone or a snapshot). */
  offset: number | null;
  /** Offset commit values only: the leader epoch, -1 when unknown. */
  leaderEpoch: number | null;
  /** Offset commit values only: when it was committed, ms since the epoch. */
  commitTimestampMs: number | null;
  /** Offset commit values only: the caller's metadata. */
  metadata: string | null;
  /** Group snapshot values only: the decoded msgpack map. */
  snapshot: unknown;
}

/** Where the log stops being valid (the rest of that segment is skipped). */
export interface DumpDamageEntry {
  /** Discriminant: the segment stops being valid here. */
  kind: 'damage';
  /** Path of the damaged segment file. */
  file: string;
  /** Byte position of the first byte that is not part of a valid batch. */
  position: number;
  /** What is wrong there. */
  reason: string;
}

/** Anything a dump emits. */
export type DumpEntry = DumpSegmentEntry | DumpBatchEntry | DumpRecordEntry | DumpDamageEntry;

/** Options of `dumpLog`. */
export interface DumpOptions {
  /** The file-system port to read through (default: the real one). */
  fs?: FileSystem;
  /** Skip batches below this log offset (default 0). */
  fromOffset?: number;
  /** Decode every record of every batch (default false: headers only). */
  records?: boolean;
}

/** Totals of a dump. */
export interface DumpSummary {
  /** The offsets-bucket dumped. */
  bucket: number;
  /** Its folder. */
  dir: string;
  /** Segment files of the offsets-bucket (those wholly below `fromOffset` are not read). */
  segmentCount: number;
  /** Batches emitted (at or above `fromOffset`). */
  batchCount: number;
  /** Records in the batches emitted: decoded when `records` was asked for, else as their headers count them. */
  recordCount: number;
  /** Damaged places found (0 for a clean log). */
  damageCount: number;
}

/** Times a dump lists a bucket's segments again after one vanished under it. */
const RELISTS_MAX = 16;

/**
 * Dumps offsets-bucket `bucket` of the store in `dir`, calling `visit` for each entry in log order.
 * INVALID_CONFIG when `dir` holds no store; INVALID_REQUEST for a bucket outside [0, bucketCount).
 */
export async function dumpLog(
  dir: string,
  bucket: number,
  options: DumpOptions,
  visit: (entry: DumpEntry) => void,
): Promise<DumpSummary> {
  const fs = options.fs ?? new NodeFileSystem();
  const layout = await readStoreLayout(fs, dir);
  const bucketCount = layout.manifest.bucketCount;
  if (!Number.isSafeInteger(bucket) || bucket < 0 || bucket >= bucketCount) {
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `bucket must be in [0, ${bucketCount - 1}], got ${bucket}`,
    );
  }
  const fromOffset = options.fromOffset ?? 0;
  if (!Number.isSafeInteger(fromOffset) || fromOffset < 0)
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `fromOffset must be a safe integer >= 0, got ${fromOffset}`,
    );
  await loadChecksum();
  const bucketDir = layout.bucketDirs[bucket]!;
  let segments = await listSegmentFiles(fs, bucketDir);
  const summary: DumpSummary = {
    bucket,
    dir: bucketDir,
    segmentCount: segments.length,
    batchCount: 0,
    recordCount: 0,
    damageCount: 0,
  };
  let previous = -1;
  // A store open in another process is compacted meanwhile: a segment listed may be gone (swapped
  // for its compacted output) by the time it is read. The segments are then listed again, and the
  // dump goes on from the batch after the last one it showed, in whatever segment now holds it.
  let shownBelow = fromOffset;
  let relisted = 0;
  /** The segment read last, when it was read whole without damage (the chain check needs it). */
  let readWhole: number | undefined;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const next = segments[i + 1];
    if (next !== undefined && next.baseOffset <= shownBelow) continue;
    visit({
      kind: 'segment',
      file: segment.path,
      baseOffset: segment.baseOffset,
      sizeBytes: segment.sizeBytes,
    });
    // Segments chain without a gap, as recovery requires (checked after a segment read whole).
    const chainBreak =
      readWhole === i - 1
        ? segmentChainBreak(
            path.basename(segments[i - 1]!.path),
            previous,
            path.basename(segment.path),
            segment.baseOffset,
          )
        : undefined;
    if (chainBreak !== undefined) {
      summary.damageCount++;
      visit({ kind: 'damage', file: segment.path, position: 0, reason: chainBreak });
    }
    readWhole = undefined;
    let scan: Awaited<ReturnType<typeof scanSegment>>;
    try {
      scan = await scanSegment(
        fs,
        segment.path,
        {
          batchBytesMax: LOG_DEFAULTS.batchBytesMax,
          previousLogOffset: previous,
          baseOffset: segment.baseOffset,
          endBytes: segment.sizeBytes,
        },
        (buf, position, logOffset, sizeBytes, filePosition) => {
          if (logOffset < shownBelow) return;
          shownBelow = logOffset + 1;
          const header = readBatchHeader(buf, position);
          summary.batchCount++;
          visit({
            kind: 'batch',
            file: segment.path,
            position: filePosition,
            logOffset,
            sizeBytes,
            checksum: buf
              .readUInt32LE(position + 5)
              .toString(16)
              .padStart(8, '0'),
            commitTimestampMs: header.commitTimestampMs,
            coordinatorEpoch: header.coordinatorEpoch,
            recordCount: header.recordCount,
          });
          summary.recordCount += visitBatchContent(
            buf,
            position,
            logOffset,
            segment.path,
            filePosition,
            visit,
            summary,
            options.records === true,
          );
        },
      );
    } catch (error) {
      if (!vanished(error) || relisted >= RELISTS_MAX) throw error;
      relisted++;
      segments = await listSegmentFiles(fs, bucketDir);
      previous = -1;
      readWhole = undefined;
      i = -1;
      continue;
    }
    if (scan.damage !== undefined) {
      summary.damageCount++;
      visit({
        kind: 'damage',
        file: segment.path,
        position: scan.damage.position,
        reason: scan.damage.reason,
      });
    } else if (scan.zeroTailBytes > 0 && next !== undefined) {
      summary.damageCount++;
      visit({
        kind: 'damage',
        file: segment.path,
        position: scan.validBytes,
        reason: `${scan.zeroTailBytes} zero bytes at the end of a sealed segment`,
      });
    } else readWhole = i;
    if (scan.lastLogOffset >= 0) previous = scan.lastLogOffset;
  }
  await compareWithManifest(fs, layout, bucket, bucketDir, segments, previous, (reason, file) => {
    summary.damageCount++;
    visit({ kind: 'damage', file, position: 0, reason });
  });
  return summary;
}

/**
 * What store.json says of the bucket against what the dump found, as the next open checks it: the
 * bucket's folder must exist, its first segment start at the log start recorded (unless checkpoints
 * cover what came before), and its log reach the end recorded at the last close or open.
 */
async function compareWithManifest(
  fs: FileSystem,
  layout: Awaited<ReturnType<typeof readStoreLayout>>,
  bucket: number,
  bucketDir: string,
  segments: readonly { baseOffset: number; path: string }[],
  lastLogOffset: number,
  damage: (reason: string, file: string) => void,
): Promise<void> {
  const record = layout.manifest.buckets[bucket];
  if (record === undefined) return;
  // (The FileSystem port's sizeBytes is for files, and its readdir lists a missing folder as empty:
  // the parent's listing tells whether the folder is there.)
  if (!(await fs.readdir(path.dirname(bucketDir))).includes(path.basename(bucketDir))) {
    damage(`the folder of offsets-bucket ${bucket} is missing (store.json records it)`, bucketDir);
    return;
  }
  const first = segments[0];
  const checkpointed = (await fs.readdir(bucketDir)).includes(CHECKPOINT_DIR);
  if (first !== undefined && first.baseOffset > record.logStart && !checkpointed)
    damage(
      `the log starts at ${first.baseOffset}, but store.json records its start at ${record.logStart} and no checkpoint covers what is missing: the segments before it are missing`,
      first.path,
    );
  const end = logEndOf(lastLogOffset, segments.at(-1)?.baseOffset);
  if (end < record.logEnd)
    damage(
      `the log ends at ${end}, shorter than the ${record.logEnd} store.json recorded: batches it held are missing`,
      segments.at(-1)?.path ?? bucketDir,
    );
}

/**
 * Shows the records of the batch at `buf[position]` (with --records), or reads only its record
 * count; a batch that does not decode (a record, or a format this version cannot read) is shown as
 * damage. Returns the records counted.
 */
function visitBatchContent(
  buf: Buffer,
  position: number,
  logOffset: number,
  file: string,
  filePosition: number,
  visit: (entry: DumpEntry) => void,
  summary: DumpSummary,
  records: boolean,
): number {
  let count = 0;
  try {
    if (records) {
      decodeBatchRecords(buf, position, (record) => {
        count++;
        visit(recordEntry(record, logOffset));
      });
    } else {
      checkBatchFormat(buf, position);
      count = readBatchHeader(buf, position).recordCount;
    }
  } catch (error) {
    if (!(error instanceof DecodeError)) throw error;
    summary.damageCount++;
    visit({
      kind: 'damage',
      file,
      position: filePosition + (error.position - position),
      reason: `batch ${logOffset}: ${error.message.replace(/ at byte \d+$/, '')}`,
    });
  }
  return count;
}

function recordEntry(r: DecodedRecord, logOffset: number): DumpRecordEntry {
  const isOffset = r.type === 0;
  const hasValue = isOffset && !r.tombstone;
  return {
    kind: 'record',
    logOffset,
    index: r.index,
    recordType: isOffset ? 'offset-commit' : 'group-snapshot',
    groupId: r.groupId,
    tombstone: r.tombstone,
    tableId: isOffset ? r.tableId : null,
    partitionId: isOffset ? r.partitionId : null,
    bucketId: isOffset ? r.bucketId : null,
    offset: hasValue ? r.offset : null,
    leaderEpoch: hasValue ? r.leaderEpoch : null,
    commitTimestampMs: hasValue ? r.commitTimestampMs : null,
    metadata: hasValue ? r.metadata : null,
    snapshot: isOffset || r.tombstone ? null : r.snapshot,
  };
}
