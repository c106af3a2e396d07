/**
 * GroupStateMachine: all groups of one coordinator, and the single entry point that changes them —
 * `replay(record)`. A `group-epoch` record creates a missing group; a `group-tombstone` deletes one.
 *
 * `inspect` renders a group's complete state (including target assignments and pending revocations)
 * as plain data, so tests can check that replaying the emitted records gives the same state.
 */
import { assert } from '../util/index.js';
import type { TableBucket } from '../model/index.js';
import type { MemberState } from './consumer-member.js';
import { Group, type GroupState } from './group.js';
import type { GroupRecord } from './group-record.js';
import type { TableLayout } from './table-layout.js';

/** A complete, plain-data rendering of one group's state. */
export interface GroupInspection {
  /** The group. */
  readonly groupId: string;
  /** The derived group state. */
  readonly state: GroupState;
  /** The group epoch. */
  readonly groupEpoch: number;
  /** The assignment epoch. */
  readonly assignmentEpoch: number;
  /** The layouts of the current target, sorted by table id. */
  readonly tableLayouts: ReadonlyArray<{ tableId: number; layout: TableLayout }>;
  /** Every member with its subscription, current assignment, pending revocation and target, sorted by id. */
  readonly members: ReadonlyArray<{
    memberId: string;
    instanceId: string | null;
    memberEpoch: number;
    previousMemberEpoch: number;
    state: MemberState;
    subscribedTableIds: readonly number[];
    assignor: string | null;
    sessionTimeoutMs: number;
    rebalanceTimeoutMs: number;
    assigned: TableBucket[];
    pendingRevocation: TableBucket[];
    target: TableBucket[];
  }>;
}

/** The groups of one coordinator; see the module header. */
export class GroupStateMachine {
  readonly #groups = new Map<string, Group>();

  /** Applies one record. */
  replay(record: GroupRecord): void {
    if (record.type === 'group-tombstone') {
      this.#groups.delete(record.groupId);
      return;
    }
    let group = this.#groups.get(record.groupId);
    if (group === undefined) {
      assert(
        record.type === 'group-epoch',
        `${record.type} record for missing group ${record.groupId}`,
      );
      group = new Group(record.groupId);
      this.#groups.set(record.groupId, group);
    }
    group.replay(record);
  }

  /** The group, if it exists. */
  get(groupId: string): Group | undefined {
    return this.#groups.get(groupId);
  }

  /** All groups, in creation order. */
  groups(): IterableIterator<Group> {
    return this.#groups.values();
  }

  /** Number of groups. */
  get size(): number {
    return this.#groups.size;
  }

  /** Plain-data rendering of a group's full state, or null when it does not exist. */
  inspect(groupId: string): GroupInspection | null {
    const group = this.#groups.get(groupId);
    if (group === undefined) return null;
    const members = [...group.members.values()]
      .sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))
      .map((m) => ({
        memberId: m.memberId,
        instanceId: m.instanceId,
        memberEpoch: m.memberEpoch,
        previousMemberEpoch: m.previousMemberEpoch,
        state: m.state,
        subscribedTableIds: [...m.subscribedTableIds],
        assignor: m.assignor,
        sessionTimeoutMs: m.sessionTimeoutMs,
        rebalanceTimeoutMs: m.rebalanceTimeoutMs,
        assigned: m.assigned.toArray(),
        pendingRevocation: m.pendingRevocation.toArray(),
        target: group.targetOf(m.memberId).toArray(),
      }));
    const tableLayouts = [...group.tableLayouts]
      .sort(([a], [b]) => a - b)
      .map(([tableId, layout]) => ({ tableId, layout }));
    return {
      groupId,
      state: group.state(),
      groupEpoch: group.groupEpoch,
      assignmentEpoch: group.assignmentEpoch,
      tableLayouts,
      members,
    };
  }
}
