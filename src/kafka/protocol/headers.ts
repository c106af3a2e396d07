/**
 * Request and response headers, and which header version goes with which API version.
 *
 * Request header (v1 for non-flexible API versions, v2 for flexible ones):
 *
 * | bytes | field                                                                       |
 * |-------|-----------------------------------------------------------------------------|
 * | 2     | apiKey (int16)                                                              |
 * | 2     | apiVersion (int16)                                                          |
 * | 4     | correlationId (int32)                                                       |
 * | 2 + n | clientId: int16 length (-1 = null), UTF-8. Never compact, even in v2        |
 * | ...   | v2 only: tagged-field section (uvarint count; uvarint tag, size, bytes each)|
 *
 * Response header: correlationId (int32); v1 adds a tagged-field section. v1 goes with flexible
 * API versions, except that ApiVersions responses always use v0 (KIP-511): a client parses them
 * before it knows what the broker speaks.
 *
 * The header version follows from the API's flexible range, which is open-ended, so a version newer
 * than any table describes (say an ApiVersions v5 request) still gets the header Kafka's broker would
 * read, and the server can answer it. A key no table describes is read with header v1: enough to
 * answer with its correlation id. Header v0 (no client id, ControlledShutdown v0 only) is not spoken.
 */
import { apiEntry, API_KEYS } from './api-table.js';
import { ByteReader } from './byte-reader.js';
import type { ByteWriter } from './byte-writer.js';
import { STRING_BYTES_MAX } from './schema.js';
import { inVersions } from './version-range.js';

/** A decoded request header. */
export interface RequestHeader {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  /** The client id; Kafka's broker reads null as ''. */
  readonly clientId: string | null;
  readonly headerVersion: 1 | 2;
  /** Bytes the header took: the body starts at this position of the payload. */
  readonly headerBytes: number;
}

/** The fields of a request header to encode. */
export interface RequestHeaderInput {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly clientId: string | null;
}

/** The request header version of `apiVersion` of `apiKey`: 2 for flexible versions, else 1. */
export function requestHeaderVersion(apiKey: number, apiVersion: number): 1 | 2 {
  const entry = apiEntry(apiKey);
  return entry !== undefined && inVersions(entry.request.flexible, apiVersion) ? 2 : 1;
}

/** The response header version: 1 for flexible versions, else 0; always 0 for ApiVersions. */
export function responseHeaderVersion(apiKey: number, apiVersion: number): 0 | 1 {
  if (apiKey === API_KEYS.ApiVersions) return 0;
  const entry = apiEntry(apiKey);
  return entry !== undefined && inVersions(entry.response.flexible, apiVersion) ? 1 : 0;
}

/**
 * Decodes the header at the start of a request payload (the bytes after the frame's size field).
 * Throws a KafkaDecodeError for a truncated or malformed header.
 */
export function decodeRequestHeader(payload: Buffer): RequestHeader {
  const r = new ByteReader(payload, 0, payload.length, 'request header');
  const apiKey = r.int16('apiKey');
  const apiVersion = r.int16('apiVersion');
  const correlationId = r.int32('correlationId');
  const start = r.position;
  const clientIdBytes = r.int16('clientId');
  if (clientIdBytes < -1) r.fail(`clientId: negative length ${clientIdBytes}`, start);
  const clientId = clientIdBytes === -1 ? null : r.utf8(clientIdBytes, 'clientId');
  const headerVersion = requestHeaderVersion(apiKey, apiVersion);
  if (headerVersion === 2) skipTaggedFields(r);
  return { apiKey, apiVersion, correlationId, clientId, headerVersion, headerBytes: r.position };
}

/** Decodes a response header of `apiVersion` of `apiKey`; returns its correlation id and size. */
export function decodeResponseHeader(
  payload: Buffer,
  apiKey: number,
  apiVersion: number,
): { correlationId: number; headerBytes: number } {
  const r = new ByteReader(payload, 0, payload.length, 'response header');
  const correlationId = r.int32('correlationId');
  if (responseHeaderVersion(apiKey, apiVersion) === 1) skipTaggedFields(r);
  return { correlationId, headerBytes: r.position };
}

/** No header tag is defined; every tagged field is skipped by its size. */
function skipTaggedFields(r: ByteReader): void {
  const count = r.unsignedVarint('tagged field count');
  r.checkCount(count, 2, 'tagged fields');
  for (let i = 0; i < count; i++) {
    const tag = r.unsignedVarint('tag');
    r.skip(r.unsignedVarint(`size of tagged field ${tag}`), `tagged field ${tag}`);
  }
}

/** A request header measured for writing. */
export interface MeasuredRequestHeader {
  readonly bytes: number;
  readonly clientIdBytes: number;
}

/** Validates and measures a request header. */
export function measureRequestHeader(header: RequestHeaderInput): MeasuredRequestHeader {
  for (const [name, bits] of [
    ['apiKey', 16],
    ['apiVersion', 16],
    ['correlationId', 32],
  ] as const) {
    const value = header[name];
    if (!Number.isInteger(value) || value < -(2 ** (bits - 1)) || value >= 2 ** (bits - 1))
      throw new RangeError(`request header ${name} must be an int${bits}, got ${value}`);
  }
  const clientIdBytes = header.clientId === null ? -1 : Buffer.byteLength(header.clientId, 'utf8');
  if (clientIdBytes > STRING_BYTES_MAX)
    throw new RangeError(
      `request header clientId has ${clientIdBytes} UTF-8 bytes, more than ${STRING_BYTES_MAX}`,
    );
  const tagged = requestHeaderVersion(header.apiKey, header.apiVersion) === 2 ? 1 : 0;
  return { bytes: 10 + Math.max(0, clientIdBytes) + tagged, clientIdBytes };
}

/** Writes a request header measured by measureRequestHeader. */
export function writeRequestHeader(
  w: ByteWriter,
  header: RequestHeaderInput,
  measured: MeasuredRequestHeader,
): void {
  w.int16(header.apiKey);
  w.int16(header.apiVersion);
  w.int32(header.correlationId);
  w.int16(measured.clientIdBytes);
  if (header.clientId !== null) w.utf8(header.clientId, measured.clientIdBytes);
  if (requestHeaderVersion(header.apiKey, header.apiVersion) === 2) w.unsignedVarint(0);
}

/** Bytes of the response header of `apiVersion` of `apiKey`. */
export function responseHeaderBytes(apiKey: number, apiVersion: number): number {
  return responseHeaderVersion(apiKey, apiVersion) === 1 ? 5 : 4;
}

/** Writes a response header with no tagged fields. */
export function writeResponseHeader(
  w: ByteWriter,
  apiKey: number,
  apiVersion: number,
  correlationId: number,
): void {
  w.int32(correlationId);
  if (responseHeaderVersion(apiKey, apiVersion) === 1) w.unsignedVarint(0);
}
