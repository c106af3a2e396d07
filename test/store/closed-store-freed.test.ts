/**
 * A closed store, once its caller lets go of it, is garbage: nothing process-wide (the logs'
 * turn-taking state, lock registries, caches) may keep it and its index alive. A service that
 * reopens its store after a fail-stop would otherwise hold two indexes, and one that closes its
 * store would keep the last one forever.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

it('a closed store that nobody references is garbage collected', async () => {
  const dir = tempDir();
  let finalized = false;
  const registry = new FinalizationRegistry(() => {
    finalized = true;
  });
  await (async () => {
    const store = await OffsetStore.open({ dir, compaction: { background: false } });
    registry.register(store, 'store');
    for (let round = 0; round < 3; round++)
      await Promise.all(
        Array.from({ length: 8 }, (_, g) =>
          store.commitOffsets(`group-${g}`, [{ tableId: 1, bucketId: 0, offset: round }]),
        ),
      );
    await store.close();
  })();
  for (let attempt = 0; attempt < 20 && !finalized; attempt++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  expect(finalized, 'the closed store is still reachable').toBe(true);
});
