/**
 * One offsets-bucket's offsets table: its log and its state machine, joined by the commit path of
 * DESIGN.md 5.1. Requests arrive validated; this class encodes, marks pending, appends, and applies
 * the batch to the state only once the append is durable (or clears the marks if it failed).
 */
import { buildGroupSnapshotBatch, buildOffsetBatch, type OffsetRecordSpec } from '../codec/index.js';
import { Log, type LogOptions, type LogRecoveryReport } from '../log/index.js';
import { OffsetsTableState, type SnapshotListener } from './offsets-table-state.js';

/** Restores a state image (a checkpoint) before the log is replayed; returns the log offset to replay from. */
export type StateRestorer = (state: OffsetsTableState) => Promise<number>;

/** An open offsets table. */
export class OffsetsTable {
  readonly log: Log;
  readonly state: OffsetsTableState;

  private constructor(log: Log, state: OffsetsTableState) {
    this.log = log;
    this.state = state;
  }

  /**
   * Opens the table: restores a checkpoint if given, then replays the log from there. Snapshot
   * records met during replay go to `onSnapshot`.
   */
  static async open(logOptions: LogOptions, onSnapshot?: SnapshotListener, restore?: StateRestorer): Promise<{ table: OffsetsTable; report: LogRecoveryReport }> {
    const state = new OffsetsTableState();
    state.snapshotListener = onSnapshot;
    const fromLogOffset = restore === undefined ? 0 : await restore(state);
    const { log, report } = await Log.open(logOptions, {
      fromLogOffset,
      visit: (buf, position, logOffset) => state.applyBatch(buf, position, logOffset),
    }, fromLogOffset);
    state.snapshotListener = undefined;
    return { table: new OffsetsTable(log, state), report };
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
    this.state.onOffsetCommitAppend(groupId, records, batch, logOffset);
    return logOffset;
  }

  /** Writes a group snapshot upsert (or its tombstone for null); resolves once durable. */
  async writeSnapshot(groupId: string, snapshot: unknown, commitTimestampMs: number): Promise<number> {
    const batch = buildGroupSnapshotBatch(groupId, snapshot, commitTimestampMs);
    const logOffset = await this.log.append(batch);
    this.state.applyBatch(batch, 0, logOffset);
    return logOffset;
  }

  /** Flushes and closes the log. */
  close(): Promise<void> {
    return this.log.close();
  }
}
