/**
 * Internal invariant checks. A failed assertion is a bug in this store, never bad user input (that is
 * validated at the public edge and raised as an OffsetStoreError).
 */

/** Thrown when an internal invariant does not hold. */
export class AssertionError extends Error {
  /**
   * The message is prefixed with "invariant violated:" so a report shows a bug of the store, not of the
   * caller.
   */
  constructor(message: string) {
    super(`invariant violated: ${message}`);
    this.name = 'AssertionError';
  }
}

/** Asserts an internal invariant. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}

/** Marks a branch that the type system proves unreachable. */
export function unreachable(value: never): never {
  throw new AssertionError(`unreachable: ${String(value)}`);
}
