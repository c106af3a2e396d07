/**
 * Session and rebalance timers of group members, on the injected Clock.
 *
 * Invariants: at most one session and one rebalance timer per member; arming one cancels the one it
 * replaces. A member is tracked only while one of its timers is armed. A timer that fires after it
 * was replaced or cancelled (a clock that cannot cancel, or a callback already queued) finds its
 * token stale and does nothing; the handlers it triggers re-check the member's state as well, so a
 * stale expiry is a no-op twice over.
 */
import type { Clock, Timer } from '../util/index.js';
import type { MemberTimerActions } from './group-operation.js';

/** What to do when a timer fires (the coordinator queues a handler). */
export interface MemberTimerCallbacks {
  /** The member's session timer fired: the coordinator queues its removal. */
  sessionExpired(groupId: string, memberId: string): void;
  /**
   * The member's rebalance timer for `memberEpoch` fired: the coordinator queues its removal if it is
   * still revoking at that epoch.
   */
  rebalanceExpired(groupId: string, memberId: string, memberEpoch: number): void;
}

interface Armed {
  readonly timer: Timer;
  readonly token: number;
  readonly deadlineMs: number;
}

interface MemberEntry {
  session: Armed | null;
  rebalance: (Armed & { readonly memberEpoch: number }) | null;
}

/** The timers of all members of one coordinator; see the module header. */
export class MemberTimers implements MemberTimerActions {
  readonly #clock: Clock;
  readonly #callbacks: MemberTimerCallbacks;
  readonly #groups = new Map<string, Map<string, MemberEntry>>();
  #nextToken = 1;

  /** Arms timers on `clock`; `callbacks` hear of the ones that fire and are still current. */
  constructor(clock: Clock, callbacks: MemberTimerCallbacks) {
    this.#clock = clock;
    this.#callbacks = callbacks;
  }

  /** (Re)arms the member's session timer for `delayMs`, replacing any armed one. */
  scheduleSession(groupId: string, memberId: string, delayMs: number): void {
    // Read first: a clock that fails leaves the armed timer as it was.
    const deadlineMs = this.#clock.nowMs() + delayMs;
    const entry = this.#entry(groupId, memberId);
    entry.session?.timer.cancel();
    const token = this.#nextToken++;
    const timer = this.#clock.setTimer(delayMs, () => {
      if (entry.session?.token !== token || this.#groups.get(groupId)?.get(memberId) !== entry)
        return;
      entry.session = null;
      this.#forgetIfUnarmed(groupId, memberId, entry);
      this.#callbacks.sessionExpired(groupId, memberId);
    });
    entry.session = { timer, token, deadlineMs };
  }

  /** (Re)arms the member's rebalance timer for its revocation at `memberEpoch`, replacing any armed one. */
  scheduleRebalance(groupId: string, memberId: string, memberEpoch: number, delayMs: number): void {
    const deadlineMs = this.#clock.nowMs() + delayMs;
    const entry = this.#entry(groupId, memberId);
    entry.rebalance?.timer.cancel();
    const token = this.#nextToken++;
    const timer = this.#clock.setTimer(delayMs, () => {
      if (entry.rebalance?.token !== token || this.#groups.get(groupId)?.get(memberId) !== entry)
        return;
      entry.rebalance = null;
      this.#forgetIfUnarmed(groupId, memberId, entry);
      this.#callbacks.rebalanceExpired(groupId, memberId, memberEpoch);
    });
    entry.rebalance = { timer, token, deadlineMs, memberEpoch };
  }

  /** Cancels the member's rebalance timer, if armed. */
  cancelRebalance(groupId: string, memberId: string): void {
    const entry = this.#groups.get(groupId)?.get(memberId);
    if (entry?.rebalance == null) return;
    entry.rebalance.timer.cancel();
    entry.rebalance = null;
  }

  /** Cancels both of the member's timers and forgets the member. */
  cancelMember(groupId: string, memberId: string): void {
    const members = this.#groups.get(groupId);
    const entry = members?.get(memberId);
    if (members === undefined || entry === undefined) return;
    entry.session?.timer.cancel();
    entry.rebalance?.timer.cancel();
    members.delete(memberId);
    if (members.size === 0) this.#groups.delete(groupId);
  }

  /** True while a session timer is armed for the member (false once it fired or was cancelled). */
  hasSession(groupId: string, memberId: string): boolean {
    return this.#groups.get(groupId)?.get(memberId)?.session != null;
  }

  /** When the member's session expires, if a session timer is armed. */
  sessionDeadlineMs(groupId: string, memberId: string): number | undefined {
    return this.#groups.get(groupId)?.get(memberId)?.session?.deadlineMs;
  }

  /** When the member is fenced for not revoking, if a rebalance timer is armed. */
  rebalanceDeadlineMs(groupId: string, memberId: string): number | undefined {
    return this.#groups.get(groupId)?.get(memberId)?.rebalance?.deadlineMs;
  }

  /** Cancels every timer of a group. */
  cancelGroup(groupId: string): void {
    for (const memberId of [...(this.#groups.get(groupId)?.keys() ?? [])])
      this.cancelMember(groupId, memberId);
  }

  /** Cancels every timer. */
  cancelAll(): void {
    for (const groupId of [...this.#groups.keys()]) this.cancelGroup(groupId);
  }

  /** Members with an entry (an armed timer): a member none of whose timers is armed is forgotten. */
  get memberCount(): number {
    let count = 0;
    for (const members of this.#groups.values()) count += members.size;
    return count;
  }

  /** Number of armed timers (for tests and stats). */
  get armedCount(): number {
    let count = 0;
    for (const members of this.#groups.values())
      for (const e of members.values())
        count += Number(e.session !== null) + Number(e.rebalance !== null);
    return count;
  }

  /**
   * Forgets a member whose last armed timer just fired, so that members nobody cancels (a pending
   * member that never came back) leave nothing behind.
   */
  #forgetIfUnarmed(groupId: string, memberId: string, entry: MemberEntry): void {
    if (entry.session !== null || entry.rebalance !== null) return;
    const members = this.#groups.get(groupId);
    members?.delete(memberId);
    if (members?.size === 0) this.#groups.delete(groupId);
  }

  #entry(groupId: string, memberId: string): MemberEntry {
    let members = this.#groups.get(groupId);
    if (members === undefined) {
      members = new Map();
      this.#groups.set(groupId, members);
    }
    let entry = members.get(memberId);
    if (entry === undefined) {
      entry = { session: null, rebalance: null };
      members.set(memberId, entry);
    }
    return entry;
  }
}
