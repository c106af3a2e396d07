/**
 * offset-store itself through its public API (docs/api.md): `OffsetStore.open({ dir,
 * durability: 'fsync' })`, `commitOffsets`, `fetchOffsets`, `close`. Nothing else is configured, so
 * the comparison measures the defaults a user gets.
 *
 * Durability: 'fsync' resolves a commit after fdatasync of its offsets-bucket's log; concurrent
 * commits to one offsets-bucket share one fdatasync (group commit).
 *
 * The harness loads this module with a dynamic import (`adapters/index.ts`), so the comparison still
 * runs the peers while `src/index.ts` is missing or does not load.
 *
 * Targets (docs/performance.md): >= 2.5x lmdb-js offsets/s on batched commits, >= 10x lmdb-js
 * commits/s with 64 concurrent committers, >= 3x lmdb-js on a one-bucket fetch, >= 10x per offset on
 * a 100-bucket fetch, <= 80 bytes of heap per live offset.
 */
import { OffsetStore } from '../../../src/index.js';
import type { BucketRef, CommittedOffset, OffsetCommit, OffsetStoreAdapter } from '../adapter.js';

/** offset-store adapter; see the module header. */
export class OffsetStoreAdapterImpl implements OffsetStoreAdapter {
  readonly name = 'offset-store';
  readonly durability = "durability 'fsync': fdatasync per group commit";
  #store: OffsetStore | undefined;

  async open(dir: string): Promise<void> {
    if (this.#store !== undefined) throw new Error('offset-store adapter is already open');
    this.#store = await OffsetStore.open({ dir, durability: 'fsync' });
  }

  // Plain pass-throughs (no extra async layer), so offset-store pays one promise per call like the
  // peers' async wrappers do.
  commit(groupId: string, offsets: readonly OffsetCommit[]): Promise<void> {
    return this.#open().commitOffsets(groupId, offsets as OffsetCommit[]);
  }

  fetch(groupId: string, buckets: readonly BucketRef[]): Promise<(CommittedOffset | null)[]> {
    return this.#open().fetchOffsets(groupId, buckets as BucketRef[]);
  }

  async close(): Promise<void> {
    const store = this.#store;
    this.#store = undefined;
    if (store !== undefined) await store.close();
  }

  #open(): OffsetStore {
    if (this.#store === undefined) throw new Error('offset-store adapter is not open');
    return this.#store;
  }
}
