/**
 * GroupSnapshot: the only group state that is persisted. One snapshot per group, written as an
 * upsert keyed by groupId (record type 1, docs/on-disk-format.md) after every operation that changed
 * the group, before the operation answers (so an epoch or an assignment a member was told is never
 * lost to a restart, as a broker writes its records before answering), and a tombstone (null) when
 * the group is deleted. It is plain data — numbers,
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
 *                 assignment: [{ tableId, partitionId | null, bucketIds }],
 *                 state?, pendingRevocation?: [...], target?: [...] }] }
 * A member in the middle of a rebalance also has `state` (its reconciliation state, when not
 * 'STABLE'), `pendingRevocation` (buckets it still owns and must release, when any) and `target`
 * (its target assignment, when it differs from `assignment`); a snapshot of a Stable or Empty group
 * has none of them, and readers take their absence as 'STABLE', none, and `assignment`.
 */
import { OffsetStoreError } from '../errors/index.js';
import { BUCKET_ID_MAX, type TableBucket } from '../model/index.js';
import { BucketSet } from './bucket-set.js';
import type { ClassicGroupSnapshot } from './classic-snapshot.js';
import type { ConsumerMember, MemberState } from './consumer-member.js';
import type { Group } from './group.js';
import type { GroupRecord } from './group-record.js';
import { normalizeTableLayout, type TableLayout } from './table-layout.js';

/** The persisted image of a group. */
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
  /** Every member, with its current assignment and, in a rebalance, its target. */
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

/** One member in a snapshot. */
export interface GroupSnapshotMember {
  /** The member's id. */
  readonly memberId: string;
  /** Its static instance id, or null. */
  readonly instanceId: string | null;
  /** Its member epoch (0 joining, -2 a static member away); restored as is. */
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
  /** Its reconciliation state; absent: 'STABLE'. */
  readonly state?: MemberState;
  /** Buckets it must release and still owns; absent: none. */
  readonly pendingRevocation?: readonly GroupSnapshotBuckets[];
  /** Its target assignment; absent: `assignment`. */
  readonly target?: readonly GroupSnapshotBuckets[];
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

/** Builds the snapshot of a group, in whatever state it is. */
export function snapshotOf(group: Group): GroupSnapshot {
  const members = [...group.members.values()].map((m) =>
    snapshotMember(m, group.targetOf(m.memberId)),
  );
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

function snapshotMember(member: ConsumerMember, target: BucketSet): GroupSnapshotMember {
  return {
    memberId: member.memberId,
    instanceId: member.instanceId,
    memberEpoch: member.memberEpoch,
    previousMemberEpoch: member.previousMemberEpoch,
    subscribedTableIds: [...member.subscribedTableIds],
    assignor: member.assignor,
    sessionTimeoutMs: member.sessionTimeoutMs,
    rebalanceTimeoutMs: member.rebalanceTimeoutMs,
    assignment: runsOf(member.assigned),
    ...(member.state === 'STABLE' ? {} : { state: member.state }),
    ...(member.pendingRevocation.size === 0
      ? {}
      : { pendingRevocation: runsOf(member.pendingRevocation) }),
    ...(target.equals(member.assigned) ? {} : { target: runsOf(target) }),
  };
}

/**
 * Runs of each bucket set already written: sets are immutable and shared from record to state, so a
 * member whose assignment did not change since the group's last snapshot costs nothing to write again.
 */
const RUNS = new WeakMap<BucketSet, readonly GroupSnapshotBuckets[]>();

/** Buckets as runs of one table partition each (as a snapshot writes them; made once per set). */
export function runsOf(buckets: BucketSet): readonly GroupSnapshotBuckets[] {
  let runs = RUNS.get(buckets);
  if (runs === undefined) {
    runs = buildRuns(buckets);
    RUNS.set(buckets, runs);
  }
  return runs;
}

function buildRuns(buckets: BucketSet): readonly GroupSnapshotBuckets[] {
  // Sorted refs put each table partition's buckets next to each other: group runs, no keys needed.
  const runs: { tableId: number; partitionId: number | null; bucketIds: number[] }[] = [];
  let run: { tableId: number; partitionId: number | null; bucketIds: number[] } | undefined;
  for (const ref of buckets.toArray()) {
    if (run === undefined || run.tableId !== ref.tableId || run.partitionId !== ref.partitionId) {
      run = { tableId: ref.tableId, partitionId: ref.partitionId, bucketIds: [] };
      runs.push(run);
    }
    run.bucketIds.push(ref.bucketId);
  }
  // Shared by every snapshot that writes the set: frozen, so that no reader can change another's.
  for (const r of runs) {
    Object.freeze(r.bucketIds);
    Object.freeze(r);
  }
  return Object.freeze(runs);
}

/** The records that rebuild a group from its snapshot (the group must not exist yet). */
export function snapshotToRecords(groupId: string, snapshot: GroupSnapshot): GroupRecord[] {
  const records: GroupRecord[] = [
    { type: 'group-epoch', groupId, groupEpoch: snapshot.groupEpoch },
  ];
  for (const m of snapshot.members) {
    const assigned = BucketSet.of(expandBuckets(m.assignment));
    const target = m.target === undefined ? assigned : BucketSet.of(expandBuckets(m.target));
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
          state: m.state ?? 'STABLE',
          assigned,
          pendingRevocation:
            m.pendingRevocation === undefined
              ? BucketSet.EMPTY
              : BucketSet.of(expandBuckets(m.pendingRevocation)),
        },
      },
      { type: 'target-member', groupId, memberId: m.memberId, buckets: target },
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
  const targeted = new Set<string>();
  /** A member's list of buckets (`field`), each bucket added to `seen` (`twice` if it was there). */
  const bucketRuns = (value: unknown, field: string, seen: Set<string>, twice: string) =>
    array(value, field, fail).map((rawBuckets, k) => {
      const b = record(rawBuckets, `${field}[${k}]`, fail);
      const tableId = int(b.tableId, `${field}[${k}].tableId`, 0, fail);
      const partitionId =
        b.partitionId === null ? null : int(b.partitionId, `${field}[${k}].partitionId`, 0, fail);
      const bucketIds = array(b.bucketIds, `${field}[${k}].bucketIds`, fail).map((id) => {
        const bucketId = int(id, `${field}[${k}].bucketIds`, 0, fail);
        if (bucketId > BUCKET_ID_MAX) fail(`bucket id ${bucketId} out of range`);
        const key = `${tableId}:${partitionId ?? ''}:${bucketId}`;
        if (seen.has(key)) fail(`table ${tableId} bucket ${bucketId} ${twice}`);
        seen.add(key);
        return bucketId;
      });
      return { tableId, partitionId, bucketIds };
    });
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
    const memberEpoch = int(m.memberEpoch, `members[${i}].memberEpoch`, -2, fail);
    if (memberEpoch === -1) fail(`member ${memberId} has epoch -1 (a member that left)`);
    if (memberEpoch > groupEpoch)
      fail(`member ${memberId} epoch ${memberEpoch} > groupEpoch ${groupEpoch}`);
    const twice = 'is assigned to two members';
    const assignment = bucketRuns(m.assignment, `members[${i}].assignment`, owned, twice);
    const rest: {
      state?: MemberState;
      pendingRevocation?: GroupSnapshotBuckets[];
      target?: GroupSnapshotBuckets[];
    } = {};
    if (m.state !== undefined) {
      if (m.state !== 'UNREVOKED_PARTITIONS' && m.state !== 'UNRELEASED_PARTITIONS')
        fail(`members[${i}].state is not a reconciliation state`);
      rest.state = m.state as MemberState;
    }
    if (m.pendingRevocation !== undefined)
      rest.pendingRevocation = bucketRuns(
        m.pendingRevocation,
        `members[${i}].pendingRevocation`,
        owned,
        twice,
      );
    rest.target =
      m.target === undefined
        ? undefined
        : bucketRuns(m.target, `members[${i}].target`, targeted, "is in two members' targets");
    if (rest.target === undefined) {
      delete rest.target;
      for (const run of assignment)
        for (const bucketId of run.bucketIds) {
          const key = `${run.tableId}:${run.partitionId ?? ''}:${bucketId}`;
          if (targeted.has(key))
            fail(`table ${run.tableId} bucket ${bucketId} is in two members' targets`);
          targeted.add(key);
        }
    }
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
      ...rest,
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
