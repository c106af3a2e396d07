/**
 * Model-based test of OffsetStore: random sequences of commits (single, concurrent, via reset),
 * fetches, deletes, close+reopen and clock advances with retention, run against the real store
 * and against a plain Map model; after every command everything a user can observe must match.
 * Each run ends by replaying a copy of the directory from scratch and comparing again.
 *
 * Replay a failure with PROPERTY_SEED=<seed> PROPERTY_PATH=<path> (both printed on failure).
 * PROPERTY_RUNS / PROPERTY_COMMANDS_MAX scale the search (defaults keep it to a few seconds).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock, type CommittedOffset, type OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import {
  TrackingFileSystem,
  byBucket,
  bucketKey,
  copyStoreDir,
  imageOf,
  ioIdle,
  openStore,
  type StoreImage,
} from '../store/store-fixtures.js';
import { depthRuns } from '../support/test-depth.js';

const RUNS = depthRuns('PROPERTY_RUNS', 8, 30);
const COMMANDS_MAX = Number(process.env.PROPERTY_COMMANDS_MAX ?? 40);
const T0 = 1_700_000_000_000;
const RETENTION_MS = 200;
const BUCKET_COUNT = 3;

/** Two pairs that share an offsets-bucket and one alone (checked below), one id of 255 UTF-8 bytes. */
const GROUPS = ['g0', 'g1', 'grüppe-✓', 'λ'.repeat(127) + 'x', 'g5'];
const MAX = Number.MAX_SAFE_INTEGER;
/** Non-partitioned and partitioned tables, partition null next to partition 0, ids at the safe-integer edge. */
const BUCKETS: { tableId: number; partitionId: number | null; bucketId: number }[] = [
  ...Array.from({ length: 6 }, (_, b) => ({ tableId: 1, partitionId: null, bucketId: b })),
  { tableId: 1, partitionId: 0, bucketId: 0 },
  ...Array.from({ length: 8 }, (_, i) => ({ tableId: 2, partitionId: i % 2, bucketId: i >> 1 })),
  { tableId: MAX, partitionId: null, bucketId: 2 ** 31 - 1 },
  { tableId: MAX, partitionId: MAX, bucketId: 0 },
];

type GroupModel = Map<string, CommittedOffset>;
interface Model {
  groups: Map<string, GroupModel>;
}
interface Real {
  dir: string;
  clock: ManualClock;
  fs: TrackingFileSystem;
  store: OffsetStore;
}

interface Entry {
  key: number;
  offset: number;
  leaderEpoch: number | undefined;
  metadata: string | undefined;
}

function open(real: Pick<Real, 'dir' | 'clock' | 'fs'>): Promise<OffsetStore> {
  return openStore(real.dir, {
    clock: real.clock,
    fs: real.fs,
    bucketCount: BUCKET_COUNT,
    segmentBytesMax: 1024,
    offsetsRetentionMs: RETENTION_MS,
    offsetsRetentionCheckIntervalMs: 1,
  });
}

function modelImage(model: Model, store: OffsetStore): StoreImage {
  const groupIds = [...model.groups.keys()].sort();
  const offsets: Record<string, CommittedOffset[]> = {};
  let liveOffsets = 0;
  for (const groupId of groupIds) {
    offsets[groupId] = [...model.groups.get(groupId)!.values()].sort(byBucket);
    liveOffsets += offsets[groupId]!.length;
  }
  return {
    groups: groupIds.map((groupId) => ({
      groupId,
      state: 'Empty',
      offsetsBucket: store.bucketFor(groupId),
      groupType: 'classic',
      protocolType: '',
    })),
    offsets,
    liveOffsets,
  };
}

async function expectModel(model: Model, real: Real, context: string): Promise<void> {
  expect(await imageOf(real.store, GROUPS), context).toEqual(modelImage(model, real.store));
}

function applyCommit(
  model: Model,
  groupId: string,
  entries: readonly Entry[],
  nowMs: number,
): void {
  let group = model.groups.get(groupId);
  if (group === undefined) model.groups.set(groupId, (group = new Map()));
  for (const e of entries) {
    const b = BUCKETS[e.key]!;
    group.set(bucketKey(b), {
      ...b,
      offset: e.offset,
      leaderEpoch: e.leaderEpoch ?? -1,
      metadata: e.metadata ?? '',
      commitTimestampMs: nowMs,
    });
  }
}

function request(entries: readonly Entry[]) {
  return entries.map((e) => {
    const b = BUCKETS[e.key]!;
    // Non-partitioned buckets alternate between an omitted and an explicit null partitionId.
    const ref =
      b.partitionId === null && e.offset % 2 === 0
        ? { tableId: b.tableId, bucketId: b.bucketId }
        : { ...b };
    return {
      ...ref,
      offset: e.offset,
      ...(e.leaderEpoch === undefined ? {} : { leaderEpoch: e.leaderEpoch }),
      ...(e.metadata === undefined ? {} : { metadata: e.metadata }),
    };
  });
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

class CommitCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly group: number,
    readonly entries: Entry[],
    readonly viaReset: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const groupId = GROUPS[this.group]!;
    if (this.viaReset) await real.store.resetOffsets(groupId, request(this.entries));
    else await real.store.commitOffsets(groupId, request(this.entries));
    applyCommit(model, groupId, this.entries, real.clock.nowMs());
    await expectModel(model, real, this.toString());
  }
  toString = () =>
    `${this.viaReset ? 'reset' : 'commit'}(${this.group}, ${JSON.stringify(this.entries)})`;
}

class ConcurrentCommitsCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly commits: { group: number; entries: Entry[] }[]) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const before = modelImage(model, real.store);
    const inFlight = this.commits.map((c) =>
      real.store.commitOffsets(GROUPS[c.group]!, request(c.entries)),
    );
    // Same tick: every commit is appended but none is durable.
    const probes = this.commits.map((c) => {
      const refs = c.entries.map((e) => BUCKETS[e.key]!);
      return {
        c,
        refs,
        stable: codeOf(real.store.fetchOffsets(GROUPS[c.group]!, refs, { requireStable: true })),
        plain: real.store.fetchOffsets(GROUPS[c.group]!, refs),
      };
    });
    await Promise.all(inFlight);
    for (const { c, refs, stable, plain } of probes) {
      expect(await stable, `${this.toString()}: requireStable fetch racing the commit`).toBe(
        'UNSTABLE_OFFSET_COMMIT',
      );
      const previous = refs.map(
        (b) => before.offsets[GROUPS[c.group]!]?.find((o) => bucketKey(o) === bucketKey(b)) ?? null,
      );
      expect(
        await plain,
        `${this.toString()}: plain fetch racing the commit returns the previous values`,
      ).toEqual(previous);
    }
    for (const c of this.commits)
      applyCommit(model, GROUPS[c.group]!, c.entries, real.clock.nowMs());
    await expectModel(model, real, this.toString());
  }
  toString = () => `concurrent(${JSON.stringify(this.commits)})`;
}

class FetchCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly group: number,
    readonly keys: number[] | undefined,
    readonly requireStable: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const groupId = GROUPS[this.group]!;
    const group = model.groups.get(groupId);
    const options = { requireStable: this.requireStable };
    if (this.keys === undefined) {
      const fetched = (await real.store.fetchOffsets(
        groupId,
        undefined,
        options,
      )) as CommittedOffset[];
      expect([...fetched].sort(byBucket), this.toString()).toEqual(
        [...(group?.values() ?? [])].sort(byBucket),
      );
    } else {
      const refs = this.keys.map((k) => BUCKETS[k]!);
      expect(await real.store.fetchOffsets(groupId, refs, options), this.toString()).toEqual(
        refs.map((b) => group?.get(bucketKey(b)) ?? null),
      );
    }
  }
  toString = () =>
    `fetch(${this.group}, ${JSON.stringify(this.keys)}, stable=${this.requireStable})`;
}

class DeleteOffsetsCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly group: number,
    readonly keys: number[],
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const groupId = GROUPS[this.group]!;
    const group = model.groups.get(groupId);
    const outcome = await codeOf(
      real.store.deleteOffsets(
        groupId,
        this.keys.map((k) => BUCKETS[k]!),
      ),
    );
    expect(outcome, this.toString()).toBe(group === undefined ? 'GROUP_ID_NOT_FOUND' : 'ok');
    if (group !== undefined) {
      for (const k of this.keys) group.delete(bucketKey(BUCKETS[k]!));
      if (group.size === 0) model.groups.delete(groupId);
    }
    await expectModel(model, real, this.toString());
  }
  toString = () => `deleteOffsets(${this.group}, ${JSON.stringify(this.keys)})`;
}

class DeleteGroupCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly group: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const groupId = GROUPS[this.group]!;
    const outcome = await codeOf(real.store.deleteGroup(groupId));
    expect(outcome, this.toString()).toBe(model.groups.has(groupId) ? 'ok' : 'GROUP_ID_NOT_FOUND');
    model.groups.delete(groupId);
    await expectModel(model, real, this.toString());
  }
  toString = () => `deleteGroup(${this.group})`;
}

class InvalidCommitCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly group: number,
    readonly entries: Entry[],
    readonly kind: 'duplicate' | 'unsafe' | 'metadata',
  ) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const offsets = request(this.entries);
    const last = offsets.length - 1;
    if (this.kind === 'duplicate') offsets.push({ ...offsets[0]!, offset: 1 });
    else if (this.kind === 'unsafe') offsets[last] = { ...offsets[last]!, offset: -(2 ** 53) };
    else offsets[last] = { ...offsets[last]!, metadata: 'µ'.repeat(2049) };
    const logBytes = (await real.store.stats()).totals.logBytes;
    const outcome = await codeOf(real.store.commitOffsets(GROUPS[this.group]!, offsets));
    expect(outcome, this.toString()).toBe(
      this.kind === 'metadata' ? 'OFFSET_METADATA_TOO_LARGE' : 'INVALID_REQUEST',
    );
    expect((await real.store.stats()).totals.logBytes, `${this.toString()} wrote nothing`).toBe(
      logBytes,
    );
    await expectModel(model, real, this.toString());
  }
  toString = () => `invalid-${this.kind}(${this.group}, ${JSON.stringify(this.entries)})`;
}

class AdvanceClockCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    // One millisecond at a time, letting each retention check finish, so a check runs at every instant.
    for (let i = 0; i < this.ms; i++) {
      real.clock.advance(1);
      await ioIdle(real.fs);
    }
    const nowMs = real.clock.nowMs();
    for (const [groupId, group] of model.groups) {
      for (const [k, v] of group) if (v.commitTimestampMs + RETENTION_MS <= nowMs) group.delete(k);
      if (group.size === 0) model.groups.delete(groupId);
    }
    await expectModel(model, real, this.toString());
  }
  toString = () => `advance(${this.ms})`;
}

class ReopenCommand implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const before = await imageOf(real.store, GROUPS);
    await real.store.close();
    real.store = await open(real);
    expect(
      await imageOf(real.store, GROUPS),
      'the state after reopen equals the state before close',
    ).toEqual(before);
    await expectModel(model, real, this.toString());
  }
  toString = () => 'reopen';
}

const group = fc.nat(GROUPS.length - 1);
const entry: fc.Arbitrary<Entry> = fc.record(
  {
    key: fc.nat(BUCKETS.length - 1),
    offset: fc.oneof(
      fc.nat(1000),
      fc.constant(MAX),
      fc.constantFrom(-1, -2, Number.MIN_SAFE_INTEGER),
    ),
    leaderEpoch: fc.option(fc.integer({ min: -1, max: 2 ** 31 - 1 }), { nil: undefined }),
    metadata: fc.option(
      fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('ünï✓😀', 'm'.repeat(300))),
      { nil: undefined },
    ),
  },
  { requiredKeys: ['key', 'offset'] },
) as fc.Arbitrary<Entry>;
const entries = fc.uniqueArray(entry, { minLength: 1, maxLength: 12, selector: (e) => e.key });
const keys = fc.uniqueArray(fc.nat(BUCKETS.length - 1), { minLength: 1, maxLength: 8 });

const commands = [
  fc.tuple(group, entries, fc.boolean()).map(([g, e, reset]) => new CommitCommand(g, e, reset)),
  fc.tuple(group, entries).map(([g, e]) => new CommitCommand(g, e, false)),
  fc
    .array(fc.record({ group, entries }), { minLength: 2, maxLength: 5 })
    .map((c) => new ConcurrentCommitsCommand(c)),
  fc
    .tuple(group, fc.option(keys, { nil: undefined }), fc.boolean())
    .map(([g, k, s]) => new FetchCommand(g, k, s)),
  fc.tuple(group, keys).map(([g, k]) => new DeleteOffsetsCommand(g, k)),
  group.map((g) => new DeleteGroupCommand(g)),
  fc
    .tuple(
      group,
      entries,
      fc.constantFrom('duplicate' as const, 'unsafe' as const, 'metadata' as const),
    )
    .map(([g, e, kind]) => new InvalidCommitCommand(g, e, kind)),
  fc
    .oneof(
      fc.integer({ min: 1, max: 40 }),
      fc.integer({ min: RETENTION_MS - 20, max: RETENTION_MS + 20 }),
    )
    .map((ms) => new AdvanceClockCommand(ms)),
  fc.constant(new ReopenCommand()),
];

describe('OffsetStore against a Map model', () => {
  it(
    `matches the model over random command sequences (${RUNS} runs), and a fresh replay of its directory matches too`,
    async () => {
      const seed =
        process.env.PROPERTY_SEED === undefined
          ? Math.floor(Math.random() * 2 ** 31)
          : Number(process.env.PROPERTY_SEED);
      const property = fc.asyncProperty(
        fc.commands(commands, { maxCommands: COMMANDS_MAX, size: 'max' }),
        async (cmds) => {
          const real: Real = {
            dir: tempDir(),
            clock: new ManualClock(T0),
            fs: new TrackingFileSystem(),
            store: undefined as never,
          };
          real.store = await open(real);
          expect(
            new Set(GROUPS.map((g) => real.store.bucketFor(g))).size,
            'the groups cover every offsets-bucket',
          ).toBe(BUCKET_COUNT);
          const model: Model = { groups: new Map() };
          try {
            await fc.asyncModelRun(() => ({ model, real }), cmds);
            await real.store.close();
            // Recovery from scratch: a copy of the directory, opened by a new store.
            const copy = { ...real, dir: tempDir(), fs: new TrackingFileSystem() };
            copyStoreDir(real.dir, copy.dir);
            real.store = await open(copy);
            await expectModel(model, real, 'fresh replay of a copy of the directory');
          } finally {
            await real.store.close();
          }
        },
      );
      const details = await fc.check(property, {
        numRuns: RUNS,
        seed,
        ...(process.env.PROPERTY_PATH === undefined ? {} : { path: process.env.PROPERTY_PATH }),
      });
      if (details.failed) {
        throw new Error(
          `${fc.defaultReportMessage(details)}\nReplay with PROPERTY_SEED=${details.seed} PROPERTY_PATH=${details.counterexamplePath}`,
          { cause: details.errorInstance },
        );
      }
    },
    60_000 + RUNS * COMMANDS_MAX * 100,
  );
});
