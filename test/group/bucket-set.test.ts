/**
 * BucketSet and BucketMap behave like a Set and a Map keyed by bucket (a model test over small and huge
 * ids), and a BucketSet recognizes its own refs in order without lookups and sorts on toArray.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BucketMap,
  BucketSet,
  bucketKey,
  normalizeBucketRef,
  type TableBucket,
} from '../../src/group/index.js';

// Small and huge ids, so both packed and string partition keys, bitsets, sparse sets and the
// BucketMap's dense and sparse storage are exercised.
const refArb: fc.Arbitrary<TableBucket> = fc
  .record({
    tableId: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant(40_000), fc.constant(2 ** 40)),
    partitionId: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 2 }), fc.constant(70_000)),
    bucketId: fc.oneof(
      fc.integer({ min: 0, max: 200 }),
      fc.integer({ min: 65_530, max: 65_540 }),
      fc.constant(2 ** 31 - 1),
      fc.constant(5_000_000),
    ),
  })
  .map((r) => normalizeBucketRef(r));

const keys = (refs: Iterable<TableBucket>) => new Set([...refs].map(bucketKey));

describe('BucketSet and BucketMap', () => {
  it('behave like a Set / Map keyed by bucket (model test)', () => {
    fc.assert(
      fc.property(
        fc.array(refArb, { maxLength: 60 }),
        fc.array(refArb, { maxLength: 60 }),
        (a, b) => {
          const sa = BucketSet.of(a);
          const sb = BucketSet.of(b);
          const ka = keys(a);
          const kb = keys(b);
          expect(sa.size).toBe(ka.size);
          expect(keys(sa)).toEqual(ka);
          for (const ref of [...a, ...b]) expect(sa.has(ref)).toBe(ka.has(bucketKey(ref)));
          expect(keys(sa.intersect(sb))).toEqual(new Set([...ka].filter((k) => kb.has(k))));
          expect(keys(sa.difference(sb))).toEqual(new Set([...ka].filter((k) => !kb.has(k))));
          expect(keys(sa.union(sb))).toEqual(new Set([...ka, ...kb]));
          expect(sa.isSubsetOf(sb)).toBe([...ka].every((k) => kb.has(k)));
          expect(sa.intersects(sb)).toBe([...ka].some((k) => kb.has(k)));
          expect(sa.equals(sb)).toBe(ka.size === kb.size && [...ka].every((k) => kb.has(k)));
          const map = new BucketMap<number>();
          const model = new Map<string, number>();
          a.forEach((ref, i) => {
            map.set(ref, i);
            model.set(bucketKey(ref), i);
          });
          for (const ref of b) expect(map.delete(ref)).toBe(model.delete(bucketKey(ref)));
          expect(map.size).toBe(model.size);
          for (const ref of [...a, ...b]) expect(map.get(ref)).toBe(model.get(bucketKey(ref)));
        },
      ),
      { numRuns: Number(process.env.GROUP_PROPERTY_RUNS ?? 200) },
    );
  });

  it('recognizes its own refs in order without lookups, and sorts on toArray', () => {
    const refs = [2, 0, 1].map((bucketId) => normalizeBucketRef({ tableId: 1, bucketId }));
    const set = BucketSet.of(refs);
    expect(set.isSameSequence(refs)).toBe(true);
    expect(set.isSameSequence(refs.map((r) => ({ ...r })))).toBe(false);
    expect(set.toArray().map((r) => r.bucketId)).toEqual([0, 1, 2]);
    expect(Object.isFrozen(refs[0])).toBe(true);
  });
});
