/**
 * The log: batches append and scan back byte for byte across segment rolls; concurrent appends are
 * group-committed into consecutive log offsets with far fewer fdatasyncs; the active segment's zero
 * tail is preallocation, a torn or garbage tail is cut at open; a sealed segment ending in zeros, a
 * flipped byte, or damage followed by a valid batch refuses the open with CORRUPT_MESSAGE; one failed
 * fdatasync fail-stops the log; batch size and pending appends are bounded.
 */
import {
  copyFileSync,
  readdirSync,
  readFileSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
  appendFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { loadChecksum } from '../../src/codec/index.js';
import { isOffsetStoreError } from '../../src/errors/index.js';
import type { FileHandle, FileSystem, OpenFlags } from '../../src/io/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import {
  Log,
  forgetLogProcessState,
  holdServingFlushes,
  type JournalPort,
} from '../../src/log/index.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { logOptions, readAll, testBatch } from '../support/log-fixtures.js';
import { tempDir } from '../support/temp-dir.js';
import { DEEP } from '../support/test-depth.js';

beforeAll(() => loadChecksum());

async function writeLog(dir: string, count: number): Promise<Buffer[]> {
  const { log } = await Log.open(logOptions(dir));
  const written: Buffer[] = [];
  for (let n = 0; n < count; n++) {
    const batch = testBatch(n);
    expect(await log.append(batch)).toBe(n);
    written.push(batch);
  }
  await log.close();
  return written;
}

function segmentFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .sort();
}

/** The machine's file system, counting the fdatasyncs the log asks to make on the calling thread. */
class FlushPlaceFileSystem extends NodeFileSystem {
  /** Calls of `datasyncNow` (whether the file system then made it on the calling thread or not). */
  askedHere = 0;

  override async open(...args: Parameters<FileSystem['open']>): Promise<FileHandle> {
    const handle = await super.open(...args);
    const datasyncNow = handle.datasyncNow?.bind(handle);
    handle.datasyncNow = () => {
      this.askedHere++;
      return datasyncNow?.() ?? false;
    };
    return handle;
  }
}

describe('Log', () => {
  it('appends and scans back byte-for-byte across several segment rolls', async () => {
    const dir = tempDir();
    const written = await writeLog(dir, 120);
    expect(segmentFiles(dir).length).toBeGreaterThan(3);
    for (const file of segmentFiles(dir))
      expect(statSync(path.join(dir, file)).size).toBeLessThanOrEqual(4096);
    const { batches, log } = await readAll(logOptions(dir));
    expect(batches.map((b) => b.logOffset)).toEqual(written.map((_, i) => i));
    batches.forEach((b, i) => expect(b.bytes.equals(written[i]!)).toBe(true));
    expect(log.nextOffset).toBe(120);
    const scanned: number[] = [];
    await log.scan(57, (_buf, _p, logOffset) => scanned.push(logOffset));
    expect(scanned).toEqual(Array.from({ length: 63 }, (_, i) => 57 + i));
    await log.close();
  });

  it('awaits beforeFirstWrite once, before its first batch reaches the file; if it fails, the log fails and nothing is written', async () => {
    const dir = tempDir();
    const fileBytes = () =>
      segmentFiles(dir).reduce(
        (n, f) => n + readFileSync(path.join(dir, f)).filter((b) => b !== 0).length,
        0,
      );
    let calls = 0;
    let release!: () => void;
    const { log } = await Log.open(
      logOptions(dir, {
        beforeFirstWrite: () => {
          calls++;
          return new Promise<void>((resolve) => (release = resolve));
        },
      }),
    );
    const first = log.append(testBatch(0));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(calls).toBe(1);
    expect(fileBytes()).toBe(0); // held until the hook answers
    release();
    expect(await first).toBe(0);
    expect(await log.append(testBatch(1))).toBe(1);
    expect(calls).toBe(1);
    await log.close();

    const refused = tempDir();
    const { log: failing } = await Log.open(
      logOptions(refused, {
        beforeFirstWrite: () => Promise.reject(new Error('store.json: EIO')),
      }),
    );
    await expect(failing.append(testBatch(0))).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(/store\.json: EIO/),
    });
    await expect(failing.append(testBatch(0))).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    await failing.close().catch(() => {});
    expect(
      segmentFiles(refused).every((f) => readFileSync(path.join(refused, f)).every((b) => b === 0)),
    ).toBe(true);
  });

  it('recovers exactly the complete batches before every possible torn length of the last segment', async () => {
    const source = tempDir();
    const written = await writeLog(source, 30);
    const files = segmentFiles(source);
    const last = files.at(-1)!;
    const lastBytes = readFileSync(path.join(source, last));
    const offsetsBefore = written.length - countBatches(lastBytes);
    const boundaries = batchBoundaries(lastBytes);
    // Every length in the fuzz tier; else every batch boundary and the 4 lengths on each side of it
    // (a torn length field, a header cut at its first bytes), and every 7th length between.
    const near = (length: number) => boundaries.some((end) => Math.abs(length - end) <= 4);
    for (let length = 0; length <= lastBytes.length; length++) {
      if (!DEEP && length % 7 !== 0 && length !== lastBytes.length && !near(length)) continue;
      const dir = tempDir();
      for (const f of files) copyFileSync(path.join(source, f), path.join(dir, f));
      truncateSync(path.join(dir, last), length);
      const complete = boundaries.filter((end) => end <= length).length;
      // Recovery reads the same in either durability; the append after it is made durable (an
      // fdatasync each) only at batch boundaries and every 64th length, where the zeros it writes
      // ahead start in another place. The others check where it continues without a flush each.
      const durable = boundaries.includes(length) || length % 64 === 0;
      const { batches, log, bytesTruncated } = await readAll(
        logOptions(dir, { durability: durable ? 'fsync' : 'os' }),
      );
      expect(batches.length, `length ${length}`).toBe(offsetsBefore + complete);
      expect(bytesTruncated).toBe(length - (boundaries[complete - 1] ?? 0));
      expect(await log.append(testBatch(99))).toBe(offsetsBefore + complete);
      await log.close();
    }
  });

  it('treats a garbage tail, or a batch torn inside the zero tail, as torn', async () => {
    const torn = testBatch(5);
    const partlyWritten = Buffer.concat([torn.subarray(0, 30), Buffer.alloc(500)]);
    const noise = Buffer.from('not a batch at all, just noise '.repeat(5));
    for (const tail of [
      noise,
      partlyWritten,
      Buffer.concat([Buffer.alloc(100), noise, Buffer.alloc(100)]),
    ]) {
      const dir = tempDir();
      await writeLog(dir, 5);
      appendFileSync(path.join(dir, segmentFiles(dir).at(-1)!), tail);
      const { batches, log, bytesTruncated, report } = await readAll(logOptions(dir));
      expect(batches).toHaveLength(5);
      expect(bytesTruncated).toBe(tail.length);
      expect(report.tornTail).toBeDefined();
      expect(await log.append(testBatch(5))).toBe(5);
      await log.close();
    }
  });

  it('keeps a zero tail of the active segment as its preallocation: nothing reported, appends overwrite it in place', async () => {
    for (const zeros of [1, 3, 300, 70_000]) {
      const dir = tempDir();
      const written = await writeLog(dir, 5);
      const file = path.join(dir, segmentFiles(dir).at(-1)!);
      const logicalBytes = statSync(file).size;
      appendFileSync(file, Buffer.alloc(zeros));
      const { batches, log, bytesTruncated, report } = await readAll(
        logOptions(dir, { segmentBytesMax: 1 << 20 }),
      );
      expect(batches, `${zeros} zeros`).toHaveLength(5);
      expect(bytesTruncated).toBe(0);
      expect(report.tornTail).toBeUndefined();
      const next = testBatch(5);
      expect(await log.append(next)).toBe(5);
      // Written where the log ended, over the zeros, without growing the file when it fits.
      if (zeros >= next.length) expect(statSync(file).size).toBe(logicalBytes + zeros);
      expect(
        readFileSync(file)
          .subarray(logicalBytes, logicalBytes + next.length)
          .equals(next),
      ).toBe(true);
      await log.close();
      expect(statSync(file).size, 'close cuts the zero tail').toBe(logicalBytes + next.length);
      const again = await readAll(logOptions(dir));
      expect(again.batches.map((b) => b.bytes)).toEqual([...written, next]);
      await again.log.close();
    }
  });

  it('preallocates the active segment with zeros in the same writev and fdatasync as the batches, and a roll seals segments at their last batch', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const segmentBytesMax = 256 * 1024;
    const { log } = await Log.open(logOptions(dir, { fs, segmentBytesMax }));
    const active = (): string => path.join(dir, segmentFiles(dir).at(-1)!);
    const datasyncsBefore = fs.datasyncCount;
    expect(await log.append(testBatch(0))).toBe(0);
    expect(fs.datasyncCount - datasyncsBefore).toBe(1);
    const firstBytes = log.sizeBytes;
    expect(statSync(active()).size, 'zeros written ahead').toBe(firstBytes + 64 * 1024);
    expect(
      readFileSync(active())
        .subarray(firstBytes)
        .every((b) => b === 0),
    ).toBe(true);
    // Appends within the zeros do not grow the file.
    for (let n = 1; n < 20; n++) expect(await log.append(testBatch(n))).toBe(n);
    expect(statSync(active()).size).toBe(firstBytes + 64 * 1024);
    expect(fs.datasyncCount - datasyncsBefore).toBe(20);
    // Fill past the segment size: every sealed segment ends exactly at its last batch, none is bigger than the maximum.
    let n = 20;
    while (segmentFiles(dir).length < 3) expect(await log.append(testBatch(n++, 1000))).toBe(n - 1);
    const files = segmentFiles(dir);
    for (const [i, segment] of log.sealedSegments().entries()) {
      expect(statSync(path.join(dir, files[i]!)).size).toBe(segment.sizeBytes);
    }
    for (const f of files)
      expect(statSync(path.join(dir, f)).size).toBeLessThanOrEqual(segmentBytesMax);
    await log.close();
    const { batches, log: reopened } = await readAll(logOptions(dir, { segmentBytesMax }));
    expect(batches.map((b) => b.logOffset)).toEqual(Array.from({ length: n }, (_, i) => i));
    await reopened.close();
  });

  it("writes no zeros ahead in durability 'os', where no round fdatasyncs the segment", async () => {
    const dir = tempDir();
    const { log } = await Log.open(
      logOptions(dir, { durability: 'os', segmentBytesMax: 64 << 20 }),
    );
    for (let n = 0; n < 40; n++) expect(await log.append(testBatch(n, 900))).toBe(n);
    const files = segmentFiles(dir);
    expect(files).toHaveLength(1);
    expect(statSync(path.join(dir, files[0]!)).size, 'the batches alone').toBe(log.sizeBytes);
    await log.close();
  });

  it('writes the batches alone when the disk has no room for the preallocation, and fail-stops only when the batches do not fit either', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const { log } = await Log.open(logOptions(dir, { fs, segmentBytesMax: 1 << 20 }));
    const active = path.join(dir, segmentFiles(dir).at(-1)!);
    fs.plan = { fileBytesMax: 2000 };
    const written: Buffer[] = [];
    let end = 0;
    for (let n = 0; ; n++) {
      const batch = testBatch(n);
      if (end + batch.length > 2000) {
        // No room for this batch itself: a real write failure.
        await expect(log.append(batch)).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
        break;
      }
      expect(await log.append(batch)).toBe(n);
      written.push(batch);
      end += batch.length;
      expect(statSync(active).size, 'no zeros past the batches once the disk refused them').toBe(
        end,
      );
    }
    expect(written.length).toBeGreaterThan(3);
    await log.close();
    const {
      batches,
      log: reopened,
      report,
    } = await readAll(logOptions(dir, { segmentBytesMax: 1 << 20 }));
    expect(batches.map((b) => b.bytes)).toEqual(written);
    expect(report.tornTail).toBeUndefined();
    await reopened.close();
  });

  it('refuses to open with CORRUPT_MESSAGE when a sealed segment ends in zeros', async () => {
    const dir = tempDir();
    await writeLog(dir, 60);
    const first = path.join(dir, segmentFiles(dir)[0]!);
    const size = statSync(first).size;
    appendFileSync(first, Buffer.alloc(200));
    const error = await Log.open(logOptions(dir)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isOffsetStoreError(error) && error.code === 'CORRUPT_MESSAGE').toBe(true);
    expect((error as Error).message).toContain(`${first} at byte ${size}`);
    expect((error as Error).message).toContain('sealed segment');
  });

  it('refuses to open with CORRUPT_MESSAGE naming file and position when a sealed segment has a flipped byte', async () => {
    const dir = tempDir();
    await writeLog(dir, 60);
    const first = path.join(dir, segmentFiles(dir)[0]!);
    const bytes = readFileSync(first);
    bytes[100]! ^= 0x10;
    writeFileSync(first, bytes);
    await expect(readAll(logOptions(dir))).rejects.toThrow(
      new RegExp(`CORRUPT_MESSAGE: ${first.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at byte \\d+`),
    );
  });

  it('refuses to open when damage in the last segment is followed by a valid batch', async () => {
    const dir = tempDir();
    await writeLog(dir, 10);
    const last = path.join(dir, segmentFiles(dir).at(-1)!);
    const bytes = readFileSync(last);
    const boundaries = batchBoundaries(bytes);
    expect(boundaries.length).toBeGreaterThan(2);
    bytes[boundaries[0]! + 20]! ^= 0xff; // inside the second batch of the segment
    writeFileSync(last, bytes);
    await expect(readAll(logOptions(dir))).rejects.toSatisfy((e) =>
      isOffsetStoreError(e, 'CORRUPT_MESSAGE'),
    );
  });

  it('refuses to open with CORRUPT_MESSAGE when a listed segment is removed before it is read', async () => {
    // Something other than the store (a cleanup job, a hand) removing a file while the log
    // recovers: the segment was listed, then is gone. That is damage to the store, as a segment
    // missing at open is, not a passing storage failure to retry.
    const dir = tempDir();
    await writeLog(dir, 60);
    const first = path.join(dir, segmentFiles(dir)[0]!);
    const fs = new (class extends FaultyFileSystem {
      override async readdir(at: string) {
        const names = await super.readdir(at);
        if (at === dir) unlinkSync(first);
        return names;
      }
    })();
    await expect(readAll(logOptions(dir, { fs }))).rejects.toThrow(
      new RegExp(
        `CORRUPT_MESSAGE: ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .*vanished while the log recovered`,
      ),
    );
  });

  it('rejects an insane length field in a sealed segment without allocating it', async () => {
    const dir = tempDir();
    await writeLog(dir, 60);
    const first = path.join(dir, segmentFiles(dir)[0]!);
    const bytes = readFileSync(first);
    bytes.writeUInt32LE(0xffffffff, 0);
    writeFileSync(first, bytes);
    await expect(readAll(logOptions(dir))).rejects.toThrow(
      /CORRUPT_MESSAGE.*at byte 0: batch length 4294967299 above the limit/,
    );
  });

  it('group-commits 1000 concurrent appends into consecutive offsets with far fewer fdatasyncs', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const { log } = await Log.open(logOptions(dir, { fs, segmentBytesMax: 64 << 20 }));
    fs.datasyncCount = 0;
    const resolved: number[] = [];
    const appends = Array.from({ length: 1000 }, (_, n) =>
      log.append(testBatch(n)).then((o) => {
        resolved.push(o);
        return o;
      }),
    );
    const offsets = await Promise.all(appends);
    expect(offsets).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(resolved).toEqual(offsets);
    expect(fs.datasyncCount).toBeGreaterThan(0);
    expect(fs.datasyncCount).toBeLessThan(20);
    await log.close();
  });

  it('flushes on the calling thread while one log flushes at a time; in a process serving over the network, logs taking turns flush through the thread pool for a while', async () => {
    // A flush on the calling thread blocks the event loop: commits for other logs arriving on
    // sockets meanwhile would then start their logs one at a time, each alone, never in parallel.
    forgetLogProcessState();
    // The rule is in milliseconds (a round within 2 ms of another log's, for 100 ms): the clock the
    // logs read stands still unless moved, so that a loaded machine does not decide the outcome.
    let nowMs = 1_000;
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => nowMs);
    try {
      const fs = new FlushPlaceFileSystem();
      const { log: a } = await Log.open(logOptions(tempDir(), { fs, segmentBytesMax: 1 << 20 }));
      const { log: b } = await Log.open(logOptions(tempDir(), { fs, segmentBytesMax: 1 << 20 }));
      const takeTurns = async (first: number) => {
        for (let n = 0; n < 10; n++) await (n % 2 === 0 ? b : a).append(testBatch(first + n));
      };
      for (let n = 0; n < 5; n++) await a.append(testBatch(n));
      expect(fs.askedHere).toBe(5);
      // In-process callers, one round at a time: on the calling thread, whichever log.
      await takeTurns(10);
      expect(fs.askedHere).toBe(15);
      const release = holdServingFlushes();
      try {
        // Serving: once the logs take turns, every round goes through the thread pool.
        await takeTurns(20);
        expect(fs.askedHere).toBe(15);
        // Once the turns are over (100 ms), a lone log flushes on the calling thread again.
        nowMs += 150;
        for (let n = 0; n < 3; n++) await a.append(testBatch(30 + n));
        expect(fs.askedHere).toBe(18);
      } finally {
        release();
        release();
      }
      await takeTurns(40);
      expect(fs.askedHere).toBe(28);
      await Promise.all([a.close(), b.close()]);
    } finally {
      clock.mockRestore();
    }
  });

  it('while serving over the network, waits a little for the next commits of the callers a round acknowledged', async () => {
    // Callers on sockets commit again a network round trip after their acknowledgement (modelled
    // here by one to four turns of the event loop): a round started at once would take only the
    // first of them, splitting them into cohorts that alternate.
    //
    // The wait is bounded in milliseconds (the last round's duration, at most 1 ms). So that a
    // loaded machine, whose turns can each outlast that, does not decide the outcome, the clock the
    // log reads here advances 0.1 ms per turn of the event loop, and an fdatasync takes five turns.
    const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns++;
      if (ticking) setImmediate(tick);
    };
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => turns * 0.1);
    const run = async (serving: boolean): Promise<number> => {
      forgetLogProcessState();
      const fs = new FaultyFileSystem();
      fs.hookHandles((_, handle) => ({
        datasync: async () => {
          for (let n = 0; n < 5; n++) await turn();
          return handle.datasync();
        },
      }));
      const { log } = await Log.open(logOptions(tempDir(), { fs, segmentBytesMax: 1 << 20 }));
      const release = serving ? holdServingFlushes() : () => {};
      const before = fs.datasyncCount;
      let next = 0;
      try {
        await Promise.all(
          Array.from({ length: 16 }, async (_, k) => {
            for (let i = 0; i < 20; i++) {
              // The k-th caller's next request arrives a little later than the one before it.
              for (let n = 0; n < 1 + (k % 4); n++) await turn();
              await log.append(testBatch(next++));
            }
          }),
        );
      } finally {
        release();
      }
      const flushes = fs.datasyncCount - before;
      await log.close();
      return flushes;
    };
    try {
      tick();
      const apart = await run(false);
      const gathered = await run(true);
      // 320 appends: 20 rounds if each gathered all 16 callers.
      expect(gathered).toBeLessThan(apart * 0.85);
      expect(gathered).toBeLessThanOrEqual(40);
    } finally {
      ticking = false;
      clock.mockRestore();
    }
  });

  it('fail-stops after one failed fdatasync: that append and every later one reject with LOG_STORAGE_ERROR', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const { log } = await Log.open(logOptions(dir, { fs }));
    expect(await log.append(testBatch(0))).toBe(0);
    fs.plan = { failDatasyncAt: fs.datasyncCount + 1 };
    await expect(log.append(testBatch(1))).rejects.toSatisfy((e) =>
      isOffsetStoreError(e, 'LOG_STORAGE_ERROR'),
    );
    fs.plan = {};
    await expect(log.append(testBatch(2))).rejects.toSatisfy((e) =>
      isOffsetStoreError(e, 'LOG_STORAGE_ERROR'),
    );
    expect(log.failed).toBe(true);
    await log.close();
  });

  it("names a failed write or fdatasync, and only that, as what may lie behind damage read in the log's files", async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const { log } = await Log.open(logOptions(dir, { fs, durability: 'os' }));
    await log.append(testBatch(0));
    // A healthy log: its sync succeeds, so damage read is on the disk.
    expect(await log.storageFailureBehindDamage()).toBeUndefined();
    await log.append(testBatch(1));
    // The sync it makes fails: that failure is what dropped the bytes.
    fs.plan = { failDatasyncAt: fs.datasyncCount + 1 };
    const found = await log.storageFailureBehindDamage();
    expect(found).toMatchObject({ already: false, failure: { code: 'LOG_STORAGE_ERROR' } });
    fs.plan = {};
    expect(log.failed).toBe(true);
    expect(await log.storageFailureBehindDamage()).toMatchObject({
      already: true,
      failure: found!.failure,
    });
    await log.close().catch(() => {});

    // A log stopped because its active segment was removed: no storage failure to name.
    const other = tempDir();
    const { log: removed } = await Log.open(logOptions(other));
    await removed.append(testBatch(0));
    for (const f of readdirSync(other)) if (f.endsWith('.log')) unlinkSync(path.join(other, f));
    expect(await removed.checkSegmentsPresent()).toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    expect(removed.failed).toBe(true);
    expect(await removed.storageFailureBehindDamage()).toBeUndefined();
    await removed.close().catch(() => {});
  });

  it('fail-stops when closing the sealed segment at a roll fails, leaving no file open', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const { log } = await Log.open(logOptions(dir, { fs, segmentBytesMax: 4096 }));
    // A roll creates the next segment (an open and a close), opens it, then closes the sealed one.
    fs.plan = { failCloseAt: fs.closeCount + 2 };
    const appended = await Promise.allSettled(
      Array.from({ length: 40 }, (_, n) => log.append(testBatch(n, 10))),
    );
    expect(appended.some((r) => r.status === 'rejected')).toBe(true);
    expect(log.failed).toBe(true);
    fs.plan = {};
    await log.close();
    expect(fs.openFiles, "the next segment's handle, opened before the failed close").toEqual([]);
  });

  it('rejects a batch above batchBytesMax before writing anything, and appends after close', async () => {
    const dir = tempDir();
    const { log } = await Log.open(logOptions(dir, { batchBytesMax: 200 }));
    await expect(log.append(testBatch(0, 20))).rejects.toThrow(
      /INVALID_REQUEST: batch of \d+ bytes exceeds the limit of 200 bytes/,
    );
    expect(log.sizeBytes).toBe(0);
    await log.close();
    await expect(log.append(testBatch(0))).rejects.toThrow(/STORE_CLOSED/);
  });

  it('rolls a busy log into a segment prepared ahead, so rounds stop growing files; no prepared file outlives close', async () => {
    const dir = tempDir();
    // Directory operations, to check that each roll into a prepared file is made durable.
    const ops: string[] = [];
    const fs = new (class extends FaultyFileSystem {
      override async rename(from: string, to: string) {
        ops.push(`rename ${path.basename(from)}`);
        return super.rename(from, to);
      }
      override async syncDir(dir: string) {
        ops.push('syncDir');
        return super.syncDir(dir);
      }
    })();
    const { log } = await Log.open(logOptions(dir, { fs, segmentBytesMax: 64 << 20 }));
    const big = (n: number) => testBatch(n, 900); // ~60 KB
    const written: Buffer[] = [];
    for (let n = 0; n < 120; n++) {
      const batch = big(n);
      expect(await log.append(batch)).toBe(n);
      written.push(batch);
    }
    const segments = log.segments();
    expect(segments.length, 'rolled into prepared segments').toBeGreaterThan(2);
    expect(segments.slice(1, -1).every((s) => s.sizeBytes >= 900 * 1024)).toBe(true);
    // Each prepared segment is twice the one before (1, 2, 4 MiB ...): ~7 MB take a few rolls, not one per MiB.
    const sealed = segments.slice(1, -1).map((s) => s.sizeBytes);
    for (let i = 1; i < sealed.length; i++)
      expect(sealed[i], `segment sizes ${sealed.join(', ')}`).toBeGreaterThan(1.5 * sealed[i - 1]!);
    expect(segments.length).toBeLessThanOrEqual(5);
    // Each rename of the prepared file into a segment is followed by the directory's fsync: else a
    // power loss could take the new segment's name with batches acknowledged in it.
    const rolls = ops.flatMap((op, i) => (op === 'rename next-segment.tmp' ? [ops[i + 1]] : []));
    expect(rolls.length).toBe(segments.length - 1);
    expect(rolls.every((next) => next === 'syncDir')).toBe(true);
    // The active segment was prepared: its file is larger than its batches (zeros written ahead).
    expect(statSync(segments.at(-1)!.path).size).toBeGreaterThan(segments.at(-1)!.sizeBytes);
    await log.close();
    expect(readdirSync(dir).filter((f) => !f.endsWith('.log'))).toEqual([]);
    for (const s of log.segments())
      expect(statSync(s.path).size, 'sealed and closed segments end at their last batch').toBe(
        s.sizeBytes,
      );
    const reread = await readAll(logOptions(dir, { segmentBytesMax: 64 << 20 }));
    expect(reread.batches.map((b) => b.logOffset)).toEqual(written.map((_, i) => i));
    await reread.log.close();
  });

  it('rolls into a fresh segment when the prepared file was removed (a temp file an operator cleaned up): no append fails', async () => {
    const dir = tempDir();
    let removed = 0;
    const fs = new (class extends FaultyFileSystem {
      override async rename(from: string, to: string) {
        if (path.basename(from) === 'next-segment.tmp') {
          unlinkSync(from);
          removed++;
        }
        return super.rename(from, to);
      }
    })();
    const { log } = await Log.open(logOptions(dir, { fs, segmentBytesMax: 64 << 20 }));
    for (let n = 0; n < 120; n++) expect(await log.append(testBatch(n, 900))).toBe(n);
    expect(
      removed,
      'the log prepared segments, and each was removed before its roll',
    ).toBeGreaterThan(0);
    expect(log.segments().length).toBeGreaterThan(2);
    await log.close();
    const reread = await readAll(logOptions(dir, { segmentBytesMax: 64 << 20 }));
    expect(reread.batches.map((b) => b.logOffset)).toEqual(
      Array.from({ length: 120 }, (_, i) => i),
    );
    await reread.log.close();
  });

  it('fail-stops, naming the segment, when the segment it just rolled into is removed before it is opened', async () => {
    const dir = tempDir();
    const fs = new (class extends FaultyFileSystem {
      override async open(p: string, flags: OpenFlags, mode?: number) {
        if (flags === 'r+' && path.basename(p) !== '00000000000000000000.log') unlinkSync(p);
        return super.open(p, flags, mode);
      }
    })();
    const { log } = await Log.open(logOptions(dir, { fs, segmentBytesMax: 1024 }));
    let refused: unknown;
    let acknowledged = 0;
    for (let n = 0; n < 100 && refused === undefined; n++)
      await log.append(testBatch(n, 10)).then(
        () => acknowledged++,
        (error: unknown) => (refused = error),
      );
    expect(refused).toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(
        /segment file .*\.log is gone from its folder .*nothing was written to it: the next open goes on from the segment before/,
      ),
    });
    await expect(log.append(testBatch(999, 10))).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
    });
    await log.close().catch(() => {});
    // As the message says: every acknowledged batch is in the segments before.
    const reread = await readAll(logOptions(dir, { segmentBytesMax: 1024 }));
    expect(reread.batches.map((b) => b.logOffset)).toEqual(
      Array.from({ length: acknowledged }, (_, i) => i),
    );
    await reread.log.close();
  });

  it('prepares no segment for a log whose rounds the journal makes durable, even after a round it fdatasynced alone', async () => {
    const dir = tempDir();
    const otherDir = tempDir();
    const fs = new FaultyFileSystem();
    // A journal that makes every round durable (the logs only write their own copies). The other
    // log's rounds wait for `release`, so that its flush is running while this log writes.
    let release = (): void => {};
    const port: JournalPort = {
      async commit(bucket, _batches, own) {
        if (bucket === 1) await new Promise<void>((resolve) => (release = resolve));
        await own.write();
        return { ownSync: false };
      },
      failure: undefined,
    };
    const open = (d: string, bucket: number) =>
      Log.open(logOptions(d, { fs, segmentBytesMax: 64 << 20, journal: { port, bucket } }));
    const { log } = await open(dir, 0);
    const { log: other } = await open(otherDir, 1);
    const big = (n: number) => testBatch(n, 900); // ~60 KB
    let n = 0;
    // Another log writing at the same time: every round goes through the journal.
    let otherRound = other.append(big(0));
    for (; n < 8; n++) await log.append(big(n));
    expect(log.sizeBytes).toBeGreaterThan(256 * 1024);
    // Now and then a round finds no other log writing and fdatasyncs itself.
    const datasyncs = fs.datasyncCount;
    for (let i = 1; i <= 3; i++) {
      release();
      await otherRound;
      await new Promise((resolve) => setImmediate(resolve)); // its flush loop has ended
      await log.append(big(n++));
      otherRound = other.append(big(i));
      await log.append(big(n++));
    }
    release();
    await otherRound;
    expect(
      fs.datasyncCount - datasyncs,
      'the lone rounds fdatasynced the log',
    ).toBeGreaterThanOrEqual(3);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // No next segment was prepared (zeros for a file no round would fdatasync), or rolled into.
    expect(readdirSync(dir).filter((f) => f !== '00000000000000000000.log')).toEqual([]);
    await log.close();
    await other.close();
  });

  it('prepares no segment where its zeros would leave less free space than they take', async () => {
    // As the busy log above, on a file system that says it has 1.5 MiB free: a prepared file of a
    // MiB or more would take the space commits need (a commit refused with ENOSPC stops the log).
    let asked = 0;
    const opened = new Set<string>();
    const fs = new (class extends NodeFileSystem {
      override async freeBytes(): Promise<number> {
        asked++;
        return 1.5 * 1024 * 1024;
      }
      override async open(p: string, flags: OpenFlags, mode?: number) {
        opened.add(path.basename(p));
        return super.open(p, flags, mode);
      }
    })();
    const dir = tempDir();
    const { log } = await Log.open(logOptions(dir, { fs, segmentBytesMax: 64 << 20 }));
    for (let n = 0; n < 40; n++) expect(await log.append(testBatch(n, 900))).toBe(n);
    expect(opened).not.toContain('next-segment.tmp');
    expect(asked, 'asked once per active segment, not per round').toBe(log.segments().length);
    await log.close();
  });

  it('deletes a prepared segment file a crash left behind', async () => {
    const dir = tempDir();
    await writeLog(dir, 3);
    writeFileSync(path.join(dir, 'next-segment.tmp'), Buffer.alloc(4096));
    const { batches, log } = await readAll(logOptions(dir));
    expect(batches.length).toBe(3);
    expect(readdirSync(dir).filter((f) => !f.endsWith('.log'))).toEqual([]);
    await log.close();
  });

  it('bounds the number of pending appends', async () => {
    const dir = tempDir();
    const { log } = await Log.open(logOptions(dir, { pendingAppendsMax: 10 }));
    const results = await Promise.allSettled(
      Array.from({ length: 30 }, (_, n) => log.append(testBatch(n))),
    );
    const rejected = results.filter((r) => r.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    for (const r of rejected)
      expect(
        isOffsetStoreError((r as PromiseRejectedResult).reason, 'TOO_MANY_PENDING_WRITES'),
      ).toBe(true);
    await log.close();
  });

  it('takes a torn first batch of a log whose earlier segments were freed for a torn write, not for damage to durable batches', async () => {
    const dir = tempDir();
    await writeLog(dir, 40);
    const { log } = await Log.open(logOptions(dir), { fromLogOffset: 0 });
    await log.sealActive();
    const start = log.nextOffset;
    await log.deleteSegmentsBelow(start);
    expect(segmentFiles(dir)).toHaveLength(1);
    await log.append(testBatch(start));
    await log.close();
    const only = path.join(dir, segmentFiles(dir)[0]!);
    truncateSync(only, statSync(only).size - 3);
    // The store knew batches below `start` were durable; the one at `start` was the write a crash tore.
    const reopened = await Log.open(logOptions(dir), {
      fromLogOffset: start,
      knownEnd: { logOffset: start, exact: false },
    });
    expect(reopened.log.nextOffset).toBe(start);
    expect(reopened.report.bytesTruncated).toBeGreaterThan(0);
    await reopened.log.close();
  });

  it('carries out segment deletions called at the same time one after the other (a checkpoint at close racing a conversion)', async () => {
    const dir = tempDir();
    const written = await writeLog(dir, 120);
    const { log } = await Log.open(logOptions(dir));
    const sealed = log.sealedSegments();
    expect(sealed.length).toBeGreaterThan(3);
    const below = sealed[2]!.baseOffset;
    const results = await Promise.allSettled([
      log.deleteSegmentsBelow(below),
      log.deleteSegmentsBelow(sealed.at(-1)!.baseOffset),
      log.deleteSegmentsBelow(below),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(log.sealedSegments()[0]!.baseOffset).toBe(sealed.at(-1)!.baseOffset);
    await log.close();
    const firstKept = sealed.at(-1)!.baseOffset;
    const batches: Buffer[] = [];
    const reopened = await Log.open(logOptions(dir), {
      fromLogOffset: firstKept,
      visit: (buf, position, logOffset, sizeBytes) => {
        batches[logOffset - firstKept] = Buffer.from(buf.subarray(position, position + sizeBytes));
      },
    });
    expect(batches).toEqual(written.slice(firstKept));
    await reopened.log.close();
  });
});

function batchBoundaries(bytes: Buffer): number[] {
  const ends: number[] = [];
  let p = 0;
  while (p + 4 <= bytes.length) {
    p += bytes.readUInt32LE(p) + 4;
    ends.push(p);
  }
  return ends;
}

function countBatches(bytes: Buffer): number {
  return batchBoundaries(bytes).length;
}
