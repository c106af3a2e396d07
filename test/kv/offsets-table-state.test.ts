/**
 * OffsetsTableState, the state an offsets-bucket replays its log into: batches apply last-write-wins,
 * tombstones delete, and a group whose last offset goes vanishes (its table detached and reported
 * dropped); group snapshots are kept apart from offsets; a key stays pending from markPending until
 * every in-flight commit of it finished, and a failed write clears its marks and applies nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  buildGroupSnapshotBatch,
  buildOffsetBatch,
  loadChecksum,
  sealBatch,
  type OffsetRecordSpec,
} from '../../src/codec/index.js';
import { OffsetsTableState } from '../../src/kv/index.js';

beforeAll(() => loadChecksum());

const T0 = 1_700_000_000_000;

function spec(
  tableId: number,
  partitionId: number | null,
  bucketId: number,
  offset: number,
  metadata = '',
): OffsetRecordSpec {
  return { tableId, partitionId, bucketId, offset, leaderEpoch: -1, metadata };
}

function tombstone(
  tableId: number,
  partitionId: number | null,
  bucketId: number,
): OffsetRecordSpec {
  return { ...spec(tableId, partitionId, bucketId, 0), tombstone: true };
}

/** A sealed batch as the log would hand it to replay. */
function batch(
  groupId: string,
  records: OffsetRecordSpec[],
  logOffset: number,
  timestampMs = T0 + logOffset,
): Buffer {
  const buf = buildOffsetBatch(groupId, records, timestampMs);
  sealBatch(buf, logOffset);
  return buf;
}

describe('OffsetsTableState', () => {
  it('applies batches last-write-wins (within a batch and across batches), tombstones delete, empty groups vanish', () => {
    const state = new OffsetsTableState();
    state.applyBatch(
      batch('g1', [spec(1, null, 0, 10, 'a'), spec(1, 0, 0, 11), spec(1, null, 0, 12, 'b')], 0),
      0,
      0,
    );
    expect(state.get('g1', 1, null, 0)).toEqual({
      tableId: 1,
      partitionId: null,
      bucketId: 0,
      offset: 12,
      leaderEpoch: -1,
      metadata: 'b',
      commitTimestampMs: T0,
    });
    expect(state.get('g1', 1, 0, 0)?.offset).toBe(11);
    expect(state.liveOffsetCount).toBe(2);
    expect(state.appliedLogOffset).toBe(0);

    state.applyBatch(batch('g2', [spec(2, 5, 1, 100)], 1), 0, 1);
    state.applyBatch(
      batch('g1', [spec(1, 0, 0, 20), tombstone(1, null, 0), tombstone(9, null, 9)], 2),
      0,
      2,
    );
    expect(state.get('g1', 1, null, 0)).toBeNull();
    expect(state.get('g1', 1, 0, 0)).toMatchObject({ offset: 20, commitTimestampMs: T0 + 2 });
    expect(state.liveOffsetCount).toBe(2);
    expect([...state.groupIds()].sort()).toEqual(['g1', 'g2']);

    state.applyBatch(batch('g1', [tombstone(1, 0, 0)], 3), 0, 3);
    expect(state.group('g1')).toBeUndefined();
    expect(state.groupValues('g1')).toEqual([]);
    expect([...state.groupIds()]).toEqual(['g2']);
    expect(state.liveOffsetCount).toBe(1);
    expect(state.appliedLogOffset).toBe(3);
  });

  it("marks a group's table detached and reports it dropped when its last offset goes, so that no cached reference outlives it", () => {
    const state = new OffsetsTableState();
    const dropped: string[] = [];
    state.onGroupDropped = (groupId) => dropped.push(groupId);
    state.applyBatch(batch('g1', [spec(1, null, 0, 10), spec(1, null, 1, 11)], 0), 0, 0);
    const table = state.group('g1')!;
    state.applyBatch(batch('g1', [tombstone(1, null, 0)], 1), 0, 1);
    expect(table.detached).toBe(false);
    expect(dropped).toEqual([]);
    state.applyBatch(batch('g1', [tombstone(1, null, 1)], 2), 0, 2);
    expect(table.detached).toBe(true);
    expect(dropped).toEqual(['g1']);
    state.applyBatch(batch('g1', [spec(1, null, 0, 12)], 3), 0, 3);
    expect(state.group('g1')).not.toBe(table);
    expect(state.group('g1')!.detached).toBe(false);
  });

  it('applies a live batch that empties its group and commits to it again: the group is dropped, then a new table holds the rest', () => {
    const state = new OffsetsTableState();
    const dropped: string[] = [];
    state.onGroupDropped = (groupId) => dropped.push(groupId);
    const first = [spec(1, null, 0, 10)];
    state.applyOffsetRecords('g1', first, T0, batch('g1', first, 0), 0);
    const table = state.group('g1')!;
    const records = [tombstone(1, null, 0), spec(1, null, 1, 11), spec(1, null, 2, 12)];
    state.applyOffsetRecords('g1', records, T0, batch('g1', records, 1), 1);
    expect(table.detached).toBe(true);
    expect(dropped).toEqual(['g1']);
    const now = state.group('g1')!;
    expect(now).not.toBe(table);
    expect(now.detached).toBe(false);
    expect(state.groupValues('g1').map((v) => [v.bucketId, v.offset])).toEqual([
      [1, 11],
      [2, 12],
    ]);
    expect(state.liveOffsetCount).toBe(2);
  });

  it('keeps the latest group snapshot per group apart from its offsets; a snapshot tombstone removes it', () => {
    const state = new OffsetsTableState();
    const apply = (snapshot: unknown, logOffset: number) => {
      const buf = buildGroupSnapshotBatch('g', snapshot, T0);
      sealBatch(buf, logOffset);
      state.applyBatch(buf, 0, logOffset);
    };
    apply({ epoch: 3 }, 0);
    apply({ epoch: 4 }, 1);
    state.applyBatch(batch('g', [spec(1, null, 0, 5)], 2), 0, 2);
    expect(state.snapshot('g')).toEqual({ epoch: 4 });
    expect(state.groupValues('g').map((v) => v.offset)).toEqual([5]);
    expect(state.liveOffsetCount).toBe(1);
    apply(null, 3);
    expect(state.snapshot('g')).toBeUndefined();
    expect(state.get('g', 1, null, 0)?.offset, 'the snapshot tombstone leaves offsets alone').toBe(
      5,
    );
  });

  it('keeps a key pending from markPending until its commit is applied, applying the batch only on success', () => {
    const state = new OffsetsTableState();
    const records = [spec(1, null, 0, 5), spec(1, 0, 0, 6)];
    state.markPending('g', records);
    expect(state.isPending('g', 1, null, 0)).toBe(true);
    expect(state.isPending('g', 1, 0, 0)).toBe(true);
    expect(state.isPending('g', 1, 1, 0), 'partition 1 was not committed').toBe(false);
    expect(state.isPending('g', 1, null, 1)).toBe(false);
    expect(state.isPending('other', 1, null, 0)).toBe(false);
    expect(state.hasPending('g')).toBe(true);
    expect(state.get('g', 1, null, 0), 'not visible before it is durable').toBeNull();

    state.onOffsetCommitAppend('g', records, T0, batch('g', records, 0), 0);
    expect(state.get('g', 1, null, 0)?.commitTimestampMs).toBe(T0);
    expect(state.isPending('g', 1, null, 0)).toBe(false);
    expect(state.hasPending('g')).toBe(false);
    expect(state.get('g', 1, null, 0)?.offset).toBe(5);
    expect(state.get('g', 1, 0, 0)?.offset).toBe(6);
  });

  it('clears the marks of a failed write and applies nothing of it', () => {
    const state = new OffsetsTableState();
    state.applyBatch(batch('g', [spec(1, null, 0, 1)], 0), 0, 0);
    const failed = [spec(1, null, 0, 99), spec(1, null, 1, 99)];
    state.markPending('g', failed);
    state.failPendingOffsetWrite('g', failed);
    expect(state.hasPending('g')).toBe(false);
    expect(state.isPending('g', 1, null, 0)).toBe(false);
    expect(state.get('g', 1, null, 0)?.offset).toBe(1);
    expect(state.get('g', 1, null, 1)).toBeNull();
    expect(state.liveOffsetCount).toBe(1);
  });

  it('counts marks: two in-flight commits of one key keep it pending until both finished', () => {
    const state = new OffsetsTableState();
    const first = [spec(1, null, 0, 10)];
    const second = [spec(1, null, 0, 11), spec(2, null, 0, 11)];
    state.markPending('g', first);
    state.markPending('g', second);
    state.onOffsetCommitAppend('g', first, T0, batch('g', first, 0), 0);
    expect(
      state.isPending('g', 1, null, 0),
      'the second commit of the key is still in flight',
    ).toBe(true);
    expect(state.isPending('g', 2, null, 0)).toBe(true);
    expect(state.get('g', 1, null, 0)?.offset).toBe(10);
    state.failPendingOffsetWrite('g', second);
    expect(state.isPending('g', 1, null, 0)).toBe(false);
    expect(state.hasPending('g')).toBe(false);
    expect(state.get('g', 1, null, 0)?.offset).toBe(10);
    expect(state.get('g', 2, null, 0)).toBeNull();
  });
});

it('keeps each of several in-flight commits of a group pending until it finishes, in any order, and lists their keys for a delete', () => {
  const state = new OffsetsTableState();
  const writes = [0, 1, 2].map((b) => [spec(1, null, b, 10 + b)]);
  for (const write of writes) state.markPending('g', write);
  const pendingBuckets = () => [0, 1, 2].filter((b) => state.isPending('g', 1, null, b)).join(',');
  const keys = () =>
    state
      .committedOrPendingKeys('g')
      .map((k) => k.bucketId)
      .sort()
      .join(',');
  expect(pendingBuckets()).toBe('0,1,2');
  state.onOffsetCommitAppend('g', writes[1]!, T0, batch('g', writes[1]!, 0), 0);
  expect(pendingBuckets()).toBe('0,2');
  state.failPendingOffsetWrite('g', writes[0]!);
  expect(pendingBuckets()).toBe('2');
  expect(keys(), 'committed 1, pending 2').toBe('1,2');
  expect(state.hasPending('g')).toBe(true);
  state.markPending('g', writes[0]!); // a new write while one is in flight
  expect(pendingBuckets()).toBe('0,2');
  state.onOffsetCommitAppend('g', writes[2]!, T0, batch('g', writes[2]!, 1), 1);
  state.onOffsetCommitAppend('g', writes[0]!, T0, batch('g', writes[0]!, 2), 2);
  expect(pendingBuckets()).toBe('');
  expect(state.hasPending('g')).toBe(false);
  expect(keys()).toBe('0,1,2');
});
