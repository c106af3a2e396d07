/**
 * The built-in 'checkpoint' strategy: writes the materialized index to LMDB at log offset X (once
 * something was applied since the newest checkpoint) and deletes the segments wholly below X; when X
 * is the log end, the active segment is sealed and freed too, so a quiet bucket shrinks to its
 * checkpoint. It never rewrites, so it plans on the main thread and starts no worker.
 */
import type { CompactionStrategyDefinition } from '../strategy.js';

/** Checkpoints, then deletion of what they cover. */
export const checkpointStrategy: CompactionStrategyDefinition = {
  name: 'checkpoint',
  checkpoints: true,
  rewrites: false,
  due(view) {
    // Nothing new to checkpoint and no log left to free (a quiet bucket shrinks to nothing).
    if (view.batchesSinceCheckpoint === 0 && view.logBytes === 0) return false;
    if (view.logBytes > view.settings.logBytesMax) return true;
    return view.garbageRatioEstimate >= view.settings.minDirtyRatio;
  },
  plan() {
    return { checkpoint: true, deleteBelow: 'checkpoint' };
  },
};
