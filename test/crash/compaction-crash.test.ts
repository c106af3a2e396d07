import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OffsetStore, type CompactionStrategy } from '../../src/index.js';
import { compactionOptions, generateHistory, leftoverFiles, modelOf, stateOf } from '../compaction/compaction-fixtures.js';
import { exited, forkTs } from '../support/fork-child.js';
import { seededRandom, seedFrom } from '../support/seeded-random.js';
import { tempDir } from '../support/temp-dir.js';

const rounds = Number(process.env.COMPACTION_CRASH_ROUNDS ?? 6);
const CHILD = path.join(import.meta.dirname, 'compaction-child.ts');

describe.each(['log-cleaner', 'checkpoint'] as CompactionStrategy[])('compaction crash safety (%s)', (strategy) => {
  it(`keeps the state through ${rounds} SIGKILLs during compaction, leaving no temporary files`, async () => {
    const seed = seedFrom('COMPACTION_CRASH_SEED');
    const random = seededRandom(seed);
    const dir = tempDir();
    const expected = modelOf(generateHistory(seed, 600, 20, 8));
    for (let round = 0; round < rounds; round++) {
      const context = `seed ${seed} (replay with COMPACTION_CRASH_SEED=${seed}), round ${round}`;
      const child = forkTs(CHILD, [dir, strategy, String(seed), round === 0 ? '1' : '0']);
      await new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) => reject(new Error(`${context}: child exited early with ${code}`)));
      });
      await new Promise((r) => setTimeout(r, random() * 1500));
      child.kill('SIGKILL');
      await exited(child);
      const store = await OffsetStore.open(compactionOptions(dir, strategy, { bucketCount: 1, segmentBytesMax: 1024 }));
      const state = await stateOf(store);
      state.delete('heartbeat-group');
      expect(state, context).toEqual(expected);
      expect(leftoverFiles(dir), context).toEqual([]);
      await store.close();
    }
    const store = await OffsetStore.open(compactionOptions(dir, strategy, { bucketCount: 1, segmentBytesMax: 1024 }));
    await store.compact();
    const state = await stateOf(store);
    state.delete('heartbeat-group');
    expect(state).toEqual(expected);
    await store.close();
  });
});
