/**
 * ApiVersions (key 18, v0-3): the API keys and version ranges this server advertises
 * (src/kafka/protocol/api-table.ts). A version this server does not advertise is answered by the
 * server itself, in the v0 format with UNSUPPORTED_VERSION, before a handler is asked (KIP-511: a
 * client parses it before it knows what the server speaks).
 */
import { advertisedApis, type API_KEYS } from '../protocol/index.js';
import type { RequestHandler } from './request-handler.js';

const ADVERTISED = advertisedApis();

/** Answers ApiVersions with the advertised ranges. */
export const handleApiVersions: RequestHandler<typeof API_KEYS.ApiVersions> = () => ({
  errorCode: 0,
  apiKeys: ADVERTISED,
  throttleTimeMs: 0,
});
