/**
 * ClassicGroupDescription: what `describeGroup` shows of a classic group — the fields a
 * DescribeGroups answer carries (state, protocol type and name, members with client id and host,
 * metadata and assignment bytes) plus generation, leader and timeouts. Members sorted by id. The
 * bytes are copies: a caller cannot change the group through them.
 */
import { metadataFor } from './classic-member.js';
import type { ClassicGroup } from './classic-group.js';
import type { ClassicGroupState } from './classic-record.js';

/** One member of a classic group, as described. */
export interface ClassicMemberDescription {
  /** The member's id. */
  memberId: string;
  /** Its static instance id, or null. */
  groupInstanceId: string | null;
  /** The client id it joined with. */
  clientId: string;
  /** The client host it joined from. */
  clientHost: string;
  /** Its session timeout, in ms. */
  sessionTimeoutMs: number;
  /** Its rebalance timeout, in ms. */
  rebalanceTimeoutMs: number;
  /** The protocols it offers, in its order of preference. */
  protocols: string[];
  /** Its metadata for the group's selected protocol; empty while no protocol is selected. */
  metadata: Buffer;
  /**
   * Its assignment of the current generation; empty unless the group is Stable (before the leader's
   * SyncGroup, and during a rebalance, rather than the last generation's), as Kafka's DescribeGroups.
   */
  assignment: Buffer;
}

/** A classic group, as described. */
export interface ClassicGroupDescription {
  /** Its state. */
  state: ClassicGroupState;
  /** Its generation. */
  generationId: number;
  /** Its members' protocol type; null for a group that never had a member. */
  protocolType: string | null;
  /** The generation's protocol; null while Empty or before the first join phase completes. */
  protocolName: string | null;
  /** The leader's member id; null without members. */
  leaderId: string | null;
  /** Its members, sorted by id. */
  members: ClassicMemberDescription[];
}

/** Describes a classic group. */
export function describeClassicGroup(group: ClassicGroup): ClassicGroupDescription {
  const { state, generationId, protocolType, protocolName, leaderId } = group.fields;
  const members = [...group.members.values()].map((m) => ({
    memberId: m.memberId,
    groupInstanceId: m.groupInstanceId,
    clientId: m.clientId,
    clientHost: m.clientHost,
    sessionTimeoutMs: m.sessionTimeoutMs,
    rebalanceTimeoutMs: m.rebalanceTimeoutMs,
    protocols: m.protocols.map((p) => p.name),
    metadata: Buffer.from(metadataFor(m, protocolName)),
    assignment: state === 'Stable' ? Buffer.from(m.assignment) : Buffer.alloc(0),
  }));
  members.sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
  return { state, generationId, protocolType, protocolName, leaderId, members };
}
