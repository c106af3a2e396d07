/**
 * Durability 'os' acknowledges a commit once it reached the OS, so a power loss may take the log's
 * unsynced tail. Whatever the store makes durable beside the log (a checkpoint, the log start a
 * conversion records, the log ends it records at open) must not depend on batches a power loss can
 * still take. These tests play a power loss on the simulated disk (sim-disk.ts) between the two:
 * a checkpoint must never describe batches the log can still lose (once the log has grown again past
 * the checkpoint's log offset, a later open would restore a state that includes the lost batches and
 * skip the log's new ones), and no recorded end or start may lie past what the log holds durably.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { open as lmdbOpen } from 'lmdb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dumpLog, verifyLog } from '../../src/admin/index.js';
import { loadChecksum } from '../../src/codec/index.js';
import { OffsetStore, type OffsetStoreOptions } from '../../src/index.js';
import { forgetCheckpointProcessState } from '../../src/kv/index.js';
import {
  forgetHeldDirectories,
  forgetJournalProcessState,
  forgetLogProcessState,
} from '../../src/log/index.js';
import { encodeManifest, readManifest } from '../../src/log/store-manifest.js';
import { observeExternalWork } from '../../src/util/index.js';
import { SimDisk } from '../../sim/sim-disk.js';
import { NO_FAULTS, SimFileSystem } from '../../sim/sim-file-system.js';
import { SimRandom } from '../../sim/sim-random.js';
import { SimClock, SimScheduler } from '../../sim/sim-scheduler.js';

const roots: string[] = [];
let scheduler = new SimScheduler();
let previousObserver: ReturnType<typeof observeExternalWork> | undefined;
beforeAll(async () => {
  await loadChecksum();
  // LMDB's work (checkpoints) runs outside the simulated disk: the scheduler waits for it.
  previousObserver = observeExternalWork((work) => scheduler.deterministic(work));
});
afterAll(() => observeExternalWork(previousObserver));
afterEach(async () => {
  forgetHeldDirectories();
  forgetLogProcessState();
  forgetJournalProcessState();
  await forgetCheckpointProcessState();
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** Runs the simulation until `promise` settles. */
async function settle<T>(scheduler: SimScheduler, promise: Promise<T>): Promise<T> {
  let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
  promise.then(
    (value) => (outcome = { ok: true, value }),
    (error: unknown) => (outcome = { ok: false, error }),
  );
  await scheduler.quiesce();
  // Work outside the simulated disk (LMDB opened read-only by `log verify`) runs on real time.
  for (let idle = 0; outcome === undefined;)
    if (await scheduler.step()) idle = 0;
    else if (++idle > 1000) throw new Error('the call never settles');
    else await new Promise((resolve) => setTimeout(resolve, 1));
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/** A power loss that keeps nothing that was not made durable (every coin comes up "lost"). */
const NOTHING_KEPT = { chance: () => false, int: (min: number) => min } as unknown as SimRandom;

class Machine {
  readonly scheduler = (scheduler = new SimScheduler());
  readonly disk = new SimDisk();
  readonly dir: string;
  readonly warnings: string[] = [];
  #fs: SimFileSystem | undefined;
  #clock: SimClock | undefined;
  #n = 0;

  constructor() {
    // Checkpoint environments live on the real disk at the same path (sim-file-system.ts).
    const root = mkdtempSync(path.join(tmpdir(), 'offset-store-os-'));
    roots.push(root);
    this.dir = path.join(root, 'store');
    this.disk.mkdirp(root);
    for (let p = root; ; p = path.dirname(p)) {
      this.disk.syncDir(p);
      if (p === '/') break;
    }
  }

  /** A new process opens the store. */
  async open(options: Partial<OffsetStoreOptions> = {}): Promise<OffsetStore> {
    forgetHeldDirectories();
    forgetLogProcessState();
    forgetJournalProcessState();
    await forgetCheckpointProcessState();
    this.#fs = new SimFileSystem(this.disk, this.scheduler, new SimRandom(++this.#n), NO_FAULTS);
    this.#clock = new SimClock(this.scheduler, 1_700_000_000_000);
    return this.run(
      OffsetStore.open({
        dir: this.dir,
        fs: this.#fs,
        clock: this.#clock,
        bucketCount: 1,
        durability: 'os',
        compaction: { background: false },
        onWarning: (message) => this.warnings.push(message),
        ...options,
      }),
    );
  }

  run<T>(promise: Promise<T>): Promise<T> {
    return settle(this.scheduler, promise);
  }

  /** A file-system view for a tool reading the store between processes. */
  view(): SimFileSystem {
    return new SimFileSystem(this.disk, this.scheduler, new SimRandom(0), NO_FAULTS);
  }

  /** The process dies, and the power fails: only what was made durable stays. */
  powerLoss(): void {
    this.#fs!.kill();
    this.#clock!.stop();
    this.disk.powerLoss(NOTHING_KEPT);
  }

  /** The process dies; the page cache keeps what it wrote. */
  crash(): void {
    this.#fs!.kill();
    this.#clock!.stop();
  }
}

const bucket = (bucketId: number) => ({ tableId: 1, bucketId });

async function offsetsOf(machine: Machine, store: OffsetStore): Promise<(number | null)[]> {
  const rows = await machine.run(store.fetchOffsets('g', [0, 1, 2, 3].map(bucket)));
  return rows.map((row) => row?.offset ?? null);
}

/** Process 1 of a test: four commits to group g (offsets 100-103) under `from`, then a conversion to `to`. */
async function commitFourThenConvert(
  machine: Machine,
  from: 'log-cleaner' | 'checkpoint',
  to: 'log-cleaner' | 'checkpoint',
): Promise<OffsetStore> {
  const store = await machine.open({ compaction: { strategy: from, background: false } });
  for (let n = 0; n < 4; n++)
    await machine.run(store.commitOffsets('g', [{ ...bucket(n), offset: 100 + n }]));
  await machine.run(store.convertCompaction(to));
  return store;
}

/**
 * The manifest as an earlier version left it: in 'os' it recorded no log end when a segment began,
 * so bucket 0's recorded end is 0 (this version records 1 once the segment's first batch is durable).
 */
async function asEarlierVersionRecorded(machine: Machine): Promise<void> {
  const manifest = (await machine.run(readManifest(machine.view(), machine.dir)))!;
  manifest.buckets[0]!.logEnd = 0;
  const file = machine.disk.file(`${machine.dir}/store.json`);
  const bytes = encodeManifest(manifest);
  file.truncate(0);
  file.write(bytes, 0);
  file.sync();
}

/** Damage at rest (or what an earlier version's power loss left): bucket 0's only segment is empty. */
function emptyFirstSegment(machine: Machine): void {
  const segment = machine.disk.file(`${machine.dir}/buckets/000/00000000000000000000.log`);
  segment.truncate(0);
  segment.sync();
}

describe("a checkpoint in durability 'os'", () => {
  it('never covers batches a power loss can take from the log, so it never restores lost commits over new ones', async () => {
    const machine = new Machine();

    // Process 1: commits acknowledged from the page cache, then a conversion to checkpoints, which
    // writes the first checkpoint of them.
    let store = await commitFourThenConvert(machine, 'log-cleaner', 'checkpoint');
    machine.powerLoss();

    // Process 2 serves what the power loss left, and commits more than process 1 did.
    store = await machine.open();
    const left = await offsetsOf(machine, store);
    for (let n = 0; n < 6; n++)
      await machine.run(store.commitOffsets('g', [{ ...bucket(n % 2), offset: 200 + n }]));
    const served = await offsetsOf(machine, store);
    expect(served).toEqual([204, 205, left[2], left[3]]);
    machine.crash();

    // Process 3 must serve what process 2 served: its commits were in the page cache.
    store = await machine.open();
    expect(await offsetsOf(machine, store)).toEqual(served);
    await machine.run(store.close());
  });

  it('found past the log end, though the log was durable through it when it was written, is damage: the store refuses to open and keeps it', async () => {
    const machine = new Machine();
    await commitFourThenConvert(machine, 'log-cleaner', 'checkpoint');
    machine.crash();
    // Damage at rest: the segment's durable batches read back as nothing.
    emptyFirstSegment(machine);
    const verified = await machine.run(verifyLog(machine.dir, { fs: machine.view() }));
    expect(verified.problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        reason: expect.stringMatching(
          /checkpoint at log offset 4 lies past the log end 0: the log lost batches that were durable/,
        ),
      }),
      // The manifest says so too: the segment's first batch was durable before it was acknowledged.
      expect.objectContaining({
        kind: 'corrupt',
        reason: expect.stringMatching(
          /the log ends at log offset 0 \(no batch\), but it held batches/,
        ),
      }),
    ]);
    for (const durability of ['os', 'fsync'] as const) {
      await expect(machine.open({ durability })).rejects.toMatchObject({
        code: 'CORRUPT_MESSAGE',
      });
    }
    // The checkpoint, the state's one good copy, is still there for an operator to recover from.
    await forgetCheckpointProcessState();
    const env = lmdbOpen({ path: `${machine.dir}/buckets/000/checkpoint`, encoding: 'binary' });
    try {
      expect(env.get(['m', 4])).toBeDefined();
    } finally {
      await env.close();
    }
  });

  it('found past the log end, written by an earlier version (of batches not yet durable), is discarded, not only ignored', async () => {
    const machine = new Machine();
    let store = await commitFourThenConvert(machine, 'log-cleaner', 'checkpoint');
    machine.crash();
    // What a power loss left of a store an earlier version wrote in 'os': a checkpoint at log
    // offset 4, not marked as written of durable batches, over an empty log.
    await forgetCheckpointProcessState();
    const env = lmdbOpen({ path: `${machine.dir}/buckets/000/checkpoint`, encoding: 'binary' });
    try {
      const meta = JSON.parse(Buffer.from(env.get(['m', 4]) as Uint8Array).toString()) as {
        logDurable?: boolean;
      };
      expect(meta.logDurable).toBe(true);
      delete meta.logDurable;
      await env.put(['m', 4], Buffer.from(JSON.stringify(meta)));
    } finally {
      await env.close();
    }
    emptyFirstSegment(machine);
    await asEarlierVersionRecorded(machine);
    // `log verify` says what the next open will do with it.
    const verified = await machine.run(verifyLog(machine.dir, { fs: machine.view() }));
    expect(verified.problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        reason: expect.stringMatching(
          /checkpoint at log offset 4 lies past the log end 0: written by an earlier version, .*an open in 'os' discards it/,
        ),
      }),
    ]);

    store = await machine.open();
    expect(machine.warnings.join('\n')).toMatch(
      /discarded the checkpoint at log offset 4: past the log end 0/,
    );
    expect(await offsetsOf(machine, store)).toEqual([null, null, null, null]);
    for (let n = 0; n < 6; n++)
      await machine.run(store.commitOffsets('g', [{ ...bucket(n % 2), offset: 200 + n }]));
    expect(await offsetsOf(machine, store)).toEqual([204, 205, null, null]);
    machine.crash();

    // The log has grown past log offset 4: the old checkpoint must not come back.
    store = await machine.open();
    expect(await offsetsOf(machine, store)).toEqual([204, 205, null, null]);
    await machine.run(store.close());
  });

  it('is converted away from only once the image that replaces it is durable in the log', async () => {
    const machine = new Machine();
    // The conversion writes the state into the log as an image, records the log's new start, and
    // drops the checkpoints: the image must be durable before the start moves onto it.
    let store = await commitFourThenConvert(machine, 'checkpoint', 'log-cleaner');
    machine.powerLoss();

    store = await machine.open();
    expect(await offsetsOf(machine, store)).toEqual([100, 101, 102, 103]);
    await machine.run(store.commitOffsets('g', [{ ...bucket(0), offset: 200 }]));
    machine.crash();
    store = await machine.open();
    expect(await offsetsOf(machine, store)).toEqual([200, 101, 102, 103]);
    await machine.run(store.close());
  });

  it('a log start recorded past the end of the log (its image lost) is reported as damage, not served as empty', async () => {
    const machine = new Machine();
    await commitFourThenConvert(machine, 'checkpoint', 'log-cleaner');
    machine.crash();
    // What a power loss left of a store converted before the image was made durable first.
    emptyFirstSegment(machine);
    await asEarlierVersionRecorded(machine);
    const verified = await machine.run(verifyLog(machine.dir, { fs: machine.view() }));
    expect(verified.ok).toBe(false);
    expect(verified.problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        reason: expect.stringMatching(/the log ends at log offset 0, below the log start 4/),
      }),
    ]);
    for (const durability of ['os', 'fsync'] as const) {
      await expect(machine.open({ durability })).rejects.toMatchObject({
        code: 'CORRUPT_MESSAGE',
        message: expect.stringMatching(/log start/),
      });
    }
  });
});

describe("the log ends an open in durability 'os' records", () => {
  it('are where each log was durable, so a power loss that takes what was acknowledged since leaves a store that opens', async () => {
    const machine = new Machine();
    let store = await machine.open({ bucketCount: 2, segmentBytesMax: 4096 });
    const inBucket = (b: number) => {
      for (let i = 0; ; i++) if (store.bucketFor(`g${i}`) === b) return `g${i}`;
    };
    const [quick, slow] = [inBucket(0), inBucket(1)];
    // Bucket 1's long log keeps it recovering while bucket 0 serves.
    for (let n = 0; n < 400; n++)
      await machine.run(store.commitOffsets(slow, [{ ...bucket(n % 50), offset: n }]));
    await machine.run(store.close());

    store = await machine.open({ bucketCount: 2, awaitRecovery: false });
    for (let acknowledged = false; !acknowledged;) {
      try {
        await machine.run(store.commitOffsets(quick, [{ ...bucket(0), offset: 7 }]));
        acknowledged = true;
      } catch (error) {
        if ((error as { code?: string }).code !== 'COORDINATOR_LOAD_IN_PROGRESS') throw error;
        await machine.scheduler.step();
      }
    }
    // Every bucket has recovered, and the store has recorded where each log ends.
    await machine.run(store.ready());
    await machine.scheduler.quiesce();
    for (let n = 0; n < 200 && (await machine.scheduler.step()); n++);
    machine.powerLoss();

    // The commit to bucket 0 was in the page cache only: it may be gone, nothing else.
    store = await machine.open({ bucketCount: 2 });
    const rows = await machine.run(store.fetchOffsets(slow, [bucket(49)]));
    expect(rows[0]?.offset).toBe(399);
    expect([7, undefined]).toContain(
      (await machine.run(store.fetchOffsets(quick, [bucket(0)])))[0]?.offset,
    );
    await machine.run(store.close());
  });
});

describe('the log tools, through a FileSystem port other than the real one', () => {
  it('dump a store on the simulated disk (a bucket folder was taken for a file there)', async () => {
    const machine = new Machine();
    const store = await machine.open();
    await machine.run(store.commitOffsets('g', [{ ...bucket(2), offset: 42 }]));
    machine.crash();
    const offsets: number[] = [];
    await machine.run(
      dumpLog(machine.dir, 0, { fs: machine.view(), records: true }, (entry) => {
        if (entry.kind === 'record' && entry.groupId === 'g' && !entry.tombstone)
          offsets.push(entry.offset!);
      }),
    );
    expect(offsets).toEqual([42]);
  });
});
