/**
 * What the server remembers of consumer-group (KIP-848) members beyond what the store keeps: the
 * topic names a member subscribed to (the store knows table ids, and a subscribed topic that does
 * not exist yet has none), the table ids last sent for them, and the client id and host Kafka's
 * describe calls report. A member's next heartbeat may omit its subscription (librdkafka sends it
 * only when it changes); the names remembered here let the server add a topic created since.
 *
 * Bounded: at most `membersMax` entries; when full, the entry written longest ago is dropped (its
 * member then just loses the automatic subscription update and its client id in describes, until
 * it sends its subscription again). Entries of members that left or were fenced are removed.
 * In memory only: after a restart members send their subscription again when they rejoin.
 */

/** What is remembered of one member. */
export interface MemberNotes {
  /** The topic names it subscribed to, sorted. */
  readonly topicNames: readonly string[];
  /** The table ids last sent to the store for those names, sorted. */
  readonly tableIds: readonly number[];
  /** The client id of its last heartbeat's request header. */
  readonly clientId: string;
  /** The address its last heartbeat came from. */
  readonly clientHost: string;
}

/** Notes on consumer-group members, by group and member id. */
export class ConsumerMemberDirectory {
  readonly #membersMax: number;
  readonly #notes = new Map<string, MemberNotes>();

  constructor(membersMax: number) {
    this.#membersMax = membersMax;
  }

  /** Members with notes. */
  get size(): number {
    return this.#notes.size;
  }

  /** The notes on a member, if any. */
  get(groupId: string, memberId: string): MemberNotes | undefined {
    return this.#notes.get(key(groupId, memberId));
  }

  /** Replaces the notes on a member (as the newest entry). */
  set(groupId: string, memberId: string, notes: MemberNotes): void {
    const k = key(groupId, memberId);
    this.#notes.delete(k);
    if (this.#notes.size >= this.#membersMax) this.#notes.delete(this.#notes.keys().next().value!);
    this.#notes.set(k, notes);
  }

  /** Forgets a member. */
  delete(groupId: string, memberId: string): void {
    this.#notes.delete(key(groupId, memberId));
  }
}

function key(groupId: string, memberId: string): string {
  return `${groupId}\u0000${memberId}`;
}
