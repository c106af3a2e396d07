/**
 * Model-based property test of the coordinator: random joins, heartbeats (some with lost
 * responses) from members that release revoked buckets only in a later step (as a service that
 * commits in onRevoked does), leaves, kills (a member stops heartbeating), clock advances (session and rebalance
 * timeouts), crashes (restart from the latest snapshots), failed snapshot writes and layout changes.
 *
 * After every step:
 *  - the coordinator never lets two members own a bucket (assigned or pending revocation);
 *  - a simulated member whose epoch matches the coordinator's view of it ("in good standing", so its
 *    commits would be accepted) owns only buckets the coordinator attributes to it — hence no two
 *    members in good standing own the same bucket;
 *  - replaying the records emitted since the last restart (on top of the restored snapshot) gives
 *    the coordinator's state.
 * At the end, the live members heartbeat until the group settles: it must be Stable, every bucket
 * owned exactly once, sizes within one (uniform assignor, identical subscriptions).
 *
 * Half the runs pace target assignments (assignmentIntervalMs 3000), so groups also sit in Assigning.
 *
 * GROUP_PROPERTY_RUNS sets the number of runs (default 40); GROUP_PROPERTY_SEED replays a seed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isOffsetStoreError, OffsetStoreError } from '../../src/errors/index.js';
import { bucketKey, GroupStateMachine, type TableBucket } from '../../src/group/index.js';
import { snapshotToRecords } from '../../src/group/group-snapshot.js';
import { GroupTestContext, type SimMember } from './group-test-context.js';

/** Bucket keys as strings, for sets and sorted comparisons in tests. */
const keyOf = (ref: TableBucket): string => String(bucketKey(ref));

type Action =
  | { t: 'join' }
  | { t: 'beat'; i: number }
  | { t: 'beatLost'; i: number }
  | { t: 'revoke'; i: number }
  | { t: 'leave'; i: number }
  | { t: 'kill'; i: number }
  | { t: 'advance'; ms: number }
  | { t: 'crash' }
  | { t: 'failWrite' }
  | { t: 'layout'; bucketCount: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Action>({ t: 'join' }) },
  { weight: 10, arbitrary: fc.nat(20).map<Action>((i) => ({ t: 'beat', i })) },
  { weight: 2, arbitrary: fc.nat(20).map<Action>((i) => ({ t: 'beatLost', i })) },
  { weight: 5, arbitrary: fc.nat(20).map<Action>((i) => ({ t: 'revoke', i })) },
  { weight: 1, arbitrary: fc.nat(20).map<Action>((i) => ({ t: 'leave', i })) },
  { weight: 1, arbitrary: fc.nat(20).map<Action>((i) => ({ t: 'kill', i })) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom(1000, 5000, 20_000, 50_000)
      .map<Action>((ms) => ({ t: 'advance', ms })),
  },
  { weight: 1, arbitrary: fc.constant<Action>({ t: 'crash' }) },
  { weight: 1, arbitrary: fc.constant<Action>({ t: 'failWrite' }) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1, max: 12 })
      .map<Action>((bucketCount) => ({ t: 'layout', bucketCount })),
  },
);

interface Client {
  sim: SimMember;
  alive: boolean;
}

class Model {
  readonly ctx: GroupTestContext;

  constructor(assignmentIntervalMs: number) {
    this.ctx = new GroupTestContext({
      layouts: { 1: { bucketCount: 6 } },
      rebalanceTimeoutMs: 30_000,
      assignmentIntervalMs,
    });
  }

  readonly clients: Client[] = [];
  layout = { bucketCount: 6 };
  /** The state the coordinator was restored from, replayed before the records emitted since. */
  restoredFrom: ReturnType<typeof this.ctx.writer.latest.get> | undefined = undefined;

  pick(i: number): Client | undefined {
    const live = this.clients.filter((c) => c.alive);
    return live.length === 0 ? undefined : live[i % live.length];
  }

  async beat(client: Client, lose = false): Promise<void> {
    try {
      await client.sim.beat({}, { lose });
    } catch (error) {
      if (
        isOffsetStoreError(error, 'FENCED_MEMBER_EPOCH') ||
        isOffsetStoreError(error, 'UNKNOWN_MEMBER_ID')
      )
        client.sim.reset();
      else if (!isOffsetStoreError(error, 'LOG_STORAGE_ERROR')) throw error; // a failed write is a lost response
    }
  }

  async step(a: Action): Promise<void> {
    const { ctx } = this;
    switch (a.t) {
      case 'join': {
        if (this.clients.filter((c) => c.alive).length >= 8) return;
        const client = {
          sim: ctx.member([1], { memberId: `m${this.clients.length}` }),
          alive: true,
        };
        client.sim.slowRevoke = true;
        this.clients.push(client);
        return this.beat(client);
      }
      case 'beat':
      case 'beatLost': {
        const client = this.pick(a.i);
        return client === undefined ? undefined : this.beat(client, a.t === 'beatLost');
      }
      case 'revoke':
        this.pick(a.i)?.sim.finishRevocation();
        return;
      case 'leave': {
        const client = this.pick(a.i);
        if (client === undefined || client.sim.memberId === undefined) return;
        client.alive = false;
        await client.sim.leave().catch((error: unknown) => {
          if (
            !isOffsetStoreError(error, 'UNKNOWN_MEMBER_ID') &&
            !isOffsetStoreError(error, 'LOG_STORAGE_ERROR')
          )
            throw error;
        });
        return;
      }
      case 'kill': {
        const client = this.pick(a.i);
        if (client !== undefined) client.alive = false; // it keeps believing it owns its buckets
        return;
      }
      case 'advance':
        ctx.clock.advance(a.ms);
        return;
      case 'crash':
        this.restoredFrom = ctx.writer.latest.get('g');
        ctx.restart({ 1: this.layout });
        return;
      case 'failWrite':
        ctx.writer.failNext = new OffsetStoreError('LOG_STORAGE_ERROR', 'injected');
        return;
      case 'layout':
        this.layout = { bucketCount: a.bucketCount };
        ctx.coordinator.setTableLayout(1, this.layout);
        return;
    }
  }

  check(): void {
    const { ctx } = this;
    ctx.expectExclusiveOwnership();
    const view = new Map((ctx.coordinator.inspect('g')?.members ?? []).map((m) => [m.memberId, m]));
    const goodStanding = new Map<string, string>();
    for (const { sim } of this.clients) {
      const member = sim.memberId === undefined ? undefined : view.get(sim.memberId);
      if (member === undefined || member.memberEpoch !== sim.epoch || sim.epoch <= 0) continue;
      const attributed = new Set([...member.assigned, ...member.pendingRevocation].map(keyOf));
      for (const key of sim.ownedKeys()) {
        expect(
          attributed.has(key),
          `${sim.memberId} owns ${key} at epoch ${sim.epoch} without the coordinator knowing`,
        ).toBe(true);
        expect(
          goodStanding.get(key),
          `${key} owned by ${goodStanding.get(key)} and ${sim.memberId}`,
        ).toBeUndefined();
        goodStanding.set(key, sim.memberId as string);
      }
    }
    const machine = new GroupStateMachine();
    if (this.restoredFrom != null)
      for (const r of snapshotToRecords('g', this.restoredFrom)) machine.replay(r);
    for (const r of ctx.records) machine.replay(r);
    expect(machine.inspect('g')).toEqual(ctx.coordinator.inspect('g'));
  }

  async settle(): Promise<void> {
    const { ctx } = this;
    ctx.writer.failNext = null;
    const live = this.clients.filter((c) => c.alive);
    for (let round = 0; round < 40; round++) {
      for (const client of live) {
        client.sim.finishRevocation();
        await this.beat(client);
      }
      this.check();
      ctx.clock.advance(2000);
    }
    for (const client of live) await this.beat(client);
    this.check();
    const state = ctx.coordinator.groupState('g');
    if (live.length === 0) {
      expect([null, 'Empty']).toContain(state);
      return;
    }
    expect(state).toBe('Stable');
    const owned = live.flatMap((c) => c.sim.ownedKeys());
    expect(new Set(owned).size).toBe(owned.length);
    expect(owned.length).toBe(this.layout.bucketCount);
    const counts = live.map((c) => c.sim.owned.length);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
  }
}

describe('group coordinator property', () => {
  it('random membership, time, crash and failure sequences never give a bucket two owners, and settle balanced', async () => {
    const seed = Number(process.env.GROUP_PROPERTY_SEED ?? Date.now() % 1_000_000);
    const numRuns = Number(process.env.GROUP_PROPERTY_RUNS ?? 40);
    console.log(
      `group coordinator property: seed=${seed} runs=${numRuns} (replay with GROUP_PROPERTY_SEED=${seed})`,
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(action, { minLength: 1, maxLength: 60 }),
        fc.constantFrom(0, 3000),
        async (actions, assignmentIntervalMs) => {
          const model = new Model(assignmentIntervalMs);
          try {
            for (const a of actions) {
              await model.step(a);
              model.check();
            }
            await model.settle();
          } finally {
            model.ctx.coordinator.close();
          }
        },
      ),
      { seed, numRuns },
    );
  });
});
