/**
 * Test context for the classic (JoinGroup/SyncGroup) protocol, in the manner of Kafka's
 * GroupMetadataManagerTestContext: a GroupCoordinator on a ManualClock with an in-memory snapshot
 * writer (msgpack round-tripped), the classic records every operation emitted (so a test can replay
 * them into a fresh state machine and compare), calls whose settlement a test can observe without
 * awaiting them (a parked JoinGroup must stay unsettled), and a restart that reloads the latest
 * snapshots. The initial rebalance delay is 0 unless a test asks for one; a delay of 0 still
 * completes on a timer, so `advance(0)` runs it.
 */
import { expect } from 'vitest';
import { isOffsetStoreError, type OffsetStoreError } from '../../src/errors/index.js';
import {
  ClassicGroupStateMachine,
  GroupCoordinator,
  type ClassicCoordinator,
  type ClassicGroupInspection,
  type ClassicGroupRecord,
  type ClassicHeartbeatRequest,
  type ClassicJoinGroupRequest,
  type ClassicJoinGroupResult,
  type ClassicJoinedGroup,
  type ClassicLeaveGroupRequest,
  type ClassicLeaveGroupResult,
  type ClassicSyncGroupRequest,
  type ClassicSyncGroupResult,
  type GroupCoordinatorOptions,
} from '../../src/group/index.js';
import { ManualClock } from '../../src/util/index.js';
import { InMemorySnapshotWriter } from './group-test-context.js';

/** A call whose outcome a test inspects without awaiting it. */
export class Call<T> {
  state: 'pending' | 'fulfilled' | 'rejected' = 'pending';
  value: T | undefined;
  error: unknown;
  readonly promise: Promise<T>;

  constructor(promise: Promise<T>) {
    this.promise = promise;
    promise.then(
      (value) => {
        this.state = 'fulfilled';
        this.value = value;
      },
      (error: unknown) => {
        this.state = 'rejected';
        this.error = error;
      },
    );
  }

  /** Resolves once the call has settled (either way), with the call. */
  async settled(): Promise<this> {
    await this.promise.catch(() => {});
    await tick();
    return this;
  }

  /** The value; fails the test unless the call succeeded. */
  get ok(): T {
    expect(this.state, `call ${this.state}: ${String(this.error)}`).toBe('fulfilled');
    return this.value as T;
  }

  /** The error's code; fails the test unless the call failed with an OffsetStoreError. */
  get code(): string {
    expect(this.state, `call ${this.state}`).toBe('rejected');
    expect(isOffsetStoreError(this.error), String(this.error)).toBe(true);
    return (this.error as OffsetStoreError).code;
  }
}

/** Lets queued microtasks (answers, lane hand-overs) run. */
export function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Protocols of a consumer: each name with `metadata` (default: the name's bytes). */
export function protocols(
  names: readonly string[],
  metadata?: string,
): { name: string; metadata: Buffer }[] {
  return names.map((name) => ({ name, metadata: Buffer.from(metadata ?? `sub:${name}`) }));
}

export interface ClassicContextOptions extends Partial<
  Omit<GroupCoordinatorOptions, 'writer' | 'clock' | 'onRecords'>
> {}

/** A coordinator under test, driven through its classic protocol. */
export class ClassicTestContext {
  readonly clock = new ManualClock();
  readonly writer = new InMemorySnapshotWriter();
  readonly records: ClassicGroupRecord[] = [];
  readonly backgroundErrors: unknown[] = [];
  coordinator: GroupCoordinator;
  readonly #options: ClassicContextOptions;
  #ids = 0;

  constructor(options: ClassicContextOptions = {}) {
    this.#options = { initialRebalanceDelayMs: 0, ...options };
    this.coordinator = this.#create();
    this.coordinator.onLoadComplete();
  }

  #create(): GroupCoordinator {
    return new GroupCoordinator({
      newMemberId: () => `m${++this.#ids}`,
      ...this.#options,
      writer: this.writer,
      clock: this.clock,
      onRecords: (_groupId, records) => {
        for (const record of records)
          if (record.type.startsWith('classic-')) this.records.push(record as ClassicGroupRecord);
      },
      onBackgroundError: (error) => this.backgroundErrors.push(error),
    });
  }

  get classic(): ClassicCoordinator {
    return this.coordinator.classic;
  }

  join(
    request: Partial<ClassicJoinGroupRequest> = {},
    groupId = 'g',
  ): Call<ClassicJoinGroupResult> {
    return new Call(
      this.classic.joinGroup(groupId, {
        protocolType: 'consumer',
        protocols: protocols(['range']),
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 30_000,
        ...request,
      }),
    );
  }

  sync(request: ClassicSyncGroupRequest, groupId = 'g'): Call<ClassicSyncGroupResult> {
    return new Call(this.classic.syncGroup(groupId, request));
  }

  heartbeat(request: ClassicHeartbeatRequest, groupId = 'g'): Call<void> {
    return new Call(this.classic.heartbeat(groupId, request));
  }

  leave(request: ClassicLeaveGroupRequest, groupId = 'g'): Call<ClassicLeaveGroupResult> {
    return new Call(this.classic.leaveGroup(groupId, request));
  }

  /** Moves the clock and lets the answers it caused settle. */
  async advance(ms: number): Promise<void> {
    this.clock.advance(ms);
    await tick();
  }

  state(groupId = 'g'): string | undefined {
    return this.classic.inspect(groupId)?.state;
  }

  inspect(groupId = 'g'): ClassicGroupInspection | null {
    return this.classic.inspect(groupId);
  }

  /** The ids of the group's members, sorted (none without a group). */
  memberIds(groupId = 'g'): string[] {
    return (this.inspect(groupId)?.members.map((m) => m.memberId) ?? []).sort();
  }

  /** Replays every classic record emitted so far into a fresh state machine. */
  replayed(groupId = 'g'): ClassicGroupInspection | null {
    const machine = new ClassicGroupStateMachine();
    for (const record of this.records) machine.replay(record);
    return machine.inspect(groupId);
  }

  /** Simulates a crash and restart: a new coordinator loads the latest snapshots. */
  restart(): void {
    this.coordinator.close();
    this.records.length = 0;
    this.coordinator = this.#create();
    for (const [groupId, snapshot] of this.writer.latest)
      this.coordinator.loadSnapshot(groupId, snapshot);
    this.coordinator.onLoadComplete();
  }

  /**
   * Sends a JoinGroup for each request (in this order), completes the join phase, and returns the
   * answers in request order, the leader's, and the followers' (`follower`: the first of them).
   */
  async joinPhase(
    requests: readonly Partial<ClassicJoinGroupRequest>[],
    groupId = 'g',
  ): Promise<{
    all: ClassicJoinedGroup[];
    leader: ClassicJoinedGroup;
    followers: ClassicJoinedGroup[];
    follower: ClassicJoinedGroup;
  }> {
    const calls = requests.map((request) => this.join(request, groupId));
    await this.advance(0);
    const all = calls.map(joined);
    const leader = all.find((j) => j.memberId === j.leader)!;
    const followers = all.filter((j) => j !== leader);
    return { all, leader, followers, follower: followers[0]! };
  }

  /**
   * Joins `count` dynamic members, completes the join phase, syncs them with the leader handing each
   * member the assignment `a:<memberId>`, and returns them Stable.
   */
  async stableGroup(
    count: number,
    groupId = 'g',
    extra: Partial<ClassicJoinGroupRequest> = {},
  ): Promise<ClassicJoinedGroup[]> {
    const joins = Array.from({ length: count }, () => this.join(extra, groupId));
    await this.advance(0);
    const joined = joins.map((j) => j.ok as ClassicJoinedGroup);
    await this.syncAll(joined, groupId);
    expect(this.state(groupId)).toBe('Stable');
    return joined;
  }

  /** Syncs every member of a generation (followers first, then the leader) and checks each got `a:<memberId>`. */
  async syncAll(joined: readonly ClassicJoinedGroup[], groupId = 'g'): Promise<void> {
    const leader = joined.find((j) => j.memberId === j.leader)!;
    const followers = joined
      .filter((j) => j !== leader)
      .map((j) => this.sync({ memberId: j.memberId, generationId: j.generationId }, groupId));
    const assignments = leader.members.map((m) => ({
      memberId: m.memberId,
      assignment: Buffer.from(`a:${m.memberId}`),
    }));
    const own = this.sync(
      { memberId: leader.memberId, generationId: leader.generationId, assignments },
      groupId,
    );
    await tick();
    for (const [i, call] of [...followers, own].entries()) {
      const memberId =
        i < followers.length ? joined.filter((j) => j !== leader)[i]!.memberId : leader.memberId;
      expect(call.ok.assignment.toString()).toBe(`a:${memberId}`);
    }
  }
}

/** The joined answer of a call; fails the test otherwise. */
export function joined(call: Call<ClassicJoinGroupResult>): ClassicJoinedGroup {
  const result = call.ok;
  expect(result.outcome).toBe('joined');
  return result as ClassicJoinedGroup;
}
