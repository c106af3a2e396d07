/**
 * Changes made without a member (a commit, an offsets reset, an offsets deletion) are allowed by
 * what the group's membership is; a membership change is durable only once its group snapshot is,
 * and snapshots of one group are written one after another (group-committed). Such a change must
 * therefore reach the log after the snapshot of every membership change it saw: otherwise a crash
 * between the two keeps the change and loses the snapshot, and after recovery the member it saw
 * gone is back beside offsets committed, reset or deleted only because it was gone (a deleted
 * offset of a bucket the member then owns again sends it back to its reset policy).
 */
import { describe, expect, it } from 'vitest';
import { ManualClock, type OffsetStore } from '../../src/index.js';
import { dumpLog, type DumpRecordEntry } from '../../src/admin/index.js';
import { tempDir } from '../support/temp-dir.js';
import { HeldDatasyncFileSystem, openStore } from './store-fixtures.js';

const T0 = 1_700_000_000_000;

/** Every record of the group's offsets-bucket (one bucket here), in log order. */
async function records(dir: string, groupId: string): Promise<DumpRecordEntry[]> {
  const found: DumpRecordEntry[] = [];
  await dumpLog(dir, 0, { records: true }, (entry) => {
    if (entry.kind === 'record' && entry.groupId === groupId) found.push(entry);
  });
  return found;
}

/**
 * Group g has an offset of bucket 0; member A joins (table 1), changes its subscription, whose snapshot
 * write is held in fdatasync, then leaves: the snapshot that records the leave waits behind the held
 * one, not yet in the log. Resolves with the two heartbeats still pending.
 */
async function leaveQueuedBehindAWrite(
  store: OffsetStore,
  fs: HeldDatasyncFileSystem,
): Promise<Promise<unknown>[]> {
  await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 5 }]);
  const a = await store.heartbeat('g', { memberEpoch: 0, subscribedTableIds: [1] });
  fs.holding = true;
  const changed = store.heartbeat('g', {
    memberId: a.memberId,
    memberEpoch: a.memberEpoch,
    subscribedTableIds: [1, 2],
  });
  await fs.heldCount(1);
  const left = store.heartbeat('g', { memberId: a.memberId, memberEpoch: -1 });
  return [changed, left];
}

/** Lets the held fdatasync and every later one through. */
function release(fs: HeldDatasyncFileSystem): void {
  fs.holding = false;
  fs.releaseOne();
}

/** The group's records in log order, each named by what it is. */
async function story(dir: string): Promise<string[]> {
  return (await records(dir, 'g')).map((r) =>
    r.recordType === 'group-snapshot'
      ? r.snapshot === null
        ? 'group deleted'
        : (r.snapshot as { members?: unknown[] }).members?.length === 0
          ? 'snapshot without members'
          : 'snapshot with members'
      : r.tombstone
        ? `delete ${r.bucketId}`
        : `commit ${r.bucketId}=${r.offset}`,
  );
}

async function setUp(): Promise<{
  dir: string;
  fs: HeldDatasyncFileSystem;
  store: OffsetStore;
  heartbeats: Promise<unknown>[];
}> {
  const dir = tempDir();
  const fs = new HeldDatasyncFileSystem();
  const store = await openStore(dir, { fs, bucketCount: 1, clock: new ManualClock(T0) });
  return { dir, fs, store, heartbeats: await leaveQueuedBehindAWrite(store, fs) };
}

describe('a change made without a member, while the snapshot of a leave waits behind another write', () => {
  it('a commit is appended after that snapshot, and pipelined commits keep their order', async () => {
    const { dir, fs, store, heartbeats } = await setUp();
    const first = store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 7 }]);
    const second = store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 8 }]);
    release(fs);
    await Promise.all([...heartbeats, first, second]);
    expect((await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(8);
    await store.close();
    expect((await story(dir)).slice(-3)).toEqual([
      'snapshot without members',
      'commit 0=7',
      'commit 0=8',
    ]);
  });

  it("an offsets deletion is appended after that snapshot (the bucket was the leaving member's)", async () => {
    const { dir, fs, store, heartbeats } = await setUp();
    const deleted = store.deleteOffsets('g', [{ tableId: 1, bucketId: 0 }]);
    release(fs);
    await Promise.all([...heartbeats, deleted]);
    await store.close();
    expect((await story(dir)).slice(-2)).toEqual(['snapshot without members', 'delete 0']);
  });

  it('an offsets reset is appended after that snapshot', async () => {
    const { dir, fs, store, heartbeats } = await setUp();
    const reset = store.resetOffsets('g', [{ tableId: 1, bucketId: 0, offset: 0 }]);
    release(fs);
    await Promise.all([...heartbeats, reset]);
    await store.close();
    expect((await story(dir)).slice(-2)).toEqual(['snapshot without members', 'commit 0=0']);
  });

  it('a retention pass expires the offsets after that snapshot, not while it waits', async () => {
    const dir = tempDir();
    const fs = new HeldDatasyncFileSystem();
    const clock = new ManualClock(T0);
    const store = await openStore(dir, {
      fs,
      bucketCount: 1,
      clock,
      offsetsRetentionMs: 1000,
      offsetsRetentionCheckIntervalMs: 10,
    });
    const heartbeats = await leaveQueuedBehindAWrite(store, fs);
    // Retention passes while the leave's snapshot waits: in memory the group is Empty, its offset
    // long past the retention; on disk the member is still there.
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    release(fs);
    await Promise.all(heartbeats);
    // The next pass expires it.
    for (let i = 0; i < 2000; i++) {
      if ((await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0] === null) break;
      clock.advance(1000);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect((await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0]).toBeNull();
    await store.close();
    // The Empty group, left without offsets, is deleted after them.
    expect((await story(dir)).slice(-3)).toEqual([
      'snapshot without members',
      'delete 0',
      'group deleted',
    ]);
  });
});
