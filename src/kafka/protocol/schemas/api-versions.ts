/**
 * ApiVersions (key 18), versions 0-4, flexible from 3. Describes Apache Kafka's protocol (the message
 * schemas of Kafka trunk, October 2024: the 4.0 line), in this project's table form (schema.ts).
 *
 * A client's first request on every connection. v1 adds throttleTimeMs; v3 (KIP-511) names the
 * client software and carries broker features as tagged fields; v4 changes only what v0-v3 may omit.
 * The response header is v0 at every version (headers.ts): the client cannot know yet whether the
 * broker speaks flexible versions. An unsupported request version is answered in the v0 format.
 */
import { message, type MessageInput, type MessageValue } from '../schema.js';

/** ApiVersions request table. */
export const API_VERSIONS_REQUEST = message({
  name: 'ApiVersionsRequest',
  apiKey: 18,
  kind: 'request',
  versions: '0-4',
  flexible: '3+',
  fields: [
    { name: 'clientSoftwareName', type: 'string', versions: '3+' },
    { name: 'clientSoftwareVersion', type: 'string', versions: '3+' },
  ],
});

/** ApiVersions response table. */
export const API_VERSIONS_RESPONSE = message({
  name: 'ApiVersionsResponse',
  apiKey: 18,
  kind: 'response',
  versions: '0-4',
  flexible: '3+',
  fields: [
    { name: 'errorCode', type: 'int16', versions: '0+' },
    {
      name: 'apiKeys',
      type: '[]struct',
      versions: '0+',
      fields: [
        { name: 'apiKey', type: 'int16', versions: '0+' },
        { name: 'minVersion', type: 'int16', versions: '0+' },
        { name: 'maxVersion', type: 'int16', versions: '0+' },
      ],
    },
    { name: 'throttleTimeMs', type: 'int32', versions: '1+' },
    {
      name: 'supportedFeatures',
      type: '[]struct',
      versions: '3+',
      tag: 0,
      fields: [
        { name: 'name', type: 'string', versions: '3+' },
        { name: 'minVersion', type: 'int16', versions: '3+' },
        { name: 'maxVersion', type: 'int16', versions: '3+' },
      ],
    },
    { name: 'finalizedFeaturesEpoch', type: 'int64', versions: '3+', tag: 1, default: -1 },
    {
      name: 'finalizedFeatures',
      type: '[]struct',
      versions: '3+',
      tag: 2,
      fields: [
        { name: 'name', type: 'string', versions: '3+' },
        { name: 'maxVersionLevel', type: 'int16', versions: '3+' },
        { name: 'minVersionLevel', type: 'int16', versions: '3+' },
      ],
    },
    { name: 'zkMigrationReady', type: 'bool', versions: '3+', tag: 3 },
  ],
});

/** A decoded ApiVersions request. */
export type ApiVersionsRequest = MessageValue<typeof API_VERSIONS_REQUEST>;
/** A decoded ApiVersions response. */
export type ApiVersionsResponse = MessageValue<typeof API_VERSIONS_RESPONSE>;
/** An ApiVersions response to encode. */
export type ApiVersionsResponseInput = MessageInput<typeof API_VERSIONS_RESPONSE>;
