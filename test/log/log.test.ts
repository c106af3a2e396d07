import { copyFileSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync, appendFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadChecksum } from '../../src/codec/index.js';
import { isOffsetStoreError } from '../../src/errors/index.js';
import { Log } from '../../src/log/index.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { logOptions, readAll, testBatch } from '../support/log-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

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
  return readdirSync(dir).filter((f) => f.endsWith('.log')).sort();
}

describe('Log', () => {
  it('appends and scans back byte-for-byte across several segment rolls', async () => {
    const dir = tempDir();
    const written = await writeLog(dir, 120);
    expect(segmentFiles(dir).length).toBeGreaterThan(3);
    for (const file of segmentFiles(dir)) expect(statSync(path.join(dir, file)).size).toBeLessThanOrEqual(4096);
    const { batches, log } = await readAll(logOptions(dir));
    expect(batches.map((b) => b.logOffset)).toEqual(written.map((_, i) => i));
    batches.forEach((b, i) => expect(b.bytes.equals(written[i]!)).toBe(true));
    expect(log.nextOffset).toBe(120);
    const scanned: number[] = [];
    await log.scan(57, (_buf, _p, logOffset) => scanned.push(logOffset));
    expect(scanned).toEqual(Array.from({ length: 63 }, (_, i) => 57 + i));
    await log.close();
  });

  it('recovers exactly the complete batches before every possible torn length of the last segment', async () => {
    const source = tempDir();
    const written = await writeLog(source, 30);
    const files = segmentFiles(source);
    const last = files.at(-1)!;
    const lastBytes = readFileSync(path.join(source, last));
    const offsetsBefore = written.length - countBatches(lastBytes);
    const boundaries = batchBoundaries(lastBytes);
    for (let length = 0; length <= lastBytes.length; length++) {
      const dir = tempDir();
      for (const f of files) copyFileSync(path.join(source, f), path.join(dir, f));
      truncateSync(path.join(dir, last), length);
      const complete = boundaries.filter((end) => end <= length).length;
      const { batches, log, bytesTruncated } = await readAll(logOptions(dir));
      expect(batches.length, `length ${length}`).toBe(offsetsBefore + complete);
      expect(bytesTruncated).toBe(length - (boundaries[complete - 1] ?? 0));
      expect(await log.append(testBatch(99))).toBe(offsetsBefore + complete);
      await log.close();
    }
  });

  it('treats a zero-filled or garbage tail as torn', async () => {
    for (const tail of [Buffer.alloc(300), Buffer.from('not a batch at all, just noise '.repeat(5))]) {
      const dir = tempDir();
      await writeLog(dir, 5);
      appendFileSync(path.join(dir, segmentFiles(dir).at(-1)!), tail);
      const { batches, log, bytesTruncated } = await readAll(logOptions(dir));
      expect(batches).toHaveLength(5);
      expect(bytesTruncated).toBe(tail.length);
      expect(await log.append(testBatch(5))).toBe(5);
      await log.close();
    }
  });

  it('refuses to open with CORRUPT_MESSAGE naming file and position when a sealed segment has a flipped byte', async () => {
    const dir = tempDir();
    await writeLog(dir, 60);
    const first = path.join(dir, segmentFiles(dir)[0]!);
    const bytes = readFileSync(first);
    bytes[100]! ^= 0x10;
    writeFileSync(first, bytes);
    await expect(readAll(logOptions(dir))).rejects.toThrow(new RegExp(`CORRUPT_MESSAGE: ${first.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at byte \\d+`));
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
    await expect(readAll(logOptions(dir))).rejects.toSatisfy((e) => isOffsetStoreError(e, 'CORRUPT_MESSAGE'));
  });

  it('rejects an insane length field in a sealed segment without allocating it', async () => {
    const dir = tempDir();
    await writeLog(dir, 60);
    const first = path.join(dir, segmentFiles(dir)[0]!);
    const bytes = readFileSync(first);
    bytes.writeUInt32LE(0xffffffff, 0);
    writeFileSync(first, bytes);
    await expect(readAll(logOptions(dir))).rejects.toThrow(/CORRUPT_MESSAGE.*at byte 0: batch length 4294967299 above the limit/);
  });

  it('group-commits 1000 concurrent appends into consecutive offsets with far fewer fdatasyncs', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const { log } = await Log.open(logOptions(dir, { fs, segmentBytesMax: 64 << 20 }));
    fs.datasyncCount = 0;
    const resolved: number[] = [];
    const appends = Array.from({ length: 1000 }, (_, n) => log.append(testBatch(n)).then((o) => { resolved.push(o); return o; }));
    const offsets = await Promise.all(appends);
    expect(offsets).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(resolved).toEqual(offsets);
    expect(fs.datasyncCount).toBeGreaterThan(0);
    expect(fs.datasyncCount).toBeLessThan(20);
    await log.close();
  });

  it('fail-stops after one failed fdatasync: that append and every later one reject with LOG_STORAGE_ERROR', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const { log } = await Log.open(logOptions(dir, { fs }));
    expect(await log.append(testBatch(0))).toBe(0);
    fs.plan = { failDatasyncAt: fs.datasyncCount + 1 };
    await expect(log.append(testBatch(1))).rejects.toSatisfy((e) => isOffsetStoreError(e, 'LOG_STORAGE_ERROR'));
    fs.plan = {};
    await expect(log.append(testBatch(2))).rejects.toSatisfy((e) => isOffsetStoreError(e, 'LOG_STORAGE_ERROR'));
    expect(log.failed).toBe(true);
    await log.close();
  });

  it('rejects a batch above batchBytesMax before writing anything, and appends after close', async () => {
    const dir = tempDir();
    const { log } = await Log.open(logOptions(dir, { batchBytesMax: 200 }));
    await expect(log.append(testBatch(0, 20))).rejects.toThrow(/INVALID_REQUEST: batch of \d+ bytes exceeds the limit of 200 bytes/);
    expect(log.sizeBytes).toBe(0);
    await log.close();
    await expect(log.append(testBatch(0))).rejects.toThrow(/STORE_CLOSED/);
  });

  it('bounds the number of pending appends', async () => {
    const dir = tempDir();
    const { log } = await Log.open(logOptions(dir, { pendingAppendsMax: 10 }));
    const results = await Promise.allSettled(Array.from({ length: 30 }, (_, n) => log.append(testBatch(n))));
    const rejected = results.filter((r) => r.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    for (const r of rejected) expect(isOffsetStoreError((r as PromiseRejectedResult).reason, 'TOO_MANY_PENDING_WRITES')).toBe(true);
    await log.close();
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
