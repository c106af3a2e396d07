/**
 * Every store in the comparison passes the same correctness suite, so the benchmark compares working
 * offset stores: commit and fetch back, overwrite, null for what was never committed, groups kept
 * apart, and data surviving close and reopen.
 *
 * offset-store joins the suite through the same adapter; it is skipped while `src/index.ts` is
 * absent.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AdapterSpec, OffsetStoreAdapter } from '../../bench/compare/adapter.js';
import { PEER_SPECS, loadSubjectSpec } from '../../bench/compare/adapters/index.js';
import { tempDir } from '../support/temp-dir.js';

const subjectSourcePresent = existsSync(
  fileURLToPath(new URL('../../src/index.ts', import.meta.url)),
);
const subject = subjectSourcePresent ? await loadSubjectSpec() : undefined;

interface Case {
  id: string;
  spec: AdapterSpec | undefined;
  skip: boolean;
}

const cases: Case[] = [
  {
    id: 'offset-store',
    spec: subject !== undefined && 'create' in subject ? subject : undefined,
    skip: !subjectSourcePresent,
  },
  ...PEER_SPECS.filter((spec) => spec.writeOnly !== true).map((spec) => ({
    id: spec.id,
    spec,
    skip: false,
  })),
];

describe.each(cases)('$id adapter', ({ id, spec, skip }) => {
  let dir: string;
  let adapter: OffsetStoreAdapter;

  beforeEach(async () => {
    if (skip) return;
    if (spec === undefined)
      throw new Error(
        `${id} adapter did not load: ${subject !== undefined && 'reason' in subject ? subject.reason : 'unknown'}`,
      );
    dir = tempDir(`bench-compare-${id}-`);
    adapter = spec.create();
    await adapter.open(dir);
  });

  afterEach(async () => {
    if (skip) return;
    await adapter?.close();
  });

  it.skipIf(skip)('fetches back what it committed, field by field, in request order', async () => {
    const before = Date.now();
    await adapter.commit('orders', [
      { tableId: 1, partitionId: null, bucketId: 0, offset: 42 },
      {
        tableId: 1,
        partitionId: 7,
        bucketId: 3,
        offset: 2 ** 40,
        leaderEpoch: 5,
        metadata: 'host-a ✓',
      },
    ]);
    const after = Date.now();

    const fetched = await adapter.fetch('orders', [
      { tableId: 1, partitionId: 7, bucketId: 3 },
      { tableId: 1, bucketId: 0 },
    ]);

    expect(fetched).toHaveLength(2);
    expect(fetched[0]).toMatchObject({
      tableId: 1,
      partitionId: 7,
      bucketId: 3,
      offset: 2 ** 40,
      leaderEpoch: 5,
      metadata: 'host-a ✓',
    });
    expect(fetched[1]).toMatchObject({
      tableId: 1,
      bucketId: 0,
      offset: 42,
      leaderEpoch: -1,
      metadata: '',
    });
    expect(fetched[1]?.partitionId ?? null).toBeNull();
    for (const offset of fetched) {
      expect(offset?.commitTimestampMs).toBeGreaterThanOrEqual(before);
      expect(offset?.commitTimestampMs).toBeLessThanOrEqual(after);
    }
  });

  it.skipIf(skip)(
    'a later commit overwrites the offset of the same bucket and leaves the others',
    async () => {
      await adapter.commit('orders', [
        { tableId: 1, bucketId: 0, offset: 10 },
        { tableId: 1, bucketId: 1, offset: 20 },
      ]);
      await adapter.commit('orders', [
        { tableId: 1, bucketId: 0, offset: 11, leaderEpoch: 2, metadata: 'm' },
      ]);

      const [b0, b1] = await adapter.fetch('orders', [
        { tableId: 1, bucketId: 0 },
        { tableId: 1, bucketId: 1 },
      ]);

      expect(b0).toMatchObject({ offset: 11, leaderEpoch: 2, metadata: 'm' });
      expect(b1).toMatchObject({ offset: 20 });
    },
  );

  it.skipIf(skip)('returns null for a bucket or a group that has nothing committed', async () => {
    await adapter.commit('orders', [{ tableId: 1, bucketId: 0, offset: 1 }]);

    expect(
      await adapter.fetch('orders', [
        { tableId: 1, bucketId: 1 },
        { tableId: 2, bucketId: 0 },
        { tableId: 1, partitionId: 0, bucketId: 0 },
      ]),
    ).toEqual([null, null, null]);
    expect(await adapter.fetch('nobody', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
  });

  it.skipIf(skip)('keeps groups apart: the same bucket holds one offset per group', async () => {
    await adapter.commit('a', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await adapter.commit('b', [{ tableId: 1, bucketId: 0, offset: 2 }]);

    const [a] = await adapter.fetch('a', [{ tableId: 1, bucketId: 0 }]);
    const [b] = await adapter.fetch('b', [{ tableId: 1, bucketId: 0 }]);

    expect(a?.offset).toBe(1);
    expect(b?.offset).toBe(2);
  });

  it.skipIf(skip)('keeps every committed offset across close and reopen', async () => {
    const buckets = Array.from({ length: 100 }, (_, bucketId) => ({ tableId: 3, bucketId }));
    await adapter.commit(
      'g',
      buckets.map((b) => ({ ...b, offset: b.bucketId * 1000 })),
    );
    await adapter.commit('g', [{ tableId: 3, bucketId: 7, offset: 7777, metadata: 'last' }]);
    await adapter.close();

    adapter = spec!.create();
    await adapter.open(dir);
    const fetched = await adapter.fetch('g', buckets);

    expect(fetched.map((o) => o?.offset)).toEqual(
      buckets.map((b) => (b.bucketId === 7 ? 7777 : b.bucketId * 1000)),
    );
    expect(fetched[7]?.metadata).toBe('last');
  });

  it.skipIf(skip)('serves 64 concurrent committers without losing a commit', async () => {
    await Promise.all(
      Array.from({ length: 64 }, (_, c) =>
        adapter.commit(`c${c}`, [
          { tableId: 1, bucketId: 0, offset: c },
          { tableId: 1, bucketId: 1, offset: c + 1 },
        ]),
      ),
    );

    for (let c = 0; c < 64; c++) {
      const fetched = await adapter.fetch(`c${c}`, [
        { tableId: 1, bucketId: 0 },
        { tableId: 1, bucketId: 1 },
      ]);
      expect(fetched.map((o) => o?.offset)).toEqual([c, c + 1]);
    }
  });
});
