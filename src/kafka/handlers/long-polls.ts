/**
 * Long-polled Fetch requests waiting out their max_wait_ms. This server stores no records, so a
 * Fetch never has data; answering at once would make clients spin (kafkajs sends tens of thousands
 * of Fetches a second), so each one is held for its wait, on the server's clock, as a broker holds a
 * Fetch that found nothing. A wait holds only its own response: the connection's other requests
 * queue behind it (responses go out in order), other connections are not affected.
 *
 * `releaseAll` (server close) answers every held Fetch at once and makes later waits return
 * immediately, so a closing server never waits out a client's max_wait_ms.
 */
import type { Clock, Timer } from '../../util/index.js';

interface Waiter {
  timer: Timer | undefined;
  resolve: () => void;
}

/** The Fetch requests being held, and their timers. */
export class LongPolls {
  readonly #clock: Clock;
  readonly #waiting = new Set<Waiter>();
  #released = false;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Requests being held now. */
  get size(): number {
    return this.#waiting.size;
  }

  /**
   * Resolves after `waitMs` on the clock, at once after `releaseAll`, or when `closing` aborts
   * (the connection closed: the wait's timer and response are dropped then, not kept until the
   * wait ends).
   */
  wait(waitMs: number, closing?: AbortSignal): Promise<void> {
    if (this.#released || waitMs <= 0 || closing?.aborted === true) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const end = () => {
        waiter.timer?.cancel();
        closing?.removeEventListener('abort', end);
        this.#waiting.delete(waiter);
        resolve();
      };
      const waiter: Waiter = { timer: undefined, resolve: end };
      waiter.timer = this.#clock.setTimer(waitMs, end);
      closing?.addEventListener('abort', end, { once: true });
      this.#waiting.add(waiter);
    });
  }

  /** Answers every held request now; later waits end at once. */
  releaseAll(): void {
    this.#released = true;
    for (const waiter of [...this.#waiting]) waiter.resolve();
  }
}
