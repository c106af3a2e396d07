/**
 * The numbers of Apache Kafka's error codes (`org.apache.kafka.common.protocol.Errors`) that this
 * store's server puts on the wire. Numbers are Kafka's and never change; only the ones the server
 * answers with are listed. The store's own OffsetStoreError numbers below 1000 are these same codes
 * where the meaning is the same (src/errors), so most store errors go on the wire as they are.
 */

/** Kafka error codes by name. */
export const KAFKA_ERROR = {
  UNKNOWN_SERVER_ERROR: -1,
  NONE: 0,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  LEADER_NOT_AVAILABLE: 5,
  OFFSET_METADATA_TOO_LARGE: 12,
  COORDINATOR_LOAD_IN_PROGRESS: 14,
  COORDINATOR_NOT_AVAILABLE: 15,
  NOT_COORDINATOR: 16,
  INVALID_TOPIC_EXCEPTION: 17,
  ILLEGAL_GENERATION: 22,
  INCONSISTENT_GROUP_PROTOCOL: 23,
  INVALID_GROUP_ID: 24,
  UNKNOWN_MEMBER_ID: 25,
  INVALID_SESSION_TIMEOUT: 26,
  REBALANCE_IN_PROGRESS: 27,
  TOPIC_AUTHORIZATION_FAILED: 29,
  GROUP_AUTHORIZATION_FAILED: 30,
  CLUSTER_AUTHORIZATION_FAILED: 31,
  UNSUPPORTED_SASL_MECHANISM: 33,
  ILLEGAL_SASL_STATE: 34,
  UNSUPPORTED_VERSION: 35,
  INVALID_CONFIG: 40,
  INVALID_REQUEST: 42,
  POLICY_VIOLATION: 44,
  KAFKA_STORAGE_ERROR: 56,
  SASL_AUTHENTICATION_FAILED: 58,
  NON_EMPTY_GROUP: 68,
  GROUP_ID_NOT_FOUND: 69,
  MEMBER_ID_REQUIRED: 79,
  GROUP_MAX_SIZE_REACHED: 81,
  FENCED_INSTANCE_ID: 82,
  GROUP_SUBSCRIBED_TO_TOPIC: 86,
  UNSTABLE_OFFSET_COMMIT: 88,
  UNKNOWN_TOPIC_ID: 100,
  FENCED_MEMBER_EPOCH: 110,
  UNRELEASED_INSTANCE_ID: 111,
  UNSUPPORTED_ASSIGNOR: 112,
  STALE_MEMBER_EPOCH: 113,
  INVALID_REGULAR_EXPRESSION: 128,
} as const;

/** A Kafka error code this server answers with. */
export type KafkaErrorCode = (typeof KAFKA_ERROR)[keyof typeof KAFKA_ERROR];
