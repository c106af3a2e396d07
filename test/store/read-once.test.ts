/**
 * Every field of a caller's object is read once at the public edge, and only that copy is checked
 * and used. A caller whose getters (or proxies, or a later mutation) answer differently on a second
 * read used to get values past validation: commits acknowledged with `offset -1`, `2^60`,
 * `bucketId 2^31+5` or `tableId -5`, which the store then refused at reopen.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore, SystemClock, type HeartbeatRequest } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { openStore } from './store-fixtures.js';

type Fields = Record<string, readonly [first: unknown, later: unknown]>;

/**
 * An object whose fields are enumerable getters counting their reads: the first `trustedReads`
 * reads of a field answer `first`, every later read answers `later`.
 */
function shifting(
  fields: Fields,
  trustedReads = 1,
): { object: Record<string, unknown>; reads: Record<string, number> } {
  const object: Record<string, unknown> = {};
  const reads: Record<string, number> = {};
  for (const [name, [first, later]] of Object.entries(fields)) {
    reads[name] = 0;
    Object.defineProperty(object, name, {
      enumerable: true,
      get: () => (reads[name]!++ < trustedReads ? first : later),
    });
  }
  return { object, reads };
}

/** `reads` with every field read exactly once. */
function once(fields: Fields): Record<string, number> {
  return Object.fromEntries(Object.keys(fields).map((name) => [name, 1]));
}

/** An array proxy over `values` counting element reads; element reads after the first answer `later`. */
function shiftingArray(
  values: readonly number[],
  later: number,
): { array: number[]; reads: () => number } {
  let reads = 0;
  const array = new Proxy([...values], {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key))
        return reads++ < values.length ? Reflect.get(target, key, receiver) : later;
      return Reflect.get(target, key, receiver);
    },
  });
  return { array, reads: () => reads };
}

describe('offset commits', () => {
  it('reads each field of each offset once and stores exactly the values it validated', async () => {
    const store = await openStore(tempDir());
    const first: Fields = {
      tableId: [1, -5],
      partitionId: [2, -1],
      bucketId: [3, 2 ** 31 + 5],
      offset: [10, -1],
      leaderEpoch: [4, -9],
      metadata: ['m', 7],
    };
    const second: Fields = { tableId: [1, 2 ** 60], bucketId: [4, -1], offset: [11, 2 ** 60] };
    const a = shifting(first);
    const b = shifting(second);
    await store.commitOffsets('g', [a.object, b.object] as never);
    expect(a.reads).toEqual(once(first));
    expect(b.reads).toEqual(once(second));
    expect(
      await store.fetchOffsets('g', [
        { tableId: 1, partitionId: 2, bucketId: 3 },
        { tableId: 1, bucketId: 4 },
      ]),
    ).toMatchObject([
      { tableId: 1, partitionId: 2, bucketId: 3, offset: 10, leaderEpoch: 4, metadata: 'm' },
      { tableId: 1, partitionId: null, bucketId: 4, offset: 11, leaderEpoch: -1, metadata: '' },
    ]);
    await store.close();
  });

  it('can no longer be made to acknowledge values the store refuses at reopen (tableId -5, bucketId 2^31+5, offset -1, offset 2^60)', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    // Each getter answers the valid value as often as the old validation read it, then the bad one.
    const cases: [string, Fields, number][] = [
      ['tableId -5', { tableId: [1, -5], bucketId: [0, 0], offset: [10, 10] }, 1],
      ['bucketId 2^31+5', { tableId: [1, 1], bucketId: [0, 2 ** 31 + 5], offset: [10, 10] }, 1],
      ['offset -1', { tableId: [1, 1], bucketId: [0, 0], offset: [10, -1] }, 3],
      ['offset 2^60', { tableId: [1, 1], bucketId: [0, 0], offset: [10, 2 ** 60] }, 3],
    ];
    for (const [name, fields, trustedReads] of cases) {
      const { object } = shifting(fields, trustedReads);
      await store.commitOffsets(name, [object] as never);
    }
    await store.close();
    const reopened = await openStore(dir);
    for (const [name] of cases) {
      expect(await reopened.fetchOffsets(name), name).toMatchObject([
        { tableId: 1, bucketId: 0, offset: 10 },
      ]);
    }
    await reopened.close();
  });

  it('stores -0 as the 0 it is, served the same before and after a reopen', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    await store.commitOffsets('g', [
      { tableId: -0, partitionId: -0, bucketId: -0, offset: -0, leaderEpoch: -0 },
    ]);
    const fields = (row: object | null | undefined) =>
      Object.entries(row ?? {}).filter(([, v]) => Object.is(v, -0));
    const live = await store.fetchOffsets('g', [{ tableId: 0, partitionId: 0, bucketId: 0 }]);
    expect(live).toMatchObject([{ tableId: 0, partitionId: 0, bucketId: 0, offset: 0 }]);
    expect(fields(live[0]), 'fields read back as -0').toEqual([]);
    const fetched = await store.fetchOffsets('g', [{ tableId: -0, partitionId: -0, bucketId: -0 }]);
    expect(fields(fetched[0]), 'fields read back as -0').toEqual([]);
    await store.close();
    const reopened = await openStore(dir);
    expect(await reopened.fetchOffsets('g')).toEqual(live);
    await reopened.close();
  });

  it('reads the commit options once', async () => {
    const store = await openStore(tempDir());
    store.setTableLayout(1, { bucketCount: 1 });
    const joined = await store.heartbeat('g', {
      memberEpoch: 0,
      memberId: 'm',
      subscribedTableIds: [1],
    });
    const stable = await store.heartbeat('g', {
      memberEpoch: joined.memberEpoch,
      memberId: 'm',
      ownedBuckets: joined.assignment!,
    });
    const fields: Fields = {
      memberId: ['m', 'other'],
      memberEpoch: [stable.memberEpoch, stable.memberEpoch + 7],
    };
    const { object, reads } = shifting(fields);
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 5 }], object as never);
    expect(reads).toEqual(once(fields));
    await store.close();
  });

  it('finds a repeated bucket even when a getter validates another request meanwhile, and refuses none that does not repeat', async () => {
    const store = await openStore(tempDir());
    // Out of order from the second element on, so duplicates are looked for in a set; the third
    // element's getter validates two buckets of another request while the set is in use.
    const reentering = (buckets: { tableId: number; bucketId: number }[]) => ({
      tableId: 3,
      bucketId: 0,
      get offset() {
        store.deleteOffsets('other', buckets).catch(() => {});
        return 30;
      },
    });
    await expect(
      store.commitOffsets('g', [
        { tableId: 2, bucketId: 0, offset: 20 },
        { tableId: 1, bucketId: 0, offset: 10 },
        reentering([
          { tableId: 9, bucketId: 9 },
          { tableId: 9, bucketId: 8 },
        ]),
        { tableId: 2, bucketId: 0, offset: 999 },
      ]),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringMatching(/offsets\[3\] repeats bucket/),
    });
    expect(await store.fetchOffsets('g')).toEqual([]);
    await store.commitOffsets('g', [
      { tableId: 2, bucketId: 0, offset: 20 },
      { tableId: 1, bucketId: 0, offset: 10 },
      reentering([
        { tableId: 5, bucketId: 5 },
        { tableId: 4, bucketId: 4 },
      ]),
      { tableId: 5, bucketId: 5, offset: 1 },
    ]);
    expect((await store.fetchOffsets('g')).length).toBe(4);
    await store.close();
  });
});

describe('bucket references', () => {
  it('reads each field of a fetched bucket once, on the uncached, cached and requireStable paths', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 100 }]);
    const fields: Fields = { tableId: [1, -5], partitionId: [null, 3], bucketId: [0, 2 ** 31 + 5] };
    for (const options of [undefined, undefined, { requireStable: true }]) {
      const { object, reads } = shifting(fields);
      expect(await store.fetchOffsets('g', [object] as never, options)).toMatchObject([
        { tableId: 1, partitionId: null, bucketId: 0, offset: 100 },
      ]);
      expect(reads).toEqual(once(fields));
    }
    await store.close();
  });

  it('reads each field of a deleted bucket once and deletes the bucket it validated', async () => {
    const store = await openStore(tempDir());
    await store.commitOffsets('g', [
      { tableId: 1, bucketId: 0, offset: 100 },
      { tableId: 1, partitionId: 3, bucketId: 0, offset: 7 },
    ]);
    const fields: Fields = { tableId: [1, 1], partitionId: [null, 3], bucketId: [0, 0] };
    const { object, reads } = shifting(fields);
    await store.deleteOffsets('g', [object] as never);
    expect(reads).toEqual(once(fields));
    expect(await store.fetchOffsets('g')).toMatchObject([
      { tableId: 1, partitionId: 3, bucketId: 0, offset: 7 },
    ]);
    await store.close();
  });
});

describe('group membership', () => {
  it('reads each field of a heartbeat request once, owned buckets included, and the member is what was validated', async () => {
    const store = await openStore(tempDir());
    store.setTableLayout(1, { bucketCount: 2 });
    const fields: Fields = {
      memberEpoch: [0, 3],
      memberId: ['m1', 'm2'],
      instanceId: ['i1', 'i2'],
      subscribedTableIds: [[1], [-7]],
      assignor: ['range', 'nope'],
      sessionTimeoutMs: [6000, 0],
      rebalanceTimeoutMs: [7000, -1],
    };
    const request = shifting(fields);
    const joined = await store.heartbeat('g', request.object as never);
    expect(request.reads).toEqual(once(fields));
    const owned = joined.assignment!.map((ref) => {
      const bucket = shifting({
        tableId: [ref.tableId, -1],
        partitionId: [ref.partitionId, 9],
        bucketId: [ref.bucketId, 2 ** 31],
      });
      return { ...bucket, object: Object.freeze(bucket.object) };
    });
    // Frozen does not mean the values are fixed: a frozen object's getters still run on each read.
    await store.heartbeat('g', {
      memberEpoch: joined.memberEpoch,
      memberId: 'm1',
      ownedBuckets: owned.map((o) => o.object) as never,
    });
    for (const o of owned) expect(o.reads).toEqual({ tableId: 1, partitionId: 1, bucketId: 1 });
    expect((await store.describeGroup('g')).members).toMatchObject([
      {
        memberId: 'm1',
        instanceId: 'i1',
        subscribedTableIds: [1],
        sessionTimeoutMs: 6000,
        rebalanceTimeoutMs: 7000,
        assignment: joined.assignment,
      },
    ]);
    await store.close();
  });

  it('a fetch as a member reads memberId and memberEpoch once, and removeMembers each id once', async () => {
    const store = await openStore(tempDir());
    store.setTableLayout(1, { bucketCount: 2 });
    const joined = await store.heartbeat('cg', {
      memberId: 'm1',
      memberEpoch: 0,
      subscribedTableIds: [1],
    });
    const { object: member, reads } = shifting({
      memberId: ['m1', { not: 'a string' }],
      memberEpoch: [joined.memberEpoch, 'one'],
    });
    await store.fetchOffsets('cg', [{ tableId: 1, bucketId: 0 }], { member } as never);
    expect(reads).toEqual({ memberId: 1, memberEpoch: 1 });
    let idReads = 0;
    const memberIds: string[] = [];
    Object.defineProperty(memberIds, 0, {
      enumerable: true,
      get: () => (idReads++ === 0 ? 'm1' : 'x'.repeat(300)),
    });
    expect(await store.removeMembers('cg', { memberIds })).toEqual([
      { memberId: 'm1', instanceId: null },
    ]);
    expect(idReads).toBe(1);
    await store.close();
  });

  it('classic protocol bytes are checked and copied from the array itself, whatever its valueOf or length says', async () => {
    const dir = tempDir();
    const store = await openStore(dir, {
      clock: new SystemClock(),
      group: { initialRebalanceDelayMs: 0 },
    });
    const big = Buffer.alloc(3 * 1024 * 1024, 0x41);
    const viaValueOf = Object.assign(new Uint8Array([1, 2, 3]), { valueOf: () => big });
    const joined = await store.classic.joinGroup('kg', {
      protocolType: 'consumer',
      protocols: [{ name: 'p', metadata: viaValueOf }],
      sessionTimeoutMs: 30_000,
    });
    expect(joined.outcome).toBe('joined');
    const lying = new Uint8Array(2 * 1024 * 1024);
    Object.defineProperty(lying, 'length', { value: 3 });
    Object.defineProperty(lying, 'byteLength', { value: 3 });
    await expect(
      store.classic.joinGroup('kg2', {
        protocolType: 'consumer',
        protocols: [{ name: 'p', metadata: lying }],
        sessionTimeoutMs: 30_000,
      }),
    ).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('2097152 bytes'),
    });
    if (joined.outcome !== 'joined') throw new Error('not joined');
    await store.classic.syncGroup('kg', {
      memberId: joined.memberId,
      generationId: joined.generationId,
      assignments: [{ memberId: joined.memberId, assignment: viaValueOf }],
    });
    const described = await store.describeGroup('kg');
    expect([...described!.classic!.members[0]!.metadata]).toEqual([1, 2, 3]);
    expect([...described!.classic!.members[0]!.assignment]).toEqual([1, 2, 3]);
    await store.close();
  });

  it('copies subscribedTableIds once: an array that answers differently on a second pass cannot put a table id the snapshot refuses on disk', async () => {
    const dir = tempDir();
    const store = await openStore(dir);
    store.setTableLayout(1, { bucketCount: 2 });
    const tables = shiftingArray([1], -7);
    await store.heartbeat('g', { memberEpoch: 0, memberId: 'm', subscribedTableIds: tables.array });
    expect(tables.reads()).toBe(1);
    await store.close();
    const reopened = await openStore(dir);
    expect((await reopened.describeGroup('g')).members).toMatchObject([
      { memberId: 'm', subscribedTableIds: [1] },
    ]);
    await reopened.close();
  });

  it('joinGroup copies the member options once: changing them afterwards does not change what the member sends', async () => {
    const clock = new ManualClock();
    const store = await openStore(tempDir(), { clock, durability: 'os' });
    store.setTableLayout(1, { bucketCount: 2 });
    const sent: HeartbeatRequest[] = [];
    const heartbeat = store.heartbeat.bind(store);
    store.heartbeat = (groupId, request) => {
      sent.push(structuredClone(request));
      return heartbeat(groupId, request);
    };
    const tables = [1];
    const errors: unknown[] = [];
    const member = await store.joinGroup('g', {
      subscribedTableIds: tables,
      instanceId: 'i1',
      onError: (error) => errors.push(error),
    });
    tables.push(-3);
    while (sent.length < 4) {
      clock.advance(5000);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await member.leave();
    await store.close();
    expect(errors).toEqual([]);
    expect(
      sent.filter((r) => r.subscribedTableIds !== undefined).map((r) => r.subscribedTableIds),
    ).toEqual(sent.slice(0, -1).map(() => [1]));
  });

  it('setTableLayout reads the layout once and gives every offsets-bucket the same one', async () => {
    const store = await openStore(tempDir());
    const fields: Fields = { bucketCount: [3, 8], partitionIds: [undefined, [1, 2]] };
    const { object, reads } = shifting(fields);
    store.setTableLayout(1, object as never);
    expect(reads).toEqual(once(fields));
    const joined = await store.heartbeat('g', {
      memberEpoch: 0,
      memberId: 'm',
      subscribedTableIds: [1],
    });
    expect(joined.assignment).toEqual(
      [0, 1, 2].map((bucketId) => ({ tableId: 1, partitionId: null, bucketId })),
    );
    await store.close();
  });
});

describe('options', () => {
  it('OffsetStore.open reads each option once', async () => {
    const fields: Fields = {
      dir: [tempDir(), ''],
      bucketCount: [2, -1],
      durability: ['os', 'never'],
      segmentBytesMax: [4096, 1],
      offsetsRetentionMs: [60_000, 0],
      offsetsRetentionCheckIntervalMs: [1000, 0],
      commitRecordCountMax: [10, 0],
      pendingCommitsMax: [100, 0],
      awaitRecovery: [true, false],
      compaction: [{ strategy: 'none' }, { strategy: 'bogus' }],
    };
    const { object, reads } = shifting(fields);
    const groupFields: Fields = {
      sessionTimeoutMs: [20_000, undefined],
      groupMembersMax: [5, 'x'],
    };
    const group = shifting(groupFields);
    Object.defineProperty(object, 'group', { enumerable: true, value: group.object });
    const store = await OffsetStore.open(object as never);
    expect(reads).toEqual(once(fields));
    expect(group.reads).toEqual(once(groupFields));
    expect(store.bucketCount).toBe(2);
    await store.close();
  });

  it('a scanner reads its options once', async () => {
    const store = await openStore(tempDir());
    const fields: Fields = {
      autoCommitIntervalMs: [1000, Number.NaN],
      onMissing: ['earliest', 'error'],
      onAutoCommitError: [() => {}, 42],
    };
    const { object, reads } = shifting(fields);
    const scanner = store.scanner('g', object as never);
    await scanner.assign([{ tableId: 1, bucketId: 0 }]);
    await scanner.close();
    expect(reads).toEqual(once(fields));
    await store.close();
  });
});

describe('what the store hands out and takes as paths', () => {
  it("recovery reports are copies: a caller's change does not reach the next call", async () => {
    const store = await openStore(tempDir());
    const first = store.recoveryReports();
    const report = first[0] as unknown as Record<string, unknown>;
    for (const key of Object.keys(report)) if (typeof report[key] === 'number') report[key] = -1;
    expect(store.recoveryReports()).not.toEqual(first);
    await store.close();
  });

  it('a backup path with a lone surrogate is refused: the directory made would have another name', async () => {
    const store = await openStore(tempDir());
    await expect(store.backup(`${tempDir()}/b\ud800`)).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('a path with a lone surrogate'),
    });
    await store.close();
  });
});
