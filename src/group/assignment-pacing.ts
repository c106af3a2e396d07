/**
 * AssignmentPacing: the coordinator's AssignmentPacer (group-operation.ts) on the injected Clock —
 * per consumer group, when its target assignment was last computed and the deferred computation, if
 * armed. With an interval of 0 every change computes a target at once.
 *
 * Invariant: at most one deferred computation per group; computing a target cancels it. A group's
 * entry lives until `forget` (the coordinator forgets a group it no longer holds).
 */
import { elapsedMs, type Clock, type Timer } from '../util/index.js';
import type { AssignmentPacer } from './group-operation.js';

interface Entry {
  lastAssignmentMs: number | null;
  timer: Timer | null;
}

/** Pacing of target assignments; see the module header. */
export class AssignmentPacing implements AssignmentPacer {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #onDue: (groupId: string) => void;
  readonly #groups = new Map<string, Entry>();

  /** `onDue` runs when a deferred computation is due (the coordinator queues it on the group's lane). */
  constructor(clock: Clock, intervalMs: number, onDue: (groupId: string) => void) {
    this.#clock = clock;
    this.#intervalMs = intervalMs;
    this.#onDue = onDue;
  }

  /** True when a target may be computed now. */
  mayAssign(groupId: string): boolean {
    const last = this.#groups.get(groupId)?.lastAssignmentMs ?? null;
    return (
      this.#intervalMs === 0 || last === null || elapsedMs(this.#clock) - last >= this.#intervalMs
    );
  }

  /** Records that a target was just computed (cancels a deferred computation). */
  assigned(groupId: string): void {
    const entry = this.#entry(groupId);
    entry.lastAssignmentMs = elapsedMs(this.#clock);
    entry.timer?.cancel();
    entry.timer = null;
  }

  /** Arms the deferred computation at the interval's end, if not armed yet. */
  defer(groupId: string): void {
    const entry = this.#entry(groupId);
    if (entry.timer !== null) return;
    const delayMs = (entry.lastAssignmentMs ?? 0) + this.#intervalMs - elapsedMs(this.#clock);
    entry.timer = this.#clock.setTimer(Math.max(0, delayMs), () => {
      entry.timer = null;
      this.#onDue(groupId);
    });
  }

  /** Cancels the group's deferred computation and forgets when it last assigned. */
  forget(groupId: string): void {
    this.#groups.get(groupId)?.timer?.cancel();
    this.#groups.delete(groupId);
  }

  /** Cancels every deferred computation. */
  cancelAll(): void {
    for (const groupId of [...this.#groups.keys()]) this.forget(groupId);
  }

  #entry(groupId: string): Entry {
    let entry = this.#groups.get(groupId);
    if (entry === undefined) {
      entry = { lastAssignmentMs: null, timer: null };
      this.#groups.set(groupId, entry);
    }
    return entry;
  }
}
