/**
 * GroupOperation: one handler invocation's view of the coordinator. Handlers read state, decide,
 * and `emit` records; `emit` replays the record at once (so later steps of the same handler see its
 * effect) and keeps it, so the coordinator can tell whether the group changed and hand the records
 * to observers. Handlers check everything that can fail before their first `emit`.
 *
 * Timers are not state: handlers arm and cancel them through `timers`, which the coordinator backs
 * with the injected Clock.
 */
import type { Assignor } from './assignor.js';
import type { GroupRecord } from './group-record.js';
import type { GroupStateMachine } from './group-state-machine.js';
import type { TableLayout } from './table-layout.js';

/** Timer actions a handler may take. */
export interface MemberTimerActions {
  scheduleSession(groupId: string, memberId: string, delayMs: number): void;
  scheduleRebalance(groupId: string, memberId: string, memberEpoch: number, delayMs: number): void;
  cancelRebalance(groupId: string, memberId: string): void;
  cancelMember(groupId: string, memberId: string): void;
  /** True while a session timer is armed for the member (false once it fired or was cancelled). */
  hasSession(groupId: string, memberId: string): boolean;
}

/**
 * Pacing of target assignments (Kafka's KIP-1263 batching): with an assignment interval, a group
 * epoch bump within the interval after the last target computation does not compute a new target
 * at once; the group stays Assigning and one deferred computation covers every change meanwhile.
 */
export interface AssignmentPacer {
  /** True when a target may be computed now. */
  mayAssign(groupId: string): boolean;
  /** Records that a target was just computed (cancels a deferred computation). */
  assigned(groupId: string): void;
  /** Arms the deferred computation, if not armed yet. */
  defer(groupId: string): void;
}

/** Coordinator settings handlers use. */
export interface HandlerConfig {
  readonly heartbeatIntervalMs: number;
  readonly sessionTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly groupMembersMax: number;
  readonly defaultAssignor: string;
}

/** Everything a handler may touch. */
export interface HandlerEnvironment {
  readonly machine: GroupStateMachine;
  readonly layouts: ReadonlyMap<number, TableLayout>;
  readonly assignors: ReadonlyMap<string, Assignor>;
  readonly config: HandlerConfig;
  readonly timers: MemberTimerActions;
  readonly pacer: AssignmentPacer;
  readonly newMemberId: () => string;
}

/** One handler invocation; see the module header. */
export class GroupOperation {
  /** The environment the handler runs in. */
  readonly env: HandlerEnvironment;
  readonly #records: GroupRecord[] = [];

  constructor(env: HandlerEnvironment) {
    this.env = env;
  }

  /** Records emitted so far, in order. */
  get records(): readonly GroupRecord[] {
    return this.#records;
  }

  /** Replays a record and keeps it. */
  emit(record: GroupRecord): void {
    this.env.machine.replay(record);
    this.#records.push(record);
  }

  /** Emits several records in order. */
  emitAll(records: Iterable<GroupRecord>): void {
    for (const record of records) this.emit(record);
  }
}
