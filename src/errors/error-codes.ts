/**
 * The error code table. Append-only: a code's name may be reworded in messages, its number never
 * changes. Numbers below 1000 are Kafka's where the meaning is the same; 1000+ are this store's own.
 */

/** One row of the error table. */
export interface ErrorCodeInfo {
  /** Stable number of the code: Kafka's below 1000 where the meaning is the same; never reused or changed. */
  readonly errno: number;
  /** True when the same call, unchanged, may succeed later (back off and retry). */
  readonly retriable: boolean;
}

/** Every error code this store raises, with its stable number and whether retrying can succeed. */
export const ERROR_CODES = {
  CORRUPT_MESSAGE: { errno: 2, retriable: false },
  REQUEST_TIMED_OUT: { errno: 7, retriable: true },
  OFFSET_METADATA_TOO_LARGE: { errno: 12, retriable: false },
  COORDINATOR_LOAD_IN_PROGRESS: { errno: 14, retriable: true },
  COORDINATOR_NOT_AVAILABLE: { errno: 15, retriable: true },
  NOT_COORDINATOR: { errno: 16, retriable: true },
  ILLEGAL_GENERATION: { errno: 22, retriable: false },
  INCONSISTENT_GROUP_PROTOCOL: { errno: 23, retriable: false },
  INVALID_GROUP_ID: { errno: 24, retriable: false },
  UNKNOWN_MEMBER_ID: { errno: 25, retriable: false },
  INVALID_SESSION_TIMEOUT: { errno: 26, retriable: false },
  REBALANCE_IN_PROGRESS: { errno: 27, retriable: true },
  INVALID_CONFIG: { errno: 40, retriable: false },
  INVALID_REQUEST: { errno: 42, retriable: false },
  SASL_AUTHENTICATION_FAILED: { errno: 58, retriable: false },
  NON_EMPTY_GROUP: { errno: 68, retriable: false },
  GROUP_ID_NOT_FOUND: { errno: 69, retriable: false },
  MEMBER_ID_REQUIRED: { errno: 79, retriable: false },
  GROUP_MAX_SIZE_REACHED: { errno: 81, retriable: false },
  FENCED_INSTANCE_ID: { errno: 82, retriable: false },
  UNSTABLE_OFFSET_COMMIT: { errno: 88, retriable: true },
  FENCED_MEMBER_EPOCH: { errno: 110, retriable: false },
  UNRELEASED_INSTANCE_ID: { errno: 111, retriable: false },
  STALE_MEMBER_EPOCH: { errno: 113, retriable: false },
  STORE_CLOSED: { errno: 1000, retriable: false },
  STORE_LOCKED: { errno: 1001, retriable: false },
  LOG_STORAGE_ERROR: { errno: 1002, retriable: false },
  GROUP_SUBSCRIBED_TO_BUCKET: { errno: 1003, retriable: false },
  BUCKET_NOT_ASSIGNED: { errno: 1004, retriable: false },
  TOO_MANY_PENDING_WRITES: { errno: 1005, retriable: true },
  INVALID_COMPACTION_PLAN: { errno: 1006, retriable: false },
  REPLICA_NO_SPACE: { errno: 1007, retriable: true },
  STORE_READ_ONLY: { errno: 1008, retriable: false },
} as const satisfies Record<string, ErrorCodeInfo>;

/** The name of an error code, e.g. `'CORRUPT_MESSAGE'`. */
export type ErrorCode = keyof typeof ERROR_CODES;
