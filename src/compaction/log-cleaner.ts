/**
 * The log cleaner (Kafka-style), run inside a compaction worker: rewrites the sealed segments of one
 * offsets-bucket keeping, per key, only the record with the highest (log offset, record index) in
 * the whole log, and tombstones younger than the delete horizon.
 *
 * 1. Pass 1 reads every segment, sealed and the active one up to the size captured when the job was
 *    planned, and maps each key to the ordinal (position in log order) of its latest record.
 * 2. Pass 2 rereads the sealed segments in the same order; a record is kept when its ordinal is the
 *    key's latest and it is not a tombstone older than the horizon. Each batch with kept records is
 *    rewritten with its original log offset, time and epoch (offsets become sparse), re-sealed, and
 *    packed into outputs of at most segmentBytesMax.
 *    The outputs keep the log's chain (log-inspection.ts, rule 2), by which recovery notices a
 *    missing segment: the first output is named by the base offset of the first input, each later
 *    one by the log offset after the last batch of the one before, and the last batch of the inputs
 *    is always kept, emptied of records if none of them is kept, so the outputs end right before
 *    the segment that follows the inputs.
 * 3. Outputs are written under `.cleaned` names and fdatasynced, and the directory fsynced; the
 *    caller swaps them in (log/segment-swap.ts). Nothing here touches a live segment file.
 * Any damage found while reading aborts the job with CORRUPT_MESSAGE: a cleaner never "repairs".
 */
import * as path from 'node:path';
import {
  BATCH_HEADER_BYTES, DecodeError, forEachRawRecord, readBatchHeader, resizeBatch, sealBatch, type RawRecord,
} from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import type { FileHandle, FileSystem } from '../io/index.js';
import { CLEANED_SUFFIX, scanSegment, segmentFileName, type CleanedSegment } from '../log/index.js';

/** One segment file as the job sees it. */
export interface SegmentRef {
  /** Absolute path of the segment file. */
  path: string;
  /** Log offset of its first batch (its file name). */
  baseOffset: number;
  /** Bytes of batches to read: the size captured when the job was planned, so later appends are not read. */
  sizeBytes: number;
}

/** A log-cleaner job: plain data, so it crosses to a worker thread. */
export interface CleanJob {
  /** The offsets-bucket's log directory, where the `.cleaned` outputs are written. */
  dir: string;
  /** Sealed segments to rewrite, oldest first. */
  inputs: SegmentRef[];
  /** Later segments (the active one) read only to learn which keys have newer records. */
  tail: SegmentRef[];
  /** Tombstones whose batch was committed before this time are dropped. */
  deleteHorizonMs: number;
  /** Most bytes per output segment. */
  segmentBytesMax: number;
  /** Largest batch accepted while reading; a larger length is damage (CORRUPT_MESSAGE). */
  batchBytesMax: number;
}

/** What a clean produced. */
export interface CleanResult {
  /**
   * The cleaned segments, written and fdatasynced under temporary names, oldest first, for
   * Log.replaceSegments.
   */
  outputs: CleanedSegment[];
  /** Records read from the inputs. */
  recordsRead: number;
  /** Records written to the outputs. */
  recordsKept: number;
  /** Tombstones dropped for being older than the delete horizon. */
  tombstonesDropped: number;
  /** Bytes of the inputs and the tail the job covered (the sizes captured when it was planned). */
  bytesRead: number;
  /** Bytes written to the outputs. */
  bytesWritten: number;
}

/** Runs a log-cleaner job (see the module comment). */
export async function cleanSegments(fs: FileSystem, job: CleanJob): Promise<CleanResult> {
  const latest = new Map<string, number>();
  let ordinal = 0;
  let bytesRead = 0;
  let previous = -1;
  for (const segment of [...job.inputs, ...job.tail]) {
    previous = await scanChecked(fs, segment, previous, job.batchBytesMax, (buf, position) => {
      forEachRawRecord(buf, position, (r) => latest.set(buf.toString('latin1', r.keyStart, r.keyEnd), ordinal++));
    });
    bytesRead += segment.sizeBytes;
  }
  const writer = new OutputWriter(fs, job.dir, job.segmentBytesMax);
  const result: CleanResult = { outputs: [], recordsRead: 0, recordsKept: 0, tombstonesDropped: 0, bytesRead, bytesWritten: 0 };
  ordinal = 0;
  previous = -1;
  const kept: RawRecord[] = [];
  let firstBaseOffset: number | undefined;
  /** The header of the last batch read: the inputs' last batch is kept (see the module comment). */
  const lastHeader = Buffer.alloc(BATCH_HEADER_BYTES);
  for (const [i, segment] of job.inputs.entries()) {
    const rebuilt: { batch: Buffer; logOffset: number }[] = [];
    previous = await scanChecked(fs, segment, previous, job.batchBytesMax, (buf, position) => {
      buf.copy(lastHeader, 0, position, position + BATCH_HEADER_BYTES);
      const header = readBatchHeader(buf, position);
      const dropTombstones = header.commitTimestampMs < job.deleteHorizonMs;
      kept.length = 0;
      forEachRawRecord(buf, position, (r) => {
        result.recordsRead++;
        const isLatest = latest.get(buf.toString('latin1', r.keyStart, r.keyEnd)) === ordinal++;
        if (!isLatest) return;
        if (dropTombstones && r.valueStart === r.end) {
          result.tombstonesDropped++;
          return;
        }
        kept.push({ ...r });
      });
      if (kept.length > 0) {
        result.recordsKept += kept.length;
        rebuilt.push({ batch: rebuildBatch(buf, position, header.logOffset, kept), logOffset: header.logOffset });
      }
    });
    if (i === job.inputs.length - 1 && rebuilt.at(-1)?.logOffset !== previous) {
      rebuilt.push({ batch: rebuildBatch(lastHeader, 0, previous, []), logOffset: previous });
    }
    firstBaseOffset ??= segment.baseOffset;
    await writer.write(rebuilt, firstBaseOffset);
  }
  result.outputs = await writer.finish();
  result.bytesWritten = result.outputs.reduce((sum, o) => sum + o.sizeBytes, 0);
  return result;
}

async function scanChecked(fs: FileSystem, segment: SegmentRef, previous: number, batchBytesMax: number, visit: (buf: Buffer, position: number) => void): Promise<number> {
  let filePositionOf = 0;
  try {
    const scan = await scanSegment(fs, segment.path, { batchBytesMax, previousLogOffset: previous, baseOffset: segment.baseOffset, endBytes: segment.sizeBytes }, (buf, position, _logOffset, _size, filePosition) => {
      filePositionOf = filePosition;
      visit(buf, position);
    });
    if (scan.damage !== undefined || scan.validBytes !== segment.sizeBytes) {
      const where = scan.damage?.position ?? scan.validBytes;
      throw new OffsetStoreError('CORRUPT_MESSAGE', `${segment.path} at byte ${where}: ${scan.damage?.reason ?? 'shorter than expected'}`);
    }
    return scan.lastLogOffset >= 0 ? scan.lastLogOffset : previous;
  } catch (error) {
    if (error instanceof DecodeError) throw new OffsetStoreError('CORRUPT_MESSAGE', `${segment.path} at byte ${filePositionOf}: ${error.message}`, { cause: error });
    throw error;
  }
}

/** A copy of the batch at `buf[position]` holding only `kept` records, re-sealed at `logOffset`. */
function rebuildBatch(buf: Buffer, position: number, logOffset: number, kept: readonly RawRecord[]): Buffer {
  let sizeBytes = BATCH_HEADER_BYTES;
  for (const r of kept) sizeBytes += r.end - r.start;
  const out = Buffer.allocUnsafe(sizeBytes);
  buf.copy(out, 0, position, position + BATCH_HEADER_BYTES);
  resizeBatch(out, sizeBytes, kept.length);
  let p = BATCH_HEADER_BYTES;
  for (const r of kept) p += buf.copy(out, p, r.start, r.end);
  sealBatch(out, logOffset);
  return out;
}

/** Packs rebuilt batches into `.cleaned` output files of at most segmentBytesMax. */
class OutputWriter {
  readonly #fs: FileSystem;
  readonly #dir: string;
  readonly #segmentBytesMax: number;
  readonly #done: CleanedSegment[] = [];
  #current: { segment: CleanedSegment; handle: FileHandle } | undefined;

  constructor(fs: FileSystem, dir: string, segmentBytesMax: number) {
    this.#fs = fs;
    this.#dir = dir;
    this.#segmentBytesMax = segmentBytesMax;
  }

  /**
   * Appends rebuilt batches (with their log offsets) in order; the first output is named by
   * `firstBaseOffset`, each later one by the log offset after the last batch of the one before.
   */
  async write(batches: readonly { batch: Buffer; logOffset: number }[], firstBaseOffset: number): Promise<void> {
    let run: Buffer[] = [];
    let runBytes = 0;
    for (const { batch, logOffset } of batches) {
      const size = (this.#current?.segment.sizeBytes ?? 0) + runBytes;
      if (this.#current === undefined || (size > 0 && size + batch.length > this.#segmentBytesMax)) {
        await this.#writeRun(run, runBytes);
        run = [];
        runBytes = 0;
        const before = this.#current?.segment ?? this.#done.at(-1);
        await this.#roll(before === undefined ? firstBaseOffset : before.lastLogOffset + 1);
      }
      run.push(batch);
      runBytes += batch.length;
      this.#current!.segment.lastLogOffset = logOffset;
    }
    await this.#writeRun(run, runBytes);
  }

  async #writeRun(run: Buffer[], runBytes: number): Promise<void> {
    if (run.length === 0 || this.#current === undefined) return;
    await this.#current.handle.writev(run, this.#current.segment.sizeBytes);
    this.#current.segment.sizeBytes += runBytes;
  }

  async #roll(baseOffset: number): Promise<void> {
    await this.#closeCurrent();
    const tempPath = path.join(this.#dir, segmentFileName(baseOffset) + CLEANED_SUFFIX);
    this.#current = { segment: { baseOffset, tempPath, sizeBytes: 0, lastLogOffset: -1 }, handle: await this.#fs.open(tempPath, 'w') };
  }

  async #closeCurrent(): Promise<void> {
    if (this.#current === undefined) return;
    const { segment, handle } = this.#current;
    this.#current = undefined;
    await handle.datasync();
    await handle.close();
    this.#done.push(segment);
  }

  /** Closes the last output durably and fsyncs the directory; returns every output. */
  async finish(): Promise<CleanedSegment[]> {
    await this.#closeCurrent();
    if (this.#done.length > 0) await this.#fs.syncDir(this.#dir);
    return this.#done;
  }
}
