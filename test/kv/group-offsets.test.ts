/**
 * GroupOffsets, one group's table of committed offsets: correct through growth past the linear-scan
 * limit and back, metadata kept through the swap-remove that fills a deleted hole, keys at
 * MAX_SAFE_INTEGER exact and partitionId null distinct from 0, and equal to a Map model under random,
 * delete-heavy and dense in-order sequences and through checkpoint images. PROPERTY_RUNS and
 * PROPERTY_SEED (with PROPERTY_PATH) replay a run.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GroupOffsets, type CommittedOffsetValue } from '../../src/kv/index.js';
import { hashBucketKey } from '../../src/kv/group-offsets.js';

const runs = Number(process.env.PROPERTY_RUNS ?? 100);
const seedOption =
  process.env.PROPERTY_SEED === undefined
    ? {}
    : { seed: Number(process.env.PROPERTY_SEED), path: process.env.PROPERTY_PATH };

type Key = [tableId: number, partitionId: number | null, bucketId: number];

function value(key: Key, n: number, metadata = ''): CommittedOffsetValue {
  return {
    tableId: key[0],
    partitionId: key[1],
    bucketId: key[2],
    offset: n,
    leaderEpoch: n % 7,
    metadata,
    commitTimestampMs: 1_700_000_000_000 + n,
  };
}

function put(g: GroupOffsets, v: CommittedOffsetValue): void {
  g.set(
    v.tableId,
    v.partitionId,
    v.bucketId,
    v.offset,
    v.leaderEpoch,
    v.commitTimestampMs,
    v.metadata,
  );
}

function lookup(g: GroupOffsets, key: Key): CommittedOffsetValue | null {
  const i = g.find(...key);
  return i < 0 ? null : g.valueAt(i);
}

/** Every entry by iteration, keyed like the model; also checks the per-entry accessors agree. */
function contents(g: GroupOffsets): Map<string, CommittedOffsetValue> {
  const out = new Map<string, CommittedOffsetValue>();
  for (let i = 0; i < g.size; i++) {
    const v = g.valueAt(i);
    const k = `${v.tableId}/${v.partitionId}/${v.bucketId}`;
    if (out.has(k)) throw new Error(`entry ${k} listed twice`);
    if (g.timestampAt(i) !== v.commitTimestampMs || g.tableIdAt(i) !== v.tableId)
      throw new Error(`accessors of entry ${i} disagree with valueAt`);
    out.set(k, v);
  }
  return out;
}

/** Size, iteration and a lookup of every key of `universe` agree with the model. */
function expectMatches(
  g: GroupOffsets,
  model: Map<string, CommittedOffsetValue>,
  universe: readonly Key[],
  context: string,
): void {
  const listed = contents(g);
  const problems: string[] = [];
  if (g.size !== model.size) problems.push(`size ${g.size}, model ${model.size}`);
  for (const [k, v] of model)
    if (!sameValue(listed.get(k) ?? null, v))
      problems.push(
        `iteration has ${k} = ${JSON.stringify(listed.get(k))}, model ${JSON.stringify(v)}`,
      );
  for (const k of listed.keys())
    if (!model.has(k)) problems.push(`iteration has ${k}, model does not`);
  for (const key of universe) {
    const got = lookup(g, key);
    const expected = model.get(keyString(key)) ?? null;
    if (!sameValue(got, expected))
      problems.push(
        `lookup ${keyString(key)} = ${JSON.stringify(got)}, model ${JSON.stringify(expected)}`,
      );
  }
  expect(problems, context).toEqual([]);
}

function sameValue(a: CommittedOffsetValue | null, b: CommittedOffsetValue | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.tableId === b.tableId &&
    a.partitionId === b.partitionId &&
    a.bucketId === b.bucketId &&
    a.offset === b.offset &&
    a.leaderEpoch === b.leaderEpoch &&
    a.metadata === b.metadata &&
    a.commitTimestampMs === b.commitTimestampMs
  );
}

const keyString = (key: Key) => `${key[0]}/${key[1]}/${key[2]}`;

describe('GroupOffsets', () => {
  it('inserts, overwrites and deletes correctly while growing past the linear-scan limit of 8 and shrinking back', () => {
    const g = new GroupOffsets();
    const universe: Key[] = Array.from({ length: 40 }, (_, i) => [
      i % 3,
      i % 2 === 0 ? null : i % 5,
      i,
    ]);
    const model = new Map<string, CommittedOffsetValue>();
    universe.forEach((key, n) => {
      put(g, value(key, n, n % 3 === 0 ? `meta-${n}` : ''));
      model.set(keyString(key), value(key, n, n % 3 === 0 ? `meta-${n}` : ''));
      expectMatches(g, model, universe, `after inserting ${n + 1}`);
    });
    universe.forEach((key, n) => {
      put(g, value(key, 1000 + n, n % 2 === 0 ? 'over' : ''));
      model.set(keyString(key), value(key, 1000 + n, n % 2 === 0 ? 'over' : ''));
    });
    expectMatches(g, model, universe, 'after overwriting every key');
    expect(g.size).toBe(40);
    // Delete down through 9 -> 8 -> 7 entries and below, from the front, so every delete moves the last entry.
    for (const [n, key] of universe.entries()) {
      expect(g.delete(...key)).toBe(true);
      expect(g.delete(...key), 'a second delete of the same key').toBe(false);
      model.delete(keyString(key));
      expectMatches(g, model, universe, `after deleting ${n + 1}`);
    }
    expect(g.size).toBe(0);
    // And it grows again after shrinking to nothing.
    for (const [n, key] of universe.slice(0, 12).entries()) {
      put(g, value(key, 2000 + n));
      model.set(keyString(key), value(key, 2000 + n));
    }
    expectMatches(g, model, universe, 'after growing again');
  });

  it("keeps each entry's metadata through the swap-remove that fills a deleted hole", () => {
    for (const count of [3, 8, 9, 20]) {
      const g = new GroupOffsets();
      const keys: Key[] = Array.from({ length: count }, (_, i) => [7, null, i]);
      // Alternate empty and non-empty metadata so a hole gets filled from both kinds.
      keys.forEach((key, i) => put(g, value(key, i, i % 2 === 0 ? `m${i}-✓` : '')));
      const model = new Map(
        keys.map((key, i) => [keyString(key), value(key, i, i % 2 === 0 ? `m${i}-✓` : '')]),
      );
      for (const victim of [0, Math.floor(count / 2), 1]) {
        const key = keys[victim]!;
        if (!model.has(keyString(key))) continue;
        g.delete(...key);
        model.delete(keyString(key));
        expectMatches(g, model, keys, `count ${count}, after deleting bucket ${victim}`);
      }
      // Overwriting with empty metadata clears it; with non-empty sets it.
      for (const [k, v] of model) {
        const next = { ...v, metadata: v.metadata === '' ? 'now-set' : '' };
        put(g, next);
        model.set(k, next);
      }
      expectMatches(g, model, keys, `count ${count}, after flipping metadata`);
    }
  });

  it('finds a key again after the run it began, the last entry, was deleted and another run started where it stood', () => {
    // Table 2's run is one bucket, the group's last entry: its delete ends the run. Table 3 then
    // starts a run at the same position, and table 2's bucket 0 comes back after it.
    const keys: Key[] = [
      [1, null, 0],
      [1, null, 1],
      [2, null, 0],
      [3, null, 0],
    ];
    const g = new GroupOffsets();
    const model = new Map<string, CommittedOffsetValue>();
    const set = (key: Key, n: number) => {
      put(g, value(key, n));
      model.set(keyString(key), value(key, n));
    };
    set(keys[0]!, 1);
    set(keys[1]!, 2);
    set(keys[2]!, 3);
    expect(g.delete(2, null, 0)).toBe(true);
    model.delete(keyString(keys[2]!));
    set(keys[3]!, 4);
    set(keys[2]!, 5);
    expectMatches(g, model, keys, 'after table 2 bucket 0 came back');
    // An overwrite finds the entry rather than adding the bucket a second time.
    set(keys[2]!, 6);
    expectMatches(g, model, keys, 'after overwriting table 2 bucket 0');
  });

  it('keeps keys at Number.MAX_SAFE_INTEGER exact and partitionId null distinct from 0', () => {
    const max = Number.MAX_SAFE_INTEGER;
    const keys: Key[] = [
      [max, null, 0],
      [max, 0, 0],
      [max, max, 2 ** 31 - 1],
      [0, null, 0],
      [0, 0, 0],
      [max - 1, null, 0],
      [2 ** 32, null, 0],
      [0, 2 ** 32, 0],
      [2 ** 32 + 1, 1, 1],
      [1, null, 0],
      [1, 0, 0],
    ];
    for (const size of [keys.length - 3, keys.length]) {
      // linear-scan and hashed
      const g = new GroupOffsets();
      const model = new Map<string, CommittedOffsetValue>();
      keys.slice(0, size).forEach((key, n) => {
        const v = { ...value(key, n), offset: max - n };
        put(g, v);
        model.set(keyString(key), v);
      });
      expectMatches(g, model, keys, `${size} keys`);
      expect(lookup(g, [max, null, 0])!.offset).toBe(max);
      expect(lookup(g, [max, 0, 0])!.partitionId).toBe(0);
      expect(lookup(g, [max, null, 0])!.partitionId).toBeNull();
      g.delete(0, null, 0);
      model.delete('0/null/0');
      expectMatches(g, model, keys, `${size} keys, null partition deleted`);
      expect(lookup(g, [0, 0, 0])).not.toBeNull();
    }
  });

  it('matches a Map model under random sets and delete-heavy sequences (backward-shift deletion)', () => {
    // A small key space with ids that differ only in their high 32 bits, so probe chains collide and
    // deletions have to shift entries back across wrapped clusters.
    const tableIds = [0, 1, 2 ** 32, 2 ** 32 + 1, Number.MAX_SAFE_INTEGER];
    const partitionIds = [null, 0, 1, 2 ** 32];
    const universe: Key[] = [];
    for (const t of tableIds)
      for (const p of partitionIds) for (let b = 0; b < 8; b++) universe.push([t, p, b]);
    const setOp = fc.record({
      kind: fc.constant('set' as const),
      key: fc.nat(universe.length - 1),
      offset: fc.maxSafeNat(),
      metadata: fc.constantFrom('', '', 'a', 'ünïcode-✓'),
    });
    const op = fc.oneof(
      { arbitrary: setOp, weight: 2 },
      {
        arbitrary: fc.record({
          kind: fc.constant('delete' as const),
          key: fc.nat(universe.length - 1),
        }),
        weight: 1,
      },
      // Delete a key known to be present: keeps deletions frequent even when the table is sparse.
      {
        arbitrary: fc.record({ kind: fc.constant('deletePresent' as const), pick: fc.nat() }),
        weight: 3,
      },
    );
    // A growth phase (up to the whole key space, far past the linear-scan limit), then a
    // delete-heavy phase that drains the table back through it.
    fc.assert(
      fc.property(
        fc.array(setOp, { maxLength: 250, size: 'max' }),
        fc.array(op, { maxLength: 400, size: 'max' }),
        (growth, mixed) => {
          const g = new GroupOffsets();
          const model = new Map<string, CommittedOffsetValue>();
          [...growth, ...mixed].forEach((o, step) => {
            if (o.kind === 'set') {
              const key = universe[o.key]!;
              const v = { ...value(key, step, o.metadata), offset: o.offset };
              put(g, v);
              model.set(keyString(key), v);
            } else {
              let key: Key;
              if (o.kind === 'delete') key = universe[o.key]!;
              else {
                const present = [...model.values()];
                if (present.length === 0) return;
                const v = present[o.pick % present.length]!;
                key = [v.tableId, v.partitionId, v.bucketId];
              }
              const deleted = g.delete(...key);
              if (deleted !== model.delete(keyString(key)))
                expect.fail(`step ${step}: delete ${keyString(key)} returned ${deleted}`);
            }
            if (g.size !== model.size)
              expect.fail(`step ${step}: size ${g.size}, model ${model.size}`);
            if (step % 10 === 0) expectMatches(g, model, universe, `step ${step}`);
          });
          expectMatches(g, model, universe, 'end of sequence');
        },
      ),
      { numRuns: runs, ...seedOption },
    );
  });
  it('keeps the buckets of a group in the dense layout (3 doubles each) when they arrive out of order, topic after topic, or reloaded from an image', () => {
    // In order, one table: the reference. The members of a group commit their own buckets, so the
    // member of 4-7 may come before the member of 0-3; a Kafka group reads several topics.
    const inOrder = new GroupOffsets();
    for (let b = 0; b < 12; b++) put(inOrder, value([1, null, b], b));
    const denseBytes = inOrder.arrayBytes;
    const members = new GroupOffsets();
    for (const b of [4, 5, 6, 7, 0, 1, 2, 3, 8, 9, 10, 11]) put(members, value([1, null, b], b));
    expect(members.arrayBytes).toBeLessThanOrEqual(denseBytes);
    const topics = new GroupOffsets();
    const keys: Key[] = [];
    for (let t = 10; t > 0; t--) for (let b = 11; b >= 0; b--) keys.push([t, t % 2 ? null : 0, b]);
    for (const [n, key] of keys.entries()) put(topics, value(key, n, n % 7 === 0 ? `m${n}` : ''));
    // 120 entries: dense they take 120 x 3 doubles (and growth slack), sparse 120 x 6 and slots.
    expect(topics.arrayBytes).toBeLessThan(120 * 6 * 8);
    const reloaded = GroupOffsets.fromImage(topics.toImage().entries, topics.toImage().metadata);
    expect(reloaded.arrayBytes).toBeLessThan(120 * 6 * 8);
    for (const g of [topics, reloaded]) {
      for (const [n, key] of keys.entries())
        expect(lookup(g, key)).toEqual(value(key, n, n % 7 === 0 ? `m${n}` : ''));
      expect(g.size).toBe(120);
    }
  });

  it('finds in-order buckets of tables and partitions by position (runs of the dense prefix) and stays equal to a Map model through deletes inside the prefix, other keys, re-inserts and checkpoint images', () => {
    // Runs of in-order buckets of several (table, partition) pairs are committed first (up to 20
    // runs, more than a prefix holds), so most of the group is a dense prefix; the mixed phase then
    // deletes inside it, adds other keys (including table 7 partition 0, which must not be mistaken
    // for table 7 without a partition), and re-inserts; every few steps the table is rebuilt from its
    // checkpoint image.
    const pairs: [number, number | null][] = [
      [7, null],
      [7, 0],
      [8, null],
    ];
    for (let t = 100; t < 120; t++) pairs.push([t, t % 2 === 0 ? null : 3]);
    const universe: Key[] = [];
    for (const [t, p] of pairs) for (let b = 0; b < 30; b++) universe.push([t, p, b]);
    const setOp = fc.record({
      kind: fc.constant('set' as const),
      key: fc.nat(universe.length - 1),
      offset: fc.maxSafeNat(),
      metadata: fc.constantFrom('', '', 'm'),
    });
    const op = fc.oneof(
      { arbitrary: setOp, weight: 2 },
      {
        arbitrary: fc.record({ kind: fc.constant('deletePresent' as const), pick: fc.nat() }),
        weight: 2,
      },
      { arbitrary: fc.record({ kind: fc.constant('image' as const) }), weight: 1 },
    );
    const inOrderRuns = fc.uniqueArray(
      fc.tuple(fc.nat(pairs.length - 1), fc.integer({ min: 0, max: 30 })),
      { maxLength: 20, selector: ([pair]) => pair },
    );
    fc.assert(
      fc.property(
        inOrderRuns,
        fc.array(op, { maxLength: 300, size: 'max' }),
        (runsInOrder, mixed) => {
          let g = new GroupOffsets();
          const model = new Map<string, CommittedOffsetValue>();
          for (const [pair, count] of runsInOrder) {
            for (let b = 0; b < count; b++) {
              const key: Key = [...pairs[pair]!, b];
              const v = value(key, b, b % 5 === 0 ? `m${pair}` : '');
              put(g, v);
              model.set(keyString(key), v);
            }
          }
          expectMatches(g, model, universe, `after in-order runs ${JSON.stringify(runsInOrder)}`);
          mixed.forEach((o, step) => {
            if (o.kind === 'image') {
              const image = g.toImage();
              g = GroupOffsets.fromImage(image.entries, image.metadata);
            } else if (o.kind === 'set') {
              const key = universe[o.key]!;
              const v = { ...value(key, step, o.metadata), offset: o.offset };
              put(g, v);
              model.set(keyString(key), v);
            } else {
              const present = [...model.values()];
              if (present.length === 0) return;
              const v = present[o.pick % present.length]!;
              expect(g.delete(v.tableId, v.partitionId, v.bucketId)).toBe(true);
              model.delete(keyString([v.tableId, v.partitionId, v.bucketId]));
            }
            if (step % 5 === 0) expectMatches(g, model, universe, `step ${step}`);
          });
          expectMatches(g, model, universe, 'end of sequence');
        },
      ),
      { numRuns: runs, ...seedOption },
    );
  });
});

describe('hashBucketKey', () => {
  it('spreads keys chosen to share a hash under a fixed function (one bucket id per table id, solved for) over the slots', () => {
    // The function before the hash was seeded, and its inverse: keys whose hashes under it are all
    // the same made each insert of a commit probe past every key before it.
    const inverseOf = (c: number) => {
      let x = c;
      for (let i = 0; i < 5; i++) x = Math.imul(x, 2 - Math.imul(c, x));
      return x;
    };
    const unshift15 = (y: number) => {
      let x = y >>> 0;
      for (let i = 0; i < 3; i++) x = (y ^ (x >>> 15)) >>> 0;
      return x;
    };
    const target = Math.imul(unshift15(12345), inverseOf(0xc2b2ae3d)) >>> 0;
    const keys: [number, number][] = [];
    for (let tableId = 0; keys.length < 20_000; tableId++) {
      const h = Math.imul(Math.imul(tableId, 0x9e3779b1) ^ -1, 0x85ebca77);
      const bucketId = (target ^ h) >>> 0;
      if (bucketId <= 2 ** 31 - 1) keys.push([tableId, bucketId]);
    }
    const slots = new Set(keys.map(([t, b]) => hashBucketKey(t, -1, b) & 0xffff));
    // 20,000 keys hashed at random into 65,536 slots take ~17,200 distinct ones.
    expect(slots.size).toBeGreaterThan(15_000);
  });
});
