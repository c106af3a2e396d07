/**
 * A failed fdatasync on Linux marks the pages it could not write clean: reads keep returning their
 * bytes, nothing writes them again, and no later fdatasync of the same descriptor reports them (each
 * other descriptor of the file reports the error once: Linux's errseq). A process that dies between
 * such an error and cutting its round back leaves the round to the next open, which reads it from
 * the page cache like any durable batch. These tests play that on the simulated disk (sim-disk.ts):
 * the next process must make the round durable before it builds on it, or a power loss later takes
 * the round and, behind the hole, every batch acknowledged after it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadChecksum, sealBatch } from '../../src/codec/index.js';
import type { FileHandle, FileSystem } from '../../src/io/index.js';
import { OffsetStore } from '../../src/index.js';
import { Log, type LogOptions } from '../../src/log/index.js';
import { SimDisk, type SimFile } from '../../sim/sim-disk.js';
import { NO_FAULTS, SimFileSystem } from '../../sim/sim-file-system.js';
import { SimRandom } from '../../sim/sim-random.js';
import { SimScheduler } from '../../sim/sim-scheduler.js';
import { logOptions, testBatch } from '../support/log-fixtures.js';

const DIR = '/log';
const SEGMENT = `${DIR}/00000000000000000000.log`;

beforeAll(() => loadChecksum());

/** Runs the simulation until `promise` settles. */
async function settle<T>(scheduler: SimScheduler, promise: Promise<T>): Promise<T> {
  let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
  promise.then(
    (value) => (outcome = { ok: true, value }),
    (error: unknown) => (outcome = { ok: false, error }),
  );
  await scheduler.quiesce();
  while (outcome === undefined)
    if (!(await scheduler.step())) throw new Error('the call never settles');
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/** A process: a file-system view over the disk, as a new process after a crash has. */
function process(disk: SimDisk, scheduler: SimScheduler, n: number): LogOptions {
  return logOptions(DIR, {
    fs: new SimFileSystem(disk, scheduler, new SimRandom(n), NO_FAULTS) as FileSystem,
    segmentBytesMax: 1 << 20,
  });
}

/** A new disk holding the store's folder, and process 1's log opened on it. */
async function newDiskWithLog() {
  const scheduler = new SimScheduler();
  const disk = new SimDisk();
  disk.mkdirp(DIR);
  disk.syncDir('/');
  const { log } = await settle(scheduler, Log.open(process(disk, scheduler, 1)));
  return { scheduler, disk, log };
}

/** Every batch's log offset in a log opened by a new process. */
async function offsetsAfterOpen(options: LogOptions, scheduler: SimScheduler): Promise<number[]> {
  const offsets: number[] = [];
  const { log } = await settle(
    scheduler,
    Log.open(options, { fromLogOffset: 0, visit: (_b, _p, logOffset) => offsets.push(logOffset) }),
  );
  await settle(scheduler, log.close());
  return offsets;
}

/** What a test may do with a file the simulated file system opened (its SimHandle). */
interface SimulatedHandle {
  failedDatasync(random: SimRandom): NodeJS.ErrnoException;
}

/** A random stream that chooses nothing: no sector of a failed fdatasync reaches the device. */
const NOTHING = { chance: () => false } as unknown as SimRandom;

/**
 * Process 1 on a new disk: three acknowledged batches, then a round (batches 3 and 4) whose
 * fdatasync fails. The process dies at the error: the round's pages stay in the page cache, marked
 * clean, on the device nowhere.
 */
async function failedRoundLeft() {
  const { scheduler, disk, log } = await newDiskWithLog();
  for (let n = 0; n < 3; n++) expect(await settle(scheduler, log.append(testBatch(n)))).toBe(n);
  const segment: SimFile = disk.file(SEGMENT);
  let end = 0;
  for (let n = 0; n < 3; n++) end += testBatch(n).length;
  const round = [3, 4].map((n, i) => {
    const batch = testBatch(n);
    sealBatch(batch, n, 0, i);
    return batch;
  });
  segment.write(Buffer.concat(round), end);
  segment.failedSync(NOTHING);
  segment.writebackErrorSeen = true; // reported to the process, by the fdatasync that failed
  expect(segment.dirty.size).toBe(0);
  return { scheduler, disk, segment, round };
}

describe('a round whose fdatasync failed, left in the page cache by a process that died', () => {
  it('is made durable by the next open, so a later power loss keeps it and everything after it', async () => {
    const { scheduler, disk, round } = await failedRoundLeft();

    // Process 2 opens (the page cache serves the round), acknowledges one more batch, and the
    // power fails.
    const second = process(disk, scheduler, 2);
    const opened = await settle(scheduler, Log.open(second));
    expect(opened.log.nextOffset).toBe(5);
    expect(opened.report.bytesRewritten).toBe(round[0]!.length + round[1]!.length);
    expect(await settle(scheduler, opened.log.append(testBatch(5)))).toBe(5);
    disk.powerLoss(new SimRandom(7));

    // Process 3: every batch the log served and acknowledged is there.
    expect(await offsetsAfterOpen(process(disk, scheduler, 3), scheduler)).toEqual([
      0, 1, 2, 3, 4, 5,
    ]);
  });

  it("is not written back as the device's bytes when the page cache drops it between recovery's read and its rewrite", async () => {
    const { scheduler, disk, segment } = await failedRoundLeft();
    // Process 2 reads the round from the page cache and checks it; memory pressure then drops
    // those clean pages, just before the rewrite reads the segment again: it reads the device's
    // zeros where the round was.
    const second = process(disk, scheduler, 2);
    const inner = second.fs;
    const open: FileSystem['open'] = (path, flags, mode) => {
      if (path === SEGMENT && flags === 'r+') segment.evictClean();
      return inner.open(path, flags, mode);
    };
    const evictingFs = new Proxy(inner, {
      get: (target, key) => {
        if (key === 'open') return open;
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
    const before = Buffer.from(segment.durable.subarray(0, segment.durableSizeBytes));
    await expect(settle(scheduler, Log.open({ ...second, fs: evictingFs }))).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(
        /the batch at byte \d+, which recovery had read whole, reads back .* before recovery wrote it again: the page cache dropped bytes/,
      ),
    });
    // Nothing was written: the round's zeros were not made durable in its place.
    expect(segment.dirty.size).toBe(0);
    expect(segment.durable.subarray(0, segment.durableSizeBytes).equals(before)).toBe(true);

    // The next open reads the round as the device has it: a torn round, never acknowledged.
    expect(await offsetsAfterOpen(process(disk, scheduler, 3), scheduler)).toEqual([0, 1, 2]);
  });

  it('is not written again where the store knew the log durable (its clean close recorded the end)', async () => {
    const { scheduler, disk, log } = await newDiskWithLog();
    for (let n = 0; n < 4; n++) expect(await settle(scheduler, log.append(testBatch(n)))).toBe(n);
    await settle(scheduler, log.close());
    // The last round may be in the page cache only unless the store knew better.
    const crashed = await settle(scheduler, Log.open(process(disk, scheduler, 2)));
    expect(crashed.report.bytesRewritten).toBe(testBatch(3).length);
    await settle(scheduler, crashed.log.close());
    const reopened = await settle(
      scheduler,
      Log.open(process(disk, scheduler, 3), {
        fromLogOffset: 0,
        knownEnd: { logOffset: 4, exact: true },
      }),
    );
    expect(reopened.report.bytesRewritten).toBeUndefined();
    await settle(scheduler, reopened.log.close());
  });
});

/**
 * A file system over the disk whose next fdatasync of a segment, once `failNext` is set, fails with
 * EIO and leaves the file as Linux does (its dirty pages clean, none of them on the device).
 */
function failingOnce(inner: FileSystem, disk: SimDisk): FileSystem & { failNext: boolean } {
  const control = { failNext: false };
  /** `target` with `overrides` in place of some of its members, its methods bound to it. */
  const over = <T extends object>(target: T, overrides: Record<string, unknown>): T =>
    new Proxy(target, {
      get(t, key) {
        if (typeof key === 'string' && key in overrides) return overrides[key];
        const value = Reflect.get(t, key) as unknown;
        return typeof value === 'function' ? (value as () => unknown).bind(t) : value;
      },
      set(_t, key, value) {
        if (key !== 'failNext') return false;
        control.failNext = value as boolean;
        return true;
      },
    });
  return over(inner as FileSystem & { failNext: boolean }, {
    get failNext() {
      return control.failNext;
    },
    open: async (...args: Parameters<FileSystem['open']>): Promise<FileHandle> => {
      const handle = await inner.open(...args);
      const path = args[0];
      return over(handle, {
        datasyncNow: undefined,
        datasync: async () => {
          if (!control.failNext || !path.endsWith('.log')) return handle.datasync();
          control.failNext = false;
          throw (handle as unknown as SimulatedHandle).failedDatasync(NOTHING);
        },
      });
    },
  });
}

describe("in durability 'os', a failed fdatasync in a process that goes on and closes", () => {
  it('leaves the batches it did not make durable to be written again by the next open', async () => {
    const scheduler = new SimScheduler();
    const disk = new SimDisk();
    disk.mkdirp('/store');
    disk.syncDir('/');
    const warnings: string[] = [];
    const open = (n: number) => {
      const fs = failingOnce(
        new SimFileSystem(disk, scheduler, new SimRandom(n), NO_FAULTS) as FileSystem,
        disk,
      );
      return {
        fs,
        store: settle(
          scheduler,
          OffsetStore.open({
            dir: '/store',
            fs,
            bucketCount: 1,
            durability: 'os',
            segmentBytesMax: 4096,
            compaction: { intervalMs: 3_600_000 },
            onWarning: (message) => warnings.push(message),
          }),
        ),
      };
    };
    const metadata = 'm'.repeat(400);
    const commit = (store: OffsetStore, groupId: string, offset: number) =>
      settle(
        scheduler,
        store.commitOffsets(groupId, [{ tableId: 1, bucketId: 0, offset, metadata }]),
      );

    // Process 1 fills sealed segments (something to compact) and acknowledges five commits in the
    // active one ('os': once written); then the fdatasync a compaction makes first fails, and the
    // process closes the store.
    const first = open(1);
    let store = await first.store;
    for (let n = 0; n < 30; n++) await commit(store, 'old', n);
    for (let n = 0; n < 5; n++) await commit(store, `g${n}`, 100 + n);
    first.fs.failNext = true;
    await expect(settle(scheduler, store.compact())).rejects.toThrow(/EIO: fdatasync/);
    expect(first.fs.failNext).toBe(false);
    expect(warnings).toEqual([expect.stringMatching(/^compaction of offsets-bucket 0 failed/)]);
    await settle(scheduler, store.close()).catch(() => {});

    // Process 2 serves them and commits more; its close fdatasyncs (and succeeds). Power fails.
    store = await open(2).store;
    expect(store.recoveryReports()[0]?.bytesRewritten).toBeGreaterThan(0);
    await commit(store, 'k', 7);
    await settle(scheduler, store.close());
    disk.powerLoss(new SimRandom(7));

    // Process 3: everything the second process served and acknowledged is there.
    store = await open(3).store;
    for (let n = 0; n < 5; n++)
      expect(await settle(scheduler, store.fetchOffsets(`g${n}`))).toEqual([
        expect.objectContaining({ offset: 100 + n }),
      ]);
    await settle(scheduler, store.close());
  });
});

describe('the simulated file system reports a writeback error as Linux does (errseq)', () => {
  /** Settles `promise` on the scheduler: its error code, or 'ok'. */
  async function outcome(scheduler: SimScheduler, promise: Promise<unknown>): Promise<string> {
    return settle(scheduler, promise).then(
      () => 'ok',
      (error: NodeJS.ErrnoException) => error.code ?? String(error),
    );
  }

  /** A new disk holding the log's folder, and its scheduler. */
  function emptyDisk(): { scheduler: SimScheduler; disk: SimDisk } {
    const scheduler = new SimScheduler();
    const disk = new SimDisk();
    disk.mkdirp(DIR);
    disk.syncDir('/');
    return { scheduler, disk };
  }

  it('once to each descriptor, whichever one ran into it, and to a descriptor opened before anyone reported it', async () => {
    const { scheduler, disk } = emptyDisk();
    const fs = new SimFileSystem(disk, scheduler, new SimRandom(1), NO_FAULTS);
    const a = await settle(scheduler, fs.open(SEGMENT, 'wx'));
    const b = await settle(scheduler, fs.open(SEGMENT, 'r+'));
    await settle(scheduler, a.writev([Buffer.alloc(4096, 1)], 0));
    // The kernel's writeback of those pages fails (as during the fdatasync of a third descriptor).
    disk.file(SEGMENT).failedSync(new SimRandom(2));
    const c = await settle(scheduler, fs.open(SEGMENT, 'r+'));
    expect(await outcome(scheduler, a.datasync())).toBe('EIO');
    expect(await outcome(scheduler, a.datasync()), 'reported once per descriptor').toBe('ok');
    expect(await outcome(scheduler, b.datasync()), 'another descriptor reports it too').toBe('EIO');
    expect(await outcome(scheduler, c.datasync()), 'opened before it was reported').toBe('EIO');
    const d = await settle(scheduler, fs.open(SEGMENT, 'r+'));
    expect(await outcome(scheduler, d.datasync()), 'opened after it was reported').toBe('ok');
    expect(await outcome(scheduler, b.datasync())).toBe('ok');
    for (const handle of [a, b, c, d]) await handle.close();
  });

  it('on the calling thread too (datasyncNow), where the file system makes fdatasyncs there', async () => {
    const { scheduler, disk } = emptyDisk();
    const declining = new SimFileSystem(disk, scheduler, new SimRandom(1), NO_FAULTS);
    const fs = new SimFileSystem(disk, scheduler, new SimRandom(1), NO_FAULTS, false, true);
    const a = await settle(scheduler, fs.open(SEGMENT, 'wx'));
    const b = await settle(scheduler, declining.open(SEGMENT, 'r+'));
    await settle(scheduler, a.writev([Buffer.alloc(600, 1)], 0));
    expect(b.datasyncNow!(), 'declined: nothing done').toBe(false);
    expect(disk.file(SEGMENT).durableSizeBytes).toBe(0);
    expect(a.datasyncNow!(), 'made at once').toBe(true);
    expect(disk.file(SEGMENT).durableSizeBytes).toBe(600);
    await settle(scheduler, a.writev([Buffer.alloc(600, 2)], 600));
    disk.file(SEGMENT).failedSync(new SimRandom(2));
    expect(() => a.datasyncNow!()).toThrow(/EIO/);
    expect(a.datasyncNow!(), 'reported once').toBe(true);
    await a.close();
    await b.close();
  });
});
