/**
 * Keeps the process alive while the store owes a caller an answer that only a timer will bring.
 *
 * The store's timers are unref'd (a store left open must not keep a process from exiting), so a
 * script whose only pending work is a call parked on such a timer (a classic JoinGroup waiting for
 * its join phase, a follower's SyncGroup waiting for the leader) would see Node exit under it,
 * with code 13 for a top-level await, as if the promise could never settle. While at least one hold
 * is taken, one ref'd interval keeps the event loop alive; it never fires in practice (its period is
 * the longest Node allows) and is cleared when the last hold is released.
 */
import { TIMER_MS_MAX } from './clock.js';

let holds = 0;
let handle: ReturnType<typeof setInterval> | undefined;

/** Takes a hold on the process; the function returned releases it (a second call does nothing). */
export function holdProcess(): () => void {
  if (holds++ === 0) handle = setInterval(() => {}, TIMER_MS_MAX);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--holds === 0) {
      clearInterval(handle);
      handle = undefined;
    }
  };
}

/** Holds taken and not yet released (tests). */
export function processHoldCount(): number {
  return holds;
}
