/**
 * The log of one offsets-bucket: an append-only sequence of KvRecordBatches in segment files.
 *
 * Invariants:
 * - Log offsets strictly increase through the segments (consecutive as appended; sparse after
 *   compaction). Only the last (active) segment is ever appended to; the others are sealed.
 * - A batch is acknowledged (its append promise resolves) only once it is durable under the
 *   durability mode: after the fdatasync that covers it ('fsync'), or after its write reached the OS
 *   ('os'). Acknowledgements happen in log-offset order.
 * - After any write, fdatasync or roll failure the log is fail-stopped: that append, everything queued
 *   behind it and every later append reject with LOG_STORAGE_ERROR until the log is reopened, because
 *   a later fdatasync that "succeeds" proves nothing about the pages that failed.
 *
 * Group commit, step by step:
 * 1. `append` validates the size, queues the batch and, if no flush is running, starts one on the
 *    next microtask so that appends made in the same tick join it.
 * 2. A flush takes queued batches up to `flushBytesMax`, assigns consecutive log offsets and seals
 *    them (offset + checksum), splits them where the active segment rolls, and writes each run with
 *    one writev followed by one fdatasync.
 * 3. It resolves the taken appends in order and loops while appends queued up meanwhile.
 *
 * Preallocation: appending to a file changes its size, so every fdatasync of an append also commits
 * the file system's journal, which about doubles its cost (on ext4 on a VM disk: ~450 us against
 * ~240 us for overwriting blocks already written). So when a run would end past the bytes the active
 * segment already has on disk, the same writev also writes zeros after it: between 64 KiB and 1 MiB
 * (a quarter of the segment so far), never past `segmentBytesMax`. The run's one fdatasync makes the
 * zeros durable with it, and later runs overwrite zeros in place. The zero tail is not part of the
 * log: a scan stops at the first batch boundary followed only by zeros (segment-scanner.ts), and
 * only the active segment may have one. A roll and a clean close cut the segment back to its last
 * batch before anything else happens, so sealed segments end exactly at their last batch. When the
 * disk has no room for the zeros (ENOSPC from the writev), the batches are written alone and the
 * segment is not preallocated any more: a nearly full disk costs speed, not availability.
 *
 * Recovery (DESIGN.md 3.3) is `Log.open`: every segment is scanned and checked; damage at the tail of
 * the last segment with no valid batch after it is a torn write and is truncated (and reported), and
 * so is a write round a power loss kept only some sectors of (segment-scanner.ts, TailDamage);
 * damage anywhere else, and a zero tail in a sealed segment, refuses to open with CORRUPT_MESSAGE
 * naming the file and byte position. A zero tail of the last segment is kept as its preallocation.
 */
import * as path from 'node:path';
import { DecodeError, readBatchLogOffset, sealBatch } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import type { FileHandle, FileSystem } from '../io/index.js';
import { classifyTailDamage, scanSegment, type BatchVisitor } from './segment-scanner.js';
import { parseSegmentFileName, segmentFileName } from './segment-name.js';
import { completeInterruptedSwap, swapSegments, type CleanedSegment } from './segment-swap.js';

/** When an append is acknowledged. */
export type Durability = 'fsync' | 'os';

/** Options of one log. */
export interface LogOptions {
  fs: FileSystem;
  dir: string;
  durability: Durability;
  segmentBytesMax: number;
  /** Largest batch accepted (bytes, including its length field). */
  batchBytesMax: number;
  /** Most appends queued or in flight; beyond it appends reject with TOO_MANY_PENDING_WRITES. */
  pendingAppendsMax: number;
  /** Most bytes written by one flush round. */
  flushBytesMax: number;
}

/** Default limits. */
export const LOG_DEFAULTS = {
  segmentBytesMax: 64 * 1024 * 1024,
  batchBytesMax: 8 * 1024 * 1024,
  pendingAppendsMax: 65_536,
  flushBytesMax: 16 * 1024 * 1024,
} as const;

/** Zeros written after a run that ends past the active segment's allocated bytes: bounds. */
const PREALLOCATE_BYTES_MIN = 64 * 1024;
const PREALLOCATE_BYTES_MAX = 1024 * 1024;
let zeros: Buffer | undefined;

/** Read-only zeros for preallocation (one shared buffer). */
function zeroBytes(length: number): Buffer {
  zeros ??= Buffer.alloc(PREALLOCATE_BYTES_MAX);
  return zeros.subarray(0, length);
}

/** Replays the recovered log from `fromLogOffset` into the caller's state. */
export interface LogReplay {
  fromLogOffset: number;
  visit: BatchVisitor;
}

/** What recovery found. */
export interface LogRecoveryReport {
  segmentCount: number;
  batchCount: number;
  batchesReplayed: number;
  /** Bytes cut off a torn tail (0 when the log ended cleanly). */
  bytesTruncated: number;
  /** Base offset of the first segment (0 for a log that never lost a prefix). */
  firstLogOffset: number;
  /** The log end before `minNextOffset` is applied: after the last batch, or the empty last segment's base. */
  logEndOffset: number;
  tornTail?: { file: string; position: number; reason: string };
}

/** A segment as the log tracks it. */
export interface SegmentInfo {
  baseOffset: number;
  path: string;
  sizeBytes: number;
  /** Log offset of its last batch, -1 when empty. */
  lastLogOffset: number;
}

interface PendingAppend {
  batch: Buffer;
  /** Resolved (durable) already; a later failure of its round must not reject it. */
  settled?: boolean;
  resolve: (logOffset: number) => void;
  reject: (error: unknown) => void;
}

/** One offsets-bucket's append-only log. */
export class Log {
  readonly #options: LogOptions;
  readonly #segments: SegmentInfo[];
  #active: FileHandle;
  /** Size of the active segment's file: its batches, then zeros (preallocation). */
  #activeFileBytes: number;
  /** A preallocation of the active segment failed for lack of space: none until the next segment. */
  #preallocationRefused = false;
  #nextOffset: number;
  #queue: PendingAppend[] = [];
  #inFlightCount = 0;
  #flushing: Promise<void> | undefined;
  #failure: OffsetStoreError | undefined;
  #closed = false;

  private constructor(options: LogOptions, segments: SegmentInfo[], active: FileHandle, activeFileBytes: number, nextOffset: number) {
    this.#options = options;
    this.#segments = segments;
    this.#active = active;
    this.#activeFileBytes = activeFileBytes;
    this.#nextOffset = nextOffset;
  }

  /**
   * Opens (creating if needed) the log in `options.dir`, validating every segment and truncating a
   * torn tail. `replay` receives every batch at or above its `fromLogOffset`; `minNextOffset` keeps a
   * log whose segments were all removed (below a checkpoint) from reusing log offsets.
   */
  static async open(options: LogOptions, replay?: LogReplay, minNextOffset = 0): Promise<{ log: Log; report: LogRecoveryReport }> {
    const { fs, dir } = options;
    await fs.mkdir(dir);
    await completeInterruptedSwap(fs, dir);
    const segments = await listSegments(fs, dir);
    const report: LogRecoveryReport = { segmentCount: segments.length, batchCount: 0, batchesReplayed: 0, bytesTruncated: 0, firstLogOffset: segments[0]?.baseOffset ?? 0, logEndOffset: 0 };
    let previous = -1;
    let lastFileBytes = 0;
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]!;
      const isLast = i === segments.length - 1;
      const scan = await scanSegment(fs, segment.path, { batchBytesMax: options.batchBytesMax, previousLogOffset: previous, baseOffset: segment.baseOffset }, (buf, position, logOffset, sizeBytes, filePosition) => {
        if (replay === undefined || logOffset < replay.fromLogOffset) return;
        try {
          replay.visit(buf, position, logOffset, sizeBytes, filePosition);
        } catch (error) {
          if (error instanceof DecodeError) throw corrupt(segment.path, filePosition, `batch ${logOffset}: ${error.message}`, error);
          throw error;
        }
        report.batchesReplayed++;
      });
      report.batchCount += scan.batchCount;
      segment.sizeBytes = scan.validBytes;
      segment.lastLogOffset = scan.lastLogOffset;
      lastFileBytes = scan.validBytes + scan.zeroTailBytes;
      if (scan.zeroTailBytes > 0 && !isLast) {
        throw corrupt(segment.path, scan.validBytes, `${scan.zeroTailBytes} zero bytes at the end of a sealed segment (only the active segment is preallocated)`);
      }
      if (scan.damage !== undefined) {
        const { position, reason } = scan.damage;
        const lastValid = scan.lastLogOffset >= 0 ? scan.lastLogOffset : previous;
        if (!isLast) throw corrupt(segment.path, position, reason);
        const damage = await classifyTailDamage(fs, segment.path, scan.fileBytes, position, lastValid, options);
        if (damage.kind === 'corrupt') throw corrupt(segment.path, position, `${reason}; ${damage.batchesAfter} valid batch(es) follow`);
        await truncateFile(fs, segment.path, scan.validBytes);
        lastFileBytes = scan.validBytes;
        report.bytesTruncated += scan.fileBytes - scan.validBytes;
        report.tornTail = {
          file: segment.path, position,
          reason: damage.kind === 'torn' ? reason : `${reason}; a write round cut short by a crash (a lost sector, then ${damage.batchesAfter} batch(es) of the same unsynced round, never acknowledged)`,
        };
      }
      if (scan.lastLogOffset >= 0) previous = scan.lastLogOffset;
    }
    const lastSegment = segments.at(-1);
    report.logEndOffset = Math.max(previous + 1, lastSegment?.baseOffset ?? 0);
    let nextOffset = Math.max(previous + 1, minNextOffset, lastSegment?.baseOffset ?? 0);
    if (lastSegment === undefined || (lastSegment.sizeBytes === 0 && lastSegment.baseOffset !== nextOffset)) {
      // A fresh log, or an empty last segment named below the offsets a checkpoint already covers.
      if (lastSegment !== undefined) {
        await fs.unlink(lastSegment.path);
        segments.pop();
      }
      segments.push(await createSegment(fs, dir, nextOffset));
      lastFileBytes = 0;
    }
    nextOffset = Math.max(nextOffset, segments.at(-1)!.baseOffset);
    const active = await fs.open(segments.at(-1)!.path, 'r+');
    // What a crashed process wrote but never synced may still be only in the page cache: sync it now,
    // so that after a later power loss only the round in flight then can be damaged (TailDamage).
    try {
      await active.datasync();
    } catch (error) {
      await active.close();
      throw error;
    }
    return { log: new Log(options, segments, active, lastFileBytes, nextOffset), report };
  }

  /** The log offset the next appended batch gets (the log end offset). */
  get nextOffset(): number {
    return this.#nextOffset;
  }

  /** True once a storage failure has fail-stopped this log. */
  get failed(): boolean {
    return this.#failure !== undefined;
  }

  /** The log's directory. */
  get dir(): string {
    return this.#options.dir;
  }

  /** A copy of the segment list, oldest first; the last one is active. */
  segments(): SegmentInfo[] {
    return this.#segments.map((s) => ({ ...s }));
  }

  /** Total bytes of all segments. */
  get sizeBytes(): number {
    let total = 0;
    for (const s of this.#segments) total += s.sizeBytes;
    return total;
  }

  /**
   * Appends one unsealed batch; resolves with its log offset once it is durable. The batch buffer is
   * sealed in place and must not be modified afterwards.
   */
  append(batch: Buffer): Promise<number> {
    const refusal = this.#refusal(batch);
    if (refusal !== undefined) return Promise.reject(refusal);
    return new Promise<number>((resolve, reject) => {
      this.#queue.push({ batch, resolve, reject });
      if (this.#flushing === undefined) this.#flushing = this.#flushLoop();
    });
  }

  #refusal(batch: Buffer): OffsetStoreError | undefined {
    if (this.#closed) return new OffsetStoreError('STORE_CLOSED', `log ${this.#options.dir} is closed`);
    if (this.#failure !== undefined) return this.#failure;
    if (batch.length > this.#options.batchBytesMax) {
      return new OffsetStoreError('INVALID_REQUEST', `batch of ${batch.length} bytes exceeds the limit of ${this.#options.batchBytesMax} bytes`);
    }
    if (this.#queue.length + this.#inFlightCount >= this.#options.pendingAppendsMax) {
      return new OffsetStoreError('TOO_MANY_PENDING_WRITES', `${this.#options.pendingAppendsMax} appends already pending on ${this.#options.dir}`);
    }
    return undefined;
  }

  async #flushLoop(): Promise<void> {
    await Promise.resolve();
    try {
      while (this.#queue.length > 0 && this.#failure === undefined) {
        const taken = this.#takeRound();
        try {
          await this.#writeRound(taken);
        } catch (error) {
          this.#failStop(error, taken.filter((entry) => !entry.settled));
          return;
        } finally {
          this.#inFlightCount -= taken.length;
        }
      }
    } finally {
      this.#flushing = undefined;
    }
  }

  #takeRound(): PendingAppend[] {
    let bytes = 0;
    let count = 0;
    while (count < this.#queue.length && (count === 0 || bytes + this.#queue[count]!.batch.length <= this.#options.flushBytesMax)) {
      bytes += this.#queue[count]!.batch.length;
      count++;
    }
    const taken = this.#queue.splice(0, count);
    this.#inFlightCount += taken.length;
    for (const entry of taken) sealBatch(entry.batch, this.#nextOffset++);
    return taken;
  }

  /** Writes a round as runs, one per segment it touches; each run is acknowledged once durable. */
  async #writeRound(taken: PendingAppend[]): Promise<void> {
    let run: PendingAppend[] = [];
    let runBytes = 0;
    for (const entry of taken) {
      const active = this.#segments.at(-1)!;
      if (active.sizeBytes + runBytes > 0 && active.sizeBytes + runBytes + entry.batch.length > this.#options.segmentBytesMax) {
        await this.#writeRun(run, runBytes);
        run = [];
        runBytes = 0;
        await this.#roll(readBatchLogOffset(entry.batch));
      }
      run.push(entry);
      runBytes += entry.batch.length;
    }
    await this.#writeRun(run, runBytes);
  }

  /**
   * Writes one run at the end of the active segment and makes it durable, then acknowledges it. If
   * the write or fdatasync fails, the segment is cut back to where the run started (best effort), so
   * that the rejected batches do not come back when the log is reopened.
   */
  async #writeRun(run: PendingAppend[], runBytes: number): Promise<void> {
    if (run.length === 0) return;
    const active = this.#segments.at(-1)!;
    const startBytes = active.sizeBytes;
    const endBytes = startBytes + runBytes;
    const batches = run.map((entry) => entry.batch);
    let preallocateBytes = endBytes > this.#activeFileBytes ? this.#preallocationAfter(endBytes) : 0;
    try {
      try {
        await this.#active.writev(preallocateBytes > 0 ? [...batches, zeroBytes(preallocateBytes)] : batches, startBytes);
      } catch (error) {
        if (preallocateBytes === 0 || (error as NodeJS.ErrnoException | null)?.code !== 'ENOSPC') throw error;
        // The disk has room for the batches perhaps, but not for the zeros: drop whatever reached
        // past the old file end, stop preallocating this segment, and write the batches alone (they
        // rewrite every byte the failed write may have changed before the old end).
        await this.#active.truncate(Math.max(startBytes, this.#activeFileBytes));
        this.#preallocationRefused = true;
        preallocateBytes = 0;
        await this.#active.writev(batches, startBytes);
      }
      if (this.#options.durability === 'fsync') await this.#active.datasync();
    } catch (error) {
      throw await this.#cutBack(startBytes, error);
    }
    this.#activeFileBytes = Math.max(this.#activeFileBytes, endBytes + preallocateBytes);
    active.sizeBytes = endBytes;
    active.lastLogOffset = readBatchLogOffset(run.at(-1)!.batch);
    for (const entry of run) {
      entry.settled = true;
      entry.resolve(readBatchLogOffset(entry.batch));
    }
  }

  /** Zeros to write after a run that ends at `endBytes`, past the active segment's file end. */
  #preallocationAfter(endBytes: number): number {
    if (this.#preallocationRefused) return 0;
    const wanted = Math.min(PREALLOCATE_BYTES_MAX, Math.max(PREALLOCATE_BYTES_MIN, Math.floor(endBytes / 4)));
    return Math.max(0, Math.min(wanted, this.#options.segmentBytesMax - endBytes));
  }

  /** Truncates the active segment to `sizeBytes` after a failed write; returns the error to raise. */
  async #cutBack(sizeBytes: number, error: unknown): Promise<unknown> {
    try {
      this.#activeFileBytes = sizeBytes;
      await this.#active.truncate(sizeBytes);
      await this.#active.datasync();
      return error;
    } catch (cutError) {
      return new OffsetStoreError('LOG_STORAGE_ERROR', `${(error as Error).message}; cutting the segment back to ${sizeBytes} bytes failed too: ${(cutError as Error).message}`, { cause: error });
    }
  }

  /** Seals the active segment (made durable whatever the mode) and starts one at `baseOffset`. */
  async #roll(baseOffset: number): Promise<void> {
    // The cut is durable before the next segment exists: a sealed segment never has a zero tail.
    await this.#cutPreallocation();
    await this.#active.datasync();
    const segment = await createSegment(this.#options.fs, this.#options.dir, baseOffset);
    const handle = await this.#options.fs.open(segment.path, 'r+');
    await this.#active.close();
    this.#active = handle;
    this.#activeFileBytes = 0;
    this.#preallocationRefused = false;
    this.#segments.push(segment);
  }

  /** Cuts the active segment's zero tail off (not yet durable: the caller's fdatasync makes it so). */
  async #cutPreallocation(): Promise<void> {
    const sizeBytes = this.#segments.at(-1)!.sizeBytes;
    if (this.#activeFileBytes === sizeBytes) return;
    await this.#active.truncate(sizeBytes);
    this.#activeFileBytes = sizeBytes;
  }

  #failStop(error: unknown, taken: PendingAppend[]): void {
    const failure = new OffsetStoreError('LOG_STORAGE_ERROR', `write to ${this.#options.dir} failed; the log accepts no more writes until reopened: ${(error as Error).message}`, { cause: error });
    this.#failure = failure;
    const queued = this.#queue;
    this.#queue = [];
    for (const entry of [...taken, ...queued]) entry.reject(failure);
  }

  /**
   * Visits every batch with a log offset at or above `fromLogOffset`, in order, as of the moment the
   * scan reaches each segment. Damage is reported as CORRUPT_MESSAGE.
   */
  async scan(fromLogOffset: number, visit: BatchVisitor): Promise<void> {
    const segments = this.segments();
    let previous = -1;
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]!;
      const next = segments[i + 1];
      if (next !== undefined && next.baseOffset <= fromLogOffset) {
        previous = segment.lastLogOffset;
        continue;
      }
      const scan = await scanSegment(this.#options.fs, segment.path, { batchBytesMax: this.#options.batchBytesMax, previousLogOffset: previous, baseOffset: segment.baseOffset, endBytes: segment.sizeBytes }, (buf, position, logOffset, sizeBytes, filePosition) => {
        if (logOffset >= fromLogOffset) visit(buf, position, logOffset, sizeBytes, filePosition);
      });
      if (scan.damage !== undefined) throw corrupt(segment.path, scan.damage.position, scan.damage.reason);
      if (scan.lastLogOffset >= 0) previous = scan.lastLogOffset;
    }
  }

  /** The sealed segments, oldest first (every segment but the active one). */
  sealedSegments(): SegmentInfo[] {
    return this.#segments.slice(0, -1).map((s) => ({ ...s }));
  }

  /**
   * Replaces the sealed segments `inputs` (contiguous, unchanged since they were read) by cleaned
   * segments already written and fdatasynced under temporary names. Crash-safe: see segment-swap.ts.
   */
  async replaceSegments(inputs: readonly SegmentInfo[], outputs: readonly CleanedSegment[]): Promise<void> {
    this.#checkWritable();
    const first = this.#segments.findIndex((s) => s.baseOffset === inputs[0]?.baseOffset);
    const current = first < 0 ? [] : this.#segments.slice(first, first + inputs.length);
    const unchanged = current.length === inputs.length && first + inputs.length < this.#segments.length
      && current.every((s, i) => s.baseOffset === inputs[i]!.baseOffset && s.sizeBytes === inputs[i]!.sizeBytes);
    if (!unchanged) throw new OffsetStoreError('INVALID_REQUEST', `segments of ${this.#options.dir} changed while they were compacted`);
    await swapSegments(this.#options.fs, this.#options.dir, inputs.map((s) => path.basename(s.path)), outputs);
    const replaced: SegmentInfo[] = outputs.map((o) => ({ baseOffset: o.baseOffset, path: path.join(this.#options.dir, segmentFileName(o.baseOffset)), sizeBytes: o.sizeBytes, lastLogOffset: o.lastLogOffset }));
    this.#segments.splice(first, inputs.length, ...replaced);
  }

  /**
   * Deletes the sealed segments whose batches all lie below `logOffset` (they are covered by a
   * durable checkpoint); returns the bytes freed.
   */
  async deleteSegmentsBelow(logOffset: number): Promise<number> {
    this.#checkWritable();
    let count = 0;
    while (count < this.#segments.length - 1) {
      const next = this.#segments[count + 1]!;
      if (next.baseOffset > logOffset) break;
      count++;
    }
    if (count === 0) return 0;
    const doomed = this.#segments.slice(0, count);
    await swapSegments(this.#options.fs, this.#options.dir, doomed.map((s) => path.basename(s.path)), []);
    this.#segments.splice(0, count);
    return doomed.reduce((sum, s) => sum + s.sizeBytes, 0);
  }

  #checkWritable(): void {
    if (this.#closed) throw new OffsetStoreError('STORE_CLOSED', `log ${this.#options.dir} is closed`);
    if (this.#failure !== undefined) throw this.#failure;
  }

  /** Waits for every queued append to be written and acknowledged (or rejected). */
  async drain(): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing;
  }

  /** Flushes queued appends, makes everything durable, and closes; later appends get STORE_CLOSED. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.drain();
    try {
      if (this.#failure === undefined) {
        await this.#cutPreallocation();
        await this.#active.datasync();
      }
    } finally {
      await this.#active.close();
    }
  }
}

function corrupt(file: string, position: number, reason: string, cause?: unknown): OffsetStoreError {
  return new OffsetStoreError('CORRUPT_MESSAGE', `${file} at byte ${position}: ${reason}`, { cause });
}

async function listSegments(fs: FileSystem, dir: string): Promise<SegmentInfo[]> {
  const segments: SegmentInfo[] = [];
  for (const name of await fs.readdir(dir)) {
    const baseOffset = parseSegmentFileName(name);
    if (baseOffset !== undefined) segments.push({ baseOffset, path: path.join(dir, name), sizeBytes: 0, lastLogOffset: -1 });
  }
  return segments.sort((a, b) => a.baseOffset - b.baseOffset);
}

async function createSegment(fs: FileSystem, dir: string, baseOffset: number): Promise<SegmentInfo> {
  const segmentPath = path.join(dir, segmentFileName(baseOffset));
  const handle = await fs.open(segmentPath, 'wx');
  await handle.close();
  await fs.syncDir(dir);
  return { baseOffset, path: segmentPath, sizeBytes: 0, lastLogOffset: -1 };
}

async function truncateFile(fs: FileSystem, filePath: string, sizeBytes: number): Promise<void> {
  const handle = await fs.open(filePath, 'r+');
  try {
    await handle.truncate(sizeBytes);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

