/**
 * GroupMember, the client side of the protocol, against a coordinator and an offsets table that fences
 * commits as the store does: a killed member's buckets move to the survivors after its session
 * timeout, and they resume from its commits with nothing skipped; onRevoked is awaited before a bucket
 * is released; a member at an epoch lost in a coordinator restart is told its buckets are lost and
 * rejoins; a static member leaving temporarily gets the same buckets back.
 */
import { describe, expect, it } from 'vitest';
import {
  bucketKey,
  GroupMember,
  type TableBucket,
  type GroupMemberPort,
  type MemberOptions,
} from '../../src/group/index.js';
import { settleGroup, type SettleGroupOptions } from '../support/settle-group.js';
import { GroupTestContext } from './group-test-context.js';

/** Bucket keys as strings, for sets and sorted comparisons in tests. */
const keyOf = (ref: TableBucket): string => String(bucketKey(ref));

/** Lets every promise chain started by timers run to completion. */
async function flush(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** A promise that settles when `open` is called: holds a callback (onRevoked) until the test lets it go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** A coordinator plus an in-memory offsets table that fences commits like the store does. */
function harness(bucketCount = 6) {
  const ctx = new GroupTestContext({ layouts: { 1: { bucketCount } } });
  const committed = new Map<string, number>();
  const port: GroupMemberPort = {
    heartbeat: (groupId, request) => ctx.coordinator.heartbeat(groupId, request),
    commit: async (groupId, offsets, { memberId, memberEpoch }) => {
      ctx.coordinator.validateMemberCommit(groupId, memberId, memberEpoch, offsets);
      for (const o of offsets)
        committed.set(
          keyOf({ tableId: o.tableId, partitionId: o.partitionId ?? null, bucketId: o.bucketId }),
          o.offset,
        );
    },
  };
  const advance = async (ms: number, stepMs = 1000): Promise<void> => {
    for (let t = 0; t < ms; t += stepMs) {
      ctx.clock.advance(stepMs);
      await flush();
    }
  };
  return { ctx, committed, port, advance };
}

/** Settles the members of the coordinator in `ctx` on its clock. */
const settling = (ctx: GroupTestContext): SettleGroupOptions => ({
  clock: ctx.clock,
  describe: (groupId) => ctx.coordinator.describe(groupId),
});

/** A service consuming its buckets: positions start at the committed offset; revocation commits. */
class Consumer {
  readonly positions = new Map<string, { ref: TableBucket; next: number }>();
  readonly consumed: Array<[string, number]> = [];
  member!: GroupMember;
  readonly events: string[] = [];

  constructor(
    readonly name: string,
    readonly committed: Map<string, number>,
  ) {}

  options(extra: Partial<MemberOptions> = {}): MemberOptions {
    return {
      subscribedTableIds: [1],
      onAssigned: (buckets) => {
        this.events.push(`assigned ${buckets.length}`);
        for (const ref of buckets)
          this.positions.set(keyOf(ref), { ref, next: this.committed.get(keyOf(ref)) ?? 0 });
      },
      onRevoked: async (buckets) => {
        this.events.push(`revoked ${buckets.length}`);
        await this.commit(buckets.map(keyOf));
        for (const ref of buckets) this.positions.delete(keyOf(ref));
      },
      onLost: (buckets) => {
        this.events.push(`lost ${buckets.length}`);
        for (const ref of buckets) this.positions.delete(keyOf(ref));
      },
      ...extra,
    };
  }

  /** Reads one record from every owned bucket. */
  poll(): void {
    for (const [key, p] of this.positions) this.consumed.push([key, p.next++]);
  }

  async commit(keys: string[] = [...this.positions.keys()]): Promise<void> {
    const offsets = keys.flatMap((k) => {
      const p = this.positions.get(k);
      return p === undefined ? [] : [{ ...p.ref, offset: p.next }];
    });
    if (offsets.length > 0) await this.member.commit(offsets);
  }
}

describe('GroupMember', () => {
  it("a killed member's buckets move to the survivors after the session timeout; they resume from its commits", async () => {
    const { ctx, committed, port, advance } = harness(6);
    const consumers = ['a', 'b', 'c'].map((name) => new Consumer(name, committed));
    for (const c of consumers) {
      c.member = await GroupMember.join(port, 'g', c.options({ clock: ctx.clock }));
      await advance(1000);
    }
    const tick = async (live: Consumer[]) => {
      for (const c of live) {
        c.poll();
        await c.commit();
      }
      // at no moment do two running members hold the same bucket
      const held = live.flatMap((c) => c.member.assignment.map(keyOf));
      expect(new Set(held).size).toBe(held.length);
      await advance(1000);
    };
    for (let i = 0; i < 20; i++) await tick(consumers);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    expect(consumers.map((c) => c.member.assignment.length)).toEqual([2, 2, 2]);

    const [a, b, c] = consumers as [Consumer, Consumer, Consumer];
    c.poll(); // reads past its last commit, then dies: those records will be read again
    c.member.stop();
    const survivors = [a, b];
    for (let i = 0; i < 44; i++) await tick(survivors);
    expect(ctx.coordinator.describe('g')?.members).toHaveLength(3); // not yet: 44 s of silence
    for (let i = 0; i < 10; i++) await tick(survivors);
    expect(
      ctx.coordinator
        .describe('g')
        ?.members.map((m) => m.memberId)
        .sort(),
    ).toEqual([a.member.memberId, b.member.memberId].sort());
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    expect(survivors.map((s) => s.member.assignment.length)).toEqual([3, 3]);
    // nothing skipped: per bucket, the offsets read form an unbroken run from 0
    const read = new Map<string, Set<number>>();
    for (const s of consumers)
      for (const [key, offset] of s.consumed)
        read.set(key, (read.get(key) ?? new Set()).add(offset));
    expect(read.size).toBe(6);
    for (const [key, offsets] of read) {
      const max = Math.max(...offsets);
      for (let o = 0; o <= max; o++)
        expect(offsets.has(o), `${key} offset ${o} skipped`).toBe(true);
    }
    // and the zombie cannot commit any more
    await expect(c.commit()).rejects.toThrow(/UNKNOWN_MEMBER_ID/);
    for (const s of survivors) await s.member.leave();
    expect(ctx.coordinator.groupState('g')).toBe('Empty');
  });

  it('awaits onRevoked before releasing; the newcomer gets the bucket only afterwards, heartbeats go on meanwhile', async () => {
    const { ctx, committed, port, advance } = harness(2);
    const slow = new Consumer('slow', committed);
    const { promise: revoking, open: finishRevoke } = gate();
    slow.member = await GroupMember.join(
      port,
      'g',
      slow.options({
        clock: ctx.clock,
        onRevoked: async (buckets) => {
          slow.events.push(`revoking ${buckets.length}`);
          await revoking;
          await slow.commit(buckets.map(keyOf));
          for (const ref of buckets) slow.positions.delete(keyOf(ref));
        },
      }),
    );
    await advance(1000);
    expect(slow.member.assignment).toHaveLength(2);
    const fresh = new Consumer('fresh', committed);
    fresh.member = await GroupMember.join(port, 'g', fresh.options({ clock: ctx.clock }));
    await advance(30_000); // onRevoked is still running: 30 s, far beyond a heartbeat interval
    expect(slow.events).toContain('revoking 1');
    expect(fresh.member.assignment).toHaveLength(0);
    expect(ctx.coordinator.describe('g')?.members).toHaveLength(2); // the slow member's session is alive
    finishRevoke();
    await advance(6000);
    expect(slow.member.assignment).toHaveLength(1);
    expect(fresh.member.assignment).toHaveLength(1);
    expect(fresh.events).toEqual(['assigned 1']);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
  });

  it('leave() called from its own onRevoked or onAssigned completes: the member leaves, and each bucket is revoked once', async () => {
    for (const from of ['onRevoked', 'onAssigned'] as const) {
      const { ctx, committed, port, advance } = harness(4);
      const leaver = new Consumer('leaver', committed);
      const revoked: string[] = [];
      let left: Promise<void> | undefined;
      const leaveOnce = async () => {
        if (left !== undefined) return; // the leave itself revokes: not a second time
        left = leaver.member.leave();
        await left;
      };
      leaver.member = await GroupMember.join(
        port,
        'g',
        leaver.options({
          clock: ctx.clock,
          onRevoked: async (buckets) => {
            revoked.push(...buckets.map(keyOf));
            if (from === 'onRevoked') await leaveOnce();
          },
          onAssigned: async () => {
            if (from === 'onAssigned' && leaver.member !== undefined) await leaveOnce();
          },
        }),
      );
      await advance(1000);
      expect(leaver.member.assignment).toHaveLength(4);
      if (from === 'onRevoked') {
        const other = new Consumer('other', committed);
        other.member = await GroupMember.join(port, 'g', other.options({ clock: ctx.clock }));
      } else {
        ctx.coordinator.setTableLayout(1, { bucketCount: 6 });
      }
      await advance(10_000);
      expect(left, from).toBeDefined();
      await left;
      expect(leaver.member.runState, from).toBe('stopped');
      expect(
        ctx.coordinator.describe('g')?.members.map((m) => m.memberId),
        from,
      ).not.toContain(leaver.member.memberId);
      expect(new Set(revoked).size, from).toBe(revoked.length);
      expect(revoked.length, from).toBe(from === 'onRevoked' ? 4 : 6);
    }
  });

  it('after a coordinator restart in the middle of a rebalance the members go on where they stood: none loses its buckets, and the rebalance completes', async () => {
    const { ctx, committed, port, advance } = harness(6);
    const { promise: gated, open: openGate } = gate();
    let slowRevoke = false;
    const a = new Consumer('a', committed);
    a.member = await GroupMember.join(
      port,
      'g',
      a.options({
        clock: ctx.clock,
        onRevoked: async (buckets) => {
          a.events.push(`revoked ${buckets.length}`);
          if (slowRevoke) await gated; // a is slow to revoke: it stays at epoch 2 while b moves on
          for (const ref of buckets) a.positions.delete(keyOf(ref));
        },
      }),
    );
    await advance(1000);
    const b = new Consumer('b', committed);
    b.member = await GroupMember.join(port, 'g', b.options({ clock: ctx.clock }));
    await settleGroup([a.member, b.member], settling(ctx)); // epoch 2, snapshot written
    slowRevoke = true;
    const c = new Consumer('c', committed);
    c.member = await GroupMember.join(port, 'g', c.options({ clock: ctx.clock }));
    await advance(6000);
    expect(b.member.memberEpoch).toBe(3); // b released; a is still revoking
    expect(a.member.memberEpoch).toBe(2);
    ctx.restart(); // the rebalance towards epoch 3 was in flight: it is restored as it stood
    openGate();
    await advance(20_000);
    for (const x of [a, b, c])
      expect(
        x.events.filter((e) => e.startsWith('lost')),
        `${x.member.memberId}`,
      ).toEqual([]);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    expect([a, b, c].map((x) => x.member.assignment.length)).toEqual([2, 2, 2]);
    const all = [a, b, c].flatMap((x) => x.member.assignment.map(keyOf));
    expect(new Set(all).size).toBe(6);
  });

  it('a static member leaving temporarily gets the same buckets back when it returns', async () => {
    const { ctx, committed, port, advance } = harness(4);
    const a = new Consumer('a', committed);
    a.member = await GroupMember.join(
      port,
      'g',
      a.options({ clock: ctx.clock, instanceId: 'host-a' }),
    );
    expect(a.member.assignment).toHaveLength(4); // join resolves with the first assignment in place
    expect(a.events).toEqual(['assigned 4']);
    const b = new Consumer('b', committed);
    b.member = await GroupMember.join(port, 'g', b.options({ clock: ctx.clock }));
    await settleGroup([a.member, b.member], settling(ctx));
    const before = a.member.assignment.map(keyOf);
    expect(before).toHaveLength(2);
    await a.member.leave({ temporary: true });
    expect(a.events).toContain('revoked 2');
    await advance(10_000);
    expect(b.member.assignment).toHaveLength(2); // kept for host-a
    const a2 = new Consumer('a2', committed);
    a2.member = await GroupMember.join(
      port,
      'g',
      a2.options({ clock: ctx.clock, instanceId: 'host-a' }),
    );
    await advance(1000);
    expect(a2.member.assignment.map(keyOf)).toEqual(before);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
  });

  it("a member fenced while its onAssigned runs hears of the loss once onAssigned has returned, and of its next assignment after that: a member's callbacks never overlap", async () => {
    const { ctx, port, advance } = harness(4);
    const events: string[] = [];
    let hold: { promise: Promise<void>; open: () => void } | undefined;
    const ids = (buckets: TableBucket[]) => buckets.map((b) => b.bucketId).join(',');
    const member = await GroupMember.join(port, 'g', {
      subscribedTableIds: [1],
      clock: ctx.clock,
      onAssigned: async (buckets) => {
        events.push(`assigning ${ids(buckets)}`);
        if (hold !== undefined) await hold.promise;
        events.push(`assigned ${ids(buckets)}`);
      },
      onRevoked: (buckets) => void events.push(`revoked ${ids(buckets)}`),
      onLost: (buckets) => void events.push(`lost ${ids(buckets)}`),
    });
    await advance(3000);
    expect(events).toEqual(['assigning 0,1,2,3', 'assigned 0,1,2,3']);
    // The table grows: the member is given buckets 4 and 5, and its onAssigned for them is held.
    hold = gate();
    ctx.coordinator.setTableLayout(1, { bucketCount: 6 });
    await advance(3000);
    expect(events.at(-1)).toBe('assigning 4,5');
    // Removed meanwhile: its next heartbeat is fenced.
    await ctx.coordinator.removeMembers('g', { memberIds: [member.memberId] });
    await advance(6000);
    expect(events.at(-1)).toBe('assigning 4,5');
    const gated = hold;
    hold = undefined;
    gated.open();
    await advance(6000);
    expect(events.slice(2)).toEqual([
      'assigning 4,5',
      'assigned 4,5',
      'lost 0,1,2,3,4,5',
      'assigning 0,1,2,3,4,5',
      'assigned 0,1,2,3,4,5',
    ]);
    expect(member.assignment.length).toBe(6);
    member.stop();
  });

  it('leave() called from onLost completes: the heartbeat loop does not wait for onLost, which waits for leave()', async () => {
    const { ctx, port, advance } = harness(4);
    const events: string[] = [];
    const member: GroupMember = await GroupMember.join(port, 'g', {
      subscribedTableIds: [1],
      clock: ctx.clock,
      onAssigned: (buckets) => void events.push(`assigned ${buckets.length}`),
      onLost: async (buckets) => {
        events.push(`lost ${buckets.length}`);
        await member.leave();
        events.push('left');
      },
    });
    await advance(3000);
    await ctx.coordinator.removeMembers('g', { memberIds: [member.memberId] });
    await advance(10_000);
    expect(events).toEqual(['assigned 4', 'lost 4', 'left']);
    expect(member.runState).toBe('stopped');
  });

  it('a member fenced while its onRevoked runs does not take back the buckets of its old assignment once the callback returns', async () => {
    const { ctx, committed, port, advance } = harness(4);
    const { promise: gated, open: openGate } = gate();
    const a = new Consumer('a', committed);
    a.member = await GroupMember.join(
      port,
      'g',
      a.options({
        clock: ctx.clock,
        onRevoked: async (buckets) => {
          a.events.push(`revoking ${buckets.length}`);
          await gated;
        },
      }),
    );
    const b = new Consumer('b', committed);
    b.member = await GroupMember.join(port, 'g', b.options({ clock: ctx.clock }));
    await advance(6000);
    expect(a.events).toContain('revoking 2');
    // An admin removes a while onRevoked runs: its next heartbeat is fenced, it loses everything and
    // rejoins; it hears of the loss once onRevoked has returned, never while it runs.
    await ctx.coordinator.removeMembers('g', { memberIds: [a.member.memberId] });
    await advance(6000);
    expect(a.events).not.toContain('lost 4');
    openGate();
    await flush();
    expect(a.events.slice(a.events.indexOf('revoking 2'))).toEqual(['revoking 2', 'lost 4']);
    const assigned = new Map(
      ctx.coordinator.describe('g')!.members.map((m) => [m.memberId, m.assignment.map(keyOf)]),
    );
    for (const x of [a, b])
      expect(assigned.get(x.member.memberId), x.name).toEqual(
        expect.arrayContaining(x.member.assignment.map(keyOf)),
      );
    const held = [a, b].flatMap((x) => x.member.assignment.map(keyOf));
    expect(new Set(held).size).toBe(held.length);
    await advance(20_000);
    expect(ctx.coordinator.groupState('g')).toBe('Stable');
    expect([a, b].map((x) => x.member.assignment.length)).toEqual([2, 2]);
  });
});
