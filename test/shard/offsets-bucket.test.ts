/**
 * An offsets-bucket is a unit of its own: loaded from its folder alone (no store, no lock, no other
 * bucket), it serves commits, fetches, deletes and membership; unloaded, its folder holds everything
 * a later load (here, or in another process) needs to come back to the same state.
 */
import { describe, expect, it } from 'vitest';
import { loadChecksum } from '../../src/codec/index.js';
import { GROUP_SETTINGS_DEFAULTS } from '../../src/group/index.js';
import { OffsetsBucket, type OffsetsBucketOptions } from '../../src/shard/index.js';
import { ManualClock } from '../../src/util/index.js';
import { logOptions } from '../support/log-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

function options(
  dir: string,
  clock: ManualClock,
  record = { logStart: 0, logEnd: 0, endExact: false },
): OffsetsBucketOptions {
  return {
    index: 3,
    log: logOptions(dir),
    useCheckpoints: false,
    record,
    clock,
    group: { ...GROUP_SETTINGS_DEFAULTS, assignmentIntervalMs: 0 },
    layouts: new Map([
      [1, { bucketCount: 4, partitionIds: null }],
    ]) as OffsetsBucketOptions['layouts'],
    onWarning: () => {},
    onGroupDropped: () => {},
    bucketOf: () => 3,
  };
}

const spec = (bucketId: number, offset: number) => ({
  tableId: 1,
  partitionId: null,
  bucketId,
  offset,
  leaderEpoch: -1,
  metadata: '',
});

describe('an offsets-bucket on its own', () => {
  it('loads alone, serves, unloads, and loads again to the same state', async () => {
    await loadChecksum();
    const dir = tempDir();
    const clock = new ManualClock();
    const bucket = await OffsetsBucket.load(options(dir, clock));
    await bucket.commit('g', [spec(0, 10), spec(1, 11)], null);
    await bucket.commit('h', [spec(0, 5)], null);
    await bucket.deleteOffsets('g', [{ tableId: 1, partitionId: null, bucketId: 1 }]);
    const joined = await bucket.heartbeat('m', { memberEpoch: 0, subscribedTableIds: [1] });
    expect(joined.memberEpoch).toBeGreaterThan(0);
    await expect(bucket.commit('m', [spec(0, 1)], null)).rejects.toMatchObject({
      code: 'UNKNOWN_MEMBER_ID',
    });
    expect(bucket.fetch('g', undefined, false)).toEqual([
      expect.objectContaining({ bucketId: 0, offset: 10 }),
    ]);
    const end = bucket.logEnd();
    expect(end.exact).toBe(true);
    await bucket.unload();

    const again = await OffsetsBucket.load(
      options(dir, clock, { logStart: 0, logEnd: end.logOffset, endExact: true }),
    );
    expect(again.fetch('g', undefined, false)).toEqual([
      expect.objectContaining({ bucketId: 0, offset: 10 }),
    ]);
    expect(again.fetch('h', [{ tableId: 1, bucketId: 0 }], false)).toEqual([
      expect.objectContaining({ offset: 5 }),
    ]);
    expect(
      again
        .listGroups()
        .map((g) => g.groupId)
        .sort(),
    ).toEqual(['g', 'h', 'm']);
    expect(again.figures()).toMatchObject({ liveOffsets: 2, groups: 2 });
    await again.unload();
  });
});
