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
 */
import { apiEntry, type ApiKey, type RequestInputOf, type RequestOf } from './api-table.js';
import { ByteWriter } from './byte-writer.js';
import { decodeRequestHeader, measureRequestHeader, writeRequestHeader, type RequestHeader, type RequestHeaderInput } from './headers.js';
import { KafkaDecodeError } from './kafka-decode-error.js';
import { decodeMessage } from './message-decoder.js';
import { MeasuredMessage } from './message-encoder.js';
import { inVersions } from './version-range.js';

/** Bytes of the size field in front of every request and response. */
export const FRAME_SIZE_BYTES = 4;

/** A decoded request; `apiKey` narrows `body` to that API's request type. */
export type DecodedRequest = { [K in ApiKey]: { readonly apiKey: K; readonly header: RequestHeader; readonly body: RequestOf<K> } }[ApiKey];

/**
 * Decodes a request payload. Throws a KafkaDecodeError (INVALID_REQUEST) for malformed bytes, for an
 * API key no table describes, and for a version its table does not describe; a server checks the
 * header (decodeRequestHeader, isAdvertised) first to answer an unsupported version properly.
 */
export function decodeRequest(payload: Buffer, header: RequestHeader = decodeRequestHeader(payload)): DecodedRequest {
  const entry = apiEntry(header.apiKey);
  if (entry === undefined) throw new KafkaDecodeError(`request header: unknown API key ${header.apiKey}`, 0);
  if (!inVersions(entry.request.versions, header.apiVersion)) {
    throw new KafkaDecodeError(`request header: ${entry.name} has no version ${header.apiVersion} (versions ${entry.request.versions})`, 2);
  }
  const body = decodeMessage(entry.request, header.apiVersion, payload, header.headerBytes, payload.length);
  return { apiKey: header.apiKey, header, body } as DecodedRequest;
}

/** Encodes a request as a frame (size, header, body). Throws TypeError/RangeError for invalid values. */
export function encodeRequest<K extends ApiKey>(header: RequestHeaderInput & { readonly apiKey: K }, body: RequestInputOf<K>): Buffer {
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
