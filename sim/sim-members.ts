/**
 * Simulated group members (KIP-848 heartbeats through `store.heartbeat`), and the group checks:
 * - no bucket is owned by two members at the same member epoch (from every heartbeat answer);
 * - no commit is accepted from a member that was fenced: one whose session had expired (silent for
 *   longer than its session timeout, counted from its last heartbeat or from the reopen that
 *   restored it), or one told FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID that has not rejoined since;
 * - no commit is accepted at an epoch older than one the member's heartbeat was given earlier in
 *   the same process (members send such stale commits now and then).
 *
 * Members heartbeat on time while alive; a silent member stops heartbeating but may still commit
 * (a zombie), which is how fencing is exercised.
 */
import { isOffsetStoreError, type TableBucket } from '../src/index.js';
import type { ActionWeights, SimConfig } from './sim-config.js';
import type { SimRandom } from './sim-random.js';
import type { Simulation } from './simulator.js';

/** Slack for I/O between a heartbeat's issue and its processing (the session timer starts there). */
const SESSION_SLACK_MS = 2000;

interface SimMember {
  readonly id: string;
  readonly groupId: string;
  readonly tables: number[];
  epoch: number;
  assignment: TableBucket[];
  alive: boolean;
  joined: boolean;
  heartbeatInFlight: boolean;
  nextHeartbeatMs: number;
  /** Issue time of its latest heartbeat that was not refused (in flight ones count). */
  lastHeartbeatMs: number;
  /** When the store said it is fenced (and the epoch it said it for), until a heartbeat succeeds again. */
  fenced: { atMs: number; epoch: number } | undefined;
  /** The latest epoch a heartbeat answer gave it: when, and in which process. */
  told: { epoch: number; atMs: number; incarnation: number } | undefined;
  /**
   * A power loss may have taken the group's record of it (durability 'os'): until a heartbeat is
   * answered again, the store may not know it, so its tables are not certainly subscribed.
   */
  unconfirmed: boolean;
}

/** The members of the member groups. */
export class SimMembers {
  readonly #config: SimConfig;
  readonly #random: SimRandom;
  /** Whether a member's commit carries an epoch older than its own (a fork: the workload's own
   * stream is left as it was). */
  readonly #staleRandom: SimRandom;
  readonly #members: SimMember[] = [];
  /** `${group}|${epoch}|${table}:${bucket}` -> member id. */
  readonly #owners = new Map<string, string>();
  /** `${group}|${table}` -> the last sampled time it may have had no subscribed member. */
  readonly #unsubscribed = new Map<string, number>();
  #reopenedMs = 0;
  #next = 0;

  constructor(config: SimConfig, random: SimRandom) {
    this.#config = config;
    this.#random = random;
    this.#staleRandom = random.fork('stale-epochs');
  }

  reopened(sim: Simulation): void {
    this.#reopenedMs = sim.nowMs();
    for (const m of this.#members) {
      m.heartbeatInFlight = false;
      if (m.alive && m.joined) this.#schedule(sim, m, 0);
    }
  }

  /** Arms the member's next heartbeat, `delayMs` from now, on the simulation's clock. */
  #schedule(sim: Simulation, m: SimMember, delayMs: number): void {
    const incarnation = sim.incarnation;
    m.nextHeartbeatMs = sim.nowMs() + delayMs;
    sim.clock.setTimer(delayMs, () => {
      if (
        sim.incarnation === incarnation &&
        sim.store !== undefined &&
        m.alive &&
        m.joined &&
        !m.heartbeatInFlight
      )
        this.#heartbeat(sim, m, false);
    });
  }

  crashed(): void {
    for (const m of this.#members) m.heartbeatInFlight = false;
  }

  /**
   * A power loss took group records a process acknowledged in durability 'os': a group may be back
   * at an older epoch, with members that had left or been fenced, and without ones that joined.
   */
  rolledBack(): void {
    for (const m of this.#members) {
      m.fenced = undefined;
      m.unconfirmed = true;
    }
  }

  removedByAdmin(_groupId: string): boolean {
    return false;
  }

  /** A live member subscribed to `tableId` heartbeated within its session: the table's offsets do not expire. */
  certainlySubscribed(groupId: string, tableId: number, nowMs: number): boolean {
    return this.#members.some(
      (m) =>
        m.groupId === groupId &&
        m.joined &&
        m.alive &&
        !m.unconfirmed &&
        m.epoch > 0 &&
        m.tables.includes(tableId) &&
        nowMs - m.lastHeartbeatMs < this.#config.sessionTimeoutMs - SESSION_SLACK_MS,
    );
  }

  /** Records, at every event, which (group, table) pairs may be without a subscriber. */
  sample(nowMs: number): void {
    for (const groupId of this.#config.memberGroups) {
      for (const tableId of [1, 2, 3]) {
        if (!this.certainlySubscribed(groupId, tableId, nowMs))
          this.#unsubscribed.set(`${groupId}|${tableId}`, nowMs);
      }
    }
  }

  /**
   * Whether, at some sampled moment in [fromMs, nowMs], the table may have had no subscribed member in
   * the group (for a group that never has members: always).
   */
  unsubscribedSinceMs(groupId: string, tableId: number, fromMs: number, nowMs: number): boolean {
    if (
      !this.#config.memberGroups.includes(groupId) ||
      !this.certainlySubscribed(groupId, tableId, nowMs)
    )
      return true;
    return (this.#unsubscribed.get(`${groupId}|${tableId}`) ?? -Infinity) >= fromMs;
  }

  /**
   * Why a commit by (memberId, epoch) issued at `issuedMs` in process `incarnation` must have been
   * refused, or undefined.
   */
  fencedAt(
    memberId: string,
    epoch: number,
    issuedMs: number,
    incarnation: number,
  ): string | undefined {
    const m = this.#members.find((x) => x.id === memberId);
    if (m === undefined) return undefined;
    // A member's epoch never goes back within one process (a member that rejoins gets the group's
    // epoch, which only grows): a commit at an epoch older than one its heartbeat was given before
    // is stale. (A new process restores epochs from the group's snapshot, which may be older.)
    const told = m.told;
    if (
      told !== undefined &&
      told.incarnation === incarnation &&
      told.atMs <= issuedMs &&
      epoch < told.epoch
    )
      return `its heartbeat was given epoch ${told.epoch} at ${told.atMs}, in this process`;
    const sessionStart = Math.max(m.lastHeartbeatMs, this.#reopenedMs);
    if (issuedMs > sessionStart + this.#config.sessionTimeoutMs + SESSION_SLACK_MS) {
      return `its session (${this.#config.sessionTimeoutMs} ms) had expired: last heartbeat ${m.lastHeartbeatMs}, reopen ${this.#reopenedMs}`;
    }
    if (m.fenced !== undefined && issuedMs > m.fenced.atMs && epoch <= m.fenced.epoch) {
      return `it was fenced at ${m.fenced.atMs} at epoch ${m.fenced.epoch}`;
    }
    return undefined;
  }

  act(action: keyof ActionWeights, sim: Simulation): void {
    const w = this.#random;
    const live = this.#members.filter((m) => m.alive && m.joined && !m.heartbeatInFlight);
    switch (action) {
      case 'join': {
        if (this.#members.filter((m) => m.alive).length >= 8) return;
        const member: SimMember = {
          id: `member-${this.#next++}`,
          groupId: w.pick(this.#config.memberGroups),
          tables: w.chance(0.5) ? [1] : [1, 2],
          epoch: 0,
          assignment: [],
          alive: true,
          joined: true,
          heartbeatInFlight: false,
          nextHeartbeatMs: 0,
          lastHeartbeatMs: sim.nowMs(),
          fenced: undefined,
          told: undefined,
          unconfirmed: false,
        };
        this.#members.push(member);
        this.#heartbeat(sim, member, false);
        return;
      }
      case 'leave': {
        if (live.length === 0) return;
        this.#heartbeat(sim, w.pick(live), true);
        return;
      }
      case 'silence': {
        if (live.length === 0) return;
        const m = w.pick(live);
        m.alive = false;
        sim.log(`${m.id} goes silent at epoch ${m.epoch}`);
        return;
      }
      case 'memberCommit':
      case 'zombieCommit': {
        const pool = this.#members.filter(
          (m) =>
            m.joined &&
            m.epoch > 0 &&
            m.assignment.length > 0 &&
            (action === 'zombieCommit' ? !m.alive : m.alive),
        );
        if (pool.length === 0) return;
        const m = w.pick(pool);
        const buckets = [
          ...new Set(
            Array.from({ length: w.int(1, Math.min(4, m.assignment.length)) }, () =>
              w.pick(m.assignment),
            ),
          ),
        ];
        const offsets = buckets.map((b) => ({
          tableId: b.tableId,
          bucketId: b.bucketId,
          offset: sim.nextOffset++,
        }));
        // Now and then a commit carries the epoch before its own, as a consumer whose commit was
        // queued across an epoch bump sends it: it must be refused (STALE_MEMBER_EPOCH).
        const stale = m.epoch > 1 && this.#staleRandom.chance(0.1);
        sim.commit('commit', m.groupId, offsets, {
          memberId: m.id,
          memberEpoch: stale ? m.epoch - 1 : m.epoch,
          zombie: !m.alive,
        });
        return;
      }
      default:
        return;
    }
  }

  /**
   * Whether `m` may still believe it owns what it was given at `epoch`: it has not left, has not been
   * told it is fenced since, and its session has not expired (after which the store has removed it,
   * and its commits are refused).
   */
  #claims(m: SimMember, epoch: number, nowMs: number): boolean {
    if (!m.joined || m.epoch !== epoch || m.fenced !== undefined) return false;
    // The coordinator removes a silent member when its session timer fires, at exactly its last
    // heartbeat plus the session timeout: from that instant on it may claim nothing.
    return nowMs < Math.max(m.lastHeartbeatMs, this.#reopenedMs) + this.#config.sessionTimeoutMs;
  }

  /** The coordinator's own view: no bucket owned (assigned or still being revoked) by two members. */
  #checkCoordinator(sim: Simulation, groupId: string): void {
    sim.store!.describeGroup(groupId).then(
      (group) => {
        const owners = new Map<string, string>();
        for (const member of group.members) {
          for (const b of [...member.assignment, ...member.pendingRevocation]) {
            const key = `${b.tableId}:${b.partitionId ?? ''}:${b.bucketId}`;
            const owner = owners.get(key);
            if (owner !== undefined && owner !== member.memberId)
              sim.fail(
                `the coordinator has bucket ${key} of ${groupId} owned by ${owner} and by ${member.memberId}`,
              );
            owners.set(key, member.memberId);
          }
        }
      },
      () => {},
    );
  }

  #heartbeat(sim: Simulation, m: SimMember, leave: boolean): void {
    const store = sim.store!;
    const sentEpoch = leave ? -1 : m.epoch;
    const request =
      m.epoch === 0 && !leave
        ? {
            memberId: m.id,
            memberEpoch: 0,
            subscribedTableIds: m.tables,
            sessionTimeoutMs: this.#config.sessionTimeoutMs,
          }
        : {
            memberId: m.id,
            memberEpoch: sentEpoch,
            ownedBuckets: leave ? undefined : m.assignment,
          };
    const issuedMs = sim.nowMs();
    m.heartbeatInFlight = true;
    m.lastHeartbeatMs = issuedMs;
    const what = `heartbeat ${m.id}@${sentEpoch}${leave ? ' (leave)' : ''}`;
    sim.log(what);
    sim.track(
      what,
      () => store.heartbeat(m.groupId, request),
      (outcome) => {
        m.heartbeatInFlight = false;
        const nowMs = sim.nowMs();
        if (!outcome.ok) {
          const error = outcome.error;
          if (
            isOffsetStoreError(error, 'FENCED_MEMBER_EPOCH') ||
            isOffsetStoreError(error, 'UNKNOWN_MEMBER_ID')
          ) {
            // Drop everything and rejoin at epoch 0 with the same id, as a KIP-848 consumer does.
            m.fenced = { atMs: issuedMs, epoch: Math.max(m.epoch, m.fenced?.epoch ?? 0) };
            m.epoch = 0;
            m.assignment = [];
            if (leave) m.joined = false;
            else if (m.alive) this.#schedule(sim, m, 0);
          } else if (isOffsetStoreError(error)) {
            if (leave) m.joined = false;
            else if (m.alive) this.#schedule(sim, m, this.#config.heartbeatIntervalMs);
          } else {
            sim.fail(
              `${what} rejected with a non-OffsetStoreError: ${(error as Error).stack ?? String(error)}`,
            );
          }
          return;
        }
        const response = outcome.value;
        if (leave) {
          m.joined = false;
          m.alive = false;
          m.epoch = response.memberEpoch;
          return;
        }
        m.fenced = undefined;
        m.unconfirmed = false;
        m.epoch = response.memberEpoch;
        m.told = { epoch: m.epoch, atMs: nowMs, incarnation: sim.incarnation };
        if (response.assignment !== undefined)
          m.assignment = response.assignment.map((b) => ({ ...b }));
        if (m.alive) this.#schedule(sim, m, response.heartbeatIntervalMs);
        // Within one process, no two members that may still believe in their assignments hold a
        // bucket at the same epoch. (Across a restart the group's epochs restart from its snapshot,
        // so a zombie of the old process may hold an epoch handed out again; the coordinator no
        // longer knows it, which the coordinator-side check and the commit fencing check cover.)
        for (const b of m.assignment) {
          const key = `${sim.incarnation}|${m.groupId}|${m.epoch}|${b.tableId}:${b.bucketId}`;
          const owner = this.#owners.get(key);
          const other =
            owner === undefined || owner === m.id
              ? undefined
              : this.#members.find((x) => x.id === owner);
          if (other !== undefined && this.#claims(other, m.epoch, nowMs)) {
            sim.fail(
              `bucket ${b.tableId}:${b.bucketId} of ${m.groupId} owned at epoch ${m.epoch} by ${owner} and by ${m.id}`,
            );
          }
          this.#owners.set(key, m.id);
        }
        this.#checkCoordinator(sim, m.groupId);
      },
    );
  }
}
