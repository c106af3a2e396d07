/**
 * The contract every store in the comparison implements: an "offset store on X" as a competent user
 * would write it, reduced to what the workloads exercise (open, commit, fetch, close).
 *
 * The record shapes mirror the public API (docs/api.md) (`BucketRef`, `OffsetCommit`, `CommittedOffset`) so the
 * offset-store adapter is a thin pass-through and the peers store exactly the same fields: committed
 * offset, leader epoch, commit timestamp and metadata per (groupId, tableId, partitionId, bucketId).
 *
 * Durability contract: `commit()` resolves only after the commit is on stable storage (one device
 * flush per commit, or per group of concurrent commits where the store batches them). Each adapter
 * states how it achieves that in `durability`; `verify-durability.ts` checks it with strace.
 */

/** A bucket of a user table; `partitionId` null (or omitted) for a non-partitioned table. */
export interface BucketRef {
  tableId: number;
  partitionId?: number | null;
  bucketId: number;
}

/** One offset to commit: the next offset the group will read in the bucket. */
export interface OffsetCommit extends BucketRef {
  offset: number;
  leaderEpoch?: number;
  metadata?: string;
}

/** A committed offset as fetched back. */
export interface CommittedOffset extends BucketRef {
  offset: number;
  leaderEpoch: number;
  metadata: string;
  commitTimestampMs: number;
}

/** An offset store under comparison. One instance is opened on one directory at a time. */
export interface OffsetStoreAdapter {
  /** Row label in reports, naming the library and the write call used. */
  readonly name: string;
  /** How a commit is made durable, printed in every result row. */
  readonly durability: string;
  /** Opens (creating if needed) the store under `dir`, an existing directory owned by this adapter. */
  open(dir: string): Promise<void>;
  /** Commits `offsets` of `groupId` atomically; resolves once durable. */
  commit(groupId: string, offsets: readonly OffsetCommit[]): Promise<void>;
  /** One result per requested bucket, null where nothing is committed. */
  fetch(groupId: string, buckets: readonly BucketRef[]): Promise<(CommittedOffset | null)[]>;
  /** Flushes and releases the store; the instance may be opened again afterwards. */
  close(): Promise<void>;
}

/** A named way to create an adapter; the harness creates a fresh instance per workload. */
export interface AdapterSpec {
  /** Stable id used on the command line, in child processes and in the JSON output. */
  readonly id: string;
  /** Creates an unopened adapter. */
  create(): OffsetStoreAdapter;
  /**
   * Set for a second write mode of the same library (lmdb-js async `transaction`): it runs only the
   * write workloads, since its reads are the base adapter's reads.
   */
  readonly variantOf?: string;
  /**
   * Set for the physical floor (adapters/floor-adapter.ts): it writes the same bytes but keeps no
   * state, so it runs only the workloads that measure commits (`Workload.runsFloor`) and answers no
   * fetches.
   */
  readonly writeOnly?: boolean;
}

/** Id of the store the comparison is about; every other adapter is a peer. */
export const SUBJECT_ID = 'offset-store';
