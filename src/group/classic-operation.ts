/**
 * ClassicOperation: one classic-protocol handler invocation's view of the coordinator, as
 * GroupOperation is for consumer groups. Handlers read state, decide, `emit` records (replayed at
 * once, so later steps see their effect) and decide answers: `answerJoin` / `answerSync` take a
 * parked call out of the waiters and queue its answer; the handler's own result is a ClassicReply.
 *
 * Answers are delivered by the coordinator after the operation, once any snapshot it wrote is
 * durable: Kafka answers a leader's SyncGroup (and its followers') only after the group's record is
 * appended. If that write fails, every answer that would have succeeded fails with the write's error
 * instead; error answers stay as they are.
 *
 * Timers are not state: handlers arm and cancel them through the environment.
 */
import type { OffsetStoreError } from '../errors/index.js';
import type { ClassicGroup } from './classic-group.js';
import type { ClassicMember } from './classic-member.js';
import type { ClassicJoinGroupResult, ClassicSyncGroupResult } from './classic-protocol.js';
import {
  isTransientRecord,
  type ClassicGroupFields,
  type ClassicGroupRecord,
} from './classic-record.js';
import type { ClassicGroupStateMachine } from './classic-state-machine.js';
import type { WaiterSet } from './classic-waiters.js';
import type { MemberTimerActions } from './group-operation.js';

/** What a fired join timer is to do. */
export type ClassicJoinTimerAction =
  /** The initial rebalance's delay ended: complete the join, or wait another delay if members kept coming. */
  | { readonly kind: 'initial-delay'; readonly delayMs: number; readonly remainingMs: number }
  /** The rebalance timeout ended: complete the join with the members that rejoined. */
  | { readonly kind: 'rebalance-timeout' };

/** The group-level timers of classic groups (one join timer and one sync timer per group). */
export interface ClassicRebalanceTimerActions {
  /** (Re)arms the group's join timer. */
  armJoin(groupId: string, delayMs: number, action: ClassicJoinTimerAction): void;
  /** Cancels the group's join timer, if armed. */
  cancelJoin(groupId: string): void;
  /** True while the group's join timer is armed (a fired one is not: a handler it queued finds a newer one armed only if it is stale). */
  joinArmed(groupId: string): boolean;
  /** (Re)arms the group's sync timer for `generationId`. */
  armSync(groupId: string, delayMs: number, generationId: number): void;
  /** Cancels the group's sync timer, if armed. */
  cancelSync(groupId: string): void;
  /** True while the group's sync timer is armed. */
  syncArmed(groupId: string): boolean;
  /** Notes whether a member joined since the initial delay was armed (the delay is then extended). */
  setNewMemberAdded(groupId: string, value: boolean): void;
  /** Whether a member joined since the initial delay was armed. */
  newMemberAdded(groupId: string): boolean;
}

/** Coordinator settings the classic handlers use. */
export interface ClassicConfig {
  /** The delay of a new group's first rebalance, in ms (Kafka's `group.initial.rebalance.delay.ms`). */
  readonly initialRebalanceDelayMs: number;
  /** How long a new member's JoinGroup may wait before the member is removed, in ms. */
  readonly newMemberJoinTimeoutMs: number;
  /** Most members one group may have (GROUP_MAX_SIZE_REACHED beyond). */
  readonly groupMembersMax: number;
  /** Largest group snapshot in bytes (at most CLASSIC_SNAPSHOT_BYTES_MAX; less below a smaller log batch). */
  readonly snapshotBytesMax: number;
}

/** What the classic handlers may know of consumer (KIP-848) groups: a group id has one type at a time. */
export interface ConsumerGroupsView {
  /** Members of the consumer group of that id, or null when there is none. */
  memberCount(groupId: string): number | null;
  /** Deletes the Empty consumer group of that id from memory (a classic join converts it). */
  dropEmpty(groupId: string): void;
  /** The member id holding that static instance id in the consumer group, or undefined. */
  staticMemberId(groupId: string, instanceId: string): string | undefined;
}

/** Everything a classic handler may touch. */
export interface ClassicEnvironment {
  /** The classic groups, changed only through `ClassicOperation.emit`. */
  readonly machine: ClassicGroupStateMachine;
  /** Session timers of members and pending members. */
  readonly sessions: MemberTimerActions;
  /** Join and sync timers of groups. */
  readonly rebalanceTimers: ClassicRebalanceTimerActions;
  /** Parked JoinGroup calls. */
  readonly joins: WaiterSet<ClassicJoinGroupResult>;
  /** Parked SyncGroup calls. */
  readonly syncs: WaiterSet<ClassicSyncGroupResult>;
  /** Settings. */
  readonly config: ClassicConfig;
  /** The other group type's view. */
  readonly consumerGroups: ConsumerGroupsView;
  /** A new member id: `prefix` (instance id or client id), '-', a unique suffix. */
  newMemberId(prefix: string): string;
  /** The store's clock, in ms (when a group becomes Empty). */
  nowMs(): number;
}

/** An answer: a value, or an error. */
export type ClassicOutcome<T> = { readonly value: T } | { readonly error: OffsetStoreError };

/** A handler's answer to its own caller: now (value or error), or parked until a later operation answers. */
export type ClassicReply<T> = ClassicOutcome<T> | { readonly parked: Promise<T> };

interface Delivery {
  readonly settle: (writeError: unknown) => void;
}

function delivery<T>(
  waiter: { resolve(value: T): void; reject(error: unknown): void },
  outcome: ClassicOutcome<T>,
): Delivery {
  return {
    settle: (writeError) => {
      if ('error' in outcome) waiter.reject(outcome.error);
      else if (writeError !== undefined) waiter.reject(writeError);
      else waiter.resolve(outcome.value);
    },
  };
}

/** One classic handler invocation; see the module header. */
export class ClassicOperation {
  /** The environment the handler runs in. */
  readonly env: ClassicEnvironment;
  readonly #records: ClassicGroupRecord[] = [];
  readonly #deliveries: Delivery[] = [];
  #persistent = false;

  /** One per operation; records emitted through it are replayed into `env.machine` at once. */
  constructor(env: ClassicEnvironment) {
    this.env = env;
  }

  /** Records emitted so far, in order. */
  get records(): readonly ClassicGroupRecord[] {
    return this.#records;
  }

  /** True when a record changed something a snapshot holds. */
  get persistent(): boolean {
    return this.#persistent;
  }

  /** Replays a record and keeps it. */
  emit(record: ClassicGroupRecord): void {
    this.env.machine.replay(record);
    this.#records.push(record);
    if (!isTransientRecord(record)) this.#persistent = true;
  }

  /** Emits the group's fields with `changes` applied. */
  setGroup(group: ClassicGroup, changes: Partial<ClassicGroupFields>): void {
    this.emit({ type: 'classic-group', groupId: group.groupId, ...group.fields, ...changes });
  }

  /** Emits a member (created or replaced). */
  putMember(groupId: string, member: ClassicMember): void {
    this.emit({ type: 'classic-member', groupId, member });
  }

  /** Takes the member's parked JoinGroup out, if any, and queues its answer. */
  answerJoin(
    groupId: string,
    memberId: string,
    outcome: ClassicOutcome<ClassicJoinGroupResult>,
  ): void {
    const waiter = this.env.joins.take(groupId, memberId);
    if (waiter !== undefined) this.#deliveries.push(delivery(waiter, outcome));
  }

  /** Takes the member's parked SyncGroup out, if any, and queues its answer. */
  answerSync(
    groupId: string,
    memberId: string,
    outcome: ClassicOutcome<ClassicSyncGroupResult>,
  ): void {
    const waiter = this.env.syncs.take(groupId, memberId);
    if (waiter !== undefined) this.#deliveries.push(delivery(waiter, outcome));
  }

  /** Settles every queued answer: successes fail with `writeError` when it is given. */
  deliver(writeError?: unknown): void {
    for (const d of this.#deliveries.splice(0)) d.settle(writeError);
  }
}
