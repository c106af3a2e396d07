/**
 * Whole responses: a header and body encoded into one framed buffer, ready for one socket write;
 * and a payload decoded back (for tests, tools and any future client).
 *
 * | bytes | field                                                      |
 * |-------|------------------------------------------------------------|
 * | 4     | size: bytes after this field (int32; encoders only)        |
 * | 4 (5) | response header: correlationId (+ empty tagged section v1) |
 * | ...   | body: the API's response table at the request's apiVersion |
 *
 * An ApiVersions request of a version the server does not advertise is answered in the v0 format
 * (error UNSUPPORTED_VERSION and the advertised ranges): encode that with apiVersion 0.
 */
import { apiEntry, type ApiKey, type ResponseInputOf, type ResponseOf } from './api-table.js';
import { ByteWriter } from './byte-writer.js';
import { decodeResponseHeader, responseHeaderBytes, writeResponseHeader } from './headers.js';
import { decodeMessage } from './message-decoder.js';
import { MeasuredMessage } from './message-encoder.js';
import { FRAME_SIZE_BYTES } from './request-codec.js';

/** What identifies a response: the request's API key and version, and its correlation id. */
export interface ResponseHeaderInput<K extends ApiKey = ApiKey> {
  readonly apiKey: K;
  readonly apiVersion: number;
  readonly correlationId: number;
}

/** A decoded response. */
export interface DecodedResponse<K extends ApiKey> {
  readonly correlationId: number;
  readonly body: ResponseOf<K>;
}

/** Encodes a response as a frame (size, header, body). Throws TypeError/RangeError for invalid values. */
export function encodeResponse<K extends ApiKey>(
  header: ResponseHeaderInput<K>,
  body: ResponseInputOf<K>,
): Buffer {
  const entry = apiEntry(header.apiKey);
  if (entry === undefined) throw new RangeError(`no table describes API key ${header.apiKey}`);
  if (
    !Number.isInteger(header.correlationId) ||
    header.correlationId < -0x80000000 ||
    header.correlationId > 0x7fffffff
  ) {
    throw new RangeError(`response correlationId must be an int32, got ${header.correlationId}`);
  }
  const measuredBody = new MeasuredMessage(entry.response, header.apiVersion, body);
  const payloadBytes = responseHeaderBytes(header.apiKey, header.apiVersion) + measuredBody.bytes;
  const writer = new ByteWriter(FRAME_SIZE_BYTES + payloadBytes);
  writer.int32(payloadBytes);
  writeResponseHeader(writer, header.apiKey, header.apiVersion, header.correlationId);
  measuredBody.writeTo(writer);
  return writer.finish();
}

/** Decodes a response payload of `apiVersion` of `apiKey`; throws a KafkaDecodeError for malformed bytes. */
export function decodeResponse<K extends ApiKey>(
  apiKey: K,
  apiVersion: number,
  payload: Buffer,
): DecodedResponse<K> {
  const entry = apiEntry(apiKey);
  if (entry === undefined) throw new RangeError(`no table describes API key ${apiKey}`);
  const { correlationId, headerBytes } = decodeResponseHeader(payload, apiKey, apiVersion);
  const body = decodeMessage(
    entry.response,
    apiVersion,
    payload,
    headerBytes,
    payload.length,
  ) as ResponseOf<K>;
  return { correlationId, body };
}
