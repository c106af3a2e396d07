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
  /** (Re)arms the member's session timer: it expires `delayMs` from now unless re-armed. */
  scheduleSession(groupId: string, memberId: string, delayMs: number): void;
  /** (Re)arms the member's rebalance timer for its revocation at `memberEpoch`. */
  scheduleRebalance(groupId: string, memberId: string, memberEpoch: number, delayMs: number): void;
  /** Cancels the member's rebalance timer, if armed (it moved on). */
  cancelRebalance(groupId: string, memberId: string): void;
  /** Cancels both of the member's timers and forgets it (it left or was removed). */
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
  /** Sent to members in every response, in ms. */
  readonly heartbeatIntervalMs: number;
  /** Session timeout of a member whose requests ask for none, in ms. */
  readonly sessionTimeoutMs: number;
  /** Rebalance timeout of a member whose requests ask for none, in ms. */
  readonly rebalanceTimeoutMs: number;
  /** Most members a group may have; a join beyond is GROUP_MAX_SIZE_REACHED. */
  readonly groupMembersMax: number;
  /** Assignor of a group whose members state no preference. */
  readonly defaultAssignor: string;
  /** Largest estimated group snapshot in bytes (at most GROUP_SNAPSHOT_BYTES_BUDGET; less below a smaller log batch). */
  readonly snapshotBytesMax: number;
}

/** Everything a handler may touch. */
export interface HandlerEnvironment {
  /** The groups, changed only through `GroupOperation.emit`. */
  readonly machine: GroupStateMachine;
  /** The registered table layouts. */
  readonly layouts: ReadonlyMap<number, TableLayout>;
  /** The registered assignors by name. */
  readonly assignors: ReadonlyMap<string, Assignor>;
  /** The coordinator's settings. */
  readonly config: HandlerConfig;
  /** Member timers (not state: arming one emits no record). */
  readonly timers: MemberTimerActions;
  /** Whether a target may be computed now, or must be deferred. */
  readonly pacer: AssignmentPacer;
  /** Makes the id of a member that joins without one. */
  readonly newMemberId: () => string;
}

/** One handler invocation; see the module header. */
export class GroupOperation {
  /** The environment the handler runs in. */
  readonly env: HandlerEnvironment;
  readonly #records: GroupRecord[] = [];

  /** One per operation; records emitted through it are replayed into `env.machine` at once. */
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
