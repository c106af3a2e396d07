/**
 * Compaction under SIGKILL: a child compacts a seeded history in a loop (log cleaner, checkpoints, or
 * converting between them) and is killed at a random moment, COMPACTION_CRASH_ROUNDS times (default 6).
 * After every kill, log verify finds nothing corrupt, the reopened store holds exactly the history's
 * state, and no temporary file is left. COMPACTION_CRASH_SEED replays a run.
 */
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyLog } from '../../src/admin/index.js';
import { OffsetStore, type CompactionStrategy } from '../../src/index.js';
import {
  compactionOptions,
  generateHistory,
  leftoverFiles,
  modelOf,
  stateOf,
} from '../compaction/compaction-fixtures.js';
import { exited, forkTs } from '../support/fork-child.js';
import { seededRandom, seedFrom } from '../support/seeded-random.js';
import { tempDir } from '../support/temp-dir.js';

const rounds = Number(process.env.COMPACTION_CRASH_ROUNDS ?? 6);
const CHILD = path.join(import.meta.dirname, 'compaction-child.ts');

/** Options to reopen with: for 'convert', the store's own strategy (whichever the last conversion recorded). */
function reopenOptions(dir: string, strategy: CompactionStrategy | 'convert') {
  const options = compactionOptions(dir, strategy === 'convert' ? 'log-cleaner' : strategy, {
    bucketCount: 1,
    segmentBytesMax: 1024,
  });
  return strategy === 'convert'
    ? { ...options, compaction: { ...options.compaction, strategy: undefined } }
    : options;
}

describe.each(['log-cleaner', 'incremental', 'checkpoint', 'convert'] as const)(
  'compaction crash safety (%s)',
  (strategy) => {
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
          child.once('exit', (code) =>
            reject(new Error(`${context}: child exited early with ${code}`)),
          );
        });
        await new Promise((r) => setTimeout(r, random() * 1500));
        child.kill('SIGKILL');
        await exited(child);
        // log verify says what open will do: nothing a crash leaves is corruption.
        const verified = await verifyLog(dir);
        expect(
          verified.problems.filter((p) => p.kind === 'corrupt'),
          context,
        ).toEqual([]);
        const store = await OffsetStore.open(reopenOptions(dir, strategy));
        const state = await stateOf(store);
        state.delete('heartbeat-group');
        expect(state, context).toEqual(expected);
        expect(leftoverFiles(dir), context).toEqual([]);
        await store.close();
      }
      const store = await OffsetStore.open(reopenOptions(dir, strategy));
      await store.compact();
      const state = await stateOf(store);
      state.delete('heartbeat-group');
      expect(state).toEqual(expected);
      await store.close();
    });
  },
);
