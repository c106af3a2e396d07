/**
 * A ManualClock whose wall clock can step without time passing, as an NTP correction or a restored
 * VM makes it: `nowMs()` moves by `stepWall(ms)`, while `elapsedMs()` (interval time) and the timers
 * follow `advance` only. For tests of intervals that must not follow the wall clock's steps.
 */
import { ManualClock } from '../../src/index.js';

export class SteppingClock extends ManualClock {
  #wallOffsetMs = 0;

  /** The wall clock: the manual time plus every step so far. */
  override nowMs(): number {
    return super.nowMs() + this.#wallOffsetMs;
  }

  /** Interval time: the manual time, which only `advance` moves. */
  elapsedMs(): number {
    return super.nowMs();
  }

  /** Steps the wall clock by `ms` (negative: back) without time passing. */
  stepWall(ms: number): void {
    this.#wallOffsetMs += ms;
  }
}
