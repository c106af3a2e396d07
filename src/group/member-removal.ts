/**
 * Removal of members by an admin (Kafka's Admin `removeMembersFromConsumerGroup`): every member, or
 * the members named by member id or by static instance id. It exists for members nobody will hear
 * from again — a process that exited without leaving leaves its members in the group's snapshot, so
 * they are restored on every open and keep the group non-empty until their session times out, which
 * a short-lived admin process never sees.
 *
 * `normalizeRemoveMembersRequest` is the only place the request is checked, in the manner of
 * heartbeat.ts: wrong types are TypeError; a selection a well-typed caller can still get wrong
 * (none or several of `all`, `memberIds`, `instanceIds`; an empty list; an empty id) is
 * INVALID_REQUEST. Whether the ids are in the group is checked by `selectRemovedMembers`, for
 * both group types (UNKNOWN_MEMBER_ID).
 */
import { OffsetStoreError } from '../errors/index.js';
import { checkOptionsBag } from '../util/index.js';
import { MEMBER_ID_LENGTH_MAX } from './heartbeat.js';

/** Which members to remove: exactly one of the three. */
export interface RemoveMembersRequest {
  /** Every member of the group, static members included. */
  all?: boolean;
  /** The members with these ids. */
  memberIds?: readonly string[];
  /** The static members holding these instance ids. */
  instanceIds?: readonly string[];
}

/** A member that was removed. */
export interface RemovedMember {
  /** The removed member's id. */
  memberId: string;
  /** Its static instance id, now released; null for a dynamic member. */
  instanceId: string | null;
}

/** A checked request: ids duplicate-free, in request order. */
export type NormalizedRemoval =
  | { readonly kind: 'all' }
  | { readonly kind: 'memberIds'; readonly ids: readonly string[] }
  | { readonly kind: 'instanceIds'; readonly ids: readonly string[] };

/** Checks and normalizes a removal request; see the module header. */
export function normalizeRemoveMembersRequest(request: RemoveMembersRequest): NormalizedRemoval {
  checkOptionsBag(request, ['all', 'memberIds', 'instanceIds'], 'request', 'the removal request');
  const { all, memberIds, instanceIds } = request;
  if (all !== undefined && typeof all !== 'boolean') throw new TypeError('all must be a boolean');
  const given = [all === true, memberIds !== undefined, instanceIds !== undefined].filter(
    Boolean,
  ).length;
  if (given !== 1) invalid('give exactly one of all: true, memberIds or instanceIds');
  if (all === true) return { kind: 'all' };
  return memberIds !== undefined
    ? { kind: 'memberIds', ids: idList(memberIds, 'memberIds') }
    : { kind: 'instanceIds', ids: idList(instanceIds!, 'instanceIds') };
}

function idList(value: readonly string[], field: string): string[] {
  if (!Array.isArray(value)) throw new TypeError(`${field} must be an array of strings`);
  if (value.length === 0) invalid(`${field} must name at least one member`);
  // Each element read once: the ids checked are the ids used.
  const ids = new Set<string>();
  for (const id of value as readonly unknown[]) {
    if (typeof id !== 'string') throw new TypeError(`${field} must hold strings`);
    if (id.length === 0 || id.length > MEMBER_ID_LENGTH_MAX)
      invalid(`${field} must hold ids of 1..${MEMBER_ID_LENGTH_MAX} characters`);
    ids.add(id);
  }
  return [...ids];
}

function invalid(message: string): never {
  throw new OffsetStoreError('INVALID_REQUEST', message);
}

/** What `selectRemovedMembers` needs of a group, consumer or classic. */
export interface RemovalTarget {
  readonly members: ReadonlyMap<string, unknown>;
  /** The id of the member holding a static instance id, or undefined. */
  staticMemberId(instanceId: string): string | undefined;
}

/**
 * The ids of the members `removal` names in `group` (undefined: the group is unknown), sorted;
 * UNKNOWN_MEMBER_ID, before anything is removed, when a named member or instance id is not in it.
 */
export function selectRemovedMembers(
  group: RemovalTarget | undefined,
  groupId: string,
  removal: NormalizedRemoval,
): string[] {
  let memberIds: string[];
  if (removal.kind === 'all') {
    memberIds = [...(group?.members.keys() ?? [])];
  } else if (removal.kind === 'memberIds') {
    const unknown = removal.ids.find((id) => group?.members.has(id) !== true);
    if (unknown !== undefined)
      throw new OffsetStoreError(
        'UNKNOWN_MEMBER_ID',
        `member ${unknown} is not in group ${groupId}; nothing was removed`,
      );
    memberIds = [...removal.ids];
  } else {
    const unknown = removal.ids.find((id) => group?.staticMemberId(id) === undefined);
    if (unknown !== undefined)
      throw new OffsetStoreError(
        'UNKNOWN_MEMBER_ID',
        `no member of group ${groupId} holds instance id '${unknown}'; nothing was removed`,
      );
    memberIds = [...new Set(removal.ids.map((id) => group!.staticMemberId(id)!))];
  }
  return memberIds.sort();
}
