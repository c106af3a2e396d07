/**
 * One offsets-bucket's offsets table: its log and its state machine, joined by the commit path
 * (docs/architecture.md, "The commit path"). Requests arrive validated; this class encodes, marks
 * pending, appends, and applies the batch to the state only once the append is durable (or clears
 * the marks if it failed).
 *
 * Every write and every truncation goes through the log port (LogPort): the local segmented log of
 * a single-process store, or a replicated log in a cluster (`OffsetsTable.over`). Only what exists
 * for local segments alone (LMDB checkpoints beside them, the log cleaner's segment lists) uses
 * `segmentLog`, which is undefined for any other log.
 */
import * as path from 'node:path';
import {
  BATCH_HEADER_BYTES,
  buildGroupSnapshotBatch,
  buildOffsetBatch,
  offsetRecordBytes,
  offsetRecordPrefixBytes,
  readBatchRecordCount,
  type OffsetRecordSpec,
} from '../codec/index.js';
import { OffsetStoreError, isOffsetStoreError } from '../errors/index.js';
import {
  Log,
  inspectLog,
  type AppendEntry,
  type BatchVisitor,
  type Durability,
  type LogInspection,
  type LogOptions,
  type LogPort,
  type LogRecoveryReport,
} from '../log/index.js';
import type { FileSystem } from '../io/index.js';
import { assert, nextTurn } from '../util/index.js';
import { LMDB_DATA_FILE } from './checkpoint-seal.js';
import { CHECKPOINT_DIR, CheckpointStore, type CheckpointInfo } from './checkpoint-store.js';
import { OffsetsTableState } from './offsets-table-state.js';

/** Most records per batch when the state is written back into the log (fewer when their bytes would pass batchBytesMax). */
const IMAGE_RECORDS_PER_BATCH = 10_000;

/** How to open an offsets table. */
export interface OffsetsTableOptions {
  /** Options of the table's log (directory, file system, durability, limits). */
  log: LogOptions;
  /** Use LMDB checkpoints (the checkpoint strategy): restore the newest, create the environment if none. */
  useCheckpoints: boolean;
  /** Without a checkpoint, recovery replays the log from here (the manifest's log start). */
  logStart: number;
  /** What the manifest knows of the log end (see LogExpectations). */
  knownEnd?: { logOffset: number; exact: boolean };
  /** Receives recoverable problems (an ignored checkpoint). */
  onWarning: (message: string) => void;
  /**
   * The store is open to read only (its file system keeps every change in memory): checkpoints are
   * read from an LMDB environment opened read-only and never written or discarded (LMDB does not
   * go through the file-system port), and every append is refused with STORE_READ_ONLY.
   */
  readOnly?: boolean;
}

/** What recovery did, beyond the log's own report. */
export interface OffsetsTableRecovery extends LogRecoveryReport {
  /** Log offset of the checkpoint restored, if any. */
  checkpointLogOffset: number | undefined;
  /** Records in the batches replayed (what recovery applied on top of the checkpoint, if any). */
  recordsReplayed: number;
  /** Wall time of the recovery, checkpoint restore included, in ms. */
  recoveryMs: number;
}

/** What one checkpoint run did. */
export interface CheckpointRun {
  /** The newest checkpoint after the run; undefined when the table does not use checkpoints. */
  info: CheckpointInfo | undefined;
  /** Bytes of segments deleted because the checkpoint covers them. */
  segmentBytesDeleted: number;
  /** Bytes of checkpoint values written (0 when the newest checkpoint was already current). */
  bytesWritten: number;
}

/** An open offsets table. */
/** Where a log is known to end (see LogExpectations.knownEnd). */
type KnownEnd = { logOffset: number; exact: boolean };

/**
 * The log end a recovery may rely on: what the manifest recorded, raised to the checkpoint's log
 * offset when the checkpoint was written of batches durable in the log (a log ending below it lost
 * durable batches: damage to report, not a torn tail to cut). That is every checkpoint this version
 * writes (`logDurable`), and any checkpoint of a log opened in 'fsync' durability, where an applied
 * batch is durable. An older checkpoint opened in 'os' may describe batches the log lawfully lost.
 */
function knownEndWith(
  known: KnownEnd | undefined,
  checkpoint: CheckpointInfo | undefined,
  durability: Durability,
): KnownEnd | undefined {
  if (
    checkpoint === undefined ||
    (durability !== 'fsync' && checkpoint.logDurable !== true) ||
    (known !== undefined && known.logOffset >= checkpoint.logOffset)
  )
    return known;
  return { logOffset: checkpoint.logOffset, exact: false };
}

/**
 * Where recovery replays the log from: the checkpoint's log offset, or the store's log start without
 * one. A checkpoint below the log start is one taken, before this was fixed, of a bucket that had
 * applied nothing since the log start was set (a conversion away from checkpoints and back, with
 * nothing written in between): its contents are the state the log holds from the log start, and
 * its log offset was wrongly 0; the log start, where the log begins, is the right place.
 */
function replayStart(checkpoint: CheckpointInfo | undefined, logStart: number): number {
  return Math.max(checkpoint?.logOffset ?? logStart, logStart);
}

const WRITE_APPENDED = Symbol('writeAppended');
const WRITE_FAILED = Symbol('writeFailed');

/**
 * A batch of the table in the log's queue (LogPort.appendEntry): an offset commit (`records`) or a
 * group snapshot (null). The log tells it, in log order and synchronously, when it is durable or
 * refused; it is then applied to the table (or its pending marks cleared) at once, so that
 * batches are applied in the order the log made them durable whatever their kind, and its caller's
 * promise settles. Called by the log's flush loop: whatever is thrown here is this caller's
 * failure, never the round's.
 */
class TableWrite implements AppendEntry {
  settled = false;
  /** Appended (counted in the table's writes in flight). */
  issued = false;
  #told = false;

  constructor(
    readonly table: OffsetsTable,
    readonly batch: Buffer,
    readonly groupId: string,
    readonly records: readonly OffsetRecordSpec[] | null,
    readonly commitTimestampMs: number,
    /** Resolves the caller's promise: with the log offset for a snapshot, with nothing for a commit. */
    readonly done: (logOffset?: number) => void,
    readonly failed: (error: unknown) => void,
  ) {}

  resolve(logOffset: number): void {
    if (this.#told) return;
    this.#told = true;
    try {
      this.table[WRITE_APPENDED](this, logOffset);
    } catch (error) {
      this.failed(error);
      return;
    }
    if (this.records === null) this.done(logOffset);
    else this.done();
  }

  reject(error: unknown): void {
    // Told once: a log that fails a round after telling some of its entries must not reach them
    // again, and #writesInFlight would count one of them twice.
    if (this.#told) return;
    this.#told = true;
    try {
      this.table[WRITE_FAILED](this);
    } finally {
      this.failed(error);
    }
  }
}

/**
 * The checkpoint environment at `dir` opened read-only, or undefined when there is none: one that is
 * not there is not made (LMDB writes past the file-system port).
 */
async function openCheckpointsToRead(
  fs: FileSystem,
  dir: string,
): Promise<CheckpointStore | undefined> {
  if ((await fs.sizeBytes(path.join(dir, LMDB_DATA_FILE))) === null) return undefined;
  return CheckpointStore.open(fs, dir, { readOnly: true });
}

export class OffsetsTable {
  /** The table's log port: only this class appends to it; stats and compaction read its figures. */
  readonly log: LogPort;
  /** The same log when it is local segment files (the log cleaner and LMDB checkpoints need them); else undefined. */
  readonly segmentLog: Log | undefined;
  /** The materialized index and pending marks; reads go straight to it, changes only through this class. */
  readonly state: OffsetsTableState;
  #checkpoints: CheckpointStore | undefined;
  /** Writes appended and not yet applied or failed. */
  #writesInFlight = 0;
  /**
   * Set by writeImage while it waits for the writes in flight: writes made meanwhile wait for it
   * (in the order they came), and so do writes made while any of those still waits, so none
   * overtakes another. Undefined otherwise: a write then appends before it returns.
   */
  #gate: Promise<void> | undefined;
  /** Writes waiting on #gate. */
  #gated = 0;

  readonly #onWarning: (message: string) => void;
  /** Set for a store open to read only: every append is refused (see OffsetsTableOptions.readOnly). */
  readonly #readOnly: boolean;

  /** STORE_READ_ONLY for a table of a store open to read only. */
  #checkWritable(): void {
    if (this.#readOnly)
      throw new OffsetStoreError(
        'STORE_READ_ONLY',
        `${this.segmentLog?.dir ?? 'an offsets table'}: the store is open to read only: nothing is written`,
      );
  }

  private constructor(
    log: LogPort,
    state: OffsetsTableState,
    checkpoints: CheckpointStore | undefined,
    onWarning: (message: string) => void = () => {},
    readOnly = false,
  ) {
    this.#onWarning = onWarning;
    this.#readOnly = readOnly;
    this.log = log;
    this.segmentLog = log instanceof Log ? log : undefined;
    this.state = state;
    this.#checkpoints = checkpoints;
  }

  /**
   * A table over a log its owner opened and replayed into `state` already (a replicated log: the
   * owner restored its checkpoint and replayed the tail). No LMDB checkpoints: `checkpoint` does
   * nothing, and whoever checkpoints the state elsewhere frees the log through `log.truncateBelow`.
   */
  static over(log: LogPort, state: OffsetsTableState): OffsetsTable {
    assert(
      state.appliedLogOffset < log.nextOffset,
      'the state was replayed from this log, not past its end',
    );
    return new OffsetsTable(log, state, undefined);
  }

  /**
   * Opens the table: restores the newest valid checkpoint (if any), then replays the log from its
   * log offset. A checkpoint that fails verification is ignored with a warning and the next older
   * one (or the whole log) is used instead; so is one past the log end when the log is not
   * fdatasynced (an fdatasynced log ending below a checkpoint lost batches: CORRUPT_MESSAGE).
   */
  static async open(
    options: OffsetsTableOptions,
  ): Promise<{ table: OffsetsTable; report: OffsetsTableRecovery }> {
    const startedMs = performance.now();
    const checkpointDir = path.join(options.log.dir, CHECKPOINT_DIR);
    let checkpoints: CheckpointStore | undefined;
    let damaged = false;
    const readOnly = options.readOnly === true;
    if (options.useCheckpoints) {
      try {
        checkpoints = readOnly
          ? await openCheckpointsToRead(options.log.fs, checkpointDir)
          : await CheckpointStore.open(options.log.fs, checkpointDir);
      } catch (error) {
        if (!isOffsetStoreError(error, 'CORRUPT_MESSAGE')) throw error;
        options.onWarning(`${checkpointDir}: ignoring every checkpoint: ${error.message}`);
        damaged = true;
      }
    }
    try {
      const candidates = checkpoints?.list() ?? [];
      for (const problem of checkpoints?.unreadable() ?? [])
        options.onWarning(`${checkpointDir}: ${problem}`);
      for (const candidate of [...candidates, undefined]) {
        const state = new OffsetsTableState();
        if (candidate !== undefined) {
          try {
            const loaded = checkpoints!.load(candidate);
            for (const [groupId, offsets] of loaded.groups) state.restoreGroup(groupId, offsets);
            for (const [groupId, snapshot] of loaded.snapshots)
              state.restoreSnapshot(groupId, snapshot);
          } catch (error) {
            options.onWarning(
              `${checkpointDir}: ignoring checkpoint at log offset ${candidate.logOffset}: ${(error as Error).message}`,
            );
            continue;
          }
        }
        // Without a checkpoint the log must hold everything from the store's log start: a log that
        // begins later lost segments (or the checkpoint they were deleted for), and Log.open refuses it.
        const fromLogOffset = replayStart(candidate, options.logStart);
        // Applied up to just below it even when the log holds nothing from there, so that the next
        // checkpoint is taken at (at least) the log start, never below it.
        state.restoreAppliedLogOffset(fromLogOffset - 1);
        let recordsReplayed = 0;
        const { log, report } = await Log.open(options.log, {
          fromLogOffset,
          knownEnd: knownEndWith(options.knownEnd, candidate, options.log.durability),
          visit: (buf, position, logOffset) => {
            state.applyBatch(buf, position, logOffset);
            recordsReplayed += readBatchRecordCount(buf, position);
          },
        });
        if (candidate !== undefined && candidate.logOffset > report.logEndOffset) {
          // Durability 'os', a checkpoint of an older version only (knownEndWith): the log lost its
          // unsynced tail, and the checkpoint describes batches it no longer holds. It goes before
          // the log can grow past it again, when an open would restore the lost commits over the
          // log's new ones.
          await log.close();
          if (!readOnly) await checkpoints!.discard(candidate.logOffset);
          options.onWarning(
            `${checkpointDir}: ${readOnly ? 'ignored' : 'discarded'} the checkpoint at log offset ${candidate.logOffset}: past the log end ${report.logEndOffset} (written by an earlier version of batches the log had acknowledged in durability 'os', which a power loss took)`,
          );
          continue;
        }
        if (fromLogOffset > report.logEndOffset) {
          // The store moved the log's start onto batches (a conversion's image) that are gone: what
          // they held is lost, and appending below the start would break the log's order.
          await log.close();
          throw new OffsetStoreError(
            'CORRUPT_MESSAGE',
            `${options.log.dir}: the log ends at log offset ${report.logEndOffset}, below the log start ${fromLogOffset} the store recorded (the batches from there, which held the bucket's offsets, are missing)`,
          );
        }
        if (damaged && !readOnly) {
          // The whole log recovered the state (Log.open refused it otherwise: it must start at the
          // log start): start a new environment in place of the damaged one.
          try {
            await CheckpointStore.setAside(options.log.fs, checkpointDir);
            checkpoints = await CheckpointStore.open(options.log.fs, checkpointDir);
          } catch (error) {
            await log.close();
            throw error;
          }
        }
        const recovery: OffsetsTableRecovery = {
          ...report,
          recordsReplayed,
          checkpointLogOffset: candidate?.logOffset,
          recoveryMs: performance.now() - startedMs,
        };
        return {
          table: new OffsetsTable(log, state, checkpoints, options.onWarning, readOnly),
          report: recovery,
        };
      }
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `${options.log.dir}: unreachable recovery state`,
      );
    } catch (error) {
      await checkpoints?.close();
      throw error;
    }
  }
  /**
   * What `open` would find, read only (for `log verify`): the checkpoint it would restore (the
   * newest one that loads, verified, and does not lie past the end of a log that may lawfully have
   * lost its tail: durability 'os'; see knownEndWith) and the inspection of the
   * log from there (log-inspection.ts). Each attempt (one per candidate checkpoint) gets a fresh
   * visitor from `newVisitor`, which sees every batch of the log.
   */
  static async inspect(
    options: OffsetsTableOptions,
    newVisitor?: () => BatchVisitor,
  ): Promise<{
    inspection: LogInspection;
    checkpointLogOffset: number | undefined;
    /** Damage found in the checkpoint environment (each then ignored, as an open ignores it). */
    checkpointProblems: { file: string; reason: string }[];
  }> {
    const checkpointDir = path.join(options.log.dir, CHECKPOINT_DIR);
    const environmentFile = path.join(checkpointDir, LMDB_DATA_FILE);
    const checkpointProblems: { file: string; reason: string }[] = [];
    let checkpoints: CheckpointStore | undefined;
    try {
      if (options.useCheckpoints)
        checkpoints = await openCheckpointsToRead(options.log.fs, checkpointDir);
    } catch (error) {
      if (!isOffsetStoreError(error, 'CORRUPT_MESSAGE')) throw error; // a damaged environment: as open, the log alone
      checkpointProblems.push({
        file: environmentFile,
        reason: `every checkpoint is ignored: ${error.message}`,
      });
    }
    try {
      for (const reason of checkpoints?.unreadable() ?? [])
        checkpointProblems.push({ file: environmentFile, reason });
      for (const candidate of [...(checkpoints?.list() ?? []), undefined]) {
        if (candidate !== undefined) {
          try {
            checkpoints!.load(candidate);
          } catch (error) {
            checkpointProblems.push({
              file: environmentFile,
              reason: `the checkpoint at log offset ${candidate.logOffset} is ignored: ${(error as Error).message}`,
            });
            continue;
          }
        }
        const fromLogOffset = replayStart(candidate, options.logStart);
        const knownEnd = knownEndWith(options.knownEnd, candidate, options.log.durability);
        const inspection = await inspectLog(
          options.log.fs,
          options.log.dir,
          options.log,
          { fromLogOffset, knownEnd },
          { stopAtCorruption: false, visit: newVisitor?.() },
        );
        if (candidate !== undefined && candidate.logOffset > inspection.logEnd) {
          checkpointProblems.push({
            file: environmentFile,
            reason:
              candidate.logDurable === true
                ? `the checkpoint at log offset ${candidate.logOffset} lies past the log end ${inspection.logEnd}: the log lost batches that were durable when it was written (an open refuses the store)`
                : `the checkpoint at log offset ${candidate.logOffset} lies past the log end ${inspection.logEnd}: written by an earlier version, it describes batches the log lost (durability 'os'); an open in 'os' discards it, one in 'fsync' refuses the store`,
          });
          continue;
        }
        if (fromLogOffset > inspection.logEnd) {
          // As open refuses it: the batches from the recorded log start are gone.
          inspection.damage.push({
            kind: 'corrupt',
            file: options.log.dir,
            position: 0,
            bytesAfter: 0,
            reason: `the log ends at log offset ${inspection.logEnd}, below the log start ${fromLogOffset} the store recorded (the batches from there, which held the bucket's offsets, are missing)`,
          });
        }
        return { inspection, checkpointLogOffset: candidate?.logOffset, checkpointProblems };
      }
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `${options.log.dir}: unreachable inspection state`,
      );
    } finally {
      await checkpoints?.close();
    }
  }

  /** Writes offset records (values or tombstones) of one group as one batch; resolves once durable and applied. */
  writeOffsets(
    groupId: string,
    records: OffsetRecordSpec[],
    commitTimestampMs: number,
  ): Promise<void> {
    return this.#writeOffsets(groupId, records, commitTimestampMs, this.#gate);
  }

  #writeOffsets(
    groupId: string,
    records: OffsetRecordSpec[],
    commitTimestampMs: number,
    gate: Promise<void> | undefined,
    admitted = false,
  ): Promise<void> {
    // Not async, as the callers up to commitOffsets are not: the log tells the write itself
    // (TableWrite), so that one promise, the caller's, stands between the log and the caller.
    return new Promise<void>((resolve, reject) => {
      const batch = buildOffsetBatch(groupId, records, commitTimestampMs);
      this.state.markPending(groupId, records);
      this.#issue(
        new TableWrite(
          this,
          batch,
          groupId,
          records,
          commitTimestampMs,
          resolve as () => void,
          reject,
        ),
        gate,
        admitted,
      );
    });
  }

  /** A TableWrite's batch is durable: applied now, in log order (see TableWrite). */
  [WRITE_APPENDED](write: TableWrite, logOffset: number): void {
    this.#writesInFlight--;
    if (write.records === null) this.state.applyBatch(write.batch, 0, logOffset);
    else
      this.state.onOffsetCommitAppend(
        write.groupId,
        write.records,
        write.commitTimestampMs,
        write.batch,
        logOffset,
      );
  }

  /** A TableWrite was refused or its append failed: nothing of it is applied. */
  [WRITE_FAILED](write: TableWrite): void {
    if (write.issued) this.#writesInFlight--;
    if (write.records !== null) this.state.failPendingOffsetWrite(write.groupId, write.records);
  }

  /**
   * Appends `write`, counted in #writesInFlight until it settles. Without a gate the append is
   * issued here (a refusal is thrown, and `write` is not told); with one, once the gate opens, the
   * write counting as a waiter until its append is issued, and the last waiter clearing the gate,
   * so that a write made after it cannot be appended first (a refusal then rejects `write`).
   */
  #issue(write: TableWrite, gate: Promise<void> | undefined, admitted: boolean): void {
    try {
      this.#checkWritable();
      if (gate === undefined) {
        this.#appendNow(write, admitted);
        return;
      }
    } catch (error) {
      this[WRITE_FAILED](write);
      throw error;
    }
    this.#gated++;
    const open = () => {
      try {
        this.#appendNow(write, admitted);
      } catch (error) {
        write.reject(error);
      } finally {
        if (--this.#gated === 0 && this.#gate === gate) this.#gate = undefined;
      }
    };
    gate.then(open, open);
  }

  /** Appends `write` now (a refusal is thrown), counted in #writesInFlight until it is told. */
  #appendNow(write: TableWrite, admitted: boolean): void {
    this.log.appendEntry(write, admitted);
    write.issued = true;
    this.#writesInFlight++;
  }

  /**
   * Writes records of one group as consecutive batches of at most `recordsPerBatch` records. Every
   * batch is appended in one step (before this returns, or one after another once writeImage's
   * gate opens), so nothing appended later lands between them. Each batch is atomic on its own; resolves once all are durable and applied, and rejects
   * with the first failure once every batch has settled.
   */
  writeOffsetsChunked(
    groupId: string,
    records: readonly OffsetRecordSpec[],
    commitTimestampMs: number,
    recordsPerBatch: number,
    admitted = false,
  ): Promise<void> {
    return this.#writeOffsetsChunked(
      groupId,
      records,
      commitTimestampMs,
      recordsPerBatch,
      this.#gate,
      admitted,
    );
  }

  async #writeOffsetsChunked(
    groupId: string,
    records: readonly OffsetRecordSpec[],
    commitTimestampMs: number,
    recordsPerBatch: number,
    gate: Promise<void> | undefined,
    callerAdmitted = false,
  ): Promise<void> {
    // At most `recordsPerBatch` records, and never more bytes than the log takes in one batch
    // (records with metadata of up to 4 KiB each: 10,000 of them would be ~40 MB).
    const bytesMax = this.log.batchBytesMax;
    const prefixBytes = offsetRecordPrefixBytes(Buffer.byteLength(groupId));
    const chunks: OffsetRecordSpec[][] = [];
    let start = 0;
    let bytes = BATCH_HEADER_BYTES;
    for (let i = 0; i < records.length; i++) {
      const recordBytes = offsetRecordBytes(prefixBytes, records[i]!);
      if (i > start && (i - start === recordsPerBatch || bytes + recordBytes > bytesMax)) {
        chunks.push(records.slice(start, i));
        start = i;
        bytes = BATCH_HEADER_BYTES;
      }
      bytes += recordBytes;
    }
    if (start < records.length) chunks.push(records.slice(start));
    // Let in whole or not at all: a refusal (too many appends pending) of a later batch, after the
    // first were appended, would leave part of a delete done by a call that failed.
    if (!callerAdmitted && chunks.length > 1) this.log.checkRoom();
    const admitted = callerAdmitted || chunks.length > 1;
    const writes = chunks.map((chunk) =>
      this.#writeOffsets(groupId, chunk, commitTimestampMs, gate, admitted),
    );
    const results = await Promise.allSettled(writes);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  /** Writes a group snapshot upsert (or its tombstone for null); resolves once durable. */
  writeSnapshot(groupId: string, snapshot: unknown, commitTimestampMs: number): Promise<number> {
    return this.#writeSnapshot(groupId, snapshot, commitTimestampMs, this.#gate);
  }

  #writeSnapshot(
    groupId: string,
    snapshot: unknown,
    commitTimestampMs: number,
    gate: Promise<void> | undefined,
  ): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const batch = buildGroupSnapshotBatch(groupId, snapshot, commitTimestampMs);
      // Never refused for the appends pending: the group operation it records has changed the
      // group in memory already (the coordinator bounds those itself, before they run), and a
      // group's tombstone ends a delete whose offsets' tombstones were let in just before.
      this.#issue(
        new TableWrite(
          this,
          batch,
          groupId,
          null,
          commitTimestampMs,
          resolve as (logOffset?: number) => void,
          reject,
        ),
        gate,
        true,
      );
    });
  }

  /**
   * Writes the whole materialized state into the log as ordinary batches (every committed offset
   * with its own commit time, every group snapshot), starting at the returned log offset X, once no
   * write is in flight: from X on, the log alone holds the state, so everything below X may go.
   * Writes made meanwhile wait (#gate), so the wait ends even while commits keep coming; they are
   * appended after the image, in the order they came. The image's batches are appended in one
   * synchronous step, so no other write lands between them.
   */
  async writeImage(nowMs: number): Promise<number> {
    this.#checkWritable();
    const writes: Promise<unknown>[] = [];
    let start: number;
    const release = await this.#holdWrites();
    try {
      start = this.#appendImage(nowMs, writes);
    } finally {
      release();
    }
    await Promise.all(writes);
    // The caller moves the log's start onto the image: in durability 'os' it must first be durable
    // (a power loss would otherwise leave the start past the log's end, the state gone with it).
    await this.#local().syncAcknowledged();
    return start;
  }

  /** Appends the state's image (see writeImage), past the gate; returns its first log offset. */
  #appendImage(nowMs: number, writes: Promise<unknown>[]): number {
    const start = this.log.nextOffset;
    for (const [groupId, offsets] of this.state.groupTables()) {
      const records: OffsetRecordSpec[] = [];
      for (let i = 0; i < offsets.size; i++) {
        const v = offsets.valueAt(i);
        records.push({
          tableId: v.tableId,
          partitionId: v.partitionId,
          bucketId: v.bucketId,
          offset: v.offset,
          leaderEpoch: v.leaderEpoch,
          metadata: v.metadata,
          commitTimestampMs: v.commitTimestampMs,
        });
      }
      // Admitted, as the snapshots below: the image is let in whole (nothing else is pending
      // behind the gate), however many groups it writes; refused part way, the conversion failed.
      writes.push(
        this.#writeOffsetsChunked(
          groupId,
          records,
          nowMs,
          IMAGE_RECORDS_PER_BATCH,
          undefined,
          true,
        ),
      );
    }
    for (const [groupId, snapshot] of this.state.snapshots())
      writes.push(this.#writeSnapshot(groupId, snapshot, nowMs, undefined));
    return start;
  }

  /** Starts using checkpoints: any old environment is removed (it may predate deletes), then one is written. */
  async enableCheckpoints(nowMs: number): Promise<void> {
    this.#checkWritable();
    const local = this.#local();
    const dir = path.join(local.dir, CHECKPOINT_DIR);
    await local.checkDirectory();
    await this.#checkpoints?.close();
    this.#checkpoints = undefined;
    await local.fs.removeTree(dir);
    this.#checkpoints = await CheckpointStore.open(local.fs, dir);
    await this.#writeCheckpoint(nowMs);
  }

  /** Stops using checkpoints once the log alone holds the state from `logStart` on: frees the log below it and the environment. */
  async dropCheckpoints(logStart: number): Promise<void> {
    const local = this.#local();
    await local.checkDirectory();
    await local.deleteSegmentsBelow(logStart);
    await this.#checkpoints?.close();
    this.#checkpoints = undefined;
    await local.fs.removeTree(path.join(local.dir, CHECKPOINT_DIR));
  }

  /** The local segmented log, for what only it has (LMDB checkpoints live in its directory). */
  #local(): Log {
    assert(
      this.segmentLog !== undefined,
      'LMDB checkpoints exist only beside a local segmented log',
    );
    return this.segmentLog;
  }

  /**
   * Writes a checkpoint of the state as of now (if anything was applied since the newest one), reads
   * it back to verify it, and frees the log below it: the sealed segments wholly below it, and, when
   * it covers the whole log (a quiet bucket), the active segment too, sealed for the purpose.
   */
  async checkpoint(createdAtMs: number): Promise<CheckpointRun> {
    this.#checkWritable();
    if (this.#checkpoints === undefined)
      return { info: undefined, segmentBytesDeleted: 0, bytesWritten: 0 };
    const { info, bytesWritten } = await this.#writeCheckpoint(createdAtMs);
    const segmentBytesDeleted = await this.freeBelow(info.logOffset);
    return { info, segmentBytesDeleted, bytesWritten };
  }

  /**
   * Writes a checkpoint of the state as of now, unless the newest one is current; it is read back and
   * verified. Undefined when the table does not use checkpoints.
   */
  async writeCheckpoint(
    createdAtMs: number,
  ): Promise<{ info: CheckpointInfo; bytesWritten: number } | undefined> {
    this.#checkWritable();
    return this.#checkpoints === undefined ? undefined : this.#writeCheckpoint(createdAtMs);
  }

  /**
   * Deletes the sealed segments wholly below `logOffset`, which the newest checkpoint must cover; when
   * `logOffset` is the log end (a quiet bucket), the active segment is sealed first and freed too.
   * Returns the bytes freed.
   */
  async freeBelow(logOffset: number): Promise<number> {
    this.#checkWritable();
    const newest = this.latestCheckpoint();
    assert(
      newest !== undefined && logOffset <= newest.logOffset,
      `segments below ${logOffset} are freed only under a checkpoint covering them`,
    );
    return this.log.truncateBelow(logOffset);
  }

  /** The newest checkpoint, written now unless it is already current; a new one is read back and verified. */
  async #writeCheckpoint(
    createdAtMs: number,
  ): Promise<{ info: CheckpointInfo; bytesWritten: number }> {
    const checkpoints = this.#checkpoints!;
    // The environment's seal is written by name: in a directory that now has the name, it would
    // replace another store's.
    await this.#local().checkDirectory();
    type Checkpoint = { info: CheckpointInfo; bytesWritten: number };
    const newOrCurrent = await this.#whenAppliedDurable<
      { current: CheckpointInfo } | { writing: Promise<Checkpoint> }
    >(() => {
      const logOffset = this.state.appliedLogOffset + 1;
      const newest = checkpoints.list()[0];
      if (newest !== undefined && newest.logOffset === logOffset) return { current: newest };
      // The image is taken in this call, synchronously; the write goes on past the gate.
      return { writing: checkpoints.write(this.state, logOffset, createdAtMs) };
    });
    if ('current' in newOrCurrent) return { info: newOrCurrent.current, bytesWritten: 0 };
    const written = await newOrCurrent.writing;
    try {
      await checkpoints.verify(written.info);
    } catch (error) {
      // Not read back (a page LMDB misreads, or the read failed): never trusted, nothing freed under
      // it; the log still holds everything since the checkpoint before it. A failed write (`write`
      // rejects) is never trusted either, so the newest checkpoint in `list()` was always read back.
      checkpoints.reject(written.info.logOffset);
      if (!(error instanceof RangeError)) throw error;
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `${checkpoints.path}: the checkpoint written at log offset ${written.info.logOffset} does not read back as written (${error.message}): the checkpoint file is damaged; the log is kept whole`,
        { cause: error },
      );
    }
    return written;
  }

  /**
   * Runs `take`, which reads the state synchronously, once every batch applied to the state is
   * durable in the log, and returns what it returns. In durability 'os' the log acknowledges a batch
   * before any fdatasync covers it, and a checkpoint is durable once written: one taken of batches
   * a power loss then takes from the log would lie past the log's end, and once the log grew past
   * it again, restore the lost commits over the log's new ones. So new writes wait at the gate (as
   * for writeImage) while the writes in flight settle and the log is fdatasynced; the gate opens as
   * soon as `take` returns. In 'fsync' durability every applied batch is durable already.
   */
  async #whenAppliedDurable<T>(take: () => T): Promise<T> {
    if (this.log.durableEnd > this.state.appliedLogOffset) return take();
    const log = this.#local();
    const release = await this.#holdWrites();
    try {
      await log.syncAcknowledged();
      assert(
        this.log.durableEnd > this.state.appliedLogOffset,
        'every applied batch is durable once the log has synced what it acknowledged',
      );
      return take();
    } finally {
      release();
    }
  }

  /**
   * Closes the gate (#gate: writes made from now on wait, in order, until it opens) once no other
   * holder has it, and waits until the writes in flight have settled (so every batch appended is
   * applied); returns what opens it again. The two holders are writeImage and #whenAppliedDurable.
   */
  async #holdWrites(): Promise<() => void> {
    while (this.#gate !== undefined) {
      await this.#gate;
      await nextTurn();
    }
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    this.#gate = gate;
    const release = () => {
      if (this.#gated === 0 && this.#gate === gate) this.#gate = undefined;
      open();
    };
    try {
      while (this.#writesInFlight > 0) {
        await this.log.drain();
        await nextTurn();
      }
    } catch (error) {
      release();
      throw error;
    }
    return release;
  }

  /** Batches applied since the newest checkpoint (all of them when there is none). */
  get batchesSinceCheckpoint(): number {
    return this.state.appliedLogOffset + 1 - (this.#checkpoints?.list()[0]?.logOffset ?? 0);
  }

  /** The newest checkpoint's meta, if any. */
  latestCheckpoint(): CheckpointInfo | undefined {
    return this.#checkpoints?.list()[0];
  }

  /**
   * Flushes and closes the log and the checkpoint environment. With `checkpointAtMs`, a last
   * checkpoint is written first (if anything was applied since the newest one), so that the next
   * open restores it and replays nothing.
   */
  async close(checkpointAtMs?: number): Promise<void> {
    // The log and the checkpoints are closed whatever fails before: the first failure is reported.
    let failure: { error: unknown } | undefined;
    try {
      await this.log.drain();
      if (checkpointAtMs !== undefined && !this.log.failed) {
        try {
          await this.checkpoint(checkpointAtMs);
        } catch (error) {
          // A last checkpoint that did not read back: the log holds everything, so the close goes
          // on; the next open refuses that checkpoint and replays the log.
          if (!isOffsetStoreError(error, 'CORRUPT_MESSAGE')) throw error;
          this.#onWarning(`${error.message}; closing without it`);
        }
      }
    } catch (error) {
      failure = { error };
    }
    for (const close of [() => this.log.close(), () => this.#checkpoints?.close()]) {
      try {
        await close();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure !== undefined) throw failure.error;
  }
}
