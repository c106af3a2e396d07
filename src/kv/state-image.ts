/**
 * The image of an offsets table's state as a list of KvRecordBatches: every committed offset (with
 * its own commit time) and every group's latest snapshot, in the log's own batch format. A log that
 * is not local segments (a replicated log) checkpoints with it: the image is stored at log offset X,
 * the log below X is freed, and a new owner restores the image and replays the log from X.
 *
 * Invariants: restoring the image of a state gives a state with the same committed offsets, commit
 * times, metadata and snapshots (the fetch results and the coordinator's input are equal); the image
 * batches are never appended to a log, so their own log offsets mean nothing (0).
 */
import {
  buildGroupSnapshotBatch,
  buildOffsetBatch,
  type OffsetRecordSpec,
} from '../codec/index.js';
import { OffsetsTableState } from './offsets-table-state.js';

/** Records per image batch (~300 bytes each at most). */
const IMAGE_RECORDS_PER_BATCH = 1000;

/** The state as batches; `nowMs` is the batches' own time (each record keeps its commit time). */
export function stateImage(state: OffsetsTableState, nowMs: number): Buffer[] {
  const batches: Buffer[] = [];
  for (const [groupId, offsets] of state.groupTables()) {
    let records: OffsetRecordSpec[] = [];
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
      if (records.length === IMAGE_RECORDS_PER_BATCH) {
        batches.push(buildOffsetBatch(groupId, records, nowMs));
        records = [];
      }
    }
    if (records.length > 0) batches.push(buildOffsetBatch(groupId, records, nowMs));
  }
  for (const [groupId, snapshot] of state.snapshots())
    batches.push(buildGroupSnapshotBatch(groupId, snapshot, nowMs));
  return batches;
}

/** A state restored from an image taken at `logOffset`: replay continues at `logOffset`. */
export function restoreStateImage(
  batches: readonly Buffer[],
  logOffset: number,
): OffsetsTableState {
  const state = new OffsetsTableState();
  // Positions in the image only order its batches; the applied log offset is the image's own after.
  for (let i = 0; i < batches.length; i++) state.applyBatch(batches[i]!, 0, i);
  state.restoreAppliedLogOffset(logOffset - 1);
  return state;
}
