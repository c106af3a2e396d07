/**
 * OffsetStoreError, the one error class for conditions a caller can handle, and its type guard.
 * `code`, `errno` and `retriable` come from one row of the error table, so they never disagree.
 */
import { ERROR_CODES, type ErrorCode } from './error-codes.js';

/**
 * The one error class this store raises for conditions a caller can handle: a stable `code` and
 * `errno` (see error-codes.ts), whether retrying may succeed, and the underlying `cause` if any.
 * Messages start with the code so a log line is self-explaining.
 */
export class OffsetStoreError extends Error {
  /** Stable name of the condition, e.g. `'STORE_LOCKED'`. */
  readonly code: ErrorCode;
  /** Stable number of the condition (Kafka's where the meaning is the same). */
  readonly errno: number;
  /** True when the same call may succeed if retried later. */
  readonly retriable: boolean;

  /** `errno` and `retriable` come from the code's row in ERROR_CODES; the message is prefixed with the code. */
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(
      `${code}: ${message}`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'OffsetStoreError';
    this.code = code;
    this.errno = ERROR_CODES[code].errno;
    this.retriable = ERROR_CODES[code].retriable;
  }
}

/** `error`'s message without the code it starts with: for a message that carries it on under another code. */
export function messageWithoutCode(error: OffsetStoreError): string {
  return error.message.slice(error.code.length + 2);
}

/**
 * What `error` says, to quote as the cause in another error's message: an OffsetStoreError's
 * message without its code (the outer message carries one), any other Error's message, or the
 * thrown value as text.
 */
export function reasonOf(error: unknown): string {
  if (error instanceof OffsetStoreError) return messageWithoutCode(error);
  return error instanceof Error ? error.message : String(error);
}

/** True when `error` is an OffsetStoreError, optionally with the given code. */
export function isOffsetStoreError(error: unknown, code?: ErrorCode): error is OffsetStoreError {
  return error instanceof OffsetStoreError && (code === undefined || error.code === code);
}
