/**
 * Every options bag of the public API refuses a key that is not one of its options, with a
 * TypeError naming it and the option it most likely misspells, before anything is done: a misspelt
 * option would be ignored in silence (a commit with `memberID` would be a commit without a member,
 * unfenced; a scanner with `autoCommitInterval` would never commit). Keys a bag inherits count too,
 * since options are read with them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';

let store: OffsetStore | undefined;

afterEach(async () => {
  await store?.close();
  store = undefined;
});

const BUCKET = { tableId: 1, bucketId: 0 };

/** The TypeError `call` throws or rejects with (a test failure naming `what` if it does not). */
async function typeErrorOf(call: () => unknown, what: string): Promise<TypeError> {
  let outcome: unknown;
  try {
    outcome = await call();
  } catch (error) {
    outcome = error;
  }
  expect(outcome, what).toBeInstanceOf(TypeError);
  return outcome as TypeError;
}

describe('options bags refuse keys that are not options', () => {
  it('refuses them in each call that takes options, writing nothing', async () => {
    store = await OffsetStore.open({ dir: tempDir(), bucketCount: 1 });
    const s = store;
    await s.commitOffsets('g', [{ ...BUCKET, offset: 1 }]);
    const { memberId } = await s.heartbeat('live', { memberEpoch: 0, subscribedTableIds: [1] });
    const misspelt: [string, () => unknown, RegExp][] = [
      [
        'a commit whose member id is misspelt (it would be a commit without a member)',
        () =>
          s.commitOffsets('g', [{ ...BUCKET, offset: 2 }], {
            memberID: 'm',
            memberEpoch: 1,
          } as never),
        /^options\.memberID is not an option \(did you mean options\.memberId\?\); the options are memberId, memberEpoch, generationId, groupInstanceId$/,
      ],
      [
        'a fetch',
        () => s.fetchOffsets('g', [BUCKET], { requireStabel: true } as never),
        /^options\.requireStabel is not an option \(did you mean options\.requireStable\?\)/,
      ],
      [
        'a synchronous fetch',
        () => s.fetchOffsetsSync('g', [BUCKET], { requireStable: false, memeber: {} } as never),
        /^options\.memeber is not an option \(did you mean options\.member\?\)/,
      ],
      [
        'a scanner',
        () => s.scanner('g', { autoCommitInterval: 10 } as never),
        /^options\.autoCommitInterval is not an option \(did you mean options\.autoCommitIntervalMs\?\)/,
      ],
      [
        'a member joining',
        () => s.joinGroup('joined', { subscribedTableIds: [1], sessionTimeout: 5000 } as never),
        /^options\.sessionTimeout is not an option \(did you mean options\.sessionTimeoutMs\?\)/,
      ],
      [
        'a heartbeat',
        () =>
          s.heartbeat('live', {
            memberId,
            memberEpoch: 1,
            rebalanceTimeout: 1000,
          } as never),
        /^request\.rebalanceTimeout is not an option \(did you mean request\.rebalanceTimeoutMs\?\)/,
      ],
      [
        'a removal of members',
        () => s.removeMembers('live', { instanceId: ['a'] } as never),
        /^request\.instanceId is not an option \(did you mean request\.instanceIds\?\)/,
      ],
      [
        'a compaction',
        () => s.compact({ onBucketCompleted: () => {} } as never),
        /^options\.onBucketCompleted is not an option \(did you mean options\.onBucketCompacted\?\)/,
      ],
      [
        'a deletion of offsets',
        () => s.deleteOffsets('g', [BUCKET], { classicSubscription: () => [] } as never),
        /^options\.classicSubscription is not an option \(did you mean options\.classicSubscriptions\?\)/,
      ],
      // The classic protocol's requests too.
      [
        'a classic join',
        () =>
          s.classic.joinGroup('classic', {
            protocolType: 'consumer',
            protocols: [{ name: 'range', metadata: new Uint8Array() }],
            sessionTimeoutMs: 10_000,
            groupInstanceID: 'i',
          } as never),
        /^request\.groupInstanceID is not an option \(did you mean request\.groupInstanceId\?\)/,
      ],
      [
        'a classic heartbeat',
        () => s.classic.heartbeat('classic', { memberId: 'm', generation: 1 } as never),
        /^request\.generation is not an option \(did you mean request\.generationId\?\)/,
      ],
      [
        'a classic sync',
        () =>
          s.classic.syncGroup('classic', {
            memberId: 'm',
            generationId: 1,
            assignment: [],
          } as never),
        /^request\.assignment is not an option \(did you mean request\.assignments\?\)/,
      ],
      [
        'a classic leave',
        () => s.classic.leaveGroup('classic', { member: [{ memberId: 'm' }] } as never),
        /^request\.member is not an option \(did you mean request\.members\?\)/,
      ],
    ];
    for (const [what, call, message] of misspelt)
      expect((await typeErrorOf(call, what)).message, what).toMatch(message);
    expect(await s.groupType('classic')).toBeNull();
    await expect(s.compact(5 as never)).rejects.toThrow(/^options must be an object, got number$/);
    expect((await s.fetchOffsets('g', [BUCKET]))[0]?.offset).toBe(1);
    expect((await s.describeGroup('live')).members.map((m) => m.memberId)).toEqual([memberId]);
    expect((await s.listGroups()).map((g) => g.groupId).sort()).toEqual(['g', 'live']);
  });

  it('names what a bag that is no object is, in every call that takes one', async () => {
    store = await OffsetStore.open({ dir: tempDir(), bucketCount: 1 });
    const s = store;
    const { memberId } = await s.heartbeat('live', { memberEpoch: 0, subscribedTableIds: [1] });
    // An array is an object to typeof: taken as a bag, every option would be at its default.
    const calls: [string, () => unknown, string][] = [
      [
        'a commit',
        () => s.commitOffsets('g', [{ ...BUCKET, offset: 2 }], [] as never),
        "the commit's options",
      ],
      ['a fetch', () => s.fetchOffsets('g', [BUCKET], [] as never), 'options'],
      ['a scanner', () => s.scanner('g', [] as never), "the scanner's options"],
      ['a member joining', () => s.joinGroup('joined', [] as never), 'options'],
      ['a heartbeat', () => s.heartbeat('live', [] as never), 'heartbeat request'],
      ['a removal of members', () => s.removeMembers('live', [] as never), 'the removal request'],
      ['a compaction', () => s.compact([] as never), 'options'],
      ['a deletion of offsets', () => s.deleteOffsets('g', [BUCKET], [] as never), 'options'],
      [
        'a classic heartbeat',
        () => s.classic.heartbeat('classic', [] as never),
        'the Heartbeat request',
      ],
      ['an open', () => OffsetStore.open([] as never), 'options'],
      [
        'an open with compaction options',
        () => OffsetStore.open({ dir: tempDir(), compaction: [] as never }),
        'options.compaction',
      ],
    ];
    for (const [what, call, bag] of calls)
      expect((await typeErrorOf(call, what)).message, what).toBe(
        `${bag} must be an object, got an array`,
      );
    expect((await s.describeGroup('live')).members.map((m) => m.memberId)).toEqual([memberId]);
  });

  it('counts inherited keys: an open whose options inherit an unknown key is refused before creating anything', async () => {
    const dir = tempDir();
    // What a parsed `__proto__` key turns into once copied with Object.assign: an inherited bag.
    const polluted = Object.assign(
      { dir },
      JSON.parse('{"__proto__": {"bucketCount": 3, "bogusOption": 1}}') as object,
    );
    await expect(OffsetStore.open(polluted as never)).rejects.toThrow(
      /^options\.bogusOption is not an option/,
    );
    await expect(
      OffsetStore.open(
        Object.create(
          { bucketCount: 2, bucketcount: 5 },
          { dir: { value: dir, enumerable: true } },
        ) as never,
      ),
    ).rejects.toThrow(
      /^options\.bucketcount is not an option \(did you mean options\.bucketCount\?\)/,
    );
    // Known keys inherited are read, as before.
    store = await OffsetStore.open(
      Object.create({ bucketCount: 2 }, { dir: { value: dir, enumerable: true } }) as never,
    );
    expect((await store.stats()).buckets.length).toBe(2);
  });
});
