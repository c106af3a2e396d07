/**
 * ClassicGroups: the classic (JoinGroup/SyncGroup) group protocol of an OffsetStore, reached as
 * `store.classic` (docs/group-protocol.md, "Classic protocol"; the calls in docs/api.md). One call per
 * Kafka request, so a wire front end only translates bytes to calls and results to bytes: JoinGroup,
 * SyncGroup, Heartbeat, LeaveGroup. Commits go through `store.commitOffsets` with a classic
 * CommitOptions (`generationId`, `memberId`); DescribeGroups, ListGroups, DeleteGroups and
 * OffsetDelete through `describeGroup`, `listGroups`, `deleteGroup` and `deleteOffsets`.
 *
 * Each call is validated (the store open, the group id) and routed to the group's offsets-bucket,
 * whose coordinator runs it on the group's operation lane (src/group/classic-coordinator.ts). The
 * bytes it answers with (metadata, assignments) are copies: a caller that changes them changes
 * nothing of the group.
 */
import type {
  ClassicHeartbeatRequest,
  ClassicJoinGroupRequest,
  ClassicJoinGroupResult,
  ClassicLeaveGroupRequest,
  ClassicLeaveGroupResult,
  ClassicSyncGroupRequest,
  ClassicSyncGroupResult,
} from './group/index.js';
import type { OffsetsBucket } from './shard/index.js';

/** The classic group protocol of a store; see the module header. Made by OffsetStore. */
export class ClassicGroups {
  readonly #bucket: (groupId: string) => OffsetsBucket;

  /** `bucket` checks the store is open and the group id valid, and returns the group's offsets-bucket. */
  constructor(bucket: (groupId: string) => OffsetsBucket) {
    this.#bucket = bucket;
  }

  /**
   * JoinGroup. Resolves when Kafka would answer: at once with MEMBER_ID_REQUIRED
   * (`outcome: 'member-id-required'`, for a new dynamic member with `requireKnownMemberId`), for a
   * member already in the generation, or with an error; otherwise once the join phase completes
   * (every member rejoined, or the rebalance timeout or the initial delay passed). A parked JoinGroup
   * is also settled when its member is removed (UNKNOWN_MEMBER_ID), replaced by a new member of its
   * static instance id (FENCED_INSTANCE_ID), superseded by its own next JoinGroup
   * (REBALANCE_IN_PROGRESS), or the store closes (STORE_CLOSED).
   */
  async joinGroup(
    groupId: string,
    request: ClassicJoinGroupRequest,
  ): Promise<ClassicJoinGroupResult> {
    const result = await this.#bucket(groupId).classicJoinGroup(groupId, request);
    if (result.outcome !== 'joined' || result.members.length === 0) return result;
    // The members' metadata are the coordinator's own buffers: the caller gets copies.
    return {
      ...result,
      members: result.members.map((m) => ({ ...m, metadata: Buffer.from(m.metadata) })),
    };
  }

  /**
   * SyncGroup. The leader's carries every member's assignment; each member gets its own once the
   * group's Stable snapshot is durable. Followers wait for the leader's; a parked SyncGroup is
   * settled like a parked JoinGroup.
   */
  async syncGroup(
    groupId: string,
    request: ClassicSyncGroupRequest,
  ): Promise<ClassicSyncGroupResult> {
    const result = await this.#bucket(groupId).classicSyncGroup(groupId, request);
    // The assignment is the coordinator's own buffer: the caller gets a copy.
    return { ...result, assignment: Buffer.from(result.assignment) };
  }

  /**
   * Heartbeat. Keeps the member's session; rejects REBALANCE_IN_PROGRESS while the group rebalances
   * (the member must rejoin), ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID when the
   * member is not where it thinks.
   */
  async heartbeat(groupId: string, request: ClassicHeartbeatRequest): Promise<void> {
    return this.#bucket(groupId).classicHeartbeat(groupId, request);
  }

  /** LeaveGroup: one answer per named member (v0-2 name one member, v3+ a batch). */
  async leaveGroup(
    groupId: string,
    request: ClassicLeaveGroupRequest,
  ): Promise<ClassicLeaveGroupResult> {
    return this.#bucket(groupId).classicLeaveGroup(groupId, request);
  }
}
