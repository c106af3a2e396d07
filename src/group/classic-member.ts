/**
 * ClassicMember: the coordinator's view of one member of a classic (JoinGroup/SyncGroup) group, as
 * Kafka's ClassicGroupMember: who it is (member id, static instance id, client id and host), its
 * timeouts, the protocols it offered with their metadata, the assignment bytes the leader gave it,
 * and where it stands in the current rebalance. Objects are immutable; a change is a new object
 * carried by a `classic-member` record.
 *
 * Metadata and assignment bytes are opaque: the coordinator stores and returns them, never parses
 * them (the client-side assignor owns their format).
 *
 * Invariants: `protocols` is non-empty, names unique, in the member's order of preference;
 * `awaitingJoin` is true exactly while a JoinGroup of the member is parked, `awaitingSync` exactly
 * while a SyncGroup is (the coordinator holds their promises; see classic-waiters.ts).
 */

/** One protocol a member offers (e.g. an assignor name), with its opaque metadata. */
export interface ClassicProtocol {
  /** The protocol's name, e.g. `range` or `cooperative-sticky`. */
  readonly name: string;
  /** The member's metadata for this protocol (for a consumer: its subscription), opaque. */
  readonly metadata: Buffer;
}

/** A member of a classic group; see the module header. */
export interface ClassicMember {
  /** The member's id, unique in its group. */
  readonly memberId: string;
  /** Static membership id (`group.instance.id`), or null for a dynamic member. */
  readonly groupInstanceId: string | null;
  /** The client id it joined with (reported by describeGroup). */
  readonly clientId: string;
  /** The client host it joined from (reported by describeGroup). */
  readonly clientHost: string;
  /** Time the group waits for it to rejoin during a rebalance, in ms. */
  readonly rebalanceTimeoutMs: number;
  /** Silence after which it is removed, in ms. */
  readonly sessionTimeoutMs: number;
  /** The protocol type it joined with; equal to the group's. */
  readonly protocolType: string;
  /** The protocols it offers, in its order of preference. */
  readonly protocols: readonly ClassicProtocol[];
  /** The assignment bytes of the current generation (empty until the leader's SyncGroup). */
  readonly assignment: Buffer;
  /** A JoinGroup of this member is parked until the join phase completes. */
  readonly awaitingJoin: boolean;
  /** A SyncGroup of this member is parked until the leader's assignment arrives. */
  readonly awaitingSync: boolean;
  /** Joined in the current rebalance and not answered yet: its join times out, not its session. */
  readonly isNew: boolean;
}

/** What names a member and its timeouts: the fields a snapshot, a restored member and an inspection copy as they are. */
export type ClassicMemberIdentity = Pick<
  ClassicMember,
  | 'memberId'
  | 'groupInstanceId'
  | 'clientId'
  | 'clientHost'
  | 'rebalanceTimeoutMs'
  | 'sessionTimeoutMs'
>;

/** The identity fields of `m` (anything that has them), in their one order. */
export function memberIdentity(m: ClassicMemberIdentity): ClassicMemberIdentity {
  return {
    memberId: m.memberId,
    groupInstanceId: m.groupInstanceId,
    clientId: m.clientId,
    clientHost: m.clientHost,
    rebalanceTimeoutMs: m.rebalanceTimeoutMs,
    sessionTimeoutMs: m.sessionTimeoutMs,
  };
}

/**
 * An upper bound of the bytes a member takes in its group's snapshot (msgpack: strings at most 3 bytes
 * per UTF-16 code unit, byte arrays as they are; the field names and framing of a member map take
 * under 192 bytes, of a protocol map under 40).
 */
export function memberSnapshotBytes(
  member: Pick<
    ClassicMember,
    'memberId' | 'groupInstanceId' | 'clientId' | 'clientHost' | 'protocols' | 'assignment'
  >,
): number {
  let bytes =
    192 +
    3 *
      (member.memberId.length +
        (member.groupInstanceId?.length ?? 0) +
        member.clientId.length +
        member.clientHost.length) +
    member.assignment.length;
  for (const p of member.protocols) bytes += 40 + 3 * p.name.length + p.metadata.length;
  return bytes;
}

/** The assignment of a member the leader gave none. */
export const EMPTY_ASSIGNMENT: Buffer = Buffer.alloc(0);

/** True when two protocol lists are equal: same names, same metadata bytes, same order (Kafka's `matches`). */
export function protocolsMatch(
  a: readonly ClassicProtocol[],
  b: readonly ClassicProtocol[],
): boolean {
  return (
    a.length === b.length &&
    a.every((p, i) => p.name === b[i]!.name && p.metadata.equals(b[i]!.metadata))
  );
}

/** The member's metadata for a protocol, or empty bytes when it does not offer it. */
export function metadataFor(member: ClassicMember, protocolName: string | null): Buffer {
  return member.protocols.find((p) => p.name === protocolName)?.metadata ?? EMPTY_ASSIGNMENT;
}

/** The member's vote: the first protocol, in its order of preference, that is among `candidates`. */
export function voteOf(member: ClassicMember, candidates: ReadonlySet<string>): string | undefined {
  return member.protocols.find((p) => candidates.has(p.name))?.name;
}

/**
 * True when an expired session timer must not remove the member (Kafka's `hasSatisfiedHeartbeat`):
 * a member parked in a JoinGroup or SyncGroup is waiting on the coordinator, not silent; a new
 * member is not covered, since its join has its own deadline.
 */
export function hasSatisfiedHeartbeat(member: ClassicMember): boolean {
  return !member.isNew && (member.awaitingJoin || member.awaitingSync);
}
