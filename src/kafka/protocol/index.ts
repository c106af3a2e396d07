/**
 * src/kafka/protocol: Kafka's wire protocol for the messages a group-coordinator front end needs.
 * Schema tables (schemas/) describe Apache Kafka's messages; one interpreter of them
 * (message-encoder.ts, message-decoder.ts) encodes and decodes any message at any described
 * version, flexible or not; headers.ts and the request and response codecs frame them;
 * api-table.ts says what the server advertises; offset-commit-columns.ts reads OffsetCommit and
 * writes its response without the interpreter, for the server's hot path. Decoding is safe against
 * hostile bytes: it raises KafkaDecodeError (INVALID_REQUEST) and nothing else. Imports only errors
 * and util.
 */
export { KafkaDecodeError, isKafkaDecodeError } from './kafka-decode-error.js';
export {
  type VersionRange,
  type VersionBounds,
  versionBounds,
  inVersions,
  versionsOf,
} from './version-range.js';
export {
  ARRAY_ELEMENTS_MAX,
  STRING_BYTES_MAX,
  message,
  type DefaultValue,
  type FieldSpec,
  type FieldType,
  type MessageInput,
  type MessageSpec,
  type MessageValue,
  type ScalarType,
  type StructInput,
  type StructValue,
} from './schema.js';
export { ZERO_UUID } from './struct-plan.js';
export { ByteReader } from './byte-reader.js';
export { ByteWriter, unsignedVarintBytes, varintBytes, varlongBytes } from './byte-writer.js';
export { MeasuredMessage, encodeMessage } from './message-encoder.js';
export { decodeMessage } from './message-decoder.js';
export {
  API_KEYS,
  KAFKA_APIS,
  advertisedApis,
  apiEntry,
  isAdvertised,
  type AdvertisedApi,
  type ApiEntry,
  type ApiKey,
  type RequestInputOf,
  type RequestOf,
  type ResponseInputOf,
  type ResponseOf,
} from './api-table.js';
export {
  decodeRequestHeader,
  decodeResponseHeader,
  requestHeaderVersion,
  responseHeaderVersion,
  type RequestHeader,
  type RequestHeaderInput,
} from './headers.js';
export {
  FRAME_SIZE_BYTES,
  decodeRequest,
  encodeRequest,
  type DecodedRequest,
} from './request-codec.js';
export {
  decodeResponse,
  encodeResponse,
  type DecodedResponse,
  type ResponseHeaderInput,
} from './response-codec.js';
export {
  decodeOffsetCommitColumns,
  encodeOffsetCommitResponse,
  type OffsetCommitAnswerColumns,
  type OffsetCommitColumns,
} from './offset-commit-columns.js';
export { KAFKA_ERROR, type KafkaErrorCode } from './kafka-error-codes.js';
export * from './schemas/index.js';
