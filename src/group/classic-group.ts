/**
 * ClassicGroup: the in-memory state of one classic (JoinGroup/SyncGroup) group, changed only by
 * replaying ClassicGroupRecords; the queries the protocol's handlers decide with (Kafka's
 * ClassicGroup).
 *
 * Invariants (asserted on replay; `checkInvariants` after every operation):
 *  - state transitions are Kafka's: Empty -> PreparingRebalance -> CompletingRebalance -> Stable,
 *    PreparingRebalance -> Empty, CompletingRebalance or Stable -> PreparingRebalance; the record
 *    that creates a group may set any state (recovery restores a Stable group directly);
 *  - the generation never decreases;
 *  - an instance id names at most one member; a pending member id is never a member's;
 *  - every member's protocol type is the group's;
 *  - after an operation (`checkInvariants`, constant time): the leader is a member (null iff there
 *    are none); a CompletingRebalance or Stable group has members and a selected protocol (every
 *    member offering it is asserted when it is selected), an Empty one none; only a
 *    PreparingRebalance group has parked JoinGroups, only a CompletingRebalance one parked SyncGroups.
 */
import { OffsetStoreError } from '../errors/index.js';
import { assert } from '../util/index.js';
import { memberSnapshotBytes, metadataFor, voteOf, type ClassicMember } from './classic-member.js';
import type {
  ClassicGroupFields,
  ClassicGroupRecord,
  ClassicGroupState,
} from './classic-record.js';

/** One member as the leader's JoinGroup response lists it. */
export interface ClassicJoinMember {
  /** The member's id. */
  memberId: string;
  /** Its static instance id, or null. */
  groupInstanceId: string | null;
  /** Its metadata for the group's selected protocol. */
  metadata: Buffer;
}

const NEXT_STATES: Record<ClassicGroupState, readonly ClassicGroupState[]> = {
  Empty: ['PreparingRebalance'],
  PreparingRebalance: ['CompletingRebalance', 'Empty'],
  CompletingRebalance: ['Stable', 'PreparingRebalance'],
  Stable: ['PreparingRebalance'],
};

/** One classic group's state; see the module header. */
export class ClassicGroup {
  /** The group's id. */
  readonly groupId: string;
  #fields: ClassicGroupFields = {
    state: 'Empty',
    generationId: 0,
    protocolType: null,
    protocolName: null,
    leaderId: null,
  };
  #previousState: ClassicGroupState = 'Empty';
  readonly #members = new Map<string, ClassicMember>();
  readonly #staticMembers = new Map<string, string>();
  readonly #pendingJoin = new Set<string>();
  readonly #pendingSync = new Set<string>();
  /** Protocol name -> members offering it. */
  readonly #protocolCounts = new Map<string, number>();
  #awaitingJoinCount = 0;
  #awaitingSyncCount = 0;
  #snapshotBytes = 0;

  /** An Empty group at generation 0; only ClassicGroupStateMachine creates one. */
  constructor(groupId: string) {
    this.groupId = groupId;
  }

  /** The group's state. */
  get state(): ClassicGroupState {
    return this.#fields.state;
  }

  /** The state before the last transition (a PreparingRebalance that came from Empty is the initial rebalance). */
  get previousState(): ClassicGroupState {
    return this.#previousState;
  }

  /** The group's fields (state, generation, protocol type and name, leader). */
  get fields(): ClassicGroupFields {
    return this.#fields;
  }

  /** Members by id, in the order they were added. */
  get members(): ReadonlyMap<string, ClassicMember> {
    return this.#members;
  }

  /** Member ids given out with MEMBER_ID_REQUIRED whose JoinGroup has not come yet. */
  get pendingMembers(): ReadonlySet<string> {
    return this.#pendingJoin;
  }

  /** Members that have not sent SyncGroup in this generation. */
  get pendingSync(): ReadonlySet<string> {
    return this.#pendingSync;
  }

  /** The member id holding a static instance id, if any. */
  staticMemberId(groupInstanceId: string): string | undefined {
    return this.#staticMembers.get(groupInstanceId);
  }

  /** True when every member has a parked JoinGroup and no pending member is still to come. */
  hasAllMembersJoined(): boolean {
    return this.#awaitingJoinCount === this.#members.size && this.#pendingJoin.size === 0;
  }

  /** Number of members with a parked JoinGroup. */
  get awaitingJoinCount(): number {
    return this.#awaitingJoinCount;
  }

  /** The group's rebalance timeout: the largest of its members' (0 without members). */
  rebalanceTimeoutMs(): number {
    let max = 0;
    for (const m of this.#members.values()) max = Math.max(max, m.rebalanceTimeoutMs);
    return max;
  }

  /** True in the states a rebalance may start from (Empty, CompletingRebalance, Stable). */
  canRebalance(): boolean {
    return NEXT_STATES[this.state].includes('PreparingRebalance');
  }

  /**
   * True when a member of `protocolType` offering `names` may be in the group: into an Empty group any
   * non-empty type with at least one protocol; otherwise the group's type and a protocol every member
   * offers (Kafka's `supportsProtocols`).
   */
  supportsProtocols(protocolType: string, names: readonly string[]): boolean {
    if (this.state === 'Empty') return protocolType.length > 0 && names.length > 0;
    const size = this.#members.size;
    return (
      this.#fields.protocolType === protocolType &&
      names.some((name) => (this.#protocolCounts.get(name) ?? 0) === size)
    );
  }

  /**
   * The protocol of the next generation: among the protocols every member offers, each member votes
   * for its most preferred one; the most votes win, ties going to the smaller name (Kafka leaves ties
   * to hash order). Undefined without members.
   */
  selectProtocol(): string | undefined {
    const size = this.#members.size;
    if (size === 0) return undefined;
    const candidates = new Set(
      [...this.#protocolCounts].filter(([, count]) => count === size).map(([name]) => name),
    );
    const votes = new Map<string, number>();
    for (const member of this.#members.values()) {
      const vote = voteOf(member, candidates);
      assert(
        vote !== undefined,
        `member ${member.memberId} of ${this.groupId} offers none of the group's protocols`,
      );
      votes.set(vote, (votes.get(vote) ?? 0) + 1);
    }
    return [...votes].sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0))[0]![0];
  }

  /**
   * Checks a request's member identity (Kafka's `validateMember`): with an instance id, the id must be
   * held (UNKNOWN_MEMBER_ID) and held by `memberId` (FENCED_INSTANCE_ID: another member replaced
   * it); then `memberId` must be a member (UNKNOWN_MEMBER_ID).
   */
  validateMember(memberId: string, groupInstanceId: string | null): ClassicMember {
    if (groupInstanceId !== null) {
      const holder = this.#staticMembers.get(groupInstanceId);
      if (holder === undefined)
        throw new OffsetStoreError(
          'UNKNOWN_MEMBER_ID',
          `no member of group ${this.groupId} holds instance id '${groupInstanceId}'`,
        );
      if (holder !== memberId) {
        throw new OffsetStoreError(
          'FENCED_INSTANCE_ID',
          `instance id '${groupInstanceId}' of group ${this.groupId} is now held by member ${holder}, not ${memberId}`,
        );
      }
    }
    const member = this.#members.get(memberId);
    if (member === undefined)
      throw new OffsetStoreError(
        'UNKNOWN_MEMBER_ID',
        `member ${memberId} is not in group ${this.groupId}; rejoin`,
      );
    return member;
  }

  /** Every member with its metadata for the selected protocol, as the leader's JoinGroup response lists them. */
  joinMembers(): ClassicJoinMember[] {
    const protocolName = this.#fields.protocolName;
    return [...this.#members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      metadata: metadataFor(m, protocolName),
    }));
  }

  /** Applies one record of this group. Only ClassicGroupStateMachine calls this. */
  replay(
    record: Exclude<ClassicGroupRecord, { type: 'classic-group-tombstone' }>,
    creates: boolean,
  ): void {
    assert(
      record.groupId === this.groupId,
      `record for ${record.groupId} replayed on ${this.groupId}`,
    );
    switch (record.type) {
      case 'classic-group':
        return this.#applyFields(record, creates);
      case 'classic-member':
        return this.#applyMember(record.member);
      case 'classic-member-tombstone':
        return this.#removeMember(record.memberId);
      case 'classic-pending-member':
        assert(
          !this.#members.has(record.memberId),
          `pending member ${record.memberId} of ${this.groupId} is a member`,
        );
        if (record.pending) this.#pendingJoin.add(record.memberId);
        else this.#pendingJoin.delete(record.memberId);
        return;
      case 'classic-pending-sync':
        for (const id of record.memberIds) {
          assert(this.#members.has(id), `pending sync of unknown member ${id} of ${this.groupId}`);
          if (record.pending) this.#pendingSync.add(id);
          else this.#pendingSync.delete(id);
        }
        return;
    }
  }

  /** An upper bound of the bytes its members take in a snapshot (see `memberSnapshotBytes`). */
  get snapshotBytes(): number {
    return this.#snapshotBytes;
  }

  /** Number of members with a parked SyncGroup. */
  get awaitingSyncCount(): number {
    return this.#awaitingSyncCount;
  }

  /** Asserts what must hold between operations, in constant time (see the module header). */
  checkInvariants(): void {
    const { state, leaderId, protocolName } = this.#fields;
    assert(
      (leaderId === null) === (this.#members.size === 0),
      `leader ${leaderId} of ${this.groupId} with ${this.#members.size} members`,
    );
    assert(
      leaderId === null || this.#members.has(leaderId),
      `leader ${leaderId} of ${this.groupId} is not a member`,
    );
    assert(
      state === 'Empty' || this.#members.size > 0 || state === 'PreparingRebalance',
      `${this.groupId} is ${state} without members`,
    );
    if (state === 'CompletingRebalance' || state === 'Stable')
      assert(
        protocolName !== null && this.#members.size > 0,
        `${this.groupId} is ${state} with protocol ${protocolName}`,
      );
    if (state === 'Empty')
      assert(protocolName === null, `${this.groupId} is Empty with protocol ${protocolName}`);
    assert(
      state === 'CompletingRebalance' || this.#awaitingSyncCount === 0,
      `${this.groupId} is ${state} with parked SyncGroups`,
    );
    assert(
      state === 'PreparingRebalance' || this.#awaitingJoinCount === 0,
      `${this.groupId} is ${state} with parked JoinGroups`,
    );
  }

  #applyFields(fields: ClassicGroupFields, creates: boolean): void {
    const current = this.#fields;
    assert(
      fields.generationId >= current.generationId,
      `generation of ${this.groupId} went back to ${fields.generationId}`,
    );
    if (fields.state !== current.state) {
      assert(
        creates || NEXT_STATES[current.state].includes(fields.state),
        `${this.groupId} cannot go from ${current.state} to ${fields.state}`,
      );
      this.#previousState = current.state;
    }
    this.#fields = {
      state: fields.state,
      generationId: fields.generationId,
      protocolType: fields.protocolType,
      protocolName: fields.protocolName,
      leaderId: fields.leaderId,
      emptySinceMs: fields.state === 'Empty' ? fields.emptySinceMs : undefined,
    };
  }

  #applyMember(member: ClassicMember): void {
    const existing = this.#members.get(member.memberId);
    assert(
      this.#fields.protocolType === member.protocolType,
      `member ${member.memberId} of ${this.groupId} has protocol type ${member.protocolType}, the group ${this.#fields.protocolType}`,
    );
    assert(
      !this.#pendingJoin.has(member.memberId),
      `member ${member.memberId} of ${this.groupId} is still pending`,
    );
    if (existing !== undefined) this.#unindex(existing);
    const holder =
      member.groupInstanceId === null ? undefined : this.#staticMembers.get(member.groupInstanceId);
    assert(
      holder === undefined,
      `instance id ${member.groupInstanceId} of ${this.groupId} is held by ${holder}`,
    );
    this.#members.set(member.memberId, member);
    this.#index(member);
  }

  #removeMember(memberId: string): void {
    const existing = this.#members.get(memberId);
    assert(existing !== undefined, `removal of unknown member ${memberId} of ${this.groupId}`);
    this.#unindex(existing);
    this.#members.delete(memberId);
    this.#pendingSync.delete(memberId);
  }

  #index(member: ClassicMember): void {
    if (member.groupInstanceId !== null)
      this.#staticMembers.set(member.groupInstanceId, member.memberId);
    for (const p of member.protocols)
      this.#protocolCounts.set(p.name, (this.#protocolCounts.get(p.name) ?? 0) + 1);
    if (member.awaitingJoin) this.#awaitingJoinCount++;
    if (member.awaitingSync) this.#awaitingSyncCount++;
    this.#snapshotBytes += memberSnapshotBytes(member);
  }

  #unindex(member: ClassicMember): void {
    if (member.groupInstanceId !== null) this.#staticMembers.delete(member.groupInstanceId);
    for (const p of member.protocols) {
      const count = (this.#protocolCounts.get(p.name) ?? 0) - 1;
      if (count > 0) this.#protocolCounts.set(p.name, count);
      else this.#protocolCounts.delete(p.name);
    }
    if (member.awaitingJoin) this.#awaitingJoinCount--;
    if (member.awaitingSync) this.#awaitingSyncCount--;
    this.#snapshotBytes -= memberSnapshotBytes(member);
  }
}
