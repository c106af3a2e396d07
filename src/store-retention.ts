/**
 * Retention and bulk deletes for OffsetStore (DESIGN.md 5.4): tombstones for offsets that expired,
 * written through the normal commit path in bounded batches.
 *
 * Invariants:
 * - A tombstone deletes only the value it was planned against. Every tombstone batch of one delete
 *   is appended in the same synchronous step as its planning (OffsetsTable.writeOffsetsChunked), so
 *   a commit issued after the plan is appended after all of them and survives; a commit appended
 *   before the plan is either applied (its value is what the plan saw) or pending.
 * - A key with a commit in flight is never expired (its tombstone would land after the fresher
 *   commit). An explicit delete (deleteOffsets, deleteGroup) does cover keys with a commit in
 *   flight: it is ordered after that commit, as the log orders them.
 * - A group with members only loses offsets of tables no member subscribes to; a group left with no
 *   offsets and no members is deleted (its snapshot tombstoned).
 */
import type { GroupCoordinator } from './group/index.js';
import type { OffsetsTable } from './kv/index.js';
import type { TableBucket } from './model/index.js';

/** What retention needs of an offsets-bucket (either part is undefined while it recovers). */
export interface RetentionTarget {
  readonly table: OffsetsTable | undefined;
  readonly coordinator: GroupCoordinator | undefined;
}

/** One retention pass: expires offsets committed at least `retentionMs` before `nowMs`. */
export async function expireOffsets(targets: readonly RetentionTarget[], retentionMs: number, nowMs: number, closed: () => boolean): Promise<void> {
  const writes: Promise<unknown>[] = [];
  for (const { table, coordinator } of targets) {
    if (table === undefined || coordinator === undefined || table.log.failed) continue;
    // Planned and appended in one synchronous pass: see the module's first invariant.
    for (const groupId of [...table.state.groupIds()]) {
      const expired = expiredOffsets(table, coordinator, groupId, retentionMs, nowMs);
      if (expired.length > 0) writes.push(writeTombstones(table, groupId, expired, nowMs));
    }
  }
  // A failed expiry write fail-stops its log, which every later call on that bucket reports.
  await Promise.allSettled(writes);
  const deletes: Promise<unknown>[] = [];
  for (const { table, coordinator } of targets) {
    if (table === undefined || coordinator === undefined || closed()) continue;
    for (const groupId of coordinator.groupIds()) {
      if (coordinator.groupState(groupId) === 'Empty' && !coordinator.hasMembers(groupId) && table.state.group(groupId) === undefined) {
        deletes.push(coordinator.deleteGroup(groupId));
      }
    }
  }
  await Promise.allSettled(deletes);
}

function expiredOffsets(table: OffsetsTable, coordinator: GroupCoordinator, groupId: string, retentionMs: number, nowMs: number): TableBucket[] {
  const group = table.state.group(groupId)!;
  const subscribed = coordinator.hasMembers(groupId)
    ? new Set(coordinator.describe(groupId)?.members.flatMap((m) => m.subscribedTableIds) ?? [])
    : undefined;
  const expired: TableBucket[] = [];
  for (let i = 0; i < group.size; i++) {
    if (group.timestampAt(i) + retentionMs > nowMs) continue;
    if (subscribed?.has(group.tableIdAt(i)) === true) continue;
    const { tableId, partitionId, bucketId } = group.valueAt(i);
    if (!table.state.isPending(groupId, tableId, partitionId, bucketId)) expired.push({ tableId, partitionId, bucketId });
  }
  return expired;
}

function tombstone(b: TableBucket) {
  return { tableId: b.tableId, partitionId: b.partitionId, bucketId: b.bucketId, offset: 0, leaderEpoch: -1, metadata: '', tombstone: true };
}

/** Tombstones per batch: a tombstone takes at most ~300 bytes, so a batch stays far below batchBytesMax. */
const TOMBSTONES_PER_BATCH = 10_000;

/**
 * Deletes the committed offsets of `buckets` in batches of TOMBSTONES_PER_BATCH, so that deleting
 * (or expiring) a group of any size never produces a batch over the log's size limit. All batches
 * are appended before this returns its promise (nothing can be appended between them); each is
 * atomic, and a crash between them leaves a partial delete that repeating the call completes.
 */
export function writeTombstones(table: OffsetsTable, groupId: string, buckets: readonly TableBucket[], nowMs: number): Promise<void> {
  return table.writeOffsetsChunked(groupId, buckets.map(tombstone), nowMs, TOMBSTONES_PER_BATCH);
}
