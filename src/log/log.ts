/**
 * The log of one offsets-bucket: an append-only sequence of KvRecordBatches in segment files.
 *
 * Invariants:
 * - Log offsets strictly increase through the segments (consecutive as appended; sparse after
 *   compaction). Only the last (active) segment is ever appended to; the others are sealed.
 * - A batch is acknowledged (its append promise resolves) only once it is durable under the
 *   durability mode: after the fdatasync that covers it ('fsync'), or after its write reached the OS
 *   ('os'). Acknowledgements happen in log-offset order. A segment's first batches are acknowledged
 *   only once durable in either mode, and once the store recorded that the log reaches them
 *   (onSegmentStarted): a segment file lost later is then missed by every open, not taken for a
 *   shorter log.
 * - A segment file removed from the folder while the log runs fail-stops it as soon as it is seen
 *   (at the next roll, when a compaction fails on the log's files, or at the store's next retention
 *   pass): commits acknowledged into a file that lives on only in a descriptor would be lost to
 *   every later open.
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
 * 3. It resolves the taken appends in order and loops while appends queued up meanwhile. Before it
 *    takes the next round it lets the callers it just acknowledged run (a few microtask turns,
 *    ACKNOWLEDGED_TURNS): a caller that commits again as soon as its commit is durable then joins
 *    that round rather than the one after it. Without this, concurrent committers split into two
 *    cohorts that alternate, each round carrying half of them (64 committers over 16 logs: ~2
 *    commits per fdatasync instead of ~4), which doubles the rounds the event loop pays for.
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
 * Preparing the next segment: growing the active segment in place costs the round that does it a
 * write of zeros and a journal commit (~1-2 ms every 16 rounds of a busy log, the largest part of
 * the mean commit time). So once the active segment holds PREPARE_AT_BYTES, and the log's last
 * PREPARE_AFTER_OWN_ROUNDS rounds were made durable by its own fdatasync, the next segment's file
 * is written ahead, off the commit path: zeros of twice the active segment's file size (at least
 * PREPARED_BYTES_MIN, at most segmentBytesMax; the file, not the batches in it so far, so that each
 * prepared segment doubles the one before), fdatasynced, under a temporary name (a `.tmp`
 * file, deleted by recovery if a crash leaves it). When a round would then grow the active segment,
 * the log rolls into the prepared file instead (renamed to the new segment's name, its directory
 * fsynced), where every later round overwrites zeros in place. Segments so grow 1, 2, 4, ... MiB up
 * to segmentBytesMax, and a quiet log never prepares anything; nor does a log in durability 'os'
 * or one whose rounds the commit journal makes durable (below), whose own file no round fdatasyncs.
 *
 * The commit journal (commit-journal.ts, durability 'fsync'): a run is handed to the store's journal
 * instead of being written and fdatasynced here. When other logs have runs ready in the same turn,
 * the journal writes them all to its file, has each log write its own copy (this log's `writev`,
 * preallocation included), and makes the round durable with one fdatasync of its file; this log's
 * file is not fdatasynced, so `#durableBelow` stays where its own last fdatasync left it (batches
 * carry the syncLag of this file, and recovery reads any tail damage as a torn write when the
 * journal holds the damaged batch). When no other log is writing, the journal leaves the run to
 * this log: write, then its own fdatasync, as without a journal. Preallocation and segment
 * preparation follow the last round: only a log that fdatasyncs itself gains from them. `Log.open`
 * writes the log's batches from the journal past its end (`journal.replay`) before it serves.
 *
 * Compaction builds only on durable batches: in 'os' durability a batch is acknowledged before any
 * fdatasync, and a rewrite that drops a record for a newer one, or a checkpoint that frees the log
 * below it, must not outlive a power loss that takes the newer batch. So `replaceSegments` and
 * `deleteSegmentsBelow` first make every acknowledged batch durable (`syncAcknowledged`: one
 * fdatasync of the active segment, between two write rounds).
 *
 * Durability knowledge: each batch carries its syncLag (record-batch.ts), how many batches before it
 * were not yet known durable when it was written: a write round's batches count from the last
 * completed fdatasync ('fsync'), or from the last open, roll or close ('os'). Recovery uses it, with
 * what the store recorded at its last clean close, to tell damage a power loss can leave (only
 * after the last fdatasync) from damage to durable data (corruption).
 *
 * Recovery is `Log.open`: the directory is inspected (log-inspection.ts: every segment scanned and
 * checked, the segments chained without a gap from where recovery replays to where the store last
 * knew the log to end), and only when nothing is corrupt are the repairs applied: a committed
 * compaction swap completed, leftovers of an uncommitted one deleted, a torn tail (damage that a
 * crash or power loss can leave, at the end of the last segment) truncated, batches rejected after
 * a failed write cut off. Corruption refuses to open with CORRUPT_MESSAGE naming the file and byte
 * position, and nothing is modified. A zero tail of the last segment is kept as its preallocation.
 *
 * Failed writes: a run whose write or fdatasync fails is cut back (the segment truncated to where
 * the run began), so its rejected batches never come back. If the cut-back fails too, the first
 * rejected batch is recorded in `rejected-batches.json` and recovery cuts the segment there; if even
 * that record cannot be written, this process refuses to reopen the log (LOG_STORAGE_ERROR) and the
 * error names the file and byte position to truncate by hand.
 */
import * as path from 'node:path';
import {
  DecodeError,
  checkBatch,
  readBatchChecksum,
  readBatchDurableBelow,
  readBatchLogOffset,
  sealBatch,
} from '../codec/index.js';
import { OffsetStoreError, reasonOf } from '../errors/index.js';
import type { FileHandle, FileSystem } from '../io/index.js';
import { Serial, assert, nextTurn } from '../util/index.js';
import {
  REJECTED_FILE,
  damageError,
  rejectedRecordChecksum,
  inspectLog,
  type LogExpectations,
  type LogInspection,
  type RejectedBatches,
} from './log-inspection.js';
import { appendRefusal, type AppendEntry, type LogPort } from './log-port.js';
import { scanSegment, type BatchVisitor } from './segment-scanner.js';
import { segmentFileName } from './segment-name.js';
import {
  CLEANED_SUFFIX,
  INTENT_FILE,
  applySwap,
  swapSegments,
  type CleanedSegment,
} from './segment-swap.js';
import { writeDurably } from './store-manifest.js';
import type { JournalPort } from './commit-journal.js';
import {
  PREALLOCATE_BYTES_MAX,
  preallocationWanted,
  writeWithZerosAhead,
  zeroBytes,
} from './preallocation.js';

/** When an append is acknowledged. */
export type Durability = 'fsync' | 'os';

/** A swap of segments begun (see `completeSwap`). */
interface PendingSwap {
  /** Index of its first input in the segment list. */
  first: number;
  inputs: SegmentInfo[];
  outputs: CleanedSegment[];
  /** Each output's file identity when the swap began (FileSystem.identity), null if unknown. */
  identities: (string | null)[];
  /**
   * Whether an attempt got as far as renaming outputs (its intent was durable). Until one has, an
   * output missing under its temporary name was lost, whatever holds its final name (the input).
   */
  renamesBegun: boolean;
}

/** Failures that say a segment file is gone: a log fail-stops with them as they are. */
const segmentsGone = new WeakSet<OffsetStoreError>();

/** Options of one log. */
export interface LogOptions {
  /** The file-system port every byte goes through. */
  fs: FileSystem;
  /** The log's directory (one offsets-bucket's folder); it must exist. */
  dir: string;
  /** When an append is acknowledged: after its fdatasync ('fsync') or its write ('os'). */
  durability: Durability;
  /**
   * The active segment rolls before it would grow past this many bytes (a larger batch gets a segment
   * of its own).
   */
  segmentBytesMax: number;
  /** Largest batch accepted (bytes, including its length field). */
  batchBytesMax: number;
  /** Bytes of batches in the active segment from which the next one is prepared (default PREPARE_AT_BYTES). */
  prepareAtBytes?: number;
  /** Most appends queued or in flight; beyond it appends reject with TOO_MANY_PENDING_WRITES. */
  pendingAppendsMax: number;
  /** Most bytes written by one flush round. */
  flushBytesMax: number;
  /**
   * Awaited once the first batches written into a segment (the log's first, or one after a roll) are
   * durable (in durability 'os' too: the log fdatasyncs that run for it), before they are
   * acknowledged: the log holds batches up to `logEnd - 1` from now on. The store records it as a
   * lower bound of where the log ends, so that an open finding the log ending below it (a lost
   * segment, even after a crash) refuses rather than serve less. Must not reject.
   */
  onSegmentStarted?: (logEnd: number) => Promise<void>;
  /**
   * Awaited once, before the log first writes a batch (the store records that the log may now grow
   * past the end it recorded as exact). If it rejects, the log fails as on a storage error.
   */
  beforeFirstWrite?: () => Promise<void>;
  /**
   * Awaited before the log creates or deletes a file in its folder (the next segment, a prepared
   * one, a swap of compacted segments or the deletion of those a checkpoint covers): rejects
   * (LOG_STORAGE_ERROR) when the store's directory was renamed or replaced under the process, whose
   * files would then land in another directory (DirectoryLock.check). The roll fails as on a
   * storage error.
   */
  checkDirectory?: () => Promise<void>;
  /**
   * The store's commit journal (commit-journal.ts). With a `port` (durability 'fsync'), a round is
   * made durable by it (with other logs' rounds) instead of by this log's own fdatasync, unless no
   * other log is writing. `replay` holds this log's batches read from the journal at open (also
   * without a port: a journal left by a crash is replayed whatever the options of this open):
   * recovery appends those past the log's end before anything is served.
   */
  journal?: { port?: JournalPort; bucket: number; replay?: readonly Buffer[] };
  /**
   * Opened by a store open to read only (its file system keeps every change in memory): recovery
   * reads as usual, but does not write the unsynced tail again to make it durable (it would only
   * copy it into memory), and a live owner may be appending while the log is read.
   */
  readOnly?: boolean;
}

/** Default limits. */
export const LOG_DEFAULTS = {
  segmentBytesMax: 64 * 1024 * 1024,
  batchBytesMax: 8 * 1024 * 1024,
  pendingAppendsMax: 65_536,
  flushBytesMax: 16 * 1024 * 1024,
} as const;

/** Bytes of data in the active segment from which the next segment's file is prepared. */
const PREPARE_AT_BYTES = 256 * 1024;
/** Rounds in a row a log must have fdatasynced itself before its next segment is prepared. */
const PREPARE_AFTER_OWN_ROUNDS = 8;
/** Smallest prepared segment file. */
const PREPARED_BYTES_MIN = 1024 * 1024;
/** Name of the next segment's file while it is prepared (a `.tmp` file: recovery deletes a leftover). */
const PREPARED_FILE = 'next-segment.tmp';

/** What recovery is told: where it replays from, what it knows of the end, who hears each batch. */
export interface LogRecovery extends LogExpectations {
  /** Receives every batch at or above `fromLogOffset`, in log order. */
  visit?: BatchVisitor;
}

/** What recovery found. */
export interface LogRecoveryReport {
  /** Segments of the log after recovery. */
  segmentCount: number;
  /** Valid batches in the log, below the replay start included. */
  batchCount: number;
  /** Batches at or above the replay start handed to the visitor. */
  batchesReplayed: number;
  /** Bytes cut off a torn tail or a rejected range (0 when the log ended cleanly). */
  bytesTruncated: number;
  /** Base offset of the first segment (0 for a log that never lost a prefix). */
  firstLogOffset: number;
  /** Log offset after the last batch (the empty last segment's base when it has none). */
  logEndOffset: number;
  /** Where a torn tail was found and why, when recovery truncated one. */
  tornTail?: { file: string; position: number; reason: string };
  /**
   * Segment files recovery deleted: wholly below log offset `below`, where it starts (a
   * checkpoint's), they did not chain with the segments after them (log-inspection.ts, rule 6).
   */
  staleSegments?: { files: string[]; below: number };
  /**
   * Batches recovery took from the commit journal and wrote into the log: past the log's end, or
   * in place of damaged bytes they fill exactly (`keptBatches`).
   */
  journalBatches?: number;
  /**
   * Valid batches after a damaged stretch that the commit journal's copies filled exactly, kept
   * (written over themselves after the copies; LogDamage.kept).
   */
  keptBatches?: number;
  /**
   * Bytes of batches that an earlier process wrote and may not have made durable (past what its last
   * batch knew durable), which recovery wrote again, the same bytes, and fdatasynced.
   */
  bytesRewritten?: number;
}

/**
 * Flush loops running in this process, over every log, counted from the moment a loop is started
 * (not from its first turn). A round flushes on the calling thread (`FileHandle.datasyncNow`) only
 * when its loop is the only one (and, in a process serving over the network, when logs have not
 * been taking turns lately: `flushesTakeTurns`): with other logs flushing, their fdatasyncs run in
 * parallel through the thread pool instead of one after another on this thread.
 */
let flushLoopsRunning = 0;

/**
 * Network servers running in this process (`holdServingFlushes`). Commits that arrive by I/O
 * (requests on a server's sockets) wait unread in the kernel while a flush on the calling thread
 * blocks the event loop, and then start their logs' loops one at a time, each alone again: the loop
 * count cannot see them, and such logs flush one after another, never in parallel (64 Kafka
 * connections committing 1 partition each for 64 groups over 16 logs: 7-13k commits/s, against
 * 22-28k through the thread pool). So while a server runs, logs that take turns (a round starting
 * within TURN_TAKING_GAP_MS of another log's) send every fdatasync through the thread pool for
 * TURN_TAKING_HOLD_MS. In-process callers continue in microtasks, which a flush on the calling
 * thread does not hold back, and there it stays the faster choice (64 in-process committers over 16
 * logs: 38-43k commits/s, against 30-36k with the rule).
 */
let servingHolds = 0;
const TURN_TAKING_GAP_MS = 2;
const TURN_TAKING_HOLD_MS = 100;
/**
 * The log whose round ended last in this process (its `#roundId`: a number, so that a closed log,
 * and the store behind its options, are not kept alive by it), and when (`performance.now()`).
 */
let lastRoundLog = 0;
/** The last `#roundId` given to a log. */
let roundIds = 0;
let lastRoundEndMs = -Infinity;
/** Until when fdatasyncs stay off the calling thread. */
let turnTakingUntilMs = -Infinity;

/**
 * Tells the logs of this process that commits reach it over the network, until the returned
 * function is called (once; later calls do nothing). Held by a network server while it runs.
 */
export function holdServingFlushes(): () => void {
  servingHolds++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    servingHolds--;
  };
}

/**
 * Notes that `log` starts a round now; true when the process serves over the network and its logs
 * have been taking turns within the last TURN_TAKING_HOLD_MS (this round included), so that its
 * fdatasync must not block the event loop.
 */
function flushesTakeTurns(log: number): boolean {
  if (servingHolds === 0) return false;
  const now = performance.now();
  if (lastRoundLog !== 0 && lastRoundLog !== log && now - lastRoundEndMs < TURN_TAKING_GAP_MS)
    turnTakingUntilMs = now + TURN_TAKING_HOLD_MS;
  return now < turnTakingUntilMs;
}

/** Notes that `log` ended a round now. */
function roundEnded(log: number): void {
  lastRoundLog = log;
  lastRoundEndMs = performance.now();
}

/**
 * Microtask turns a flush loop waits, between a round and the next, for the continuations of the
 * callers it acknowledged: a commit's acknowledgement reaches the caller of `commitOffsets` through
 * its own promise (the log tells the offsets table's write directly, see appendEntry), and a caller
 * several async functions further away, or a snapshot's writer (an append's promise, then its
 * awaits), still makes it.
 */
const ACKNOWLEDGED_TURNS = 10;
/** Longest wait of a round for commits arriving over the network (`#linger`). */
const LINGER_MS_MAX = 1;

/** Directories whose rejected batches could neither be cut back nor recorded: not reopened by this process. */
const unrepairedDirs = new Map<string, string>();

/**
 * Forgets what this process knows of its logs beyond their files (directories it will not reopen,
 * flush loops running), as a restarted process would: for a simulator that abandons logs in a
 * simulated crash and reopens them in the same process.
 */
export function forgetLogProcessState(): void {
  unrepairedDirs.clear();
  flushLoopsRunning = 0;
  lastRoundLog = 0;
  lastRoundEndMs = -Infinity;
  turnTakingUntilMs = -Infinity;
}

/** A segment as the log tracks it. */
export interface SegmentInfo {
  /** Log offset of its first batch (its file name). */
  baseOffset: number;
  /** Path of its file. */
  path: string;
  /** Bytes of batches in it (not counting the active segment's preallocated zeros). */
  sizeBytes: number;
  /** Log offset of its last batch, -1 when empty. */
  lastLogOffset: number;
}

/** An append waiting for its round; `settled`: resolved (durable) already, so a later failure of its round must not reject it. */
type PendingAppend = AppendEntry;

/** One offsets-bucket's append-only log in local segment files: the LogPort of a single-process store. */
export class Log implements LogPort {
  readonly #options: LogOptions;
  /** This log among the process's logs, for the turn-taking rule (never 0). */
  readonly #roundId = ++roundIds;
  readonly #segments: SegmentInfo[];
  #active: FileHandle;
  /** Size of the active segment's file: its batches, then zeros (preallocation). */
  #activeFileBytes: number;
  /** A preallocation of the active segment failed for lack of space: none until the next segment. */
  #preallocationRefused = false;
  /**
   * Whether the last round was made durable by this log's own fdatasync (before the first round:
   * whether the log is in durability 'fsync'). Preallocation (zeros ahead, a prepared next segment)
   * only pays off for a log that fdatasyncs itself: for rounds the journal makes durable, or in
   * durability 'os' where no round is fdatasynced, it is only more bytes for the disk to write
   * back, competing with the journal's flushes (64 committers over 16 logs: ~30k commits/s with it,
   * ~55k without).
   */
  #syncsItself: boolean;
  /**
   * Rounds in a row made durable by this log's own fdatasync. The next segment is prepared only
   * after PREPARE_AFTER_OWN_ROUNDS of them: a log whose rounds the journal makes durable fdatasyncs
   * itself now and then, when a round finds no other log writing, and preparing a file of zeros
   * after each of those (twice the active file, up to segmentBytesMax) wrote more zeros than
   * batches: 64 Kafka connections over 16 logs had one such round in ~230, yet the zeros kept
   * the thread pool copying most of a core of this 2-core machine (1.1-1.5M offsets/s against
   * 1.7-1.9M without them).
   */
  #ownRoundsInARow = 0;
  /** The last write round: appends it took, when it ended and how long it took (ms). */
  #lastRound: { appends: number; endMs: number; ms: number } | undefined;
  /** `options.beforeFirstWrite` until it has been awaited successfully. */
  #beforeFirstWrite: (() => Promise<void>) | undefined;
  #nextOffset: number;
  /** First log offset not known to be durable: every batch below it was fdatasynced. */
  #durableBelow: number;
  /** Log offset after the last acknowledged batch. */
  #acknowledgedEnd: number;
  #queue: PendingAppend[] = [];
  #inFlightCount = 0;
  #flushing: Promise<void> | undefined;
  #failure: OffsetStoreError | undefined;
  #closed = false;
  /** The close, once begun. */
  #closing: Promise<void> | undefined;
  /** `sealActive` asked for a roll at the next round boundary. */
  #sealRequested = false;
  /** `syncAcknowledged` calls waiting for the fdatasync the flush loop makes at its next round boundary. */
  #syncWaiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  /** The next segment's file, written ahead with zeros and fdatasynced (see the module comment). */
  #prepared: { path: string; fileBytes: number } | undefined;
  /** The preparation in flight, if any. */
  #preparing: Promise<void> | undefined;
  /** The active segment for which a preparation was declined (too little free space): not asked again before the next. */
  #prepareDeclinedFor: FileHandle | undefined;
  /** Bytes of batches appended (durable) since the log was opened. */
  #appendedBytes = 0;
  /** A swap whose directory operations failed part way (see `completeSwap`). */
  #pendingSwap: PendingSwap | undefined;
  /**
   * Changes of the segment list, one after another: two swaps carried out at once (a checkpoint's
   * deletion at close racing a conversion's) would both apply one pending intent, and one would
   * find the other's files already gone.
   */
  readonly #swaps = new Serial();

  private constructor(
    options: LogOptions,
    segments: SegmentInfo[],
    active: FileHandle,
    activeFileBytes: number,
    nextOffset: number,
  ) {
    this.#options = options;
    this.#beforeFirstWrite = options.beforeFirstWrite;
    this.#segments = segments;
    this.#active = active;
    this.#activeFileBytes = activeFileBytes;
    this.#nextOffset = nextOffset;
    this.#durableBelow = nextOffset;
    this.#acknowledgedEnd = nextOffset;
    this.#syncsItself = options.durability === 'fsync';
  }

  /**
   * Opens the log in `options.dir` (an existing directory; an empty one gets its first segment):
   * inspects it, refuses corruption, applies the repairs recovery needs (see the module comment),
   * and hands every batch at or above `recovery.fromLogOffset` to `recovery.visit`.
   */
  static async open(
    options: LogOptions,
    recovery: LogRecovery = { fromLogOffset: 0 },
  ): Promise<{ log: Log; report: LogRecoveryReport }> {
    const unrepaired = unrepairedDirs.get(path.resolve(options.dir));
    if (unrepaired !== undefined) throw new OffsetStoreError('LOG_STORAGE_ERROR', unrepaired);
    try {
      return await Log.#recover(options, recovery);
    } catch (error) {
      // The store holds its folder's lock and removes nothing of a log before it has opened, so a
      // file listed and then not found was removed by something else: damage, as a missing
      // segment is, never a passing failure to retry. (A read-only open holds no lock: a live
      // writer may have removed the file, and the store reads such a view again.)
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || error instanceof OffsetStoreError)
        throw error;
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        options.readOnly === true
          ? `${options.dir}: a file vanished while the log was read (${(error as Error).message}): the process that has the store open removed it (a compaction or a checkpoint), or, if none has, something other than this store did`
          : `${options.dir}: a file vanished while the log recovered (${(error as Error).message}): something other than this store removed it`,
        { cause: error },
      );
    }
  }

  static async #recover(
    options: LogOptions,
    recovery: LogRecovery,
  ): Promise<{ log: Log; report: LogRecoveryReport }> {
    const { fs, dir } = options;
    let batchesReplayed = 0;
    const visit = recovery.visit;
    // Where the log holds batches the journal holds too (same bytes: same stored checksum).
    const replay = options.journal?.replay ?? [];
    const replayByOffset = new Map<number, Buffer>();
    for (const batch of replay) replayByOffset.set(readBatchLogOffset(batch), batch);
    const held: { filePosition: number; batch: Buffer }[] = [];
    const unsynced = new UnsyncedTail();
    const inspection = await inspectLog(fs, dir, options, recovery, {
      stopAtCorruption: true,
      visit: (buf, position, logOffset, sizeBytes, filePosition) => {
        unsynced.saw(buf, position, logOffset, filePosition);
        if (replay.length > 0) {
          const journaled = replayByOffset.get(logOffset);
          if (
            journaled !== undefined &&
            readBatchChecksum(journaled) === readBatchChecksum(buf, position)
          )
            held.push({ filePosition, batch: journaled });
        }
        if (visit === undefined || logOffset < recovery.fromLogOffset) return;
        visit(buf, position, logOffset, sizeBytes, filePosition);
        batchesReplayed++;
      },
    });
    const corruption = inspection.damage.find((d) => d.kind === 'corrupt');
    if (corruption !== undefined) throw damageError(corruption);
    // Log offsets before which recovery's rewrite of an unsynced tail stops (below).
    const scannedEnd = inspection.logEnd;
    const repairedBatches = await repairFromJournal(
      fs,
      inspection,
      replay,
      (batch, position, fromJournal) => {
        const logOffset = readBatchLogOffset(batch);
        if (visit === undefined || logOffset < recovery.fromLogOffset) return;
        visitReplayed(
          visit,
          dir,
          batch,
          logOffset,
          position,
          fromJournal ? 'the commit journal' : 'the log',
        );
        batchesReplayed++;
      },
    );
    const segments: SegmentInfo[] = inspection.segments.map((s) => ({
      baseOffset: s.baseOffset,
      path: s.path,
      sizeBytes: s.validBytes,
      lastLogOffset: s.lastLogOffset,
    }));
    const last = inspection.segments.at(-1);
    const report: LogRecoveryReport = {
      segmentCount: segments.length,
      batchCount: inspection.segments.reduce((n, s) => n + s.batchCount, 0),
      batchesReplayed,
      bytesTruncated: 0,
      firstLogOffset: segments[0]?.baseOffset ?? 0,
      logEndOffset: inspection.logEnd,
    };
    if (repairedBatches > 0) {
      report.journalBatches = repairedBatches;
      report.keptBatches = inspection.tornTail!.kept!.last - inspection.tornTail!.kept!.first + 1;
    }
    let lastFileBytes = last === undefined ? 0 : last.validBytes + last.zeroTailBytes;
    if (await applyRepairs(fs, dir, inspection, report)) lastFileBytes = last!.validBytes;
    if (inspection.staleSegments.length > 0)
      report.staleSegments = {
        files: inspection.staleSegments.map((p) => path.basename(p)),
        below: recovery.fromLogOffset,
      };
    // The journal's batches the log holds already are written over again, the same bytes, before
    // the fdatasync below: the log's copy may be in the page cache only, its pages marked clean by
    // a failed writeback (an fdatasync that failed with EIO), and the journal is deleted once every
    // bucket has recovered.
    // Those batches are the log's tail past its own last fdatasync; what a crashed process wrote
    // after them, or without a journal, is written over again from the log's own bytes.
    let heldEnd = 0;
    if (held.length > 0 && options.readOnly !== true) {
      await rewriteHeld(fs, segments, held, inspection.logEnd);
      for (const { batch } of held) heldEnd = Math.max(heldEnd, readBatchLogOffset(batch) + 1);
    }
    const rewritten =
      options.readOnly === true
        ? 0
        : await unsynced.rewrite(
            fs,
            segments,
            Math.max(recovery.knownEnd?.logOffset ?? 0, heldEnd),
            scannedEnd,
            options.batchBytesMax,
          );
    if (rewritten > 0) report.bytesRewritten = rewritten;
    if (last === undefined) {
      segments.push(await createSegment(fs, dir, recovery.fromLogOffset));
      lastFileBytes = 0;
    }
    let nextOffset = Math.max(inspection.logEnd, segments.at(-1)!.baseOffset);
    // The log's batches in the commit journal past its end (the inspection checked that they
    // continue it): visited, then written after its last batch.
    const journaled = (options.journal?.replay ?? []).filter(
      (batch) => readBatchLogOffset(batch) >= nextOffset,
    );
    const activeSegment = segments.at(-1)!;
    let position = activeSegment.sizeBytes;
    for (const batch of journaled) {
      const logOffset = readBatchLogOffset(batch);
      if (visit !== undefined && logOffset >= recovery.fromLogOffset) {
        visitReplayed(visit, dir, batch, logOffset, position, 'the commit journal');
        batchesReplayed++;
      }
      position += batch.length;
    }
    const active = await fs.open(activeSegment.path, 'r+');
    // What a crashed process wrote but never synced may still be only in the page cache: the tail of
    // the last segment, and the directory entries of segments it created (a crash, or a failed
    // directory fsync, between creating a segment and fsyncing the directory). Recovery serves them,
    // so it makes them durable first: after a later power loss only what is written from now on can
    // be missing or damaged.
    try {
      if (journaled.length > 0) {
        await active.writev(journaled, activeSegment.sizeBytes);
        activeSegment.sizeBytes = position;
        activeSegment.lastLogOffset = readBatchLogOffset(journaled.at(-1)!);
        lastFileBytes = Math.max(lastFileBytes, position);
        nextOffset = activeSegment.lastLogOffset + 1;
        report.batchCount += journaled.length;
        report.batchesReplayed = batchesReplayed;
        report.logEndOffset = nextOffset;
        report.journalBatches = journaled.length + repairedBatches;
      }
      await active.datasync();
      await fs.syncDir(dir);
    } catch (error) {
      await active.close();
      throw error;
    }
    return { log: new Log(options, segments, active, lastFileBytes, nextOffset), report };
  }

  /** Always 0: a single-process store has no other writer to fence (the batch header keeps 0). */
  get coordinatorEpoch(): number {
    return 0;
  }

  /** The log offset the next appended batch gets (the log end offset). */
  get nextOffset(): number {
    return this.#nextOffset;
  }

  /** Log offset after the last acknowledged batch (the log end of everything a caller was told of). */
  get acknowledgedEnd(): number {
    return this.#acknowledgedEnd;
  }

  /**
   * Log offset below which every batch is known durable: everything acknowledged in durability
   * 'fsync' (by this file's fdatasync or the commit journal's); in 'os', only what this file's last
   * fdatasync that succeeded covered (a failed one may have left the rest in the page cache only).
   */
  get durableEnd(): number {
    return this.#options.durability === 'os' ? this.#durableBelow : this.#acknowledgedEnd;
  }

  /**
   * Where the log ends at the least, to record for the next open once it has failed: its durable
   * end; but for a log stopped because its file was removed or replaced, what it acknowledged,
   * which is in no file an open reads (the next open then reports what is missing).
   */
  get endLowerBound(): number {
    if (this.#failure !== undefined && segmentsGone.has(this.#failure))
      return this.#acknowledgedEnd;
    return this.durableEnd;
  }

  /** True once a storage failure has fail-stopped this log. */
  get failed(): boolean {
    return this.#failure !== undefined;
  }

  /** What fail-stopped this log (LOG_STORAGE_ERROR naming why), if anything has. */
  get failure(): OffsetStoreError | undefined {
    return this.#failure;
  }

  /**
   * Whether damage read in this log's files (by a compaction, a backup) may be what a failed
   * writeback left rather than damage on the disk. Bytes the log wrote but has not made durable
   * itself (the active segment's tail, journaled or in durability 'os') are dropped from the page
   * cache when their writeback fails, and reads then return what the device has; the log's next
   * fdatasync reports that writeback's error. So this makes every acknowledged batch durable
   * (syncAcknowledged) and resolves with the failure of a write or an fdatasync (a system call's
   * error: EIO, ENOSPC, ...) that has stopped the log, before this call (`already`) or by its
   * sync; undefined when there is none, the damage then being on the disk. A log stopped for
   * anything else (a segment removed or replaced, its directory moved, a close) has no failure to
   * name here. `why` is what the caller's message about the damage goes on with, saying so.
   */
  async storageFailureBehindDamage(): Promise<
    { failure: Error; already: boolean; why: string } | undefined
  > {
    const already = this.#failure !== undefined;
    const failure: unknown = await this.syncAcknowledged().then(
      () => undefined,
      (error: unknown) => error,
    );
    if (failure === undefined || !failedOnIo(failure)) return undefined;
    const why = already
      ? `, in a log already stopped by a storage failure, which may have left it there (not necessarily damage on the disk; the next open verifies the log): ${reasonOf(failure)}`
      : `, and the log's fdatasync then failed: its page cache had lost bytes it wrote (a failed writeback), not damage on the disk; ${reasonOf(failure)}`;
    return { failure: failure as Error, already, why };
  }

  /** The file-system port the log reads and writes through. */
  get fs(): FileSystem {
    return this.#options.fs;
  }

  /** The log's directory. */
  get dir(): string {
    return this.#options.dir;
  }

  /**
   * Rejects (LOG_STORAGE_ERROR) when the store's directory was renamed or replaced under the process
   * (LogOptions.checkDirectory): for whoever creates, replaces or deletes files in the log's folder
   * by name (compaction, checkpoints), which would otherwise act on another directory's files.
   */
  async checkDirectory(): Promise<void> {
    await this.#options.checkDirectory?.();
  }

  /** A copy of the segment list, oldest first; the last one is active. */
  segments(): SegmentInfo[] {
    return this.#segments.map((s) => ({ ...s }));
  }

  /** Bytes of batches appended since the log was opened (what commits wrote; compaction not counted). */
  get appendedBytes(): number {
    return this.#appendedBytes;
  }

  get batchBytesMax(): number {
    return this.#options.batchBytesMax;
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
  append(batch: Buffer, admitted = false): Promise<number> {
    const refusal = this.#refusal(batch.length, admitted);
    if (refusal !== undefined) return Promise.reject(refusal);
    return new Promise<number>((resolve, reject) => {
      this.#queue.push({ batch, settled: false, resolve, reject });
      if (this.#flushing === undefined) this.#flushing = this.#flushLoop();
    });
  }

  /** See LogPort.appendEntry. */
  appendEntry(entry: AppendEntry, admitted = false): void {
    const refusal = this.#refusal(entry.batch.length, admitted);
    if (refusal !== undefined) throw refusal;
    this.#queue.push(entry);
    if (this.#flushing === undefined) this.#flushing = this.#flushLoop();
  }

  /**
   * Throws what `append` would refuse a batch of no bytes with (closed, failed, or as many appends
   * pending as the log takes): for an operation of several batches, checked once before the first,
   * whose batches are then appended `admitted`, so that it is refused whole or not at all.
   */
  checkRoom(): void {
    const refusal = this.#refusal(0, false);
    if (refusal !== undefined) throw refusal;
  }

  /** Why a batch of `bytes` would be refused now; `admitted`: its operation was let in by checkRoom. */
  #refusal(bytes: number, admitted: boolean): OffsetStoreError | undefined {
    return appendRefusal(
      {
        name: this.#options.dir,
        closed: this.#closed,
        failure: this.#failure,
        batchBytesMax: this.#options.batchBytesMax,
        pending: this.#queue.length + this.#inFlightCount,
        pendingAppendsMax: this.#options.pendingAppendsMax,
      },
      bytes,
      admitted,
    );
  }

  async #flushLoop(): Promise<void> {
    flushLoopsRunning++;
    try {
      await Promise.resolve();
      while (
        (this.#queue.length > 0 || this.#sealRequested || this.#syncWaiters.length > 0) &&
        this.#failure === undefined
      ) {
        if (this.#syncWaiters.length > 0) {
          const waiters = this.#syncWaiters.splice(0);
          const end = this.#acknowledgedEnd;
          try {
            await this.#active.datasync();
          } catch (error) {
            this.#failStop(error, []);
            for (const waiter of waiters) waiter.reject(this.#failure);
            return;
          }
          this.#durableBelow = Math.max(this.#durableBelow, end);
          for (const waiter of waiters) waiter.resolve();
          continue;
        }
        if (this.#sealRequested) {
          this.#sealRequested = false;
          try {
            if (this.#segments.at(-1)!.sizeBytes > 0) await this.#roll(this.#nextOffset);
          } catch (error) {
            this.#failStop(error, []);
            return;
          }
          continue;
        }
        if (this.#beforeFirstWrite !== undefined) {
          try {
            await this.#beforeFirstWrite();
          } catch (error) {
            this.#failStop(error, []);
            return;
          }
          this.#beforeFirstWrite = undefined;
        }
        if (servingHolds > 0) await this.#linger();
        const taken = this.#takeRound();
        const flushHere = !flushesTakeTurns(this.#roundId);
        // Timed only for #linger, which runs only while a network server does.
        const roundStartMs = servingHolds > 0 ? performance.now() : undefined;
        try {
          await this.#writeRound(taken, flushHere);
        } catch (error) {
          this.#failStop(
            error,
            taken.filter((entry) => !entry.settled),
          );
          return;
        } finally {
          for (const entry of taken) if (!entry.settled) this.#inFlightCount--;
          roundEnded(this.#roundId);
        }
        if (roundStartMs !== undefined) {
          const roundEndMs = performance.now();
          this.#lastRound = {
            appends: taken.length,
            endMs: roundEndMs,
            ms: roundEndMs - roundStartMs,
          };
        }
        // Let the callers just acknowledged commit again into the next round (step 3).
        if (this.#queue.length > 0)
          for (let turn = 0; turn < ACKNOWLEDGED_TURNS; turn++) await undefined;
      }
    } finally {
      flushLoopsRunning--;
      this.#flushing = undefined;
      for (const waiter of this.#syncWaiters.splice(0)) waiter.reject(this.#failure);
    }
  }

  /**
   * Commits that reach the process over the network: waits, turn by turn of the event loop, until as
   * many appends are queued as the last round took, for at most that round's duration (and
   * LINGER_MS_MAX), when that round ended just now. The callers the last round acknowledged are
   * clients on sockets: their next commits arrive a network round trip later, and a round started
   * at once would take only those already read, splitting the clients into cohorts that alternate.
   */
  async #linger(): Promise<void> {
    const last = this.#lastRound;
    if (last === undefined || this.#queue.length >= last.appends) return;
    const now = performance.now();
    if (now - last.endMs > LINGER_MS_MAX) return;
    const deadline = now + Math.min(LINGER_MS_MAX, last.ms);
    while (
      this.#queue.length < last.appends &&
      performance.now() < deadline &&
      !this.#closed &&
      !this.#sealRequested &&
      this.#syncWaiters.length === 0
    )
      await nextTurn();
  }

  /**
   * Tells an append of a written round that it is durable. It stops counting as pending first: an
   * entry may tell its caller at once (appendEntry), who may append again before this round ends.
   */
  #acknowledge(entry: PendingAppend): void {
    entry.settled = true;
    this.#inFlightCount--;
    entry.resolve(readBatchLogOffset(entry.batch));
  }

  #takeRound(): PendingAppend[] {
    let bytes = 0;
    let count = 0;
    while (
      count < this.#queue.length &&
      (count === 0 || bytes + this.#queue[count]!.batch.length <= this.#options.flushBytesMax)
    ) {
      bytes += this.#queue[count]!.batch.length;
      count++;
    }
    const taken = this.#queue.splice(0, count);
    this.#inFlightCount += taken.length;
    for (const entry of taken) {
      const logOffset = this.#nextOffset++;
      sealBatch(entry.batch, logOffset, 0, logOffset - this.#durableBelow);
    }
    return taken;
  }

  /** Writes a round as runs, one per segment it touches; each run is acknowledged once durable. */
  async #writeRound(taken: PendingAppend[], flushHere: boolean): Promise<void> {
    let run: PendingAppend[] = [];
    let runBytes = 0;
    for (const entry of taken) {
      const active = this.#segments.at(-1)!;
      const endBytes = active.sizeBytes + runBytes + entry.batch.length;
      // Full, or it would have to grow while a prepared segment waits: roll.
      if (
        active.sizeBytes + runBytes > 0 &&
        (endBytes > this.#options.segmentBytesMax ||
          (this.#prepared !== undefined && endBytes > this.#activeFileBytes))
      ) {
        await this.#writeRun(run, runBytes, flushHere);
        run = [];
        runBytes = 0;
        await this.#roll(readBatchLogOffset(entry.batch));
      }
      run.push(entry);
      runBytes += entry.batch.length;
    }
    await this.#writeRun(run, runBytes, flushHere);
  }

  /**
   * Writes one run at the end of the active segment and makes it durable, then acknowledges it. If
   * the write or fdatasync fails, the segment is cut back to where the run started (best effort), so
   * that the rejected batches do not come back when the log is reopened.
   */
  async #writeRun(run: PendingAppend[], runBytes: number, flushHere: boolean): Promise<void> {
    if (run.length === 0) return;
    // The journal failed (a write or fdatasync of the store's device): the store takes no more
    // commits until reopened, as the journal's error says. A log flushing alone does not use the
    // journal, and would otherwise go on acknowledging by its own fdatasync on the device that
    // has just failed a write.
    const failedJournal = this.#options.journal?.port?.failure;
    if (failedJournal !== undefined && this.#options.durability === 'fsync') throw failedJournal;
    const active = this.#segments.at(-1)!;
    const startBytes = active.sizeBytes;
    const endBytes = startBytes + runBytes;
    const batches = run.map((entry) => entry.batch);
    let preallocateBytes =
      endBytes > this.#activeFileBytes && this.#syncsItself
        ? this.#preallocationAfter(endBytes)
        : 0;
    let ownSync = false;
    let segmentStartSynced = false;
    // With a journal: this log's write failed after the journal made the run durable. The run is
    // acknowledged (recovery writes it from the journal), then the log fail-stops.
    let writeFailure: unknown;
    try {
      const journal = this.#options.journal;
      const port = journal?.port;
      // The only log flushing in the process: no other log's round could share the journal's.
      if (
        this.#options.durability !== 'fsync' ||
        journal === undefined ||
        port === undefined ||
        flushLoopsRunning === 1
      ) {
        preallocateBytes = await this.#writeBatches(batches, startBytes, preallocateBytes);
        if (this.#options.durability === 'fsync') {
          await this.#syncOwn(flushHere);
          ownSync = true;
        } else if (startBytes === 0 && this.#options.onSegmentStarted !== undefined) {
          // In 'os', a segment's first run is made durable before the store records that the log
          // reaches it (below): the record then holds after a power loss too, and a segment file
          // lost later (a view's read, any open) is reported rather than served as a shorter log.
          await this.#active.datasync();
          segmentStartSynced = true;
        }
      } else {
        // Methods, not arrow functions in properties: run from source, each arrow would be named
        // (a defineProperty) on every round.
        const log = this;
        const outcome = await port.commit(journal.bucket, batches, {
          async write() {
            preallocateBytes = await log.#writeBatches(batches, startBytes, preallocateBytes);
          },
          syncOwn() {
            return log.#syncOwn(flushHere);
          },
        });
        ownSync = outcome.ownSync;
        writeFailure = outcome.writeError;
      }
    } catch (error) {
      throw await this.#cutBack(startBytes, run[0]!.batch, error);
    }
    if (writeFailure !== undefined) {
      for (const entry of run) this.#acknowledge(entry);
      throw writeFailure;
    }
    const lastLogOffset = readBatchLogOffset(run.at(-1)!.batch);
    assert(
      lastLogOffset === readBatchLogOffset(run[0]!.batch) + run.length - 1,
      'a run holds consecutive log offsets',
    );
    assert(
      active.lastLogOffset < 0
        ? readBatchLogOffset(run[0]!.batch) === active.baseOffset
        : readBatchLogOffset(run[0]!.batch) === active.lastLogOffset + 1,
      'a run continues its segment',
    );
    this.#activeFileBytes = Math.max(this.#activeFileBytes, endBytes + preallocateBytes);
    active.sizeBytes = endBytes;
    this.#appendedBytes += runBytes;
    active.lastLogOffset = lastLogOffset;
    this.#acknowledgedEnd = lastLogOffset + 1;
    if (ownSync || segmentStartSynced) this.#durableBelow = lastLogOffset + 1;
    this.#syncsItself = ownSync;
    this.#ownRoundsInARow = ownSync ? this.#ownRoundsInARow + 1 : 0;
    // The first run into a segment (the log's first included) is acknowledged only once the store has
    // recorded that the log holds it: after a crash, a lost file that held acknowledged batches,
    // even the log's only one, is then found missing rather than taken for a log that never had it.
    if (startBytes === 0) await this.#options.onSegmentStarted?.(lastLogOffset + 1);
    for (const entry of run) this.#acknowledge(entry);
    if (
      active.sizeBytes >= (this.#options.prepareAtBytes ?? PREPARE_AT_BYTES) &&
      this.#ownRoundsInARow >= PREPARE_AFTER_OWN_ROUNDS &&
      this.#prepared === undefined &&
      this.#preparing === undefined &&
      this.#prepareDeclinedFor !== this.#active &&
      !this.#preallocationRefused &&
      !this.#closed
    ) {
      this.#preparing = this.#prepareNext(
        Math.min(
          this.#options.segmentBytesMax,
          Math.max(PREPARED_BYTES_MIN, 2 * this.#activeFileBytes),
        ),
      ).finally(() => {
        this.#preparing = undefined;
      });
    }
  }

  /**
   * Writes a run's batches at `startBytes` of the active segment with `preallocateBytes` zeros after
   * them; returns the zeros written (fewer after ENOSPC: the segment is not preallocated any more).
   */
  async #writeBatches(
    batches: readonly Buffer[],
    startBytes: number,
    preallocateBytes: number,
  ): Promise<number> {
    const zeros = await writeWithZerosAhead(
      this.#active,
      batches,
      startBytes,
      preallocateBytes,
      this.#activeFileBytes,
    );
    if (zeros < preallocateBytes) this.#preallocationRefused = true;
    return zeros;
  }

  /** This log's own fdatasync of its active segment: on the calling thread when it is the only log flushing. */
  async #syncOwn(flushHere: boolean): Promise<void> {
    if (!(flushHere && flushLoopsRunning === 1 && this.#active.datasyncNow?.() === true))
      await this.#active.datasync();
  }

  /**
   * Writes the next segment's file ahead: `fileBytes` of zeros, fdatasynced. Runs beside the write
   * rounds (a different file: its flushes do not wait for this one's). A failure (ENOSPC, EIO) only
   * means there is none: rounds grow the active segment in place, as without preparation. Where the
   * file system would be left with less free than the file takes, nothing is prepared for this
   * segment: the zeros would take the space commits need (on a nearly full disk, a commit of a few
   * hundred bytes failed with ENOSPC, stopping the log, while a MiB of zeros was being written).
   */
  async #prepareNext(fileBytes: number): Promise<void> {
    const { fs, dir } = this.#options;
    const preparedPath = path.join(dir, PREPARED_FILE);
    if (fs.freeBytes !== undefined) {
      const free = await fs.freeBytes(dir).catch(() => 0);
      if (free < 2 * fileBytes) {
        this.#prepareDeclinedFor = this.#active;
        return;
      }
    }
    try {
      await this.checkDirectory();
      const handle = await fs.open(preparedPath, 'w');
      try {
        // One fdatasync per MiB: a commit's fdatasync then never queues behind megabytes of zeros.
        for (let at = 0; at < fileBytes; at += PREALLOCATE_BYTES_MAX) {
          await handle.writev([zeroBytes(Math.min(PREALLOCATE_BYTES_MAX, fileBytes - at))], at);
          await handle.datasync();
        }
      } finally {
        await handle.close();
      }
      if (this.#closed) await fs.unlink(preparedPath);
      else this.#prepared = { path: preparedPath, fileBytes };
    } catch {
      await fs.unlink(preparedPath).catch(() => {});
    }
  }

  /** Zeros to write after a run that ends at `endBytes`, past the active segment's file end. */
  #preallocationAfter(endBytes: number): number {
    if (this.#preallocationRefused) return 0;
    return Math.max(
      0,
      Math.min(preallocationWanted(endBytes), this.#options.segmentBytesMax - endBytes),
    );
  }

  /**
   * After a failed write, cuts the active segment back to `sizeBytes`, where the run beginning with
   * `firstBatch` started; returns the error to raise. If the cut fails, the rejected range is
   * recorded for recovery to cut (REJECTED_FILE); if that fails too, this process will not reopen
   * the log, and the error says what to truncate.
   */
  async #cutBack(sizeBytes: number, firstBatch: Buffer, error: unknown): Promise<unknown> {
    try {
      this.#activeFileBytes = sizeBytes;
      await this.#active.truncate(sizeBytes);
      await this.#active.datasync();
      return error;
    } catch (cutError) {
      const segment = path.basename(this.#active.path);
      const record: RejectedBatches = {
        segment,
        position: sizeBytes,
        checksum: readBatchChecksum(firstBatch),
      };
      const what = `${reasonOf(error)}; cutting ${this.#active.path} back to ${sizeBytes} bytes failed too (${reasonOf(cutError)})`;
      try {
        await writeDurably(
          this.#options.fs,
          path.join(this.#options.dir, REJECTED_FILE),
          Buffer.from(
            JSON.stringify({ ...record, recordChecksum: rejectedRecordChecksum(record) }),
          ),
        );
        return new OffsetStoreError(
          'LOG_STORAGE_ERROR',
          `${what}; recorded in ${REJECTED_FILE}, the next open cuts the rejected batches off`,
          { cause: error },
        );
      } catch (recordError) {
        const message = `${what}, and recording the rejected batches failed (${(recordError as Error).message}): truncate ${this.#active.path} to ${sizeBytes} bytes before reopening it`;
        unrepairedDirs.set(path.resolve(this.#options.dir), message);
        return new OffsetStoreError('LOG_STORAGE_ERROR', message, { cause: error });
      }
    }
  }

  /** Seals the active segment (made durable whatever the mode) and starts one at `baseOffset`. */
  async #roll(baseOffset: number): Promise<void> {
    await this.checkDirectory();
    // Removed (or replaced) under the process, the file lives on only in this handle: sealing it
    // would go on acknowledging into a log no open can find.
    const problem = await this.#activeFileProblem();
    if (problem !== undefined) {
      await this.#recordAcknowledgedEnd();
      throw problem;
    }
    // The cut is durable before the next segment exists: a sealed segment never has a zero tail.
    await this.#cutPreallocation();
    await this.#active.datasync();
    this.#durableBelow = baseOffset;
    let prepared = this.#prepared;
    this.#prepared = undefined;
    let segment: SegmentInfo | undefined;
    if (prepared !== undefined) {
      try {
        segment = await this.#usePrepared(prepared.path, baseOffset);
      } catch (error) {
        // Removed meanwhile (a temp file someone cleaned up): it was only zeros written ahead.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        prepared = undefined;
      }
    }
    segment ??= await createSegment(this.#options.fs, this.#options.dir, baseOffset);
    const created = segment;
    const handle = await this.#options.fs.open(created.path, 'r+').catch((error: unknown) => {
      // Created durably a moment ago, and gone: removed from under the store as it rolled.
      throw (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? this.#goneError(
            created,
            'nothing was written to it: the next open goes on from the segment before',
          )
        : error;
    });
    try {
      await this.#active.close();
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
    this.#active = handle;
    this.#activeFileBytes = prepared?.fileBytes ?? 0;
    this.#preallocationRefused = false;
    this.#segments.push(segment);
  }

  /** Renames the prepared file to the segment at `baseOffset` (durably: the directory is fsynced). */
  async #usePrepared(preparedPath: string, baseOffset: number): Promise<SegmentInfo> {
    const segmentPath = path.join(this.#options.dir, segmentFileName(baseOffset));
    await this.#options.fs.rename(preparedPath, segmentPath);
    await this.#options.fs.syncDir(this.#options.dir);
    return { baseOffset, path: segmentPath, sizeBytes: 0, lastLogOffset: -1 };
  }

  /** Cuts the active segment's zero tail off (not yet durable: the caller's fdatasync makes it so). */
  async #cutPreallocation(): Promise<void> {
    const sizeBytes = this.#segments.at(-1)!.sizeBytes;
    if (this.#activeFileBytes === sizeBytes) return;
    await this.#active.truncate(sizeBytes);
    this.#activeFileBytes = sizeBytes;
    const fileBytes = await this.#active.sizeBytes();
    assert(
      fileBytes === sizeBytes,
      `the active segment is ${fileBytes} bytes after cutting its preallocation, not the ${sizeBytes} written`,
    );
  }

  #failStop(error: unknown, taken: PendingAppend[]): void {
    const failure = segmentsGone.has(error as OffsetStoreError)
      ? (error as OffsetStoreError)
      : new OffsetStoreError(
          'LOG_STORAGE_ERROR',
          `write to ${this.#options.dir} failed; the log accepts no more writes until reopened: ${reasonOf(error)}`,
          { cause: error },
        );
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
      const scan = await scanSegment(
        this.#options.fs,
        segment.path,
        {
          batchBytesMax: this.#options.batchBytesMax,
          previousLogOffset: previous,
          baseOffset: segment.baseOffset,
          endBytes: segment.sizeBytes,
        },
        (buf, position, logOffset, sizeBytes, filePosition) => {
          if (logOffset >= fromLogOffset) visit(buf, position, logOffset, sizeBytes, filePosition);
        },
      );
      if (scan.damage !== undefined)
        throw corrupt(segment.path, scan.damage.position, scan.damage.reason);
      if (scan.lastLogOffset >= 0) previous = scan.lastLogOffset;
    }
  }

  /**
   * Seals the active segment, if it holds a batch, and starts an empty one at the log end: between
   * two write rounds, so appends go on around it. Lets a checkpoint that covers the whole log free
   * the whole log (a quiet offsets-bucket shrinks to its live size).
   */
  async sealActive(): Promise<void> {
    this.#checkWritable();
    this.#sealRequested = true;
    this.#flushing ??= this.#flushLoop();
    await this.drain();
    this.#checkWritable();
  }

  /**
   * Makes every batch acknowledged so far durable: at once in 'fsync' durability, where an
   * acknowledged batch is durable; in 'os' durability by an fdatasync of the active segment, made by
   * the flush loop between two write rounds (a roll cannot close the segment under it; batches of
   * segments already sealed were made durable by their roll). A failed fdatasync fail-stops the log.
   */
  syncAcknowledged(): Promise<void> {
    // Closing: its close makes everything it wrote durable (or fails, and says so).
    if (this.#closing !== undefined && this.#failure === undefined) return this.#closing;
    try {
      this.#checkWritable();
    } catch (error) {
      return Promise.reject(error);
    }
    // With a journal, batches written (sealed) may not be acknowledged yet: they are covered too.
    const journaled = this.#options.journal?.port !== undefined;
    const end = journaled ? this.#nextOffset : this.#acknowledgedEnd;
    if ((this.#options.durability === 'fsync' && !journaled) || this.#durableBelow >= end)
      return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#syncWaiters.push({ resolve, reject });
      this.#flushing ??= this.#flushLoop();
    });
  }

  /** The sealed segments, oldest first (every segment but the active one). */
  sealedSegments(): SegmentInfo[] {
    return this.#segments.slice(0, -1).map((s) => ({ ...s }));
  }

  /**
   * Deletes the `.cleaned` files no swap will carry out: outputs of a compaction job that never
   * reached its swap (a worker thread terminated by compaction.runTimeoutMs in the middle of its
   * rewrite, or an abandoned job whose deletes failed), which would otherwise stay until the next
   * open. Called by compaction before it rewrites this log, when no other job of it runs; while a
   * swap is pending (its outputs still to be renamed in) nothing is deleted. Best effort, like the
   * abandon it completes: a file that cannot be deleted now is left for the next open.
   */
  deleteStrayOutputs(): Promise<void> {
    return this.#swaps.run(async () => {
      if (this.#pendingSwap !== undefined || this.#closed) return;
      const { fs, dir } = this.#options;
      for (const name of await fs.readdir(dir).catch(() => []))
        if (name.endsWith(CLEANED_SUFFIX)) await fs.unlink(path.join(dir, name)).catch(() => {});
    });
  }

  /**
   * Replaces the sealed segments `inputs` (contiguous, unchanged since they were read) by cleaned
   * segments already written and fdatasynced under temporary names. Crash-safe: see segment-swap.ts.
   */
  replaceSegments(
    inputs: readonly SegmentInfo[],
    outputs: readonly CleanedSegment[],
  ): Promise<void> {
    return this.#swaps.run(() => this.#replaceSegments(inputs, outputs));
  }

  async #replaceSegments(
    inputs: readonly SegmentInfo[],
    outputs: readonly CleanedSegment[],
  ): Promise<void> {
    this.#checkWritable();
    await this.#completeSwap();
    const first = this.#segments.findIndex((s) => s.baseOffset === inputs[0]?.baseOffset);
    const current = first < 0 ? [] : this.#segments.slice(first, first + inputs.length);
    const unchanged =
      current.length === inputs.length &&
      first + inputs.length < this.#segments.length &&
      current.every(
        (s, i) => s.baseOffset === inputs[i]!.baseOffset && s.sizeBytes === inputs[i]!.sizeBytes,
      );
    if (!unchanged)
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `segments of ${this.#options.dir} changed while they were compacted`,
      );
    // The rewrite may drop records for newer ones the compaction read in the active segment.
    await this.syncAcknowledged();
    const { fs } = this.#options;
    const identities = await Promise.all(
      outputs.map((o) => fs.identity?.(o.tempPath).catch(() => null) ?? null),
    );
    this.#pendingSwap = {
      first,
      inputs: [...inputs],
      outputs: [...outputs],
      identities,
      renamesBegun: false,
    };
    await this.#completeSwap();
  }

  /**
   * Deletes the sealed segments whose batches all lie below `logOffset` (they are covered by a
   * durable checkpoint); returns the bytes freed.
   */
  deleteSegmentsBelow(logOffset: number): Promise<number> {
    return this.#swaps.run(() => this.#deleteSegmentsBelow(logOffset));
  }

  async #deleteSegmentsBelow(logOffset: number): Promise<number> {
    this.#checkWritable();
    await this.#completeSwap();
    let count = 0;
    while (count < this.#segments.length - 1) {
      const next = this.#segments[count + 1]!;
      if (next.baseOffset > logOffset) break;
      count++;
    }
    if (count === 0) return 0;
    // The checkpoint that covers them may cover batches not fdatasynced yet ('os' durability).
    await this.syncAcknowledged();
    const doomed = this.#segments.slice(0, count);
    this.#pendingSwap = {
      first: 0,
      inputs: doomed,
      outputs: [],
      identities: [],
      renamesBegun: false,
    };
    await this.#completeSwap();
    return doomed.reduce((sum, s) => sum + s.sizeBytes, 0);
  }

  /**
   * LogPort's truncation: when `logOffset` covers every batch (a quiet bucket), the active segment is
   * sealed first so that it can go too; then the sealed segments wholly below `logOffset` are deleted.
   */
  async truncateBelow(logOffset: number): Promise<number> {
    if (logOffset >= this.#nextOffset && this.#segments.at(-1)!.sizeBytes > 0)
      await this.sealActive();
    return this.deleteSegmentsBelow(logOffset);
  }

  /**
   * Completes a swap that a failed directory operation left half done (its outputs are durable, so
   * it is redone whole: intent, renames, unlinks, all idempotent) and only then changes the segment
   * list. Until it succeeds the list still names the inputs, and every compaction first retries it;
   * a failure is LOG_STORAGE_ERROR (appends go on: the active segment is not part of a swap). A swap
   * still pending at close is completed by the next open, from its intent.
   */
  completeSwap(): Promise<void> {
    return this.#swaps.run(() => this.#completeSwap());
  }

  async #completeSwap(): Promise<void> {
    const pending = this.#pendingSwap;
    if (pending === undefined) return;
    const { fs, dir } = this.#options;
    // By name: in a directory that now has the name, it would delete another store's segments.
    await this.checkDirectory();
    try {
      await this.#checkOutputsPresent(pending);
    } catch (error) {
      if (error instanceof OffsetStoreError) throw error;
      throw new OffsetStoreError(
        'LOG_STORAGE_ERROR',
        `checking the compacted segments of a swap in ${dir} failed; ${swapRetried(pending)}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    try {
      await swapSegments(
        fs,
        dir,
        pending.inputs.map((s) => path.basename(s.path)),
        pending.outputs,
        () => {
          pending.renamesBegun = true;
        },
      );
    } catch (error) {
      throw new OffsetStoreError(
        'LOG_STORAGE_ERROR',
        `swapping compacted segments into ${dir} failed; ${swapRetried(pending)}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    const replaced: SegmentInfo[] = pending.outputs.map((o) => ({
      baseOffset: o.baseOffset,
      path: path.join(dir, segmentFileName(o.baseOffset)),
      sizeBytes: o.sizeBytes,
      lastLogOffset: o.lastLogOffset,
    }));
    assert(
      this.#segments[pending.first]?.baseOffset === pending.inputs[0]!.baseOffset,
      'a pending swap still finds its inputs',
    );
    this.#segments.splice(pending.first, pending.inputs.length, ...replaced);
    this.#pendingSwap = undefined;
  }

  /**
   * Before a swap is carried out (again): every output must still be under its temporary name, or
   * under its final name as the same file (a rename of an earlier attempt). A swap that failed part
   * way leaves its outputs as `.cleaned` files until the next compaction retries it, and someone may
   * remove them; carried out then, the swap would skip the missing renames and delete the inputs
   * whose batches only the outputs held. When no output was renamed yet, nothing has changed but
   * the lost outputs: the swap is abandoned (its intent and leftovers removed, the log keeping its
   * segments). Otherwise it can neither be completed nor undone, and is left to the operator.
   */
  async #checkOutputsPresent(pending: PendingSwap): Promise<void> {
    const { fs, dir } = this.#options;
    const lost: string[] = [];
    const waiting: string[] = []; // still under their temporary names
    let renamed = false;
    for (const [i, output] of pending.outputs.entries()) {
      if ((await fs.sizeBytes(output.tempPath)) !== null) {
        waiting.push(output.tempPath);
        continue;
      }
      // Renamed into place by an earlier attempt? Only one that began renaming can have; the final
      // name may hold the input of the same base offset, so the file there must be the output.
      const final = path.join(dir, segmentFileName(output.baseOffset));
      const identity = pending.identities[i] ?? null;
      const inPlace =
        pending.renamesBegun &&
        (identity !== null
          ? (await fs.identity?.(final)) === identity
          : (await fs.sizeBytes(final)) === output.sizeBytes);
      if (inPlace) renamed = true;
      else lost.push(path.basename(output.tempPath));
    }
    if (lost.length === 0) return;
    if (renamed)
      throw new OffsetStoreError(
        'LOG_STORAGE_ERROR',
        `compacted segment(s) ${lost.join(', ')} in ${dir} were removed before they were swapped in, after others were: the swap can be neither completed nor undone; nothing more is renamed or deleted (the next open reports what is missing)`,
      );
    // The intent goes first, durably: one left beside some outputs' names and not others would
    // read at the next open as a swap that lost outputs, and refuse the store.
    if ((await fs.sizeBytes(path.join(dir, INTENT_FILE))) !== null) {
      await fs.unlink(path.join(dir, INTENT_FILE));
      await fs.syncDir(dir);
    }
    for (const tempPath of waiting) await fs.unlink(tempPath);
    await fs.syncDir(dir);
    this.#pendingSwap = undefined;
    throw new OffsetStoreError(
      'LOG_STORAGE_ERROR',
      `compacted segment(s) ${lost.join(', ')} in ${dir} were removed before they were swapped in: the swap was abandoned and the log keeps its segments (nothing was lost); the next compaction starts over`,
    );
  }

  /**
   * Fail-stops the log (LOG_STORAGE_ERROR) when a segment file it holds is gone from its folder,
   * removed while the process ran (by hand, a cleanup job): its batches then live on only in open
   * descriptors until the process ends, and commits acknowledged from then on would be lost to every
   * later open (which reports the missing segment). Compaction asks after it fails, the store with
   * each retention pass; a roll checks the active segment itself. Returns the log's failure, if any.
   */
  checkSegmentsPresent(): Promise<OffsetStoreError | undefined> {
    return this.#swaps.run(async () => {
      if (this.#failure !== undefined || this.#closed) return this.#failure;
      // A store directory renamed or replaced has none of its segments under their paths: that,
      // not every segment removed, is what stops the log (as it would stop a roll). A failure to
      // tell (a stat's transient error) stops nothing: the next pass asks again.
      try {
        await this.checkDirectory();
      } catch (error) {
        if (!(error instanceof OffsetStoreError)) return undefined;
        if (this.#failure === undefined) this.#failStop(error, []);
        return this.#failure;
      }
      // A swap left half done may have removed its inputs already: they are not missing. The
      // active segment is #activeFileProblem's (removed, or replaced).
      const swapping = new Set(this.#pendingSwap?.inputs.map((s) => s.path));
      for (const segment of this.#segments.slice(0, -1)) {
        if (swapping.has(segment.path)) continue;
        if ((await this.#options.fs.sizeBytes(segment.path)) !== null) continue;
        if (this.#failure === undefined) this.#failStop(this.#goneError(segment), []);
        break;
      }
      const problem = this.#failure === undefined ? await this.#activeFileProblem() : undefined;
      if (problem !== undefined && this.#failure === undefined) this.#failStop(problem, []);
      if (this.#failure !== undefined && segmentsGone.has(this.#failure))
        await this.#recordAcknowledgedEnd();
      return this.#failure;
    });
  }

  /**
   * Whether the active segment's file is no longer under its name: removed, or (where the port
   * tells files apart) replaced by another file of that name, a copy or restore over it. Either
   * way what the log acknowledges goes into a file no open will read.
   */
  async #activeFileProblem(): Promise<OffsetStoreError | undefined> {
    const active = this.#segments.at(-1)!;
    const { fs } = this.#options;
    if (fs.identity !== undefined && this.#active.identity !== undefined) {
      const [under, own] = await Promise.all([fs.identity(active.path), this.#active.identity()]);
      if (under === null) return this.#goneError(active);
      if (under === own) return undefined;
      const error = new OffsetStoreError(
        'LOG_STORAGE_ERROR',
        `segment file ${active.path} is no longer the file this log writes (another file was put under its name while the store ran): the log accepts no more writes; what it wrote into its own file is not in the one now there`,
      );
      segmentsGone.add(error);
      return error;
    }
    return (await fs.sizeBytes(active.path)) === null ? this.#goneError(active) : undefined;
  }

  /**
   * A segment file gone or replaced: the store records (onSegmentStarted) that the log reached
   * what it acknowledged, so that an open, after a close or a crash, reports the batches the lost
   * file held instead of serving the log as ending before them.
   */
  async #recordAcknowledgedEnd(): Promise<void> {
    await this.#options.onSegmentStarted?.(this.#acknowledgedEnd);
  }

  #goneError(
    segment: SegmentInfo,
    after = 'the next open reports the missing segment',
  ): OffsetStoreError {
    const error = new OffsetStoreError(
      'LOG_STORAGE_ERROR',
      `segment file ${segment.path} is gone from its folder (removed while the store ran): the log accepts no more writes; ${after}`,
    );
    segmentsGone.add(error);
    return error;
  }

  #checkWritable(): void {
    if (this.#closed)
      throw new OffsetStoreError('STORE_CLOSED', `log ${this.#options.dir} is closed`);
    if (this.#failure !== undefined) throw this.#failure;
  }

  /** Waits for every queued append to be written and acknowledged (or rejected). */
  async drain(): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing;
  }

  /**
   * Flushes queued appends, makes everything durable, and closes; later appends get STORE_CLOSED.
   * Every call settles as the first one does, once it is done.
   */
  close(): Promise<void> {
    return (this.#closing ??= this.#close());
  }

  async #close(): Promise<void> {
    this.#closed = true;
    await this.drain();
    try {
      if (this.#failure === undefined) {
        await this.#cutPreallocation();
        await this.#active.datasync();
      }
    } finally {
      await this.#active.close();
      await this.#preparing;
      // A prepared file is kept by nobody: the next open would delete it as a leftover anyway.
      if (this.#prepared !== undefined) await this.#options.fs.unlink(this.#prepared.path);
      this.#prepared = undefined;
    }
  }
}

function corrupt(
  file: string,
  position: number,
  reason: string,
  cause?: unknown,
): OffsetStoreError {
  return new OffsetStoreError('CORRUPT_MESSAGE', `${file} at byte ${position}: ${reason}`, {
    cause,
  });
}

async function createSegment(
  fs: FileSystem,
  dir: string,
  baseOffset: number,
): Promise<SegmentInfo> {
  const segmentPath = path.join(dir, segmentFileName(baseOffset));
  const handle = await fs.open(segmentPath, 'wx');
  await handle.close();
  await fs.syncDir(dir);
  return { baseOffset, path: segmentPath, sizeBytes: 0, lastLogOffset: -1 };
}

/**
 * Hands a batch taken from the commit journal (`where`: 'the commit journal'), or kept by its repair
 * ('the log'), to recovery's visitor.
 */
function visitReplayed(
  visit: BatchVisitor,
  dir: string,
  batch: Buffer,
  logOffset: number,
  position: number,
  where: string,
): void {
  try {
    visit(batch, 0, logOffset, batch.length, position);
  } catch (error) {
    if (!(error instanceof DecodeError)) throw error;
    throw new OffsetStoreError(
      'CORRUPT_MESSAGE',
      `${dir}: batch ${logOffset} in ${where}: checksum matches but a record does not decode: ${error.message}`,
      { cause: error },
    );
  }
}

/**
 * The repair of a damaged stretch that the commit journal's copies fill exactly (LogDamage.kept):
 * writes those copies in its place and the kept batches after them over themselves, the same bytes
 * (their pages may be in the page cache only), in one write at the stretch, and fdatasyncs. Nothing
 * is cut first, so a crash at any point leaves every byte as it was or as it was first written, and
 * the next open repairs it again. Then the inspection's last segment ends after the kept batches
 * (the cut of a torn tail, applyRepairs, only drops what follows them), and each batch written is
 * handed to `saw` in log order. Returns the batches written from the journal (0: no such repair).
 */
async function repairFromJournal(
  fs: FileSystem,
  inspection: LogInspection,
  replay: readonly Buffer[],
  saw: (batch: Buffer, position: number, fromJournal: boolean) => void,
): Promise<number> {
  const kept = inspection.tornTail?.kept;
  const last = inspection.segments.at(-1);
  if (kept === undefined || last === undefined) return 0;
  const copies = replay.filter((batch) => {
    const logOffset = readBatchLogOffset(batch);
    return logOffset >= inspection.logEnd && logOffset < kept.first;
  });
  let copiesBytes = 0;
  for (const batch of copies) copiesBytes += batch.length;
  assert(
    copies.length === kept.first - inspection.logEnd && last.validBytes + copiesBytes === kept.from,
    "the commit journal's copies fill the damaged stretch exactly",
  );
  const handle = await fs.open(last.path, 'r+');
  try {
    const bytes = Buffer.allocUnsafe(kept.to - kept.from);
    for (let got = 0; got < bytes.length;) {
      const n = await handle.read(bytes, got, bytes.length - got, kept.from + got);
      if (n === 0) throw keptChanged(last.path, kept.from + got);
      got += n;
    }
    // Checked again before they are written back, as UnsyncedTail.rewrite does.
    const keptBatches: Buffer[] = [];
    for (let p = 0; p < bytes.length;) {
      const check = checkBatch(bytes, p, bytes.length, Number.MAX_SAFE_INTEGER);
      if (check.kind !== 'ok' || check.logOffset !== kept.first + keptBatches.length)
        throw keptChanged(last.path, kept.from + p);
      keptBatches.push(bytes.subarray(p, p + check.sizeBytes));
      p += check.sizeBytes;
    }
    if (keptBatches.length !== kept.last - kept.first + 1) throw keptChanged(last.path, kept.to);
    await handle.writev([...copies, bytes], last.validBytes);
    await handle.datasync();
    let position = last.validBytes;
    for (const batch of copies) {
      saw(batch, position, true);
      position += batch.length;
    }
    for (const batch of keptBatches) {
      saw(batch, position, false);
      position += batch.length;
    }
  } finally {
    await handle.close();
  }
  last.validBytes = kept.to;
  last.lastLogOffset = kept.last;
  last.batchCount += kept.last + 1 - inspection.logEnd;
  inspection.logEnd = kept.last + 1;
  return copies.length;
}

function keptChanged(file: string, position: number): OffsetStoreError {
  return new OffsetStoreError(
    'LOG_STORAGE_ERROR',
    `${file}: the batch at byte ${position}, which recovery had read whole, reads back otherwise before recovery wrote it again: the page cache dropped bytes a failed writeback had left only there; nothing was written, and reopening recovers from what the disk holds`,
  );
}

/**
 * Applies the repairs an inspection found nothing corrupt against (see the module comment); returns
 * true when the last segment was cut to its valid bytes (a torn tail or rejected batches).
 */
async function applyRepairs(
  fs: FileSystem,
  dir: string,
  inspection: LogInspection,
  report: LogRecoveryReport,
): Promise<boolean> {
  if (inspection.swap !== undefined) await applySwap(fs, dir, inspection.swap);
  for (const name of inspection.leftovers) await fs.unlink(path.join(dir, name));
  // Below where recovery starts, as the segments a checkpoint frees; a crash in between leaves
  // the rest to the next open, which finds the same break.
  for (const stale of inspection.staleSegments) await fs.unlink(stale);
  if (inspection.leftovers.length > 0 || inspection.staleSegments.length > 0) await fs.syncDir(dir);
  const last = inspection.segments.at(-1);
  const { rejected, tornTail } = inspection;
  let cut = false;
  if (last !== undefined && (tornTail !== undefined || rejected?.applies === true)) {
    const onDisk = (await fs.sizeBytes(last.path)) ?? 0;
    await truncateFile(fs, last.path, last.validBytes);
    report.bytesTruncated = onDisk - last.validBytes;
    report.tornTail =
      tornTail !== undefined
        ? { file: tornTail.file, position: tornTail.position, reason: tornTail.reason }
        : {
            file: last.path,
            position: last.validBytes,
            reason: 'batches rejected after a failed write were cut off',
          };
    cut = true;
  }
  if (rejected !== undefined) {
    await fs.unlink(path.join(dir, REJECTED_FILE));
    await fs.syncDir(dir);
  }
  return cut;
}

/** Batches whose place UnsyncedTail remembers: where a rewrite can start inside a segment. */
const UNSYNCED_POSITIONS = 4096;
/** Bytes UnsyncedTail reads and writes back at a time. */
const REWRITE_CHUNK_BYTES = 1024 * 1024;

/**
 * The batches an earlier process may have left in the page cache only, and their rewrite.
 *
 * On Linux a failed fdatasync (EIO) marks the pages it could not write clean: reads keep returning
 * their bytes, but nothing writes them again and no later fdatasync reports them. The process that
 * sees the error cuts its round back; one that dies first (or whose cut-back fails) leaves the round
 * to the next open, which reads it from the page cache exactly like durable batches. Served, built
 * on and recorded as the log's end, it would be lost to the next power loss with every batch after
 * it. So recovery writes those bytes again and fdatasyncs them before it serves anything: every
 * batch carries, in its syncLag, the first log offset its writer did not know durable; from there
 * (the last batch's, or where the store knew the log durable, whichever is later) to the end of the
 * log, the same bytes are written over themselves: the last write rounds of a log that fdatasyncs
 * itself, everything since the last open or roll in durability 'os'. The batches the commit journal
 * holds are written from the journal's copies (`rewriteHeld`), and this rewrite starts after them.
 * What the store knew durable may lie past the log file's own last fdatasync only for batches the
 * journal made durable, which are those.
 *
 * `saw` is called for every batch in log order; it keeps the file positions of the last
 * UNSYNCED_POSITIONS batches, so a rewrite that starts further back starts at its segment's start
 * (more bytes than needed, never fewer).
 */
class UnsyncedTail {
  #from = -1;
  readonly #offsets = new Float64Array(UNSYNCED_POSITIONS).fill(-1);
  readonly #positions = new Float64Array(UNSYNCED_POSITIONS);
  #next = 0;

  saw(buf: Buffer, position: number, logOffset: number, filePosition: number): void {
    this.#from = readBatchDurableBelow(buf, position);
    this.#offsets[this.#next] = logOffset;
    this.#positions[this.#next] = filePosition;
    this.#next = (this.#next + 1) % UNSYNCED_POSITIONS;
  }

  /** Where the batch at `logOffset` starts in its segment, if it is among the last ones seen. */
  #positionOf(logOffset: number): number | undefined {
    for (let i = 0; i < UNSYNCED_POSITIONS; i++)
      if (this.#offsets[i] === logOffset) return this.#positions[i];
    return undefined;
  }

  /**
   * Writes the batches from the last batch's first unknown-durable offset (or `durableBelow`, if
   * later) to `logEnd` over themselves, and fdatasyncs each sealed segment written (the open
   * fdatasyncs the active one). Returns the bytes written.
   */
  async rewrite(
    fs: FileSystem,
    segments: readonly SegmentInfo[],
    durableBelow: number,
    logEnd: number,
    batchBytesMax: number,
  ): Promise<number> {
    // -1: the last batch does not say (a compaction's output, fdatasynced before it was swapped in).
    if (this.#from < 0) return 0;
    const from = Math.max(this.#from, durableBelow);
    if (from >= logEnd) return 0;
    let bytes = 0;
    for (const segment of segments) {
      if (segment.lastLogOffset < from || segment.sizeBytes === 0) continue;
      const start = segment.baseOffset <= from ? (this.#positionOf(from) ?? 0) : 0;
      if (start >= segment.sizeBytes) continue;
      const handle = await fs.open(segment.path, 'r+');
      try {
        let chunk = Buffer.allocUnsafe(Math.min(REWRITE_CHUNK_BYTES, segment.sizeBytes - start));
        for (let at = start; at < segment.sizeBytes;) {
          const length = Math.min(chunk.length, segment.sizeBytes - at);
          const read = await handle.read(chunk, 0, length, at);
          if (read !== length)
            throw new OffsetStoreError(
              'LOG_STORAGE_ERROR',
              `${segment.path}: read ${read} bytes at byte ${at} where recovery had read ${length}`,
            );
          // Whole batches, each checked again before it is written back: the page cache may have
          // dropped the pages a failed writeback marked clean since recovery read them, and reads
          // then return what the device holds (a torn round), which must not be made durable in
          // place of the batches recovery checked.
          let whole = 0;
          while (whole < length) {
            const check = checkBatch(chunk, whole, length, batchBytesMax);
            if (check.kind === 'ok') whole += check.sizeBytes;
            else if (check.kind === 'incomplete' && at + length < segment.sizeBytes) break;
            else
              throw new OffsetStoreError(
                'LOG_STORAGE_ERROR',
                `${segment.path}: the batch at byte ${at + whole}, which recovery had read whole, reads back ${check.reason} before recovery wrote it again: the page cache dropped bytes a failed writeback had left only there; nothing was written, and reopening recovers from what the disk holds`,
              );
          }
          if (whole === 0) {
            // A batch longer than the chunk: read it whole.
            chunk = Buffer.allocUnsafe(Math.min(batchBytesMax, segment.sizeBytes - at));
            continue;
          }
          await handle.writev([chunk.subarray(0, whole)], at);
          at += whole;
          bytes += whole;
        }
        if (segment !== segments.at(-1)) await handle.datasync();
      } finally {
        await handle.close();
      }
    }
    return bytes;
  }
}

/**
 * Writes the journal's copies of batches the log holds (`held`: the log's file position of each,
 * whose stored checksum is the journal copy's) over the log's, and fdatasyncs each sealed segment
 * written (the caller fdatasyncs the active one).
 */
async function rewriteHeld(
  fs: FileSystem,
  segments: readonly SegmentInfo[],
  held: readonly { filePosition: number; batch: Buffer }[],
  logEnd: number,
): Promise<void> {
  const bySegment = new Map<SegmentInfo, { filePosition: number; batch: Buffer }[]>();
  for (const write of held) {
    const logOffset = readBatchLogOffset(write.batch);
    if (logOffset >= logEnd) continue; // cut off as a torn tail
    let segment = segments[0]!;
    for (const s of segments) if (s.baseOffset <= logOffset) segment = s;
    let list = bySegment.get(segment);
    if (list === undefined) bySegment.set(segment, (list = []));
    list.push(write);
  }
  for (const [segment, writes] of bySegment) {
    const handle = await fs.open(segment.path, 'r+');
    try {
      // Runs of adjacent batches, one writev each (a log of small commits holds many).
      writes.sort((a, b) => a.filePosition - b.filePosition);
      let run: Buffer[] = [];
      let runStart = 0;
      let runEnd = 0;
      for (const { filePosition, batch } of writes) {
        if (run.length > 0 && (filePosition !== runEnd || run.length >= 1024)) {
          await handle.writev(run, runStart);
          run = [];
        }
        if (run.length === 0) runStart = filePosition;
        run.push(batch);
        runEnd = filePosition + batch.length;
      }
      if (run.length > 0) await handle.writev(run, runStart);
      // The active segment is fdatasynced by the open once the journal's batches past its end are
      // written too.
      if (segment !== segments.at(-1)) await handle.datasync();
    } finally {
      await handle.close();
    }
  }
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

/**
 * Whether a log's failure came from a system call's error (EIO, ENOSPC, ...): a failed write or
 * fdatasync, which the log wraps (#failStop) with the system call's error as its cause, or that
 * error itself (a close's fdatasync).
 */
function failedOnIo(failure: unknown): boolean {
  if (segmentsGone.has(failure as OffsetStoreError)) return false;
  const errno = (error: unknown) => {
    const code = (error as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code);
  };
  return errno(failure) || errno((failure as { cause?: unknown } | undefined)?.cause);
}

/**
 * What becomes of a swap that failed: retried before the next compaction; if the store closes
 * first, completed by the next open once its intent is durable (renames may have begun), and
 * otherwise completed or discarded by it, as its intent reached the disk or not.
 */
function swapRetried(pending: PendingSwap): string {
  return pending.renamesBegun
    ? 'it is retried before the next compaction, and completed by the next open from its intent'
    : 'it is retried before the next compaction; the next open completes it if its intent reached the disk, and otherwise discards it, keeping the segments it would have replaced (nothing is lost either way)';
}
