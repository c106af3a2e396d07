/**
 * Retention never expires the offsets of a table a live member of a consumer group subscribes to
 * (Kafka's rule): the member's next restart would otherwise reset to the beginning or end.
 */
import { expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { TrackingFileSystem, ioIdle, openStore } from './store-fixtures.js';

const T0 = 1_700_000_000_000;
const RETENTION_MS = 1000;

it('keeps the offsets of a table a live member of a consumer group subscribes to past the retention', async () => {
  const clock = new ManualClock(T0);
  const fs = new TrackingFileSystem();
  const store = await openStore(tempDir(), {
    fs,
    clock,
    bucketCount: 1,
    offsetsRetentionMs: RETENTION_MS,
    offsetsRetentionCheckIntervalMs: 1,
  });
  store.setTableLayout(1, { bucketCount: 1 });
  let r = await store.heartbeat('cg', { memberEpoch: 0, subscribedTableIds: [1] });
  const memberId = r.memberId;
  for (let i = 0; i < 5 && (r.assignment ?? []).length === 0; i++)
    r = await store.heartbeat('cg', { memberId, memberEpoch: r.memberEpoch });
  expect(r.assignment).toEqual([expect.objectContaining({ tableId: 1, bucketId: 0 })]);
  await store.commitOffsets('cg', [{ tableId: 1, bucketId: 0, offset: 7 }], {
    memberId,
    memberEpoch: r.memberEpoch,
  });
  // 3 x the retention, the member heartbeating all along.
  for (let ms = 0; ms < 3 * RETENTION_MS; ms += 100) {
    for (let i = 0; i < 100; i++) {
      clock.advance(1);
      await ioIdle(fs);
    }
    r = await store.heartbeat('cg', { memberId, memberEpoch: r.memberEpoch });
  }
  expect((await store.describeGroup('cg')).members).toHaveLength(1);
  expect((await store.fetchOffsets('cg', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(7);
  await store.close();
});
