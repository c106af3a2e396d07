/**
 * A sector lost inside a batch that was fdatasynced, followed by a batch written once it was durable
 * (which records it so), is damage to acknowledged data: the open refuses it with CORRUPT_MESSAGE
 * instead of reading it as a torn last round and cutting off two acknowledged batches; and so is a
 * cut in the last batch the store knew durable.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { buildOffsetBatch, loadChecksum } from '../../src/codec/index.js';
import { Log } from '../../src/log/index.js';
import { logOptions, testBatch } from '../support/log-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

beforeAll(() => loadChecksum());

function bigBatch(n: number): Buffer {
  const specs = Array.from({ length: 40 }, (_, i) => ({
    tableId: n,
    partitionId: null,
    bucketId: i,
    offset: i,
    leaderEpoch: -1,
    metadata: 'x'.repeat(30),
  }));
  return buildOffsetBatch('group-big', specs, 1_700_000_000_000);
}

it('a lost sector in a durable batch followed by a batch that knew it durable is corruption, not a torn tail', async () => {
  const dir = tempDir();
  const options = logOptions(dir, { segmentBytesMax: 1 << 20 });
  const { log } = await Log.open(options);
  const b0 = testBatch(0);
  const b1 = bigBatch(1);
  expect(await log.append(b0)).toBe(0); // round 1: fdatasynced
  expect(await log.append(b1)).toBe(1); // round 2: fdatasynced
  expect(await log.append(testBatch(2))).toBe(2); // round 3: written once batch 1 was durable
  await log.close();
  const file = path.join(
    dir,
    readdirSync(dir).find((f) => f.endsWith('.log'))!,
  );
  const bytes = readFileSync(file);
  const start = b0.length;
  const sector = Math.ceil((start + 64) / 512) * 512; // an aligned sector wholly inside batch 1
  expect(sector + 512).toBeLessThan(start + b1.length);
  bytes.fill(0, sector, sector + 512);
  writeFileSync(file, bytes);
  // After a crash the store knows only that the segment held batch 0 (onSegmentStarted).
  const opened = Log.open(options, { fromLogOffset: 0, knownEnd: { logOffset: 1, exact: false } });
  await expect(opened).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
  const reopened = await opened.catch(() => undefined);
  await reopened?.log.close();
});

it('a cut in the last batch the store knew durable is corruption too, not a torn tail to truncate', async () => {
  const dir = tempDir();
  const options = logOptions(dir, { segmentBytesMax: 1 << 20 });
  const { log } = await Log.open(options);
  expect(await log.append(testBatch(0))).toBe(0);
  expect(await log.append(bigBatch(1))).toBe(1);
  await log.close();
  const file = path.join(
    dir,
    readdirSync(dir).find((f) => f.endsWith('.log'))!,
  );
  const bytes = readFileSync(file);
  writeFileSync(file, bytes.subarray(0, bytes.length - 100));
  // The store knew the log held batches 0 and 1 (its manifest, or a checkpoint covering them).
  const opened = Log.open(options, { fromLogOffset: 0, knownEnd: { logOffset: 2, exact: false } });
  await expect(opened).rejects.toMatchObject({
    code: 'CORRUPT_MESSAGE',
    message: expect.stringMatching(/batch 1 was durable/),
  });
  const reopened = await opened.catch(() => undefined);
  await reopened?.log.close();
});
