/**
 * ApiVersions (key 18, v0-3): the API keys and version ranges this server advertises
 * (src/kafka/protocol/api-table.ts). A version this server does not advertise is answered by the
 * server itself, in the v0 format with UNSUPPORTED_VERSION, before a handler is asked (KIP-511: a
 * client parses it before it knows what the server speaks).
 *
 * From v3 the client names its software and version (KIP-511); as in Kafka, each must be letters,
 * digits, '.' and '-', starting and ending with a letter or digit, or the answer is
 * INVALID_REQUEST with no API keys.
 */
import { KAFKA_ERROR, advertisedApis, type API_KEYS } from '../protocol/index.js';
import type { RequestHandler } from './request-handler.js';

const ADVERTISED = advertisedApis();
const SOFTWARE_FROM_VERSION = 3;
const SOFTWARE_PATTERN = /^[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?$/;

/** Answers ApiVersions with the advertised ranges. */
export const handleApiVersions: RequestHandler<typeof API_KEYS.ApiVersions> = (
  _context,
  request,
  header,
) =>
  header.apiVersion >= SOFTWARE_FROM_VERSION &&
  !(
    SOFTWARE_PATTERN.test(request.clientSoftwareName) &&
    SOFTWARE_PATTERN.test(request.clientSoftwareVersion)
  )
    ? { errorCode: KAFKA_ERROR.INVALID_REQUEST, apiKeys: [], throttleTimeMs: 0 }
    : { errorCode: 0, apiKeys: ADVERTISED, throttleTimeMs: 0 };
