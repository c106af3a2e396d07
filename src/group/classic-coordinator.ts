/**
 * ClassicCoordinator: the classic (JoinGroup/SyncGroup) group protocol for the groups of one
 * offsets-bucket, beside the consumer (KIP-848) protocol of GroupCoordinator, which owns it and
 * shares with it each group id's operation lane (a group id has one type at a time).
 *
 * How a call runs (`#run`):
 *  1. on the group's OperationLane, a handler (classic-join.ts, classic-sync.ts, classic-leave.ts)
 *     emits records, which replay into the ClassicGroupStateMachine, and decides answers: its own
 *     (now, or parked until a later operation answers it) and those of parked calls;
 *  2. if the group changed something a snapshot holds and is now Stable or Empty, its snapshot is
 *     written through the GroupSnapshotWriter; the lane is free again once it is durable (an admin's
 *     removal of members that started a rebalance writes one too, of version 1, its rebalance due:
 *     see classic-snapshot.ts);
 *  3. then the answers are delivered; if the write failed, answers that would have succeeded fail
 *     with its error (the in-memory state stays ahead, the group dirty: the next operation writes).
 * A parked JoinGroup or SyncGroup does not hold the lane: it is a promise answered by the operation
 * that completes the join phase, distributes the assignment, removes the member, or times out — or
 * rejected with STORE_CLOSED by `close`.
 *
 * Timers (sessions: MemberTimers; join and sync phases: ClassicRebalanceTimers) queue their handlers
 * on the lane like any call; a handler finds a stale timer's work already done and does nothing.
 *
 * Invariants checked after every operation: the group's own (ClassicGroup.checkInvariants), and a
 * member's parked call exists exactly when its `awaitingJoin` / `awaitingSync` says so (by count).
 */
import { OffsetStoreError } from '../errors/index.js';
import { cutWellFormed } from '../model/index.js';
import { assert, type Clock } from '../util/index.js';
import { describeClassicGroup, type ClassicGroupDescription } from './classic-description.js';
import { handleClassicJoin } from './classic-join.js';
import {
  expireClassicSession,
  handleClassicLeave,
  removeClassicMembersByAdmin,
} from './classic-leave.js';
import {
  ClassicOperation,
  type ClassicConfig,
  type ClassicEnvironment,
  type ClassicReply,
  type ConsumerGroupsView,
} from './classic-operation.js';
import {
  normalizeClassicHeartbeat,
  normalizeClassicJoin,
  normalizeClassicLeave,
  normalizeClassicSync,
  type ClassicHeartbeatRequest,
  type ClassicJoinGroupRequest,
  type ClassicJoinGroupResult,
  type ClassicLeaveGroupRequest,
  type ClassicLeaveGroupResult,
  type ClassicSyncGroupRequest,
  type ClassicSyncGroupResult,
} from './classic-protocol.js';
import type { ClassicMember } from './classic-member.js';
import { expireJoin, expirePendingSync, prepareRebalance } from './classic-rebalance.js';
import { ClassicRebalanceTimers } from './classic-rebalance-timers.js';
import type { ClassicGroupRecord, ClassicGroupState } from './classic-record.js';
import {
  classicSnapshotOf,
  classicSnapshotToRecords,
  isRebalanceDue,
  emptiedSnapshotOf,
  rebalanceDueSnapshotOf,
  type ClassicGroupSnapshot,
} from './classic-snapshot.js';
import { ClassicGroupStateMachine, type ClassicGroupInspection } from './classic-state-machine.js';
import { handleClassicHeartbeat, handleClassicSync } from './classic-sync.js';
import { WaiterSet } from './classic-waiters.js';
import type { GroupSnapshotWriter } from './group-snapshot.js';
import type { NormalizedRemoval, RemovedMember } from './member-removal.js';
import { MemberTimers } from './member-timers.js';
import type { OperationLane } from './operation-lane.js';

/** A group id's lane and dirty flag, shared by both group types (the owner's). */
export interface ClassicRuntime {
  /** Runs the group's operations one at a time. */
  readonly lane: OperationLane;
  /** The group changed since its last snapshot write was issued (or that write failed). */
  dirty: boolean;
  /**
   * Settles once the consumer group of the id has no snapshot write in flight or queued (they do not
   * hold the lane); null when it has none. A classic operation, which may take an Empty consumer
   * group's id over, runs after them, so that no consumer write lands after its own.
   */
  settled(): Promise<void> | null;
}

/** What the owning GroupCoordinator provides. */
export interface ClassicCoordinatorHost {
  /** The group id's runtime (created on first use). */
  runtime(groupId: string): ClassicRuntime;
  /** Forgets a runtime neither type uses any more (once its lane is idle). */
  dropRuntimeIfUnused(groupId: string): void;
  /** STORE_CLOSED after close, COORDINATOR_LOAD_IN_PROGRESS while loading. */
  ensureActive(): void;
  /** STORE_CLOSED after close. */
  ensureNotClosed(): void;
  /** True once closed. */
  closed(): boolean;
  /** The consumer groups of the same coordinator. */
  readonly consumerGroups: ConsumerGroupsView;
}

/** Options of a ClassicCoordinator. */
export interface ClassicCoordinatorOptions {
  /** The owner. */
  readonly host: ClassicCoordinatorHost;
  /** Where snapshots go; resolves once durable. */
  readonly writer: GroupSnapshotWriter;
  /** Time and timers. */
  readonly clock: Clock;
  /** Settings. */
  readonly config: ClassicConfig;
  /** Makes the unique part of a new member id. */
  readonly newMemberId: () => string;
  /** Sees the records of every operation after they were replayed. */
  readonly onRecords?: (groupId: string, records: readonly ClassicGroupRecord[]) => void;
  /** Sees failures of operations nobody awaits (timer expiries). */
  readonly onBackgroundError?: (error: unknown, groupId: string) => void;
}

/** Member id prefixes are cut so a generated id stays within MEMBER_ID_LENGTH_MAX (255). */
const MEMBER_ID_PREFIX_LENGTH_MAX = 200;

/** The classic protocol of one offsets-bucket; see the module header. */
export class ClassicCoordinator {
  readonly #host: ClassicCoordinatorHost;
  readonly #writer: GroupSnapshotWriter;
  readonly #machine = new ClassicGroupStateMachine();
  readonly #sessions: MemberTimers;
  readonly #rebalanceTimers: ClassicRebalanceTimers;
  readonly #env: ClassicEnvironment;
  readonly #onRecords: ClassicCoordinatorOptions['onRecords'];
  readonly #onBackgroundError: ClassicCoordinatorOptions['onBackgroundError'];
  #snapshotsWritten = 0;
  /** Groups an admin just removed members from: the operation's end records the removal. */
  readonly #removalsToRecord = new Set<string>();
  /** While loading: groups whose snapshot has its rebalance due, rebalanced once loading ends. */
  readonly #rebalanceDueAtLoad = new Set<string>();

  /** Holds no group until loaded or joined. */
  constructor(options: ClassicCoordinatorOptions) {
    this.#host = options.host;
    this.#writer = options.writer;
    this.#onRecords = options.onRecords;
    this.#onBackgroundError = options.onBackgroundError;
    this.#sessions = new MemberTimers(options.clock, {
      sessionExpired: (groupId, memberId) =>
        this.#background(groupId, (op) => expireClassicSession(op, groupId, memberId)),
      rebalanceExpired: () =>
        assert(false, 'classic members have no rebalance timers of their own'),
    });
    this.#rebalanceTimers = new ClassicRebalanceTimers(options.clock, {
      joinExpired: (groupId, action) =>
        this.#background(groupId, (op) => expireJoin(op, groupId, action)),
      syncExpired: (groupId, generationId) =>
        this.#background(groupId, (op) => expirePendingSync(op, groupId, generationId)),
    });
    const newMemberId = options.newMemberId;
    this.#env = {
      machine: this.#machine,
      sessions: this.#sessions,
      rebalanceTimers: this.#rebalanceTimers,
      joins: new WaiterSet(),
      syncs: new WaiterSet(),
      config: options.config,
      consumerGroups: options.host.consumerGroups,
      newMemberId: (prefix) =>
        `${cutWellFormed(prefix, MEMBER_ID_PREFIX_LENGTH_MAX)}-${newMemberId()}`,
      nowMs: () => options.clock.nowMs(),
    };
  }

  // ---- the protocol ---------------------------------------------------------------------------

  /** JoinGroup: resolves when Kafka would answer (the join phase completed, or at once); see classic-join.ts. */
  joinGroup(groupId: string, request: ClassicJoinGroupRequest): Promise<ClassicJoinGroupResult> {
    return this.#call(
      groupId,
      () => normalizeClassicJoin(request),
      (op, normalized) => handleClassicJoin(op, groupId, normalized),
    );
  }

  /** SyncGroup: resolves with the member's assignment once the leader's is durable; see classic-sync.ts. */
  syncGroup(groupId: string, request: ClassicSyncGroupRequest): Promise<ClassicSyncGroupResult> {
    return this.#call(
      groupId,
      () => normalizeClassicSync(request),
      (op, normalized) => handleClassicSync(op, groupId, normalized),
    );
  }

  /** Heartbeat: resolves when the member is in the current generation and no rebalance runs. */
  heartbeat(groupId: string, request: ClassicHeartbeatRequest): Promise<void> {
    return this.#call(
      groupId,
      () => normalizeClassicHeartbeat(request),
      (op, normalized) => handleClassicHeartbeat(op, groupId, normalized),
    );
  }

  /** LeaveGroup: one answer per named member; see classic-leave.ts. */
  leaveGroup(groupId: string, request: ClassicLeaveGroupRequest): Promise<ClassicLeaveGroupResult> {
    return this.#call(
      groupId,
      () => normalizeClassicLeave(request),
      (op, normalized) => handleClassicLeave(op, groupId, normalized),
    );
  }

  /**
   * A commit on behalf of a classic member, checked on the group's lane (so it never sees a state
   * whose snapshot is still being written): the member must be in the group under that identity
   * (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) at its generation (ILLEGAL_GENERATION: also for a group
   * that does not exist), and the group not waiting for the leader's assignment
   * (REBALANCE_IN_PROGRESS). `write` is issued inside the check, and awaited outside the lane.
   */
  commit(
    groupId: string,
    member: { memberId: string; generationId: number; groupInstanceId: string | null },
    write: () => Promise<unknown>,
  ): Promise<void> {
    const runtime = this.#host.runtime(groupId);
    return runtime.lane
      .run(() => {
        try {
          this.#host.ensureActive();
          const committer = this.#validateCommit(
            groupId,
            member.memberId,
            member.generationId,
            member.groupInstanceId,
          );
          // As in Kafka, a member's commit keeps its session alive, as a heartbeat would, while
          // its group is Stable or rebalancing: a consumer busy processing may commit and not
          // heartbeat (a client without a heartbeat thread).
          this.#sessions.scheduleSession(groupId, committer.memberId, committer.sessionTimeoutMs);
          return { written: write() };
        } finally {
          if (this.#machine.get(groupId) === undefined)
            queueMicrotask(() => this.#host.dropRuntimeIfUnused(groupId));
        }
      })
      .then(({ written }) => written)
      .then(() => undefined);
  }

  /**
   * Removes members on an admin's request (see classic-leave.ts); resolves once the removal is
   * durable: the group's snapshot, Empty, or with the members left and the rebalance it started.
   */
  removeMembers(groupId: string, removal: NormalizedRemoval): Promise<RemovedMember[]> {
    return this.#run(groupId, (op) => {
      const removed = removeClassicMembersByAdmin(op, groupId, removal);
      if (removed.length > 0) this.#removalsToRecord.add(groupId);
      return { value: removed };
    });
  }

  // ---- queries and loading (synchronous; the owner checks the phase) -----------------------------

  /** Members of the classic group (pending members not counted), or null when there is none. */
  memberCount(groupId: string): number | null {
    return this.#machine.get(groupId)?.members.size ?? null;
  }

  /**
   * When the Empty classic group of that id became Empty (ms), or undefined: no such group, not
   * Empty, or recovered from a snapshot that did not record it.
   */
  emptySinceMs(groupId: string): number | undefined {
    return this.#machine.get(groupId)?.fields.emptySinceMs;
  }

  /** The group's state and protocol type (cheap: for listings), or null when there is no classic group of that id. */
  listing(groupId: string): { state: ClassicGroupState; protocolType: string | null } | null {
    const group = this.#machine.get(groupId);
    return group === undefined
      ? null
      : { state: group.state, protocolType: group.fields.protocolType };
  }

  /** Ids of the classic groups. */
  groupIds(): string[] {
    return [...this.#machine.groups()].map((g) => g.groupId);
  }

  /** The group's description, or null when there is no classic group of that id. */
  describe(groupId: string): ClassicGroupDescription | null {
    const group = this.#machine.get(groupId);
    return group === undefined ? null : describeClassicGroup(group);
  }

  /** Complete internal state of a group as plain data (tests, debugging). */
  inspect(groupId: string): ClassicGroupInspection | null {
    return this.#machine.inspect(groupId);
  }

  /** When a member's (or pending member's) session expires, if armed (tests, debugging). */
  sessionDeadlineMs(groupId: string, memberId: string): number | undefined {
    return this.#sessions.sessionDeadlineMs(groupId, memberId);
  }

  /** Counters: groups, members, parked calls, armed timers, snapshots written. */
  metrics(): {
    groups: number;
    members: number;
    parkedCalls: number;
    armedTimers: number;
    snapshotsWritten: number;
  } {
    let members = 0;
    for (const g of this.#machine.groups()) members += g.members.size;
    const parkedCalls = this.#env.joins.size + this.#env.syncs.size;
    return {
      groups: this.#machine.size,
      members,
      parkedCalls,
      armedTimers: this.#sessions.armedCount + this.#rebalanceTimers.armedCount,
      snapshotsWritten: this.#snapshotsWritten,
    };
  }

  /**
   * During loading: restores a group from its (parsed) snapshot, or with null only drops what was
   * loaded for the group id before (its latest record was a tombstone, or another type's snapshot).
   */
  loadSnapshot(groupId: string, snapshot: ClassicGroupSnapshot | null): void {
    if (this.#machine.get(groupId) !== undefined)
      this.#machine.replay({ type: 'classic-group-tombstone', groupId });
    if (snapshot !== null && isRebalanceDue(snapshot)) this.#rebalanceDueAtLoad.add(groupId);
    else this.#rebalanceDueAtLoad.delete(groupId);
    if (snapshot === null) return;
    for (const record of classicSnapshotToRecords(groupId, snapshot)) this.#machine.replay(record);
    this.#machine.get(groupId)!.checkInvariants();
  }

  /**
   * Ends loading: every restored member's session starts now, and a group restored with its
   * rebalance due (an admin removed members before it completed) starts that rebalance.
   */
  onLoadComplete(): void {
    for (const group of this.#machine.groups()) {
      this.#host.runtime(group.groupId).dirty = false;
      for (const m of group.members.values())
        this.#sessions.scheduleSession(group.groupId, m.memberId, m.sessionTimeoutMs);
    }
    for (const groupId of this.#rebalanceDueAtLoad) {
      this.#background(groupId, (op) => {
        const group = this.#machine.get(groupId);
        if (group?.state === 'Stable') prepareRebalance(op, group);
      });
    }
    this.#rebalanceDueAtLoad.clear();
  }

  /**
   * Deletes a classic group without members from memory (its timers too); the caller writes the
   * tombstone, or lets another type's group take the id. Run on the group's lane.
   */
  forget(groupId: string): void {
    const group = this.#machine.get(groupId);
    if (group === undefined) return;
    assert(
      group.members.size === 0,
      `classic group ${groupId} forgotten with ${group.members.size} members`,
    );
    this.#sessions.cancelGroup(groupId);
    this.#rebalanceTimers.cancelGroup(groupId);
    const records: ClassicGroupRecord[] = [{ type: 'classic-group-tombstone', groupId }];
    this.#machine.replay(records[0]!);
    this.#onRecords?.(groupId, records);
  }

  /** Cancels every timer and rejects every parked call with `error` (GroupCoordinator.close's). Idempotent. */
  close(error: OffsetStoreError): void {
    this.#sessions.cancelAll();
    this.#rebalanceTimers.cancelAll();
    this.#env.joins.rejectAll(error);
    this.#env.syncs.rejectAll(error);
  }

  // ---- internals -------------------------------------------------------------------------------

  #validateCommit(
    groupId: string,
    memberId: string,
    generationId: number,
    groupInstanceId: string | null,
  ): ClassicMember {
    const group = this.#machine.get(groupId);
    if (group === undefined) {
      if (this.#host.consumerGroups.memberCount(groupId) !== null) {
        throw new OffsetStoreError(
          'UNKNOWN_MEMBER_ID',
          `group ${groupId} is a consumer group: commit with memberId and memberEpoch`,
        );
      }
      throw new OffsetStoreError(
        'ILLEGAL_GENERATION',
        `commit for generation ${generationId} of group ${groupId}, which has no generation`,
      );
    }
    const member = group.validateMember(memberId, groupInstanceId);
    if (generationId !== group.fields.generationId) {
      throw new OffsetStoreError(
        'ILLEGAL_GENERATION',
        `commit for generation ${generationId}, group ${groupId} is at ${group.fields.generationId}`,
      );
    }
    if (group.state === 'CompletingRebalance')
      throw new OffsetStoreError(
        'REBALANCE_IN_PROGRESS',
        `group ${groupId} waits for its leader's assignment`,
      );
    return member;
  }

  /** Validates at the edge, then runs the handler on the lane. */
  #call<N, T>(
    groupId: string,
    normalize: () => N,
    handler: (op: ClassicOperation, normalized: N) => ClassicReply<T>,
  ): Promise<T> {
    let normalized: N;
    try {
      this.#host.ensureActive();
      normalized = normalize();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#run(groupId, (op) => handler(op, normalized));
  }

  #run<T>(groupId: string, handler: (op: ClassicOperation) => ClassicReply<T>): Promise<T> {
    const runtime = this.#host.runtime(groupId);
    let reply: ClassicReply<T> | undefined;
    const execute = () => this.#execute(groupId, runtime, (op) => (reply = handler(op)));
    const done = runtime.lane.run(() => {
      const consumerWrites = runtime.settled();
      return consumerWrites === null ? execute() : consumerWrites.then(execute);
    });
    return done.then(
      () => answer(reply!),
      (error: unknown) => {
        if (reply !== undefined && !('value' in reply)) return answer(reply);
        throw error;
      },
    );
  }

  #execute(
    groupId: string,
    runtime: ClassicRuntime,
    handler: (op: ClassicOperation) => unknown,
  ): Promise<void> | undefined {
    this.#host.ensureNotClosed();
    const op = new ClassicOperation(this.#env);
    try {
      handler(op);
    } catch (error) {
      op.deliver();
      throw error;
    } finally {
      this.#afterOperation(groupId, runtime, op);
    }
    let write: Promise<void> | null;
    try {
      write = this.#writeSnapshotIfBoundary(groupId, runtime);
    } catch (error) {
      // The answers the operation decided (parked calls it took out among them) are still given.
      op.deliver(error);
      throw error;
    }
    if (write === null) {
      op.deliver();
      return undefined;
    }
    return write.then(
      () => op.deliver(),
      (error: unknown) => {
        op.deliver(error);
        throw error;
      },
    );
  }

  #afterOperation(groupId: string, runtime: ClassicRuntime, op: ClassicOperation): void {
    if (op.records.length > 0) {
      if (op.persistent) runtime.dirty = true;
      this.#onRecords?.(groupId, op.records);
    }
    const group = this.#machine.get(groupId);
    if (group === undefined) {
      queueMicrotask(() => this.#host.dropRuntimeIfUnused(groupId));
      return;
    }
    group.checkInvariants();
    assert(
      this.#env.joins.countIn(groupId) === group.awaitingJoinCount,
      `group ${groupId}: ${this.#env.joins.countIn(groupId)} parked joins, ${group.awaitingJoinCount} members awaiting join`,
    );
    assert(
      this.#env.syncs.countIn(groupId) === group.awaitingSyncCount,
      `group ${groupId}: ${this.#env.syncs.countIn(groupId)} parked syncs, ${group.awaitingSyncCount} members awaiting sync`,
    );
  }

  /**
   * Writes the snapshot when the group changed and is now Stable or Empty (a generation boundary),
   * or, after an admin's removal of members that started a rebalance, one of version 1, its
   * rebalance due (the group stays dirty: the rebalance's end writes again).
   */
  #writeSnapshotIfBoundary(groupId: string, runtime: ClassicRuntime): Promise<void> | null {
    const group = this.#machine.get(groupId);
    const removal = this.#removalsToRecord.delete(groupId);
    if (group === undefined || !runtime.dirty) return null;
    if (group.state !== 'Stable' && group.state !== 'Empty') {
      if (!removal) return null; // the rebalance's end writes
      // When no member left could be restored at this generation, the group as a restart has it:
      // Empty (the rebalance's end writes again).
      const snapshot = rebalanceDueSnapshotOf(group) ?? emptiedSnapshotOf(group, this.#env.nowMs());
      this.#snapshotsWritten++;
      return this.#writer.writeSnapshot(groupId, snapshot).catch((error: unknown) => {
        // Written again by the group's next operation, as a failed snapshot write always is.
        this.#removalsToRecord.add(groupId);
        throw error;
      });
    }
    const snapshot = classicSnapshotOf(group);
    runtime.dirty = false;
    this.#snapshotsWritten++;
    return this.#writer.writeSnapshot(groupId, snapshot).catch((error: unknown) => {
      runtime.dirty = true;
      throw error;
    });
  }

  #background(groupId: string, handler: (op: ClassicOperation) => void): void {
    this.#run(groupId, (op) => {
      handler(op);
      return { value: undefined };
    }).catch((error: unknown) => {
      if (!this.#host.closed()) this.#onBackgroundError?.(error, groupId);
    });
  }
}

function answer<T>(reply: ClassicReply<T>): T | Promise<T> {
  if ('parked' in reply) return reply.parked;
  if ('error' in reply) throw reply.error;
  return reply.value;
}
