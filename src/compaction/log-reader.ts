/**
 * Reads one offsets-bucket's log for a compaction job (on a worker, or in-process through the
 * store's port): checked scans of segments as they were when the job was planned, the key map of the
 * log from a given log offset on, and per-segment garbage counts for strategies (LogInspector).
 *
 * Invariants:
 * - Only the bytes captured when the job was planned are read (`SegmentRef.sizeBytes`): appends made
 *   since are not part of the job. Later records can only supersede more, never less, so a map that
 *   misses them is conservative.
 * - Any damage found is CORRUPT_MESSAGE naming the file and position: compaction never repairs.
 * - The key map holds, per key (the record key's bytes as a latin1 string), the log offset of its
 *   newest record at or above `mapFrom`. A record is superseded when the map holds a later log
 *   offset for its key. Keys are unique within a batch (one commit, one snapshot), so a log offset
 *   identifies a key's record.
 */
import { DecodeError, forEachRawRecord, readBatchHeader, type RawRecord } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import { scanSegment } from '../log/index.js';
import type { GarbageQuery, SegmentGarbage } from './strategy.js';

/** One segment file as a job sees it. */
export interface SegmentRef {
  /** Absolute path of the segment file. */
  path: string;
  /** Log offset of its first batch (its file name). */
  baseOffset: number;
  /** Log offset of its last batch, -1 when empty (the active segment may be). */
  lastLogOffset: number;
  /** Bytes to read: the size captured when the job was planned. */
  sizeBytes: number;
}

/** Receives one batch and its header fields; `buf` is reused after return. */
export type BatchReader = (
  buf: Buffer,
  position: number,
  logOffset: number,
  commitTimestampMs: number,
) => void;

/** Checked reads of the segments of one job; see the module comment. */
export class LogReader {
  readonly #fs: FileSystem;
  readonly #batchBytesMax: number;
  /** Every segment, oldest first; the last is the active one. */
  readonly segments: readonly SegmentRef[];
  #map: { mapFrom: number; latest: Map<string, number> } | undefined;
  /** Bytes read so far, over every scan. */
  bytesRead = 0;

  /** `segments` are the whole log as planned, oldest first. */
  constructor(fs: FileSystem, segments: readonly SegmentRef[], batchBytesMax: number) {
    this.#fs = fs;
    this.segments = segments;
    this.#batchBytesMax = batchBytesMax;
  }

  /** Visits every batch of `segment` in order; CORRUPT_MESSAGE on any damage. */
  async scan(segment: SegmentRef, visit: BatchReader): Promise<void> {
    if (segment.sizeBytes === 0) return;
    const index = this.segments.indexOf(segment);
    const previous = index > 0 ? this.segments[index - 1]!.lastLogOffset : -1;
    let filePositionOf = 0;
    try {
      const scan = await scanSegment(
        this.#fs,
        segment.path,
        {
          batchBytesMax: this.#batchBytesMax,
          previousLogOffset: previous,
          baseOffset: segment.baseOffset,
          endBytes: segment.sizeBytes,
        },
        (buf, position, logOffset, _size, filePosition) => {
          filePositionOf = filePosition;
          visit(buf, position, logOffset, readBatchHeader(buf, position).commitTimestampMs);
        },
      );
      if (scan.damage !== undefined || scan.validBytes !== segment.sizeBytes) {
        const where = scan.damage?.position ?? scan.validBytes;
        throw new OffsetStoreError(
          'CORRUPT_MESSAGE',
          `${segment.path} at byte ${where}: ${scan.damage?.reason ?? 'shorter than expected'}`,
        );
      }
    } catch (error) {
      if (error instanceof DecodeError)
        throw new OffsetStoreError(
          'CORRUPT_MESSAGE',
          `${segment.path} at byte ${filePositionOf}: ${error.message}`,
          { cause: error },
        );
      throw error;
    }
    this.bytesRead += segment.sizeBytes;
  }

  /** Visits every record of every batch of `segment`, with its batch's log offset and time. */
  async scanRecords(
    segment: SegmentRef,
    visit: (buf: Buffer, record: RawRecord, logOffset: number, commitTimestampMs: number) => void,
  ): Promise<void> {
    await this.scan(segment, (buf, position, logOffset, commitTimestampMs) => {
      forEachRawRecord(buf, position, (r) => visit(buf, r, logOffset, commitTimestampMs));
    });
  }

  /**
   * The key map of the log from `mapFrom` on (see the module comment), built once per `mapFrom`: a
   * second call with another `mapFrom` builds a new one (the old one is dropped).
   */
  async keyMap(mapFrom: number): Promise<Map<string, number>> {
    if (this.#map?.mapFrom === mapFrom) return this.#map.latest;
    this.#map = undefined;
    const latest = new Map<string, number>();
    for (const segment of this.segments) {
      if (segment.lastLogOffset < mapFrom) continue;
      await this.scan(segment, (buf, position, logOffset) => {
        if (logOffset < mapFrom) return;
        forEachRawRecord(buf, position, (r) =>
          latest.set(buf.toString('latin1', r.keyStart, r.keyEnd), logOffset),
        );
      });
    }
    this.#map = { mapFrom, latest };
    return latest;
  }

  /** The sealed segment with this base offset, or undefined. */
  sealed(baseOffset: number): SegmentRef | undefined {
    const index = this.segments.findIndex((s) => s.baseOffset === baseOffset);
    return index >= 0 && index < this.segments.length - 1 ? this.segments[index] : undefined;
  }

  /** LogInspector.segmentGarbage for this job: `horizonMs` is now - deleteRetentionMs. */
  async segmentGarbage(query: GarbageQuery, horizonMs: number): Promise<SegmentGarbage[]> {
    const sealed = this.segments.slice(0, -1);
    const asked =
      query.segments === undefined
        ? sealed
        : query.segments.map((base) => {
            const segment = this.sealed(base);
            if (segment === undefined)
              throw new OffsetStoreError(
                'INVALID_COMPACTION_PLAN',
                `segmentGarbage: ${base} is not the base offset of a sealed segment`,
              );
            return segment;
          });
    if (asked.length === 0) return [];
    const mapFrom = query.mapFrom ?? asked[0]!.baseOffset;
    if (!Number.isSafeInteger(mapFrom) || mapFrom < 0)
      throw new OffsetStoreError(
        'INVALID_COMPACTION_PLAN',
        `segmentGarbage: mapFrom must be a log offset, got ${String(mapFrom)}`,
      );
    const tombstonesBelow = query.tombstonesBelow ?? Number.POSITIVE_INFINITY;
    const latest = await this.keyMap(mapFrom);
    const results: SegmentGarbage[] = [];
    for (const segment of asked) {
      const g: SegmentGarbage = {
        baseOffset: segment.baseOffset,
        sizeBytes: segment.sizeBytes,
        batches: 0,
        records: 0,
        recordBytes: 0,
        supersededRecords: 0,
        supersededBytes: 0,
        tombstones: 0,
        expiredTombstones: 0,
        expiredTombstoneBytes: 0,
        oldestCommitMs: Number.POSITIVE_INFINITY,
        newestCommitMs: Number.NEGATIVE_INFINITY,
      };
      await this.scan(segment, (buf, position, logOffset, commitTimestampMs) => {
        g.batches++;
        g.oldestCommitMs = Math.min(g.oldestCommitMs, commitTimestampMs);
        g.newestCommitMs = Math.max(g.newestCommitMs, commitTimestampMs);
        forEachRawRecord(buf, position, (r) => {
          const bytes = r.end - r.start;
          g.records++;
          g.recordBytes += bytes;
          const newer = latest.get(buf.toString('latin1', r.keyStart, r.keyEnd));
          const tombstone = r.valueStart === r.end;
          if (tombstone) g.tombstones++;
          if (newer !== undefined && newer > logOffset) {
            g.supersededRecords++;
            g.supersededBytes += bytes;
          } else if (tombstone && commitTimestampMs < horizonMs && logOffset < tombstonesBelow) {
            g.expiredTombstones++;
            g.expiredTombstoneBytes += bytes;
          }
        });
      });
      if (g.batches === 0) {
        g.oldestCommitMs = 0;
        g.newestCommitMs = 0;
      }
      results.push(g);
    }
    return results;
  }
}
