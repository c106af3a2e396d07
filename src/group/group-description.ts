/**
 * GroupDescription: the JSON-safe view of a group's membership that `describeGroup` and the admin
 * surface show (the store adds committed offsets). Plain arrays, numbers, strings and null only;
 * buckets sorted, members sorted by id, so two descriptions of the same state are deep-equal.
 */
import type { TableBucket } from '../model/index.js';
import type { MemberState } from './consumer-member.js';
import type { Group, GroupState } from './group.js';
import { preferredAssignor } from './target-assignment-builder.js';

/** One member in a GroupDescription. */
export interface MemberDescription {
  /** The member's id. */
  memberId: string;
  /** Its static instance id, or null for a dynamic member. */
  instanceId: string | null;
  /** Its member epoch (-2 for a static member away). */
  memberEpoch: number;
  /** Its reconciliation state. */
  state: MemberState;
  /** The tables it subscribes to, sorted. */
  subscribedTableIds: number[];
  /** Buckets the member may own now. */
  assignment: TableBucket[];
  /** Buckets the member was asked to release and still owns. */
  pendingRevocation: TableBucket[];
  /** Buckets the member will own once reconciled. */
  targetAssignment: TableBucket[];
  /** Its session timeout, in ms. */
  sessionTimeoutMs: number;
  /** Its rebalance timeout, in ms. */
  rebalanceTimeoutMs: number;
}

/** JSON-safe description of a group's membership. */
export interface GroupDescription {
  /** The group. */
  groupId: string;
  /** The derived group state (Empty, Assigning, Reconciling, Stable). */
  state: GroupState;
  /** Bumped by every change that calls for a new assignment. */
  groupEpoch: number;
  /** The group epoch the current target assignment was computed at. */
  assignmentEpoch: number;
  /** The assignor the group's next target assignment would use. */
  assignor: string;
  /** The members, sorted by id, bucket lists sorted. */
  members: MemberDescription[];
}

/** Describes a group; `defaultAssignor` is used when no member states a preference. */
export function describeGroup(group: Group, defaultAssignor: string): GroupDescription {
  const members = [...group.members.values()].map((m) => ({
    memberId: m.memberId,
    instanceId: m.instanceId,
    memberEpoch: m.memberEpoch,
    state: m.state,
    subscribedTableIds: [...m.subscribedTableIds],
    assignment: m.assigned.toArray(),
    pendingRevocation: m.pendingRevocation.toArray(),
    targetAssignment: group.targetOf(m.memberId).toArray(),
    sessionTimeoutMs: m.sessionTimeoutMs,
    rebalanceTimeoutMs: m.rebalanceTimeoutMs,
  }));
  members.sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
  const assignor =
    preferredAssignor([...group.members.values()].map((m) => m.assignor)) ?? defaultAssignor;
  return {
    groupId: group.groupId,
    state: group.state(),
    groupEpoch: group.groupEpoch,
    assignmentEpoch: group.assignmentEpoch,
    assignor,
    members,
  };
}
