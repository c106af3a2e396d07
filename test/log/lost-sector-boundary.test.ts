/**
 * Where the lost-sector rule draws its line. A sector lost in a last round that does not start the
 * damaged stretch leaves at least SECTOR_BYTES - BATCH_MAGIC_POSITION (508) bytes of zeros before
 * the next valid batch: a shorter run would have zeroed that batch's magic byte too. So a run of 508
 * zeros there is a torn round (its batches were never acknowledged: cut), and a run of 507 cannot be
 * a lost sector: it is damage, and the open refuses it rather than cut batches that may have been
 * acknowledged.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BATCH_MAGIC_POSITION, buildOffsetBatch, loadChecksum } from '../../src/codec/index.js';
import { Log } from '../../src/log/index.js';
import { logOptions, testBatch } from '../support/log-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

beforeAll(() => loadChecksum());

/** A batch of exactly `bytes` bytes (its metadata sized to fit). */
function batchOfBytes(bytes: number): Buffer {
  for (let metadata = 0; metadata < bytes; metadata++) {
    const batch = buildOffsetBatch(
      'group-b',
      [
        {
          tableId: 1,
          partitionId: null,
          bucketId: 0,
          offset: 1,
          leaderEpoch: -1,
          metadata: 'x'.repeat(metadata),
        },
      ],
      1_700_000_000_000,
    );
    if (batch.length === bytes) return batch;
    if (batch.length > bytes) break;
  }
  throw new Error(`no batch of ${bytes} bytes`);
}

/**
 * Batch 0 in a round of its own, then batches 1 and 2 in one round; batch 1 ends `zeros` bytes past
 * a sector boundary, and those bytes are zeroed (batch 2, whole, follows). Opened as after a crash
 * that left the store knowing only of batch 0.
 */
async function openWithZerosBefore(zeros: number): Promise<{ code?: string; end?: number }> {
  const dir = tempDir();
  const options = logOptions(dir, { segmentBytesMax: 1 << 20 });
  const { log } = await Log.open(options);
  const first = testBatch(0);
  expect(await log.append(first)).toBe(0);
  // Batch 1 starts after batch 0 and ends `zeros` bytes past the second sector boundary after it.
  const boundary = (Math.floor(first.length / 512) + 2) * 512;
  const damaged = batchOfBytes(boundary + zeros - first.length);
  expect(await Promise.all([log.append(damaged), log.append(testBatch(2))])).toEqual([1, 2]);
  await log.close();
  const file = path.join(
    dir,
    readdirSync(dir).find((f) => f.endsWith('.log'))!,
  );
  const bytes = readFileSync(file);
  expect(bytes.readUInt8(boundary + zeros + BATCH_MAGIC_POSITION), "batch 2's magic").not.toBe(0);
  bytes.fill(0, boundary, boundary + zeros);
  writeFileSync(file, bytes);
  try {
    const { log: reopened } = await Log.open(options, {
      fromLogOffset: 0,
      knownEnd: { logOffset: 1, exact: false },
    });
    const end = reopened.nextOffset;
    await reopened.close();
    return { end };
  } catch (error) {
    return { code: (error as { code?: string }).code };
  }
}

describe('a run of zeros before the next valid batch of a last round', () => {
  it('of a whole sector but its first 4 bytes (508) is a lost sector: the torn round is cut', async () => {
    expect(await openWithZerosBefore(508)).toEqual({ end: 1 });
  });

  it('a byte shorter (507) is not: the open refuses it as damage', async () => {
    expect(await openWithZerosBefore(507)).toEqual({ code: 'CORRUPT_MESSAGE' });
  });
});
