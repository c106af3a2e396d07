/**
 * GroupMember: the member side of the protocol, for a service in the same process (or behind any
 * front end that speaks HeartbeatRequest/HeartbeatResponse). It runs the heartbeat loop on a Clock
 * and turns assignment changes into callbacks, in the order that keeps ownership exclusive:
 *  1. a heartbeat response carries the buckets the member may own now;
 *  2. buckets it owns but may no longer: `onRevoked(buckets)` is awaited (the service commits their
 *     offsets there), then they are dropped and the next heartbeat — sent at once — reports the
 *     release, which is what lets the coordinator hand them to another member;
 *  3. buckets it may own but did not: added, then `onAssigned(buckets)`.
 * Heartbeats go on while callbacks run, reporting what is owned at that moment, so a slow commit
 * does not cost the session.
 *
 * Fencing (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID): everything owned is lost — `onLost` (or
 * `onRevoked` if no `onLost`) is told, a commit would now be refused anyway — and the member rejoins
 * at epoch 0 under the same member id. A static member replaced by another incarnation of its
 * instance (FENCED_INSTANCE_ID) loses everything too, reports it to `onError` and stops: rejoining
 * would take the instance back. Other heartbeat failures are retried after `retryBackoffMs`.
 * Callbacks that throw are reported to `onError`; they do not stop the loop.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { isOffsetStoreError } from '../errors/index.js';
import {
  callUserCallback,
  checkOptionsBag,
  failureMessage,
  isClock,
  SystemClock,
  TIMER_MS_MAX,
  type Clock,
  type Timer,
} from '../util/index.js';
import { normalizeBucketRef, type TableBucket, type BucketRef } from '../model/index.js';
import type { AssignorName } from './assignor.js';
import { BucketSet } from './bucket-set.js';
import { LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH } from './consumer-member.js';
import type { HeartbeatRequest, HeartbeatResponse } from './heartbeat.js';

/** An offset to commit, as the store's `OffsetCommit`. */
export interface MemberCommitOffset extends BucketRef {
  /** The next offset the member will read in the bucket (a safe integer >= 0). */
  readonly offset: number;
  /** Leader epoch the offset was read under; default -1 (unknown). */
  readonly leaderEpoch?: number;
  /** Caller's metadata, at most 4096 UTF-8 bytes; default ''. */
  readonly metadata?: string;
}

/** What a GroupMember needs from the store (or a client of a remote one). */
export interface GroupMemberPort {
  /** One heartbeat of the protocol (the store's `heartbeat`). */
  heartbeat(groupId: string, request: HeartbeatRequest): Promise<HeartbeatResponse>;
  /** A commit made as the member, fenced by its epoch and ownership (the store's `commitOffsets`). */
  commit(
    groupId: string,
    offsets: readonly MemberCommitOffset[],
    options: { memberId: string; memberEpoch: number },
  ): Promise<void>;
  /** Hears that the member stopped (left, or stopped heartbeating): the store forgets it. */
  stopped?(member: GroupMember): void;
  /** Time and timers of a member whose options give no clock (the store's); default: the system's. */
  readonly clock?: Clock;
}

const MEMBER_OPTION_NAMES = [
  'subscribedTableIds',
  'instanceId',
  'memberId',
  'assignor',
  'sessionTimeoutMs',
  'rebalanceTimeoutMs',
  'onAssigned',
  'onRevoked',
  'onLost',
  'onError',
  'clock',
  'retryBackoffMs',
];

/** Options of `GroupMember.join` (the store's `joinGroup`). */
export interface MemberOptions {
  /** The tables whose buckets the member wants; required. */
  readonly subscribedTableIds: readonly number[];
  /** Static membership: a restart with the same instance id gets the same buckets back. */
  readonly instanceId?: string;
  /** Member id to join with (default: the coordinator generates one). */
  readonly memberId?: string;
  /** Preferred assignor (default: the coordinator's, `uniform`). */
  readonly assignor?: AssignorName;
  /**
   * Silence after which the coordinator removes the member, in ms (default: the store's
   * `group.sessionTimeoutMs`).
   */
  readonly sessionTimeoutMs?: number;
  /**
   * Time to release revoked buckets before being removed, in ms (default: the store's
   * `group.rebalanceTimeoutMs`).
   */
  readonly rebalanceTimeoutMs?: number;
  /** Called after buckets were added to the member. */
  readonly onAssigned?: (buckets: TableBucket[]) => void | Promise<void>;
  /** Awaited before buckets are released: commit their offsets here. */
  readonly onRevoked?: (buckets: TableBucket[]) => void | Promise<void>;
  /** Called when the member was fenced and lost buckets without a chance to commit. */
  readonly onLost?: (buckets: TableBucket[]) => void | Promise<void>;
  /**
   * Sees heartbeat failures that are retried and errors thrown by callbacks. What it throws itself
   * (or the promise it returns rejects with) becomes a process warning; the member goes on.
   */
  readonly onError?: (error: unknown) => void;
  /** Time and timers (default: the system clock). */
  readonly clock?: Clock;
  /** Wait before retrying a failed heartbeat (default 1000). */
  readonly retryBackoffMs?: number;
}

type RunState = 'running' | 'leaving' | 'stopped';

/**
 * The member whose reconciliation callback (onRevoked, onAssigned) the current code runs in, if
 * any: `leave()` called from there (or from anything the callback awaits) must not wait for that
 * reconciliation, which waits for the callback, which waits for `leave()`.
 */
const reconcilingCallbackOf = new AsyncLocalStorage<GroupMember>();

/** A member of a group, running its heartbeat loop; see the module header. */
export class GroupMember {
  /** The group this member belongs to. */
  readonly groupId: string;
  readonly #port: GroupMemberPort;
  readonly #options: MemberOptions;
  readonly #clock: Clock;
  readonly #retryBackoffMs: number;
  #memberId: string | undefined;
  #memberEpoch = 0;
  #heartbeatIntervalMs = 5000;
  #owned = BucketSet.EMPTY;
  #pendingTarget: BucketSet | null = null;
  #reconciling: Promise<void> | null = null;
  /** The buckets a running reconciliation's onRevoked is releasing, while it runs. */
  #revoking = BucketSet.EMPTY;
  #inFlight: Promise<void> | null = null;
  #timer: Timer | null = null;
  #heartbeatSoon = false;
  #incarnation = 0;
  #runState: RunState = 'running';

  private constructor(port: GroupMemberPort, groupId: string, options: MemberOptions) {
    this.#port = port;
    this.groupId = groupId;
    this.#options = options;
    this.#clock = options.clock ?? port.clock ?? new SystemClock();
    this.#retryBackoffMs = options.retryBackoffMs ?? 1000;
    this.#memberId = options.memberId;
  }

  /**
   * Joins the group and starts the heartbeat loop. Resolves once the first heartbeat succeeded and
   * the buckets it assigned (if any) went through `onAssigned`; rejects if the first heartbeat fails.
   * The options are copied once, here: every heartbeat sends the same values, whatever the caller's
   * object (or its subscribedTableIds array) answers later.
   */
  static async join(
    port: GroupMemberPort,
    groupId: string,
    options: MemberOptions,
  ): Promise<GroupMember> {
    checkOptionsBag(options, MEMBER_OPTION_NAMES, 'options');
    const {
      subscribedTableIds,
      instanceId,
      memberId,
      assignor,
      sessionTimeoutMs,
      rebalanceTimeoutMs,
      onAssigned,
      onRevoked,
      onLost,
      onError,
      clock,
      retryBackoffMs,
    } = options;
    if (!Array.isArray(subscribedTableIds))
      throw new TypeError('options.subscribedTableIds must be an array');
    if (
      retryBackoffMs !== undefined &&
      !(
        typeof retryBackoffMs === 'number' &&
        Number.isSafeInteger(retryBackoffMs) &&
        retryBackoffMs >= 1 &&
        retryBackoffMs <= TIMER_MS_MAX
      )
    ) {
      throw new RangeError(
        `options.retryBackoffMs must be an integer in [1, ${TIMER_MS_MAX}], got ${String(retryBackoffMs)}`,
      );
    }
    // Checked before the first heartbeat: a member that joined and then failed here would stay in
    // the group (holding its buckets, its snapshot written) with nobody to heartbeat or leave.
    for (const [name, value] of [
      ['onAssigned', onAssigned],
      ['onRevoked', onRevoked],
      ['onLost', onLost],
      ['onError', onError],
    ] as const) {
      if (value !== undefined && typeof value !== 'function')
        throw new TypeError(`options.${name} must be a function, got ${typeof value}`);
    }
    if (clock !== undefined && !isClock(clock))
      throw new TypeError('options.clock must have nowMs() and setTimer()');
    const copy: MemberOptions = Object.freeze({
      subscribedTableIds: Object.freeze([...subscribedTableIds]),
      instanceId,
      memberId,
      assignor,
      sessionTimeoutMs,
      rebalanceTimeoutMs,
      onAssigned,
      onRevoked,
      onLost,
      onError,
      clock,
      retryBackoffMs,
    });
    const member = new GroupMember(port, groupId, copy);
    const response = await port.heartbeat(groupId, member.#request());
    member.#accept(response);
    member.#schedule(member.#heartbeatIntervalMs);
    await member.#reconciling;
    return member;
  }

  /** The member id (generated by the coordinator unless given). */
  get memberId(): string {
    return this.#memberId as string;
  }

  /** The member epoch from the last heartbeat response. */
  get memberEpoch(): number {
    return this.#memberEpoch;
  }

  /** Buckets the member owns now, sorted. */
  get assignment(): TableBucket[] {
    return this.#owned.toArray();
  }

  /** 'running', 'leaving' (leave() in progress) or 'stopped'. */
  get runState(): RunState {
    return this.#runState;
  }

  /** Commits offsets as this member (fenced by member epoch and bucket ownership). */
  commit(offsets: readonly MemberCommitOffset[]): Promise<void> {
    return this.#port.commit(this.groupId, offsets, {
      memberId: this.memberId,
      memberEpoch: this.#memberEpoch,
    });
  }

  /**
   * Leaves the group: stops the loop, awaits `onRevoked` for everything owned (commit there), then
   * tells the coordinator. `temporary` (static members only) keeps the assignment for the instance id.
   * Called from the member's own onRevoked or onAssigned, it does not wait for that callback (which
   * waits for it), and the buckets that onRevoked is releasing are not revoked a second time.
   */
  async leave(options: { temporary?: boolean } = {}): Promise<void> {
    if (this.#runState !== 'running') return;
    if (options.temporary === true && this.#options.instanceId === undefined)
      throw new TypeError('a temporary leave needs an instanceId');
    this.#runState = 'leaving';
    this.#timer?.cancel();
    await this.#inFlight;
    const fromCallback = reconcilingCallbackOf.getStore() === this;
    if (!fromCallback) await this.#reconciling;
    const owned = fromCallback ? this.#owned.difference(this.#revoking) : this.#owned;
    if (owned.size > 0) await this.#callback(this.#options.onRevoked, owned);
    this.#owned = BucketSet.EMPTY;
    try {
      await this.#port.heartbeat(this.groupId, {
        memberId: this.memberId,
        memberEpoch:
          options.temporary === true ? LEAVE_GROUP_STATIC_MEMBER_EPOCH : LEAVE_GROUP_MEMBER_EPOCH,
        ...(this.#options.instanceId === undefined ? {} : { instanceId: this.#options.instanceId }),
      });
    } catch (error) {
      // Already gone, or replaced by another incarnation of its instance, is as good as left.
      if (
        !isOffsetStoreError(error, 'UNKNOWN_MEMBER_ID') &&
        !isOffsetStoreError(error, 'FENCED_INSTANCE_ID')
      )
        throw error;
    } finally {
      this.#runState = 'stopped';
      this.#port.stopped?.(this);
    }
  }

  /**
   * Stops heartbeating without telling the coordinator, as a crashed process would: the member's
   * buckets move to others when its session times out. Nothing is called back.
   */
  stop(): void {
    this.#runState = 'stopped';
    this.#timer?.cancel();
    this.#timer = null;
    this.#port.stopped?.(this);
  }

  #request(): HeartbeatRequest {
    const o = this.#options;
    return {
      memberEpoch: this.#memberEpoch,
      subscribedTableIds: o.subscribedTableIds,
      ownedBuckets: this.#owned.toArray(),
      ...(this.#memberId === undefined ? {} : { memberId: this.#memberId }),
      ...(o.instanceId === undefined ? {} : { instanceId: o.instanceId }),
      ...(o.assignor === undefined ? {} : { assignor: o.assignor }),
      ...(o.sessionTimeoutMs === undefined ? {} : { sessionTimeoutMs: o.sessionTimeoutMs }),
      ...(o.rebalanceTimeoutMs === undefined ? {} : { rebalanceTimeoutMs: o.rebalanceTimeoutMs }),
    };
  }

  #accept(response: HeartbeatResponse): void {
    this.#memberId = response.memberId;
    this.#memberEpoch = response.memberEpoch;
    this.#heartbeatIntervalMs = response.heartbeatIntervalMs;
    if (response.assignment !== undefined) {
      this.#pendingTarget = BucketSet.of(
        response.assignment.map((ref) => normalizeBucketRef(ref, 'assignment')),
      );
      this.#reconciling ??= this.#chained(this.#reconcile());
    }
  }

  #schedule(delayMs: number): void {
    this.#timer?.cancel();
    this.#timer = null;
    if (this.#runState !== 'running') return;
    this.#timer = this.#clock.setTimer(delayMs, () => {
      this.#timer = null;
      this.#tick();
    });
  }

  #tick(): void {
    if (this.#runState !== 'running' || this.#inFlight !== null) return;
    this.#inFlight = this.#heartbeat().then((nextDelayMs) => {
      this.#inFlight = null;
      const soon = this.#heartbeatSoon;
      this.#heartbeatSoon = false;
      this.#schedule(soon ? 0 : nextDelayMs);
    });
  }

  /** One heartbeat; returns the delay before the next one. Never rejects. */
  async #heartbeat(): Promise<number> {
    let response: HeartbeatResponse;
    try {
      response = await this.#port.heartbeat(this.groupId, this.#request());
    } catch (error) {
      if (this.#runState !== 'running') return 0;
      if (
        isOffsetStoreError(error, 'FENCED_MEMBER_EPOCH') ||
        isOffsetStoreError(error, 'UNKNOWN_MEMBER_ID')
      ) {
        this.#loseAll();
        return 0;
      }
      if (isOffsetStoreError(error, 'FENCED_INSTANCE_ID')) {
        // Replaced by another incarnation of its instance: it must not rejoin (it would take the
        // instance back once it is free), as a Kafka client stops.
        this.#loseAll();
        this.#report(error);
        this.stop();
        return 0;
      }
      this.#report(error);
      if (isOffsetStoreError(error, 'STORE_CLOSED')) this.stop();
      return this.#retryBackoffMs;
    }
    if (this.#runState !== 'running') return 0;
    this.#accept(response);
    return this.#heartbeatIntervalMs;
  }

  /**
   * The member was fenced: it owns nothing from now on, and hears so (onLost, else onRevoked). The
   * callbacks of one member never overlap, as a Kafka consumer runs its rebalance callbacks one after
   * another: onLost runs as a step of the reconciliation, after the callback of one in progress (an
   * onAssigned of buckets now lost among them), and what the member's next assignment brings follows
   * it. The heartbeat loop does not wait for it (its rejoin goes out meanwhile): onLost, or any
   * callback, may call leave(), which waits for the loop's heartbeat in flight.
   */
  #loseAll(): void {
    this.#incarnation++;
    this.#pendingTarget = null;
    this.#memberEpoch = 0;
    const lost = this.#owned;
    this.#owned = BucketSet.EMPTY;
    if (lost.size === 0) return;
    const tell = () => this.#callback(this.#options.onLost ?? this.#options.onRevoked, lost);
    const before = this.#reconciling ?? Promise.resolve();
    this.#reconciling = this.#chained(before.then(tell, tell).then(() => this.#reconcile()));
  }

  /** `work` as the reconciliation in progress, which is over (null) once it settles. */
  #chained(work: Promise<void>): Promise<void> {
    const chained: Promise<void> = work.finally(() => {
      if (this.#reconciling === chained) this.#reconciling = null;
    });
    return chained;
  }

  async #reconcile(): Promise<void> {
    while (this.#pendingTarget !== null && this.#runState === 'running') {
      const target = this.#pendingTarget;
      this.#pendingTarget = null;
      const incarnation = this.#incarnation;
      const revoked = this.#owned.difference(target);
      if (revoked.size > 0) {
        this.#revoking = revoked;
        try {
          await this.#callback(this.#options.onRevoked, revoked);
        } finally {
          this.#revoking = BucketSet.EMPTY;
        }
        if (incarnation !== this.#incarnation) return;
        this.#owned = this.#owned.difference(revoked);
      }
      const added = target.difference(this.#owned);
      if (added.size > 0) {
        this.#owned = this.#owned.union(added);
        await this.#callback(this.#options.onAssigned, added);
        if (incarnation !== this.#incarnation) return;
      }
      if (revoked.size > 0 || added.size > 0) this.#heartbeatNow();
    }
  }

  /** Reports a change at once instead of at the next interval. */
  #heartbeatNow(): void {
    if (this.#inFlight !== null) this.#heartbeatSoon = true;
    else this.#schedule(0);
  }

  /**
   * Tells onError. What onError itself throws or rejects with cannot go to onError again: it is a
   * process warning, and the loop goes on (a throw here would end the heartbeat loop, or fail the
   * join of a member that is already in the group, with nobody left to heartbeat or leave).
   */
  #report(error: unknown): void {
    const onError = this.#options.onError;
    if (onError === undefined) return;
    callUserCallback(onError, [error], (how, thrown) =>
      process.emitWarning(
        `onError of member ${String(this.#memberId)} of group ${this.groupId} ${how} (${failureMessage(thrown)}) on: ${failureMessage(error)}`,
        'OffsetStoreWarning',
      ),
    );
  }

  async #callback(
    callback: ((buckets: TableBucket[]) => void | Promise<void>) | undefined,
    buckets: BucketSet,
  ): Promise<void> {
    if (callback === undefined) return;
    try {
      await reconcilingCallbackOf.run(this, () => callback(buckets.toArray()));
    } catch (error) {
      this.#report(error);
    }
  }
}
