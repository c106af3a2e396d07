/**
 * The default `due` rule of a strategy: a bucket is worth a background run once it has a sealed
 * segment and its estimated garbage ratio reaches `minDirtyRatio`, or its log passes `logBytesMax`.
 */
import type { BucketView } from '../strategy.js';

/** True when `view` has a sealed segment and is dirty enough (see the module comment). */
export function dueByGarbageRatio(view: BucketView): boolean {
  if (!view.segments.some((s) => s.sealed)) return false;
  if (view.logBytes > view.settings.logBytesMax) return true;
  return view.garbageRatioEstimate >= view.settings.minDirtyRatio;
}
