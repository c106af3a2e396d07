/**
 * OperationLane: runs the operations of one group one at a time, in arrival order.
 *
 * An operation is a function that changes state synchronously and may return a promise (a classic
 * group's snapshot write, a group deletion) that must settle before the next operation of the group
 * starts; a consumer group's operations return at once (their snapshot writes are group-committed
 * outside the lane, see group-coordinator.ts). When the lane is idle an operation runs at once,
 * inside the caller's call, so timers firing on a manual clock and `setTableLayout` take effect
 * synchronously; only operations that arrive while one is pending wait.
 *
 * Bounded: at most `queuedMax` operations wait; more are refused with TOO_MANY_PENDING_WRITES
 * (retriable). `close(error)` rejects everything still waiting.
 */
import { OffsetStoreError } from '../errors/index.js';

interface Waiting {
  readonly start: () => void;
  readonly reject: (error: unknown) => void;
}

/** A per-group serial executor; see the module header. */
export class OperationLane {
  readonly #queuedMax: number;
  readonly #waiting: Waiting[] = [];
  #busy = false;
  #closedError: unknown = null;

  /** `queuedMax`: most operations that may wait; more are refused with TOO_MANY_PENDING_WRITES. */
  constructor(queuedMax: number) {
    this.#queuedMax = queuedMax;
  }

  /** True when nothing runs or waits. */
  get idle(): boolean {
    return !this.#busy && this.#waiting.length === 0;
  }

  /** Runs `operation` now if idle, else after the operations before it. */
  run<T>(operation: () => T | Promise<T>): Promise<T> {
    if (this.#closedError !== null) return Promise.reject(this.#closedError);
    if (this.idle) return this.#start(operation);
    if (this.#waiting.length >= this.#queuedMax) {
      return Promise.reject(
        new OffsetStoreError(
          'TOO_MANY_PENDING_WRITES',
          `${this.#waiting.length} operations already wait for this group`,
        ),
      );
    }
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({ start: () => this.#start(operation).then(resolve, reject), reject });
    });
  }

  /** Rejects every waiting operation with `error`, and every later one. */
  close(error: unknown): void {
    this.#closedError = error;
    for (const w of this.#waiting.splice(0)) w.reject(error);
  }

  #start<T>(operation: () => T | Promise<T>): Promise<T> {
    let outcome: T | Promise<T>;
    try {
      outcome = operation();
    } catch (error) {
      this.#drain();
      return Promise.reject(error);
    }
    if (!(outcome instanceof Promise)) {
      this.#drain();
      return Promise.resolve(outcome);
    }
    this.#busy = true;
    const settled = outcome.finally(() => {
      this.#busy = false;
    });
    // The next operation starts one microtask after this one's caller has seen the result, so
    // results reach callers in the order the operations ran.
    const next = (): void => queueMicrotask(() => this.#drain());
    settled.then(next, next);
    return settled;
  }

  #drain(): void {
    if (this.#busy) return;
    const next = this.#waiting.shift();
    if (next !== undefined) next.start();
  }
}
