/**
 * Store directories for the admin and CLI tests, built through the public API: a seeded store with
 * known committed offsets spread over several segments, a store whose group has a member persisted
 * in its snapshot, and helpers to snapshot and damage segment files.
 */
import { cpSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { beforeAll } from 'vitest';
import * as path from 'node:path';
import { dumpLog, type DumpBatchEntry } from '../../src/admin/index.js';
import { ManualClock, OffsetStore } from '../../src/index.js';
import { settleGroup } from '../support/settle-group.js';
import { fileTempDir, tempDir } from '../support/temp-dir.js';

/** Commit time of the seeded store's manual clock. */
export const SEED_TIME_MS = 1_700_000_000_000;

/** The committed offsets `seedStore` leaves, per group. */
export const SEEDED = {
  orders: [
    { tableId: 1, partitionId: null, bucketId: 0, offset: 1000 },
    { tableId: 1, partitionId: null, bucketId: 1, offset: 1001 },
    { tableId: 1, partitionId: null, bucketId: 2, offset: 1002 },
    { tableId: 1, partitionId: null, bucketId: 3, offset: 1003 },
    { tableId: 2, partitionId: 7, bucketId: 0, offset: 42 },
  ],
  billing: [
    { tableId: 1, partitionId: null, bucketId: 0, offset: 5 },
    { tableId: 1, partitionId: null, bucketId: 1, offset: 6 },
  ],
};

/**
 * Creates a store in `dir` (4 offsets-buckets, 1 KiB segments so logs have several), commits ten
 * rounds of offsets for group `orders` (the last with metadata `host-a` on table 1), one partitioned
 * bucket, and two buckets of group `billing`; closes it.
 */
export async function seedStore(dir: string): Promise<void> {
  const store = await OffsetStore.open({
    dir,
    bucketCount: 4,
    segmentBytesMax: 1024,
    clock: new ManualClock(SEED_TIME_MS),
    compaction: { background: false },
  });
  try {
    for (let round = 1; round <= 10; round++) {
      await store.commitOffsets(
        'orders',
        [0, 1, 2, 3].map((b) => ({
          tableId: 1,
          bucketId: b,
          offset: round * 100 + b,
          metadata: round === 10 ? 'host-a' : '',
        })),
      );
    }
    await store.commitOffsets('orders', [{ tableId: 2, partitionId: 7, bucketId: 0, offset: 42 }]);
    await store.commitOffsets('billing', SEEDED.billing);
  } finally {
    await store.close();
  }
}

/**
 * Creates a store in `dir` where group `busy` has one member (persisted in the group snapshot, so it
 * is restored on every open) owning table 1's 4 buckets, and a commit of bucket 0 at offset 5.
 */
export async function seedStoreWithMember(dir: string): Promise<void> {
  const clock = new ManualClock(SEED_TIME_MS);
  const store = await OffsetStore.open({
    dir,
    bucketCount: 4,
    clock,
    compaction: { strategy: 'none' },
  });
  try {
    store.setTableLayout(1, { bucketCount: 4 });
    const member = await store.joinGroup('busy', {
      subscribedTableIds: [1],
      sessionTimeoutMs: 60_000,
    });
    await settleGroup([member], { clock, describe: (groupId) => store.describeGroup(groupId) });
    await member.commit([{ tableId: 1, bucketId: 0, offset: 5 }]);
  } finally {
    await store.close();
  }
}

/** Every file under `dir` (relative path -> bytes), LOCK excluded. */
export function snapshotFiles(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (current: string): void => {
    for (const name of readdirSync(current)) {
      const full = path.join(current, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name !== 'LOCK') files.set(path.relative(dir, full), readFileSync(full));
    }
  };
  walk(dir);
  return files;
}

/** The batches of offsets-bucket `bucket`'s log, in log order, as `log dump` gives them. */
export async function dumpedBatches(dir: string, bucket: number): Promise<DumpBatchEntry[]> {
  const batches: DumpBatchEntry[] = [];
  await dumpLog(dir, bucket, {}, (entry) => {
    if (entry.kind === 'batch') batches.push({ ...entry });
  });
  return batches;
}

/** The segment files of offsets-bucket `bucket`, oldest first, as absolute paths. */
export function segmentPaths(dir: string, bucket: number): string[] {
  const bucketDir = path.join(dir, 'buckets', String(bucket).padStart(3, '0'));
  return readdirSync(bucketDir)
    .filter((n) => n.endsWith('.log'))
    .sort()
    .map((n) => path.join(bucketDir, n));
}

/**
 * The stores a test file of the command line reads and copies: a seeded store and one with a live
 * member, made once before the file's tests (beforeAll), and `copy()`, a fresh copy of the seeded
 * one for a test to change.
 */
export function seededStores(): { seeded: string; withMember: string; copy: () => string } {
  const stores = {
    seeded: '',
    withMember: '',
    copy: (): string => {
      const dir = tempDir('offset-store-cli-');
      cpSync(stores.seeded, dir, { recursive: true });
      return dir;
    },
  };
  beforeAll(async () => {
    stores.seeded = fileTempDir('offset-store-cli-');
    stores.withMember = fileTempDir('offset-store-cli-');
    await Promise.all([seedStore(stores.seeded), seedStoreWithMember(stores.withMember)]);
  });
  return stores;
}
