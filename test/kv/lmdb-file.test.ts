/**
 * Reading an LMDB data file through the FileSystem port: the page-by-page check accepts every file
 * the store writes (its rejections of damaged files are exercised, in child processes, by
 * checkpoint-damage.test.ts), and the chunked checksum sees a change in any chunk.
 */
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadChecksum } from '../../src/codec/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { OffsetStore } from '../../src/index.js';
import { checkLmdbTrees, lmdbFileChecksum, readLmdbMeta } from '../../src/kv/index.js';
import { applyHistory, generateHistory } from '../compaction/compaction-fixtures.js';
import { seededRandom, seedFrom } from '../support/seeded-random.js';
import { tempDir } from '../support/temp-dir.js';

beforeAll(() => loadChecksum());

const fs = new NodeFileSystem();

describe('LMDB data file', () => {
  it('accepts every file the store writes: many checkpoints, dropped ones, small and overflowing values', async () => {
    const seed = seedFrom('CHECKPOINT_WALK_SEED');
    const random = seededRandom(seed);
    const dir = tempDir();
    const store = await OffsetStore.open({ dir, bucketCount: 1, segmentBytesMax: 2048, compaction: { strategy: 'checkpoint', intervalMs: 3_600_000 } });
    const dataPath = path.join(dir, 'buckets/000/checkpoint/data.mdb');
    let walked = 0;
    for (let round = 0; round < 12; round++) {
      // Alternate many small groups (values in leaf pages) and few large ones (overflow pages).
      const groups = round % 2 === 0 ? 200 : 6;
      const buckets = round % 2 === 0 ? 2 : 60;
      await applyHistory(store, generateHistory(Math.floor(random() * 2 ** 31), 150, groups, buckets));
      await store.compact();
      const file = await fs.open(dataPath, 'r');
      try {
        const sizeBytes = await file.sizeBytes();
        const meta = await readLmdbMeta(file, sizeBytes);
        await expect(checkLmdbTrees(file, sizeBytes, meta), `seed ${seed} (replay with CHECKPOINT_WALK_SEED=${seed}), round ${round}`).resolves.toBeUndefined();
        walked++;
      } finally {
        await file.close();
      }
    }
    await store.close();
    expect(walked).toBe(12);
  });

  it('checksums the file in chunks: a change in any chunk changes the checksum, a shorter file is damage', async () => {
    const dir = tempDir();
    const filePath = path.join(dir, 'data.mdb');
    const random = seededRandom(11);
    const bytes = Buffer.from(Array.from({ length: 2.5 * 2 ** 20 }, () => Math.floor(random() * 256)));
    writeFileSync(filePath, bytes);
    const checksumOf = async (sizeBytes = bytes.length): Promise<number> => {
      const file = await fs.open(filePath, 'r');
      try {
        return await lmdbFileChecksum(file, sizeBytes);
      } finally {
        await file.close();
      }
    };
    const original = await checksumOf();
    for (const position of [0, 2 ** 20 - 1, 2 ** 20, 2 * 2 ** 20 + 17, bytes.length - 1]) {
      bytes[position] = bytes[position]! ^ 0x01;
      writeFileSync(filePath, bytes);
      expect(await checksumOf(), `byte ${position} flipped`).not.toBe(original);
      bytes[position] = bytes[position]! ^ 0x01;
    }
    writeFileSync(filePath, bytes);
    expect(await checksumOf()).toBe(original);
    await expect(checksumOf(bytes.length + 1)).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
  });
});
