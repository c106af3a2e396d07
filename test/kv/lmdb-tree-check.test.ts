/**
 * The page-by-page check of an LMDB data file and the checksum of its structure: the check accepts
 * every file the store writes (its rejections of damaged files are exercised, in child processes, by
 * checkpoint-damage.test.ts); the checksum changes with any byte LMDB interprets that the page
 * checks cannot judge (a key), and ignores the bytes of values, which LMDB hands over uninterpreted.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadChecksum } from '../../src/codec/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { OffsetStore, type OffsetStoreOptions } from '../../src/index.js';
import { checkLmdbTrees, readLmdbMeta, type LmdbTreeCheck } from '../../src/kv/index.js';
import { applyHistory, generateHistory } from '../compaction/compaction-fixtures.js';
import { seededRandom, seedFrom } from '../support/seeded-random.js';
import { tempDir } from '../support/temp-dir.js';
import { PAGE_BYTES, firstOverflowRun, leftmostLeafPage, nodeOf } from './lmdb-pages.js';

beforeAll(() => loadChecksum());

const fs = new NodeFileSystem();

function options(dir: string): OffsetStoreOptions {
  return {
    dir,
    bucketCount: 1,
    segmentBytesMax: 2048,
    compaction: { strategy: 'checkpoint', intervalMs: 3_600_000 },
  };
}

async function check(dataPath: string): Promise<LmdbTreeCheck> {
  const file = await fs.open(dataPath, 'r');
  try {
    const sizeBytes = await file.sizeBytes();
    return await checkLmdbTrees(file, sizeBytes, await readLmdbMeta(file, sizeBytes));
  } finally {
    await file.close();
  }
}

describe('LMDB tree check', () => {
  it('accepts every file the store writes: many checkpoints, dropped ones, small and overflowing values', async () => {
    const seed = seedFrom('CHECKPOINT_WALK_SEED');
    const random = seededRandom(seed);
    const dir = tempDir();
    const store = await OffsetStore.open(options(dir));
    const dataPath = path.join(dir, 'buckets/000/checkpoint/data.mdb');
    for (let round = 0; round < 12; round++) {
      // Alternate many small groups (values inside leaf pages) and few large ones (overflow runs).
      const groups = round % 2 === 0 ? 200 : 6;
      const buckets = round % 2 === 0 ? 2 : 60;
      await applyHistory(
        store,
        generateHistory(Math.floor(random() * 2 ** 31), 150, groups, buckets),
      );
      await store.compact();
      const result = await check(dataPath);
      expect(
        result.treePages,
        `seed ${seed} (replay with CHECKPOINT_WALK_SEED=${seed}), round ${round}`,
      ).toBeGreaterThan(0);
    }
    await store.close();
  });

  it('checksums the bytes LMDB interprets: a changed key changes it, changed value bytes do not', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(options(dir));
    await applyHistory(store, generateHistory(8, 200, 8, 40));
    await store.close();
    const dataPath = path.join(dir, 'buckets/000/checkpoint/data.mdb');
    const original = readFileSync(dataPath);
    const sealed = await check(dataPath);
    expect(sealed.overflowRuns).toBeGreaterThan(0);

    const keyChanged = Buffer.from(original);
    const { keyEnd } = nodeOf(keyChanged, leftmostLeafPage(keyChanged), 0);
    keyChanged[keyEnd - 1] = keyChanged[keyEnd - 1]! ^ 0x01;
    writeFileSync(dataPath, keyChanged);
    expect((await check(dataPath)).checksum, 'a key byte changed').not.toBe(sealed.checksum);

    const valueChanged = Buffer.from(original);
    const valueByte = firstOverflowRun(valueChanged) * PAGE_BYTES + 100;
    valueChanged[valueByte] = valueChanged[valueByte]! ^ 0x01;
    writeFileSync(dataPath, valueChanged);
    expect((await check(dataPath)).checksum, 'a value byte changed').toBe(sealed.checksum);

    const runHeaderChanged = Buffer.from(original);
    const pageCountByte = firstOverflowRun(runHeaderChanged) * PAGE_BYTES + 20;
    runHeaderChanged[pageCountByte] = runHeaderChanged[pageCountByte]! ^ 0x01;
    writeFileSync(dataPath, runHeaderChanged);
    await expect(
      check(dataPath),
      'an overflow run header with the wrong page count',
    ).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        /overflow run at page \d+ \(\d+ pages, from node \d+ of page \d+\) has a header/,
      ),
    });
  });
});
