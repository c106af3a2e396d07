/**
 * The parked calls of the classic protocol: a JoinGroup waits for the join phase to complete, a
 * follower's SyncGroup for the leader's assignment. Each is a promise the caller holds, keyed by
 * group and member id; a handler takes it out when it decides the answer, and the coordinator
 * settles it once whatever the answer depends on is durable.
 *
 * Not state: the group records *that* a member waits (`awaitingJoin`, `awaitingSync`); this holds
 * the promise to answer it. Invariant (checked by the coordinator after every operation): a member
 * has a parked join exactly when its `awaitingJoin` is set, and likewise for sync. At most one of
 * each per member: a second call supersedes the first, which the handler answers at once.
 *
 * While any call is parked, the set holds the process alive (`holdProcess`): the answer may wait on
 * the store's unref'd timers only, and a caller awaiting it must not see Node exit under it.
 */
import { assert, holdProcess } from '../util/index.js';

/** A promise with its settlement functions. */
export interface Deferred<T> {
  /** What the caller awaits. */
  readonly promise: Promise<T>;
  /** Fulfils it. */
  readonly resolve: (value: T) => void;
  /** Rejects it. */
  readonly reject: (error: unknown) => void;
}

/** A new Deferred. */
export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Parked calls of one kind, by group and member. */
export class WaiterSet<T> {
  readonly #groups = new Map<string, Map<string, Deferred<T>>>();
  #count = 0;
  /** Releases the hold on the process taken while calls are parked. */
  #release: (() => void) | undefined;

  /** Parks a new call of the member; asserts none is parked (the handler answers a superseded one first). */
  park(groupId: string, memberId: string): Deferred<T> {
    let members = this.#groups.get(groupId);
    if (members === undefined) {
      members = new Map();
      this.#groups.set(groupId, members);
    }
    assert(!members.has(memberId), `member ${memberId} of ${groupId} already has a parked call`);
    const waiter = deferred<T>();
    members.set(memberId, waiter);
    if (this.#count++ === 0) this.#release = holdProcess();
    return waiter;
  }

  /** Takes the member's parked call out, if any. */
  take(groupId: string, memberId: string): Deferred<T> | undefined {
    const members = this.#groups.get(groupId);
    const waiter = members?.get(memberId);
    if (waiter === undefined) return undefined;
    members!.delete(memberId);
    if (members!.size === 0) this.#groups.delete(groupId);
    if (--this.#count === 0) this.#release?.();
    return waiter;
  }

  /** True when the member has a parked call. */
  has(groupId: string, memberId: string): boolean {
    return this.#groups.get(groupId)?.has(memberId) === true;
  }

  /** Number of parked calls in the group. */
  countIn(groupId: string): number {
    return this.#groups.get(groupId)?.size ?? 0;
  }

  /** Rejects and forgets every parked call. */
  rejectAll(error: unknown): void {
    const all = [...this.#groups.values()].flatMap((members) => [...members.values()]);
    this.#groups.clear();
    this.#count = 0;
    this.#release?.();
    for (const waiter of all) waiter.reject(error);
  }

  /** Number of parked calls. */
  get size(): number {
    return this.#count;
  }
}
