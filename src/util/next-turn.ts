/**
 * A turn of the event loop, for work that must let the process's timers, sockets and I/O callbacks
 * run before it goes on. Node's own `setImmediate` (node:timers), not the global one: a test that
 * fakes the global `setImmediate` (fake timers) must not stop the store or its server.
 */
import { setImmediate } from 'node:timers';

/** Runs `callback` on the next turn of the event loop. */
export function onNextTurn(callback: () => void): void {
  setImmediate(callback);
}

/** Resolves on the next turn of the event loop. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
