/**
 * Holding an answer for a long-held request (a JoinGroup parked at the join barrier, a SyncGroup
 * waiting for the leader's assignment) without tying the connection or the server to it.
 *
 * A client sends its next request on a connection only after the answer (responses go out in
 * order), so holding the answer is all a handler does. What it must not do is outlive its
 * connection: when the connection closes, or the server starts closing it, the handler answers at
 * once with COORDINATOR_NOT_AVAILABLE (the client finds the coordinator again and rejoins; on a
 * closed connection the answer is dropped). The store's parked call is left to settle on its own
 * (the member's rebalance or session timeout, or the store closing); its outcome is then ignored.
 */
import { KAFKA_ERROR } from '../protocol/index.js';

/** What a held answer settles to: the store call's value or error, or `closed`. */
export type HeldOutcome<T> =
  { readonly value: T } | { readonly error: unknown } | { readonly closed: true };

/**
 * Waits for `answer` unless `closing` aborts first. Never rejects: the store's error comes back as
 * `{ error }`, an abort as `{ closed: true }` (at once if `closing` is already aborted).
 */
export function holdAnswer<T>(answer: Promise<T>, closing: AbortSignal): Promise<HeldOutcome<T>> {
  const settled = answer.then(
    (value): HeldOutcome<T> => ({ value }),
    (error: unknown): HeldOutcome<T> => ({ error }),
  );
  if (closing.aborted) return Promise.resolve({ closed: true });
  return new Promise((resolve) => {
    const onClose = () => resolve({ closed: true });
    closing.addEventListener('abort', onClose, { once: true });
    void settled.then((outcome) => {
      closing.removeEventListener('abort', onClose);
      resolve(outcome);
    });
  });
}

/** The error code of a held request answered because its connection or the server is closing. */
export const CLOSED_WHILE_HELD = KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE;
