/**
 * Whole requests: a frame's payload decoded into header and typed body, and (for tests, tools and
 * any future client) a header and body encoded into one framed buffer.
 *
 * | bytes | field                                                     |
 * |-------|-----------------------------------------------------------|
 * | 4     | size: bytes after this field (int32; encoders only)       |
 * | ...   | request header (headers.ts)                               |
 * | ...   | body: the API's request table at the header's apiVersion  |
 *
 * Decoders take the payload (the bytes after the size field, as a frame reader hands them over);
 * encoders return the whole frame, measured first and written into one buffer.
 *
 * One client's malformed request is read as its sender means it: librdkafka 2.15
 * (rd_kafka_MetadataRequest0 in rdkafka_request.c) asks for all topics at Metadata v9+ with its
 * reserved int32 topic count left as four zero bytes where the compact null (one 0 byte) belongs.
 * Kafka's broker reads the first zero as null and ignores what is left over, misreading the flags
 * after it; the strict decoder refuses the 3 extra bytes. A Metadata v9+ body that begins with those
 * four zeros and does not decode is decoded again without the 3 extra ones (its error then stands
 * if that fails too): null topics, and the flags librdkafka wrote. A body that decodes as it is (four
 * zeros alone are a valid message) is read as it is.
 */
import {
  API_KEYS,
  apiEntry,
  type ApiKey,
  type RequestInputOf,
  type RequestOf,
} from './api-table.js';
import { ByteWriter } from './byte-writer.js';
import {
  decodeRequestHeader,
  measureRequestHeader,
  writeRequestHeader,
  type RequestHeader,
  type RequestHeaderInput,
} from './headers.js';
import { KafkaDecodeError } from './kafka-decode-error.js';
import { decodeMessage } from './message-decoder.js';
import { MeasuredMessage } from './message-encoder.js';
import { inVersions } from './version-range.js';

/** Bytes of the size field in front of every request and response. */
export const FRAME_SIZE_BYTES = 4;

/** A decoded request; `apiKey` narrows `body` to that API's request type. */
export type DecodedRequest = {
  [K in ApiKey]: {
    readonly apiKey: K;
    readonly header: RequestHeader;
    readonly body: RequestOf<K>;
  };
}[ApiKey];

/**
 * Decodes a request payload. Throws a KafkaDecodeError (INVALID_REQUEST) for malformed bytes, for an
 * API key no table describes, and for a version its table does not describe; a server checks the
 * header (decodeRequestHeader, isAdvertised) first to answer an unsupported version properly.
 */
export function decodeRequest(
  payload: Buffer,
  header: RequestHeader = decodeRequestHeader(payload),
): DecodedRequest {
  const entry = apiEntry(header.apiKey);
  if (entry === undefined)
    throw new KafkaDecodeError(`request header: unknown API key ${header.apiKey}`, 0);
  if (!inVersions(entry.request.versions, header.apiVersion)) {
    throw new KafkaDecodeError(
      `request header: ${entry.name} has no version ${header.apiVersion} (versions ${entry.request.versions})`,
      2,
    );
  }
  let body;
  try {
    body = decodeMessage(
      entry.request,
      header.apiVersion,
      payload,
      header.headerBytes,
      payload.length,
    );
  } catch (error) {
    if (!isZeroPaddedNullTopics(header, payload)) throw error;
    const repaired = Buffer.concat([
      payload.subarray(0, header.headerBytes + 1),
      payload.subarray(header.headerBytes + ZERO_PADDING_BYTES + 1),
    ]);
    body = decodeMessage(
      entry.request,
      header.apiVersion,
      repaired,
      header.headerBytes,
      repaired.length,
    );
  }
  return { apiKey: header.apiKey, header, body } as DecodedRequest;
}

/** Metadata's first flexible version: topics are a compact array from here. */
const METADATA_FLEXIBLE_FROM_VERSION = 9;
/** The zeros librdkafka leaves after the compact null of its all-topics Metadata request. */
const ZERO_PADDING_BYTES = 3;

/** Whether a Metadata v9+ body starts with librdkafka's four-zero topic count (see the module header). */
function isZeroPaddedNullTopics(header: RequestHeader, payload: Buffer): boolean {
  if (header.apiKey !== API_KEYS.Metadata || header.apiVersion < METADATA_FLEXIBLE_FROM_VERSION)
    return false;
  const start = header.headerBytes;
  if (payload.length < start + 1 + ZERO_PADDING_BYTES + 1) return false;
  for (let i = 0; i <= ZERO_PADDING_BYTES; i++) if (payload[start + i] !== 0) return false;
  return true;
}

/** Encodes a request as a frame (size, header, body). Throws TypeError/RangeError for invalid values. */
export function encodeRequest<K extends ApiKey>(
  header: RequestHeaderInput & { readonly apiKey: K },
  body: RequestInputOf<K>,
): Buffer {
  const entry = apiEntry(header.apiKey);
  if (entry === undefined) throw new RangeError(`no table describes API key ${header.apiKey}`);
  const measuredHeader = measureRequestHeader(header);
  const measuredBody = new MeasuredMessage(entry.request, header.apiVersion, body);
  const payloadBytes = measuredHeader.bytes + measuredBody.bytes;
  const writer = new ByteWriter(FRAME_SIZE_BYTES + payloadBytes);
  writer.int32(payloadBytes);
  writeRequestHeader(writer, header, measuredHeader);
  measuredBody.writeTo(writer);
  return writer.finish();
}
