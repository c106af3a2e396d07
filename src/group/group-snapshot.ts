/**
 * GroupSnapshot: the only group state that is persisted. One snapshot per group, written as an
 * upsert keyed by groupId (record type 1, docs/on-disk-format.md) when the group reaches Stable or
 * becomes Empty, and a tombstone (null) when the group is deleted. It is plain data — numbers,
 * strings, arrays, plain objects and null — so it can be msgpack-encoded with `useRecords: false`
 * and decoded without shared state.
 *
 * Recovery expands the latest snapshot into records (`snapshotToRecords`), so it goes through the
 * same replay path as live changes. `parseGroupSnapshot` checks a decoded value before that and
 * raises CORRUPT_MESSAGE for anything a writer of this module could not have produced.
 *
 * Shape (assignments are grouped per table partition to keep large groups small on disk):
 *   { groupEpoch, assignmentEpoch,
 *     tableLayouts: [{ tableId, bucketCount, partitionIds | null }],
 *     members: [{ memberId, instanceId | null, memberEpoch, previousMemberEpoch, subscribedTableIds,
 *                 assignor | null, sessionTimeoutMs, rebalanceTimeoutMs,
 *                 assignment: [{ tableId, partitionId | null, bucketIds }] }] }
 */
import { OffsetStoreError } from '../errors/index.js';
import { assert } from '../util/index.js';
import { BUCKET_ID_MAX, type TableBucket } from '../model/index.js';
import { BucketSet } from './bucket-set.js';
import type { ClassicGroupSnapshot } from './classic-snapshot.js';
import type { ConsumerMember } from './consumer-member.js';
import type { Group } from './group.js';
import type { GroupRecord } from './group-record.js';
import { normalizeTableLayout, type TableLayout } from './table-layout.js';

/** The persisted image of a group at a generation boundary. */
export interface GroupSnapshot {
  /** The group epoch at the snapshot; epochs continue from it after a restart. */
  readonly groupEpoch: number;
  /**
   * The assignment epoch, at most the group epoch; below it when a new target was still due (a group
   * with members then comes back Assigning).
   */
  readonly assignmentEpoch: number;
  /** The layouts the target was computed against, sorted by table id. */
  readonly tableLayouts: readonly GroupSnapshotTableLayout[];
  /** Every member, with its reconciled assignment (which is also its target). */
  readonly members: readonly GroupSnapshotMember[];
}

/** A table layout the snapshot's assignment was computed against. */
export interface GroupSnapshotTableLayout {
  /** The user table. */
  readonly tableId: number;
  /** Buckets per partition (>= 1). */
  readonly bucketCount: number;
  /** Sorted partition ids, or null for a non-partitioned table. */
  readonly partitionIds: readonly number[] | null;
}

/** One member in a snapshot, with its reconciled assignment. */
export interface GroupSnapshotMember {
  /** The member's id. */
  readonly memberId: string;
  /** Its static instance id, or null. */
  readonly instanceId: string | null;
  /** Its member epoch, the assignment epoch it had reconciled to; restored as is. */
  readonly memberEpoch: number;
  /** Its previous member epoch (see MemberAssignment). */
  readonly previousMemberEpoch: number;
  /** Its subscribed tables. */
  readonly subscribedTableIds: readonly number[];
  /** Its preferred assignor, or null. */
  readonly assignor: string | null;
  /** Its session timeout, in ms; re-armed from the end of loading. */
  readonly sessionTimeoutMs: number;
  /** Its rebalance timeout, in ms. */
  readonly rebalanceTimeoutMs: number;
  /** Its buckets, one entry per table partition. */
  readonly assignment: readonly GroupSnapshotBuckets[];
}

/** Buckets of one table partition (`partitionId` null for a non-partitioned table). */
export interface GroupSnapshotBuckets {
  /** The user table. */
  readonly tableId: number;
  /** The partition, or null for a non-partitioned table. */
  readonly partitionId: number | null;
  /** Bucket ids, sorted; no bucket in two members' lists. */
  readonly bucketIds: readonly number[];
}

/**
 * What a group's snapshot record holds: a consumer group's snapshot, or a classic group's
 * (classic-snapshot.ts, told apart by `protocol: 'classic'`). A group id has one type at a time, so
 * one record per group id serves both.
 */
export type StoredGroupSnapshot = GroupSnapshot | ClassicGroupSnapshot;

/**
 * The port through which the coordinator persists snapshots. `writeSnapshot` resolves once the
 * snapshot (or, for null, the tombstone) is durable; a rejection fails the operation that caused it.
 */
export interface GroupSnapshotWriter {
  /**
   * Persists the group's snapshot (null: its tombstone) and resolves once it is durable; writes of one
   * group arrive in order.
   */
  writeSnapshot(groupId: string, snapshot: StoredGroupSnapshot | null): Promise<void>;
}

/** Builds the snapshot of a group that is Stable or Empty. */
export function snapshotOf(group: Group): GroupSnapshot {
  const state = group.state();
  assert(
    state === 'Stable' || state === 'Empty',
    `snapshot of ${group.groupId} taken while ${state}`,
  );
  const members = [...group.members.values()].map(snapshotMember);
  const tableLayouts = [...group.tableLayouts]
    .sort(([a], [b]) => a - b)
    .map(([tableId, layout]) => ({
      tableId,
      bucketCount: layout.bucketCount,
      partitionIds: layout.partitionIds === null ? null : [...layout.partitionIds],
    }));
  return {
    groupEpoch: group.groupEpoch,
    assignmentEpoch: group.assignmentEpoch,
    tableLayouts,
    members,
  };
}

function snapshotMember(member: ConsumerMember): GroupSnapshotMember {
  // Sorted refs put each table partition's buckets next to each other: group runs, no keys needed.
  const assignment: { tableId: number; partitionId: number | null; bucketIds: number[] }[] = [];
  let run: { tableId: number; partitionId: number | null; bucketIds: number[] } | undefined;
  for (const ref of member.assigned.toArray()) {
    if (run === undefined || run.tableId !== ref.tableId || run.partitionId !== ref.partitionId) {
      run = { tableId: ref.tableId, partitionId: ref.partitionId, bucketIds: [] };
      assignment.push(run);
    }
    run.bucketIds.push(ref.bucketId);
  }
  return {
    memberId: member.memberId,
    instanceId: member.instanceId,
    memberEpoch: member.memberEpoch,
    previousMemberEpoch: member.previousMemberEpoch,
    subscribedTableIds: [...member.subscribedTableIds],
    assignor: member.assignor,
    sessionTimeoutMs: member.sessionTimeoutMs,
    rebalanceTimeoutMs: member.rebalanceTimeoutMs,
    assignment,
  };
}

/** The records that rebuild a group from its snapshot (the group must not exist yet). */
export function snapshotToRecords(groupId: string, snapshot: GroupSnapshot): GroupRecord[] {
  const records: GroupRecord[] = [
    { type: 'group-epoch', groupId, groupEpoch: snapshot.groupEpoch },
  ];
  for (const m of snapshot.members) {
    const assigned = BucketSet.of(expandBuckets(m.assignment));
    records.push(
      {
        type: 'member-subscription',
        groupId,
        subscription: {
          memberId: m.memberId,
          instanceId: m.instanceId,
          subscribedTableIds: [...m.subscribedTableIds],
          assignor: m.assignor,
          sessionTimeoutMs: m.sessionTimeoutMs,
          rebalanceTimeoutMs: m.rebalanceTimeoutMs,
        },
      },
      {
        type: 'member-assignment',
        groupId,
        memberId: m.memberId,
        assignment: {
          memberEpoch: m.memberEpoch,
          previousMemberEpoch: m.previousMemberEpoch,
          state: 'STABLE',
          assigned,
          pendingRevocation: BucketSet.EMPTY,
        },
      },
      { type: 'target-member', groupId, memberId: m.memberId, buckets: assigned },
    );
  }
  const tableLayouts = new Map<number, TableLayout>(
    snapshot.tableLayouts.map((l) => [l.tableId, normalizeTableLayout(l.tableId, l)]),
  );
  records.push({
    type: 'target-epoch',
    groupId,
    assignmentEpoch: snapshot.assignmentEpoch,
    tableLayouts,
  });
  return records;
}

function* expandBuckets(groups: readonly GroupSnapshotBuckets[]): Generator<TableBucket> {
  for (const g of groups)
    for (const bucketId of g.bucketIds)
      yield Object.freeze({ tableId: g.tableId, partitionId: g.partitionId, bucketId });
}

/**
 * Checks a decoded snapshot value and returns it typed. Anything malformed — wrong types, unsafe
 * integers, duplicate members or instance ids, a bucket owned twice, epochs out of order — is
 * CORRUPT_MESSAGE naming the group and the field.
 */
export function parseGroupSnapshot(groupId: string, value: unknown): GroupSnapshot {
  const fail = (what: string): never => {
    throw new OffsetStoreError('CORRUPT_MESSAGE', `group snapshot of '${groupId}': ${what}`);
  };
  const obj = record(value, 'snapshot', fail);
  const groupEpoch = int(obj.groupEpoch, 'groupEpoch', 0, fail);
  const assignmentEpoch = int(obj.assignmentEpoch, 'assignmentEpoch', 0, fail);
  if (assignmentEpoch > groupEpoch)
    fail(`assignmentEpoch ${assignmentEpoch} > groupEpoch ${groupEpoch}`);
  const tableLayouts = array(obj.tableLayouts, 'tableLayouts', fail).map((raw, i) => {
    const l = record(raw, `tableLayouts[${i}]`, fail);
    const tableId = int(l.tableId, `tableLayouts[${i}].tableId`, 0, fail);
    const partitionIds =
      l.partitionIds === null
        ? null
        : array(l.partitionIds, `tableLayouts[${i}].partitionIds`, fail).map((p, k) =>
            int(p, `tableLayouts[${i}].partitionIds[${k}]`, 0, fail),
          );
    const layout = {
      tableId,
      bucketCount: int(l.bucketCount, `tableLayouts[${i}].bucketCount`, 1, fail),
      partitionIds,
    };
    try {
      normalizeTableLayout(tableId, layout);
    } catch (error) {
      fail(`tableLayouts[${i}] is invalid (${(error as Error).message})`);
    }
    return layout;
  });
  const memberIds = new Set<string>();
  const instanceIds = new Set<string>();
  const owned = new Set<string>();
  const members = array(obj.members, 'members', fail).map((raw, i): GroupSnapshotMember => {
    const m = record(raw, `members[${i}]`, fail);
    const memberId = str(m.memberId, `members[${i}].memberId`, fail);
    const instanceId =
      m.instanceId === null ? null : str(m.instanceId, `members[${i}].instanceId`, fail);
    if (memberIds.has(memberId)) fail(`member ${memberId} appears twice`);
    memberIds.add(memberId);
    if (instanceId !== null) {
      if (instanceIds.has(instanceId)) fail(`instance id ${instanceId} appears twice`);
      instanceIds.add(instanceId);
    }
    const memberEpoch = int(m.memberEpoch, `members[${i}].memberEpoch`, 0, fail);
    if (memberEpoch > groupEpoch)
      fail(`member ${memberId} epoch ${memberEpoch} > groupEpoch ${groupEpoch}`);
    const assignment = array(m.assignment, `members[${i}].assignment`, fail).map(
      (rawBuckets, k) => {
        const b = record(rawBuckets, `members[${i}].assignment[${k}]`, fail);
        const tableId = int(b.tableId, `members[${i}].assignment[${k}].tableId`, 0, fail);
        const partitionId =
          b.partitionId === null
            ? null
            : int(b.partitionId, `members[${i}].assignment[${k}].partitionId`, 0, fail);
        const bucketIds = array(b.bucketIds, `members[${i}].assignment[${k}].bucketIds`, fail).map(
          (id) => {
            const bucketId = int(id, `members[${i}].assignment[${k}].bucketIds`, 0, fail);
            if (bucketId > BUCKET_ID_MAX) fail(`bucket id ${bucketId} out of range`);
            const key = `${tableId}:${partitionId ?? ''}:${bucketId}`;
            if (owned.has(key))
              fail(`table ${tableId} bucket ${bucketId} is assigned to two members`);
            owned.add(key);
            return bucketId;
          },
        );
        return { tableId, partitionId, bucketIds };
      },
    );
    const assignorValue =
      m.assignor === null ? null : str(m.assignor, `members[${i}].assignor`, fail);
    return {
      memberId,
      instanceId,
      memberEpoch,
      previousMemberEpoch: int(
        m.previousMemberEpoch,
        `members[${i}].previousMemberEpoch`,
        -2,
        fail,
      ),
      subscribedTableIds: sortedIds(
        array(m.subscribedTableIds, `members[${i}].subscribedTableIds`, fail).map((t) =>
          int(t, `members[${i}].subscribedTableIds`, 0, fail),
        ),
      ),
      assignor: assignorValue,
      sessionTimeoutMs: int(m.sessionTimeoutMs, `members[${i}].sessionTimeoutMs`, 1, fail),
      rebalanceTimeoutMs: int(m.rebalanceTimeoutMs, `members[${i}].rebalanceTimeoutMs`, 1, fail),
      assignment,
    };
  });
  return { groupEpoch, assignmentEpoch, tableLayouts, members };
}

type Fail = (what: string) => never;

function record(value: unknown, field: string, fail: Fail): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    fail(`${field} is not a map`);
  return value as Record<string, unknown>;
}

function array(value: unknown, field: string, fail: Fail): unknown[] {
  if (!Array.isArray(value)) fail(`${field} is not an array`);
  return value as unknown[];
}

function int(value: unknown, field: string, min: number, fail: Fail): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
    fail(`${field} is not a safe integer >= ${min}`);
  return value as number;
}

function str(value: unknown, field: string, fail: Fail): string {
  if (typeof value !== 'string' || value.length === 0) fail(`${field} is not a non-empty string`);
  return value as string;
}

function sortedIds(ids: number[]): number[] {
  return [...new Set(ids)].sort((a, b) => a - b);
}
