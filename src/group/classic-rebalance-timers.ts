/**
 * The group-level timers of classic groups, on the injected Clock: per group one join timer (the
 * initial delay or the rebalance timeout of the join phase) and one sync timer (the deadline for
 * SyncGroups of a generation). Members' session timers are MemberTimers (member-timers.ts).
 *
 * Invariants, as MemberTimers: arming replaces the timer armed before; a timer that fires after it
 * was replaced or cancelled finds its token stale and does nothing; a fired timer is no longer armed
 * when its callback runs, so a handler it queued can tell (`joinArmed`) that a newer one was armed
 * meanwhile and do nothing.
 */
import type { Clock, Timer } from '../util/index.js';
import type { ClassicJoinTimerAction, ClassicRebalanceTimerActions } from './classic-operation.js';

/** What to do when a timer fires (the coordinator queues a handler). */
export interface ClassicRebalanceTimerCallbacks {
  /** The group's join timer fired. */
  joinExpired(groupId: string, action: ClassicJoinTimerAction): void;
  /** The group's sync timer for `generationId` fired. */
  syncExpired(groupId: string, generationId: number): void;
}

interface Armed {
  readonly timer: Timer;
  readonly token: number;
}

interface GroupEntry {
  join: Armed | null;
  sync: Armed | null;
  newMemberAdded: boolean;
}

/** The join and sync timers of every classic group of one coordinator; see the module header. */
export class ClassicRebalanceTimers implements ClassicRebalanceTimerActions {
  readonly #clock: Clock;
  readonly #callbacks: ClassicRebalanceTimerCallbacks;
  readonly #groups = new Map<string, GroupEntry>();
  #nextToken = 1;

  /** Arms timers on `clock`; `callbacks` hear of the ones that fire and are still current. */
  constructor(clock: Clock, callbacks: ClassicRebalanceTimerCallbacks) {
    this.#clock = clock;
    this.#callbacks = callbacks;
  }

  /** (Re)arms the group's join timer. */
  armJoin(groupId: string, delayMs: number, action: ClassicJoinTimerAction): void {
    const entry = this.#entry(groupId);
    entry.join?.timer.cancel();
    const token = this.#nextToken++;
    const timer = this.#clock.setTimer(delayMs, () => {
      if (entry.join?.token !== token || this.#groups.get(groupId) !== entry) return;
      entry.join = null;
      this.#callbacks.joinExpired(groupId, action);
    });
    entry.join = { timer, token };
  }

  /** Cancels the group's join timer, if armed. */
  cancelJoin(groupId: string): void {
    const entry = this.#groups.get(groupId);
    entry?.join?.timer.cancel();
    if (entry !== undefined) entry.join = null;
  }

  /** True while the group's join timer is armed. */
  joinArmed(groupId: string): boolean {
    return this.#groups.get(groupId)?.join != null;
  }

  /** (Re)arms the group's sync timer for `generationId`. */
  armSync(groupId: string, delayMs: number, generationId: number): void {
    const entry = this.#entry(groupId);
    entry.sync?.timer.cancel();
    const token = this.#nextToken++;
    const timer = this.#clock.setTimer(delayMs, () => {
      if (entry.sync?.token !== token || this.#groups.get(groupId) !== entry) return;
      entry.sync = null;
      this.#callbacks.syncExpired(groupId, generationId);
    });
    entry.sync = { timer, token };
  }

  /** Cancels the group's sync timer, if armed. */
  cancelSync(groupId: string): void {
    const entry = this.#groups.get(groupId);
    entry?.sync?.timer.cancel();
    if (entry !== undefined) entry.sync = null;
  }

  /** True while the group's sync timer is armed. */
  syncArmed(groupId: string): boolean {
    return this.#groups.get(groupId)?.sync != null;
  }

  /** Notes whether a member joined since the initial delay was armed. */
  setNewMemberAdded(groupId: string, value: boolean): void {
    if (value || this.#groups.has(groupId)) this.#entry(groupId).newMemberAdded = value;
  }

  /** Whether a member joined since the initial delay was armed. */
  newMemberAdded(groupId: string): boolean {
    return this.#groups.get(groupId)?.newMemberAdded === true;
  }

  /** Cancels both timers of a group and forgets it. */
  cancelGroup(groupId: string): void {
    const entry = this.#groups.get(groupId);
    if (entry === undefined) return;
    entry.join?.timer.cancel();
    entry.sync?.timer.cancel();
    this.#groups.delete(groupId);
  }

  /** Cancels every timer. */
  cancelAll(): void {
    for (const groupId of [...this.#groups.keys()]) this.cancelGroup(groupId);
  }

  /** Number of armed timers (for tests and stats). */
  get armedCount(): number {
    let count = 0;
    for (const e of this.#groups.values())
      count += Number(e.join !== null) + Number(e.sync !== null);
    return count;
  }

  #entry(groupId: string): GroupEntry {
    let entry = this.#groups.get(groupId);
    if (entry === undefined) {
      entry = { join: null, sync: null, newMemberAdded: false };
      this.#groups.set(groupId, entry);
    }
    return entry;
  }
}
