/**
 * An expiry run whose writes fail tells the operator of every failed group: the first three by
 * name, the rest as a count, so that a fourth failure is never left out.
 */
import { expect, it } from 'vitest';
import { loadChecksum } from '../../src/codec/index.js';
import { GROUP_SETTINGS_DEFAULTS } from '../../src/group/index.js';
import { OffsetsBucket } from '../../src/shard/index.js';
import { ManualClock } from '../../src/util/index.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { logOptions } from '../support/log-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

it('warns of the first three failed groups by name and of the others by count when expiring fails', async () => {
  await loadChecksum();
  const fs = new FaultyFileSystem();
  const clock = new ManualClock();
  const warnings: string[] = [];
  const bucket = await OffsetsBucket.load({
    index: 0,
    log: logOptions(tempDir(), { fs }),
    useCheckpoints: false,
    record: { logStart: 0, logEnd: 0, endExact: false },
    clock,
    group: { ...GROUP_SETTINGS_DEFAULTS, assignmentIntervalMs: 0 },
    layouts: new Map(),
    onWarning: (message) => warnings.push(message),
    onGroupDropped: () => {},
    bucketOf: () => 0,
  });
  const groups = ['a', 'b', 'c', 'd'];
  for (const groupId of groups)
    await bucket.commit(
      groupId,
      [{ tableId: 1, partitionId: null, bucketId: 0, offset: 1, leaderEpoch: -1, metadata: '' }],
      null,
    );
  warnings.length = 0;
  fs.plan.failWritevAt = fs.writevCount;
  await bucket.expire(1_000, clock.nowMs() + 10_000);
  expect(warnings).toHaveLength(4);
  expect(warnings.slice(0, 3).join('\n')).toMatch(/expiring the offsets of group/);
  expect(warnings[3]).toMatch(/expiring the offsets of 1 more group\(s\) failed too/);
  await bucket.unload().catch(() => {});
});
