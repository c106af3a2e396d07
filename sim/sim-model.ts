/**
 * The reference model of committed offsets, and the checks a fetch's answer must pass against it.
 *
 * Every write the workload issues (a commit, a reset, a delete of offsets or of a group) is a Write
 * of one value per key: an offset, or null for "absent". Offsets are unique over a run, so a value
 * names the write it came from. Per key the model keeps `base`, the write whose value the key holds
 * as far as anyone could know (the last acknowledged one, or the last one a fetch saw), and
 * `candidates`, writes that may still turn out to be the key's value:
 * - pending: issued in this process, not settled. Calls on a group reach its log in the order they
 *   are made, so when a write is acknowledged it becomes `base` unless a later-issued write already
 *   is, and only writes issued after it may still land after it.
 * - unknown: pending when its process died. It may or may not have reached the log; the first fetch
 *   after recovery decides (if it shows the value, the write is there: it becomes `base`; if it shows
 *   the base, the write is gone for good).
 * A rejected write is dropped: its value must never be seen.
 *
 * Durability 'os' acknowledges a write once it reached the OS, so a power loss may take any write made
 * since the store last made everything durable (it does at every open, before serving); never an
 * older one. While a process runs in 'os' (`unsynced`), every write that becomes a key's base is
 * recorded; a power loss then turns the key's base back to what it was at the last durable moment,
 * and every write recorded since into a candidate, one of which the first fetch will settle on. So a fetch may show exactly `base` or a
 * candidate, and "absent" when an expiry was due (retention); anything else is a violation: a lost
 * acknowledged commit, a resurrected rejected one, a value never written, or (with `base` moved by a
 * fetch) a value served and later lost.
 */

/** One issued write of one key. */
export interface Write {
  readonly seq: number;
  /** The offset written, or null for a delete. */
  readonly value: number | null;
  /** Store-clock time when it was issued. */
  readonly issuedMs: number;
  /** What it is: 'commit', 'reset', 'delete', 'expiry', ... (for messages). */
  readonly what: string;
  /**
   * It may take effect later than its call, after writes called while it was in flight (a
   * deleteGroup waiting for a membership write): it may be ordered after any write issued before it
   * was acknowledged.
   */
  readonly floating?: boolean;
  /** The model's sequence counter when it was acknowledged. */
  ackSeq?: number;
  state: 'pending' | 'acked' | 'unknown' | 'failed';
}

interface KeyState {
  base: Write | null;
  candidates: Write[];
  /**
   * Durability 'os' only: the writes that became `base` since the last moment everything the store
   * had was durable (`markDurable`), in order, with those acknowledged after a later one had
   * (`#keepSince`), and the base then (`durableBase`, null = absent).
   */
  since: Write[];
  durableBase: Write | null;
}

/** A key: group, then table:partition:bucket. */
export function keyOf(
  groupId: string,
  tableId: number,
  partitionId: number | null,
  bucketId: number,
): string {
  return `${groupId}|${tableId}:${partitionId ?? ''}:${bucketId}`;
}

/** A violation of the model: what was seen, and what was allowed. */
export class ModelViolation extends Error {
  /** The key it is about. */
  readonly key: string;

  constructor(key: string, message: string) {
    super(message);
    this.name = 'ModelViolation';
    this.key = key;
  }
}

/** The model of every key's value. */
export class OffsetsModel {
  readonly #keys = new Map<string, KeyState>();
  readonly #groupKeys = new Map<string, Set<string>>();
  readonly #windows = new Set<CopyWindow>();
  #seq = 0;
  #unsynced = false;

  /**
   * Starts recording what a copy of the store made from now until `closeWindow` (a backup) may show:
   * each key's value now (its base and candidates) and every write issued meanwhile.
   */
  openWindow(kind: CopyKind): CopyWindow {
    const window = new CopyWindow(this.#keys, kind);
    this.#windows.add(window);
    return window;
  }

  /** Stops recording writes into `window`: the copy is made. */
  closeWindow(window: CopyWindow): void {
    this.#windows.delete(window);
  }

  #state(key: string): KeyState {
    let state = this.#keys.get(key);
    if (state === undefined) {
      state = { base: null, candidates: [], since: [], durableBase: null };
      this.#keys.set(key, state);
      const groupId = key.slice(0, key.indexOf('|'));
      let keys = this.#groupKeys.get(groupId);
      if (keys === undefined) this.#groupKeys.set(groupId, (keys = new Set()));
      keys.add(key);
    }
    return state;
  }

  /** Keys the model knows of a group. */
  keysOf(groupId: string): string[] {
    return [...(this.#groupKeys.get(groupId) ?? [])];
  }

  /** Issues writes, one per key: returns them, pending. */
  issue(
    entries: readonly [key: string, value: number | null][],
    issuedMs: number,
    what: string,
    floating = false,
  ): Write[] {
    const writes: Write[] = [];
    for (const [key, value] of entries) {
      const write: Write = { seq: ++this.#seq, value, issuedMs, what, floating, state: 'pending' };
      this.#state(key).candidates.push(write);
      for (const window of this.#windows) window.issued(key, write);
      writes.push(write);
    }
    return writes;
  }

  /** A write of no key yet, to `extend` later (a delete of a group with no known keys). */
  template(value: number | null, issuedMs: number, what: string, floating: boolean): Write {
    return { seq: ++this.#seq, value, issuedMs, what, floating, state: 'pending' };
  }

  /** One more key for a floating write in flight (a key first written while it waits): same place in the order. */
  extend(like: Write, key: string): Write {
    const write: Write = {
      seq: like.seq,
      value: like.value,
      issuedMs: like.issuedMs,
      what: like.what,
      floating: like.floating,
      state: 'pending',
    };
    this.#state(key).candidates.push(write);
    for (const window of this.#windows) window.issued(key, write);
    return write;
  }

  /**
   * The writes were acknowledged. Calls on one group are appended to its log in the order they are
   * made (the store appends synchronously, in the call), so the log order is the issue order, `seq`;
   * acknowledgements of one flush may arrive in another order (a multi-batch delete resolves after a
   * later single-batch commit of the same round).
   */
  acknowledge(keys: readonly string[], writes: readonly Write[]): void {
    const ackSeq = this.#seq;
    keys.forEach((key, i) => {
      const write = writes[i]!;
      write.state = 'acked';
      write.ackSeq = ackSeq;
      const state = this.#state(key);
      const keep: Write[] = [];
      const previous = state.base;
      if (previous === null || write.seq > previous.seq) {
        this.#setBase(state, write);
        // A floating write acknowledged before may still have taken effect after this one.
        if (previous?.floating === true && write.seq < (previous.ackSeq ?? 0)) keep.push(previous);
      } else {
        if (write.floating === true) keep.push(write); // it may have taken effect after the base
        // In durability 'os' the log may lose the later write and keep this one: a power loss
        // cuts the log anywhere after its last durable moment, here between the two.
        this.#keepSince(state, write);
      }
      const after = state.base!.seq;
      this.#keepSuperseded(state, (c) => c.seq < after);
      state.candidates = [
        ...keep,
        ...state.candidates.filter((c) => c !== write && c.seq > after && c.state !== 'acked'),
      ];
    });
  }

  /**
   * Writes of a process that died in flight (`unknown`), passed over by a later write (or an
   * expiry; `passedOver` picks them) before a fetch told whether they landed: in the log order they
   * precede it, so a fetch will not show them
   * now. But one that did land was made durable when the store recovered, and in durability 'os' the
   * write that passed it may not be yet: a power loss may bring the key back to it. Such writes are
   * kept with the key's writes since the last durable moment (`since`).
   */
  #keepSuperseded(state: KeyState, passedOver: (w: Write) => boolean): void {
    if (!this.#unsynced) return;
    const durable = state.durableBase?.seq ?? 0;
    for (const w of state.candidates)
      if (
        w.state === 'unknown' &&
        passedOver(w) &&
        w.seq > durable &&
        !state.since.some((s) => s.seq === w.seq)
      )
        state.since.push(w);
  }

  /** The writes were rejected: their values must never be seen. */
  reject(keys: readonly string[], writes: readonly Write[]): void {
    keys.forEach((key, i) => {
      const write = writes[i]!;
      write.state = 'failed';
      const state = this.#state(key);
      state.candidates = state.candidates.filter((c) => c !== write);
    });
  }

  /** The process died: whatever was pending may or may not have landed. */
  crash(): void {
    for (const state of this.#keys.values())
      for (const c of state.candidates) if (c.state === 'pending') c.state = 'unknown';
  }

  /**
   * Whether the running process acknowledges writes before they are durable (durability 'os'): set
   * when a process opens, before its first write.
   */
  set unsynced(value: boolean) {
    this.#unsynced = value;
  }

  /**
   * Everything the store holds now is durable (it opened, and a fetch of every key settled what it
   * holds): a power loss can take nothing older. `unchangedOnly`: the store opened some time ago
   * (buckets recovered while the workload ran) and the process acknowledges before it syncs, so
   * only a key whose value has not moved since the last durable moment is known durable now (the
   * open made it so); the others keep what they had.
   */
  markDurable(unchangedOnly = false): void {
    for (const state of this.#keys.values()) {
      if (unchangedOnly && state.since.length > 0) continue;
      state.durableBase = state.base;
      state.since = [];
    }
  }

  /**
   * A power loss after writes acknowledged in durability 'os': each key may be back at its value of
   * the last durable moment, or at any write that became its base since (call after `crash`). The
   * first fetch settles it, as for a write whose process died in flight.
   */
  powerLoss(): void {
    for (const state of this.#keys.values()) {
      if (state.since.length === 0) continue;
      // `since` stays: until the next durable moment, every later power loss may go back as far.
      const held = new Set(state.candidates.map((c) => c.seq));
      const lost = state.since.filter((w) => !held.has(w.seq)); // (no seq twice in `since`)
      state.base = state.durableBase;
      state.candidates = [
        ...lost.map((w) => ({ ...w, state: 'unknown' as const })),
        ...state.candidates,
      ];
    }
  }

  #setBase(state: KeyState, write: Write): void {
    state.base = write;
    if (!this.#unsynced) {
      // Durability 'fsync': what a process acknowledges or serves is durable, and so is everything
      // before it in its log. A power loss cannot take the key back past it.
      state.durableBase = write;
      state.since = [];
    } else if (!state.since.some((w) => w.seq === write.seq)) state.since.push(write);
  }

  /**
   * Durability 'os': `write` was acknowledged after a write issued later than it (so later in its
   * log) had become the key's base. A power loss may end the log between the two, leaving the key at
   * `write`: it joins the writes since the last durable moment unless that moment covers it.
   */
  #keepSince(state: KeyState, write: Write): void {
    if (!this.#unsynced || write.seq <= (state.durableBase?.seq ?? 0)) return;
    if (!state.since.some((w) => w.seq === write.seq)) state.since.push(write);
  }

  /** What a key may show now, for messages. */
  describe(key: string): string {
    const state = this.#keys.get(key);
    if (state === undefined) return 'never written';
    const show = (w: Write | null) =>
      w === null
        ? 'absent (never written)'
        : `${w.value ?? 'absent'} (${w.what} #${w.seq}, ${w.state})`;
    return `base ${show(state.base)}; candidates [${state.candidates.map(show).join(', ')}]`;
  }

  /**
   * Checks what a fetch showed for `key` (`value` null = absent) at store time `nowMs`, and moves the
   * key's base to the write it came from. `mayHaveExpired(w)`: whether the value of write `w` may have
   * been expired by now (it was past retention at a time its table had no subscribed member).
   */
  observe(
    key: string,
    value: number | null,
    nowMs: number,
    mayHaveExpired: (w: Write) => boolean,
  ): void {
    const state = this.#keys.get(key);
    if (state === undefined) {
      if (value !== null)
        throw new ModelViolation(key, `${key} shows ${value}, a value never written`);
      return;
    }
    const mayHaveLandedAndExpired = (w: Write) => w.value !== null && mayHaveExpired(w);
    const baseValue = state.base?.value ?? null;
    if (value === baseValue) {
      // Absent, as the base is: a write of a crashed process may have landed and expired since.
      if (value === null) this.#keepSuperseded(state, mayHaveLandedAndExpired);
      state.candidates = state.candidates.filter((c) => c.state === 'pending');
      return;
    }
    // An absence that an expiry explains is taken for one, even when a delete in flight would
    // explain it too: the delete may not have been applied yet (a group's delete waits for the
    // writes issued before it), and taking its place in the order would refuse their values.
    const expired = value === null ? this.#expired(state, mayHaveExpired) : undefined;
    const from =
      expired === undefined ? state.candidates.find((c) => c.value === value) : undefined;
    if (from !== undefined) {
      this.#keepSuperseded(state, (c) => c.seq < from.seq);
      this.#setBase(state, from);
      state.candidates = state.candidates.filter((c) => c !== from && c.state === 'pending');
      return;
    }
    if (expired !== undefined) {
      // A write of a crashed process that may have expired may have landed before the expiry.
      this.#keepSuperseded(state, mayHaveLandedAndExpired);
      // The store's expiry follows the value it expired and precedes every write issued after it
      // (a key with a write in flight is not expired): it takes the place just after `expired`.
      this.#setBase(state, {
        seq: expired.seq + 0.5,
        value: null,
        issuedMs: nowMs,
        what: 'expiry',
        state: 'acked',
      });
      state.candidates = state.candidates.filter((c) => c.state === 'pending');
      return;
    }
    throw new ModelViolation(
      key,
      `${key} shows ${value ?? 'absent'} at ${nowMs}; the model allows ${this.describe(key)}`,
    );
  }

  /**
   * Whether the value the key holds now may have expired: it is `base` or an unknown write (a pending
   * one is not visible before it is acknowledged), and one of those may have expired.
   */
  #expired(state: KeyState, mayHaveExpired: (w: Write) => boolean): Write | undefined {
    const visible = [state.base, ...state.candidates.filter((c) => c.state === 'unknown')];
    return visible.find((w): w is Write => w !== null && w.value !== null && mayHaveExpired(w));
  }
}

/**
 * A copy of the store: a backup (made by the live store, of what it acknowledged) or a read-only
 * view (read from the files beside the live process, which cannot tell its acknowledged writes from
 * those in flight).
 */
export type CopyKind = 'backup' | 'read-only view';

/**
 * What a copy of the store made during a window may show for each key: a value the key had at some
 * moment of the window. So the key's value when the window opened (its base, or a candidate still
 * in flight then), or the value of a write issued during the window, unless that write was rejected
 * (a read-only view may show it all the same: it reads what the live process wrote, as a real open
 * would had that process crashed then, and a write in flight then may be refused later, when its
 * fdatasync fails); absent when the key had no value then, a delete explains it, or an expiry may
 * have.
 */
export class CopyWindow {
  readonly #start = new Map<string, (Write | null)[]>();
  readonly #issued = new Map<string, Write[]>();

  constructor(
    keys: ReadonlyMap<string, KeyState>,
    readonly kind: CopyKind,
  ) {
    for (const [key, state] of keys) this.#start.set(key, [state.base, ...state.candidates]);
  }

  /** A write of `key` issued while the window is open. */
  issued(key: string, write: Write): void {
    let writes = this.#issued.get(key);
    if (writes === undefined) this.#issued.set(key, (writes = []));
    writes.push(write);
  }

  /** Keys of `groupId` the window knows of. */
  keysOf(groupId: string): string[] {
    const prefix = `${groupId}|`;
    return [...new Set([...this.#start.keys(), ...this.#issued.keys()])].filter((k) =>
      k.startsWith(prefix),
    );
  }

  /** Checks the copy's `value` of `key` (null = absent); throws ModelViolation when no moment of the window explains it. */
  check(key: string, value: number | null, mayHaveExpired: (w: Write) => boolean): void {
    const start = this.#start.get(key) ?? [null];
    const writes = [...start, ...(this.#issued.get(key) ?? [])].filter(
      (w) => w === null || w.state !== 'failed' || this.kind === 'read-only view',
    );
    const allowed =
      value === null
        ? writes.some((w) => w === null || w.value === null || mayHaveExpired(w))
        : writes.some((w) => w !== null && w.value === value);
    if (allowed) return;
    const show = (w: Write | null) =>
      w === null ? 'absent' : `${w.value ?? 'absent'} (${w.what} #${w.seq}, ${w.state})`;
    throw new ModelViolation(
      key,
      `${key} shows ${value ?? 'absent'} in a ${this.kind}; the key had at the ${this.kind}'s start [${start.map(show).join(', ')}], and was written during it [${(this.#issued.get(key) ?? []).map(show).join(', ')}]`,
    );
  }
}
