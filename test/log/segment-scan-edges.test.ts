/**
 * Segment scanning and tail-damage classification at their edges: a batch below its segment's base
 * offset is out of order even in the first segment; valid batches after a damaged one that the
 * commit journal covers up to exactly the last of them are the journal's ('journaled'); and a
 * journal repair keeps only batches whose log offsets follow one another, never a run with a gap.
 */
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOffsetBatch, loadChecksum, sealBatch } from '../../src/codec/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { segmentFileName } from '../../src/log/index.js';
import { classifyTailDamage, scanSegment } from '../../src/log/segment-scanner.js';
import { tempDir } from '../support/temp-dir.js';

beforeAll(() => loadChecksum());

const fs = new NodeFileSystem();
const LIMITS = { batchBytesMax: 1 << 20, flushBytesMax: 1 << 20 };

function batchAt(logOffset: number): Buffer {
  const batch = buildOffsetBatch(
    'g',
    [
      {
        tableId: 1,
        partitionId: null,
        bucketId: logOffset,
        offset: 7,
        leaderEpoch: 0,
        metadata: '',
      },
    ],
    1,
  );
  sealBatch(batch, logOffset);
  return batch;
}

function segmentFile(baseOffset: number, bytes: Buffer): string {
  const file = path.join(tempDir(), segmentFileName(baseOffset));
  writeFileSync(file, bytes);
  return file;
}

/** A damaged batch (100 bytes of garbage, log offset 0) followed by batches of `logOffsets`. */
function damagedThen(logOffsets: number[]): { file: string; bytes: number } {
  const garbage = Buffer.alloc(100, 0xab);
  const batches = logOffsets.map(batchAt);
  const bytes = Buffer.concat([garbage, ...batches]);
  return { file: segmentFile(0, bytes), bytes: bytes.length };
}

describe('segment scan edges', () => {
  it('refuses a batch below the base offset its file is named after, in the first segment too', async () => {
    const batch = batchAt(5);
    const options = { batchBytesMax: LIMITS.batchBytesMax, previousLogOffset: -1 };
    const below = await scanSegment(fs, segmentFile(10, batch), { ...options, baseOffset: 10 });
    expect(below).toMatchObject({ validBytes: 0, batchCount: 0 });
    expect(below.damage).toMatchObject({ position: 0, kind: 'invalid' });
    const at = await scanSegment(fs, segmentFile(5, batch), { ...options, baseOffset: 5 });
    expect(at).toMatchObject({ validBytes: batch.length, batchCount: 1, lastLogOffset: 5 });
    expect(at.damage).toBeUndefined();
  });

  it('takes damage as journaled when the journal covers exactly up to the last valid batch after it', async () => {
    const { file, bytes } = damagedThen([1, 2]);
    expect(
      await classifyTailDamage(fs, file, bytes, 0, -1, { ...LIMITS, journalCoversTo: 2 }),
    ).toEqual({ kind: 'journaled', batchesAfter: 2 });
    expect(
      await classifyTailDamage(fs, file, bytes, 0, -1, { ...LIMITS, journalCoversTo: 1 }),
    ).toMatchObject({ kind: 'corrupt' });
  });

  it('repairs from the journal only a run of batches whose log offsets follow one another', async () => {
    const contiguous = damagedThen([1, 2]);
    expect(
      await classifyTailDamage(fs, contiguous.file, contiguous.bytes, 0, -1, {
        ...LIMITS,
        journalRunBytes: [100],
      }),
    ).toMatchObject({ kind: 'journal-repair', kept: { first: 1, last: 2 } });
    const gap = damagedThen([1, 3]);
    expect(
      await classifyTailDamage(fs, gap.file, gap.bytes, 0, -1, {
        ...LIMITS,
        journalRunBytes: [100],
      }),
    ).toMatchObject({ kind: 'corrupt' });
  });
});
