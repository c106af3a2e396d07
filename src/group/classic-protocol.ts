/**
 * The classic group protocol's requests and results (docs/group-protocol.md, "Classic protocol"),
 * one pair per Kafka API (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), and their validation at the
 * coordinator's edge, in the manner of heartbeat.ts: wrong types are TypeError; values a well-typed
 * caller can still get wrong are INVALID_REQUEST naming the field (a session timeout out of range is
 * INVALID_SESSION_TIMEOUT, as in Kafka). Each field of the caller's object is read once; bytes are
 * copied, so a caller that reuses its buffers cannot change what the group holds.
 *
 * Everything past the edge works on the Normalized forms: an empty member id is null (a new member),
 * optional fields have their defaults.
 */
import { OffsetStoreError } from '../errors/index.js';
import { NOT_WELL_FORMED } from '../model/index.js';
import { checkOptionsBag, checkOptionsObject } from '../util/index.js';
import type { ClassicJoinMember } from './classic-group.js';
import type { ClassicProtocol } from './classic-member.js';
import { MEMBER_ID_LENGTH_MAX, MEMBER_TIMEOUT_MS_MAX } from './heartbeat.js';

/** Longest protocol type, protocol name, client id or client host, in UTF-16 code units. */
export const CLASSIC_NAME_LENGTH_MAX = 255;
/** Most protocols one JoinGroup may offer. */
export const CLASSIC_PROTOCOLS_MAX = 64;
/** Largest metadata of one protocol, or assignment of one member, in bytes. */
export const CLASSIC_BYTES_MAX = 1024 * 1024;
/** Most member assignments in one SyncGroup. */
export const CLASSIC_ASSIGNMENTS_MAX = 65_536;
/**
 * Most bytes a classic group's members may take in its snapshot (an upper bound, see
 * `memberSnapshotBytes`): a snapshot is one batch, at most 8 MiB encoded; a JoinGroup or a leader's
 * SyncGroup that would take the group past this is INVALID_REQUEST and changes nothing.
 */
export const CLASSIC_SNAPSHOT_BYTES_MAX = 7 * 1024 * 1024;

/** A protocol a member offers, as a caller passes it. */
export interface ClassicProtocolInput {
  /** The protocol's name (an assignor name for consumers), 1 to 255 characters. */
  name: string;
  /** The member's metadata for it, at most 1 MiB; copied. */
  metadata: Uint8Array;
}

/** A JoinGroup. */
export interface ClassicJoinGroupRequest {
  /** The member's id; omitted or '' for a member joining for the first time. */
  memberId?: string;
  /** Static membership id (`group.instance.id`); omitted or null for a dynamic member. */
  groupInstanceId?: string | null;
  /** The protocol type, e.g. `consumer`; every member of a group has the same. */
  protocolType: string;
  /** The protocols the member offers, in its order of preference: 1 to 64, names unique. */
  protocols: readonly ClassicProtocolInput[];
  /** Silence after which the member is removed, in ms: 1 to 86,400,000 (INVALID_SESSION_TIMEOUT outside). */
  sessionTimeoutMs: number;
  /** Time the group waits for the member to rejoin, in ms; omitted or -1: the session timeout (JoinGroup v0). */
  rebalanceTimeoutMs?: number;
  /**
   * Answer a new dynamic member with a member id to rejoin with instead of joining it (KIP-394,
   * JoinGroup v4+): `outcome: 'member-id-required'`. Default false (v0-3: it joins at once).
   */
  requireKnownMemberId?: boolean;
  /** The client understands `skipAssignment` (JoinGroup v9+); default false. */
  supportsSkipAssignment?: boolean;
  /** The client's id (prefix of a generated member id; shown by describeGroup); default ''. */
  clientId?: string;
  /** The client's host (shown by describeGroup); default ''. */
  clientHost?: string;
}

/** One member in a leader's JoinGroup answer. */
export type { ClassicJoinMember };

/** JoinGroup answered: the member is in the generation. */
export interface ClassicJoinedGroup {
  /** Discriminant. */
  outcome: 'joined';
  /** The member's id (the generated one after a first join). */
  memberId: string;
  /** The generation it joined; send it in SyncGroup, Heartbeat and commits. */
  generationId: number;
  /** The group's protocol type. */
  protocolType: string;
  /** The protocol selected for the generation. */
  protocolName: string;
  /** The leader's member id: the leader computes every member's assignment. */
  leader: string;
  /** True when the leader need not compute assignments (a static leader rejoining, JoinGroup v9+). */
  skipAssignment: boolean;
  /** For the leader: every member with its metadata for the selected protocol; empty for the others. */
  members: ClassicJoinMember[];
}

/** JoinGroup answered MEMBER_ID_REQUIRED (errno 79): join again with `memberId`. */
export interface ClassicMemberIdRequired {
  /** Discriminant. */
  outcome: 'member-id-required';
  /** The member id to join with. */
  memberId: string;
}

/** What a JoinGroup resolves with; failures reject with an OffsetStoreError. */
export type ClassicJoinGroupResult = ClassicJoinedGroup | ClassicMemberIdRequired;

/** A SyncGroup. */
export interface ClassicSyncGroupRequest {
  /** The member's id. */
  memberId: string;
  /** The generation from its JoinGroup answer. */
  generationId: number;
  /** Its static instance id, if static. */
  groupInstanceId?: string | null;
  /** The group's protocol type, when the client sends it (SyncGroup v5+): checked. */
  protocolType?: string | null;
  /** The selected protocol, when the client sends it (v5+): checked. */
  protocolName?: string | null;
  /** The leader's assignments (followers send none): at most 65,536, each at most 1 MiB; copied. */
  assignments?: readonly { memberId: string; assignment: Uint8Array }[];
}

/** What a SyncGroup resolves with. */
export interface ClassicSyncGroupResult {
  /** The group's protocol type. */
  protocolType: string | null;
  /** The generation's protocol. */
  protocolName: string | null;
  /** The member's assignment; empty when the leader gave it none. */
  assignment: Buffer;
}

/** A Heartbeat. */
export interface ClassicHeartbeatRequest {
  /** The member's id. */
  memberId: string;
  /** Its generation. */
  generationId: number;
  /** Its static instance id, if static. */
  groupInstanceId?: string | null;
}

/** A LeaveGroup: one member (v0-2) or several (v3+), each answered on its own. */
export interface ClassicLeaveGroupRequest {
  /** The leaving members: 1 to 65,536; a static member may be named by instance id alone (memberId ''). */
  members: readonly { memberId?: string; groupInstanceId?: string | null }[];
}

/** What a LeaveGroup resolves with: one answer per member, in request order. */
export interface ClassicLeaveGroupResult {
  /** The answers. */
  members: {
    memberId: string;
    groupInstanceId: string | null;
    errorCode: 'UNKNOWN_MEMBER_ID' | 'FENCED_INSTANCE_ID' | null;
  }[];
}

/** A checked JoinGroup. */
export interface NormalizedClassicJoin {
  /** Null for a new member. */
  readonly memberId: string | null;
  /** Null for a dynamic member. */
  readonly groupInstanceId: string | null;
  /** Non-empty unless the caller sent ''. */
  readonly protocolType: string;
  /** Copied, names unique. */
  readonly protocols: readonly ClassicProtocol[];
  /** In [1, MEMBER_TIMEOUT_MS_MAX]. */
  readonly sessionTimeoutMs: number;
  /** In [1, MEMBER_TIMEOUT_MS_MAX]. */
  readonly rebalanceTimeoutMs: number;
  /** KIP-394. */
  readonly requireKnownMemberId: boolean;
  /** JoinGroup v9+. */
  readonly supportsSkipAssignment: boolean;
  /** Possibly ''. */
  readonly clientId: string;
  /** Possibly ''. */
  readonly clientHost: string;
}

/** A checked SyncGroup. */
export interface NormalizedClassicSync {
  /** Possibly '' (no such member). */
  readonly memberId: string;
  /** A safe integer. */
  readonly generationId: number;
  /** Null for a dynamic member. */
  readonly groupInstanceId: string | null;
  /** Null when not sent. */
  readonly protocolType: string | null;
  /** Null when not sent. */
  readonly protocolName: string | null;
  /** member id -> assignment (the last one for an id sent twice), copied. */
  readonly assignments: ReadonlyMap<string, Buffer>;
}

/** A checked Heartbeat. */
export interface NormalizedClassicHeartbeat {
  /** Possibly '' (no such member). */
  readonly memberId: string;
  /** A safe integer. */
  readonly generationId: number;
  /** Null for a dynamic member. */
  readonly groupInstanceId: string | null;
}

/** A checked LeaveGroup. */
export interface NormalizedClassicLeave {
  /** In request order; memberId '' names a static member by instance id. */
  readonly members: readonly {
    readonly memberId: string;
    readonly groupInstanceId: string | null;
  }[];
}

/** Checks and normalizes a JoinGroup; see the module header. */
export function normalizeClassicJoin(request: ClassicJoinGroupRequest): NormalizedClassicJoin {
  const r = object(request, 'the JoinGroup request', [
    'memberId',
    'groupInstanceId',
    'protocolType',
    'protocols',
    'sessionTimeoutMs',
    'rebalanceTimeoutMs',
    'requireKnownMemberId',
    'supportsSkipAssignment',
    'clientId',
    'clientHost',
  ]);
  const {
    memberId,
    groupInstanceId,
    protocolType,
    protocols,
    sessionTimeoutMs,
    rebalanceTimeoutMs,
    requireKnownMemberId,
    supportsSkipAssignment,
    clientId,
    clientHost,
  } = r;
  const session = timeout(sessionTimeoutMs, 'sessionTimeoutMs', 'INVALID_SESSION_TIMEOUT');
  const rebalance =
    rebalanceTimeoutMs === undefined || rebalanceTimeoutMs === -1
      ? session
      : timeout(rebalanceTimeoutMs, 'rebalanceTimeoutMs', 'INVALID_REQUEST');
  const id = string(memberId ?? '', 'memberId', MEMBER_ID_LENGTH_MAX);
  return {
    memberId: id === '' ? null : id,
    groupInstanceId: instanceId(groupInstanceId),
    protocolType: string(protocolType, 'protocolType', CLASSIC_NAME_LENGTH_MAX),
    protocols: protocolList(protocols),
    sessionTimeoutMs: session,
    rebalanceTimeoutMs: rebalance,
    requireKnownMemberId: flag(requireKnownMemberId, 'requireKnownMemberId'),
    supportsSkipAssignment: flag(supportsSkipAssignment, 'supportsSkipAssignment'),
    clientId: string(clientId ?? '', 'clientId', CLASSIC_NAME_LENGTH_MAX),
    clientHost: string(clientHost ?? '', 'clientHost', CLASSIC_NAME_LENGTH_MAX),
  };
}

/** Checks and normalizes a SyncGroup. */
export function normalizeClassicSync(request: ClassicSyncGroupRequest): NormalizedClassicSync {
  const { memberId, generationId, groupInstanceId, protocolType, protocolName, assignments } =
    object(request, 'the SyncGroup request', [
      'memberId',
      'generationId',
      'groupInstanceId',
      'protocolType',
      'protocolName',
      'assignments',
    ]);
  const list = assignments ?? [];
  if (!Array.isArray(list)) throw new TypeError('assignments must be an array');
  const count = list.length;
  if (count > CLASSIC_ASSIGNMENTS_MAX)
    invalid(`assignments holds more than ${CLASSIC_ASSIGNMENTS_MAX} entries`);
  const map = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    const { memberId: id, assignment } = object(list[i], `assignments[${i}]`);
    map.set(
      string(id, `assignments[${i}].memberId`, MEMBER_ID_LENGTH_MAX),
      bytes(assignment, `assignments[${i}].assignment`),
    );
  }
  return {
    memberId: string(memberId, 'memberId', MEMBER_ID_LENGTH_MAX),
    generationId: generation(generationId),
    groupInstanceId: instanceId(groupInstanceId),
    protocolType:
      protocolType == null ? null : string(protocolType, 'protocolType', CLASSIC_NAME_LENGTH_MAX),
    protocolName:
      protocolName == null ? null : string(protocolName, 'protocolName', CLASSIC_NAME_LENGTH_MAX),
    assignments: map,
  };
}

/** Checks and normalizes a Heartbeat. */
export function normalizeClassicHeartbeat(
  request: ClassicHeartbeatRequest,
): NormalizedClassicHeartbeat {
  const { memberId, generationId, groupInstanceId } = object(request, 'the Heartbeat request', [
    'memberId',
    'generationId',
    'groupInstanceId',
  ]);
  return {
    memberId: string(memberId, 'memberId', MEMBER_ID_LENGTH_MAX),
    generationId: generation(generationId),
    groupInstanceId: instanceId(groupInstanceId),
  };
}

/** Checks and normalizes a LeaveGroup. */
export function normalizeClassicLeave(request: ClassicLeaveGroupRequest): NormalizedClassicLeave {
  const { members } = object(request, 'the LeaveGroup request', ['members']);
  if (!Array.isArray(members)) throw new TypeError('members must be an array');
  const count = members.length;
  if (count === 0 || count > CLASSIC_ASSIGNMENTS_MAX)
    invalid(`members must name 1 to ${CLASSIC_ASSIGNMENTS_MAX} members`);
  const out: { memberId: string; groupInstanceId: string | null }[] = [];
  for (let i = 0; i < count; i++) {
    const { memberId, groupInstanceId } = object(members[i], `members[${i}]`);
    const entry = {
      memberId: string(memberId ?? '', `members[${i}].memberId`, MEMBER_ID_LENGTH_MAX),
      groupInstanceId: instanceId(groupInstanceId, `members[${i}].groupInstanceId`),
    };
    if (entry.memberId === '' && entry.groupInstanceId === null)
      invalid(`members[${i}] names neither a member id nor an instance id`);
    out.push(entry);
  }
  return { members: out };
}

function invalid(message: string): never {
  throw new OffsetStoreError('INVALID_REQUEST', message);
}

/** `value`, checked to be an object; with `known`, one holding no key but those (checkOptionsBag). */
function object<T>(value: T, what: string, known?: readonly string[]): T {
  if (known !== undefined) checkOptionsBag(value, known, 'request', what);
  else checkOptionsObject(value, what);
  return value;
}

function string(value: unknown, field: string, maxLength: number): string {
  if (typeof value !== 'string') throw new TypeError(`${field} must be a string`);
  if (value.length > maxLength) invalid(`${field} is longer than ${maxLength} characters`);
  if (!value.isWellFormed()) invalid(`${field} ${NOT_WELL_FORMED}`);
  return value;
}

function instanceId(value: unknown, field = 'groupInstanceId'): string | null {
  if (value === undefined || value === null) return null;
  const id = string(value, field, MEMBER_ID_LENGTH_MAX);
  if (id.length === 0) invalid(`${field} must not be empty (omit it for a dynamic member)`);
  return id;
}

function flag(value: unknown, field: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new TypeError(`${field} must be a boolean`);
  return value;
}

function generation(value: unknown): number {
  if (typeof value !== 'number') throw new TypeError('generationId must be a number');
  if (!Number.isSafeInteger(value)) invalid(`generationId must be an integer, got ${value}`);
  return value;
}

function timeout(
  value: unknown,
  field: string,
  code: 'INVALID_SESSION_TIMEOUT' | 'INVALID_REQUEST',
): number {
  if (typeof value !== 'number') throw new TypeError(`${field} must be a number`);
  if (!Number.isInteger(value) || value < 1 || value > MEMBER_TIMEOUT_MS_MAX) {
    throw new OffsetStoreError(
      code,
      `${field} must be an integer in [1, ${MEMBER_TIMEOUT_MS_MAX}], got ${value}`,
    );
  }
  return value;
}

/**
 * The byte length of a typed array from its own internal slot: a `length` or `byteLength` an object
 * defines for itself cannot make the limit check see another size than the copy takes.
 */
const typedArrayByteLength = Object.getOwnPropertyDescriptor(
  Object.getPrototypeOf(Uint8Array.prototype) as object,
  'byteLength',
)!.get!;

/**
 * A copy of the caller's bytes, within the limit. Copied from the array's own bytes
 * (`Buffer.copyBytesFrom`), not with `Buffer.from`, which copies whatever the object's `valueOf()`
 * returns instead.
 */
function bytes(value: unknown, field: string): Buffer {
  if (!(value instanceof Uint8Array)) throw new TypeError(`${field} must be a Uint8Array`);
  const byteLength = typedArrayByteLength.call(value) as number;
  if (byteLength > CLASSIC_BYTES_MAX)
    invalid(`${field} holds ${byteLength} bytes, more than ${CLASSIC_BYTES_MAX}`);
  return Buffer.copyBytesFrom(value);
}

function protocolList(value: unknown): ClassicProtocol[] {
  if (!Array.isArray(value)) throw new TypeError('protocols must be an array');
  const count = value.length;
  if (count > CLASSIC_PROTOCOLS_MAX)
    invalid(`protocols holds more than ${CLASSIC_PROTOCOLS_MAX} protocols`);
  const names = new Set<string>();
  const out: ClassicProtocol[] = [];
  for (let i = 0; i < count; i++) {
    const { name, metadata } = object(value[i] as ClassicProtocolInput, `protocols[${i}]`);
    const checked = string(name, `protocols[${i}].name`, CLASSIC_NAME_LENGTH_MAX);
    if (checked.length === 0) invalid(`protocols[${i}].name is empty`);
    if (names.has(checked)) invalid(`protocols[${i}] repeats protocol '${checked}'`);
    names.add(checked);
    out.push({ name: checked, metadata: bytes(metadata, `protocols[${i}].metadata`) });
  }
  return out;
}
