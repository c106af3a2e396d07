/**
 * From the store's errors to Kafka's error codes on the wire. The store's codes below 1000 are
 * Kafka's numbers with Kafka's meaning (src/errors) and go out as they are; the rest are mapped to
 * the Kafka code a client acts on correctly:
 *
 * | store code                   | Kafka code                     | why                                                  |
 * |------------------------------|--------------------------------|------------------------------------------------------|
 * | STORE_CLOSED                 | COORDINATOR_NOT_AVAILABLE (15) | the server is shutting down: find the coordinator again |
 * | TOO_MANY_PENDING_WRITES      | COORDINATOR_NOT_AVAILABLE (15) | retriable overload, as Kafka's coordinator reports it |
 * | REPLICA_NO_SPACE             | COORDINATOR_NOT_AVAILABLE (15) | a cluster's etcd is out of space: retriable once an operator frees it |
 * | LOG_STORAGE_ERROR            | KAFKA_STORAGE_ERROR (56)       | the offsets-bucket's log failed (a broker's disk error) |
 * | CORRUPT_MESSAGE              | KAFKA_STORAGE_ERROR (56)       | an offsets-bucket refused to load: a disk problem, not a bad request |
 * | GROUP_SUBSCRIBED_TO_BUCKET   | GROUP_SUBSCRIBED_TO_TOPIC (86) | same rule, Kafka's name                              |
 * | BUCKET_NOT_ASSIGNED          | STALE_MEMBER_EPOCH (113)       | the member's view of its assignment is behind: heartbeat, then retry |
 * | STORE_LOCKED, STORE_READ_ONLY, anything else | UNKNOWN_SERVER_ERROR (-1) |                                        |
 *
 * An error that is not an OffsetStoreError is a bug: UNKNOWN_SERVER_ERROR, and the caller reports it.
 */
import { OffsetStoreError, type ErrorCode } from '../../errors/index.js';
import { cutWellFormed } from '../../model/index.js';
import { KAFKA_ERROR } from '../protocol/index.js';

/** Longest error message a response carries, in UTF-16 code units (well under a string's 32,767 bytes). */
export const ERROR_MESSAGE_LENGTH_MAX = 1024;

/**
 * An error message as a response carries it: messages quote what a client sent (an assignor's
 * name, a topic, an expression), which may be longer than a response's string can hold; past
 * ERROR_MESSAGE_LENGTH_MAX it is cut and marked.
 */
export function errorMessageOf(message: string): string {
  return message.length <= ERROR_MESSAGE_LENGTH_MAX
    ? message
    : `${cutWellFormed(message, ERROR_MESSAGE_LENGTH_MAX - 3)}...`;
}

const MAPPED: Partial<Record<ErrorCode, number>> = {
  STORE_CLOSED: KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE,
  TOO_MANY_PENDING_WRITES: KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE,
  REPLICA_NO_SPACE: KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE,
  LOG_STORAGE_ERROR: KAFKA_ERROR.KAFKA_STORAGE_ERROR,
  CORRUPT_MESSAGE: KAFKA_ERROR.KAFKA_STORAGE_ERROR,
  GROUP_SUBSCRIBED_TO_BUCKET: KAFKA_ERROR.GROUP_SUBSCRIBED_TO_TOPIC,
  BUCKET_NOT_ASSIGNED: KAFKA_ERROR.STALE_MEMBER_EPOCH,
};

/** The Kafka error code for an error a store call raised. */
export function kafkaErrorCode(error: unknown): number {
  if (!(error instanceof OffsetStoreError)) return KAFKA_ERROR.UNKNOWN_SERVER_ERROR;
  const mapped = MAPPED[error.code];
  if (mapped !== undefined) return mapped;
  return error.errno < 1000 ? error.errno : KAFKA_ERROR.UNKNOWN_SERVER_ERROR;
}
