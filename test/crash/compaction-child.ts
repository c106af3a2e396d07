/**
 * Crash-test child: opens a store (log-cleaner or checkpoint strategy), applies a seeded history
 * when asked, then compacts in a loop until killed. With strategy 'convert', the store is converted
 * between checkpoints and the log cleaner and back in the loop. argv: dir, strategy, history seed,
 * apply (0/1).
 */
import { OffsetStore, type CompactionStrategy } from '../../src/index.js';
import {
  applyHistory,
  compactionOptions,
  generateHistory,
} from '../compaction/compaction-fixtures.js';

const [dir, strategy, seed, apply] = process.argv.slice(2);
const converting = strategy === 'convert';
const options = compactionOptions(
  dir!,
  converting ? 'log-cleaner' : (strategy as CompactionStrategy),
  { bucketCount: 1, segmentBytesMax: 1024 },
);
// Converting, the store's own strategy is whichever the last conversion recorded.
const store = await OffsetStore.open(
  converting ? { ...options, compaction: { ...options.compaction, strategy: undefined } } : options,
);
if (apply === '1') await applyHistory(store, generateHistory(Number(seed), 600, 20, 8));
process.send!({ type: 'compacting' });
for (let i = 0; ; i++) {
  if (converting) await store.convertCompaction(i % 2 === 0 ? 'checkpoint' : 'log-cleaner');
  await store.compact();
  // Keep the checkpoint strategy busy too: it only writes when something new was applied.
  await store.commitOffsets('heartbeat-group', [{ tableId: 99, bucketId: 0, offset: i }]);
}
