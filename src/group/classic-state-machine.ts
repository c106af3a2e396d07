/**
 * ClassicGroupStateMachine: every classic group of one coordinator, changed only by `replay`. A
 * `classic-group` record creates a group that does not exist; `classic-group-tombstone` deletes one;
 * every other record needs its group. `inspect` renders a group as plain data, so tests compare the
 * live state with a replay of the records that built it.
 */
import { assert } from '../util/index.js';
import { ClassicGroup } from './classic-group.js';
import { memberIdentity } from './classic-member.js';
import type { ClassicGroupFields, ClassicGroupRecord } from './classic-record.js';

/** Plain-data rendering of one member (`inspect`); bytes as hex, so deep equality is exact. */
export interface ClassicMemberInspection {
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
  /** Its session timeout, in ms. */
  readonly sessionTimeoutMs: number;
  /** Its protocols in order of preference, metadata as hex. */
  readonly protocols: readonly { name: string; metadata: string }[];
  /** Its assignment, as hex. */
  readonly assignment: string;
  /** A JoinGroup of it is parked. */
  readonly awaitingJoin: boolean;
  /** A SyncGroup of it is parked. */
  readonly awaitingSync: boolean;
  /** It joined in this rebalance and was not answered yet. */
  readonly isNew: boolean;
}

/** Plain-data rendering of a classic group's whole state (tests, debugging). */
export interface ClassicGroupInspection extends ClassicGroupFields {
  /** The group. */
  readonly groupId: string;
  /** Its members, sorted by id. */
  readonly members: readonly ClassicMemberInspection[];
  /** Pending member ids, sorted. */
  readonly pendingMembers: readonly string[];
  /** Members pending sync, sorted. */
  readonly pendingSync: readonly string[];
}

/** Every classic group of a coordinator; see the module header. */
export class ClassicGroupStateMachine {
  readonly #groups = new Map<string, ClassicGroup>();

  /** Applies one record. */
  replay(record: ClassicGroupRecord): void {
    if (record.type === 'classic-group-tombstone') {
      this.#groups.delete(record.groupId);
      return;
    }
    let group = this.#groups.get(record.groupId);
    const creates = group === undefined;
    if (group === undefined) {
      assert(
        record.type === 'classic-group',
        `${record.type} record for missing classic group ${record.groupId}`,
      );
      group = new ClassicGroup(record.groupId);
      this.#groups.set(record.groupId, group);
    }
    group.replay(record, creates);
  }

  /** The group, if it exists. */
  get(groupId: string): ClassicGroup | undefined {
    return this.#groups.get(groupId);
  }

  /** All groups, in creation order. */
  groups(): IterableIterator<ClassicGroup> {
    return this.#groups.values();
  }

  /** Number of groups. */
  get size(): number {
    return this.#groups.size;
  }

  /** Plain-data rendering of a group's state, or null when it does not exist. */
  inspect(groupId: string): ClassicGroupInspection | null {
    const group = this.#groups.get(groupId);
    if (group === undefined) return null;
    const members = [...group.members.values()]
      .sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))
      .map((m) => ({
        ...memberIdentity(m),
        protocols: m.protocols.map((p) => ({ name: p.name, metadata: p.metadata.toString('hex') })),
        assignment: m.assignment.toString('hex'),
        awaitingJoin: m.awaitingJoin,
        awaitingSync: m.awaitingSync,
        isNew: m.isNew,
      }));
    return {
      groupId,
      ...group.fields,
      members,
      pendingMembers: [...group.pendingMembers].sort(),
      pendingSync: [...group.pendingSync].sort(),
    };
  }
}
