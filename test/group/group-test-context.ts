/**
 * Test context for the group coordinator, in the manner of Kafka's GroupMetadataManagerTestContext:
 * a ManualClock, an in-memory snapshot writer that records every write (msgpack round-tripped with
 * `useRecords: false`, as the store's codec will do), the records every operation emitted, a
 * simulated member that reconciles instantly (drops revoked buckets, adds assigned ones), and
 * `settle()`, the prelude of most tests: members heartbeat until their group is Stable.
 */
import { Packr } from 'msgpackr';
import { expect } from 'vitest';
import {
  bucketKey,
  GroupCoordinator,
  GroupStateMachine,
  type TableBucket,
  type GroupCoordinatorOptions,
  type GroupRecord,
  type GroupSnapshot,
  type GroupSnapshotWriter,
  type StoredGroupSnapshot,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type TableLayoutInput,
} from '../../src/group/index.js';
import { ManualClock, type Clock } from '../../src/util/index.js';

/** Bucket keys as strings, for sets and sorted comparisons in tests. */
const keyOf = (ref: TableBucket): string => String(bucketKey(ref));

const packr = new Packr({ useRecords: false });

/** Rounds of heartbeats settle() allows before it fails. */
const SETTLE_ROUNDS_MAX = 10;

/** Asserts a value is plain data: null, finite numbers, strings, bytes, arrays and plain objects only. */
function expectPlainData(value: unknown, path: string): void {
  if (value === null || typeof value === 'string' || value instanceof Uint8Array) return;
  if (typeof value === 'number') {
    expect(Number.isFinite(value), `${path} is not a finite number`).toBe(true);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => expectPlainData(v, `${path}[${i}]`));
    return;
  }
  expect(
    typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype,
    `${path} is not a plain object`,
  ).toBe(true);
  for (const [k, v] of Object.entries(value as object)) expectPlainData(v, `${path}.${k}`);
}

/** Records every snapshot write; can be told to fail or to hold writes until released. */
export class InMemorySnapshotWriter implements GroupSnapshotWriter {
  /** Every write; typed as consumer snapshots for the consumer tests (a classic test casts). */
  readonly writes: Array<{ groupId: string; snapshot: GroupSnapshot | null }> = [];
  readonly latest = new Map<string, GroupSnapshot | null>();
  failNext: Error | null = null;
  hold = false;
  /** Checks each snapshot is plain data that round-trips exactly (off for tests of many large snapshots). */
  verifyRoundTrip = true;
  readonly #held: Array<() => void> = [];

  writeSnapshot(groupId: string, snapshot: StoredGroupSnapshot | null): Promise<void> {
    if (this.failNext !== null) {
      const error = this.failNext;
      this.failNext = null;
      return Promise.reject(error);
    }
    if (snapshot !== null && this.verifyRoundTrip) expectPlainData(snapshot, 'snapshot');
    const decoded =
      snapshot === null ? null : (packr.unpack(packr.pack(snapshot)) as GroupSnapshot);
    if (snapshot !== null && this.verifyRoundTrip) expect(decoded).toStrictEqual(snapshot);
    this.writes.push({ groupId, snapshot: decoded });
    this.latest.set(groupId, decoded);
    if (!this.hold) return Promise.resolve();
    return new Promise((resolve) => this.#held.push(resolve));
  }

  /** Completes every held write. */
  release(): void {
    for (const resolve of this.#held.splice(0)) resolve();
  }

  writesFor(groupId: string): Array<GroupSnapshot | null> {
    return this.writes.filter((w) => w.groupId === groupId).map((w) => w.snapshot);
  }
}

export interface ContextOptions extends Partial<
  Omit<GroupCoordinatorOptions, 'writer' | 'clock' | 'onRecords'>
> {
  layouts?: Record<number, TableLayoutInput>;
  clock?: Clock & { advance?(ms: number): void };
}

/** A coordinator under test plus everything to observe it. */
export class GroupTestContext {
  readonly clock: ManualClock;
  readonly writer = new InMemorySnapshotWriter();
  readonly records: GroupRecord[] = [];
  readonly backgroundErrors: unknown[] = [];
  coordinator: GroupCoordinator;
  readonly #options: ContextOptions;

  constructor(options: ContextOptions = {}) {
    this.#options = options;
    this.clock = (options.clock as ManualClock | undefined) ?? new ManualClock();
    this.coordinator = this.#create();
    this.coordinator.onLoadComplete();
    for (const [tableId, layout] of Object.entries(options.layouts ?? {}))
      this.coordinator.setTableLayout(Number(tableId), layout);
  }

  #create(): GroupCoordinator {
    return new GroupCoordinator({
      ...this.#options,
      writer: this.writer,
      clock: this.clock,
      onRecords: (_groupId, records) => {
        for (const record of records)
          if (!record.type.startsWith('classic-')) this.records.push(record as GroupRecord);
      },
      onBackgroundError: (error) => this.backgroundErrors.push(error),
    });
  }

  heartbeat(request: HeartbeatRequest, groupId = 'g'): Promise<HeartbeatResponse> {
    return this.coordinator.heartbeat(groupId, request);
  }

  /** A simulated member of `groupId` subscribed to `tableIds`. */
  member(
    tableIds: number[],
    options: { groupId?: string; instanceId?: string; memberId?: string } = {},
  ): SimMember {
    return new SimMember(this, options.groupId ?? 'g', tableIds, options);
  }

  /** Replays every record emitted so far into a fresh state machine. */
  replayed(groupId = 'g'): ReturnType<GroupStateMachine['inspect']> {
    const machine = new GroupStateMachine();
    for (const record of this.records) machine.replay(record);
    return machine.inspect(groupId);
  }

  /** Simulates a crash and restart: a new coordinator loads the latest snapshots, then completes loading. */
  restart(
    layouts: Record<number, TableLayoutInput> = this.#options.layouts ?? {},
  ): GroupCoordinator {
    this.coordinator.close();
    this.records.length = 0;
    this.coordinator = this.#create();
    for (const [tableId, layout] of Object.entries(layouts))
      this.coordinator.setTableLayout(Number(tableId), layout);
    for (const [groupId, snapshot] of this.writer.latest)
      this.coordinator.loadSnapshot(groupId, snapshot);
    this.coordinator.onLoadComplete();
    return this.coordinator;
  }

  /**
   * Heartbeats `members` (all of one group) round by round until the group is Stable, each member
   * reconciling at once; a member that has not joined yet joins with its first heartbeat, and every
   * member beats at least once. Then asserts the group is Stable, no bucket has two owners, and each
   * member owns exactly what the coordinator assigned it. The clock does not move.
   */
  async settle(...members: SimMember[]): Promise<void> {
    const groupId = members[0]?.groupId;
    if (groupId === undefined || members.some((m) => m.groupId !== groupId))
      throw new TypeError('settle() needs members of one group');
    for (let round = 0; round < SETTLE_ROUNDS_MAX; round++) {
      for (const m of members) await m.beat();
      if (this.coordinator.groupState(groupId) === 'Stable') break;
    }
    expect(
      this.coordinator.groupState(groupId),
      `group ${groupId} after ${SETTLE_ROUNDS_MAX} rounds of heartbeats`,
    ).toBe('Stable');
    this.expectExclusiveOwnership(groupId);
    const assigned = new Map(
      (this.coordinator.describe(groupId)?.members ?? []).map((m) => [
        m.memberId,
        m.assignment.map(keyOf).sort(),
      ]),
    );
    for (const m of members)
      expect(m.ownedKeys(), `member ${m.memberId} owns its assignment`).toEqual(
        assigned.get(m.memberId as string),
      );
  }

  /** Asserts no bucket is owned (assigned or pending revocation) by two members. */
  expectExclusiveOwnership(groupId = 'g'): void {
    const seen = new Map<string, string>();
    for (const m of this.coordinator.inspect(groupId)?.members ?? []) {
      for (const ref of [...m.assigned, ...m.pendingRevocation]) {
        const key = keyOf(ref);
        expect(
          seen.get(key),
          `bucket ${key} owned by ${seen.get(key)} and ${m.memberId}`,
        ).toBeUndefined();
        seen.set(key, m.memberId);
      }
    }
  }
}

/** A member that reconciles instantly: after a response it owns exactly the assignment it was given. */
export class SimMember {
  memberId: string | undefined;
  epoch = 0;
  owned: TableBucket[] = [];
  /** Buckets a slow member still holds although its last assignment revoked them. */
  releasing: TableBucket[] = [];
  /** When set, revoked buckets are released only by finishRevocation(). */
  slowRevoke = false;
  readonly #ctx: GroupTestContext;
  readonly groupId: string;
  tableIds: number[];
  readonly instanceId: string | undefined;

  constructor(
    ctx: GroupTestContext,
    groupId: string,
    tableIds: number[],
    options: { instanceId?: string; memberId?: string },
  ) {
    this.#ctx = ctx;
    this.groupId = groupId;
    this.tableIds = tableIds;
    this.instanceId = options.instanceId;
    this.memberId = options.memberId;
  }

  request(extra: Partial<HeartbeatRequest> = {}): HeartbeatRequest {
    return {
      memberEpoch: this.epoch,
      subscribedTableIds: this.tableIds,
      ownedBuckets: this.epoch === 0 ? [] : this.owned,
      ...(this.memberId === undefined ? {} : { memberId: this.memberId }),
      ...(this.instanceId === undefined ? {} : { instanceId: this.instanceId }),
      ...extra,
    };
  }

  /** Heartbeats and applies the response (unless `lose` simulates a lost response). */
  async beat(
    extra: Partial<HeartbeatRequest> = {},
    options: { lose?: boolean } = {},
  ): Promise<HeartbeatResponse> {
    const response = await this.#ctx.heartbeat(this.request(extra), this.groupId);
    if (options.lose !== true) this.apply(response);
    return response;
  }

  apply(response: HeartbeatResponse): void {
    this.memberId = response.memberId;
    this.epoch = response.memberEpoch;
    if (response.assignment === undefined) return;
    if (!this.slowRevoke) {
      this.owned = response.assignment;
      return;
    }
    // A slow member: it adds new buckets at once but keeps revoked ones until finishRevocation().
    const assigned = new Set(response.assignment.map(keyOf));
    const held = new Set(this.owned.map(keyOf));
    this.owned = [...this.owned, ...response.assignment.filter((r) => !held.has(keyOf(r)))];
    this.releasing = this.owned.filter((r) => !assigned.has(keyOf(r)));
  }

  /** A slow member finishes revoking: it drops the buckets its last assignment no longer held. */
  finishRevocation(): void {
    const releasing = new Set(this.releasing.map(keyOf));
    this.owned = this.owned.filter((r) => !releasing.has(keyOf(r)));
    this.releasing = [];
  }

  /** After a fencing error: abandon everything and rejoin at epoch 0 next time. */
  reset(): void {
    this.epoch = 0;
    this.owned = [];
    this.releasing = [];
  }

  async leave(memberEpoch = -1): Promise<HeartbeatResponse> {
    const response = await this.#ctx.heartbeat(
      {
        memberId: this.memberId as string,
        memberEpoch,
        ...(this.instanceId === undefined ? {} : { instanceId: this.instanceId }),
      },
      this.groupId,
    );
    this.owned = [];
    this.releasing = [];
    this.epoch = response.memberEpoch;
    return response;
  }

  ownedKeys(): string[] {
    return this.owned.map(keyOf).sort();
  }
}

/** Buckets 0..count-1 of a non-partitioned table. */
export function buckets(tableId: number, ids: number[]): TableBucket[] {
  return ids.map((bucketId) => ({ tableId, partitionId: null, bucketId }));
}

/** 0..n-1 */
export function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
