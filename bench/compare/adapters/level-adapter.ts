/**
 * An offset store on classic-level 3.0 (LevelDB) as a competent user would write it: binary keys
 * (groupId, tableId, partitionId, bucketId) (`partitionId` -1 for a non-partitioned table), binary
 * values (`offset-value.ts`), one `batch(ops, { sync: true })` per commit, `getSync` for a single
 * bucket and `getMany` (one native call on the libuv pool) for several.
 *
 * Durability: `sync: true` makes LevelDB fdatasync its write-ahead log before the batch resolves.
 * Batches run on the libuv thread pool and LevelDB merges concurrent writers into one log write and
 * one sync, so concurrent committers get some group commit for free.
 *
 * Expected order of magnitude on a VM disk: ~0.5-1 ms per durable batch, ~1-3 µs per `getSync`.
 *
 * Key bytes: | u8 groupId byte length | groupId UTF-8 | f64 BE tableId | f64 BE partitionId | u32 BE bucketId |
 * (group ids are at most 255 UTF-8 bytes, docs/api.md).
 */
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import type { BucketRef, CommittedOffset, OffsetCommit, OffsetStoreAdapter } from '../adapter.js';
import { decodeOffsetValue, encodeOffsetValue } from './offset-value.js';

type LevelDb = ClassicLevel<Buffer, Buffer>;

/** classic-level adapter; see the module header. */
export class LevelAdapter implements OffsetStoreAdapter {
  readonly name = 'classic-level';
  readonly durability = 'batch({ sync: true }): fdatasync of LevelDB log per batch';
  #db: LevelDb | undefined;

  async open(dir: string): Promise<void> {
    if (this.#db !== undefined) throw new Error('level adapter is already open');
    const db: LevelDb = new ClassicLevel<Buffer, Buffer>(join(dir, 'level'), {
      keyEncoding: 'buffer',
      valueEncoding: 'buffer',
    });
    await db.open();
    this.#db = db;
  }

  async commit(groupId: string, offsets: readonly OffsetCommit[]): Promise<void> {
    const db = this.#open();
    const commitTimestampMs = Date.now();
    const groupBytes = Buffer.from(groupId, 'utf8');
    const ops = offsets.map((o) => ({
      type: 'put' as const,
      key: keyOf(groupBytes, o),
      value: encodeOffsetValue(o.offset, o.leaderEpoch ?? -1, commitTimestampMs, o.metadata ?? ''),
    }));
    await db.batch(ops, { sync: true });
  }

  async fetch(groupId: string, buckets: readonly BucketRef[]): Promise<(CommittedOffset | null)[]> {
    const db = this.#open();
    const groupBytes = Buffer.from(groupId, 'utf8');
    if (buckets.length === 1) {
      const bucket = buckets[0]!;
      const value = db.getSync(keyOf(groupBytes, bucket));
      return [value === undefined ? null : decodeOffsetValue(bucket, value)];
    }
    const values = await db.getMany(buckets.map((bucket) => keyOf(groupBytes, bucket)));
    return buckets.map((bucket, i) => {
      const value = values[i];
      return value === undefined ? null : decodeOffsetValue(bucket, value);
    });
  }

  async close(): Promise<void> {
    const db = this.#db;
    this.#db = undefined;
    if (db !== undefined) await db.close();
  }

  #open(): LevelDb {
    if (this.#db === undefined) throw new Error('level adapter is not open');
    return this.#db;
  }
}

function keyOf(groupBytes: Buffer, bucket: BucketRef): Buffer {
  if (groupBytes.length > 255) throw new RangeError('groupId longer than 255 UTF-8 bytes');
  const key = Buffer.allocUnsafe(1 + groupBytes.length + 20);
  key[0] = groupBytes.length;
  groupBytes.copy(key, 1);
  let at = 1 + groupBytes.length;
  at = key.writeDoubleBE(bucket.tableId, at);
  at = key.writeDoubleBE(bucket.partitionId ?? -1, at);
  key.writeUInt32BE(bucket.bucketId, at);
  return key;
}
