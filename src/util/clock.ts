/**
 * Time as a port. Everything time-dependent (retention, session and rebalance timeouts, auto-commit,
 * compaction pacing) reads time and arms timers through a Clock, so tests drive time by hand
 * (`ManualClock.advance`) instead of sleeping.
 *
 * Invariants of ManualClock: `nowMs()` never goes backwards; `advance(ms)` fires every timer due at or
 * before the new time in (due time, arming order), each one seeing `nowMs()` equal to its due time;
 * a cancelled timer never fires. A timer that re-arms itself with a zero delay would keep one
 * `advance` firing forever at the same instant, on the caller's thread, where no test timeout can
 * stop it: past INSTANT_TIMERS_MAX timers fired without time moving, `advance` throws instead.
 */

/** Timers one `advance` may fire at a single instant before it calls it an endless loop. */
export const INSTANT_TIMERS_MAX = 100_000;

/** Thrown by `ManualClock.advance` when timers keep re-arming at one instant (see above). */
export class TimerLoopError extends Error {
  override name = 'TimerLoopError';
}

/** Whether `value` can serve as a Clock: it has `nowMs()` and `setTimer()`. */
export function isClock(value: unknown): value is Clock {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Clock).nowMs === 'function' &&
    typeof (value as Clock).setTimer === 'function'
  );
}

/**
 * Checks a clock given as an option named `name`: a TypeError unless it has `nowMs()` and
 * `setTimer()`, and an `elapsedMs` that is a function when it has one.
 */
export function checkClock(value: unknown, name: string): asserts value is Clock {
  if (!isClock(value)) throw new TypeError(`${name} must have nowMs() and setTimer()`);
  if (value.elapsedMs !== undefined && typeof value.elapsedMs !== 'function')
    throw new TypeError(`${name}.elapsedMs must be a function when given`);
}

/** A cancellable timer handle. */
export interface Timer {
  /** Cancels the timer: its callback will not run (a no-op once it has fired). */
  cancel(): void;
}

/** A source of wall-clock time and one-shot timers. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  nowMs(): number;
  /** Runs `callback` once after `delayMs`; returns a handle that cancels it. */
  setTimer(delayMs: number, callback: () => void): Timer;
  /**
   * Optional: milliseconds on a clock that never steps (any origin), for measuring intervals; a
   * clock without it has them measured with `nowMs()` (see `elapsedMs`).
   */
  elapsedMs?(): number;
}

/**
 * Time for measuring intervals (how long since the last assignment, a connection's idleness, a
 * throttle's end, rate windows): the clock's `elapsedMs()`, or its `nowMs()` when it has none. The
 * wall clock steps (NTP corrections, a restored VM): an interval measured with it could last an
 * hour, or nothing. Timestamps that are kept or compared with other processes' (commit times,
 * retention) stay on `nowMs()`.
 */
export function elapsedMs(clock: Clock): number {
  return clock.elapsedMs === undefined ? clock.nowMs() : clock.elapsedMs();
}

/**
 * `clock`'s time without its timers: every timer set on it never fires. For state that is only
 * read (a store opened to read only, a stopped bucket's durable groups), whose sessions and
 * retention must not run.
 */
export function withoutTimers(clock: Clock): Clock {
  return {
    nowMs: () => clock.nowMs(),
    ...(clock.elapsedMs === undefined ? {} : { elapsedMs: () => clock.elapsedMs!() }),
    setTimer: () => ({ cancel: () => {} }),
  };
}

/** The real clock: `Date.now()` and unref'd Node timers (they never keep the process alive). */
export class SystemClock implements Clock {
  /** `Date.now()`: wall-clock ms since the epoch. */
  nowMs(): number {
    return Date.now();
  }

  /** `performance.now()`: ms since the process started, never stepped with the wall clock. */
  elapsedMs(): number {
    return performance.now();
  }

  /**
   * An unref'd setTimeout (it never keeps the process alive); a negative delay counts as 0, one above
   * 2^31 - 1 ms fires at once.
   */
  setTimer(delayMs: number, callback: () => void): Timer {
    const handle = setTimeout(callback, Math.max(0, delayMs));
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  }
}

interface ManualTimer {
  readonly dueMs: number;
  readonly seq: number;
  readonly callback: () => void;
  cancelled: boolean;
}

/** A clock that moves only when told to; for tests. */
export class ManualClock implements Clock {
  #nowMs: number;
  #seq = 0;
  #timers: ManualTimer[] = [];

  /** Starts at `startMs` (default 1,700,000,000,000, a fixed instant so test output is reproducible). */
  constructor(startMs = 1_700_000_000_000) {
    this.#nowMs = startMs;
  }

  /** The manual time: moves only by `advance`. */
  nowMs(): number {
    return this.#nowMs;
  }

  /**
   * Arms a timer due `delayMs` (negative counts as 0) after now; it fires during the `advance` that
   * reaches its due time.
   */
  setTimer(delayMs: number, callback: () => void): Timer {
    const timer: ManualTimer = {
      dueMs: this.#nowMs + Math.max(0, delayMs),
      seq: this.#seq++,
      callback,
      cancelled: false,
    };
    this.#timers.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }

  /** Number of armed, not yet fired or cancelled timers. */
  get pendingTimerCount(): number {
    return this.#timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward by `ms`, firing due timers in order (including ones armed while firing). */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`advance(ms) needs ms >= 0, got ${ms}`);
    const targetMs = this.#nowMs + ms;
    let instantMs = Number.NaN;
    let firedAtInstant = 0;
    for (;;) {
      const next = this.#nextDue(targetMs);
      if (next === undefined) break;
      if (next.dueMs !== instantMs) {
        instantMs = next.dueMs;
        firedAtInstant = 0;
      } else if (++firedAtInstant >= INSTANT_TIMERS_MAX) {
        throw new TimerLoopError(
          `ManualClock.advance: ${INSTANT_TIMERS_MAX} timers fired at ${instantMs} ms without time moving; a timer keeps re-arming itself with a zero delay`,
        );
      }
      this.#timers.splice(this.#timers.indexOf(next), 1);
      this.#nowMs = next.dueMs;
      next.callback();
    }
    this.#nowMs = targetMs;
  }

  #nextDue(targetMs: number): ManualTimer | undefined {
    this.#timers = this.#timers.filter((t) => !t.cancelled);
    let best: ManualTimer | undefined;
    for (const t of this.#timers) {
      if (t.dueMs > targetMs) continue;
      if (
        best === undefined ||
        t.dueMs < best.dueMs ||
        (t.dueMs === best.dueMs && t.seq < best.seq)
      )
        best = t;
    }
    return best;
  }
}

/**
 * The longest delay a Node timer holds (2^31 - 1 ms, about 24.8 days): a longer one fires after
 * 1 ms, so an option beyond it would do its work every millisecond, or give up at once.
 */
export const TIMER_MS_MAX = 0x7fffffff;
