/**
 * Damage inside acknowledged data of the active segment. A power loss can only damage what was
 * written after the last completed fdatasync; a zeroed sector in data that was durable (fsynced, or
 * made durable by a clean close) is corruption, however much it looks like a lost sector of an
 * unsynced write round: open refuses the bucket with CORRUPT_MESSAGE and `log verify` says corrupt,
 * instead of truncating acknowledged commits as a torn tail.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyLog } from '../../src/admin/index.js';
import type { OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { copyStoreDir, openStore } from './store-fixtures.js';

const SECTOR = 512;

/** `count` single-offset commits of group 'g', each awaited (each its own write round). */
async function commitMany(store: OffsetStore, count: number): Promise<void> {
  for (let i = 0; i < count; i++)
    await store.commitOffsets('g', [
      { tableId: 1, bucketId: i % 50, offset: i, metadata: 'x'.repeat(i % 40) },
    ]);
}

/** Zeroes one aligned sector in the middle of the only segment of bucket 0; returns the segment path. */
function zeroMiddleSector(dir: string): string {
  const bucketDir = path.join(dir, 'buckets', '000');
  const segments = readdirSync(bucketDir)
    .filter((f) => f.endsWith('.log'))
    .sort();
  const file = path.join(bucketDir, segments.at(-1)!);
  const bytes = readFileSync(file);
  const at = Math.floor(bytes.length / 2 / SECTOR) * SECTOR;
  bytes.fill(0, at, at + SECTOR);
  writeFileSync(file, bytes);
  return file;
}

async function expectCorrupt(dir: string, file: string): Promise<void> {
  const warnings: string[] = [];
  await expect(
    openStore(dir, { bucketCount: 1, onWarning: (m) => warnings.push(m) }),
  ).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE', message: expect.stringContaining(file) });
  expect(warnings).toEqual([]);
  const report = await verifyLog(dir);
  expect(report.corruptCount).toBe(1);
  expect(report.problems[0]).toMatchObject({ kind: 'corrupt', file });
}

describe('a zeroed sector inside acknowledged data of the active segment', () => {
  it("is corruption after a clean close with durability 'fsync'", async () => {
    const dir = tempDir();
    const store = await openStore(dir, { bucketCount: 1, segmentBytesMax: 64 << 20 });
    await commitMany(store, 2_000);
    await store.close();
    await expectCorrupt(dir, zeroMiddleSector(dir));
  });

  it("is corruption after a clean close with durability 'os'", async () => {
    const dir = tempDir();
    const store = await openStore(dir, {
      bucketCount: 1,
      segmentBytesMax: 64 << 20,
      durability: 'os',
    });
    await commitMany(store, 2_000);
    await store.close();
    await expectCorrupt(dir, zeroMiddleSector(dir));
  });

  it("is corruption in the files of a store still open (a crash) with durability 'fsync'", async () => {
    const dir = tempDir();
    const store = await openStore(dir, { bucketCount: 1, segmentBytesMax: 64 << 20 });
    await commitMany(store, 2_000);
    const image = tempDir();
    copyStoreDir(dir, image);
    await store.close();
    await expectCorrupt(image, zeroMiddleSector(image));
  });
});
