/**
 * GroupCoordinator: the group coordinator of one offsets-bucket — membership, server-side assignment
 * and cooperative rebalancing for every group that lives in the bucket (docs/group-protocol.md).
 *
 * How it changes state: every change is a handler (group-handlers.ts) run on the group's
 * OperationLane; the handler emits records, which replay into the GroupStateMachine. After each
 * operation that changed the group, in whatever state it is now, its snapshot is written through
 * the GroupSnapshotWriter port and the operation completes only once it is durable: what a member
 * was told (its epoch, its assignment, a bucket to release) survives a restart, and a rebalance in
 * flight goes on after it where it stood (as a broker writes its records before it answers).
 * Heartbeats that change nothing (a Stable group's) write nothing.
 *
 * Snapshot writes are group-committed per group: the lane does not wait for a write, so the next
 * operations run in memory while it is in flight, and one write, started when it ends, covers all of
 * them. Every operation's answer waits for the first write that covers the state it saw (the next
 * one if the group changed since the write in flight started, else that one): nothing is answered
 * from a state that is not durable. A join storm of N members costs about as many writes as fit in
 * its duration, not N, and operations never queue behind writes.
 *
 * Invariants:
 *  - operations of one group never interleave (the lane), so a snapshot is written from a state no
 *    later operation has touched, and writes of one group are issued in order (latest wins on replay);
 *  - a failed snapshot write leaves the in-memory state as the operation made it (always safe: the
 *    durable state only lags) and marks the group dirty, so the next operation retries the write and
 *    its caller sees the failure if it persists; once a storage failure has stopped the bucket's log,
 *    nothing is retried, and the bucket answers reads from a coordinator loaded from the durable
 *    snapshots instead (offsets-bucket.ts);
 *  - lifecycle: loading (only loadSnapshot/setTableLayout) -> active -> closed (everything rejects
 *    with STORE_CLOSED; timers are cancelled).
 *  - a group id has one type at a time: a consumer group here, or a classic (JoinGroup/SyncGroup)
 *    group in `classic` (classic-coordinator.ts), which shares this coordinator's lanes, phase and
 *    writer. A join of one protocol takes over an Empty group of the other (it is dropped from memory;
 *    the new type's first snapshot replaces it on disk) and is INCONSISTENT_GROUP_PROTOCOL for one
 *    with members.
 *
 * Wiring (the composition root does this, one coordinator per offsets-bucket):
 *  1. construct with a GroupSnapshotWriter that appends a group-snapshot record (type 1, keyed by
 *     groupId; null = tombstone) to the bucket's log and resolves once it is durable;
 *  2. while replaying the log, call `loadSnapshot(groupId, decoded | null)` for every type-1 record,
 *     in log order (consumer and classic snapshots alike); then `onLoadComplete()` (also when there
 *     was nothing to load);
 *  3. member commits: `validateMemberCommit` before appending (a classic member's through
 *     `classic.commit`, which checks and issues the append on the group's lane); commits without a
 *     member only when `!hasMembers(groupId)`, checked once `membershipLogged(groupId)` is null (as
 *     for every change without a member); `deleteOffsets` refuses `isBucketAssigned` buckets
 *     (and every bucket of a classic group with members); `resetOffsets` and
 *     `deleteGroup` need `!hasMembers`, and deleteGroup also awaits `deleteGroup(groupId)` here;
 *     `removeMembers` takes out members that will not come back (see member-removal.ts);
 *  4. `setTableLayout` on every bucket's coordinator; `close()` on store close.
 */
import { randomUUID } from 'node:crypto';
import { OffsetStoreError } from '../errors/index.js';
import { ClassicCoordinator } from './classic-coordinator.js';
import type { ClassicGroupRecord, ClassicGroupState } from './classic-record.js';
import { isClassicSnapshot, parseClassicSnapshot } from './classic-snapshot.js';
import { CLASSIC_SNAPSHOT_BYTES_MAX } from './classic-protocol.js';
import { SystemClock, assert, type Clock } from '../util/index.js';
import type { Assignor } from './assignor.js';
import { AssignmentPacing } from './assignment-pacing.js';
import { formatBucketRef, normalizeBucketRef, type BucketRef } from '../model/index.js';
import type { GroupState } from './group.js';
import {
  assignIfBehind,
  checkGroupSubscriptions,
  expireRebalance,
  expireSession,
  handleHeartbeat,
  refreshLayouts,
  refreshSubscriptions,
  removeMembersByAdmin,
  type SubscriptionRefresh,
} from './group-handlers.js';
import { describeGroup, type GroupDescription } from './group-description.js';
import { GroupOperation, type HandlerEnvironment } from './group-operation.js';
import { resolveGroupSettings, type GroupSettings } from './group-settings.js';
import type { GroupRecord } from './group-record.js';
import {
  parseGroupSnapshot,
  snapshotOf,
  snapshotToRecords,
  type GroupSnapshotWriter,
  type StoredGroupSnapshot,
} from './group-snapshot.js';
import { GroupStateMachine, type GroupInspection } from './group-state-machine.js';
import { validateGroupId } from '../model/index.js';
import {
  GROUP_SNAPSHOT_BYTES_BUDGET,
  SUBSCRIBED_TABLES_MAX,
  normalizeHeartbeatRequest,
  type HeartbeatRequest,
  type HeartbeatResponse,
} from './heartbeat.js';
import {
  normalizeRemoveMembersRequest,
  type NormalizedRemoval,
  type RemoveMembersRequest,
  type RemovedMember,
} from './member-removal.js';
import { MemberTimers } from './member-timers.js';
import { OperationLane } from './operation-lane.js';
import { RangeAssignor } from './range-assignor.js';
import { layoutsChanged } from './target-assignment-builder.js';
import {
  layoutsEqual,
  normalizeTableLayout,
  type TableLayout,
  type TableLayoutInput,
} from './table-layout.js';
import { UniformAssignor, UNIFORM_ASSIGNOR_NAME } from './uniform-assignor.js';

/**
 * Options of a GroupCoordinator. The GroupSettings fields (heartbeatIntervalMs, sessionTimeoutMs,
 * rebalanceTimeoutMs, groupMembersMax, assignmentIntervalMs, and the classic protocol's
 * initialRebalanceDelayMs and newMemberJoinTimeoutMs) default as GROUP_SETTINGS_DEFAULTS
 * says. With a positive assignmentIntervalMs, changes inside the interval are batched into one
 * deferred computation (the group is Assigning meanwhile), which keeps a join storm of N members at
 * a handful of assignor runs instead of N.
 */
export interface GroupCoordinatorOptions extends Partial<GroupSettings> {
  /** Where snapshots go; resolves once durable. */
  readonly writer: GroupSnapshotWriter;
  /** Time and timers (default: the system clock). */
  readonly clock?: Clock;
  /** Assignors besides the built-in `uniform` and `range` (a same-named one replaces a built-in). */
  readonly assignors?: readonly Assignor[];
  /** Assignor of groups whose members state no preference (default `uniform`). */
  readonly defaultAssignor?: string;
  /** Most operations per group that may wait for its lane or for its snapshot to be written (default 1024); more are refused with TOO_MANY_PENDING_WRITES. */
  readonly queuedOperationsMax?: number;
  /** Sees the records of every operation after they were replayed, of both group types (tests, metrics). */
  readonly onRecords?: (
    groupId: string,
    records: readonly (GroupRecord | ClassicGroupRecord)[],
  ) => void;
  /** Sees failures of operations nobody awaits (timer expiries, layout refreshes). */
  readonly onBackgroundError?: (error: unknown, groupId: string) => void;
  /**
   * Generates member ids for joins that bring none (default crypto.randomUUID); a classic member's id
   * is its client id or instance id, '-', and one of these.
   */
  readonly newMemberId?: () => string;
  /**
   * Largest group snapshot, in bytes, of either type (default and at most 7 MiB): below the log's
   * largest batch, since a snapshot is written as one batch. What would take a group past it (a
   * classic join or leader's sync, a consumer group's subscription) is INVALID_REQUEST and changes
   * nothing.
   */
  readonly snapshotBytesMax?: number;
}

/** Counters for stats and benchmarks. */
export interface GroupCoordinatorMetrics {
  /** Groups the coordinator holds state for. */
  groups: number;
  /** Members across those groups, static members away included. */
  members: number;
  /** Records emitted since construction (replays of snapshots at load excluded). */
  recordsEmitted: number;
  /** Snapshot writes issued since construction (tombstones of deleted groups excluded). */
  snapshotsWritten: number;
  /** Session and rebalance timers armed now (classic groups' join and sync timers included). */
  armedTimers: number;
  /** Classic JoinGroup and SyncGroup calls parked now. */
  parkedCalls: number;
  /**
   * Groups with an operation lane in memory: those above, and a group deleted or forgotten only
   * while an operation of it still runs.
   */
  groupLanes: number;
}

interface GroupRuntime {
  readonly lane: OperationLane;
  /** The group changed since its last snapshot write was issued (or that write failed). */
  dirty: boolean;
  /** Settles with the consumer snapshot write in flight (rejects with its error). */
  writing?: Promise<void>;
  /** The operations waiting for the write after the one in flight (it starts when that one ends). */
  next?: { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void };
  /** Answers waiting for a snapshot write (at most queuedOperationsMax; more are refused). */
  waiting: number;
  /** Settles once no consumer snapshot write is in flight or queued; null when none is (a classic operation waits for it). */
  settled(): Promise<void> | null;
}

type Phase = 'loading' | 'active' | 'closed';

/** The group coordinator of one offsets-bucket; see the module header. */
export class GroupCoordinator {
  readonly #writer: GroupSnapshotWriter;
  readonly #clock: Clock;
  readonly #machine = new GroupStateMachine();
  readonly #layouts = new Map<number, TableLayout>();
  readonly #assignors = new Map<string, Assignor>();
  readonly #runtimes = new Map<string, GroupRuntime>();
  readonly #timers: MemberTimers;
  readonly #env: HandlerEnvironment;
  readonly #queuedOperationsMax: number;
  readonly #pacing: AssignmentPacing;
  readonly #onRecords: GroupCoordinatorOptions['onRecords'];
  readonly #onBackgroundError: GroupCoordinatorOptions['onBackgroundError'];
  #phase: Phase = 'loading';
  #recordsEmitted = 0;
  #snapshotsWritten = 0;
  /** The classic (JoinGroup/SyncGroup) protocol of the same groups; shares their lanes. */
  readonly classic: ClassicCoordinator;

  /**
   * Starts in the loading phase (only `loadSnapshot` and `setTableLayout`) until `onLoadComplete`.
   * TypeError without a writer; RangeError for an unknown default assignor or a setting out of range.
   */
  constructor(options: GroupCoordinatorOptions) {
    if (typeof options?.writer?.writeSnapshot !== 'function')
      throw new TypeError('options.writer must be a GroupSnapshotWriter');
    this.#writer = options.writer;
    this.#clock = options.clock ?? new SystemClock();
    for (const assignor of [
      new UniformAssignor(),
      new RangeAssignor(),
      ...(options.assignors ?? []),
    ])
      this.#assignors.set(assignor.name, assignor);
    const defaultAssignor = options.defaultAssignor ?? UNIFORM_ASSIGNOR_NAME;
    if (!this.#assignors.has(defaultAssignor))
      throw new RangeError(`defaultAssignor '${defaultAssignor}' is not registered`);
    this.#queuedOperationsMax = positiveInt(
      options.queuedOperationsMax ?? 1024,
      'queuedOperationsMax',
    );
    const settings = resolveGroupSettings(options, 'options');
    this.#pacing = new AssignmentPacing(this.#clock, settings.assignmentIntervalMs, (groupId) =>
      this.#background(groupId, (op) => assignIfBehind(op, groupId)),
    );
    this.#onRecords = options.onRecords;
    this.#onBackgroundError = options.onBackgroundError;
    this.#timers = new MemberTimers(this.#clock, {
      sessionExpired: (groupId, memberId) =>
        this.#background(groupId, (op) => expireSession(op, groupId, memberId)),
      rebalanceExpired: (groupId, memberId, epoch) =>
        this.#background(groupId, (op) => expireRebalance(op, groupId, memberId, epoch)),
    });
    const newMemberId = options.newMemberId ?? randomUUID;
    this.classic = new ClassicCoordinator({
      host: {
        runtime: (groupId) => this.#runtime(groupId),
        dropRuntimeIfUnused: (groupId) => this.#dropRuntimeIfUnused(groupId),
        ensureActive: () => this.#ensureActive(),
        ensureNotClosed: () => this.#ensureNotClosed(),
        closed: () => this.#phase === 'closed',
        consumerGroups: {
          memberCount: (groupId) => this.#machine.get(groupId)?.members.size ?? null,
          dropEmpty: (groupId) => this.#dropEmptyConsumerGroup(groupId),
          staticMemberId: (groupId, instanceId) =>
            this.#machine.get(groupId)?.staticMemberId(instanceId),
        },
      },
      writer: this.#writer,
      clock: this.#clock,
      config: {
        initialRebalanceDelayMs: settings.initialRebalanceDelayMs,
        newMemberJoinTimeoutMs: settings.newMemberJoinTimeoutMs,
        groupMembersMax: settings.groupMembersMax,
        snapshotBytesMax: Math.min(
          CLASSIC_SNAPSHOT_BYTES_MAX,
          options.snapshotBytesMax ?? CLASSIC_SNAPSHOT_BYTES_MAX,
        ),
      },
      newMemberId,
      onRecords: (groupId, records) => this.#afterRecords(groupId, records),
      onBackgroundError: options.onBackgroundError,
    });
    this.#env = {
      machine: this.#machine,
      layouts: this.#layouts,
      assignors: this.#assignors,
      timers: this.#timers,
      pacer: this.#pacing,
      newMemberId,
      config: {
        heartbeatIntervalMs: settings.heartbeatIntervalMs,
        sessionTimeoutMs: settings.sessionTimeoutMs,
        rebalanceTimeoutMs: settings.rebalanceTimeoutMs,
        groupMembersMax: settings.groupMembersMax,
        defaultAssignor,
        snapshotBytesMax: Math.min(
          GROUP_SNAPSHOT_BYTES_BUDGET,
          options.snapshotBytesMax ?? GROUP_SNAPSHOT_BYTES_BUDGET,
        ),
      },
    };
  }

  // ---- recovery -------------------------------------------------------------------------------

  /**
   * Loads a group snapshot read from the log (latest wins; null = tombstone, the group is removed),
   * a consumer group's or a classic group's (`protocol: 'classic'`): it replaces whatever was loaded
   * for the group id before, of either type. Valid only before `onLoadComplete`. A malformed
   * snapshot is CORRUPT_MESSAGE.
   */
  loadSnapshot(groupId: string, snapshot: StoredGroupSnapshot | null): void {
    if (this.#phase !== 'loading')
      throw new TypeError('loadSnapshot is only valid before onLoadComplete');
    validateGroupId(groupId);
    const classic =
      snapshot !== null && isClassicSnapshot(snapshot)
        ? parseClassicSnapshot(groupId, snapshot)
        : null;
    const parsed =
      snapshot === null || classic !== null ? null : parseGroupSnapshot(groupId, snapshot);
    if (this.#machine.get(groupId) !== undefined)
      this.#machine.replay({ type: 'group-tombstone', groupId });
    this.classic.loadSnapshot(groupId, classic);
    if (parsed !== null)
      for (const record of snapshotToRecords(groupId, parsed)) this.#machine.replay(record);
  }

  /**
   * Ends loading: every restored member gets a fresh session (from now), one that was releasing
   * buckets a fresh rebalance timeout too, and groups whose tables' registered layouts differ from
   * their snapshot's start a rebalance. Heartbeats and queries are accepted from now on.
   */
  onLoadComplete(): void {
    this.#ensureNotClosed();
    if (this.#phase === 'active') return;
    this.#phase = 'active';
    for (const group of this.#machine.groups()) {
      this.#runtime(group.groupId).dirty = false;
      for (const member of group.members.values()) {
        this.#timers.scheduleSession(group.groupId, member.memberId, member.sessionTimeoutMs);
        if (member.state === 'UNREVOKED_PARTITIONS')
          this.#timers.scheduleRebalance(
            group.groupId,
            member.memberId,
            member.memberEpoch,
            member.rebalanceTimeoutMs,
          );
      }
      if (group.members.size > 0 && layoutsChanged(group, this.#layouts))
        this.#background(group.groupId, (op) => refreshLayouts(op, group.groupId));
      else if (group.members.size > 0 && group.targetDue)
        // Restored while its next target was due: computed now (or when pacing allows), not only
        // when a member heartbeats, which static members away or an admin process never do.
        this.#background(group.groupId, (op) => assignIfBehind(op, group.groupId));
    }
    this.classic.onLoadComplete();
  }

  // ---- the protocol ---------------------------------------------------------------------------

  /**
   * Handles a member's heartbeat (join, update, leave). Resolves once any snapshot it caused is
   * durable. A join (epoch 0) of a group id that is a classic group with members is
   * INCONSISTENT_GROUP_PROTOCOL; a classic group without members is converted (dropped).
   */
  heartbeat(groupId: string, request: HeartbeatRequest): Promise<HeartbeatResponse> {
    try {
      this.#ensureActive();
      validateGroupId(groupId);
      const normalized = normalizeHeartbeatRequest(request, (name) => this.#assignors.has(name));
      return this.#submit(groupId, (op) => {
        if (normalized.memberEpoch === 0) this.#claimFromClassic(groupId);
        return handleHeartbeat(op, groupId, normalized);
      });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Moves members of a consumer group from the tables they are on to others, with one epoch bump
   * for all (member id -> from, to: sorted, distinct table ids; a member no longer on `from` is
   * left alone): for a front end that subscribes members by name, when a topic some of them named
   * is created (group-handlers.ts refreshSubscriptions). Resolves once the change is durable.
   */
  refreshSubscriptions(
    groupId: string,
    updates: ReadonlyMap<string, SubscriptionRefresh>,
  ): Promise<void> {
    try {
      this.#ensureActive();
      validateGroupId(groupId);
      const wellFormed = (ids: readonly number[]) =>
        ids.length <= SUBSCRIBED_TABLES_MAX &&
        ids.every((id, i) => Number.isSafeInteger(id) && id >= 0 && (i === 0 || id > ids[i - 1]!));
      for (const { from, to } of updates.values())
        if (!wellFormed(from) || !wellFormed(to))
          throw new OffsetStoreError(
            'INVALID_REQUEST',
            `subscribed table ids must be sorted, distinct, non-negative safe integers, at most ${SUBSCRIBED_TABLES_MAX}`,
          );
      return this.#submit(groupId, (op) => refreshSubscriptions(op, groupId, updates));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * INVALID_REQUEST, naming the group, when with `layout` for `tableId` the snapshot of a group
   * with members subscribed to the table would be estimated past the most one batch holds: the
   * group could not rebalance onto it. Nothing changes either way.
   */
  checkTableLayout(tableId: number, layout: TableLayoutInput): void {
    const normalized = normalizeTableLayout(tableId, layout);
    if (layoutsEqual(this.#layouts.get(tableId), normalized)) return;
    // The layouts with this one changed, without a copy (a service registers thousands of tables).
    const current = this.#layouts;
    const layouts = {
      get: (id: number) => (id === tableId ? normalized : current.get(id)),
    };
    for (const group of this.#machine.groups())
      if (
        group.members.size > 0 &&
        group.subscribesTable(tableId) &&
        // A group whose target was computed with this layout (every group, when a reopened store
        // is told its layouts again) does not change with it.
        !layoutsEqual(group.tableLayouts.get(tableId), normalized)
      )
        checkGroupSubscriptions(
          group.groupId,
          group,
          null,
          undefined,
          layouts,
          this.#env.config.snapshotBytesMax,
          `with table ${tableId} laid out as ${normalized.bucketCount} buckets x ${normalized.partitionIds?.length ?? 1} partitions`,
        );
  }

  /**
   * Registers (or changes) the layout of a user table. Groups subscribed to the table whose target
   * was computed against another layout rebalance. Shared by all groups of this coordinator.
   */
  setTableLayout(tableId: number, layout: TableLayoutInput): void {
    this.#ensureNotClosed();
    const normalized = normalizeTableLayout(tableId, layout);
    if (layoutsEqual(this.#layouts.get(tableId), normalized)) return;
    this.#layouts.set(tableId, normalized);
    if (this.#phase !== 'active') return;
    for (const group of [...this.#machine.groups()]) {
      if (
        group.members.size > 0 &&
        group.subscribesTable(tableId) &&
        !layoutsEqual(group.tableLayouts.get(tableId), normalized)
      ) {
        this.#background(group.groupId, (op) => refreshLayouts(op, group.groupId));
      }
    }
  }

  /** The registered layout of a table, if any. */
  tableLayout(tableId: number): TableLayout | undefined {
    return this.#layouts.get(tableId);
  }

  /** Every registered table layout, by table id. */
  tableLayouts(): ReadonlyMap<number, TableLayout> {
    return this.#layouts;
  }

  // ---- queries the store needs (synchronous) --------------------------------------------------

  /**
   * Checks a commit made on behalf of a member: UNKNOWN_MEMBER_ID if it is not in the group,
   * STALE_MEMBER_EPOCH for an older epoch, FENCED_MEMBER_EPOCH for a newer one, BUCKET_NOT_ASSIGNED
   * for a bucket it does not own now (owning includes buckets it was asked to release but has not).
   */
  validateMemberCommit(
    groupId: string,
    memberId: string,
    memberEpoch: number,
    buckets: readonly BucketRef[],
  ): void {
    this.#ensureActive();
    const group = this.#machine.get(groupId);
    const member = group?.members.get(memberId);
    if (group === undefined || member === undefined) {
      throw new OffsetStoreError(
        'UNKNOWN_MEMBER_ID',
        `member ${memberId} is not in group ${groupId}`,
      );
    }
    if (memberEpoch < member.memberEpoch) {
      throw new OffsetStoreError(
        'STALE_MEMBER_EPOCH',
        `commit with member epoch ${memberEpoch}, the member is at ${member.memberEpoch}`,
      );
    }
    if (memberEpoch > member.memberEpoch) {
      throw new OffsetStoreError(
        'FENCED_MEMBER_EPOCH',
        `commit with member epoch ${memberEpoch}, newer than the member's ${member.memberEpoch}`,
      );
    }
    buckets.forEach((raw, i) => {
      const ref = normalizeBucketRef(raw, `offsets[${i}]`);
      if (group.ownerOf(ref) !== memberId) {
        throw new OffsetStoreError(
          'BUCKET_NOT_ASSIGNED',
          `member ${memberId} of group ${groupId} does not own ${formatBucketRef(ref)}`,
        );
      }
    });
  }

  /**
   * Checks an OffsetFetch of a consumer-protocol member (Kafka's v9): UNKNOWN_MEMBER_ID when the
   * consumer group has no such member, STALE_MEMBER_EPOCH when its epoch is another. Nothing is
   * checked for a classic group or a group this coordinator holds no state for, as in Kafka.
   */
  validateMemberFetch(groupId: string, memberId: string, memberEpoch: number): void {
    this.#ensureActive();
    const group = this.#machine.get(groupId);
    if (group === undefined) return;
    const member = group.members.get(memberId);
    if (member === undefined)
      throw new OffsetStoreError(
        'UNKNOWN_MEMBER_ID',
        `member ${memberId} is not in group ${groupId}`,
      );
    if (memberEpoch !== member.memberEpoch)
      throw new OffsetStoreError(
        'STALE_MEMBER_EPOCH',
        `fetch with member epoch ${memberEpoch}, the member is at ${member.memberEpoch}`,
      );
  }

  /** True while the consumer (KIP-848) group holds a member of that id (a static member away included). */
  holdsConsumerMember(groupId: string, memberId: string): boolean {
    this.#ensureActive();
    return this.#machine.get(groupId)?.members.has(memberId) === true;
  }

  /**
   * True when the group has at least one member, of either type (a consumer group's static members
   * away with epoch -2 included; a classic group's pending members, which only got a member id, not).
   */
  hasMembers(groupId: string): boolean {
    this.#ensureActive();
    return (this.#machine.get(groupId)?.members.size ?? this.classic.memberCount(groupId) ?? 0) > 0;
  }

  /**
   * Settles once the snapshot of every change made so far to the group is in its log, rejecting
   * with the error of a write that failed: null when it already is, that is when no snapshot write
   * of the group waits behind the one in flight (a write in flight was appended when it started)
   * and none failed since (one that did is made again now). A change made
   * without a member (a commit, an offsets reset or deletion, or an expiry, each allowed by the
   * membership it sees) waits for it, so that it is appended after the snapshot of every membership
   * change it saw: a crash between the two would otherwise keep the change and lose the snapshot.
   */
  membershipLogged(groupId: string): Promise<void> | null {
    const runtime = this.#runtimes.get(groupId);
    if (runtime === undefined || !this.membershipPending(groupId)) return null;
    if (runtime.next !== undefined) return runtime.next.promise;
    // A change whose write failed (the log did not fail-stop: a refusal such as
    // TOO_MANY_PENDING_WRITES) is in memory only until the next write: make that write now.
    return this.#durable(groupId, runtime);
  }

  /**
   * Whether `membershipLogged` would have to wait (a snapshot write queued behind the one in
   * flight, or a change whose write failed), without starting any write: for a caller that
   * leaves the group for later instead of waiting (the retention check).
   */
  membershipPending(groupId: string): boolean {
    const runtime = this.#runtimes.get(groupId);
    if (runtime === undefined) return false;
    return (
      runtime.next !== undefined ||
      (runtime.dirty && runtime.writing === undefined && this.#machine.get(groupId) !== undefined)
    );
  }

  /** The type of the group of that id, or null when the coordinator holds no state for it. */
  groupType(groupId: string): 'consumer' | 'classic' | null {
    this.#ensureActive();
    return this.#machine.get(groupId) !== undefined
      ? 'consumer'
      : this.classic.memberCount(groupId) !== null
        ? 'classic'
        : null;
  }

  /** The member that owns the bucket now, or null. */
  assignedOwner(groupId: string, bucket: BucketRef): string | null {
    this.#ensureActive();
    return this.#machine.get(groupId)?.ownerOf(normalizeBucketRef(bucket)) ?? null;
  }

  /** True when a member owns the bucket or is about to (it is in some member's target assignment). */
  isBucketAssigned(groupId: string, bucket: BucketRef): boolean {
    this.#ensureActive();
    const group = this.#machine.get(groupId);
    if (group === undefined) return false;
    const ref = normalizeBucketRef(bucket);
    return group.ownerOf(ref) !== undefined || group.targetOwnerOf(ref) !== undefined;
  }

  /** Tables at least one member of the group subscribes to, sorted (for offset retention). */
  subscribedTableIds(groupId: string): number[] {
    this.#ensureActive();
    return [...(this.#machine.get(groupId)?.subscribedTableIds() ?? [])].sort((a, b) => a - b);
  }

  /** The group's state (a consumer group's or a classic group's), or null when the coordinator holds no state for it. */
  groupState(groupId: string): GroupState | ClassicGroupState | null {
    this.#ensureActive();
    return this.#machine.get(groupId)?.state() ?? this.classic.listing(groupId)?.state ?? null;
  }

  /** Ids of the groups this coordinator holds, of both types, sorted. */
  groupIds(): string[] {
    this.#ensureActive();
    return [
      ...[...this.#machine.groups()].map((g) => g.groupId),
      ...this.classic.groupIds(),
    ].sort();
  }

  /** A JSON-safe description of the group, or null when the coordinator holds no state for it. */
  describe(groupId: string): GroupDescription | null {
    this.#ensureActive();
    const group = this.#machine.get(groupId);
    return group === undefined ? null : describeGroup(group, this.#env.config.defaultAssignor);
  }

  /** Complete internal state of a group as plain data (tests, debugging). */
  inspect(groupId: string): GroupInspection | null {
    return this.#machine.inspect(groupId);
  }

  /** When the member's session expires, if it has a session timer (tests, debugging). */
  sessionDeadlineMs(groupId: string, memberId: string): number | undefined {
    return this.#timers.sessionDeadlineMs(groupId, memberId);
  }

  /** Counters. */
  metrics(): GroupCoordinatorMetrics {
    const classic = this.classic.metrics();
    let members = classic.members;
    for (const g of this.#machine.groups()) members += g.members.size;
    return {
      groups: this.#machine.size + classic.groups,
      members,
      recordsEmitted: this.#recordsEmitted,
      snapshotsWritten: this.#snapshotsWritten + classic.snapshotsWritten,
      armedTimers: this.#timers.armedCount + classic.armedTimers,
      parkedCalls: classic.parkedCalls,
      groupLanes: this.#runtimes.size,
    };
  }

  // ---- admin and lifecycle ---------------------------------------------------------------------

  /**
   * Deletes a group (of either type) that has no members: in one step of the group's lane (so no
   * join can come between the check and the deletion), checks it has no members (NON_EMPTY_GROUP
   * otherwise, with nothing done), calls `deleteOffsets` (which appends the tombstones of the group's
   * offsets, before it returns), appends the group's own tombstone, and forgets the group once both
   * are durable. Resolves true when the coordinator knew the group. If a write fails, the group stays
   * as it was.
   */
  deleteGroup(
    groupId: string,
    deleteOffsets?: () => Promise<unknown> | undefined,
  ): Promise<boolean> {
    try {
      this.#ensureActive();
      validateGroupId(groupId);
    } catch (error) {
      return Promise.reject(error);
    }
    const runtime = this.#runtime(groupId);
    const deleteNow = (): boolean | Promise<boolean> => {
      this.#ensureActive();
      const group = this.#machine.get(groupId);
      const members: number | null = group?.members.size ?? this.classic.memberCount(groupId);
      if (members !== null && members > 0)
        throw new OffsetStoreError(
          'NON_EMPTY_GROUP',
          `cannot delete it: group ${groupId} has ${members} member(s)`,
        );
      const offsetsDeleted = deleteOffsets?.();
      if (members === null)
        return offsetsDeleted === undefined ? false : offsetsDeleted.then(() => false);
      return Promise.all([offsetsDeleted, this.#writer.writeSnapshot(groupId, null)]).then(() => {
        if (group !== undefined) this.#dropEmptyConsumerGroup(groupId);
        else this.classic.forget(groupId);
        return true;
      });
    };
    // In the call when no snapshot write is in flight (a commit called after it is appended after
    // its deletions); else once they are done, so that the tombstone is written after them.
    const deleted = runtime.lane.run(() => {
      const writes = runtime.settled();
      return writes === null ? deleteNow() : writes.then(deleteNow);
    });
    // Once the lane has let go of the operation (not inside it, where the lane still counts as
    // idle before a promise is returned, nor in its own continuation, where it is still busy).
    const drop = () => this.#dropRuntimeIfUnused(groupId);
    deleted.then(drop, drop);
    return deleted;
  }

  /**
   * Removes members on an admin's request (Kafka's Admin removeMembersFromConsumerGroup): every
   * member, or those named by member id or by static instance id (member-removal.ts). Each leaves as
   * with a heartbeat at memberEpoch -1; a static member's instance id is released. Resolves with the
   * removed members, sorted by id, once the change is durable (the group as the removal left it:
   * Reconciling after a partial removal from a Stable group, until the others heartbeat). UNKNOWN_MEMBER_ID, with nothing removed, when a named id is not in
   * the group; `all` on a group this coordinator does not hold resolves with none. A classic group's
   * members leave as with LeaveGroup (classic-leave.ts).
   */
  removeMembers(groupId: string, request: RemoveMembersRequest): Promise<RemovedMember[]> {
    let removal: NormalizedRemoval;
    try {
      this.#ensureActive();
      validateGroupId(groupId);
      removal = normalizeRemoveMembersRequest(request);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.classic.memberCount(groupId) !== null)
      return this.classic.removeMembers(groupId, removal);
    return this.#submit(groupId, (op) => removeMembersByAdmin(op, groupId, removal));
  }

  /**
   * Cancels all timers; every later call fails with STORE_CLOSED, and every queued operation and
   * parked classic call with `reason` (STORE_CLOSED when none is given: a bucket moved to another
   * node passes NOT_COORDINATOR, so that its clients find the new coordinator). Idempotent.
   */
  close(reason?: OffsetStoreError): void {
    if (this.#phase === 'closed') return;
    this.#phase = 'closed';
    this.#timers.cancelAll();
    this.#pacing.cancelAll();
    const error = reason ?? new OffsetStoreError('STORE_CLOSED', 'the group coordinator is closed');
    this.classic.close(error);
    for (const runtime of this.#runtimes.values()) runtime.lane.close(error);
  }

  // ---- internals -------------------------------------------------------------------------------

  #submit<T>(groupId: string, handler: (op: GroupOperation) => T): Promise<T> {
    const runtime = this.#runtime(groupId);
    if (runtime.waiting >= this.#queuedOperationsMax) {
      // Back-pressure: the log does not keep up with this group's changes.
      return Promise.reject(
        new OffsetStoreError(
          'TOO_MANY_PENDING_WRITES',
          `${runtime.waiting} operations of group ${groupId} already wait for its snapshot to be written`,
        ),
      );
    }
    // Wrapped, so that the lane takes the operation as done at once (its answer waits for the
    // write that covers it, which the lane does not wait for).
    return runtime.lane
      .run(() => ({ answer: this.#execute(groupId, runtime, handler) }))
      .then(({ answer }) => answer);
  }

  /** Runs a handler; its answer waits for the snapshot write that covers the state it left. */
  #execute<T>(
    groupId: string,
    runtime: GroupRuntime,
    handler: (op: GroupOperation) => T,
  ): T | Promise<T> {
    this.#ensureNotClosed();
    // A clock that cannot be read (INVALID_CONFIG) refuses the operation here, before anything
    // changes: read after the handler's first record, it would leave the records applied and the
    // member's session timer unarmed, a member that never times out.
    this.#clock.nowMs();
    const op = new GroupOperation(this.#env);
    let result: T;
    try {
      result = handler(op);
    } finally {
      if (op.records.length > 0) {
        runtime.dirty = true;
        this.#afterRecords(groupId, op.records);
      }
      if (this.#machine.get(groupId) === undefined)
        queueMicrotask(() => this.#dropRuntimeIfUnused(groupId));
    }
    const durable = this.#durable(groupId, runtime);
    if (durable === null) return result;
    runtime.waiting++;
    const done = () => void runtime.waiting--;
    durable.then(done, done);
    return durable.then(() => result);
  }

  /**
   * The write that makes the group's state as it is now durable: the next one if the group changed
   * since the write in flight started (started now if none is in flight), else the one in flight;
   * null when the state is durable already.
   */
  #durable(groupId: string, runtime: GroupRuntime): Promise<void> | null {
    if (runtime.dirty && this.#machine.get(groupId) !== undefined) {
      if (runtime.next === undefined) {
        let resolve!: () => void;
        let reject!: (error: unknown) => void;
        const promise = new Promise<void>((res, rej) => {
          resolve = res;
          reject = rej;
        });
        runtime.next = { promise, resolve, reject };
        if (runtime.writing === undefined) this.#startWrite(groupId, runtime);
      }
      return runtime.next?.promise ?? runtime.writing ?? null;
    }
    return runtime.writing ?? null;
  }

  /** Writes the group's snapshot as it is now, for the operations waiting in `runtime.next`. */
  #startWrite(groupId: string, runtime: GroupRuntime): void {
    const batch = runtime.next!;
    runtime.next = undefined;
    const group = this.#machine.get(groupId);
    if (group === undefined) {
      // Dropped meanwhile (deleted, or taken over by a classic join): nothing of it to write.
      batch.resolve();
      return;
    }
    runtime.writing = batch.promise;
    let written: Promise<void>;
    try {
      const snapshot = snapshotOf(group);
      runtime.dirty = false;
      this.#snapshotsWritten++;
      written = this.#writer.writeSnapshot(groupId, snapshot);
    } catch (error) {
      written = Promise.reject(error); // a writer that throws instead of rejecting
    }
    written.then(
      () => this.#endWrite(groupId, runtime, batch, undefined),
      (error: unknown) => this.#endWrite(groupId, runtime, batch, error),
    );
  }

  #endWrite(
    groupId: string,
    runtime: GroupRuntime,
    batch: NonNullable<GroupRuntime['next']>,
    error: unknown,
  ): void {
    runtime.writing = undefined;
    if (error === undefined) {
      batch.resolve();
    } else {
      runtime.dirty = true; // the next operation (or the write queued now) writes it again
      batch.reject(error);
    }
    if (runtime.next === undefined) return;
    if (this.#phase === 'closed') {
      const queued = runtime.next;
      runtime.next = undefined;
      queued.reject(new OffsetStoreError('STORE_CLOSED', 'the group coordinator is closed'));
      return;
    }
    this.#startWrite(groupId, runtime);
  }

  /** Resolves once no snapshot write of the group is in flight or queued (whatever their outcome). */
  async #writesSettled(runtime: GroupRuntime): Promise<void> {
    while (runtime.writing !== undefined || runtime.next !== undefined)
      await (runtime.writing ?? runtime.next!.promise).catch(() => undefined);
  }

  /** A join (epoch 0) takes the group id from a classic group without members; one with members refuses it. */
  #claimFromClassic(groupId: string): void {
    const classicMembers = this.classic.memberCount(groupId);
    if (classicMembers === null) return;
    if (classicMembers > 0) {
      throw new OffsetStoreError(
        'INCONSISTENT_GROUP_PROTOCOL',
        `group ${groupId} is a classic group (JoinGroup/SyncGroup) with ${classicMembers} member(s); a consumer-protocol heartbeat cannot join it`,
      );
    }
    this.classic.forget(groupId);
  }

  /** Forgets a consumer group without members (deleted, or converted by a classic join); run on its lane. */
  #dropEmptyConsumerGroup(groupId: string): void {
    const group = this.#machine.get(groupId);
    if (group === undefined) return;
    assert(
      group.members.size === 0,
      `consumer group ${groupId} dropped with ${group.members.size} members`,
    );
    const op = new GroupOperation(this.#env);
    op.emit({ type: 'group-tombstone', groupId });
    this.#afterRecords(groupId, op.records);
    this.#timers.cancelGroup(groupId);
    this.#pacing.forget(groupId);
  }

  #afterRecords(groupId: string, records: readonly (GroupRecord | ClassicGroupRecord)[]): void {
    this.#recordsEmitted += records.length;
    this.#onRecords?.(groupId, records);
  }

  #background(groupId: string, handler: (op: GroupOperation) => void): void {
    this.#submit(groupId, handler).catch((error: unknown) => {
      if (this.#phase !== 'closed') this.#onBackgroundError?.(error, groupId);
    });
  }

  #runtime(groupId: string): GroupRuntime {
    let runtime = this.#runtimes.get(groupId);
    if (runtime === undefined) {
      const created: GroupRuntime = {
        lane: new OperationLane(this.#queuedOperationsMax),
        dirty: false,
        waiting: 0,
        settled: () =>
          created.writing === undefined && created.next === undefined
            ? null
            : this.#writesSettled(created),
      };
      runtime = created;
      this.#runtimes.set(groupId, runtime);
    }
    return runtime;
  }

  #dropRuntimeIfUnused(groupId: string): void {
    const runtime = this.#runtimes.get(groupId);
    if (
      runtime !== undefined &&
      runtime.lane.idle &&
      this.#machine.get(groupId) === undefined &&
      this.classic.memberCount(groupId) === null &&
      runtime.writing === undefined &&
      runtime.next === undefined
    ) {
      this.#pacing.forget(groupId);
      this.#runtimes.delete(groupId);
    }
  }

  #ensureNotClosed(): void {
    if (this.#phase === 'closed')
      throw new OffsetStoreError('STORE_CLOSED', 'the group coordinator is closed');
  }

  #ensureActive(): void {
    this.#ensureNotClosed();
    if (this.#phase === 'loading')
      throw new OffsetStoreError(
        'COORDINATOR_LOAD_IN_PROGRESS',
        'the group coordinator is still loading',
      );
  }
}

function positiveInt(value: number, name: string): number {
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number`);
  if (!Number.isSafeInteger(value) || value < 1)
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

/**
 * Why a group's stored snapshot cannot be loaded (`loadSnapshot` would throw CORRUPT_MESSAGE), or
 * undefined when it can: for tools that check a log without opening it.
 */
export function storedSnapshotProblem(groupId: string, snapshot: unknown): string | undefined {
  try {
    const stored = snapshot as StoredGroupSnapshot;
    if (isClassicSnapshot(stored)) parseClassicSnapshot(groupId, stored);
    else parseGroupSnapshot(groupId, stored);
    return undefined;
  } catch (error) {
    if (error instanceof OffsetStoreError && error.code === 'CORRUPT_MESSAGE') return error.message;
    throw error;
  }
}
