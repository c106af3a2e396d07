/**
 * The manifest as a crash leaves it: a store that was opened records its logs' ends as lower
 * bounds (endExact false) once it has recovered, so a batch found past an end recorded exactly is
 * refused as missing data elsewhere. Tests that add batches to a store closed cleanly mark it so
 * first.
 */
import { NodeFileSystem } from '../../src/io/index.js';
import { ManifestFile, type StoreManifest } from '../../src/log/index.js';

/** Marks the store in `dir` (closed) as a crash would have left it, then applies `edit`, if any. */
export async function markCrashed(
  dir: string,
  edit?: (manifest: StoreManifest) => void,
): Promise<void> {
  const manifest = await ManifestFile.openOrCreate(new NodeFileSystem(), dir, {
    bucketCount: 1,
    nowMs: 0,
    compactionStrategy: 'log-cleaner',
  });
  await manifest.update((m) => {
    for (const b of m.buckets) b.endExact = false;
    edit?.(m);
  });
}
