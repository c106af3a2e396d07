/**
 * The heartbeat protocol (docs/group-protocol.md, "The heartbeat") and its validation at the
 * coordinator's edge.
 *
 * `normalizeHeartbeatRequest` is the only place request fields are checked: wrong types are
 * `TypeError`; values a well-typed caller can still get wrong are `INVALID_REQUEST` naming the field.
 * Every string here ends up in the group snapshot, so each must be well-formed UTF-16: a lone
 * surrogate is written as U+FFFD, and two ids that differ only there become one at reload.
 * Everything past it works on a `NormalizedHeartbeat` (nulls instead of optional fields, sorted
 * duplicate-free table ids, owned buckets as a BucketSet) and asserts instead of re-checking.
 */
import { OffsetStoreError } from '../errors/index.js';
import {
  NOT_WELL_FORMED,
  normalizeBucketRef,
  type TableBucket,
  type BucketRef,
} from '../model/index.js';
import { checkOptionsBag } from '../util/index.js';
import { BucketSet } from './bucket-set.js';
import { LEAVE_GROUP_STATIC_MEMBER_EPOCH } from './consumer-member.js';

/** What a member (or a front end on its behalf) sends. */
export interface HeartbeatRequest {
  /** Omitted on first join: the coordinator generates one. */
  memberId?: string;
  /** 0 = join, -1 = leave, -2 = static member leaving temporarily, > 0 = current epoch. */
  memberEpoch: number;
  /** Static membership id. */
  instanceId?: string;
  /** Required on join; afterwards only when it changes (sending it every time is fine). */
  subscribedTableIds?: readonly number[];
  /** Everything the member owns now; omit when unchanged (revocations then cannot complete). */
  ownedBuckets?: readonly BucketRef[];
  /** Time to release revoked buckets before being fenced (default 60 s). */
  rebalanceTimeoutMs?: number;
  /** Silence after which the member is removed (default 45 s). */
  sessionTimeoutMs?: number;
  /** Preferred assignor (`uniform` or `range`, or the name of one registered with the coordinator). */
  assignor?: string;
}

/** What the coordinator answers. */
export interface HeartbeatResponse {
  /** The member's id (the generated one after a first join). */
  memberId: string;
  /** The member's epoch now: send it in the next heartbeat and in commits; -1 or -2 after a leave. */
  memberEpoch: number;
  /** When to send the next heartbeat. */
  heartbeatIntervalMs: number;
  /** Present when it changed (or the member joined): the buckets the member may own now. */
  assignment?: TableBucket[];
}

/** A checked request; see the module header. */
export interface NormalizedHeartbeat {
  /** The member id, or null on a join without one. */
  readonly memberId: string | null;
  /** -2, -1, 0 or a positive epoch. */
  readonly memberEpoch: number;
  /** The static instance id, or null. */
  readonly instanceId: string | null;
  /** Sorted, duplicate-free table ids, or null when not sent (unchanged). */
  readonly subscribedTableIds: readonly number[] | null;
  /**
   * What the member reported owning, or null when it did not report (it is assumed to own everything it
   * did).
   */
  readonly ownedBuckets: BucketSet | null;
  /** The requested rebalance timeout in ms, or null to keep the member's (or the default). */
  readonly rebalanceTimeoutMs: number | null;
  /** The requested session timeout in ms, or null to keep the member's (or the default). */
  readonly sessionTimeoutMs: number | null;
  /** The preferred assignor (a registered name), or null to keep the member's. */
  readonly assignor: string | null;
}

/** Longest accepted member or instance id, in UTF-16 code units. */
export const MEMBER_ID_LENGTH_MAX = 255;
/** Most table ids one member may subscribe to. */
export const SUBSCRIBED_TABLES_MAX = 65_536;
/** Most entries of a subscription's array, duplicates included. */
const SUBSCRIBED_ENTRIES_MAX = 16 * SUBSCRIBED_TABLES_MAX;
/**
 * Most bytes a consumer group's snapshot is estimated to take (subscriptionSnapshotBytes) after a
 * subscription change. The snapshot holds every member's subscription, the layouts of the tables
 * subscribed to and the assignments, and is one batch of the log, at most 8 MiB: past it the group
 * could not be written, and a join that made it so would change the group in memory and then fail
 * every later write of it. About 80,000 distinct tables subscribed to by a group.
 */
export const GROUP_SNAPSHOT_BYTES_BUDGET = 7 * 1024 * 1024;
/** Longest accepted session or rebalance timeout (one day). */
export const MEMBER_TIMEOUT_MS_MAX = 86_400_000;
const HEARTBEAT_REQUEST_NAMES = [
  'memberId',
  'memberEpoch',
  'instanceId',
  'subscribedTableIds',
  'ownedBuckets',
  'rebalanceTimeoutMs',
  'sessionTimeoutMs',
  'assignor',
];

/**
 * Checks and normalizes a heartbeat request; `isAssignor` tells registered assignor names. Each
 * field (and each element of its arrays) is read once: what is checked is what the coordinator uses.
 */
export function normalizeHeartbeatRequest(
  request: HeartbeatRequest,
  isAssignor: (name: string) => boolean,
): NormalizedHeartbeat {
  checkOptionsBag(request, HEARTBEAT_REQUEST_NAMES, 'request', 'heartbeat request');
  const {
    memberEpoch,
    memberId: rawMemberId,
    instanceId: rawInstanceId,
    subscribedTableIds: rawTableIds,
    ownedBuckets: rawOwned,
  } = request;
  const { assignor: rawAssignor, rebalanceTimeoutMs, sessionTimeoutMs } = request;
  if (typeof memberEpoch !== 'number') throw new TypeError('memberEpoch must be a number');
  if (!Number.isSafeInteger(memberEpoch) || memberEpoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
    invalid(`memberEpoch must be -2, -1, 0 or a positive integer, got ${memberEpoch}`);
  }
  const memberId = optionalId(rawMemberId, 'memberId');
  const instanceId = optionalId(rawInstanceId, 'instanceId');
  if (memberEpoch !== 0 && memberId === null)
    invalid('memberId is required unless memberEpoch is 0');
  if (memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH && instanceId === null)
    invalid('instanceId is required with memberEpoch -2');
  const subscribedTableIds = rawTableIds === undefined ? null : tableIds(rawTableIds);
  if (memberEpoch === 0 && subscribedTableIds === null)
    invalid('subscribedTableIds is required when joining (memberEpoch 0)');
  // A joining member owns nothing, whether it says so or leaves the field out (as Kafka requires an
  // empty list on a join): read as "owns what it owned", a static member taking over its instance
  // was held at epoch 0 until its predecessor's buckets were revoked, which it could never report.
  const ownedBuckets =
    rawOwned === undefined ? (memberEpoch === 0 ? BucketSet.EMPTY : null) : owned(rawOwned);
  if (memberEpoch === 0 && ownedBuckets !== null && ownedBuckets.size > 0)
    invalid('ownedBuckets must be empty when joining (memberEpoch 0)');
  const assignor = rawAssignor === undefined ? null : rawAssignor;
  if (assignor !== null) {
    if (typeof assignor !== 'string') throw new TypeError('assignor must be a string');
    if (!assignor.isWellFormed()) invalid(`assignor ${NOT_WELL_FORMED}`);
    if (!isAssignor(assignor)) invalid(`assignor '${assignor}' is not registered`);
  }
  return {
    memberId,
    memberEpoch,
    instanceId,
    subscribedTableIds,
    ownedBuckets,
    rebalanceTimeoutMs: optionalTimeout(rebalanceTimeoutMs, 'rebalanceTimeoutMs'),
    sessionTimeoutMs: optionalTimeout(sessionTimeoutMs, 'sessionTimeoutMs'),
    assignor,
  };
}

function invalid(message: string): never {
  throw new OffsetStoreError('INVALID_REQUEST', message);
}

function optionalId(value: unknown, field: string): string | null {
  if (value === undefined) return null;
  if (typeof value !== 'string') throw new TypeError(`${field} must be a string`);
  if (value.length === 0 || value.length > MEMBER_ID_LENGTH_MAX)
    invalid(`${field} must be 1..${MEMBER_ID_LENGTH_MAX} characters`);
  if (!value.isWellFormed()) invalid(`${field} ${NOT_WELL_FORMED}`);
  return value;
}

/** Copies the ids out of the caller's array (one read per element), then checks the copy. */
function tableIds(value: readonly number[]): number[] {
  if (!Array.isArray(value)) throw new TypeError('subscribedTableIds must be an array');
  const count = value.length;
  // Duplicates are ignored, so the limit is on distinct tables; the array itself is bounded too,
  // so that no subscription makes the coordinator read an array of any length.
  if (count > SUBSCRIBED_ENTRIES_MAX)
    invalid(`subscribedTableIds holds ${count} entries, more than ${SUBSCRIBED_ENTRIES_MAX}`);
  const ids = new Set<number>();
  for (let i = 0; i < count; i++) {
    const id: unknown = value[i];
    if (typeof id !== 'number') throw new TypeError('subscribedTableIds must hold numbers');
    if (!Number.isSafeInteger(id) || id < 0)
      invalid(`subscribedTableIds must hold safe integers >= 0, got ${id}`);
    ids.add(id);
    if (ids.size > SUBSCRIBED_TABLES_MAX)
      invalid(`subscribedTableIds holds more than ${SUBSCRIBED_TABLES_MAX} distinct tables`);
  }
  return [...ids].sort((a, b) => a - b);
}

function owned(value: readonly BucketRef[]): BucketSet {
  if (!Array.isArray(value)) throw new TypeError('ownedBuckets must be an array');
  const count = value.length;
  const refs: TableBucket[] = new Array(count);
  for (let i = 0; i < count; i++)
    refs[i] = normalizeBucketRef(value[i] as BucketRef, `ownedBuckets[${i}]`);
  return BucketSet.of(refs);
}

function optionalTimeout(value: unknown, field: string): number | null {
  if (value === undefined) return null;
  if (typeof value !== 'number') throw new TypeError(`${field} must be a number`);
  if (!Number.isInteger(value) || value < 1 || value > MEMBER_TIMEOUT_MS_MAX)
    invalid(`${field} must be an integer in [1, ${MEMBER_TIMEOUT_MS_MAX}]`);
  return value;
}
