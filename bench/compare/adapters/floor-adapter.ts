/**
 * The physical floor of a durable commit on this disk, in the same run: no store at all, just the
 * bytes offset-store would write for each commit (a KvRecordBatch of the same records, encoded once
 * per size and reused, so no encoding is timed), written with `writeSync` and made durable with
 * `fdatasyncSync` at the end of a preallocated file. Commits pending together share one write and
 * one fdatasync (a perfect group commit on one file), so for concurrent committers this is the best
 * any single-log store could do; for one committer it is one write+fdatasync per commit.
 *
 * It runs only the commit workloads (a) and (b); it answers fetches with nulls and is not a store.
 * offset-store's result divided by this one is its fraction of the floor.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildOffsetBatch, loadChecksum } from '../../../src/codec/index.js';
import type { BucketRef, CommittedOffset, OffsetCommit, OffsetStoreAdapter } from '../adapter.js';

/** Bytes preallocated with zeros at open; writes wrap around inside them. */
const FILE_BYTES = 256 * 1024 * 1024;

/** The floor "adapter"; see the module header. */
export class FloorAdapter implements OffsetStoreAdapter {
  readonly name = 'write+fdatasync floor';
  readonly durability =
    'writeSync + fdatasyncSync of the same bytes, one per group of pending commits';
  #fd: number | undefined;
  #position = 0;
  /** An encoded batch per (group id length, offsets) shape: the bytes a commit of that shape writes. */
  readonly #batches = new Map<string, Buffer>();
  #pending: { bytes: Buffer; resolve: () => void; reject: (error: unknown) => void }[] = [];
  #scheduled = false;

  async open(dir: string): Promise<void> {
    await loadChecksum();
    this.#fd = fs.openSync(path.join(dir, 'floor.log'), 'w+');
    const zeros = Buffer.alloc(8 * 1024 * 1024);
    for (let at = 0; at < FILE_BYTES; at += zeros.length)
      fs.writeSync(this.#fd, zeros, 0, zeros.length, at);
    fs.fsyncSync(this.#fd);
  }

  commit(groupId: string, offsets: readonly OffsetCommit[]): Promise<void> {
    const key = `${Buffer.byteLength(groupId)}:${offsets.length}:${offsets.reduce((n, o) => n + (o.metadata?.length ?? 0), 0)}`;
    let bytes = this.#batches.get(key);
    if (bytes === undefined) {
      bytes = buildOffsetBatch(
        groupId,
        offsets.map((o) => ({
          tableId: o.tableId,
          partitionId: o.partitionId ?? null,
          bucketId: o.bucketId,
          offset: o.offset,
          leaderEpoch: o.leaderEpoch ?? -1,
          metadata: o.metadata ?? '',
        })),
        Date.now(),
      );
      this.#batches.set(key, bytes);
    }
    const written = bytes;
    return new Promise((resolve, reject) => {
      this.#pending.push({ bytes: written, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const taken = this.#pending;
    this.#pending = [];
    try {
      const buffers = taken.map((p) => p.bytes);
      let total = 0;
      for (const b of buffers) total += b.length;
      if (this.#position + total > FILE_BYTES) this.#position = 0;
      fs.writevSync(this.#fd!, buffers, this.#position);
      this.#position += total;
      fs.fdatasyncSync(this.#fd!);
      for (const p of taken) p.resolve();
    } catch (error) {
      for (const p of taken) p.reject(error);
    }
  }

  async fetch(
    _groupId: string,
    buckets: readonly BucketRef[],
  ): Promise<(CommittedOffset | null)[]> {
    return buckets.map(() => null);
  }

  async close(): Promise<void> {
    if (this.#fd !== undefined) fs.closeSync(this.#fd);
    this.#fd = undefined;
  }
}
