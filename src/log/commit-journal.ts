/**
 * The commit journal: one write-ahead file per store that makes the write rounds of many
 * offsets-buckets durable with one fdatasync.
 *
 * Why: each offsets-bucket has a log of its own (so that a bucket can be moved, checkpointed and
 * compacted alone), and a commit is durable once its log is fdatasynced. With many buckets busy at
 * once (64 committers over 16 buckets) that is one fdatasync per bucket per round, each a device
 * flush through Node's thread pool of 4 threads: the rounds queue behind each other's flushes. With
 * the journal, a round of the logs that are writing at the same moment writes each log's batches to
 * its own segment (not synced) and the same sealed batches once more to the journal, and one
 * fdatasync of the journal makes them all durable. A round of a single log still fdatasyncs that
 * log and writes nothing here: one log alone gains nothing from a second copy.
 *
 * The trade-off (docs/recovery.md): bytes written twice when buckets commit at the same moment, and
 * a log file may now lag what was acknowledged (its tail is only in the page cache and the journal)
 * until the log fdatasyncs itself: at a roll, a compaction, a checkpoint, a clean close, or when the
 * journal file it wrote into is retired. Recovery replays the journal into the logs before anything
 * is served.
 *
 * Invariants:
 * - A batch is acknowledged only once it is durable in its log or in the journal. Every batch of a
 *   log below what its own last fdatasync covered is durable in the log; every later acknowledged
 *   batch is in a journal file that has not been deleted.
 * - Rounds are written one at a time: a round is written and fdatasynced before the next one is
 *   written. So after a power loss only the last round can be damaged, and nothing valid follows it.
 * - Each round starts at a multiple of ROUND_ALIGN bytes, so a round being written never shares a
 *   page with a durable one: a torn write cannot damage a round already acknowledged.
 * - A journal file is deleted only after every log that wrote into it has fdatasynced everything it
 *   had written (retire), and at a clean close after every log was closed (each closing fdatasyncs).
 * - Per offsets-bucket, journal batches are in increasing log offset order; a bucket's batches past
 *   its log's durable end are consecutive (a log's own fdatasync covers every batch before it).
 * - The two rounds that may be in flight together are fdatasynced through two descriptors of the
 *   file (even and odd round numbers). Linux reports a writeback error once per open file
 *   description, to whichever fdatasync checks first: through one descriptor, round 2's fdatasync
 *   could take the error of round 1's pages, and round 1's fdatasync then return success for pages
 *   that are on the device nowhere. Through two, every fdatasync that ends after the error reports
 *   it. Rounds are still acknowledged in order (#synced).
 *
 * Files: `journal/<20-digit sequence>.journal`, sequence from 1, a new file when one would grow past
 * FILE_BYTES_MAX. Zeros ahead of the rounds are written in the same write as a round that needs them
 * (at least 64 KiB, a quarter of the file so far, at most 1 MiB), so most fdatasyncs overwrite
 * blocks already allocated and need no file-system journal commit.
 *
 * Round format (little endian):
 *
 * | offset | size | field                                                                 |
 * |--------|------|-----------------------------------------------------------------------|
 * | 0      | 4    | magic 0x314a534f ("OSJ1")                                             |
 * | 4      | 4    | checksum: xxh32 of bytes [8, 28) then, per entry, its bucket index and |
 * |        |      | its batch's first 9 bytes (length, magic, checksum)                   |
 * | 8      | 4    | bodyBytes: bytes of entries after the header                          |
 * | 12     | 4    | the file's sequence (as in its name)                                  |
 * | 16     | 4    | round number in the file, from 1, consecutive                         |
 * | 20     | 4    | entry count                                                           |
 * | 24     | 4    | the last round of this file known durable when this one was written;  |
 * |        |      | in round 1, which none can be: the rounds of the previous file, all   |
 * |        |      | durable, when this process wrote it; 0 in a process's first file      |
 * | 28     | ...  | entries: uint32 offsets-bucket index, then one sealed KvRecordBatch   |
 *
 * The round's checksum covers its header and each entry's bucket and batch checksum; each batch's
 * own checksum covers the batch (record-batch.ts). So every byte of a round is checked.
 *
 * Reading a file: rounds are read from 0 while they are valid. The first invalid one ends the file:
 * it is a round a crash or power loss cut short (and the file is replayed up to it) when no valid
 * round of this file follows it at any later aligned position, and the next file, if the same
 * process began it, does not record more rounds in this one (a file's rounds are all durable before
 * the next file begins); otherwise a durable round was damaged or lost: CORRUPT_MESSAGE naming the
 * file and byte position, and the store does not open. The files of two processes can follow each
 * other (the journal read at open is deleted only once every bucket has replayed it), which is why
 * a process's first file records nothing of the file before it.
 *
 * A round whose write or fdatasync fails is cut back (its header overwritten with zeros and
 * fdatasynced), so that its batches, refused to their callers, never come back. If that fails too,
 * the first refused round is recorded, durably, in `journal/refused-rounds.json` (REFUSED_FILE):
 * `{ "refused": [{ file, position, round, checksum }, ...] }`, each entry a round's file name, byte
 * position, number and header checksum (an earlier version wrote one such object alone, which is
 * read as a list of one). Reading then ends a file at an entry's position when the round found there
 * is the one recorded (same number and checksum; anything else there, zeros from an erase that did
 * land, is read as usual), so the refused rounds stay refused in the next process too. The record
 * holds an entry per failed process whose file is still there: the files a process read at open
 * stay while any of its buckets has not replayed them (awaitRecovery: false), so a process adds its
 * entry to those before it, and when journal files are deleted, only their entries go (the record
 * with the last one). Only if recording fails as well does the journal leave it to this process
 * alone: it will not reopen the store's journal, and the error names the file and position to fill
 * with zeros.
 */
import * as path from 'node:path';
import { LENGTH_FIELD_BYTES, checkBatch, readBatchLogOffset, xxh32 } from '../codec/index.js';
import { OffsetStoreError, reasonOf } from '../errors/index.js';
import type { FileHandle, FileSystem } from '../io/index.js';
import { nextTurn } from '../util/index.js';
import { writeDurably } from './store-manifest.js';
import {
  PREALLOCATE_BYTES_MAX,
  preallocationWanted,
  writeWithZerosAhead,
  zeroBytes,
} from './preallocation.js';

/** The record of refused rounds that could not be erased (see the module comment), in JOURNAL_DIR. */
export const REFUSED_FILE = 'refused-rounds.json';

/** What a store whose journal lost a durable round can do, for the errors that say so. */
const JOURNAL_DAMAGE_WAY_OUT =
  "; the commits of that round may exist nowhere else: restore the store from a backup (docs/recovery.md, 'A damaged journal', says when the logs alone hold them)";

/** Folder of the journal files inside the store directory. */
export const JOURNAL_DIR = 'journal';
/** Suffix of a journal file. */
export const JOURNAL_SUFFIX = '.journal';
/** Rounds start at multiples of this (a page). */
export const ROUND_ALIGN = 4096;
const ROUND_HEADER_BYTES = 28;
/** Bytes of the header covered by the round checksum, at the start of its summary. */
const SUMMARY_HEADER_BYTES = ROUND_HEADER_BYTES - 8;
/**
 * Rounds written and not yet known durable at once: while one round's fdatasync runs, the next
 * round's commits are prepared and written, so the event loop's work and the disk's overlap.
 */
const ROUNDS_IN_FLIGHT_MAX = 2; // no more than there are descriptors to fdatasync them (OpenFile)
const ENTRY_HEADER_BYTES = 4;
const MAGIC = 0x314a534f;
/** A file is not grown past this (by default); the next round starts a new file. */
export const JOURNAL_FILE_BYTES_MAX = 64 * 1024 * 1024;
/** Most bytes of batches in one round (a round takes at least one submission). */
const ROUND_BYTES_MAX = 16 * 1024 * 1024;

/** Name of the journal file of `sequence`. */
export function journalFileName(sequence: number): string {
  return `${String(sequence).padStart(20, '0')}${JOURNAL_SUFFIX}`;
}

/** The sequence of a journal file's name, or undefined when it is not one. */
export function parseJournalFileName(name: string): number | undefined {
  if (!/^\d{20}\.journal$/.test(name)) return undefined;
  const sequence = Number(name.slice(0, 20));
  return Number.isSafeInteger(sequence) && sequence > 0 ? sequence : undefined;
}

/** What a log needs of the journal. */
export interface JournalPort {
  /**
   * Makes `batches` (sealed, for the log of offsets-bucket `bucket`) durable and has the log write
   * them with `own.write`: when no other log is writing, the log writes them and fdatasyncs itself
   * (`own.syncOwn`); otherwise the journal writes them with other logs' rounds and, while its
   * fdatasync runs, has each log write its own. Rejects when the batches were not made durable
   * (LOG_STORAGE_ERROR from the journal, or the log's own write or fdatasync error).
   */
  commit(
    bucket: number,
    batches: readonly Buffer[],
    own: { write: () => Promise<void>; syncOwn: () => Promise<void> },
  ): Promise<JournalOutcome>;
  /**
   * What stopped the journal (LOG_STORAGE_ERROR), if anything has: the store then accepts no more
   * commits until reopened, and a log flushing alone refuses too rather than acknowledge by its own
   * fdatasync on the device that just failed.
   */
  readonly failure: OffsetStoreError | undefined;
}

/** How a round of one log was made durable. */
export interface JournalOutcome {
  /** By the log's own fdatasync (no other log was writing); otherwise by the journal's. */
  ownSync: boolean;
  /**
   * With the journal: the log's own write of the round failed after the journal had it. The round
   * is durable all the same (recovery writes it from the journal into the log); the log must stop.
   */
  writeError?: unknown;
}

/** What reading the journal found: per offsets-bucket, its batches in the journal, in order. */
export interface JournalContents {
  /** Sealed batches per offsets-bucket index, log offsets increasing. */
  batches: Map<number, Buffer[]>;
  /** The files read (names), oldest first: retired once every bucket has replayed them. */
  files: string[];
  /** Rounds read, over every file. */
  rounds: number;
  /** Where a round cut short ended a file, if one did. */
  tornRounds: { file: string; position: number; reason: string }[];
  /** Where the record of refused rounds (REFUSED_FILE) ended a file, if it did. */
  refusedFrom?: { file: string; position: number };
}

/** How the journal asks a log to make everything it wrote durable in itself (to retire a file). */
export type SyncBucket = (bucket: number) => Promise<void>;

interface Submission {
  bucket: number;
  batches: readonly Buffer[];
  bytes: number;
  write: () => Promise<void>;
  syncOwn: () => Promise<void>;
  writeError?: unknown;
  resolve: (outcome: JournalOutcome) => void;
  reject: (error: unknown) => void;
}

interface RoundInFlight {
  file: OpenFile;
  number: number;
  /** Byte position of its header. */
  start: number;
  /** Its header's checksum (for the record of refused rounds). */
  checksum: number;
  taken: Submission[];
  /** Settles once every log of the round has written its own copy (never rejects). */
  written: Promise<void>;
  /** Settles once the journal's own write of the round is done (never rejects). */
  journalWritten: Promise<void>;
  /** Its own fdatasync succeeded. */
  synced?: boolean;
  /** Settles once its fdatasync through the thread pool has returned (never rejects); unset for none. */
  fdatasyncReturned?: Promise<unknown>;
  /** Settles once its fdatasync is done (acknowledged or failed). */
  settled: Promise<void>;
}

interface OpenFile {
  sequence: number;
  path: string;
  /** Writes the file, and fdatasyncs its even rounds (and the erase of a failed one). */
  handle: FileHandle;
  /**
   * A second descriptor of the same file, which fdatasyncs its odd rounds: two rounds in flight
   * never share one (see the header).
   */
  oddRounds: FileHandle;
  /** Where the next round starts. */
  position: number;
  /** Bytes of the file on disk (rounds, then zeros). */
  fileBytes: number;
  round: number;
  /** The last round known durable (0 for none): recorded in each round written after it. */
  durableRound: number;
  /** The durable rounds of the file before, when this process wrote it (else 0): in round 1. */
  previousFileRounds: number;
  /** A write of zeros ahead failed for lack of space: no more preallocation in this file. */
  preallocationRefused?: boolean;
  /** Offsets-buckets that wrote a round into it. */
  buckets: Set<number>;
  /** Removed from the journal's folder while the store ran (checkFilePresent): no round goes on in it. */
  gone?: boolean;
  /** Waiting for every round claimed in the file to be acknowledged (`#untilDrained`). */
  drained?: (() => void)[];
}

/** The descriptor that fdatasyncs `round`: rounds in flight together alternate between two. */
function syncHandle(round: RoundInFlight): FileHandle {
  return round.number % 2 === 0 ? round.file.handle : round.file.oddRounds;
}

/**
 * A round of a file found removed (checkFilePresent) is durable only in a file that ends with the
 * process: its log syncs it before it is acknowledged. A log whose own write of it failed holds
 * it nowhere: refused, it is cut back from the log.
 */
function acknowledgeOnceOwnSynced(submission: Submission): void {
  if (submission.writeError !== undefined) {
    submission.reject(submission.writeError);
    return;
  }
  submission.syncOwn().then(
    () => submission.resolve({ ownSync: true }),
    (error: unknown) => submission.reject(error),
  );
}

/** Wakes whoever waits for the rounds of `file` to be over (`CommitJournal.#untilDrained`). */
function wakeDrained(file: OpenFile | undefined): void {
  const waiters = file?.drained;
  if (waiters === undefined) return;
  file!.drained = undefined;
  for (const wake of waiters) wake();
}

/** Closes both descriptors of a journal file. */
async function closeFile(file: OpenFile): Promise<void> {
  const results = await Promise.allSettled([file.handle.close(), file.oddRounds.close()]);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

/** Journal files that could not be cut back after a failed round: not reopened by this process. */
const unrepairedJournals = new Map<string, string>();

/** Forgets journals this process would not reopen (for a simulator's simulated restart). */
export function forgetJournalProcessState(): void {
  unrepairedJournals.clear();
}

/** The commit journal of one store; see the module comment. */
export class CommitJournal implements JournalPort {
  readonly #fs: FileSystem;
  readonly #dir: string;
  readonly #syncBucket: SyncBucket;
  readonly #onWarning: (message: string) => void;
  readonly #fileBytesMax: number;
  #nextSequence: number;
  /** The journal folder exists and its entry in the store directory is durable. */
  #dirDurable = false;
  #file: OpenFile | undefined;
  /** Files written by this process and full: deleted once their buckets have synced. */
  #toRetire: OpenFile[] = [];
  #retiring: Promise<void> | undefined;
  #queue: Submission[] = [];
  #flushing: Promise<void> | undefined;
  /** Rounds written whose fdatasync has not completed, oldest first. */
  #inFlight: RoundInFlight[] = [];
  /** The round being written, while its write is in flight. */
  #writing: RoundInFlight | undefined;
  #failure: OffsetStoreError | undefined;
  #closed = false;
  /**
   * Awaited before a journal file is created or deleted by name: rejects (LOG_STORAGE_ERROR) once
   * the store's directory was renamed or replaced under the process (DirectoryLock.check), where
   * the name would lead to another store's journal. Set by the store; none when unset.
   */
  checkDirectory: (() => Promise<void>) | undefined;

  private constructor(
    fs: FileSystem,
    dir: string,
    nextSequence: number,
    syncBucket: SyncBucket,
    onWarning: (message: string) => void,
    fileBytesMax: number,
  ) {
    this.#fileBytesMax = fileBytesMax;
    this.#fs = fs;
    this.#dir = dir;
    this.#nextSequence = nextSequence;
    this.#syncBucket = syncBucket;
    this.#onWarning = onWarning;
  }

  /**
   * Reads the journal of the store at `storeDir` (refusing a damaged durable round) and returns it,
   * ready to write into a new file, with what it holds for recovery to replay.
   */
  static async open(
    fs: FileSystem,
    storeDir: string,
    bucketCount: number,
    batchBytesMax: number,
    syncBucket: SyncBucket,
    onWarning: (message: string) => void,
    fileBytesMax = JOURNAL_FILE_BYTES_MAX,
  ): Promise<{ journal: CommitJournal; contents: JournalContents }> {
    const contents = await readJournalForRecovery(fs, storeDir, bucketCount, batchBytesMax);
    return {
      journal: CommitJournal.after(contents, fs, storeDir, syncBucket, onWarning, fileBytesMax),
      contents,
    };
  }

  /** A journal that writes its files after those `contents` were read from (numbered after them). */
  static after(
    contents: JournalContents,
    fs: FileSystem,
    storeDir: string,
    syncBucket: SyncBucket,
    onWarning: (message: string) => void,
    fileBytesMax = JOURNAL_FILE_BYTES_MAX,
  ): CommitJournal {
    const last = contents.files.at(-1);
    const nextSequence = last === undefined ? 1 : parseJournalFileName(last)! + 1;
    const dir = path.join(storeDir, JOURNAL_DIR);
    return new CommitJournal(fs, dir, nextSequence, syncBucket, onWarning, fileBytesMax);
  }

  get failure(): OffsetStoreError | undefined {
    return this.#failure;
  }

  commit(
    bucket: number,
    batches: readonly Buffer[],
    own: { write: () => Promise<void>; syncOwn: () => Promise<void> },
  ): Promise<JournalOutcome> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#closed)
      return Promise.reject(new OffsetStoreError('STORE_CLOSED', `journal ${this.#dir} is closed`));
    let bytes = 0;
    for (const batch of batches) bytes += batch.length;
    return new Promise<JournalOutcome>((resolve, reject) => {
      this.#queue.push({
        bucket,
        batches,
        bytes,
        write: own.write,
        syncOwn: own.syncOwn,
        resolve,
        reject,
      });
      this.#flushing ??= this.#flushLoop();
    });
  }

  async #flushLoop(): Promise<void> {
    try {
      while (this.#queue.length > 0 && this.#failure === undefined) {
        // Rounds of other logs whose writes complete in this turn of the event loop join this one;
        // after a round, so do the next rounds of the logs it acknowledged (whose callers commit
        // again at once).
        await nextTurn();
        if (this.#failure !== undefined || this.#queue.length === 0) break;
        if (this.#inFlight.length >= ROUNDS_IN_FLIGHT_MAX) {
          await this.#inFlight[0]!.settled;
          continue;
        }
        const taken = this.#takeRound();
        if (taken.length === 1 && this.#inFlight.length === 0) {
          await this.#syncAlone(taken[0]!);
          continue;
        }
        let round: RoundInFlight;
        try {
          round = await this.#writeRound(taken);
        } catch (error) {
          await this.#failStop(error, taken);
          return;
        }
        // An earlier round failed while this one was being written: #failStop took it (and
        // refused its commits); its logs must not write their copies now.
        if (this.#failure !== undefined) return;
        this.#inFlight.push(round);
        const written = (round.written = this.#writeOwn(taken));
        if (this.#inFlight.length === 1) {
          // Nothing else in flight: the fdatasync is made on this thread, once the logs have written
          // their copies. Every committer of the round waits for it anyway, and a round trip
          // through the thread pool costs more than the fdatasync itself on a fast device (64
          // committers over 16 buckets: ~84k commits/s against ~63k through the pool).
          await written;
          if (this.#failure !== undefined) return;
          let now: boolean;
          try {
            now = syncHandle(round).datasyncNow?.() === true;
          } catch (error) {
            await this.#failStop(error, []);
            return;
          }
          if (now) {
            this.#synced(round);
            continue;
          }
        }
        // Through the thread pool (another round is in flight, or this file system does not allow
        // an fdatasync on the calling thread now): the logs write their copies meanwhile.
        // Settled only once the logs' writes are done too: a log told of a failure cuts its
        // segment back, which must come after its own write, or the write would bring back the
        // refused batches.
        const synced = (round.fdatasyncReturned = syncHandle(round)
          .datasync()
          .then(
            () => undefined,
            (error: unknown) => ({ error }),
          ));
        round.settled = Promise.all([synced, written]).then(([failed]) =>
          failed === undefined ? this.#synced(round) : this.#failStop(failed.error, []),
        );
        await written;
      }
    } finally {
      this.#flushing = undefined;
    }
  }

  /**
   * Round `round`'s own fdatasync succeeded: it, and the rounds after it whose own fdatasync had
   * succeeded already, are acknowledged once every round before them has been.
   */
  #synced(round: RoundInFlight): void {
    if (this.#failure !== undefined) return;
    round.synced = true;
    // In order, and each only on its own fdatasync's success: two fdatasyncs of one descriptor in
    // flight together may see one writeback error between them, so a later round's success says
    // nothing of an earlier round whose own fdatasync is still out.
    while (this.#inFlight[0]?.synced === true) {
      const done = this.#inFlight.shift()!;
      done.file.durableRound = Math.max(done.file.durableRound, done.number);
      if (done.file.durableRound >= done.file.round) wakeDrained(done.file);
      for (const submission of done.taken) {
        if (done.file.gone === true) acknowledgeOnceOwnSynced(submission);
        else submission.resolve({ ownSync: false, writeError: submission.writeError });
      }
    }
  }

  /** Each log of a round writes its own copy; a failure is the log's (see JournalOutcome). */
  async #writeOwn(taken: Submission[]): Promise<void> {
    for (const submission of taken) {
      try {
        await submission.write();
      } catch (error) {
        submission.writeError = error ?? new Error('write failed');
      }
    }
  }

  /** A round of one log: its own fdatasync makes it durable; the journal writes nothing. */
  async #syncAlone(submission: Submission): Promise<void> {
    try {
      await submission.write();
      await submission.syncOwn();
    } catch (error) {
      submission.reject(error);
      return;
    }
    submission.resolve({ ownSync: true });
  }

  #takeRound(): Submission[] {
    let bytes = 0;
    let count = 0;
    while (
      count < this.#queue.length &&
      (count === 0 || bytes + this.#queue[count]!.bytes <= ROUND_BYTES_MAX)
    ) {
      bytes += this.#queue[count]!.bytes;
      count++;
    }
    return this.#queue.splice(0, count);
  }

  /** Writes a round (its fdatasync is the caller's), into a new file when the current one is full. */
  async #writeRound(taken: Submission[]): Promise<RoundInFlight> {
    let entries = 0;
    let bodyBytes = 0;
    for (const submission of taken) {
      entries += submission.batches.length;
      bodyBytes += submission.bytes + ENTRY_HEADER_BYTES * submission.batches.length;
    }
    const roundBytes = ROUND_HEADER_BYTES + bodyBytes;
    let file = this.#file;
    if (
      file === undefined ||
      file.gone === true ||
      (file.position > 0 && file.position + roundBytes > this.#fileBytesMax)
    ) {
      // A file's rounds are all settled before the next file begins.
      while (this.#inFlight.length > 0) await this.#inFlight.at(-1)!.settled;
      if (this.#failure !== undefined) throw this.#failure;
      if (file !== undefined) this.#retire(file);
      // Not the current file any more: the retire loop may delete it before the next one is open,
      // which checkFilePresent must not take for a removal.
      this.#file = undefined;
      // No failure: every round of the full file is durable, which the next one records.
      file = this.#file = await this.#newFile(file?.durableRound ?? 0);
    }
    const number = file.round + 1;
    const heads = Buffer.allocUnsafe(ROUND_HEADER_BYTES + ENTRY_HEADER_BYTES * entries);
    const summary = Buffer.allocUnsafe(SUMMARY_HEADER_BYTES + (ENTRY_HEADER_BYTES + 9) * entries);
    heads.writeUInt32LE(MAGIC, 0);
    heads.writeUInt32LE(bodyBytes, 8);
    heads.writeUInt32LE(file.sequence, 12);
    heads.writeUInt32LE(number, 16);
    heads.writeUInt32LE(entries, 20);
    heads.writeUInt32LE(number === 1 ? file.previousFileRounds : file.durableRound, 24);
    heads.copy(summary, 0, 8, ROUND_HEADER_BYTES);
    const buffers: Buffer[] = [heads.subarray(0, ROUND_HEADER_BYTES)];
    let at = ROUND_HEADER_BYTES;
    let summaryAt = SUMMARY_HEADER_BYTES;
    for (const submission of taken) {
      for (const batch of submission.batches) {
        heads.writeUInt32LE(submission.bucket, at);
        buffers.push(heads.subarray(at, at + ENTRY_HEADER_BYTES), batch);
        at += ENTRY_HEADER_BYTES;
        summary.writeUInt32LE(submission.bucket, summaryAt);
        batch.copy(summary, summaryAt + ENTRY_HEADER_BYTES, 0, 9);
        summaryAt += ENTRY_HEADER_BYTES + 9;
      }
    }
    const checksum = xxh32(summary);
    heads.writeUInt32LE(checksum, 4);
    const start = file.position;
    const end = start + roundBytes;
    const preallocate =
      end > file.fileBytes && !file.preallocationRefused
        ? Math.min(alignUp(end + preallocationWanted(end)) - end, PREALLOCATE_BYTES_MAX)
        : 0;
    // Claimed before the write, so that a failure cuts this round back with the others.
    const round: RoundInFlight = {
      file,
      number,
      start,
      checksum,
      taken,
      written: Promise.resolve(),
      journalWritten: Promise.resolve(),
      settled: Promise.resolve(),
    };
    file.round = number;
    file.position = alignUp(end);
    // Before the write: a check that finds the file removed meanwhile syncs these logs too.
    for (const submission of taken) file.buckets.add(submission.bucket);
    // Left set if the write fails: #failStop erases what it may have written (once the write is over).
    this.#writing = round;
    const write = writeWithZerosAhead(file.handle, buffers, start, preallocate, file.fileBytes);
    round.journalWritten = write.then(
      () => undefined,
      () => undefined,
    );
    const zeros = await write;
    this.#writing = undefined;
    // No room for the zeros: the round was written alone, and this file is not preallocated any more.
    if (zeros < preallocate) file.preallocationRefused = true;
    file.fileBytes = Math.max(file.fileBytes, end + zeros);
    return round;
  }

  /** Opens the next file; `previousFileRounds`: the durable rounds of this process's file before it. */
  async #newFile(previousFileRounds: number): Promise<OpenFile> {
    await this.checkDirectory?.();
    if (!this.#dirDurable) {
      // The folder's own entry in the store directory must be durable too: a power loss that
      // forgot its creation would take every journal file with it.
      await this.#fs.mkdir(this.#dir);
      await this.#fs.syncDir(path.dirname(this.#dir));
      this.#dirDurable = true;
    }
    const sequence = this.#nextSequence++;
    const filePath = path.join(this.#dir, journalFileName(sequence));
    const handle = await this.#fs.open(filePath, 'wx');
    let oddRounds: FileHandle;
    try {
      await this.#fs.syncDir(this.#dir);
      oddRounds = await this.#fs.open(filePath, 'r+');
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
    return {
      sequence,
      path: filePath,
      handle,
      oddRounds,
      position: 0,
      fileBytes: 0,
      round: 0,
      durableRound: 0,
      previousFileRounds,
      buckets: new Set(),
    };
  }

  /**
   * A round failed (its write, or an fdatasync): every round not yet acknowledged is refused, and
   * erased (its header overwritten with zeros, fdatasynced) so that the next open ends the file at
   * the first of them; if erasing fails, this process will not reopen the journal.
   */
  async #failStop(error: unknown, taken: Submission[]): Promise<void> {
    if (this.#failure !== undefined) {
      // Failed already (a round this one waited for): these were never part of a round written.
      for (const submission of taken) submission.reject(this.#failure);
      return;
    }
    const rounds = this.#inFlight.splice(0);
    const failed = this.#writing;
    this.#writing = undefined;
    if (failed !== undefined) rounds.push(failed);
    let failure = new OffsetStoreError(
      'LOG_STORAGE_ERROR',
      `write to the commit journal ${this.#dir} failed; the store accepts no more commits until reopened: ${reasonOf(error)}`,
      { cause: error },
    );
    this.#failure = failure;
    // No round of these files will be acknowledged now.
    wakeDrained(this.#file);
    for (const round of rounds) wakeDrained(round.file);
    const queued = this.#queue;
    this.#queue = [];
    // The journal's write of a round still being written, and the logs' own writes of these rounds,
    // finish first: erasing a header under a write still in flight would not erase it, and each log
    // cuts its segment back when told, which a write landing later would undo.
    // So do the rounds' fdatasyncs: one still in flight through the descriptor the erase is made
    // durable by could take the error of the erase's own pages (Linux reports a writeback error
    // once per descriptor), and the erase's fdatasync then return success for pages it lost.
    await Promise.all(
      rounds.map((round) =>
        Promise.all([round.journalWritten, round.written, round.fdatasyncReturned]),
      ),
    );
    // Erased before anyone is told: a crash in between must not replay what was refused.
    if (rounds.length > 0) {
      const file = rounds[0]!.file;
      // What this descriptor has not yet reported of the rounds' failed pages, which are refused
      // already, is taken now: the erase's fdatasync then reports only a failure of its own.
      await file.handle.datasync().catch(() => {});
      try {
        // Only what reached the file is erased, and never past its end: a round whose write failed
        // for want of space (ENOSPC) left nothing there, and zeros written past the end would need
        // the space that is missing, turning a full disk into a journal this process cannot reopen.
        const sizeBytes = await file.handle.sizeBytes();
        for (const round of rounds) {
          if (round.start >= sizeBytes) continue;
          const bytes = Math.min(ROUND_HEADER_BYTES, sizeBytes - round.start);
          await file.handle.writev([zeroBytes(bytes)], round.start);
        }
        await file.handle.datasync();
      } catch (cutError) {
        const first = rounds.reduce((a, b) => (b.start < a.start ? b : a));
        const what = `${reasonOf(failure)}; erasing the refused rounds from byte ${first.start} of ${file.path} failed too (${reasonOf(cutError)})`;
        let message: string;
        try {
          // Beside the entries of earlier processes whose files are still there.
          const entries = [
            ...((await readRefusedRounds(this.#fs, this.#dir)) ?? []),
            {
              file: path.basename(file.path),
              position: first.start,
              round: first.number,
              checksum: first.checksum,
            },
          ];
          await writeRefusedRounds(this.#fs, this.#dir, entries);
          message = `${what}; recorded in ${path.join(JOURNAL_DIR, REFUSED_FILE)}: the next open reads that file as ending there`;
        } catch (recordError) {
          message = `${what}, and recording them failed (${reasonOf(recordError)}): fill that file with zeros from byte ${first.start} before reopening the store`;
          unrepairedJournals.set(path.resolve(this.#dir), message);
        }
        failure = new OffsetStoreError('LOG_STORAGE_ERROR', message, { cause: error });
        this.#failure = failure;
      }
    }
    const refused = new Set<Submission>([...taken, ...queued]);
    for (const round of rounds) for (const submission of round.taken) refused.add(submission);
    for (const submission of refused) submission.reject(failure);
  }

  /**
   * Checks that the file rounds are written into is still in the journal's folder. One removed while
   * the store runs (by hand, a cleanup job) keeps its rounds only until the process ends, while
   * acknowledged batches of the logs may be durable nowhere else: every log that wrote into it syncs
   * itself now, and the next round starts a new file (the removed one is retired without a name to
   * delete).
   */
  async checkFilePresent(): Promise<void> {
    const file = this.#file;
    if (file === undefined || file.gone === true || this.#closed || this.#failure !== undefined)
      return;
    if ((await this.#fs.sizeBytes(file.path)) !== null) return;
    // Retired meanwhile (full, its rounds all durable and synced by their logs): not a removal.
    if (this.#file !== file) return;
    file.gone = true;
    this.#onWarning(
      `journal file ${file.path} was removed while the store ran: the logs that wrote into it sync what they wrote, and the next round starts a new file`,
    );
    // Rounds claimed in it before `gone` was set are acknowledged from it too: their logs sync
    // once those rounds are over (each log's copy written), or the journal has failed.
    await this.#untilDrained(file);
    await Promise.allSettled([...file.buckets].map((bucket) => this.#syncBucket(bucket)));
  }

  /** Settles once every round claimed in `file` is acknowledged, or the journal has failed. */
  #untilDrained(file: OpenFile): Promise<void> {
    if (file.durableRound >= file.round || this.#failure !== undefined) return Promise.resolve();
    return new Promise((resolve) => (file.drained ??= []).push(resolve));
  }

  /** Queues a full file for deletion once every log that wrote into it has synced itself. */
  #retire(file: OpenFile): void {
    this.#toRetire.push(file);
    this.#retiring ??= this.#retireLoop();
  }

  async #retireLoop(): Promise<void> {
    try {
      while (this.#toRetire.length > 0) {
        const file = this.#toRetire[0]!;
        try {
          await closeFile(file);
        } catch {
          // Closing a file already made durable changes nothing of what it holds.
        }
        const results = await Promise.allSettled(
          [...file.buckets].map((bucket) => this.#syncBucket(bucket)),
        );
        const failed = results.find((r) => r.status === 'rejected');
        this.#toRetire.shift();
        if (failed !== undefined) {
          // Kept: the next open replays it (what the logs hold already is skipped).
          this.#onWarning(
            `${file.path} kept: a log that wrote into it could not sync itself: ${(failed.reason as Error).message}`,
          );
          continue;
        }
        if (file.gone === true) continue;
        try {
          await this.checkDirectory?.();
          await this.#fs.unlink(file.path);
        } catch (error) {
          this.#onWarning(
            `${file.path}: deleting a retired journal file failed: ${(error as Error).message}`,
          );
        }
      }
    } finally {
      this.#retiring = undefined;
    }
  }

  /** Waits for the rounds in flight (and the files being retired). */
  async drain(): Promise<void> {
    while (
      this.#flushing !== undefined ||
      this.#retiring !== undefined ||
      (this.#inFlight.length > 0 && this.#failure === undefined)
    ) {
      await this.#flushing;
      await this.#inFlight.at(-1)?.settled;
      await this.#retiring;
    }
  }

  /**
   * Closes the journal. With `logsClosed` (every log closed cleanly, so each fdatasynced all it
   * wrote), every journal file is deleted: nothing in them is needed any more. Otherwise they are
   * kept for the next open to replay.
   */
  async close(logsClosed: boolean): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.drain();
    const file = this.#file;
    this.#file = undefined;
    if (file !== undefined) await closeFile(file).catch(() => {});
    if (!logsClosed || this.#failure !== undefined) return;
    // Kept for the next open (which finds nothing left to replay) rather than deleted by name where
    // another store's journal may now be.
    try {
      await this.checkDirectory?.();
    } catch (error) {
      this.#onWarning(`${this.#dir}: journal files kept: ${(error as Error).message}`);
      return;
    }
    const names = (await this.#fs.readdir(this.#dir)).filter(
      (name) => parseJournalFileName(name) !== undefined,
    );
    if (names.length === 0) return;
    for (const name of names) await this.#fs.unlink(path.join(this.#dir, name));
    // Durably: the next open numbers its files from 1 again, and a deleted file that came back
    // after a power loss would then read as newer than them.
    await this.#fs.syncDir(this.#dir);
  }
}

/**
 * Reads the journal for an open (`readJournal`), refusing with LOG_STORAGE_ERROR a journal this
 * process failed to erase a refused round of (it would replay commits that were refused).
 */
export async function readJournalForRecovery(
  fs: FileSystem,
  storeDir: string,
  bucketCount: number,
  batchBytesMax: number,
): Promise<JournalContents> {
  const unrepaired = unrepairedJournals.get(path.resolve(storeDir, JOURNAL_DIR));
  if (unrepaired !== undefined) throw new OffsetStoreError('LOG_STORAGE_ERROR', unrepaired);
  return readJournal(fs, storeDir, bucketCount, batchBytesMax);
}

/**
 * Deletes journal files read at open (`names`), durably, once every offsets-bucket has replayed
 * them and made what it replayed durable in its log.
 */
export async function deleteJournalFiles(
  fs: FileSystem,
  storeDir: string,
  names: readonly string[],
): Promise<void> {
  const dir = path.join(storeDir, JOURNAL_DIR);
  if (names.length > 0) {
    for (const name of names) await fs.unlink(path.join(dir, name));
    await fs.syncDir(dir);
  }
  // After the files it names: a crash in between leaves it naming files that are gone. Entries of
  // files not deleted (a later process's, written while these waited) stay.
  const entries = await readRefusedRounds(fs, dir);
  if (entries === undefined) return;
  const deleted = new Set(names);
  const kept = entries.filter((entry) => !deleted.has(entry.file));
  if (kept.length === entries.length) return;
  if (kept.length > 0) {
    await writeRefusedRounds(fs, dir, kept);
  } else {
    await fs.unlink(path.join(dir, REFUSED_FILE));
    await fs.syncDir(dir);
  }
}

/** One entry of the record of refused rounds (REFUSED_FILE): where a refused round begins. */
interface RefusedRound {
  file: string;
  position: number;
  round: number;
  checksum: number;
}

async function writeRefusedRounds(
  fs: FileSystem,
  dir: string,
  entries: readonly RefusedRound[],
): Promise<void> {
  await writeDurably(
    fs,
    path.join(dir, REFUSED_FILE),
    Buffer.from(JSON.stringify({ refused: entries })),
  );
}

/**
 * Reads the record of refused rounds, if there is one: its entries (one for a record of an earlier
 * version, a single entry object); CORRUPT_MESSAGE for one that is not a record.
 */
async function readRefusedRounds(fs: FileSystem, dir: string): Promise<RefusedRound[] | undefined> {
  const filePath = path.join(dir, REFUSED_FILE);
  const bytes = await fs.readFile(filePath);
  if (bytes === null) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const uint32 = (value: unknown): boolean =>
    Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= 0xffffffff;
  const isEntry = (value: unknown): value is RefusedRound => {
    const entry = value as Partial<RefusedRound> | null;
    return (
      typeof entry === 'object' &&
      entry !== null &&
      typeof entry.file === 'string' &&
      parseJournalFileName(entry.file) !== undefined &&
      Number.isSafeInteger(entry.position) &&
      entry.position! >= 0 &&
      entry.position! % ROUND_ALIGN === 0 &&
      uint32(entry.round) &&
      uint32(entry.checksum)
    );
  };
  const list = (parsed as { refused?: unknown } | null)?.refused;
  if (Array.isArray(list) && list.length > 0 && list.every(isEntry)) return list;
  if (isEntry(parsed)) return [parsed];
  throw new OffsetStoreError(
    'CORRUPT_MESSAGE',
    `${filePath} is not a record of refused rounds ({ "refused": [{ file, position, round, checksum }, ...] }): the journal cannot be read without knowing which rounds were refused`,
  );
}

function alignUp(position: number): number {
  return Math.ceil(position / ROUND_ALIGN) * ROUND_ALIGN;
}

/**
 * Reads every journal file of the store at `storeDir` (read only): the batches each offsets-bucket
 * has in them, in order. Refuses a damaged durable round (CORRUPT_MESSAGE).
 */
export async function readJournal(
  fs: FileSystem,
  storeDir: string,
  bucketCount: number,
  batchBytesMax: number,
): Promise<JournalContents> {
  const dir = path.join(storeDir, JOURNAL_DIR);
  const names = (await fs.readdir(dir))
    .filter((name) => parseJournalFileName(name) !== undefined)
    .sort();
  const contents: JournalContents = { batches: new Map(), files: [], rounds: 0, tornRounds: [] };
  const refused = await readRefusedRounds(fs, dir);
  const lastOffsets = new Map<number, number>();
  /** How the file read before ended: its sequence, the rounds read, and what ended it. */
  let previous: { sequence: number; rounds: number; end: string } | undefined;
  for (const name of names) {
    const filePath = path.join(dir, name);
    const bytes = await fs.readFile(filePath);
    if (bytes === null) {
      // Deleted since it was listed: a store open in another process (log verify reads a live
      // store) retired it once its logs had synced. What the next file records of it is moot.
      previous = undefined;
      continue;
    }
    contents.files.push(name);
    const sequence = parseJournalFileName(name)!;
    let position = 0;
    let round = 1;
    let end = '';
    for (;;) {
      if (position + ROUND_HEADER_BYTES > bytes.length) {
        end = `${filePath} at byte ${position}: round ${round} is missing (the file ends)`;
        break;
      }
      if (
        refused?.some(
          (entry) =>
            name === entry.file &&
            position === entry.position &&
            bytes.readUInt32LE(position) === MAGIC &&
            bytes.readUInt32LE(position + 16) === entry.round &&
            bytes.readUInt32LE(position + 4) === entry.checksum,
        ) === true
      ) {
        // Refused to its callers, and its erase failed: the file ends here.
        contents.refusedFrom = { file: filePath, position };
        end = `${filePath} at byte ${position}: round ${round} was refused`;
        break;
      }
      const read = readRound(bytes, position, sequence, round, bucketCount, batchBytesMax);
      if (read.kind === 'foreign')
        throw new OffsetStoreError(
          'CORRUPT_MESSAGE',
          `${filePath} at byte ${position}: round ${round}'s header names journal file ${read.sequence}, not ${sequence}: the file was renamed, or copied in from another journal (a crash never writes that)${JOURNAL_DAMAGE_WAY_OUT}`,
        );
      if (read.kind !== 'ok') {
        // A later round that knew this one durable proves it was acknowledged. The round right
        // after it may have been in flight with it (ROUNDS_IN_FLIGHT_MAX), knowing only the one
        // before durable, while a round after that knew it: every later round is asked.
        end = `${filePath} at byte ${position}: round ${round} is ${read.kind === 'end' ? 'missing (zeros)' : `damaged (${read.reason})`}`;
        const later = findRoundKnowingDurable(bytes, position + ROUND_ALIGN, sequence, round);
        if (later !== undefined)
          throw new OffsetStoreError(
            'CORRUPT_MESSAGE',
            `${end}, but round ${later.round} at byte ${later.position} was written once it was durable${JOURNAL_DAMAGE_WAY_OUT}`,
          );
        if (read.kind === 'invalid')
          contents.tornRounds.push({ file: filePath, position, reason: read.reason });
        break;
      }
      if (
        round === 1 &&
        previous !== undefined &&
        previous.sequence === sequence - 1 &&
        read.durableRound > previous.rounds
      )
        throw new OffsetStoreError(
          'CORRUPT_MESSAGE',
          `${previous.end}, but ${filePath}'s first round records ${read.durableRound} durable rounds in it: that file was begun only once they were durable${JOURNAL_DAMAGE_WAY_OUT}`,
        );
      for (const { bucket, batch } of read.entries) {
        const logOffset = readBatchLogOffset(batch);
        const previous = lastOffsets.get(bucket);
        if (previous !== undefined && logOffset <= previous)
          throw new OffsetStoreError(
            'CORRUPT_MESSAGE',
            `${filePath} at byte ${position}: offsets-bucket ${bucket}'s batch at log offset ${logOffset} follows its batch at log offset ${previous} in the journal`,
          );
        lastOffsets.set(bucket, logOffset);
        let list = contents.batches.get(bucket);
        if (list === undefined) contents.batches.set(bucket, (list = []));
        list.push(batch);
      }
      contents.rounds++;
      round++;
      position = alignUp(position + ROUND_HEADER_BYTES + read.bodyBytes);
    }
    previous = { sequence, rounds: round - 1, end };
  }
  return contents;
}

type RoundRead =
  | {
      kind: 'ok';
      bodyBytes: number;
      durableRound: number;
      entries: { bucket: number; batch: Buffer }[];
    }
  | { kind: 'end' }
  | { kind: 'invalid'; reason: string }
  /** A round header naming another file: no crash writes one (files are never reused). */
  | { kind: 'foreign'; sequence: number };

/** Reads the round expected at `position` (see the module comment for its format). */
function readRound(
  bytes: Buffer,
  position: number,
  sequence: number,
  round: number,
  bucketCount: number,
  batchBytesMax: number,
): RoundRead {
  const magic = bytes.readUInt32LE(position);
  if (magic === 0) {
    // Zeros where the round would start: the end, when every byte up to the next aligned position is
    // zero too (a header cut short is damage, read below).
    let zero = true;
    for (let p = position; p < Math.min(bytes.length, position + ROUND_HEADER_BYTES); p++)
      if (bytes[p] !== 0) zero = false;
    if (zero) return { kind: 'end' };
  }
  if (magic !== MAGIC) return { kind: 'invalid', reason: `no round header (magic ${magic})` };
  const bodyBytes = bytes.readUInt32LE(position + 8);
  const end = position + ROUND_HEADER_BYTES + bodyBytes;
  if (end > bytes.length)
    return { kind: 'invalid', reason: `round of ${bodyBytes} bytes runs past the file end` };
  const named = bytes.readUInt32LE(position + 12);
  if (named !== sequence) {
    // A whole round of another file (its checksum holds) is no damage: it was put here. Else the
    // sequence field is damaged like any other byte.
    const whole = readRound(bytes, position, named, round, Number.MAX_SAFE_INTEGER, batchBytesMax);
    return whole.kind === 'ok'
      ? { kind: 'foreign', sequence: named }
      : { kind: 'invalid', reason: `round of another journal file (${named}), damaged` };
  }
  if (bytes.readUInt32LE(position + 16) !== round)
    return {
      kind: 'invalid',
      reason: `round number ${bytes.readUInt32LE(position + 16)}, expected ${round}`,
    };
  const count = bytes.readUInt32LE(position + 20);
  if (count * (ENTRY_HEADER_BYTES + LENGTH_FIELD_BYTES) > bodyBytes)
    return { kind: 'invalid', reason: `${count} entries cannot fit in ${bodyBytes} bytes` };
  const summary = Buffer.allocUnsafe(SUMMARY_HEADER_BYTES + (ENTRY_HEADER_BYTES + 9) * count);
  bytes.copy(summary, 0, position + 8, position + ROUND_HEADER_BYTES);
  const entries: { bucket: number; batch: Buffer }[] = [];
  let at = position + ROUND_HEADER_BYTES;
  let summaryAt = SUMMARY_HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    if (at + ENTRY_HEADER_BYTES + 9 > end)
      return { kind: 'invalid', reason: `entry ${i} runs past the round's end` };
    const bucket = bytes.readUInt32LE(at);
    bytes.copy(summary, summaryAt, at, at + ENTRY_HEADER_BYTES + 9);
    summaryAt += ENTRY_HEADER_BYTES + 9;
    const check = checkBatch(bytes, at + ENTRY_HEADER_BYTES, end, batchBytesMax);
    if (check.kind !== 'ok') return { kind: 'invalid', reason: `entry ${i}: ${check.reason}` };
    if (bucket >= bucketCount)
      return {
        kind: 'invalid',
        reason: `entry ${i} names offsets-bucket ${bucket} of ${bucketCount}`,
      };
    const batchStart = at + ENTRY_HEADER_BYTES;
    // A copy: the file's buffer is released once read.
    entries.push({
      bucket,
      batch: Buffer.from(bytes.subarray(batchStart, batchStart + check.sizeBytes)),
    });
    at = batchStart + check.sizeBytes;
  }
  if (at !== end)
    return {
      kind: 'invalid',
      reason: `entries end at ${at - position} of ${bodyBytes + ROUND_HEADER_BYTES} bytes`,
    };
  if (xxh32(summary) !== bytes.readUInt32LE(position + 4))
    return { kind: 'invalid', reason: 'round checksum mismatch' };
  return { kind: 'ok', bodyBytes, durableRound: bytes.readUInt32LE(position + 24), entries };
}

/**
 * The first valid round of this file at an aligned position from `from` with a later number than
 * `round` that records `round` durable (its durable-round field at least `round`).
 */
function findRoundKnowingDurable(
  bytes: Buffer,
  from: number,
  sequence: number,
  round: number,
): { position: number; round: number } | undefined {
  for (let p = alignUp(from); p + ROUND_HEADER_BYTES <= bytes.length; p += ROUND_ALIGN) {
    if (bytes.readUInt32LE(p) !== MAGIC || bytes.readUInt32LE(p + 12) !== sequence) continue;
    const later = bytes.readUInt32LE(p + 16);
    if (later <= round) continue;
    const bodyBytes = bytes.readUInt32LE(p + 8);
    if (p + ROUND_HEADER_BYTES + bodyBytes > bytes.length) continue;
    // The header's own fields are covered by the round checksum: check it on its summary.
    const read = readRound(
      bytes,
      p,
      sequence,
      later,
      Number.MAX_SAFE_INTEGER,
      Number.MAX_SAFE_INTEGER,
    );
    if (read.kind === 'ok' && read.durableRound >= round) return { position: p, round: later };
  }
  return undefined;
}
