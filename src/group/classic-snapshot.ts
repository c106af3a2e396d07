/**
 * ClassicGroupSnapshot: the persisted image of a classic group, written as the group's snapshot
 * record (record type 1, keyed by groupId, like a consumer group's: a group id has one type) when
 * the group becomes Stable (the leader's SyncGroup) or Empty, and expanded back into records at
 * recovery (`classicSnapshotToRecords`), so a recovered group is what replaying live records built.
 *
 * It is a msgpack map told apart from a consumer group's snapshot by `protocol: 'classic'`, with
 * its own `version` (0). Bytes (metadata, assignments) are msgpack bin values. Shape:
 *   { protocol: 'classic', version: 0, generationId, protocolType | null, protocolName | null,
 *     leaderId | null, emptySinceMs? (an Empty group: when it became Empty, ms; absent in
 *     snapshots written before it was recorded),
 *     members: [{ memberId, groupInstanceId | null, clientId, clientHost, rebalanceTimeoutMs,
 *                 sessionTimeoutMs, protocols: [{ name, metadata }], assignment }] }
 * A snapshot with members restores a Stable group at its generation, leader and assignments (no
 * rebalance: members' next heartbeats succeed); one without restores an Empty group.
 *
 * Version 1 is a snapshot with its rebalance due (`isRebalanceDue`; otherwise the same shape):
 * written between generation boundaries when an admin removed members (`removeMembers`), so that the removal is durable when it resolves rather than when the
 * rebalance it started completes (which, for a store opened by an admin tool with no member
 * connected, is never before the tool closes it). It holds the members left (those offering the
 * group's protocol) and restores the group as above, then starts its rebalance once loading ends.
 * A version-0 reader refuses it (unknown version) rather than restore a group without its rebalance.
 *
 * `parseClassicSnapshot` raises CORRUPT_MESSAGE for anything a writer of this module could not have
 * produced.
 */
import { OffsetStoreError } from '../errors/index.js';
import { assert } from '../util/index.js';
import type { ClassicGroup } from './classic-group.js';
import { memberIdentity, type ClassicMember } from './classic-member.js';
import type { ClassicGroupRecord } from './classic-record.js';

/** The version of the classic snapshot's shape (REBALANCE_DUE_VERSION: see the module header). */
export const CLASSIC_SNAPSHOT_VERSION = 0;
/** The version of a snapshot whose group rebalances once restored. */
const REBALANCE_DUE_VERSION = 1;

/** The persisted image of a classic group at a generation boundary; see the module header. */
export interface ClassicGroupSnapshot {
  /** Tells it from a consumer group's snapshot. */
  readonly protocol: 'classic';
  /** The shape's version (0). */
  readonly version: number;
  /** The generation; rebalances continue from it after a restart. */
  readonly generationId: number;
  /** The members' protocol type; null for a group that never had a member. */
  readonly protocolType: string | null;
  /** The generation's protocol; null when Empty. */
  readonly protocolName: string | null;
  /** The leader; null when Empty. */
  readonly leaderId: string | null;
  /** Every member, with its protocols and assignment. */
  readonly members: readonly ClassicSnapshotMember[];
  /** An Empty group's: when it became Empty (ms); absent when not recorded. */
  readonly emptySinceMs?: number;
}

/** Whether the group rebalances once restored (version 1: an admin removed members; see above). */
export function isRebalanceDue(snapshot: ClassicGroupSnapshot): boolean {
  return snapshot.version === REBALANCE_DUE_VERSION;
}

/** One member in a classic snapshot. */
export interface ClassicSnapshotMember {
  /** The member's id. */
  readonly memberId: string;
  /** Its static instance id, or null. */
  readonly groupInstanceId: string | null;
  /** Its client id. */
  readonly clientId: string;
  /** Its client host. */
  readonly clientHost: string;
  /** Its rebalance timeout, in ms. */
  readonly rebalanceTimeoutMs: number;
  /** Its session timeout, in ms; re-armed from the end of loading. */
  readonly sessionTimeoutMs: number;
  /** Its protocols, in its order of preference. */
  readonly protocols: readonly { readonly name: string; readonly metadata: Uint8Array }[];
  /** Its assignment of the snapshot's generation. */
  readonly assignment: Uint8Array;
}

/** True when a decoded snapshot value is a classic group's (else it is a consumer group's). */
export function isClassicSnapshot(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { protocol?: unknown }).protocol === 'classic'
  );
}

/**
 * The snapshot of a group in any state, with its rebalance due (version 1; see the module header),
 * or null when it cannot have one: no protocol (it never was Stable), or no member offering it (the
 * members left all rejoined with other protocols: none could be restored at this generation).
 */
export function rebalanceDueSnapshotOf(group: ClassicGroup): ClassicGroupSnapshot | null {
  const { generationId, protocolType, protocolName, leaderId } = group.fields;
  if (protocolName === null) return null;
  // A member that joined this rebalance may not offer the group's present protocol: it is left out,
  // as its join would have been had the rebalance not been recorded (it joins again).
  const kept = [...group.members.values()].filter((m) =>
    m.protocols.some((p) => p.name === protocolName),
  );
  if (kept.length === 0) return null;
  return {
    protocol: 'classic',
    version: REBALANCE_DUE_VERSION,
    generationId,
    protocolType,
    protocolName,
    leaderId: kept.some((m) => m.memberId === leaderId) ? leaderId : kept[0]!.memberId,
    members: kept.map(snapshotMember),
  };
}

/**
 * The snapshot of a group an admin's removal left with no member that could be restored (none left,
 * or none offering its protocol; members still joining are not kept by a restart): Empty at the
 * next generation, as the rebalance would end without them, so that the removal is durable.
 */
export function emptiedSnapshotOf(group: ClassicGroup, nowMs: number): ClassicGroupSnapshot {
  return {
    protocol: 'classic',
    version: CLASSIC_SNAPSHOT_VERSION,
    generationId: group.fields.generationId + 1,
    protocolType: group.fields.protocolType,
    protocolName: null,
    leaderId: null,
    members: [],
    emptySinceMs: nowMs,
  };
}

/** The snapshot of a classic group that is Stable or Empty. */
export function classicSnapshotOf(group: ClassicGroup): ClassicGroupSnapshot {
  assert(
    group.state === 'Stable' || group.state === 'Empty',
    `snapshot of classic group ${group.groupId} taken while ${group.state}`,
  );
  const { generationId, protocolType, protocolName, leaderId, emptySinceMs } = group.fields;
  return {
    protocol: 'classic',
    version: CLASSIC_SNAPSHOT_VERSION,
    generationId,
    protocolType,
    protocolName,
    leaderId,
    members: [...group.members.values()].map(snapshotMember),
    ...(emptySinceMs === undefined ? {} : { emptySinceMs }),
  };
}

/** A member as a snapshot holds it. */
function snapshotMember(m: ClassicMember): ClassicSnapshotMember {
  return {
    ...memberIdentity(m),
    protocols: m.protocols.map((p) => ({ name: p.name, metadata: p.metadata })),
    assignment: m.assignment,
  };
}

/** The records that rebuild a classic group from its snapshot (the group must not exist yet). */
export function classicSnapshotToRecords(
  groupId: string,
  snapshot: ClassicGroupSnapshot,
): ClassicGroupRecord[] {
  const { generationId, protocolType, protocolName, leaderId } = snapshot;
  const records: ClassicGroupRecord[] = [
    {
      type: 'classic-group',
      groupId,
      state: snapshot.members.length > 0 ? 'Stable' : 'Empty',
      generationId,
      protocolType,
      protocolName,
      leaderId,
      emptySinceMs: snapshot.emptySinceMs,
    },
  ];
  for (const m of snapshot.members) {
    const member: ClassicMember = {
      ...memberIdentity(m),
      protocolType: protocolType!,
      protocols: m.protocols.map((p) => ({ name: p.name, metadata: Buffer.from(p.metadata) })),
      assignment: Buffer.from(m.assignment),
      awaitingJoin: false,
      awaitingSync: false,
      isNew: false,
    };
    records.push({ type: 'classic-member', groupId, member });
  }
  return records;
}

/**
 * Checks a decoded classic snapshot and returns it typed: wrong types, unsafe integers, duplicate
 * members or instance ids, a leader that is not a member, a protocol a member does not offer, an
 * unknown version — CORRUPT_MESSAGE naming the group and the field.
 */
export function parseClassicSnapshot(groupId: string, value: unknown): ClassicGroupSnapshot {
  const fail = (what: string): never => {
    throw new OffsetStoreError(
      'CORRUPT_MESSAGE',
      `classic group snapshot of '${groupId}': ${what}`,
    );
  };
  const obj = map(value, 'snapshot', fail);
  if (obj.protocol !== 'classic') fail('protocol is not classic');
  if (obj.version !== CLASSIC_SNAPSHOT_VERSION && obj.version !== REBALANCE_DUE_VERSION)
    fail(`unknown version ${String(obj.version)}`);
  const rebalanceDue = obj.version === REBALANCE_DUE_VERSION;
  const generationId = int(obj.generationId, 'generationId', 0, fail);
  const protocolType = nullable(obj.protocolType, 'protocolType', fail);
  const protocolName = nullable(obj.protocolName, 'protocolName', fail);
  const leaderId = nullable(obj.leaderId, 'leaderId', fail);
  if (!Array.isArray(obj.members)) fail('members is not an array');
  const memberIds = new Set<string>();
  const instanceIds = new Set<string>();
  const members = (obj.members as unknown[]).map((raw, i): ClassicSnapshotMember => {
    const m = map(raw, `members[${i}]`, fail);
    const memberId = str(m.memberId, `members[${i}].memberId`, fail);
    if (memberId.length === 0 || memberIds.has(memberId))
      fail(`members[${i}].memberId is empty or repeated`);
    memberIds.add(memberId);
    const groupInstanceId = nullable(m.groupInstanceId, `members[${i}].groupInstanceId`, fail);
    if (groupInstanceId !== null) {
      if (instanceIds.has(groupInstanceId)) fail(`instance id ${groupInstanceId} appears twice`);
      instanceIds.add(groupInstanceId);
    }
    if (!Array.isArray(m.protocols) || m.protocols.length === 0)
      fail(`members[${i}].protocols is not a non-empty array`);
    const protocols = (m.protocols as unknown[]).map((p, k) => {
      const entry = map(p, `members[${i}].protocols[${k}]`, fail);
      return {
        name: str(entry.name, `members[${i}].protocols[${k}].name`, fail),
        metadata: bytes(entry.metadata, `members[${i}].protocols[${k}].metadata`, fail),
      };
    });
    if (!protocols.some((p) => p.name === protocolName))
      fail(`member ${memberId} does not offer the group's protocol ${protocolName}`);
    return {
      memberId,
      groupInstanceId,
      clientId: str(m.clientId, `members[${i}].clientId`, fail),
      clientHost: str(m.clientHost, `members[${i}].clientHost`, fail),
      rebalanceTimeoutMs: int(m.rebalanceTimeoutMs, `members[${i}].rebalanceTimeoutMs`, 1, fail),
      sessionTimeoutMs: int(m.sessionTimeoutMs, `members[${i}].sessionTimeoutMs`, 1, fail),
      protocols,
      assignment: bytes(m.assignment, `members[${i}].assignment`, fail),
    };
  });
  if (
    members.length > 0 &&
    (protocolType === null || leaderId === null || !memberIds.has(leaderId))
  )
    fail('a group with members needs a protocol type and a leader among them');
  if (members.length === 0 && (protocolName !== null || leaderId !== null))
    fail('an Empty group has no protocol name and no leader');
  const emptySinceMs =
    obj.emptySinceMs === undefined ? undefined : int(obj.emptySinceMs, 'emptySinceMs', 0, fail);
  if (emptySinceMs !== undefined && members.length > 0)
    fail('a group with members has no emptySinceMs');
  if (rebalanceDue && (members.length === 0 || emptySinceMs !== undefined))
    fail('a snapshot with its rebalance due (version 1) has no members, or an emptySinceMs');
  return {
    protocol: 'classic',
    version: rebalanceDue ? REBALANCE_DUE_VERSION : CLASSIC_SNAPSHOT_VERSION,
    generationId,
    protocolType,
    protocolName,
    leaderId,
    members,
    ...(emptySinceMs === undefined ? {} : { emptySinceMs }),
  };
}

type Fail = (what: string) => never;

function map(value: unknown, field: string, fail: Fail): Record<string, unknown> {
  if (
    typeof value !== 'object' ||
    value === null ||
    Array.isArray(value) ||
    value instanceof Uint8Array
  )
    fail(`${field} is not a map`);
  return value as Record<string, unknown>;
}

function int(value: unknown, field: string, min: number, fail: Fail): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
    fail(`${field} is not a safe integer >= ${min}`);
  return value as number;
}

function str(value: unknown, field: string, fail: Fail): string {
  if (typeof value !== 'string') fail(`${field} is not a string`);
  return value as string;
}

function nullable(value: unknown, field: string, fail: Fail): string | null {
  return value === null ? null : str(value, field, fail);
}

function bytes(value: unknown, field: string, fail: Fail): Uint8Array {
  if (!(value instanceof Uint8Array)) fail(`${field} is not bytes`);
  return value as Uint8Array;
}
