/**
 * What the server remembers of consumer-group (KIP-848) members beyond what the store keeps: the
 * topic names and the regular expression a member subscribed to (the store knows table ids, and a
 * subscribed topic that does not exist yet has none), the table ids last sent for them, and the client id and host Kafka's
 * describe calls report. A member's next heartbeat may omit its subscription (librdkafka sends it
 * only when it changes); the names remembered here let the server add a topic created since.
 *
 * Bounded: at most `membersMax` entries, and at most `charsMax` characters of names, ids and hosts
 * in all (each table id kept counting as 4, what its 8 bytes weigh); past either, the entries written longest ago are dropped (their members then just lose
 * the automatic subscription update and their client ids in describes, until they send their
 * subscriptions again). Entries of members that left or were fenced are removed; those of members
 * whose sessions expired age out this way.
 * In memory only. After a restart, a member the store restored goes on heartbeating without its
 * subscription: its names are then unknown (undefined) until it sends them again, describes show
 * the topics of the tables the store has for it, and a subscribed topic that did not exist before
 * the restart reaches it only once it sends its subscription again (when it changes, or on a
 * rejoin).
 */

/** What is remembered of one member. */
export interface MemberNotes {
  /** The topic names it subscribed to, sorted; undefined while unknown (see above). */
  readonly topicNames: readonly string[] | undefined;
  /** Its subscription's regular expression; undefined when it has none or it is unknown. */
  readonly topicRegex?: string | undefined;
  /** The table ids the expression matched when it last could be matched. */
  readonly regexTableIds?: readonly number[] | undefined;
  /** The table ids last sent to the store for those names and that expression, sorted; undefined while both are unknown. */
  readonly tableIds: readonly number[] | undefined;
  /** The client id of its last heartbeat's request header. */
  readonly clientId: string;
  /** The address its last heartbeat came from. */
  readonly clientHost: string;
}

/** Notes on consumer-group members, by group and member id. */
export class ConsumerMemberDirectory {
  readonly #membersMax: number;
  readonly #charsMax: number;
  readonly #notes = new Map<string, MemberNotes>();
  #chars = 0;

  /** `charsMax`: default 16 Mi characters (the names of 65,536 members of ~250 topics' worth). */
  constructor(membersMax: number, charsMax = 16 * 1024 * 1024) {
    this.#membersMax = membersMax;
    this.#charsMax = charsMax;
  }

  /** Characters of names, ids and hosts held now. */
  get chars(): number {
    return this.#chars;
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
    this.#drop(k);
    const chars = charsOf(k, notes);
    while (
      this.#notes.size > 0 &&
      (this.#notes.size >= this.#membersMax || this.#chars + chars > this.#charsMax)
    )
      this.#drop(this.#notes.keys().next().value!);
    this.#notes.set(k, notes);
    this.#chars += chars;
  }

  /** Forgets a member. */
  delete(groupId: string, memberId: string): void {
    this.#drop(key(groupId, memberId));
  }

  #drop(k: string): void {
    const notes = this.#notes.get(k);
    if (notes === undefined) return;
    this.#notes.delete(k);
    this.#chars -= charsOf(k, notes);
  }
}

/** What a table id kept in the notes counts for against the budget (a double: 8 bytes, 4 characters). */
const CHARS_PER_TABLE_ID = 4;

function charsOf(k: string, notes: MemberNotes): number {
  let chars = k.length + notes.clientId.length + notes.clientHost.length;
  for (const name of notes.topicNames ?? []) chars += name.length;
  chars += notes.topicRegex?.length ?? 0;
  chars +=
    CHARS_PER_TABLE_ID * ((notes.tableIds?.length ?? 0) + (notes.regexTableIds?.length ?? 0));
  return chars;
}

function key(groupId: string, memberId: string): string {
  return `${groupId}\u0000${memberId}`;
}
