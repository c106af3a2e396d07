/**
 * The engine's rewrite: turns groups of adjacent sealed segments into compacted output segments,
 * deciding alone which records survive. Runs inside a compaction job (worker or in-process).
 *
 * Which records survive, and why that is safe whatever the strategy asked:
 * 1. The key map covers the log from `mapFrom` to the end of the log as planned (log-reader.ts). A
 *    record is dropped as superseded only when the map holds a later record of its key: that later
 *    record is replayed after it, so the state is the same without it. Keeping a record is always
 *    safe, so a map that starts late only leaves garbage behind.
 * 2. A tombstone that nothing supersedes is dropped only when (a) the strategy keeps no checkpoints
 *    (a checkpoint image may still hold the key, and recovery would replay the log over it), (b) its
 *    batch was committed before `horizonMs` (now - deleteRetentionMs), (c) it lies below the plan's
 *    `tombstonesBelow`, and (d) no record of its key remains before it: none in a segment this job
 *    does not rewrite, and, for a tombstone below `mapFrom` (whose key the map does not hold, so
 *    older records of it in the groups are kept), none in the groups either. A tombstone at or above
 *    `mapFrom` is in the map, so every older record of its key in the groups is dropped with it.
 *    Pass (d) reads the log up to the last group only when some tombstone qualifies.
 * 3. Each group's last batch is always kept, emptied of records if none survives, so the outputs of
 *    a group end exactly where the group ends and the log keeps its chain (log-inspection.ts,
 *    rule 2). Batches keep their log offsets, times and epochs (offsets become sparse), re-sealed.
 *
 * Outputs: per group, files named `<base>.log.cleaned`, the first at the group's first base offset,
 * each later one at the log offset after the last batch of the one before, at most segmentBytesMax
 * each (a larger single batch gets a file of its own); each fdatasynced, then the directory fsynced.
 * Nothing here touches a live segment file: the main thread swaps the outputs in.
 */
import * as path from 'node:path';
import {
  BATCH_HEADER_BYTES,
  forEachRawRecord,
  resizeBatch,
  sealBatch,
  type RawRecord,
} from '../codec/index.js';
import type { FileHandle, FileSystem } from '../io/index.js';
import { CLEANED_SUFFIX, segmentFileName, type CleanedSegment } from '../log/index.js';
import type { LogReader, SegmentRef } from './log-reader.js';

/** What the engine rewrites: groups of adjacent sealed segments, and the record rules of the plan. */
export interface RewriteRequest {
  /** Groups of adjacent sealed segments, in log order, none shared (checked by plan-validation.ts). */
  groups: SegmentRef[][];
  /** The key map covers the log from here on. */
  mapFrom: number;
  /** Tombstones committed before this time may be dropped (now - deleteRetentionMs). */
  horizonMs: number;
  /** Tombstones at or above this log offset are kept. */
  tombstonesBelow: number;
  /** Keep every tombstone (the strategy keeps checkpoints). */
  keepTombstones: boolean;
  /** Most bytes per output segment. */
  segmentBytesMax: number;
}

/** What a rewrite did. */
export interface RewriteResult {
  /** Per group, its outputs (oldest first), written and fdatasynced under temporary names. */
  outputs: CleanedSegment[][];
  /** Records read from the groups. */
  recordsRead: number;
  /** Records written to the outputs. */
  recordsKept: number;
  /** Tombstones dropped (rule 2). */
  tombstonesDropped: number;
  /** Bytes of the groups' segments. */
  inputBytes: number;
  /** Bytes written to the outputs. */
  bytesWritten: number;
}

/** Rewrites the groups of `request` (see the module comment). */
export async function rewriteSegments(
  fs: FileSystem,
  dir: string,
  reader: LogReader,
  request: RewriteRequest,
): Promise<RewriteResult> {
  const result: RewriteResult = {
    outputs: [],
    recordsRead: 0,
    recordsKept: 0,
    tombstonesDropped: 0,
    inputBytes: 0,
    bytesWritten: 0,
  };
  if (request.groups.length === 0) return result;
  const latest = await reader.keyMap(request.mapFrom);
  const superseded = (key: string, logOffset: number): boolean => {
    const newer = latest.get(key);
    return newer !== undefined && newer > logOffset;
  };
  const dropped = await droppableTombstones(reader, request, superseded);
  const writer = new OutputWriter(fs, dir, request.segmentBytesMax);
  try {
    await rewriteGroups(reader, request, writer, result, superseded, dropped);
  } catch (error) {
    // Nothing will swap these outputs in: closed and deleted now, not at the next open, since on a
    // full disk their space is what the failure is about.
    await writer.abandon();
    throw error;
  }
  result.bytesWritten = result.outputs.flat().reduce((sum, o) => sum + o.sizeBytes, 0);
  return result;
}

/** Writes every group of `request` through `writer`, counting into `result`. */
async function rewriteGroups(
  reader: LogReader,
  request: RewriteRequest,
  writer: OutputWriter,
  result: RewriteResult,
  superseded: (key: string, logOffset: number) => boolean,
  dropped: Map<string, number>,
): Promise<void> {
  const kept: RawRecord[] = [];
  for (const group of request.groups) {
    writer.beginGroup(group[0]!.baseOffset);
    for (const [i, segment] of group.entries()) {
      result.inputBytes += segment.sizeBytes;
      const rebuilt: { batch: Buffer; logOffset: number }[] = [];
      const last = i === group.length - 1;
      await reader.scan(segment, (buf, position, logOffset) => {
        kept.length = 0;
        forEachRawRecord(buf, position, (r) => {
          result.recordsRead++;
          const key = buf.toString('latin1', r.keyStart, r.keyEnd);
          if (superseded(key, logOffset)) return;
          if (dropped.get(key) === logOffset) {
            result.tombstonesDropped++;
            return;
          }
          kept.push({ ...r });
        });
        result.recordsKept += kept.length;
        if (kept.length > 0 || (last && logOffset === segment.lastLogOffset))
          rebuilt.push({ batch: rebuildBatch(buf, position, logOffset, kept), logOffset });
      });
      await writer.write(rebuilt);
    }
    result.outputs.push(await writer.endGroup());
  }
  await writer.finish();
}

/**
 * Rule 2: the tombstones of the groups that may be dropped, as key -> log offset. Candidates are
 * found in the groups; (d) is then checked against the log up to the last group.
 */
async function droppableTombstones(
  reader: LogReader,
  request: RewriteRequest,
  superseded: (key: string, logOffset: number) => boolean,
): Promise<Map<string, number>> {
  const candidates = new Map<string, number>();
  if (request.keepTombstones) return candidates;
  const groupSegments = new Set(request.groups.flat());
  for (const segment of groupSegments) {
    await reader.scan(segment, (buf, position, logOffset, commitTimestampMs) => {
      if (commitTimestampMs >= request.horizonMs || logOffset >= request.tombstonesBelow) return;
      forEachRawRecord(buf, position, (r) => {
        if (r.valueStart !== r.end) return;
        const key = buf.toString('latin1', r.keyStart, r.keyEnd);
        if (!superseded(key, logOffset)) candidates.set(key, logOffset);
      });
    });
  }
  if (candidates.size === 0) return candidates;
  const lastGroupSegment = request.groups.at(-1)!.at(-1)!;
  for (const segment of reader.segments) {
    if (segment.baseOffset > lastGroupSegment.baseOffset) break;
    const inGroup = groupSegments.has(segment);
    // A group segment can only hold older records that survive for tombstones below mapFrom.
    if (
      inGroup &&
      segment.baseOffset >= request.mapFrom &&
      ![...candidates.values()].some((t) => t < request.mapFrom)
    )
      continue;
    await reader.scan(segment, (buf, position, logOffset) => {
      forEachRawRecord(buf, position, (r) => {
        const key = buf.toString('latin1', r.keyStart, r.keyEnd);
        const tombstoneAt = candidates.get(key);
        if (tombstoneAt === undefined || logOffset >= tombstoneAt) return;
        if (!inGroup || tombstoneAt < request.mapFrom) candidates.delete(key);
      });
    });
  }
  return candidates;
}

/** A copy of the batch at `buf[position]` holding only `kept` records, re-sealed at `logOffset`. */
function rebuildBatch(
  buf: Buffer,
  position: number,
  logOffset: number,
  kept: readonly RawRecord[],
): Buffer {
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

/** Packs rebuilt batches into `.cleaned` output files of at most segmentBytesMax, group by group. */
class OutputWriter {
  readonly #fs: FileSystem;
  readonly #dir: string;
  readonly #segmentBytesMax: number;
  #group: CleanedSegment[] = [];
  #nextBaseOffset = 0;
  #current: { segment: CleanedSegment; handle: FileHandle } | undefined;
  /** Every output file created (for `finish`, and for `abandon` after a failure). */
  readonly #created: string[] = [];

  constructor(fs: FileSystem, dir: string, segmentBytesMax: number) {
    this.#fs = fs;
    this.#dir = dir;
    this.#segmentBytesMax = segmentBytesMax;
  }

  /** Starts the outputs of a group whose first segment begins at `baseOffset`. */
  beginGroup(baseOffset: number): void {
    this.#group = [];
    this.#nextBaseOffset = baseOffset;
  }

  /** Appends rebuilt batches (with their log offsets) in order, rolling at segmentBytesMax. */
  async write(batches: readonly { batch: Buffer; logOffset: number }[]): Promise<void> {
    let run: Buffer[] = [];
    let runBytes = 0;
    for (const { batch, logOffset } of batches) {
      const size = (this.#current?.segment.sizeBytes ?? 0) + runBytes;
      if (
        this.#current === undefined ||
        (size > 0 && size + batch.length > this.#segmentBytesMax)
      ) {
        await this.#writeRun(run, runBytes);
        run = [];
        runBytes = 0;
        await this.#roll();
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

  async #roll(): Promise<void> {
    await this.#closeCurrent();
    const baseOffset = this.#nextBaseOffset;
    const tempPath = path.join(this.#dir, segmentFileName(baseOffset) + CLEANED_SUFFIX);
    this.#current = {
      segment: { baseOffset, tempPath, sizeBytes: 0, lastLogOffset: -1 },
      handle: await this.#fs.open(tempPath, 'w'),
    };
    this.#created.push(tempPath);
  }

  async #closeCurrent(): Promise<void> {
    if (this.#current === undefined) return;
    const { segment, handle } = this.#current;
    this.#current = undefined;
    try {
      await handle.datasync();
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
    await handle.close();
    this.#group.push(segment);
    this.#nextBaseOffset = segment.lastLogOffset + 1;
  }

  /** Closes the group's last output durably; returns the group's outputs. */
  async endGroup(): Promise<CleanedSegment[]> {
    await this.#closeCurrent();
    return this.#group;
  }

  /**
   * After a failure: closes the output being written, if any, and deletes every output created
   * (errors doing so are dropped: the failure is what is reported; a leftover `.cleaned` file is
   * deleted by the log's next open or next compaction).
   */
  async abandon(): Promise<void> {
    const current = this.#current;
    this.#current = undefined;
    await current?.handle.close().catch(() => {});
    for (const tempPath of this.#created.splice(0)) await this.#fs.unlink(tempPath).catch(() => {});
  }

  /** Fsyncs the directory, so the outputs' names are durable. */
  async finish(): Promise<void> {
    if (this.#created.length > 0) await this.#fs.syncDir(this.#dir);
  }
}
