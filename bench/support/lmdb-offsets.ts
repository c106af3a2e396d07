/**
 * The lmdb-js peer: an offset store as a competent user would write it on lmdb-js, one entry per
 * committed offset. Key: the ordered-binary array [groupId, tableId, partitionId (-1 = null),
 * bucketId]. Value (binary, 20 bytes + metadata): offset u32 high, u32 low, leaderEpoch i32,
 * commitTimestampMs u32 high, u32 low, then UTF-8 metadata; the same fields offset-store keeps.
 *
 * Durability: the environment is opened with `overlappingSync: false`, so a commit returns (sync) or
 * resolves (async) only after LMDB's own fdatasync of that commit, like offset-store's 'fsync' mode.
 * (With lmdb-js's default overlapping sync a commit is visible before it is durable, and one would
 * have to await `db.flushed`.) `transactionSync` is one commit per call; the async `transaction`
 * lets lmdb-js batch the transactions queued together into one commit, its own group commit.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import type { BucketRef, CommittedOffset, OffsetCommit } from '../../src/index.js';

const HEADER_BYTES = 20;
const TWO_POW_32 = 2 ** 32;

function encodeValue(offset: number, leaderEpoch: number, commitTimestampMs: number, metadata: string): Buffer {
  const metadataBytes = metadata.length === 0 ? 0 : Buffer.byteLength(metadata, 'utf8');
  const buf = Buffer.allocUnsafe(HEADER_BYTES + metadataBytes);
  buf.writeUInt32LE(Math.floor(offset / TWO_POW_32), 0);
  buf.writeUInt32LE(offset % TWO_POW_32, 4);
  buf.writeInt32LE(leaderEpoch, 8);
  buf.writeUInt32LE(Math.floor(commitTimestampMs / TWO_POW_32), 12);
  buf.writeUInt32LE(commitTimestampMs % TWO_POW_32, 16);
  if (metadataBytes > 0) buf.write(metadata, HEADER_BYTES, 'utf8');
  return buf;
}

function decodeValue(bucket: BucketRef, buf: Buffer): CommittedOffset {
  return {
    tableId: bucket.tableId,
    partitionId: bucket.partitionId ?? null,
    bucketId: bucket.bucketId,
    offset: buf.readUInt32LE(0) * TWO_POW_32 + buf.readUInt32LE(4),
    leaderEpoch: buf.readInt32LE(8),
    commitTimestampMs: buf.readUInt32LE(12) * TWO_POW_32 + buf.readUInt32LE(16),
    metadata: buf.length === HEADER_BYTES ? '' : buf.toString('utf8', HEADER_BYTES),
  };
}

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
    return new LmdbOffsets(open({ path: dir, overlappingSync: false, noSync: durability === 'os', maxDbs: 4 }));
  }

  #put(groupId: string, offsets: readonly OffsetCommit[], nowMs: number): void {
    for (const o of offsets) {
      this.#db.put([groupId, o.tableId, o.partitionId ?? -1, o.bucketId], encodeValue(o.offset, o.leaderEpoch ?? -1, nowMs, o.metadata ?? ''));
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
      results[i] = value === undefined ? null : decodeValue(b, value);
    }
    return results;
  }

  /** Closes the environment. */
  close(): Promise<void> {
    return this.#root.close();
  }
}
