export { assert, unreachable, AssertionError } from './assert.js';
export { type Clock, type Timer, SystemClock, ManualClock } from './clock.js';
