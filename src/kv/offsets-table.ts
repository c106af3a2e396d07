/**
 * One offsets-bucket's offsets table: its log and its state machine, joined by the commit path of
 * DESIGN.md 5.1. Requests arrive validated; this class encodes, marks pending, appends, and applies
 * the batch to the state only once the append is durable (or clears the marks if it failed).
 */
import * as path from 'node:path';
import { buildGroupSnapshotBatch, buildOffsetBatch, type OffsetRecordSpec } from '../codec/index.js';
import { OffsetStoreError, isOffsetStoreError } from '../errors/index.js';
import { Log, type LogOptions, type LogRecoveryReport } from '../log/index.js';
import { CheckpointStore, type CheckpointInfo } from './checkpoint-store.js';
import { OffsetsTableState } from './offsets-table-state.js';

/** How to open an offsets table. */
export interface OffsetsTableOptions {
  log: LogOptions;
  /** Open (creating) the LMDB checkpoint environment even if none exists yet. */
  useCheckpoints: boolean;
  /** Receives recoverable problems (an ignored checkpoint). */
  onWarning: (message: string) => void;
}

/** What recovery did, beyond the log's own report. */
export interface OffsetsTableRecovery extends LogRecoveryReport {
  /** Log offset of the checkpoint restored, if any. */
  checkpointLogOffset: number | undefined;
  recoveryMs: number;
}

/** What one checkpoint run did. */
export interface CheckpointRun {
  info: CheckpointInfo | undefined;
  segmentBytesDeleted: number;
  /** Bytes of checkpoint values written (0 when the newest checkpoint was already current). */
  bytesWritten: number;
}

/** An open offsets table. */
export class OffsetsTable {
  readonly log: Log;
  readonly state: OffsetsTableState;
  readonly #checkpoints: CheckpointStore | undefined;

  private constructor(log: Log, state: OffsetsTableState, checkpoints: CheckpointStore | undefined) {
    this.log = log;
    this.state = state;
    this.#checkpoints = checkpoints;
  }

  /**
   * Opens the table: restores the newest valid checkpoint (if any), then replays the log from its
   * log offset. A checkpoint that fails verification or claims a log offset past the log end is
   * ignored with a warning and the next older one (or the whole log) is used instead.
   */
  static async open(options: OffsetsTableOptions): Promise<{ table: OffsetsTable; report: OffsetsTableRecovery }> {
    const startedMs = performance.now();
    const checkpointDir = path.join(options.log.dir, 'checkpoint');
    const hasCheckpoints = (await options.log.fs.readdir(checkpointDir)).length > 0;
    let checkpoints: CheckpointStore | undefined;
    let damaged = false;
    if (options.useCheckpoints || hasCheckpoints) {
      try {
        checkpoints = await CheckpointStore.open(options.log.fs, checkpointDir);
      } catch (error) {
        if (!isOffsetStoreError(error, 'CORRUPT_MESSAGE')) throw error;
        options.onWarning(`${checkpointDir}: ignoring every checkpoint: ${error.message}`);
        damaged = true;
      }
    }
    try {
      const candidates = checkpoints?.list() ?? [];
      for (const candidate of [...candidates, undefined]) {
        const state = new OffsetsTableState();
        if (candidate !== undefined) {
          try {
            const loaded = checkpoints!.load(candidate);
            for (const [groupId, offsets] of loaded.groups) state.restoreGroup(groupId, offsets);
            for (const [groupId, snapshot] of loaded.snapshots) state.restoreSnapshot(groupId, snapshot);
            state.restoreAppliedLogOffset(candidate.logOffset - 1);
          } catch (error) {
            options.onWarning(`${checkpointDir}: ignoring checkpoint at log offset ${candidate.logOffset}: ${(error as Error).message}`);
            continue;
          }
        }
        const fromLogOffset = candidate?.logOffset ?? 0;
        const { log, report } = await Log.open(options.log, { fromLogOffset, visit: (buf, position, logOffset) => state.applyBatch(buf, position, logOffset) });
        if (candidate !== undefined && candidate.logOffset > report.logEndOffset) {
          await log.close();
          options.onWarning(`${checkpointDir}: ignoring checkpoint at log offset ${candidate.logOffset}: past the log end ${report.logEndOffset}`);
          continue;
        }
        if (candidate === undefined && (candidates.length > 0 || damaged) && report.firstLogOffset > 0) {
          await log.close();
          throw new OffsetStoreError('CORRUPT_MESSAGE', `${checkpointDir}: no usable checkpoint, and the log before log offset ${report.firstLogOffset} was already deleted in favour of one`);
        }
        if (damaged) {
          // The whole log recovered the state: start a new environment in place of the damaged one.
          try {
            await CheckpointStore.setAside(options.log.fs, checkpointDir);
            if (options.useCheckpoints) checkpoints = await CheckpointStore.open(options.log.fs, checkpointDir);
          } catch (error) {
            await log.close();
            throw error;
          }
        }
        const recovery: OffsetsTableRecovery = { ...report, checkpointLogOffset: candidate?.logOffset, recoveryMs: performance.now() - startedMs };
        return { table: new OffsetsTable(log, state, checkpoints), report: recovery };
      }
      throw new OffsetStoreError('CORRUPT_MESSAGE', `${options.log.dir}: unreachable recovery state`);
    } catch (error) {
      await checkpoints?.close();
      throw error;
    }
  }
  /** Writes offset records (values or tombstones) of one group as one batch; resolves once durable and applied. */
  async writeOffsets(groupId: string, records: OffsetRecordSpec[], commitTimestampMs: number): Promise<number> {
    const batch = buildOffsetBatch(groupId, records, commitTimestampMs);
    this.state.markPending(groupId, records);
    let logOffset: number;
    try {
      logOffset = await this.log.append(batch);
    } catch (error) {
      this.state.failPendingOffsetWrite(groupId, records);
      throw error;
    }
    this.state.onOffsetCommitAppend(groupId, records, commitTimestampMs, batch, logOffset);
    return logOffset;
  }

  /** Writes a group snapshot upsert (or its tombstone for null); resolves once durable. */
  async writeSnapshot(groupId: string, snapshot: unknown, commitTimestampMs: number): Promise<number> {
    const batch = buildGroupSnapshotBatch(groupId, snapshot, commitTimestampMs);
    const logOffset = await this.log.append(batch);
    this.state.applyBatch(batch, 0, logOffset);
    return logOffset;
  }

  /**
   * Writes a checkpoint of the state as of now (if anything was applied since the last one) and
   * deletes the sealed segments wholly below the previous checkpoint.
   */
  async checkpoint(createdAtMs: number): Promise<CheckpointRun> {
    const checkpoints = this.#checkpoints;
    if (checkpoints === undefined) return { info: undefined, segmentBytesDeleted: 0, bytesWritten: 0 };
    const logOffset = this.state.appliedLogOffset + 1;
    const newest = checkpoints.list()[0];
    const written = newest?.logOffset === logOffset ? { info: newest, bytesWritten: 0 } : await checkpoints.write(this.state, logOffset, createdAtMs);
    const previous = checkpoints.list()[1];
    const segmentBytesDeleted = previous === undefined ? 0 : await this.log.deleteSegmentsBelow(previous.logOffset);
    return { info: written.info, segmentBytesDeleted, bytesWritten: written.bytesWritten };
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
    try {
      await this.log.drain();
      if (checkpointAtMs !== undefined && !this.log.failed) await this.checkpoint(checkpointAtMs);
      await this.log.close();
    } finally {
      await this.#checkpoints?.close();
    }
  }
}
