/**
 * The Kafka APIs this store's server speaks: for each API key, its request and response tables and
 * the versions the server advertises in ApiVersions. The ranges are the ones found to satisfy the
 * three client families the server is for, and the version each picks from them:
 *
 * | key | API                     | advertised | kafkajs 2.2.4 | librdkafka 2.15 | platformatic 1.35 |
 * |-----|-------------------------|------------|---------------|-----------------|-------------------|
 * | 18  | ApiVersions             | 0-3        | 2             | 3               | 3                 |
 * | 3   | Metadata                | 0-12       | 6             | 12              | 12                |
 * | 10  | FindCoordinator         | 0-4        | 2             | 2               | 4                 |
 * | 11  | JoinGroup               | 0-6        | 5             | 5               | 6                 |
 * | 14  | SyncGroup               | 0-4        | 3             | 3               | 4                 |
 * | 12  | Heartbeat               | 0-4        | 3             | 3               | 4                 |
 * | 13  | LeaveGroup              | 0-4        | 3             | 1               | 4                 |
 * | 8   | OffsetCommit            | 2-9        | 5             | 9               | 9                 |
 * | 9   | OffsetFetch             | 1-9        | 4             | 9               | 9                 |
 * | 2   | ListOffsets             | 1-6        | 3             | 6               | 6                 |
 * | 1   | Fetch                   | 4-12       | 11            | 12              | 12                |
 * | 15  | DescribeGroups          | 0-5        | 2             | 5               | 5                 |
 * | 16  | ListGroups              | 0-5        | 2             | 4               | 5                 |
 * | 42  | DeleteGroups            | 0-2        | 1             | 2               | 2                 |
 * | 47  | OffsetDelete            | 0          | -             | 0               | 0                 |
 * | 68  | ConsumerGroupHeartbeat  | 0-1        | -             | 1               | 1                 |
 * | 0   | Produce                 | 3-9        | -             | -               | -                 |
 * | 69  | ConsumerGroupDescribe   | 0          | -             | -               | -                 |
 * | 17  | SaslHandshake           | 1          | 1             | 1               | 1                 |
 * | 36  | SaslAuthenticate        | 0-2        | 1             | 2               | 2                 |
 *
 * Why these bounds: kafkajs uses only non-flexible versions and picks min(its max, ours) ignoring our
 * minimum; @platformatic/kafka uses only flexible ones; librdkafka speaks both. Fetch stops at 12 and
 * FindCoordinator at 4 because later versions name topics by id (Fetch 13+) or batch keys. Produce is
 * advertised only because librdkafka will not Fetch without Produce >= 3; every produce is answered
 * with an error. ConsumerGroupDescribe (69) is what Kafka's admin tools send to describe a KIP-848
 * group; none of the three clients' consumers needs it. ListGroups goes to v5, which filters and
 * reports groups by type: Kafka 4's admin tools ask for it to list groups of a type.
 * SaslHandshake is advertised at v1 only: v0
 * would make the tokens that follow bare frames instead of SaslAuthenticate requests (KIP-152).
 */
import type { MessageInput, MessageSpec, MessageValue } from './schema.js';
import {
  API_VERSIONS_REQUEST,
  API_VERSIONS_RESPONSE,
  CONSUMER_GROUP_DESCRIBE_REQUEST,
  CONSUMER_GROUP_DESCRIBE_RESPONSE,
  CONSUMER_GROUP_HEARTBEAT_REQUEST,
  CONSUMER_GROUP_HEARTBEAT_RESPONSE,
  DELETE_GROUPS_REQUEST,
  DELETE_GROUPS_RESPONSE,
  DESCRIBE_GROUPS_REQUEST,
  DESCRIBE_GROUPS_RESPONSE,
  FETCH_REQUEST,
  FETCH_RESPONSE,
  FIND_COORDINATOR_REQUEST,
  FIND_COORDINATOR_RESPONSE,
  HEARTBEAT_REQUEST,
  HEARTBEAT_RESPONSE,
  JOIN_GROUP_REQUEST,
  JOIN_GROUP_RESPONSE,
  LEAVE_GROUP_REQUEST,
  LEAVE_GROUP_RESPONSE,
  LIST_GROUPS_REQUEST,
  LIST_GROUPS_RESPONSE,
  LIST_OFFSETS_REQUEST,
  LIST_OFFSETS_RESPONSE,
  METADATA_REQUEST,
  METADATA_RESPONSE,
  OFFSET_COMMIT_REQUEST,
  OFFSET_COMMIT_RESPONSE,
  OFFSET_DELETE_REQUEST,
  OFFSET_DELETE_RESPONSE,
  OFFSET_FETCH_REQUEST,
  OFFSET_FETCH_RESPONSE,
  PRODUCE_REQUEST,
  PRODUCE_RESPONSE,
  SASL_AUTHENTICATE_REQUEST,
  SASL_AUTHENTICATE_RESPONSE,
  SASL_HANDSHAKE_REQUEST,
  SASL_HANDSHAKE_RESPONSE,
  SYNC_GROUP_REQUEST,
  SYNC_GROUP_RESPONSE,
} from './schemas/index.js';

/** One API: its tables and the versions advertised (null: described, not advertised). */
export interface ApiEntry {
  readonly name: string;
  readonly request: MessageSpec;
  readonly response: MessageSpec;
  readonly advertised: { readonly min: number; readonly max: number } | null;
}

/** Every API this codec describes, by API key. */
export const KAFKA_APIS = {
  0: {
    name: 'Produce',
    request: PRODUCE_REQUEST,
    response: PRODUCE_RESPONSE,
    advertised: { min: 3, max: 9 },
  },
  1: {
    name: 'Fetch',
    request: FETCH_REQUEST,
    response: FETCH_RESPONSE,
    advertised: { min: 4, max: 12 },
  },
  2: {
    name: 'ListOffsets',
    request: LIST_OFFSETS_REQUEST,
    response: LIST_OFFSETS_RESPONSE,
    advertised: { min: 1, max: 6 },
  },
  3: {
    name: 'Metadata',
    request: METADATA_REQUEST,
    response: METADATA_RESPONSE,
    advertised: { min: 0, max: 12 },
  },
  8: {
    name: 'OffsetCommit',
    request: OFFSET_COMMIT_REQUEST,
    response: OFFSET_COMMIT_RESPONSE,
    advertised: { min: 2, max: 9 },
  },
  9: {
    name: 'OffsetFetch',
    request: OFFSET_FETCH_REQUEST,
    response: OFFSET_FETCH_RESPONSE,
    advertised: { min: 1, max: 9 },
  },
  10: {
    name: 'FindCoordinator',
    request: FIND_COORDINATOR_REQUEST,
    response: FIND_COORDINATOR_RESPONSE,
    advertised: { min: 0, max: 4 },
  },
  11: {
    name: 'JoinGroup',
    request: JOIN_GROUP_REQUEST,
    response: JOIN_GROUP_RESPONSE,
    advertised: { min: 0, max: 6 },
  },
  12: {
    name: 'Heartbeat',
    request: HEARTBEAT_REQUEST,
    response: HEARTBEAT_RESPONSE,
    advertised: { min: 0, max: 4 },
  },
  13: {
    name: 'LeaveGroup',
    request: LEAVE_GROUP_REQUEST,
    response: LEAVE_GROUP_RESPONSE,
    advertised: { min: 0, max: 4 },
  },
  14: {
    name: 'SyncGroup',
    request: SYNC_GROUP_REQUEST,
    response: SYNC_GROUP_RESPONSE,
    advertised: { min: 0, max: 4 },
  },
  15: {
    name: 'DescribeGroups',
    request: DESCRIBE_GROUPS_REQUEST,
    response: DESCRIBE_GROUPS_RESPONSE,
    advertised: { min: 0, max: 5 },
  },
  16: {
    name: 'ListGroups',
    request: LIST_GROUPS_REQUEST,
    response: LIST_GROUPS_RESPONSE,
    advertised: { min: 0, max: 5 },
  },
  17: {
    name: 'SaslHandshake',
    request: SASL_HANDSHAKE_REQUEST,
    response: SASL_HANDSHAKE_RESPONSE,
    advertised: { min: 1, max: 1 },
  },
  18: {
    name: 'ApiVersions',
    request: API_VERSIONS_REQUEST,
    response: API_VERSIONS_RESPONSE,
    advertised: { min: 0, max: 3 },
  },
  36: {
    name: 'SaslAuthenticate',
    request: SASL_AUTHENTICATE_REQUEST,
    response: SASL_AUTHENTICATE_RESPONSE,
    advertised: { min: 0, max: 2 },
  },
  42: {
    name: 'DeleteGroups',
    request: DELETE_GROUPS_REQUEST,
    response: DELETE_GROUPS_RESPONSE,
    advertised: { min: 0, max: 2 },
  },
  47: {
    name: 'OffsetDelete',
    request: OFFSET_DELETE_REQUEST,
    response: OFFSET_DELETE_RESPONSE,
    advertised: { min: 0, max: 0 },
  },
  68: {
    name: 'ConsumerGroupHeartbeat',
    request: CONSUMER_GROUP_HEARTBEAT_REQUEST,
    response: CONSUMER_GROUP_HEARTBEAT_RESPONSE,
    advertised: { min: 0, max: 1 },
  },
  69: {
    name: 'ConsumerGroupDescribe',
    request: CONSUMER_GROUP_DESCRIBE_REQUEST,
    response: CONSUMER_GROUP_DESCRIBE_RESPONSE,
    advertised: { min: 0, max: 0 },
  },
} as const satisfies Record<number, ApiEntry>;

/** An API key this codec describes. */
export type ApiKey = keyof typeof KAFKA_APIS;

/** API keys by name, for readable switches: `case API_KEYS.OffsetCommit:`. */
export const API_KEYS = {
  Produce: 0,
  Fetch: 1,
  ListOffsets: 2,
  Metadata: 3,
  OffsetCommit: 8,
  OffsetFetch: 9,
  FindCoordinator: 10,
  JoinGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  SyncGroup: 14,
  DescribeGroups: 15,
  ListGroups: 16,
  SaslHandshake: 17,
  ApiVersions: 18,
  SaslAuthenticate: 36,
  DeleteGroups: 42,
  OffsetDelete: 47,
  ConsumerGroupHeartbeat: 68,
  ConsumerGroupDescribe: 69,
} as const satisfies Record<string, ApiKey>;

/** The decoded request body of API `K`. */
export type RequestOf<K extends ApiKey> = MessageValue<(typeof KAFKA_APIS)[K]['request']>;
/** A request body of API `K` to encode. */
export type RequestInputOf<K extends ApiKey> = MessageInput<(typeof KAFKA_APIS)[K]['request']>;
/** The decoded response body of API `K`. */
export type ResponseOf<K extends ApiKey> = MessageValue<(typeof KAFKA_APIS)[K]['response']>;
/** A response body of API `K` to encode. */
export type ResponseInputOf<K extends ApiKey> = MessageInput<(typeof KAFKA_APIS)[K]['response']>;

const BY_KEY: ReadonlyMap<number, ApiEntry> = new Map(
  Object.entries(KAFKA_APIS).map(([key, entry]) => [Number(key), entry]),
);

/** The entry of `apiKey`, or undefined for a key this codec does not describe. */
export function apiEntry(apiKey: number): ApiEntry | undefined {
  return BY_KEY.get(apiKey);
}

/** True when the server advertises `version` of `apiKey`. */
export function isAdvertised(apiKey: number, version: number): boolean {
  const advertised = BY_KEY.get(apiKey)?.advertised;
  return advertised != null && version >= advertised.min && version <= advertised.max;
}

/** One row of an ApiVersions response. */
export interface AdvertisedApi {
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
}

/** The advertised ranges, by increasing API key: the `apiKeys` of an ApiVersions response. */
export function advertisedApis(): AdvertisedApi[] {
  const rows: AdvertisedApi[] = [];
  for (const [apiKey, entry] of BY_KEY) {
    if (entry.advertised !== null)
      rows.push({ apiKey, minVersion: entry.advertised.min, maxVersion: entry.advertised.max });
  }
  return rows.sort((a, b) => a.apiKey - b.apiKey);
}
