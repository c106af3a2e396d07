/**
 * OffsetsBucket: one offsets-bucket of a store, the unit the store routes requests to (by
 * `bucketFor(groupId)`) and the unit a cluster will move between nodes. It owns its offsets table
 * (log + materialized state + checkpoints) and its group coordinator, and holds the rules of every
 * request on the groups that live in it: commit (fenced by member epoch and bucket ownership),
 * fetch, reset, deletes, describe, membership, retention, and what compaction and conversions need.
 *
 * Lifecycle: `OffsetsBucket.load` recovers it alone (table, then the coordinator from the table's
 * group snapshots); `unload` closes it (the coordinator's timers, then the table, which flushes and
 * with the checkpoint strategy writes a last checkpoint). Nothing here knows about other buckets,
 * the manifest or the lock: that is the store's.
 *
 * Requests arrive validated and normalized (the store's public edge); the rules here assert nothing
 * about input shapes and check only what depends on state (members, ownership, existence).
 *
 * Deletes: every tombstone batch of one delete is appended in the same synchronous step as its plan
 * (OffsetsTable.writeOffsetsChunked), so a commit issued after the delete began lands after all of
 * them and survives; a commit appended before the plan is either applied (the plan saw its value) or
 * in flight, and an explicit delete covers keys in flight (it is ordered after them), while expiry
 * skips them (their fresher value must not be expired).
 */
import type { CompactionTarget } from '../compaction/index.js';
import type { OffsetRecordSpec } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import {
  type SubscriptionRefresh,
  GroupCoordinator,
  type ClassicGroupDescription,
  type ClassicGroupState,
  type ClassicHeartbeatRequest,
  type ClassicJoinGroupRequest,
  type ClassicJoinGroupResult,
  type ClassicLeaveGroupRequest,
  type ClassicLeaveGroupResult,
  type ClassicSyncGroupRequest,
  type ClassicSyncGroupResult,
  type GroupDescription as MembershipDescription,
  type GroupSettings,
  type GroupState,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type RemoveMembersRequest,
  type RemovedMember,
  type GroupSnapshotWriter,
  type StoredGroupSnapshot,
  type TableLayout,
} from '../group/index.js';
import {
  OffsetsTable,
  fetchFromGroup,
  type CommitMember,
  type CommittedOffsetValue,
  type GroupOffsets,
  type OffsetsTableRecovery,
} from '../kv/index.js';
import type { BucketLogRecord, LogOptions } from '../log/index.js';
import { bucketKey, type TableBucket } from '../model/index.js';
import { assert, withoutTimers, type Clock } from '../util/index.js';

/** How to load an offsets-bucket. */
export interface OffsetsBucketOptions {
  /** Its number in the store. */
  index: number;
  /** Options of its log (directory, file system, durability, limits). */
  log: LogOptions;
  /** Whether the store's strategy keeps LMDB checkpoints ('checkpoint', or a module declaring checkpoints). */
  useCheckpoints: boolean;
  /** The store is open to read only: its table refuses every write (OffsetsTableOptions.readOnly). */
  readOnly?: boolean;
  /** What the store's manifest recorded of this bucket's log. */
  record: BucketLogRecord;
  /** Time for commit timestamps and the coordinator's timers. */
  clock: Clock;
  /** The coordinator's settings, already resolved. */
  group: GroupSettings;
  /** Table layouts known so far (setTableLayout), given to the coordinator. */
  layouts: ReadonlyMap<number, TableLayout>;
  /**
   * Receives recoverable problems: a torn tail truncated, an ignored checkpoint, a failed background
   * group operation.
   */
  onWarning: (message: string) => void;
  /** Hears of each group whose offsets table the state drops (the store's fetch cache forgets it). */
  onGroupDropped: (groupId: string) => void;
  /** The offsets-bucket a group id lives in (the store's rule): what was recovered must be this one's. */
  bucketOf: (groupId: string) => number;
}

/** What one offsets-bucket reports in stats. */
export interface OffsetsBucketFigures {
  /** Bytes of its log. */
  logBytes: number;
  /** Bytes of batches appended to its log since it was loaded. */
  appendedBytes: number;
  /** Segments of its log, the active one included. */
  segmentCount: number;
  /** The log offset its next batch gets. */
  nextLogOffset: number;
  /** Committed offsets in memory. */
  liveOffsets: number;
  /** Groups with committed offsets. */
  groups: number;
}

/** A group's membership and committed offsets, as `describe` returns them (the store adds its bucket). */
export interface BucketGroupDescription {
  /** The coordinator's description of a consumer group, or null. */
  membership: MembershipDescription | null;
  /** The coordinator's description of a classic group, or null. */
  classic: ClassicGroupDescription | null;
  /** Every committed offset of the group. */
  offsets: CommittedOffsetValue[];
}

/** One group as `listGroups` reports it. */
export interface BucketGroupListing {
  /** The group. */
  groupId: string;
  /** Its state; null for a group with committed offsets only. */
  state: GroupState | ClassicGroupState | null;
  /** 'consumer', or 'classic' for a classic group and a group with offsets only (Kafka's simple group). */
  groupType: 'consumer' | 'classic';
  /** 'consumer' for a consumer group, a classic group's protocol type, '' for offsets only. */
  protocolType: string;
}

/** Tombstones (or image records) per batch: ~300 bytes each at most, far below the batch size limit. */
const RECORDS_PER_BULK_BATCH = 10_000;

function tombstone(b: TableBucket): OffsetRecordSpec {
  return {
    tableId: b.tableId,
    partitionId: b.partitionId,
    bucketId: b.bucketId,
    offset: 0,
    leaderEpoch: -1,
    metadata: '',
    tombstone: true,
  };
}

/** One offsets-bucket: its table, its coordinator, and the rules of requests on its groups. */
export class OffsetsBucket {
  /** Its number in the store (what `bucketFor` returns for its groups). */
  readonly index: number;
  /** Its offsets table: log, materialized state, checkpoints. */
  readonly table: OffsetsTable;
  /** The group coordinator of the groups that live in it. */
  readonly coordinator: GroupCoordinator;
  /** What recovery found when it was loaded. */
  readonly report: OffsetsTableRecovery;
  readonly #clock: Clock;
  readonly #onWarning: (message: string) => void;
  /** By group: the last change without a member waiting for its turn (`#withoutMember`). */
  readonly #withoutMemberTurns = new Map<string, Promise<void>>();
  readonly #group: GroupSettings;
  /** Once the log failed: the groups as their snapshots are durable (`groupsForReads`). */
  #durableGroups: GroupCoordinator | undefined;

  private constructor(
    index: number,
    table: OffsetsTable,
    coordinator: GroupCoordinator,
    report: OffsetsTableRecovery,
    clock: Clock,
    onWarning: (message: string) => void,
    group: GroupSettings,
  ) {
    this.index = index;
    this.table = table;
    this.coordinator = coordinator;
    this.report = report;
    this.#clock = clock;
    this.#onWarning = onWarning;
    this.#group = group;
  }

  /**
   * Recovers the offsets-bucket: its table (checkpoint, then the log; see OffsetsTable.open), then
   * its coordinator, from the latest group snapshots. A torn tail truncated is reported to
   * `onWarning`. On failure, whatever was opened is closed again.
   */
  static async load(options: OffsetsBucketOptions): Promise<OffsetsBucket> {
    const { table, report } = await OffsetsTable.open({
      log: options.log,
      useCheckpoints: options.useCheckpoints,
      logStart: options.record.logStart,
      knownEnd: { logOffset: options.record.logEnd, exact: options.record.endExact },
      onWarning: options.onWarning,
      readOnly: options.readOnly,
    });
    return OffsetsBucket.fromTable(options, table, report);
  }

  /**
   * The offsets-bucket over a table recovered already (a local one by `load`; one over a replicated
   * log by a cluster node, from its checkpoint and log): restores the coordinator from the table's
   * group snapshots (each group as its last snapshot had it), and takes the table over (closing it on failure).
   */
  static async fromTable(
    options: Pick<
      OffsetsBucketOptions,
      | 'index'
      | 'clock'
      | 'group'
      | 'layouts'
      | 'onWarning'
      | 'onGroupDropped'
      | 'bucketOf'
      | 'readOnly'
    >,
    table: OffsetsTable,
    report: OffsetsTableRecovery,
  ): Promise<OffsetsBucket> {
    let coordinator: GroupCoordinator;
    try {
      checkGroupsBelong(options.index, options.bucketOf, table);
      coordinator = loadCoordinator(
        options,
        table,
        options.clock,
        options.layouts,
        (error, groupId) => options.onWarning(`group ${groupId}: ${(error as Error).message}`),
      );
    } catch (error) {
      // The caller needs `error`, not a failure to close after it.
      await table
        .close()
        .catch((closeError: unknown) =>
          options.onWarning(
            `offsets-bucket ${options.index}: closing it after it failed to open failed too: ${(closeError as Error).message}`,
          ),
        );
      throw error;
    }
    table.state.onGroupDropped = options.onGroupDropped;
    if (report.staleSegments !== undefined)
      options.onWarning(
        `offsets-bucket ${options.index}: segment(s) ${report.staleSegments.files.join(', ')} lie wholly below log offset ${report.staleSegments.below}, where recovery starts, and do not chain with the segments after them (put back from an older copy of the store, or beside one removed by hand): ${options.readOnly === true ? 'not read (opened to read only: nothing is removed)' : 'removed, as the store removes every segment below its checkpoints'}`,
      );
    if (report.tornTail !== undefined) {
      const { file, position, reason } = report.tornTail;
      // With batches written again from the commit journal, the cut bytes may have held batches
      // that were acknowledged (durable in the journal): they are in the log again, not lost.
      const restored = report.journalBatches ?? 0;
      const torn = `offsets-bucket ${options.index}: torn write at the end of ${file} (byte ${position}: ${reason})`;
      // Read only: nothing is cut, and the bytes may be an append a live writer is making.
      options.onWarning(
        report.keptBatches !== undefined
          ? // A journal repair: the damaged bytes written from the journal's copies, in place.
            `offsets-bucket ${options.index}: damaged batch(es) in ${file} (byte ${position}: ${reason}): ${
              options.readOnly === true ? 'read' : 'wrote'
            } ${restored} batch(es) from the commit journal, where they were durable, in place of the damaged bytes, and kept the ${report.keptBatches} valid batch(es) after them; ${
              options.readOnly === true
                ? `the ${report.bytesTruncated} bytes after those are not read (opened to read only: nothing is written)`
                : `truncated ${report.bytesTruncated} bytes after those`
            }`
          : options.readOnly === true
            ? `${torn}: the ${report.bytesTruncated} bytes from there are not read (opened to read only: nothing is cut; in a store a live process writes, an append in progress reads so)${
                restored > 0
                  ? `, and ${restored} batch(es) were read from the commit journal, where they were durable`
                  : ''
              }`
            : `${torn}; truncated ${report.bytesTruncated} bytes${
                restored > 0
                  ? `, and wrote ${restored} batch(es) again from the commit journal, where they were durable`
                  : " that were never made durable (never acknowledged, unless the store ran in durability 'os', where a power loss takes commits acknowledged after the last fdatasync)"
              }`,
      );
    }
    return new OffsetsBucket(
      options.index,
      table,
      coordinator,
      report,
      options.clock,
      options.onWarning,
      options.group,
    );
  }

  /**
   * OffsetCommit of one group, atomic (one batch): a consumer member's fenced by member epoch and
   * bucket ownership; a classic member's by generation, checked and appended on the group's lane; one
   * without a member only while the group (of either type) has none.
   */
  commit(groupId: string, specs: OffsetRecordSpec[], member: CommitMember | null): Promise<void> {
    // A negative generation or member epoch to a group without members is a commit without a
    // member, whatever member id it names, as in Kafka (a consumer that left, or one outside group
    // management, commits with generation -1): `#withoutMember` then refuses it if a member joined
    // meanwhile. With members, the member is checked as usual.
    // Not async (the table's write is returned as it is): a layer of promise less per commit.
    try {
      if (
        member !== null &&
        (member.kind === 'classic' ? member.generationId : member.memberEpoch) < 0 &&
        !this.coordinator.hasMembers(groupId)
      )
        member = null;
      // No closure held in a variable here: run from source, each would be named on every call.
      if (member?.kind === 'classic') {
        return this.coordinator.classic.commit(groupId, member, () =>
          this.table.writeOffsets(groupId, specs, this.#clock.nowMs()),
        );
      }
      if (member !== null) {
        this.coordinator.validateMemberCommit(groupId, member.memberId, member.memberEpoch, specs);
        return this.table.writeOffsets(groupId, specs, this.#clock.nowMs());
      }
      // Run in the call when nothing waits, as #withoutMember would, without making its closure.
      if (this.#nothingWaits(groupId)) return this.#commitWithoutMember(groupId, specs);
      return this.#withoutMember(groupId, () => this.#commitWithoutMember(groupId, specs));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A commit without a member, refused while the group has members. */
  #commitWithoutMember(groupId: string, specs: OffsetRecordSpec[]): Promise<void> {
    if (this.coordinator.hasMembers(groupId)) {
      throw new OffsetStoreError(
        'UNKNOWN_MEMBER_ID',
        `group ${groupId} has members: a commit needs the committing member (memberId and memberEpoch, or generationId and memberId for a classic group)`,
      );
    }
    return this.table.writeOffsets(groupId, specs, this.#clock.nowMs());
  }

  /**
   * No change without a member of the group waits for its turn, and no snapshot of its membership
   * waits to be written (`membershipLogged` would be null): such a change may run in the call.
   */
  #nothingWaits(groupId: string): boolean {
    return !this.#withoutMemberTurns.has(groupId) && !this.coordinator.membershipPending(groupId);
  }

  /**
   * Runs a change made without a member (`change` checks the membership and issues its appends
   * before its first await) once the snapshot of every membership change of the group made so far
   * is in the log (GroupCoordinator.membershipLogged), and after the changes without a member of
   * the group called before it (so that pipelined commits keep their order). Without a snapshot
   * write waiting, it runs in the call. A change that issues its appends later than it returns (a
   * deleteGroup waiting for the group's lane) passes `issued`, and the next change waits for that.
   */
  #withoutMember<T>(groupId: string, change: () => Promise<T>, issued?: Promise<void>): Promise<T> {
    if (issued === undefined && this.#nothingWaits(groupId)) return change();
    const previous = this.#withoutMemberTurns.get(groupId);
    // May start a write (of a change whose write failed): awaited below, never dropped.
    const logged = this.coordinator.membershipLogged(groupId);
    logged?.catch(() => undefined); // rejects before it is awaited, while `previous` runs
    let done!: () => void;
    const turn = new Promise<void>((resolve) => (done = resolve));
    this.#withoutMemberTurns.set(groupId, turn);
    const finish = () => {
      done();
      if (this.#withoutMemberTurns.get(groupId) === turn) this.#withoutMemberTurns.delete(groupId);
    };
    const run = (): Promise<T> => {
      let result: Promise<T>;
      try {
        result = change();
      } catch (error) {
        finish();
        throw error;
      }
      if (issued === undefined) finish();
      else void issued.then(finish);
      return result;
    };
    // In the call when nothing is waiting (a deleteGroup whose lane is idle issues its appends here).
    if (previous === undefined && logged === null) return run();
    return (async () => {
      try {
        await previous;
        for (
          let waiting = logged;
          waiting !== null;
          waiting = this.coordinator.membershipLogged(groupId)
        )
          await waiting;
      } catch (error) {
        finish();
        throw error;
      }
      return run();
    })();
  }

  /** The offsets table of a group with committed offsets (the store's fetch cache keeps it). */
  group(groupId: string): GroupOffsets | undefined {
    return this.table.state.group(groupId);
  }

  /**
   * OffsetFetch: one result per bucket (null where nothing is committed), or every committed offset
   * of the group when `buckets` is undefined. With `requireStable`, a bucket (or, for the whole group,
   * any bucket) with a commit in flight is UNSTABLE_OFFSET_COMMIT.
   */
  fetch(
    groupId: string,
    buckets: readonly unknown[] | undefined,
    requireStable: boolean,
  ): (CommittedOffsetValue | null)[] {
    const state = this.table.state;
    if (buckets === undefined) {
      if (requireStable && state.hasPending(groupId)) {
        throw new OffsetStoreError(
          'UNSTABLE_OFFSET_COMMIT',
          `group ${groupId} has a commit of a bucket in flight; retry`,
        );
      }
      return state.groupValues(groupId);
    }
    if (requireStable) return state.fetch(groupId, buckets, true);
    return fetchFromGroup(groupId, state.group(groupId), buckets);
  }

  /** Every group with committed offsets or members, with its state and type. */
  listGroups(): BucketGroupListing[] {
    const groups = this.groupsForReads();
    const groupIds = new Set([...this.table.state.groupIds(), ...groups.groupIds()]);
    return [...groupIds].map((groupId) => {
      const groupType = groups.groupType(groupId);
      const protocolType =
        groupType === 'consumer'
          ? 'consumer'
          : (groups.classic.listing(groupId)?.protocolType ?? '');
      return {
        groupId,
        state: groups.groupState(groupId),
        groupType: groupType ?? 'classic',
        protocolType,
      };
    });
  }

  /** Membership and offsets of a group; GROUP_ID_NOT_FOUND when it has neither. */
  describe(groupId: string): BucketGroupDescription {
    const groups = this.groupsForReads();
    const offsets = this.table.state.groupValues(groupId);
    const membership = groups.describe(groupId);
    const classic = groups.classic.describe(groupId);
    if (offsets.length === 0 && membership === null && classic === null)
      throw new OffsetStoreError(
        'GROUP_ID_NOT_FOUND',
        `group ${groupId} has no committed offsets and no members`,
      );
    return { membership, classic, offsets };
  }

  /** Overwrites committed offsets of a group that has no members (NON_EMPTY_GROUP otherwise). */
  async reset(groupId: string, specs: OffsetRecordSpec[]): Promise<void> {
    await this.#withoutMember(groupId, () => {
      this.#requireNoMembers(groupId, 'reset its offsets');
      return this.table.writeOffsets(groupId, specs, this.#clock.nowMs());
    });
  }

  /**
   * Deletes committed offsets of some buckets (tombstones, ordered after any commit in flight of
   * them); refuses buckets assigned to a member (GROUP_SUBSCRIBED_TO_BUCKET).
   */
  deleteOffsets(
    groupId: string,
    refs: readonly TableBucket[],
    classicSubscriptions?: (group: ClassicGroupDescription) => ReadonlySet<number> | undefined,
  ): Promise<void> {
    return this.#withoutMember(groupId, () =>
      this.#deleteOffsetsNow(groupId, refs, classicSubscriptions),
    );
  }

  async #deleteOffsetsNow(
    groupId: string,
    refs: readonly TableBucket[],
    classicSubscriptions?: (group: ClassicGroupDescription) => ReadonlySet<number> | undefined,
  ): Promise<void> {
    const state = this.table.state;
    if (!this.#exists(groupId))
      throw new OffsetStoreError('GROUP_ID_NOT_FOUND', `group ${groupId} has no committed offsets`);
    // A classic group's protocol metadata is opaque bytes: while it has members, no offset of it may
    // go unless the caller reads its subscriptions (as Kafka's coordinator does for the consumer
    // protocol), and then none of a table a member subscribes to.
    const classicMembers = this.coordinator.classic.memberCount(groupId) ?? 0;
    if (classicMembers > 0) {
      const classic = this.coordinator.classic.describe(groupId)!;
      const tables = classicSubscriptions?.(classic);
      if (tables !== undefined && !(tables instanceof Set))
        throw new TypeError(
          `options.classicSubscriptions must return a Set of table ids or undefined, got ${Array.isArray(tables) ? 'an array' : typeof tables}`,
        );
      if (tables === undefined)
        throw new OffsetStoreError(
          'NON_EMPTY_GROUP',
          `group ${groupId} is a classic group with ${classicMembers} member(s) whose subscriptions the store cannot read`,
        );
      const subscribed = refs.find((b) => tables.has(b.tableId));
      if (subscribed !== undefined)
        throw new OffsetStoreError(
          'GROUP_SUBSCRIBED_TO_BUCKET',
          `bucket ${bucketKey(subscribed)} of group ${groupId} is of a table a member subscribes to`,
        );
    }
    for (const b of refs) {
      if (this.coordinator.isBucketAssigned(groupId, b)) {
        throw new OffsetStoreError(
          'GROUP_SUBSCRIBED_TO_BUCKET',
          `bucket ${bucketKey(b)} of group ${groupId} is assigned to a member`,
        );
      }
    }
    const present = refs.filter(
      (b) =>
        state.get(groupId, b.tableId, b.partitionId, b.bucketId) !== null ||
        state.isPending(groupId, b.tableId, b.partitionId, b.bucketId),
    );
    if (present.length > 0) await this.#writeTombstones(groupId, present);
  }

  /**
   * Deletes a group without members: every offset (and commit in flight), then its membership
   * record, atomically with respect to members joining: the member check and the appends of every
   * tombstone are one step of the group's lane. It is a change without a member (#withoutMember):
   * it runs after those called before it, in this call when none waits and the lane is idle, and it
   * keeps its turn until its tombstones are appended (while the lane is busy with a membership write
   * or another deleteGroup, later), so that the changes without a member called after it (commits,
   * resets, deletes of offsets) land after them.
   */
  deleteGroup(groupId: string): Promise<void> {
    const state = this.table.state;
    let settle!: () => void;
    const issued = new Promise<void>((resolve) => (settle = resolve));
    return this.#withoutMember(
      groupId,
      async () => {
        try {
          if (!this.#exists(groupId))
            throw new OffsetStoreError('GROUP_ID_NOT_FOUND', `group ${groupId} does not exist`);
          await this.coordinator.deleteGroup(groupId, () => {
            try {
              // Let in whole or refused whole (TOO_MANY_PENDING_WRITES, before anything is
              // appended): the offsets' tombstones and the group's, which is never refused.
              this.table.log.checkRoom();
              const keys = state.committedOrPendingKeys(groupId);
              return keys.length > 0 ? this.#writeTombstones(groupId, keys, true) : undefined;
            } finally {
              settle(); // the tombstones are appended (issued before #writeTombstones returns)
            }
          });
        } finally {
          settle();
        }
      },
      issued,
    );
  }

  /**
   * Whether the group exists for a delete: it has committed offsets, a commit still in flight
   * (called before the delete, which deletes it too), or a membership record.
   */
  #exists(groupId: string): boolean {
    const state = this.table.state;
    return (
      state.group(groupId) !== undefined ||
      this.coordinator.groupState(groupId) !== null ||
      state.committedOrPendingKeys(groupId).length > 0
    );
  }

  /** Removes members as Kafka's `removeMembersFromConsumerGroup` (see OffsetStore.removeMembers). */
  removeMembers(groupId: string, request: RemoveMembersRequest): Promise<RemovedMember[]> {
    if (
      this.table.state.group(groupId) === undefined &&
      this.coordinator.groupState(groupId) === null
    ) {
      throw new OffsetStoreError(
        'GROUP_ID_NOT_FOUND',
        `group ${groupId} has no committed offsets and no members`,
      );
    }
    return this.coordinator.removeMembers(groupId, request);
  }

  /** The group-membership protocol: join, heartbeat, leave. */
  heartbeat(groupId: string, request: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.coordinator.heartbeat(groupId, request);
  }

  /** GroupCoordinator.refreshSubscriptions. */
  refreshSubscriptions(
    groupId: string,
    updates: ReadonlyMap<string, SubscriptionRefresh>,
  ): Promise<void> {
    return this.coordinator.refreshSubscriptions(groupId, updates);
  }

  /** The classic protocol's JoinGroup. */
  classicJoinGroup(
    groupId: string,
    request: ClassicJoinGroupRequest,
  ): Promise<ClassicJoinGroupResult> {
    return this.coordinator.classic.joinGroup(groupId, request);
  }

  /** The classic protocol's SyncGroup. */
  classicSyncGroup(
    groupId: string,
    request: ClassicSyncGroupRequest,
  ): Promise<ClassicSyncGroupResult> {
    return this.coordinator.classic.syncGroup(groupId, request);
  }

  /** The classic protocol's Heartbeat. */
  classicHeartbeat(groupId: string, request: ClassicHeartbeatRequest): Promise<void> {
    return this.coordinator.classic.heartbeat(groupId, request);
  }

  /** The classic protocol's LeaveGroup. */
  classicLeaveGroup(
    groupId: string,
    request: ClassicLeaveGroupRequest,
  ): Promise<ClassicLeaveGroupResult> {
    return this.coordinator.classic.leaveGroup(groupId, request);
  }

  #requireNoMembers(groupId: string, action: string): void {
    const groups = this.groupsForReads();
    if (groups.hasMembers(groupId)) {
      const members =
        groups.describe(groupId)?.members.length ?? groups.classic.memberCount(groupId) ?? 0;
      throw new OffsetStoreError(
        'NON_EMPTY_GROUP',
        `cannot ${action}: group ${groupId} has ${members} member(s)`,
      );
    }
  }

  /** Tombstones of `buckets`, in batches appended in one synchronous step (see the module comment). */
  #writeTombstones(
    groupId: string,
    buckets: readonly TableBucket[],
    admitted = false,
  ): Promise<void> {
    return this.table.writeOffsetsChunked(
      groupId,
      buckets.map(tombstone),
      this.#clock.nowMs(),
      RECORDS_PER_BULK_BATCH,
      admitted,
    );
  }

  /**
   * One retention pass (offsets expire `retentionMs` after their commit, or after their classic group
   * became Empty when that is later): planned and appended in one synchronous step per group. A
   * group without members loses every expired offset, a consumer group with members only those of
   * tables no member subscribes to, a classic group with members none; a key with a commit in
   * flight is skipped.
   * Then every Empty group left with no offsets, and none in flight, is deleted. A failed write is
   * reported to `onWarning` (it also fail-stops the log, which every later call on this bucket
   * reports).
   */
  async expire(retentionMs: number, nowMs: number): Promise<void> {
    if (this.table.log.failed) return;
    const writes: [string, Promise<unknown>][] = [];
    for (const groupId of [...this.table.state.groupIds()]) {
      // A membership change whose snapshot is not in the log yet: the next check expires them.
      if (this.coordinator.membershipPending(groupId)) continue;
      const expired = this.#expiredOffsets(groupId, retentionMs, nowMs);
      if (expired.length > 0) writes.push([groupId, this.#writeTombstones(groupId, expired)]);
    }
    await this.#reportFailures('expiring the offsets of', writes);
    const deletes: [string, Promise<unknown>][] = [];
    for (const groupId of this.coordinator.groupIds()) {
      if (
        this.coordinator.groupState(groupId) === 'Empty' &&
        !this.coordinator.hasMembers(groupId) &&
        this.table.state.group(groupId) === undefined &&
        // A commit called before this pass, still in flight, gives it offsets: not left empty.
        !this.table.state.hasPending(groupId)
      ) {
        deletes.push([groupId, this.coordinator.deleteGroup(groupId)]);
      }
    }
    await this.#reportFailures('deleting the expired', deletes);
  }

  /** Awaits every write; each failure becomes one warning naming its group (at most a few, then a count). */
  async #reportFailures(
    what: string,
    writes: readonly [string, Promise<unknown>][],
  ): Promise<void> {
    const results = await Promise.allSettled(writes.map(([, write]) => write));
    const failed = results.flatMap((r, i) =>
      r.status === 'rejected' ? [[writes[i]![0], r.reason] as const] : [],
    );
    for (const [groupId, error] of failed.slice(0, 3))
      this.#onWarning(
        `offsets-bucket ${this.index}: ${what} group ${groupId} failed: ${(error as Error).message}`,
      );
    if (failed.length > 3)
      this.#onWarning(
        `offsets-bucket ${this.index}: ${what} ${failed.length - 3} more group(s) failed too`,
      );
  }

  #expiredOffsets(groupId: string, retentionMs: number, nowMs: number): TableBucket[] {
    const state = this.table.state;
    const group = state.group(groupId)!;
    // A classic group's subscriptions are opaque: while it has members, none of its offsets expire.
    // Once it is Empty, its offsets' retention runs from when it became Empty (as Kafka's does), or
    // from their commit if that is later: a consumer commits only the partitions whose position
    // moved, so a quiet partition's last commit may be older than the retention when its group
    // empties for a restart.
    // Nor while it is anything but Empty: a group rebalancing with no members left (its first member
    // left during the initial delay) has no Empty time yet, and Kafka expires nothing of it.
    if ((this.coordinator.classic.memberCount(groupId) ?? 0) > 0) return [];
    const classic = this.coordinator.classic.listing(groupId);
    if (classic !== null && classic.state !== 'Empty') return [];
    const emptySinceMs = this.coordinator.classic.emptySinceMs(groupId) ?? -Infinity;
    const subscribed = this.coordinator.hasMembers(groupId)
      ? new Set(
          this.coordinator.describe(groupId)?.members.flatMap((m) => m.subscribedTableIds) ?? [],
        )
      : undefined;
    const expired: TableBucket[] = [];
    for (let i = 0; i < group.size; i++) {
      if (Math.max(group.timestampAt(i), emptySinceMs) + retentionMs > nowMs) continue;
      if (subscribed?.has(group.tableIdAt(i)) === true) continue;
      const { tableId, partitionId, bucketId } = group.valueAt(i);
      if (!state.isPending(groupId, tableId, partitionId, bucketId))
        expired.push({ tableId, partitionId, bucketId });
    }
    return expired;
  }

  /**
   * What compaction needs of this bucket; `logStart` reads the manifest's current log start for it
   * (a conversion moves it).
   */
  compactionTarget(logStart: () => number): CompactionTarget {
    const { table } = this;
    const clock = this.#clock;
    const log = table.segmentLog;
    assert(log !== undefined, 'compaction runs on offsets-buckets whose log is local segments');
    return {
      bucket: this.index,
      log,
      liveBytesEstimate: () => table.state.liveOffsetCount * table.state.recordBytesAverage,
      liveOffsets: () => table.state.liveOffsetCount,
      liveSnapshots: () => table.state.snapshotCount,
      logStart,
      newestCheckpoint: () => {
        const info = table.latestCheckpoint();
        return info === undefined
          ? undefined
          : {
              logOffset: info.logOffset,
              liveOffsets: info.liveOffsets,
              createdAtMs: info.createdAtMs,
            };
      },
      batchesSinceCheckpoint: () => table.batchesSinceCheckpoint,
      writeCheckpoint: async () => {
        const written = await table.writeCheckpoint(clock.nowMs());
        if (written === undefined)
          throw new OffsetStoreError(
            'INVALID_COMPACTION_PLAN',
            `offsets-bucket ${this.index} keeps no checkpoints`,
          );
        return { logOffset: written.info.logOffset, bytesWritten: written.bytesWritten };
      },
      freeBelow: (logOffset) => table.freeBelow(logOffset),
    };
  }

  /** Figures of the bucket for stats. */
  figures(): OffsetsBucketFigures {
    let groups = 0;
    for (const _ of this.table.state.groupIds()) groups++;
    const { log, segmentLog, state } = this.table;
    return {
      logBytes: log.sizeBytes,
      appendedBytes: log.appendedBytes,
      segmentCount: segmentLog?.segments().length ?? 0,
      nextLogOffset: log.nextOffset,
      liveOffsets: state.liveOffsetCount,
      groups,
    };
  }

  /**
   * Where the log ends, as the manifest records it at a clean close: exactly, or after a storage
   * failure a lower bound, where the log was last known durable (in durability 'os' that may be
   * below what was acknowledged; the next open writes the rest again: recovery.md), or for a log
   * whose file was removed or replaced, what it acknowledged (Log.endLowerBound).
   */
  logEnd(): { logOffset: number; exact: boolean } {
    const log = this.table.log;
    return log.failed
      ? { logOffset: log.endLowerBound, exact: false }
      : { logOffset: log.acknowledgedEnd, exact: true };
  }

  /**
   * The coordinator that reads of groups (list, describe, a group's type, a fetch's member check,
   * whether a group has members) are answered from. Once the log has failed
   * (a storage failure stopped it: nothing becomes durable until the store is reopened), the live
   * coordinator may hold changes whose snapshot was refused (a join, a leave, an expiry), which no
   * reopen would serve, and which it keeps, as every refused snapshot write, to write with the next
   * operation: reads then answer from the groups as their snapshots are durable, what a reopen
   * serves. Built on the first read after the failure (nothing becomes durable after it), with no
   * timers, and never written to.
   */
  groupsForReads(): GroupCoordinator {
    if (!this.table.log.failed) return this.coordinator;
    if (this.#durableGroups === undefined) {
      const failure = new OffsetStoreError(
        'LOG_STORAGE_ERROR',
        `offsets-bucket ${this.index}: its log was stopped by a storage failure; reopen the store`,
      );
      this.#durableGroups = loadCoordinator(
        { index: this.index, group: this.#group },
        this.table,
        withoutTimers(this.#clock),
        this.coordinator.tableLayouts(),
        () => {},
        { writeSnapshot: () => Promise.reject(failure) },
      );
    }
    return this.#durableGroups;
  }

  /** Stops the coordinator's timers (members' sessions); the bucket still answers until unloaded. */
  stopTimers(): void {
    this.coordinator.close();
  }

  /**
   * Closes the bucket: its coordinator's timers (its parked and queued group calls fail with
   * `reason`, STORE_CLOSED when none is given), then its table (queued writes flushed; with
   * `checkpointAtMs`, a last checkpoint written first).
   */
  async unload(checkpointAtMs?: number, reason?: OffsetStoreError): Promise<void> {
    this.coordinator.close(reason);
    this.#durableGroups?.close();
    await this.table.close(checkpointAtMs);
  }
}

/**
 * CORRUPT_MESSAGE unless every group the table recovered lives in bucket `index`: nothing in a
 * log's batches or a checkpoint names its bucket, so files moved or copied between buckets' folders
 * (or whole folders swapped) would otherwise open cleanly, every group's offsets then looked for in
 * the other bucket and read as none, and the next commits make the loss permanent.
 */
function checkGroupsBelong(
  index: number,
  bucketOf: (groupId: string) => number,
  table: OffsetsTable,
): void {
  const check = (groupId: string): void => {
    const home = bucketOf(groupId);
    if (home !== index)
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `offsets-bucket ${index} holds group ${JSON.stringify(groupId)}, which lives in offsets-bucket ${home}: this bucket's files hold another bucket's data (segments, checkpoints or whole bucket folders moved or copied between buckets); the store refuses to open rather than serve the groups of both as if they had no offsets`,
      );
  };
  for (const groupId of table.state.groupIds()) check(groupId);
  for (const [groupId] of table.state.snapshots()) check(groupId);
}

/**
 * A coordinator of the bucket's groups as the table's latest snapshots have them (each group as its
 * last snapshot had it), loaded and active. CORRUPT_MESSAGE names the bucket when a snapshot cannot be
 * loaded.
 */
function loadCoordinator(
  options: Pick<OffsetsBucketOptions, 'index' | 'group'>,
  table: OffsetsTable,
  clock: Clock,
  layouts: ReadonlyMap<number, TableLayout>,
  onBackgroundError: (error: unknown, groupId: string) => void,
  writer: GroupSnapshotWriter = {
    writeSnapshot: async (groupId, snapshot) => {
      await table.writeSnapshot(groupId, snapshot, clock.nowMs());
    },
  },
): GroupCoordinator {
  const coordinator = new GroupCoordinator({
    writer,
    clock,
    ...options.group,
    // A snapshot is one batch: it must fit the log's (1 MiB in etcd, 8 MiB on disk), with room for
    // the batch's header and the group id.
    snapshotBytesMax: Math.floor((table.log.batchBytesMax * 7) / 8),
    onBackgroundError,
  });
  for (const [tableId, layout] of layouts) coordinator.setTableLayout(tableId, layout);
  for (const [groupId, snapshot] of table.state.snapshots()) {
    try {
      coordinator.loadSnapshot(groupId, snapshot as StoredGroupSnapshot);
    } catch (error) {
      if (!(error instanceof OffsetStoreError) || error.code !== 'CORRUPT_MESSAGE') throw error;
      const where = table.segmentLog === undefined ? '' : ` (${table.segmentLog.dir})`;
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `offsets-bucket ${options.index}${where}: the last snapshot of group ${JSON.stringify(groupId)} cannot be loaded (log verify names its batch): ${error.message}`,
        { cause: error },
      );
    }
  }
  coordinator.onLoadComplete();
  return coordinator;
}
