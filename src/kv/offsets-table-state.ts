/**
 * The state machine of one offsets-bucket's offsets table: the materialized index (last write wins,
 * tombstones delete) and the pending marks of commits appended but not yet durable.
 *
 * Invariants:
 * - The index changes only by applying records: decoded from the log in recovery (`applyBatch`), or
 *   live, once a batch is durable, the very records it was encoded from (`applyOffsetRecords`); both
 *   go through one `#applyOffset`, so the state after reopen equals the state before close.
 * - A key is pending from `markPending` until exactly one of `onOffsetCommitAppend` (durable: apply,
 *   unmark) or `failPendingOffsetWrite` (failed: unmark, apply nothing). Pending marks count, so two
 *   in-flight commits of the same key keep it pending until both finish.
 * - Group snapshot records are not interpreted here: the latest one per group is kept as an opaque
 *   value (it is part of the state a checkpoint saves) for the group layer to load after recovery.
 */
import {
  decodeBatchRecords,
  readBatchRecordCount,
  type DecodedRecord,
  type OffsetRecordSpec,
} from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import { assert } from '../util/index.js';
import { BucketKeySet } from './bucket-key-set.js';
import { GroupOffsets, type CommittedOffsetValue } from './group-offsets.js';
import { invalidBucket, isValidBucket, type TableBucket } from '../model/index.js';
import type { BucketFields } from './validation.js';

function pendingKey(tableId: number, partitionId: number | null, bucketId: number): string {
  return `${tableId}:${partitionId ?? ''}:${bucketId}`;
}

/**
 * The in-flight writes of one group. Marking and unmarking are O(1) per commit (the commit's record
 * list is the mark); the set of pending keys is built only when asked (requireStable fetch,
 * retention) and dropped whenever the writes change. A group mostly has one write in flight: it is
 * held alone, and a Set made only for a second.
 */
class PendingWrites {
  #only: readonly OffsetRecordSpec[] | undefined;
  #more: Set<readonly OffsetRecordSpec[]> | undefined;
  #keys: BucketKeySet | undefined;

  constructor(first: readonly OffsetRecordSpec[]) {
    this.#only = first;
  }

  add(write: readonly OffsetRecordSpec[]): void {
    this.#keys = undefined;
    if (this.#more !== undefined) this.#more.add(write);
    else if (this.#only === undefined) this.#only = write;
    else {
      this.#more = new Set([this.#only, write]);
      this.#only = undefined;
    }
  }

  /** Removes a write; returns whether none is left. */
  delete(write: readonly OffsetRecordSpec[]): boolean {
    this.#keys = undefined;
    if (this.#more !== undefined) {
      this.#more.delete(write);
      return this.#more.size === 0;
    }
    if (this.#only === write) this.#only = undefined;
    return this.#only === undefined;
  }

  /** The writes in flight, oldest first. */
  get writes(): Iterable<readonly OffsetRecordSpec[]> {
    return this.#more ?? (this.#only === undefined ? [] : [this.#only]);
  }

  has(tableId: number, partitionId: number | null, bucketId: number): boolean {
    if (this.#keys === undefined) {
      const keys = new BucketKeySet(16);
      for (const write of this.writes)
        for (const r of write) keys.add(r.tableId, r.partitionId, r.bucketId);
      this.#keys = keys;
    }
    return this.#keys.has(tableId, partitionId, bucketId);
  }
}

/** Materialized index plus pending marks of one offsets-bucket. */
export class OffsetsTableState {
  readonly #groups = new Map<string, GroupOffsets>();
  readonly #pending = new Map<string, PendingWrites>();
  /** The latest group snapshot per group (record type 1), part of the materialized state. */
  readonly #snapshots = new Map<string, unknown>();
  /** Called when a group's offsets table is dropped or replaced (the store forgets cached references). */
  onGroupDropped: ((groupId: string) => void) | undefined;
  #liveOffsetCount = 0;
  #appliedLogOffset = -1;
  #appliedBytes = 0;
  #appliedRecords = 0;

  /** Number of committed offsets across all groups. */
  get liveOffsetCount(): number {
    return this.#liveOffsetCount;
  }

  /** Average bytes a record takes in the log (batch overhead included), from what was applied. */
  get recordBytesAverage(): number {
    return this.#appliedRecords === 0 ? 64 : this.#appliedBytes / this.#appliedRecords;
  }

  /** Log offset of the last applied batch (-1 if none). */
  get appliedLogOffset(): number {
    return this.#appliedLogOffset;
  }

  /** Applies every record of the sealed batch at `buf[position]` (log offset `logOffset`). */
  applyBatch(buf: Buffer, position: number, logOffset: number): void {
    assert(
      logOffset > this.#appliedLogOffset,
      `batches are applied in log order (${logOffset} after ${this.#appliedLogOffset})`,
    );
    let records = 0;
    const recordCount = readBatchRecordCount(buf, position);
    decodeBatchRecords(buf, position, (record) => {
      this.#applyRecord(record, recordCount - records);
      records++;
    });
    assert(
      records === recordCount,
      `batch ${logOffset} held the ${recordCount} records its header says`,
    );
    this.#appliedLogOffset = logOffset;
    this.#appliedBytes += buf.readUInt32LE(position) + 4;
    this.#appliedRecords += records;
  }

  /** Applies one record; `recordsLeft` (this one included) sizes a group's table on creation. */
  #applyRecord(r: DecodedRecord, recordsLeft: number): void {
    if (r.type === 1) {
      if (r.tombstone) this.#snapshots.delete(r.groupId);
      else this.#snapshots.set(r.groupId, r.snapshot);
      return;
    }
    this.#applyOffset(r.groupId, this.#groups.get(r.groupId), r, r.commitTimestampMs, recordsLeft);
  }

  /**
   * Applies the offset records a durable batch was encoded from (the live path: the same records
   * recovery decodes from the log, so live and recovered state agree by construction; the codec's
   * round-trip property test guarantees the encoding loses nothing).
   */
  applyOffsetRecords(
    groupId: string,
    records: readonly OffsetRecordSpec[],
    commitTimestampMs: number,
    batch: Buffer,
    logOffset: number,
  ): void {
    assert(
      logOffset > this.#appliedLogOffset,
      `batches are applied in log order (${logOffset} after ${this.#appliedLogOffset})`,
    );
    // The group's table is looked up once per batch, not per record (a batch is of one group).
    let group = this.#groups.get(groupId);
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      group = this.#applyOffset(
        groupId,
        group,
        r,
        r.commitTimestampMs ?? commitTimestampMs,
        records.length - i,
      );
    }
    this.#appliedLogOffset = logOffset;
    this.#appliedBytes += batch.length;
    this.#appliedRecords += records.length;
  }

  /** Applies one offset record to `group` (the group's table, if it has one); returns the table after it. */
  #applyOffset(
    groupId: string,
    group: GroupOffsets | undefined,
    r: OffsetRecordSpec,
    commitTimestampMs: number,
    recordsLeft: number,
  ): GroupOffsets | undefined {
    if (r.tombstone === true) {
      if (group !== undefined && group.delete(r.tableId, r.partitionId, r.bucketId)) {
        this.#liveOffsetCount--;
        if (group.size === 0) {
          group.detached = true;
          this.#groups.delete(groupId);
          this.onGroupDropped?.(groupId);
          return undefined;
        }
      }
      return group;
    }
    if (group === undefined) {
      group = new GroupOffsets(Math.min(recordsLeft, 4096));
      this.#groups.set(groupId, group);
    }
    const before = group.size;
    group.set(
      r.tableId,
      r.partitionId,
      r.bucketId,
      r.offset,
      r.leaderEpoch,
      commitTimestampMs,
      r.metadata,
    );
    this.#liveOffsetCount += group.size - before;
    return group;
  }

  /** Loads a group's whole offsets table (checkpoint restore, before replay); not for live writes. */
  restoreGroup(groupId: string, offsets: GroupOffsets): void {
    const previous = this.#groups.get(groupId);
    const before = previous?.size ?? 0;
    if (previous !== undefined && previous !== offsets) {
      previous.detached = true;
      this.onGroupDropped?.(groupId);
    }
    if (offsets.size === 0) this.#groups.delete(groupId);
    else this.#groups.set(groupId, offsets);
    this.#liveOffsetCount += offsets.size - before;
  }

  /** Loads a group snapshot (checkpoint restore, before replay). */
  restoreSnapshot(groupId: string, snapshot: unknown): void {
    this.#snapshots.set(groupId, snapshot);
  }

  /** Sets the applied log offset after a checkpoint restore. */
  restoreAppliedLogOffset(logOffset: number): void {
    this.#appliedLogOffset = logOffset;
  }

  /** Every group's offsets table (checkpoint writer). */
  groupTables(): IterableIterator<[string, GroupOffsets]> {
    return this.#groups.entries();
  }

  /** Group snapshots held (live snapshot keys). */
  get snapshotCount(): number {
    return this.#snapshots.size;
  }

  /** Every group's latest snapshot. */
  snapshots(): IterableIterator<[string, unknown]> {
    return this.#snapshots.entries();
  }

  /** The latest snapshot of a group, if any. */
  snapshot(groupId: string): unknown {
    return this.#snapshots.get(groupId);
  }

  /** The committed offset of one bucket, or null. */
  get(
    groupId: string,
    tableId: number,
    partitionId: number | null,
    bucketId: number,
  ): CommittedOffsetValue | null {
    const group = this.#groups.get(groupId);
    if (group === undefined) return null;
    const i = group.find(tableId, partitionId, bucketId);
    return i < 0 ? null : group.valueAt(i);
  }

  /**
   * OffsetFetch of some buckets (validated here, one at a time, without allocating per bucket
   * beyond the results). With `requireStable`, a bucket with a pending commit throws
   * UNSTABLE_OFFSET_COMMIT.
   */
  fetch(
    groupId: string,
    buckets: readonly unknown[],
    requireStable: boolean,
  ): (CommittedOffsetValue | null)[] {
    return fetchFromGroup(
      groupId,
      this.#groups.get(groupId),
      buckets,
      requireStable ? this.#pending.get(groupId) : undefined,
    );
  }

  /** The offsets table of a group, if it has any committed offset. */
  group(groupId: string): GroupOffsets | undefined {
    return this.#groups.get(groupId);
  }

  /** Every committed offset of a group. */
  groupValues(groupId: string): CommittedOffsetValue[] {
    const group = this.#groups.get(groupId);
    if (group === undefined) return [];
    const values: CommittedOffsetValue[] = new Array(group.size);
    for (let i = 0; i < group.size; i++) values[i] = group.valueAt(i);
    return values;
  }

  /** Ids of the groups that have committed offsets. */
  groupIds(): IterableIterator<string> {
    return this.#groups.keys();
  }

  /** Marks the keys of an appended, not yet durable commit as pending (`records` is the mark). */
  markPending(groupId: string, records: readonly OffsetRecordSpec[]): void {
    const pending = this.#pending.get(groupId);
    if (pending === undefined) this.#pending.set(groupId, new PendingWrites(records));
    else pending.add(records);
  }

  #unmark(groupId: string, records: readonly OffsetRecordSpec[]): void {
    const pending = this.#pending.get(groupId);
    if (pending !== undefined && pending.delete(records)) this.#pending.delete(groupId);
  }

  /** The commit's batch is durable: apply it and clear its pending marks. */
  onOffsetCommitAppend(
    groupId: string,
    records: readonly OffsetRecordSpec[],
    commitTimestampMs: number,
    batch: Buffer,
    logOffset: number,
  ): void {
    this.applyOffsetRecords(groupId, records, commitTimestampMs, batch, logOffset);
    this.#unmark(groupId, records);
  }

  /** The commit's append failed: clear its pending marks and apply nothing. */
  failPendingOffsetWrite(groupId: string, records: readonly OffsetRecordSpec[]): void {
    this.#unmark(groupId, records);
  }

  /** True when a commit of this bucket is appended but not yet durable. */
  isPending(
    groupId: string,
    tableId: number,
    partitionId: number | null,
    bucketId: number,
  ): boolean {
    return this.#pending.get(groupId)?.has(tableId, partitionId, bucketId) ?? false;
  }

  /**
   * Every bucket of a group that has a committed offset or a commit in flight, each once: what a
   * delete of the whole group, ordered after the commits in flight, must tombstone.
   */
  committedOrPendingKeys(groupId: string): TableBucket[] {
    const keys: TableBucket[] = [];
    const seen = new BucketKeySet(16);
    const group = this.#groups.get(groupId);
    if (group !== undefined) {
      for (let i = 0; i < group.size; i++) {
        const { tableId, partitionId, bucketId } = group.valueAt(i);
        seen.add(tableId, partitionId, bucketId);
        keys.push({ tableId, partitionId, bucketId });
      }
    }
    for (const write of this.#pending.get(groupId)?.writes ?? []) {
      for (const r of write)
        if (seen.add(r.tableId, r.partitionId, r.bucketId))
          keys.push({ tableId: r.tableId, partitionId: r.partitionId, bucketId: r.bucketId });
    }
    return keys;
  }

  /** True when the group has any pending commit. */
  hasPending(groupId: string): boolean {
    return this.#pending.has(groupId);
  }

  /** Heap bytes of the offset tables' arrays. */
  get arrayBytes(): number {
    let total = 0;
    for (const g of this.#groups.values()) total += g.arrayBytes;
    return total;
  }
}

/**
 * Looks `buckets` up in one group's table (undefined: the group has no offsets), checking each
 * reference; with `pending` (requireStable), a bucket with a commit in flight rejects with
 * UNSTABLE_OFFSET_COMMIT.
 */
export function fetchFromGroup(
  groupId: string,
  group: GroupOffsets | undefined,
  buckets: readonly unknown[],
  pending?: PendingWrites,
): (CommittedOffsetValue | null)[] {
  const count = buckets.length;
  const results: (CommittedOffsetValue | null)[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const ref = buckets[i];
    if (typeof ref !== 'object' || ref === null)
      throw new TypeError(`buckets[${i}] must be an object`);
    // One read per field: the lookup uses the values that were checked.
    const { tableId: t, partitionId: p, bucketId: b } = ref as BucketFields;
    if (!isValidBucket(t, p, b)) invalidBucket(t, p, b, `buckets[${i}]`);
    // `+ 0`: a -0 names bucket 0 and must not come back as the result's bucket id.
    const tableId = (t as number) + 0;
    const partitionId = p === undefined || p === null ? null : (p as number) + 0;
    const bucketId = (b as number) + 0;
    if (pending !== undefined && pending.has(tableId, partitionId, bucketId)) {
      throw new OffsetStoreError(
        'UNSTABLE_OFFSET_COMMIT',
        `group ${groupId} has a commit of bucket ${pendingKey(tableId, partitionId, bucketId)} in flight; retry`,
      );
    }
    const index = group === undefined ? -1 : group.find(tableId, partitionId, bucketId);
    results[i] = index < 0 ? null : group!.valueAt(index);
  }
  return results;
}
