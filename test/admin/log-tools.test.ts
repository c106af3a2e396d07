/**
 * The log tools behind `offset-store log dump` and `log verify`, on a seeded store: dumpLog lists
 * every segment, batch and record of an offsets-bucket, from a log offset on (whole segments below it
 * skipped); verifyLog judges damage as open does (a flipped byte or a cut in durable data is corrupt,
 * a cut-off append after the log's end is a torn tail, zeros after the last batch are preallocation,
 * a record that does not decode is corrupt) and never changes a file.
 */
import {
  appendFileSync,
  cpSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import * as path from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  dumpLog,
  verifyLog,
  type DumpBatchEntry,
  type DumpEntry,
  type DumpRecordEntry,
} from '../../src/admin/index.js';
import { loadChecksum, sealBatch } from '../../src/codec/index.js';
import { ManualClock, OffsetStore } from '../../src/index.js';
import {
  NodeFileSystem,
  holdDirectoryLock,
  type FileHandle,
  type FileSystem,
  type OpenFlags,
} from '../../src/io/index.js';
import { fileTempDir, tempDir } from '../support/temp-dir.js';
import { SEEDED, seedStore, segmentPaths, snapshotFiles } from './admin-fixtures.js';

async function dumpAll(
  dir: string,
  bucket: number,
  options = { records: true, fromOffset: 0 },
): Promise<DumpEntry[]> {
  const entries: DumpEntry[] = [];
  await dumpLog(dir, bucket, options, (e) => entries.push(structuredClone(e)));
  return entries;
}

/** The offsets-bucket holding `groupId`, found from the dumped records. */
async function bucketOf(dir: string, groupId: string): Promise<number> {
  for (let bucket = 0; bucket < 4; bucket++) {
    if ((await dumpAll(dir, bucket)).some((e) => e.kind === 'record' && e.groupId === groupId))
      return bucket;
  }
  throw new TypeError(`no bucket holds ${groupId}`);
}

function batches(entries: DumpEntry[]): DumpBatchEntry[] {
  return entries.filter((e): e is DumpBatchEntry => e.kind === 'batch');
}

function flipByte(file: string, position: number): void {
  const bytes = readFileSync(file);
  bytes[position] = bytes[position]! ^ 0xff;
  writeFileSync(file, bytes);
}

describe('dumpLog and verifyLog', () => {
  let seeded: string;
  let ordersBucket: number;

  beforeAll(async () => {
    await loadChecksum();
    seeded = fileTempDir();
    await seedStore(seeded);
    ordersBucket = await bucketOf(seeded, 'orders');
  });

  function copyOfSeeded(): string {
    const dir = tempDir();
    cpSync(seeded, dir, { recursive: true });
    return dir;
  }

  it('dumps every batch and record of a bucket; the last record per key is the committed offset', async () => {
    const entries = await dumpAll(seeded, ordersBucket);
    expect(entries.filter((e) => e.kind === 'segment').length).toBeGreaterThan(1);
    expect(batches(entries).map((b) => b.logOffset)).toEqual(batches(entries).map((_, i) => i));
    const latest = new Map<string, DumpRecordEntry>();
    for (const e of entries)
      if (e.kind === 'record' && e.groupId === 'orders')
        latest.set(`${e.tableId}:${e.partitionId}:${e.bucketId}`, e);
    expect(
      [...latest.values()]
        .map((r) => ({
          tableId: r.tableId,
          partitionId: r.partitionId,
          bucketId: r.bucketId,
          offset: r.offset,
        }))
        .sort((a, b) => a.tableId! - b.tableId! || a.bucketId! - b.bucketId!),
    ).toEqual(SEEDED.orders);
    expect(latest.get('1:null:0')).toMatchObject({
      recordType: 'offset-commit',
      tombstone: false,
      metadata: 'host-a',
      leaderEpoch: -1,
    });
  });

  it('starts at --from-offset and skips whole segments below it', async () => {
    const entries: DumpEntry[] = [];
    const summary = await dumpLog(seeded, ordersBucket, { records: false, fromOffset: 7 }, (e) =>
      entries.push(structuredClone(e)),
    );
    expect(batches(entries)[0]!.logOffset).toBe(7);
    expect(entries.some((e) => e.kind === 'record')).toBe(false);
    // Without records decoded, the summary still counts them, as the batches' headers do.
    expect(summary.recordCount).toBe(batches(entries).reduce((n, b) => n + b.recordCount, 0));
    expect(summary.recordCount).toBeGreaterThan(0);
    const all = batches(await dumpAll(seeded, ordersBucket));
    const segmentsHolding7AndUp = new Set(all.filter((b) => b.logOffset >= 7).map((b) => b.file));
    expect(
      entries.filter((e) => e.kind === 'segment').map((e) => (e as { file: string }).file),
    ).toEqual([...segmentsHolding7AndUp]);
  });

  it('goes on when a segment it listed vanishes before it reads it (a live store compacting): every batch once', async () => {
    const whole = batches(await dumpAll(seeded, ordersBucket)).map((b) => b.logOffset);
    const second = segmentPaths(seeded, ordersBucket)[1]!;
    /** Opening the second segment fails with ENOENT the first `times` times, as if swapped away. */
    class Vanishing extends NodeFileSystem {
      constructor(private times: number) {
        super();
      }
      override async open(file: string, flags: OpenFlags, mode?: number): Promise<FileHandle> {
        if (file === second && this.times-- > 0)
          throw Object.assign(new Error(`ENOENT: no such file or directory, open '${file}'`), {
            code: 'ENOENT',
          });
        return super.open(file, flags, mode);
      }
    }
    const entries: DumpEntry[] = [];
    await dumpLog(seeded, ordersBucket, { records: true, fs: new Vanishing(1) }, (e) =>
      entries.push(structuredClone(e)),
    );
    expect(batches(entries).map((b) => b.logOffset)).toEqual(whole);
    const report = await verifyLog(seeded, { fs: new Vanishing(2) });
    expect(report.ok).toBe(true);
    expect(report.totals.batchCount).toBe((await verifyLog(seeded)).totals.batchCount);
  });

  it('compares the bucket with store.json as the next open does: a missing folder, missing first segments, a log cut short', async () => {
    const damages = async (dir: string) =>
      (await dumpAll(dir, ordersBucket, { records: false, fromOffset: 0 }))
        .filter((e) => e.kind === 'damage')
        .map((e) => (e as { reason: string }).reason);
    expect(await damages(seeded)).toEqual([]);
    const withoutFirst = copyOfSeeded();
    rmSync(segmentPaths(withoutFirst, ordersBucket)[0]!);
    expect(await damages(withoutFirst)).toEqual([
      expect.stringMatching(/the segments before it are missing/),
    ]);
    const withoutLast = copyOfSeeded();
    rmSync(segmentPaths(withoutLast, ordersBucket).at(-1)!);
    expect(await damages(withoutLast)).toEqual([
      expect.stringMatching(/shorter than the \d+ store\.json recorded/),
    ]);
    // A segment missing between two others: the chain breaks there, as recovery finds it.
    const withoutMiddle = copyOfSeeded();
    const middle = segmentPaths(withoutMiddle, ordersBucket);
    expect(middle.length).toBeGreaterThanOrEqual(3);
    rmSync(middle[1]!);
    expect(await damages(withoutMiddle)).toEqual([
      expect.stringMatching(/log offsets \d+\.\.\d+ are missing: .* ends at log offset \d+ and/),
    ]);
    const withoutFolder = copyOfSeeded();
    rmSync(path.dirname(segmentPaths(withoutFolder, ordersBucket)[0]!), { recursive: true });
    expect(await damages(withoutFolder)).toEqual([
      expect.stringMatching(/the folder of offsets-bucket \d+ is missing/),
    ]);
  });

  it("finds no damage in a checkpoint store whose log is one empty segment (compacted and closed): it ends at that segment's base", async () => {
    const dir = tempDir();
    const store = await OffsetStore.open({
      dir,
      bucketCount: 1,
      compaction: { strategy: 'checkpoint', background: false },
    });
    for (let i = 0; i < 5; i++)
      await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: i }]);
    await store.compact();
    await store.close();
    expect((await verifyLog(dir)).ok).toBe(true);
    const entries = await dumpAll(dir, 0, { records: false, fromOffset: 0 });
    expect(entries.filter((e) => e.kind === 'damage')).toEqual([]);
  });

  it('rejects a bucket out of range and a directory without a store', async () => {
    await expect(dumpLog(seeded, 4, {}, () => {})).rejects.toThrow(
      /INVALID_REQUEST: bucket must be in \[0, 3\]/,
    );
    await expect(verifyLog(path.join(seeded, 'nope'))).rejects.toThrow(
      /INVALID_CONFIG: no offset store/,
    );
  });

  it('finds nothing wrong in a clean store and agrees with the dump', async () => {
    const report = await verifyLog(seeded);
    expect(report).toMatchObject({
      ok: true,
      corruptCount: 0,
      tornTailCount: 0,
      bucketCount: 4,
      problems: [],
      openByPid: null,
    });
    const dumped = batches(await dumpAll(seeded, ordersBucket));
    expect(report.buckets[ordersBucket]).toMatchObject({
      status: 'ok',
      batchCount: dumped.length,
      lastLogOffset: dumped.at(-1)!.logOffset,
    });
  });

  it("lists a compaction's leftovers in a bucket folder (outputs and temporary files), in name order", async () => {
    const dir = copyOfSeeded();
    const bucketDir = path.join(dir, 'buckets', '000');
    writeFileSync(path.join(bucketDir, 'store.tmp'), '');
    writeFileSync(path.join(bucketDir, '00000000000000000000.log.cleaned'), '');
    const report = await verifyLog(dir);
    expect(report.buckets[0]!.swapLeftovers).toEqual([
      '00000000000000000000.log.cleaned',
      'store.tmp',
    ]);
    expect(report.buckets[1]!.swapLeftovers).toEqual([]);
  });

  it("counts each segment's records as the dump reads them, and the bucket's as their sum", async () => {
    const report = await verifyLog(seeded);
    const dumped = batches(await dumpAll(seeded, ordersBucket));
    const bucket = report.buckets[ordersBucket]!;
    expect(bucket.segments.length).toBeGreaterThan(1);
    for (const segment of bucket.segments) {
      const inFile = dumped.filter((b) => b.file === segment.file);
      expect(segment.batchCount).toBe(inFile.length);
      expect(segment.recordCount).toBe(inFile.reduce((n, b) => n + b.recordCount, 0));
    }
    expect(bucket.recordCount).toBe(dumped.reduce((n, b) => n + b.recordCount, 0));
  });

  it('reports what of buckets/ is no bucket folder as the next open does, and leaves hidden files alone', async () => {
    const dir = copyOfSeeded();
    const bucketsDir = path.join(dir, 'buckets');
    // A file a desktop or a sync tool leaves: nobody's, harmless (it used to refuse the store).
    writeFileSync(path.join(bucketsDir, '.DS_Store'), 'x');
    expect((await verifyLog(dir)).ok).toBe(true);
    const opened = await OffsetStore.open({ dir });
    expect((await opened.fetchOffsets('orders')).length).toBeGreaterThan(0);
    await opened.close();
    // A folder of a store with more buckets, or a copy put aside: the next open refuses the
    // store, and verify, which said ok, now says so too, naming the entry.
    mkdirSync(path.join(bucketsDir, '004'));
    mkdirSync(path.join(bucketsDir, 'backup'));
    const refusal = expect.stringMatching(
      /buckets: holds 004, backup, which are not folders of this store's 4 offsets-buckets \(store\.json: bucketCount 4\)/,
    );
    await expect(OffsetStore.open({ dir })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: refusal,
    });
    const report = await verifyLog(dir);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({ kind: 'corrupt', bucket: -1, file: bucketsDir }),
    ]);
    expect(`${report.problems[0]!.file}: ${report.problems[0]!.reason}`).toEqual(refusal);
  });

  it('reports a flipped byte in a sealed segment as corrupt at the damaged batch, like recovery, and modifies nothing', async () => {
    const dir = copyOfSeeded();
    const victim = batches(await dumpAll(dir, ordersBucket)).filter(
      (b) => b.file === segmentPaths(dir, ordersBucket)[0],
    )[1]!;
    flipByte(victim.file, victim.position + 20);
    const before = snapshotFiles(dir);
    const report = await verifyLog(dir);
    expect(snapshotFiles(dir)).toEqual(before);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        bucket: ordersBucket,
        file: victim.file,
        position: victim.position,
        reason: expect.stringMatching(/checksum mismatch/),
      }),
    ]);
    expect(report.buckets[ordersBucket]!.status).toBe('corrupt');
    await expect(
      OffsetStore.open({ dir, clock: new ManualClock(), compaction: { background: false } }),
    ).rejects.toThrow(`CORRUPT_MESSAGE: ${victim.file} at byte ${victim.position}`);
  });

  it('reports damage in the last segment with a valid batch after it as corrupt', async () => {
    const dir = copyOfSeeded();
    const last = segmentPaths(dir, ordersBucket).at(-1)!;
    const inLast = batches(await dumpAll(dir, ordersBucket)).filter((b) => b.file === last);
    expect(inLast.length).toBeGreaterThan(1);
    flipByte(last, inLast[0]!.position + 30);
    const report = await verifyLog(dir);
    expect(report.problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        file: last,
        position: inLast[0]!.position,
        reason: expect.stringMatching(/was durable/),
      }),
    ]);
  });

  it('reports a cut-off batch after the end of the log as a torn tail, which the next open truncates exactly there', async () => {
    const dir = copyOfSeeded();
    const last = segmentPaths(dir, ordersBucket).at(-1)!;
    const lastBatch = batches(await dumpAll(dir, ordersBucket)).at(-1)!;
    const end = statSync(last).size;
    // The first 30 bytes of a copy of the last batch: an append cut short by a crash.
    appendFileSync(last, readFileSync(last).subarray(lastBatch.position, lastBatch.position + 30));
    const before = snapshotFiles(dir);
    const report = await verifyLog(dir);
    expect(snapshotFiles(dir)).toEqual(before);
    expect(report).toMatchObject({ ok: false, corruptCount: 0, tornTailCount: 1 });
    expect(report.problems[0]).toMatchObject({
      kind: 'torn-tail',
      bucket: ordersBucket,
      file: last,
      position: end,
      bytesAfter: 30,
    });
    expect(report.buckets[ordersBucket]!.status).toBe('torn-tail');
    const warnings: string[] = [];
    const store = await OffsetStore.open({
      dir,
      clock: new ManualClock(),
      compaction: { background: false },
      onWarning: (m) => warnings.push(m),
    });
    await store.close();
    expect(statSync(last).size).toBe(end);
    expect(warnings).toEqual([
      expect.stringMatching(/torn write at the end of .*truncated 30 bytes/),
    ]);
  });

  it('reports a cut in the last batch of a store closed cleanly as corrupt: that batch was durable', async () => {
    const dir = copyOfSeeded();
    const last = segmentPaths(dir, ordersBucket).at(-1)!;
    const lastBatch = batches(await dumpAll(dir, ordersBucket)).at(-1)!;
    truncateSync(last, lastBatch.position + 30);
    const report = await verifyLog(dir);
    expect(report.problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        file: last,
        position: lastBatch.position,
        reason: expect.stringMatching(/was durable/),
      }),
    ]);
    await expect(
      OffsetStore.open({ dir, clock: new ManualClock(), compaction: { background: false } }),
    ).rejects.toThrow(`CORRUPT_MESSAGE: ${last} at byte ${lastBatch.position}`);
  });

  it('reads a store a live process has open again before it believes what it found: a batch read mid-append is no damage, damage at rest stays corrupt', async () => {
    const dir = copyOfSeeded();
    // As if a live process (this one) had the store open: its kernel-held lock and its LOCK file.
    const held = await holdDirectoryLock(dir);
    if (typeof held === 'string') throw new Error(`no kernel lock: ${held}`);
    onTestFinished(() => held.release());
    writeFileSync(path.join(dir, 'LOCK'), `${process.pid}\n`);
    const last = segmentPaths(dir, ordersBucket).at(-1)!;
    const lastBatch = batches(await dumpAll(dir, ordersBucket)).at(-1)!;
    // The first read of the active segment meets its last batch half written, as a read racing an
    // append does; every later read sees it whole.
    const inner = new NodeFileSystem();
    let cut = true;
    const racing: FileSystem = Object.assign(Object.create(inner) as FileSystem, {
      open: async (file: string, flags: OpenFlags) => {
        const handle = await inner.open(file, flags);
        if (file !== last || !cut) return handle;
        cut = false;
        return Object.assign(Object.create(handle) as FileHandle, {
          sizeBytes: async () => lastBatch.position + 30,
          read: handle.read.bind(handle),
          close: handle.close.bind(handle),
        });
      },
    });
    const report = await verifyLog(dir, { fs: racing });
    expect(cut).toBe(false);
    expect(report).toMatchObject({ ok: true, openByPid: process.pid, problems: [] });
    // Damage that reads the same every time is reported as it is, open or not.
    flipByte(segmentPaths(dir, ordersBucket)[0]!, 60);
    const damaged = await verifyLog(dir);
    expect(damaged.corruptCount).toBe(1);
    expect(damaged.problems[0]).toMatchObject({ kind: 'corrupt', bucket: ordersBucket });
  });

  it("takes a stale LOCK file naming a live process that holds no lock (a crashed owner's pid given to another process) for no owner", async () => {
    const dir = copyOfSeeded();
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await once(other, 'spawn');
      writeFileSync(path.join(dir, 'LOCK'), `${other.pid}\n`);
      expect(await verifyLog(dir)).toMatchObject({ ok: true, openByPid: null });
      // The store's real owner is still found, and with a live pid named in a stale file the store
      // opens (its owner's kernel-held lock is what decides).
      const store = await OffsetStore.open({ dir, bucketCount: 4 });
      try {
        expect((await verifyLog(dir)).openByPid).toBe(process.pid);
      } finally {
        await store.close();
      }
    } finally {
      other.kill();
    }
  });

  it("takes for its owner a live process that opened the store through a file-system port without the kernel-held lock: it holds the store's files open", async () => {
    const dir = copyOfSeeded();
    const inner = new NodeFileSystem();
    // Every method of the port but the optional lock ones, as a user's wrapper may forward.
    const port = Object.fromEntries(
      Object.getOwnPropertyNames(NodeFileSystem.prototype)
        .filter((name) => !['constructor', 'holdLock', 'ownerLive'].includes(name))
        .map((name) => [
          name,
          (...args: unknown[]) =>
            (inner as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!(...args),
        ]),
    ) as unknown as FileSystem;
    const store = await OffsetStore.open({ dir, bucketCount: 4, fs: port });
    try {
      expect((await verifyLog(dir)).openByPid).toBe(process.pid);
    } finally {
      await store.close();
    }
    expect((await verifyLog(dir)).openByPid).toBe(null);
  });

  it('takes a zero tail of the last segment for preallocation (ok), and one of a sealed segment for corruption', async () => {
    const dir = copyOfSeeded();
    const [first, ...rest] = segmentPaths(dir, ordersBucket);
    const last = rest.at(-1)!;
    const lastSize = statSync(last).size;
    appendFileSync(last, Buffer.alloc(4096));
    const preallocated = await verifyLog(dir);
    expect(preallocated).toMatchObject({ ok: true, problems: [] });
    expect(preallocated.buckets[ordersBucket]!.segments.at(-1)).toMatchObject({
      validBytes: lastSize,
      preallocatedBytes: 4096,
    });
    expect((await dumpAll(dir, ordersBucket)).filter((e) => e.kind === 'damage')).toEqual([]);

    const firstSize = statSync(first!).size;
    appendFileSync(first!, Buffer.alloc(100));
    const report = await verifyLog(dir);
    expect(report.problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        file: first,
        position: firstSize,
        bytesAfter: 100,
        reason: expect.stringMatching(/zero bytes at the end of a sealed segment/),
      }),
    ]);
    expect((await dumpAll(dir, ordersBucket)).filter((e) => e.kind === 'damage')).toEqual([
      expect.objectContaining({ file: first, position: firstSize }),
    ]);
    await expect(
      OffsetStore.open({ dir, clock: new ManualClock(), compaction: { background: false } }),
    ).rejects.toThrow(`CORRUPT_MESSAGE: ${first} at byte ${firstSize}`);
  });

  it('reports a record that does not decode inside a batch with a valid checksum as corrupt', async () => {
    const dir = copyOfSeeded();
    const target = batches(await dumpAll(dir, ordersBucket))[2]!;
    const bytes = readFileSync(target.file);
    // First record of the batch: int32 length, 1-byte key length, then the int16 record type.
    bytes.writeInt16LE(9, target.position + 48 + 4 + 1);
    sealBatch(bytes, target.logOffset, target.position);
    writeFileSync(target.file, bytes);
    const report = await verifyLog(dir);
    expect(report.problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        file: target.file,
        reason: expect.stringMatching(
          /checksum matches but a record does not decode: unknown record type 9/,
        ),
      }),
    ]);
    expect(report.problems[0]!.position).toBeGreaterThan(target.position);
    const dumped = await dumpAll(dir, ordersBucket);
    expect(dumped.filter((e) => e.kind === 'damage')).toEqual([
      expect.objectContaining({
        file: target.file,
        reason: expect.stringMatching(/unknown record type 9/),
      }),
    ]);
  });
});
