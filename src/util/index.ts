/**
 * src/util: helpers with no domain knowledge: the Clock port (so tests drive time by hand),
 * internal assertions (a failure is a bug of the store, never bad input), turns of the event loop
 * (`nextTurn`), work run a bounded number at a time (`settleAtMost`), calling a user's callback so
 * that its failures cannot escape (`callUserCallback`), the checks of an options bag's shape, edit
 * distance (the option a misspelt one meant) and the check for keys a JSON text repeats. This file
 * is the folder's door.
 */
export { assert, unreachable, AssertionError } from './assert.js';
export {
  type Clock,
  type Timer,
  SystemClock,
  ManualClock,
  isClock,
  checkClock,
  elapsedMs,
  withoutTimers,
  TIMER_MS_MAX,
} from './clock.js';
export { externalWork, observeExternalWork, type ExternalWorkObserver } from './external-work.js';
export { findDuplicateJsonKey, type DuplicateJsonKey } from './json-keys.js';
export { nextTurn, onNextTurn } from './next-turn.js';
export {
  checkOptionsBag,
  checkOptionsObject,
  notAnOptionsObject,
  refuseUnknownOptions,
} from './option-shape.js';
export { editDistance } from './edit-distance.js';
export { holdProcess, processHoldCount } from './process-hold.js';
export { Serial } from './serial.js';
export { settleAtMost } from './settle-at-most.js';
export { callUserCallback, failureMessage, type UserCallbackFailure } from './user-callback.js';
