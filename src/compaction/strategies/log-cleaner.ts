/**
 * The built-in 'log-cleaner' strategy: the whole-log cleaner. Each run rewrites every sealed segment
 * as one group (merged into outputs of up to segmentBytesMax), with a key map of the whole log, so
 * the sealed part of the log shrinks to about its live records; tombstones go once they are older
 * than deleteRetentionMs. Simple and thorough, and it rewrites segments that hold no garbage at all.
 *
 * State: `{ cleanedBelow }`, the log offset after the last sealed batch of the last run: a background
 * pass is due only once a segment sealed after it exists (and the garbage ratio rule holds).
 */
import type { CompactionStrategyDefinition } from '../strategy.js';
import { dueByGarbageRatio } from './garbage-ratio.js';

function cleanedBelow(state: unknown): number {
  const value = (state as { cleanedBelow?: unknown } | undefined)?.cleanedBelow;
  return typeof value === 'number' ? value : -1;
}

/** The whole-log cleaner. */
export const logCleanerStrategy: CompactionStrategyDefinition = {
  name: 'log-cleaner',
  due(view) {
    const sealed = view.segments.filter((s) => s.sealed);
    if (sealed.length === 0 || sealed.at(-1)!.lastLogOffset < cleanedBelow(view.state))
      return false;
    return dueByGarbageRatio(view);
  },
  plan(view) {
    const sealed = view.segments.filter((s) => s.sealed);
    if (sealed.length === 0) return null;
    return {
      rewrite: [sealed.map((s) => s.baseOffset)],
      mapFrom: sealed[0]!.baseOffset,
      state: { cleanedBelow: sealed.at(-1)!.lastLogOffset + 1 },
    };
  },
};
