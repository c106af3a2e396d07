/**
 * callUserCallback: calls a function a user handed the store (a listener, a warning sink, an error
 * hook) so that nothing it does escapes into the store's own work: a throw, or a returned promise
 * that rejects (an async function), goes to `onFailure` instead of unwinding the caller or becoming
 * an unhandled rejection that ends the process.
 */

/** What the callback did wrong: `'threw'` or `'rejected'`, and its error. */
export type UserCallbackFailure = (how: 'threw' | 'rejected', error: unknown) => void;

/**
 * Calls `callback(...args)`; its throw or its returned promise's rejection goes to `onFailure`.
 * Returns, when the callback returned an object or function (a promise, perhaps), a promise that
 * settles, never rejecting, once that has settled and `onFailure` heard of a rejection: for a caller
 * that waits for its callbacks. Otherwise undefined.
 */
export function callUserCallback<A extends unknown[]>(
  callback: (...args: A) => unknown,
  args: A,
  onFailure: UserCallbackFailure,
): Promise<void> | undefined {
  let result: unknown;
  try {
    result = callback(...args);
  } catch (error) {
    onFailure('threw', error);
    return undefined;
  }
  if (result === null || (typeof result !== 'object' && typeof result !== 'function'))
    return undefined;
  try {
    // A thenable's `then` is read once, by the promise machinery; a getter that throws rejects it.
    return Promise.resolve(result).then(
      () => undefined,
      (error: unknown) => onFailure('rejected', error),
    );
  } catch (error) {
    onFailure('rejected', error); // a promise whose `constructor` getter throws
    return undefined;
  }
}

/** The message of what a callback threw or rejected with, whatever it was. */
export function failureMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return Object.prototype.toString.call(error);
  }
}
