/**
 * What the server remembers of consumer-group (KIP-848) members beyond what the store keeps: the
 * topic names and the regular expression a member subscribed to (the store knows table ids, and a
 * subscribed topic that does not exist yet has none), the table ids last sent for them, and the client id, host and rack Kafka's
 * describe calls report. A member's next heartbeat may omit its subscription (librdkafka sends it
 * only when it changes); the names remembered here let the server add a topic created since.
 *
 * Bounded: at most `membersMax` entries, and at most about `charsMax` characters of names, ids and
 * hosts in all (each table id kept counting as 4, what its 8 bytes weigh). Past either, the entries
 * of members the store no longer holds (`held`: they left, were removed or their sessions expired)
 * are dropped, those written longest ago first. The notes of a member the store holds are never
 * dropped to make room for another's: a client filling the budget (with thousands of long names
 * for members of its own) would otherwise make other groups' members lose the topics created
 * after they subscribed, silently. When only held members' notes are left, `fits` says no and the
 * heartbeat that would add more is refused (retriable); the budget can be passed only by the
 * heartbeats in flight between their `fits` and their `set`. Looking for notes to drop goes over
 * every entry, so after a look that found too little, the next waits NO_ROOM_RECHECK_MS (or a
 * `delete`). Entries of members that left or are unknown to the store are removed at once.
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
  /** The rack it said it is in (a heartbeat's rack id; null: unchanged), null when it named none. */
  readonly rackId?: string | null;
}

/** How long after a look for notes to drop that found too little `fits` says no without looking again. */
export const NO_ROOM_RECHECK_MS = 5_000;

/** Characters counted for a member id the server has not made yet (a v0 join): a UUID's. */
const NEW_MEMBER_ID_CHARS = 36;

/** What the directory is told of the store and of time. */
export interface MemberDirectoryOptions {
  /** Whether the store holds that member (default: none is, so any notes may be dropped). */
  readonly held?: (groupId: string, memberId: string) => boolean;
  /** A monotonic clock in ms (default `performance.now`). */
  readonly nowMs?: () => number;
}

/** Notes on consumer-group members, by group and member id. */
export class ConsumerMemberDirectory {
  readonly #membersMax: number;
  readonly #charsMax: number;
  readonly #held: (groupId: string, memberId: string) => boolean;
  readonly #nowMs: () => number;
  /** Insertion order is the order written (`set` re-inserts). */
  readonly #notes = new Map<string, MemberNotes>();
  #chars = 0;
  /** Until then a look for notes to drop is not worth making (the last found too little). */
  #noRoomUntilMs = Number.NEGATIVE_INFINITY;

  /** `charsMax`: default 16 Mi characters (the names of 65,536 members of ~250 topics' worth). */
  constructor(
    membersMax: number,
    charsMax = 16 * 1024 * 1024,
    options: MemberDirectoryOptions = {},
  ) {
    this.#membersMax = membersMax;
    this.#charsMax = charsMax;
    this.#held = options.held ?? (() => false);
    this.#nowMs = options.nowMs ?? (() => performance.now());
  }

  /** Most members with notes. */
  get membersMax(): number {
    return this.#membersMax;
  }

  /** Characters of notes kept at most (about: see the module comment). */
  get charsMax(): number {
    return this.#charsMax;
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

  /**
   * Whether `notes` on that member (`memberId` '' for one the server is yet to name) can be kept
   * without dropping a held member's notes; drops notes of members the store no longer holds to
   * make room.
   */
  fits(groupId: string, memberId: string, notes: MemberNotes): boolean {
    const k = key(groupId, memberId);
    const previous = memberId === '' ? undefined : this.#notes.get(k);
    const chars =
      charsOf(k, notes) +
      (memberId === '' ? NEW_MEMBER_ID_CHARS : 0) -
      (previous === undefined ? 0 : charsOf(k, previous));
    const members = previous === undefined ? 1 : 0;
    if (this.#room(members, chars)) return true;
    if (this.#nowMs() < this.#noRoomUntilMs) return false;
    if (this.#makeRoom(members, chars, k)) return true;
    this.#noRoomUntilMs = this.#nowMs() + NO_ROOM_RECHECK_MS;
    return false;
  }

  /**
   * Replaces the notes on a member (as the newest entry), dropping the oldest notes of members the
   * store no longer holds while over a bound. Kept even if that is not enough (see the module
   * comment: `fits` is asked first).
   */
  set(groupId: string, memberId: string, notes: MemberNotes): void {
    const k = key(groupId, memberId);
    this.#drop(k);
    const chars = charsOf(k, notes);
    if (!this.#room(1, chars)) this.#makeRoom(1, chars);
    this.#notes.set(k, notes);
    this.#chars += chars;
  }

  /**
   * Forgets a member the store does not hold (a request naming it was refused UNKNOWN_MEMBER_ID);
   * one it holds keeps its notes: member ids are public (ConsumerGroupDescribe), so anyone can send
   * one with an instance id no member holds, and be refused so.
   */
  deleteUnheld(groupId: string, memberId: string): void {
    if (!this.#held(groupId, memberId)) this.delete(groupId, memberId);
  }

  /** Forgets a member. */
  delete(groupId: string, memberId: string): void {
    if (this.#drop(key(groupId, memberId))) this.#noRoomUntilMs = Number.NEGATIVE_INFINITY;
  }

  /**
   * Drops the notes of members the store no longer holds, written longest ago first (never those
   * under `keep`), until `members` more entries and `chars` more characters fit; whether they do.
   */
  #makeRoom(members: number, chars: number, keep?: string): boolean {
    for (const [entry] of this.#notes) {
      if (entry === keep) continue;
      const [g, m] = split(entry);
      if (!this.#held(g, m)) this.#drop(entry);
      if (this.#room(members, chars)) return true;
    }
    return false;
  }

  /** Whether `members` more entries and `chars` more characters stay within the bounds. */
  #room(members: number, chars: number): boolean {
    return this.#notes.size + members <= this.#membersMax && this.#chars + chars <= this.#charsMax;
  }

  #drop(k: string): boolean {
    const notes = this.#notes.get(k);
    if (notes === undefined) return false;
    this.#notes.delete(k);
    this.#chars -= charsOf(k, notes);
    return true;
  }
}

/** What a table id kept in the notes counts for against the budget (a double: 8 bytes, 4 characters). */
const CHARS_PER_TABLE_ID = 4;

function charsOf(k: string, notes: MemberNotes): number {
  let chars =
    k.length + notes.clientId.length + notes.clientHost.length + (notes.rackId?.length ?? 0);
  for (const name of notes.topicNames ?? []) chars += name.length;
  chars += notes.topicRegex?.length ?? 0;
  chars +=
    CHARS_PER_TABLE_ID * ((notes.tableIds?.length ?? 0) + (notes.regexTableIds?.length ?? 0));
  return chars;
}

/** The group id's length first: ids may hold any character, so a separator could be ambiguous. */
function key(groupId: string, memberId: string): string {
  return `${groupId.length}:${groupId}${memberId}`;
}

/** The group and member ids of a key. */
function split(k: string): [string, string] {
  const colon = k.indexOf(':');
  const end = colon + 1 + Number(k.slice(0, colon));
  return [k.slice(colon + 1, end), k.slice(end)];
}
