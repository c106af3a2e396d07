/**
 * The lmdb-js peer: an offset store as a competent user would write it on lmdb-js, one entry per
 * committed offset. Key: the ordered-binary array [groupId, tableId, partitionId (-1 = null),
 * bucketId]. Value: the comparison adapters' encoding (bench/compare/adapters/offset-value.ts), the
 * same fields offset-store keeps.
 *
 * Durability: the environment is opened with `overlappingSync: false`, so a commit returns (sync) or
 * resolves (async) only after LMDB's own fdatasync of that commit, like offset-store's 'fsync' mode.
 * (With lmdb-js's default overlapping sync a commit is visible before it is durable, and one would
 * have to await `db.flushed`.) `transactionSync` is one commit per call; the async `transaction`
 * lets lmdb-js batch the transactions queued together into one commit, its own group commit.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import type { BucketRef, CommittedOffset, OffsetCommit } from '../../src/index.js';
import { decodeOffsetValue, encodeOffsetValue } from '../compare/adapters/offset-value.js';

/** An offset store on lmdb-js. */
export class LmdbOffsets {
  readonly #root: RootDatabase;
  readonly #db: Database<Buffer, (string | number)[]>;

  private constructor(root: RootDatabase) {
    this.#root = root;
    this.#db = root.openDB<Buffer, (string | number)[]>({ name: 'offsets', encoding: 'binary' });
  }

  /** Opens (creating) the environment in `dir`; 'os' turns LMDB's syncs off (for fast loading). */
  static open(dir: string, durability: 'fsync' | 'os' = 'fsync'): LmdbOffsets {
    return new LmdbOffsets(
      open({ path: dir, overlappingSync: false, noSync: durability === 'os', maxDbs: 4 }),
    );
  }

  #put(groupId: string, offsets: readonly OffsetCommit[], nowMs: number): void {
    for (const o of offsets) {
      this.#db.put(
        [groupId, o.tableId, o.partitionId ?? -1, o.bucketId],
        encodeOffsetValue(o.offset, o.leaderEpoch ?? -1, nowMs, o.metadata ?? ''),
      );
    }
  }

  /** One synchronous, durable transaction per commit (`transactionSync`). */
  commitSync(groupId: string, offsets: readonly OffsetCommit[]): void {
    const nowMs = Date.now();
    this.#db.transactionSync(() => this.#put(groupId, offsets, nowMs));
  }

  /** One async transaction per commit (`transaction`); lmdb-js commits queued ones together. */
  commitAsync(groupId: string, offsets: readonly OffsetCommit[]): Promise<unknown> {
    const nowMs = Date.now();
    return this.#db.transaction(() => this.#put(groupId, offsets, nowMs));
  }

  /** One `getBinary` per bucket, decoded; null where nothing is committed. */
  fetch(groupId: string, buckets: readonly BucketRef[]): (CommittedOffset | null)[] {
    const results: (CommittedOffset | null)[] = new Array(buckets.length);
    for (let i = 0; i < buckets.length; i++) {
      const b = buckets[i]!;
      const value = this.#db.getBinary([groupId, b.tableId, b.partitionId ?? -1, b.bucketId]);
      results[i] = value === undefined ? null : decodeOffsetValue(b, value);
    }
    return results;
  }

  /** Closes the environment. */
  close(): Promise<void> {
    return this.#root.close();
  }
}
