/**
 * Validation at the store's edge, each rejected request writing nothing and changing nothing (checked
 * after every test): group ids (INVALID_GROUP_ID; TypeError when not a string), every offset field and
 * its boundaries (INVALID_REQUEST naming offsets[i].field), metadata over 4096 UTF-8 bytes, a bucket
 * named twice, a commit too big for one batch, wrong argument types, and strings with a lone surrogate;
 * surrogate pairs are accepted and round-trip across a reopen.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MemberOptions, OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { imageOf, openStore, type StoreImage } from './store-fixtures.js';

let store: OffsetStore;
let before: StoreImage;
let logBytesBefore: number;

const ok = { tableId: 1, bucketId: 0, offset: 1 };

beforeEach(async () => {
  store = await openStore(tempDir());
  await store.commitOffsets('existing', [{ tableId: 1, bucketId: 0, offset: 100 }]);
  before = await imageOf(store);
  logBytesBefore = (await store.stats()).totals.logBytes;
});

afterEach(async () => {
  // Every test only makes rejected requests: nothing may have been written or become visible.
  expect((await store.stats()).totals.logBytes, 'a rejected request writes nothing').toBe(
    logBytesBefore,
  );
  expect(await imageOf(store, ['g'])).toEqual(before);
  await store.close();
});

/** The user-visible outcome of a call: its error code, TypeError, or ok. */
async function outcome(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return 'ok';
  } catch (error) {
    if (error instanceof TypeError) return 'TypeError';
    return (error as { code?: string }).code ?? `unexpected ${String(error)}`;
  }
}

describe('group id validation', () => {
  const invalid: [string, string][] = [
    ['empty', ''],
    ['256 ASCII bytes', 'g'.repeat(256)],
    ['256 bytes of 2-byte chars', 'é'.repeat(128)],
    ['256 bytes: 85 3-byte chars and one ASCII', '€'.repeat(85) + 'a'],
    ['256 bytes of 4-byte chars', '😀'.repeat(64)],
  ];
  for (const [what, groupId] of invalid) {
    it(`rejects a group id that is ${what} with INVALID_GROUP_ID on every method`, async () => {
      expect(Buffer.byteLength(groupId) === 0 || Buffer.byteLength(groupId) === 256).toBe(true);
      const calls: [string, () => Promise<unknown>][] = [
        ['commitOffsets', () => store.commitOffsets(groupId, [ok])],
        ['fetchOffsets', () => store.fetchOffsets(groupId)],
        ['fetchOffsets with buckets', () => store.fetchOffsets(groupId, [ok])],
        ['describeGroup', () => store.describeGroup(groupId)],
        ['resetOffsets', () => store.resetOffsets(groupId, [ok])],
        ['deleteOffsets', () => store.deleteOffsets(groupId, [ok])],
        ['deleteGroup', () => store.deleteGroup(groupId)],
        ['scanner', async () => store.scanner(groupId)],
      ];
      for (const [name, call] of calls) {
        expect(await outcome(call), name).toBe('INVALID_GROUP_ID');
      }
      await expect(store.commitOffsets(groupId, [ok])).rejects.toMatchObject({
        errno: 24,
        retriable: false,
      });
    });
  }

  it('accepts group ids of exactly 255 UTF-8 bytes however they are made up', async () => {
    const ids = ['g'.repeat(255), 'é'.repeat(127) + 'a', '€'.repeat(85), '😀'.repeat(63) + 'abc'];
    for (const groupId of ids) {
      expect(Buffer.byteLength(groupId)).toBe(255);
      expect(await outcome(() => store.fetchOffsets(groupId)), groupId).toBe('ok');
      expect(() => store.bucketFor(groupId)).not.toThrow();
    }
    // One real commit with the longest id (then undone so the afterEach invariants hold).
    const fresh = await openStore(tempDir());
    await fresh.commitOffsets(ids[3]!, [ok]);
    expect((await fresh.listGroups()).map((g) => g.groupId)).toEqual([ids[3]]);
    await fresh.close();
  });

  it('throws TypeError for a group id that is not a string', async () => {
    for (const groupId of [undefined, null, 42, {}, ['g']]) {
      expect(
        await outcome(() => store.commitOffsets(groupId as never, [ok])),
        String(groupId),
      ).toBe('TypeError');
      expect(await outcome(() => store.fetchOffsets(groupId as never)), String(groupId)).toBe(
        'TypeError',
      );
    }
  });
});

describe('offset commit validation', () => {
  const field = (index: number, name: string) =>
    new RegExp(`^INVALID_REQUEST: .*offsets\\[${index}\\]\\.${name}`);
  const cases: [string, Record<string, unknown>, string][] = [
    [
      'an offset of -2^53 (negative offsets are data, unsafe integers are not)',
      { offset: -(2 ** 53) },
      'offset',
    ],
    ['an offset of 2^53', { offset: 2 ** 53 }, 'offset'],
    ['a fractional offset', { offset: 1.5 }, 'offset'],
    ['a NaN offset', { offset: Number.NaN }, 'offset'],
    ['an infinite offset', { offset: Number.POSITIVE_INFINITY }, 'offset'],
    ['a negative tableId', { tableId: -1 }, 'tableId'],
    ['an unsafe tableId', { tableId: 2 ** 53 }, 'tableId'],
    ['a partitionId of -1 (not a way to say null)', { partitionId: -1 }, 'partitionId'],
    ['an unsafe partitionId', { partitionId: Number.MAX_SAFE_INTEGER + 2 }, 'partitionId'],
    ['a negative bucketId', { bucketId: -1 }, 'bucketId'],
    ['a bucketId beyond int32', { bucketId: 2 ** 31 }, 'bucketId'],
    ['a leaderEpoch below -1', { leaderEpoch: -2 }, 'leaderEpoch'],
    ['a leaderEpoch beyond int32', { leaderEpoch: 2 ** 31 }, 'leaderEpoch'],
    ['a fractional leaderEpoch', { leaderEpoch: 0.5 }, 'leaderEpoch'],
  ];
  for (const [what, override, name] of cases) {
    it(`rejects ${what} with INVALID_REQUEST naming offsets[1].${name}, writing nothing of the request`, async () => {
      const request = [
        { tableId: 5, bucketId: 5, offset: 5 },
        { ...ok, ...override },
      ];
      await expect(store.commitOffsets('g', request as never)).rejects.toThrow(field(1, name));
      await expect(store.commitOffsets('g', request as never)).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
        errno: 42,
      });
      await expect(store.resetOffsets('existing', request as never)).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
      });
    });
  }

  it('accepts the boundary values: offset and ids at MAX_SAFE_INTEGER, bucketId 2^31-1, leaderEpoch -1 and 2^31-1, metadata of 4096 bytes', async () => {
    const fresh = await openStore(tempDir());
    const accepted = [
      {
        tableId: Number.MAX_SAFE_INTEGER,
        partitionId: Number.MAX_SAFE_INTEGER,
        bucketId: 2 ** 31 - 1,
        offset: Number.MAX_SAFE_INTEGER,
        leaderEpoch: 2 ** 31 - 1,
      },
      {
        tableId: 0,
        partitionId: 0,
        bucketId: 0,
        offset: 0,
        leaderEpoch: -1,
        metadata: 'm'.repeat(4096),
      },
      { tableId: 0, bucketId: 1, offset: 0, metadata: 'é'.repeat(2048) },
      { tableId: 0, bucketId: 2, offset: 0, metadata: '€'.repeat(1365) + 'a' },
      { tableId: 0, bucketId: 3, offset: 0, metadata: '😀'.repeat(1024) },
    ];
    for (const o of accepted) expect(Buffer.byteLength(o.metadata ?? '')).toBeLessThanOrEqual(4096);
    await fresh.commitOffsets('g', accepted);
    const fetched = await fresh.fetchOffsets('g', accepted);
    expect(fetched.map((f) => f?.metadata)).toEqual(accepted.map((o) => o.metadata ?? ''));
    expect(fetched[0]).toMatchObject({
      offset: Number.MAX_SAFE_INTEGER,
      leaderEpoch: 2 ** 31 - 1,
      partitionId: Number.MAX_SAFE_INTEGER,
    });
    await fresh.close();
  });

  it('rejects metadata over 4096 UTF-8 bytes with OFFSET_METADATA_TOO_LARGE, multi-byte characters counted as bytes', async () => {
    for (const metadata of [
      'm'.repeat(4097),
      'é'.repeat(2048) + 'a',
      '€'.repeat(1366),
      '😀'.repeat(1024) + 'a',
    ]) {
      expect(Buffer.byteLength(metadata)).toBeGreaterThan(4096);
      await expect(
        store.commitOffsets('g', [ok, { tableId: 2, bucketId: 0, offset: 1, metadata }]),
      ).rejects.toMatchObject({
        code: 'OFFSET_METADATA_TOO_LARGE',
        errno: 12,
        message: expect.stringMatching(/offsets\[1\]\.metadata/),
      });
    }
  });

  it('rejects a commit naming a bucket twice with INVALID_REQUEST, an omitted partitionId being the same bucket as null', async () => {
    const duplicates = [
      [ok, { ...ok, offset: 2 }],
      [
        { tableId: 1, bucketId: 0, offset: 1 },
        { tableId: 2, bucketId: 0, offset: 1 },
        { tableId: 1, partitionId: null, bucketId: 0, offset: 3 },
      ],
      [
        { tableId: 1, partitionId: 4, bucketId: 0, offset: 1 },
        { tableId: 1, partitionId: 4, bucketId: 0, offset: 1 },
      ],
      // In order at first (no set needed), then a bucket from before: the set must still see it.
      [0, 1, 2, 3, 1].map((bucketId) => ({ tableId: 1, bucketId, offset: 1 })),
      [
        { tableId: 1, bucketId: 5, offset: 1 },
        { tableId: 2, partitionId: 0, bucketId: 0, offset: 1 },
        { tableId: 1, bucketId: 7, offset: 1 },
        { tableId: 1, bucketId: 5, offset: 1 },
      ],
    ];
    for (const request of duplicates) {
      await expect(store.commitOffsets('g', request)).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
        message: expect.stringMatching(/repeat/),
      });
      await expect(store.commitOffsets('existing', request)).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
      });
    }
    await expect(
      store.deleteOffsets('existing', [ok, { tableId: 1, partitionId: null, bucketId: 0 }]),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('rejects invalid bucket references in fetch and delete requests with INVALID_REQUEST', async () => {
    await expect(
      store.fetchOffsets('existing', [ok, { tableId: -3, bucketId: 0 }]),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringMatching(/tableId/) });
    await expect(
      store.deleteOffsets('existing', [{ tableId: 1, bucketId: 2 ** 31 }]),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(/bucketId/),
    });
  });

  it('rejects a commit too big for one batch with INVALID_REQUEST and keeps accepting commits (no fail-stop)', async () => {
    const huge = Array.from({ length: 2100 }, (_, i) => ({
      tableId: 1,
      bucketId: i,
      offset: 1,
      metadata: 'x'.repeat(4096),
    })); // ~8.6 MB
    await expect(store.commitOffsets('g', huge)).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    expect(
      await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }], { requireStable: true }),
      'no pending mark left behind',
    ).toEqual([null]);
    const fresh = await openStore(tempDir(), { commitRecordCountMax: 3 });
    await expect(
      fresh.commitOffsets(
        'g',
        [0, 1, 2, 3].map((bucketId) => ({ tableId: 1, bucketId, offset: 1 })),
      ),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await fresh.commitOffsets(
      'g',
      [0, 1, 2].map((bucketId) => ({ tableId: 1, bucketId, offset: 1 })),
    );
    await fresh.close();
    // The afterEach checks that nothing was written; the store still takes (and then forgets) a commit.
    const other = await openStore(tempDir());
    await expect(other.commitOffsets('g', huge)).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await other.commitOffsets('g', [ok]);
    expect((await other.fetchOffsets('g'))[0]?.offset).toBe(1);
    await other.close();
  });

  it('throws TypeError for arguments of the wrong type', async () => {
    const wrong: [string, () => Promise<unknown>][] = [
      [
        'offsets not an array',
        () => store.commitOffsets('g', { tableId: 1, bucketId: 0, offset: 1 } as never),
      ],
      ['an offset entry that is null', () => store.commitOffsets('g', [ok, null] as never)],
      [
        'an offset given as a string',
        () => store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: '5' }] as never),
      ],
      [
        'a tableId given as a string',
        () => store.commitOffsets('g', [{ tableId: '1', bucketId: 0, offset: 5 }] as never),
      ],
      ['a missing bucketId', () => store.commitOffsets('g', [{ tableId: 1, offset: 5 }] as never)],
      [
        'a partitionId given as a string',
        () =>
          store.commitOffsets('g', [
            { tableId: 1, partitionId: '0', bucketId: 0, offset: 5 },
          ] as never),
      ],
      [
        'metadata that is not a string',
        () => store.commitOffsets('g', [{ ...ok, metadata: 42 }] as never),
      ],
      [
        'a leaderEpoch given as a string',
        () => store.commitOffsets('g', [{ ...ok, leaderEpoch: '1' }] as never),
      ],
      [
        'fetch buckets not an array',
        () => store.fetchOffsets('g', { tableId: 1, bucketId: 0 } as never),
      ],
      ['delete buckets not an array', () => store.deleteOffsets('existing', 'all' as never)],
      ['reset offsets not an array', () => store.resetOffsets('existing', undefined as never)],
    ];
    for (const [what, call] of wrong) expect(await outcome(call), what).toBe('TypeError');
  });
});

describe('strings that are not well-formed UTF-16', () => {
  // A lone surrogate has no UTF-8 encoding: written to disk it became U+FFFD, so different ids
  // came back from a reopen as one id. Every string that reaches the disk is refused instead.
  const lone = ['g\uD800', 'g\uDBFF', 'g\uDC00', '\uDC00\uD800', 'a\uD83D'];
  const join = { memberEpoch: 0, subscribedTableIds: [1] };

  it('rejects a group id with a lone surrogate with INVALID_GROUP_ID on every method, saying it is not well-formed', async () => {
    for (const groupId of lone) {
      const calls: [string, () => Promise<unknown>][] = [
        ['commitOffsets', () => store.commitOffsets(groupId, [ok])],
        ['fetchOffsets', () => store.fetchOffsets(groupId)],
        ['fetchOffsets with buckets', () => store.fetchOffsets(groupId, [ok])],
        [
          'fetchOffsets requireStable',
          () => store.fetchOffsets(groupId, [ok], { requireStable: true }),
        ],
        ['describeGroup', () => store.describeGroup(groupId)],
        ['resetOffsets', () => store.resetOffsets(groupId, [ok])],
        ['deleteOffsets', () => store.deleteOffsets(groupId, [ok])],
        ['deleteGroup', () => store.deleteGroup(groupId)],
        ['heartbeat', () => store.heartbeat(groupId, join)],
        ['joinGroup', () => store.joinGroup(groupId, { subscribedTableIds: [1] })],
        ['scanner', async () => store.scanner(groupId)],
        ['bucketFor', async () => store.bucketFor(groupId)],
      ];
      for (const [name, call] of calls) {
        expect(await outcome(call), `${name}(${JSON.stringify(groupId)})`).toBe('INVALID_GROUP_ID');
      }
      await expect(store.commitOffsets(groupId, [ok])).rejects.toThrow(
        /groupId .*not well-formed UTF-16/,
      );
    }
  });

  it('no longer merges g\\uD800, g\\uDBFF and g\\uDC00 into one group at reopen: each commit is refused and nothing is written', async () => {
    const dir = tempDir();
    const fresh = await openStore(dir);
    const logBytes = (await fresh.stats()).totals.logBytes;
    const ids = ['g\uD800', 'g\uDBFF', 'g\uDC00'];
    for (const [i, groupId] of ids.entries()) {
      await expect(
        fresh.commitOffsets(groupId, [{ tableId: 1, bucketId: i, offset: 10 + i }]),
      ).rejects.toMatchObject({ code: 'INVALID_GROUP_ID' });
    }
    expect((await fresh.stats()).totals.logBytes).toBe(logBytes);
    await fresh.close();
    const reopened = await openStore(dir);
    expect(await reopened.listGroups()).toEqual([]);
    expect(await reopened.fetchOffsets('g\uFFFD')).toEqual([]);
    await reopened.close();
  });

  it('rejects offset metadata with a lone surrogate with INVALID_REQUEST naming offsets[i].metadata', async () => {
    for (const metadata of ['m\uD800', '\uDFFF', 'x'.repeat(100) + '\uDBFF']) {
      const request = [ok, { tableId: 2, bucketId: 0, offset: 1, metadata }];
      await expect(store.commitOffsets('g', request)).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
        message: expect.stringMatching(/offsets\[1\]\.metadata .*not well-formed UTF-16/),
      });
      await expect(store.resetOffsets('existing', request)).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
      });
    }
  });

  it('rejects member ids, instance ids and assignor names with a lone surrogate on heartbeat and joinGroup with INVALID_REQUEST naming the field', async () => {
    store.setTableLayout(1, { bucketCount: 4 });
    const requests: [string, Record<string, unknown>][] = [
      ['memberId', { ...join, memberId: 'm\uD800' }],
      ['memberId', { ...join, memberId: 'm\uDC00' }],
      ['instanceId', { ...join, instanceId: 'i\uDBFF' }],
      ['assignor', { ...join, assignor: 'uniform\uD800' }],
      ['memberId', { memberEpoch: 3, memberId: '\uDC00' }],
      ['memberId', { memberEpoch: -1, memberId: 'm\uD800' }],
      ['instanceId', { memberEpoch: -2, memberId: 'm', instanceId: 'i\uD800' }],
    ];
    for (const [field, request] of requests) {
      await expect(
        store.heartbeat('g', request as never),
        JSON.stringify(request),
      ).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
        message: expect.stringMatching(new RegExp(`${field} .*not well-formed UTF-16`)),
      });
    }
    for (const options of [
      { memberId: 'm\uD800' },
      { instanceId: 'i\uDC00' },
      { assignor: 'range\uDBFF' },
    ]) {
      await expect(
        store.joinGroup('g', { subscribedTableIds: [1], ...options } as MemberOptions),
      ).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    }
    await expect(
      store.commitOffsets('existing', [ok], { memberId: 'm\uD800', memberEpoch: 1 }),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(/memberId .*not well-formed UTF-16/),
    });
  });

  it('refuses a joinGroup whose clock or callbacks are not what they must be with a TypeError, before the member joins', async () => {
    store.setTableLayout(1, { bucketCount: 4 });
    for (const [options, message] of [
      [{ clock: {} }, /options\.clock must have nowMs\(\) and setTimer\(\)/],
      [{ clock: null }, /options\.clock must have/],
      [{ onAssigned: 'yes' }, /options\.onAssigned must be a function, got string/],
      [{ onRevoked: 1 }, /options\.onRevoked must be a function/],
      [{ onLost: {} }, /options\.onLost must be a function/],
      [{ onError: true }, /options\.onError must be a function/],
    ] as const) {
      await expect(
        store.joinGroup('g', { subscribedTableIds: [1], ...options } as unknown as MemberOptions),
        JSON.stringify(options),
      ).rejects.toThrow(
        expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(message) }),
      );
    }
    // No member was left behind: the group was never created (and nothing was written).
    await expect(store.describeGroup('g')).rejects.toMatchObject({ code: 'GROUP_ID_NOT_FOUND' });
  });

  it('keeps a bucket openable: members whose ids differ only by a lone surrogate are refused, so the snapshot never holds a member twice', async () => {
    const dir = tempDir();
    const fresh = await openStore(dir);
    fresh.setTableLayout(1, { bucketCount: 4 });
    await fresh.heartbeat('g', { ...join, memberId: 'm-ok' });
    for (const memberId of ['m\uD800', 'm\uDC00']) {
      await expect(fresh.heartbeat('g', { ...join, memberId })).rejects.toMatchObject({
        code: 'INVALID_REQUEST',
      });
    }
    for (const instanceId of ['i\uD800', 'i\uDC00']) {
      await expect(
        fresh.heartbeat('g', { ...join, memberId: `m-${instanceId.charCodeAt(1)}`, instanceId }),
      ).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    }
    await fresh.close();
    const reopened = await openStore(dir);
    expect((await reopened.describeGroup('g')).members.map((m) => m.memberId)).toEqual(['m-ok']);
    await reopened.close();
  });

  it('accepts well-formed astral characters (surrogate pairs) everywhere and round-trips them across a reopen', async () => {
    const dir = tempDir();
    const fresh = await openStore(dir);
    fresh.setTableLayout(1, { bucketCount: 1 });
    const groupId = 'g-\u{1F600}';
    const memberId = 'm-\uD83D\uDE00';
    const instanceId = 'i-\u{1F680}';
    const joined = await fresh.heartbeat(groupId, { ...join, memberId, instanceId });
    expect(joined.memberId).toBe(memberId);
    const settled = await fresh.heartbeat(groupId, {
      memberEpoch: joined.memberEpoch,
      memberId,
      ownedBuckets: joined.assignment ?? [],
    });
    const metadata = 'host \u{1F600} \u{10FFFF}';
    await fresh.commitOffsets(groupId, [{ tableId: 1, bucketId: 0, offset: 7, metadata }], {
      memberId,
      memberEpoch: settled.memberEpoch,
    });
    await fresh.close();
    const reopened = await openStore(dir);
    expect(await reopened.fetchOffsets(groupId, [{ tableId: 1, bucketId: 0 }])).toMatchObject([
      { offset: 7, metadata },
    ]);
    const description = await reopened.describeGroup(groupId);
    expect(description.groupId).toBe(groupId);
    expect(description.members).toMatchObject([{ memberId, instanceId }]);
    expect((await reopened.listGroups()).map((g) => g.groupId)).toEqual([groupId]);
    await reopened.close();
  });
});
