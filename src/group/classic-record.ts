/**
 * ClassicGroupRecord: the internal records the classic protocol's handlers emit. Replaying them
 * through `ClassicGroupStateMachine.replay` is the only way classic group state changes — live, after
 * every handler, and during recovery, where a persisted ClassicGroupSnapshot is expanded back into
 * records. Like the consumer group's records they are in memory only: the coordinator persists the
 * group's snapshot at generation boundaries (Stable after the leader's SyncGroup, and Empty).
 *
 * Two records change only what a rebalance is waiting for and never what a snapshot holds
 * (`classic-pending-member`, `classic-pending-sync`): they do not make the group dirty, so a
 * MEMBER_ID_REQUIRED answer or a late follower's SyncGroup writes nothing (`isTransientRecord`).
 */
import type { ClassicMember } from './classic-member.js';

/** The states of a classic group, as Kafka names them (Dead is a deleted group: it has no state here). */
export type ClassicGroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable';

/** The group-level fields of a classic group. */
export interface ClassicGroupFields {
  /** The group's state. */
  readonly state: ClassicGroupState;
  /** The generation: bumped each time a join phase completes. */
  readonly generationId: number;
  /** The protocol type of its members (e.g. `consumer`), set by the first member; null before any. */
  readonly protocolType: string | null;
  /** The protocol selected for the current generation; null while Empty. */
  readonly protocolName: string | null;
  /** The member that computes assignments; null without members. */
  readonly leaderId: string | null;
  /**
   * When the group last became Empty (ms on the store's clock), kept while it is Empty: its offsets'
   * retention runs from then (see OffsetsBucket's expiry); for a group its first JoinGroup created,
   * from its creation. Absent in any other state, and for an Empty group recovered from a snapshot
   * written before the store recorded it.
   */
  readonly emptySinceMs?: number;
}

/** Sets a classic group's fields; creates the group when it does not exist. */
export interface ClassicGroupMetadataRecord extends ClassicGroupFields {
  /** Discriminant. */
  readonly type: 'classic-group';
  /** The group. */
  readonly groupId: string;
}

/** Deletes the classic group and everything in it. */
export interface ClassicGroupTombstoneRecord {
  /** Discriminant. */
  readonly type: 'classic-group-tombstone';
  /** The group. */
  readonly groupId: string;
}

/** Creates or replaces a member. */
export interface ClassicMemberRecord {
  /** Discriminant. */
  readonly type: 'classic-member';
  /** The member's group. */
  readonly groupId: string;
  /** The whole member (replaces the previous one of that id). */
  readonly member: ClassicMember;
}

/** Removes a member (it also stops being pending sync). */
export interface ClassicMemberTombstoneRecord {
  /** Discriminant. */
  readonly type: 'classic-member-tombstone';
  /** The member's group. */
  readonly groupId: string;
  /** The member to remove; it must exist. */
  readonly memberId: string;
}

/** Adds or removes a pending member: an id given out with MEMBER_ID_REQUIRED, not joined yet. */
export interface ClassicPendingMemberRecord {
  /** Discriminant. */
  readonly type: 'classic-pending-member';
  /** The group. */
  readonly groupId: string;
  /** The member id given out. */
  readonly memberId: string;
  /** True to add, false to remove. */
  readonly pending: boolean;
}

/**
 * Adds or removes members the group waits for a SyncGroup from (the sync phase's deadline removes
 * them): all of them when a join phase completes, each as its SyncGroup comes, all when a rebalance
 * starts.
 */
export interface ClassicPendingSyncRecord {
  /** Discriminant. */
  readonly type: 'classic-pending-sync';
  /** The group. */
  readonly groupId: string;
  /** The members. */
  readonly memberIds: readonly string[];
  /** True to add them, false to remove them. */
  readonly pending: boolean;
}

/** Any record of the classic group state machine. */
export type ClassicGroupRecord =
  | ClassicGroupMetadataRecord
  | ClassicGroupTombstoneRecord
  | ClassicMemberRecord
  | ClassicMemberTombstoneRecord
  | ClassicPendingMemberRecord
  | ClassicPendingSyncRecord;

/** True for records that change nothing a snapshot holds (see the module header). */
export function isTransientRecord(record: ClassicGroupRecord): boolean {
  return record.type === 'classic-pending-member' || record.type === 'classic-pending-sync';
}
