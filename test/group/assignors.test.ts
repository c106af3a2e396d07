/**
 * The assignors. Uniform: balanced to within one bucket, every bucket assigned once, sticky on join,
 * leave and layout change, heterogeneous subscriptions honoured, 10,000 buckets over 1000 members well
 * under a second, and a property over random members, layouts and targets (GROUP_PROPERTY_SEED
 * replays). Range: contiguous runs per table, co-partitioned tables, chosen by the members of a group.
 * checkAssignment refuses a custom assignor's bad output, and the failed join changes nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bucketKey,
  BucketSet,
  checkAssignment,
  RangeAssignor,
  UniformAssignor,
  type Assignor,
  type AssignorInput,
  type AssignorMember,
  type TableBucket,
  type TableLayout,
} from '../../src/group/index.js';
import { GroupTestContext } from './group-test-context.js';

/** Bucket keys as strings, for sets and sorted comparisons in tests. */
const keyOf = (ref: TableBucket): string => String(bucketKey(ref));

type Spec = Record<string, number[]>; // memberId -> subscribed table ids

function input(
  spec: Spec,
  tables: Record<number, TableLayout>,
  current: Map<string, TableBucket[]> = new Map(),
): AssignorInput {
  const members: AssignorMember[] = Object.keys(spec)
    .sort()
    .map((memberId) => ({
      memberId,
      instanceId: null,
      subscribedTableIds: [...(spec[memberId] ?? [])].sort((a, b) => a - b),
      currentTarget: BucketSet.of(current.get(memberId) ?? []),
    }));
  return { members, tables: new Map(Object.entries(tables).map(([id, l]) => [Number(id), l])) };
}

function run(
  assignor: Assignor,
  spec: Spec,
  tables: Record<number, TableLayout>,
  current?: Map<string, TableBucket[]>,
): Map<string, TableBucket[]> {
  const i = input(spec, tables, current);
  const out = assignor.assign(i);
  checkAssignment(assignor.name, i, out); // no duplicates, only subscribed, existing buckets
  return out;
}

function table(bucketCount: number, partitionIds: number[] | null = null): TableLayout {
  return { bucketCount, partitionIds };
}

function sizes(out: Map<string, TableBucket[]>): number[] {
  return [...out.values()].map((b) => b.length);
}

function total(out: Map<string, TableBucket[]>): number {
  return sizes(out).reduce((a, b) => a + b, 0);
}

function members(n: number, tables: number[] = [1]): Spec {
  return Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`m${String(i).padStart(4, '0')}`, tables]),
  );
}

/** Buckets that changed owner between two assignments, not counting buckets of members that left. */
function moved(before: Map<string, TableBucket[]>, after: Map<string, TableBucket[]>): number {
  const owner = new Map<string, string>();
  for (const [m, refs] of before) if (after.has(m)) for (const r of refs) owner.set(keyOf(r), m);
  let count = 0;
  for (const [m, refs] of after)
    for (const r of refs) if (owner.has(keyOf(r)) && owner.get(keyOf(r)) !== m) count++;
  return count;
}

const uniform = new UniformAssignor();
const rangeAssignor = new RangeAssignor();

describe('uniform assignor', () => {
  it('balances identical subscriptions to within one bucket and assigns every bucket once', () => {
    for (const [n, buckets] of [
      [1, 10],
      [3, 10],
      [7, 100],
      [10, 10],
      [16, 1000],
    ] as const) {
      const out = run(uniform, members(n), { 1: table(buckets) });
      expect(total(out)).toBe(buckets);
      expect(Math.max(...sizes(out)) - Math.min(...sizes(out))).toBeLessThanOrEqual(1);
    }
  });

  it('is sticky on join: the newcomer takes only from members over the new quota', () => {
    const before = run(uniform, members(3), { 1: table(30) });
    const spec = { ...members(3), zz: [1] };
    const after = run(uniform, spec, { 1: table(30) }, before);
    expect(sizes(after).sort()).toEqual([7, 7, 8, 8]);
    expect(moved(before, after)).toBe(after.get('zz')?.length);
    for (const [m, refs] of before) {
      const now = new Set((after.get(m) ?? []).map(keyOf));
      expect(refs.filter((r) => now.has(keyOf(r))).length).toBe(after.get(m)?.length); // only lost, never gained
    }
  });

  it('is sticky on leave and on a layout change: only the necessary buckets move', () => {
    const before = run(uniform, members(4), { 1: table(40) });
    const spec = members(4);
    delete spec['m0002'];
    const afterLeave = run(uniform, spec, { 1: table(40) }, before);
    expect(moved(before, afterLeave)).toBe(0); // only the leaver's 10 buckets were redistributed
    expect(sizes(afterLeave).sort()).toEqual([13, 13, 14]);
    const grown = run(uniform, members(4), { 1: table(48) }, before);
    expect(moved(before, grown)).toBe(0);
    expect(sizes(grown)).toEqual([12, 12, 12, 12]);
    const shrunk = run(uniform, members(4), { 1: table(20) }, before);
    expect(sizes(shrunk)).toEqual([5, 5, 5, 5]);
  });

  it('handles more members than buckets, and a join then moves nothing', () => {
    const before = run(uniform, members(10), { 1: table(3) });
    expect(sizes(before).filter((s) => s === 1)).toHaveLength(3);
    const after = run(uniform, { ...members(10), zz: [1] }, { 1: table(3) }, before);
    expect(moved(before, after)).toBe(0);
    expect(after.get('zz')).toEqual([]);
  });

  it('handles heterogeneous subscriptions: only subscribed tables, loads evened out', () => {
    const out = run(uniform, { a: [1], b: [1, 2] }, { 1: table(10), 2: table(10) });
    expect(out.get('a')?.every((r) => r.tableId === 1)).toBe(true);
    expect(sizes(out)).toEqual([10, 10]);
    const three = run(uniform, { a: [1], b: [1, 2], c: [2] }, { 1: table(9), 2: table(9) });
    expect(sizes(three)).toEqual([6, 6, 6]);
    // a member subscribing to table 2 only: table 1 buckets do not move
    const four = run(
      uniform,
      { a: [1], b: [1, 2], c: [2], d: [2] },
      { 1: table(9), 2: table(9) },
      three,
    );
    const owner1 = (out: Map<string, TableBucket[]>) =>
      new Map(
        [...out].flatMap(([m, refs]) =>
          refs.filter((r) => r.tableId === 1).map((r) => [keyOf(r), m] as const),
        ),
      );
    const before1 = owner1(three);
    const after1 = owner1(four);
    let movedTable1 = 0;
    for (const [k, m] of after1) if (before1.get(k) !== m) movedTable1++;
    expect(Math.max(...sizes(four)) - Math.min(...sizes(four))).toBeLessThanOrEqual(1);
    expect(movedTable1).toBeLessThanOrEqual(2);
    // a table without subscribers and a subscription without layout are ignored
    const partial = run(uniform, { a: [1, 7], b: [2] }, { 1: table(4), 2: table(4), 3: table(4) });
    expect(total(partial)).toBe(8);
  });

  it('property: any members, layouts and current targets give a valid, balanced, sticky assignment', () => {
    const seed = Number(process.env.GROUP_PROPERTY_SEED ?? Date.now() % 1_000_000);
    console.log(`uniform assignor property seed=${seed}`);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 0, max: 60 }),
        fc.array(fc.integer({ min: 0, max: 70 }), { maxLength: 80 }),
        fc.integer({ min: 0, max: 3 }),
        (n, bucketCount, currentIds, partitions) => {
          const layout =
            partitions === 0
              ? table(Math.max(1, bucketCount))
              : table(
                  Math.max(1, bucketCount),
                  Array.from({ length: partitions }, (_, p) => p * 10),
                );
          const spec = members(n);
          const ids = Object.keys(spec).sort();
          const current = new Map<string, TableBucket[]>();
          currentIds.forEach((bucketId, k) => {
            const m = ids[k % n] as string;
            const ref = {
              tableId: 1,
              partitionId: partitions === 0 ? null : (k % partitions) * 10,
              bucketId,
            };
            current.set(m, [...(current.get(m) ?? []), ref]);
          });
          // the current target the coordinator passes is always disjoint; emulate that
          const seen = new Set<string>();
          for (const [m, refs] of current)
            current.set(
              m,
              refs.filter((r) => !seen.has(keyOf(r)) && seen.add(keyOf(r))),
            );
          const out = run(uniform, spec, { 1: layout }, current);
          const totalBuckets = layout.bucketCount * (layout.partitionIds?.length ?? 1);
          expect(total(out)).toBe(totalBuckets);
          expect(Math.max(...sizes(out)) - Math.min(...sizes(out))).toBeLessThanOrEqual(1);
          const base = Math.floor(totalBuckets / n);
          for (const [m, refs] of current) {
            const valid = refs.filter((r) => r.bucketId < layout.bucketCount).length;
            const keptKeys = new Set((out.get(m) ?? []).map(keyOf));
            expect(refs.filter((r) => keptKeys.has(keyOf(r))).length).toBeGreaterThanOrEqual(
              Math.min(valid, base),
            );
          }
        },
      ),
      { seed, numRuns: Number(process.env.GROUP_PROPERTY_RUNS ?? 100) },
    );
  });

  it('assigns 10,000 buckets over 1000 members in well under a second', () => {
    const spec = members(1000);
    const first = run(uniform, spec, { 1: table(10_000) });
    const started = performance.now();
    const again = uniform.assign(input({ ...spec, newcomer: [1] }, { 1: table(10_000) }, first));
    const elapsedMs = performance.now() - started;
    expect(total(again)).toBe(10_000);
    expect(elapsedMs).toBeLessThan(500);
  });
});

describe('range assignor', () => {
  it('gives contiguous runs per table and co-partitions tables with the same layout', () => {
    const out = run(
      rangeAssignor,
      { a: [1, 2], b: [1, 2], c: [1, 2] },
      { 1: table(8), 2: table(8) },
    );
    expect(sizes(out)).toEqual([6, 6, 4]);
    for (const [, refs] of out) {
      const t1 = refs.filter((r) => r.tableId === 1).map((r) => r.bucketId);
      const t2 = refs.filter((r) => r.tableId === 2).map((r) => r.bucketId);
      expect(t1).toEqual(t2); // co-partitioned
      expect(t1).toEqual(Array.from({ length: t1.length }, (_, i) => (t1[0] as number) + i)); // contiguous
    }
    const partitioned = run(
      rangeAssignor,
      { a: [1, 2], b: [1, 2] },
      { 1: table(2, [5, 6]), 2: table(2, [5, 6]) },
    );
    for (const [, refs] of partitioned) {
      const t1 = refs.filter((r) => r.tableId === 1).map((r) => `${r.partitionId}/${r.bucketId}`);
      expect(
        refs.filter((r) => r.tableId === 2).map((r) => `${r.partitionId}/${r.bucketId}`),
      ).toEqual(t1);
    }
    const mixed = run(rangeAssignor, { a: [1], b: [1, 2] }, { 1: table(4), 2: table(3) });
    expect(mixed.get('a')?.every((r) => r.tableId === 1)).toBe(true);
    expect(total(mixed)).toBe(7);
  });

  it('is selected by the members and drives a group to a co-partitioned Stable state', async () => {
    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 }, 2: { bucketCount: 4 } } });
    const a = ctx.member([1, 2], { memberId: 'a' });
    const b = ctx.member([1, 2], { memberId: 'b' });
    await a.beat({ assignor: 'range' });
    await b.beat({ assignor: 'range' });
    await ctx.settle(a, b);
    expect(ctx.coordinator.describe('g')?.assignor).toBe('range');
    expect(a.owned.map((r) => `${r.tableId}/${r.bucketId}`).sort()).toEqual([
      '1/0',
      '1/1',
      '2/0',
      '2/1',
    ]);
  });
  it('the group uses the assignor most of its members prefer (a tie to the smallest name), and a member changing its preference starts a new target', async () => {
    const tie = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    await tie.member([1], { memberId: 'a' }).beat({ assignor: 'range' });
    await tie.member([1], { memberId: 'b' }).beat({ assignor: 'uniform' });
    expect(tie.coordinator.describe('g')?.assignor).toBe('range');

    const ctx = new GroupTestContext({ layouts: { 1: { bucketCount: 4 } } });
    const b = ctx.member([1], { memberId: 'b' });
    const a = ctx.member([1], { memberId: 'a' });
    await ctx.settle(b, a); // uniform: b, first, keeps buckets 0 and 1
    expect(b.owned.map((r) => r.bucketId).sort()).toEqual([0, 1]);
    const epoch = ctx.coordinator.describe('g')!.groupEpoch;
    await a.beat({ assignor: 'range' }); // no other preference: range now
    expect(ctx.coordinator.describe('g')).toMatchObject({
      assignor: 'range',
      groupEpoch: epoch + 1,
      assignmentEpoch: epoch + 1,
    });
    await ctx.settle(a, b);
    expect(a.owned.map((r) => r.bucketId).sort()).toEqual([0, 1]);
    expect(b.owned.map((r) => r.bucketId).sort()).toEqual([2, 3]);
  });
});

describe('assignor port', () => {
  it('checkAssignment refuses duplicate, unknown and unsubscribed buckets from a custom assignor', async () => {
    const i = input({ a: [1], b: [1] }, { 1: table(2), 2: table(2) });
    const ref = (tableId: number, bucketId: number) => ({ tableId, partitionId: null, bucketId });
    expect(() =>
      checkAssignment(
        'x',
        i,
        new Map([
          ['a', [ref(1, 0)]],
          ['b', [ref(1, 0)]],
        ]),
      ),
    ).toThrow(/both a and b/);
    expect(() => checkAssignment('x', i, new Map([['a', [ref(1, 5)]]]))).toThrow(TypeError);
    expect(() => checkAssignment('x', i, new Map([['a', [ref(2, 0)]]]))).toThrow(TypeError);
    expect(() => checkAssignment('x', i, new Map([['zz', []]]))).toThrow(/unknown member/);

    const broken: Assignor = {
      name: 'broken',
      assign: (inp) => new Map(inp.members.map((m) => [m.memberId, [ref(1, 0)]])),
    };
    const ctx = new GroupTestContext({ assignors: [broken], layouts: { 1: { bucketCount: 2 } } });
    await ctx.member([1], { memberId: 'a' }).beat({ assignor: 'broken' });
    await expect(ctx.member([1], { memberId: 'b' }).beat({ assignor: 'broken' })).rejects.toThrow(
      /both a and b/,
    );
    // the failed join changed nothing
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['a']);
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
  });

  it("plans a new incarnation of a static member from its predecessor's target, and plans no target for the member it replaces", async () => {
    const inputs: AssignorInput[] = [];
    const uniform = new UniformAssignor();
    const spy: Assignor = {
      name: 'spy',
      assign: (inp) => {
        inputs.push(inp);
        return uniform.assign(inp);
      },
    };
    const ctx = new GroupTestContext({
      assignors: [spy],
      defaultAssignor: 'spy',
      layouts: { 1: { bucketCount: 4 }, 2: { bucketCount: 2 } },
    });
    const s = ctx.member([1], { memberId: 's1', instanceId: 'inst' });
    const d = ctx.member([1], { memberId: 'd' });
    await ctx.settle(s, d);
    const kept = s.ownedKeys();
    await s.leave(-2);
    // The new incarnation subscribes to one more table: its join computes a new target.
    const s2 = ctx.member([1, 2], { memberId: 's2', instanceId: 'inst' });
    await s2.beat();
    const planned = inputs.at(-1)!;
    expect(planned.members.map((m) => m.memberId)).toEqual(['d', 's2']);
    expect(
      [...planned.members.find((m) => m.memberId === 's2')!.currentTarget].map(keyOf).sort(),
    ).toEqual(kept);
    await ctx.settle(d, s2);
    expect(ctx.coordinator.describe('g')?.members.map((m) => m.memberId)).toEqual(['d', 's2']);
    const owned = [...d.ownedKeys(), ...s2.ownedKeys()];
    expect(new Set(owned).size).toBe(6);
    expect(ctx.replayed()).toEqual(ctx.coordinator.inspect('g'));
  });
});
