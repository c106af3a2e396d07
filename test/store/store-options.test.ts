/**
 * Options are checked before anything touches the disk: a wrong option is a TypeError or RangeError
 * naming it, thrown before the store directory is created or a file is opened.
 */
import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore, type GroupOptions } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';

const descriptors = (): number => readdirSync('/proc/self/fd').length;

describe('group options', () => {
  const invalid: [string, unknown, ErrorConstructor, RegExp][] = [
    [
      'a negative session timeout',
      { sessionTimeoutMs: -1 },
      RangeError,
      /^options\.group\.sessionTimeoutMs must be an integer in \[1, 86400000\], got -1$/,
    ],
    [
      'a session timeout a timer cannot hold',
      { sessionTimeoutMs: 2 ** 31 },
      RangeError,
      /options\.group\.sessionTimeoutMs/,
    ],
    [
      'a zero heartbeat interval',
      { heartbeatIntervalMs: 0 },
      RangeError,
      /options\.group\.heartbeatIntervalMs/,
    ],
    [
      'a fractional rebalance timeout',
      { rebalanceTimeoutMs: 1.5 },
      RangeError,
      /options\.group\.rebalanceTimeoutMs/,
    ],
    [
      'no room for a member',
      { groupMembersMax: 0 },
      RangeError,
      /options\.group\.groupMembersMax must be an integer >= 1, got 0/,
    ],
    [
      'a negative assignment interval',
      { assignmentIntervalMs: -1 },
      RangeError,
      /options\.group\.assignmentIntervalMs must be an integer in \[0, 86400000\], got -1/,
    ],
    [
      'a timeout given as a string',
      { sessionTimeoutMs: '45000' },
      TypeError,
      /^options\.group\.sessionTimeoutMs must be a number, got string$/,
    ],
    ['group options that are not an object', 5, TypeError, /^options\.group must be an object$/],
  ];
  for (const [what, group, type, message] of invalid) {
    it(`refuses ${what} before creating the directory or opening a file`, async () => {
      const dir = path.join(tempDir(), 'offsets');
      const before = process.platform === 'linux' ? descriptors() : 0;
      const opening = OffsetStore.open({ dir, group: group as GroupOptions });
      await expect(opening).rejects.toThrow(type);
      await expect(opening).rejects.toThrow(message);
      expect(existsSync(dir), 'the directory was not created').toBe(false);
      if (process.platform === 'linux')
        expect(descriptors(), 'no descriptor was left open').toBe(before);
    });
  }

  it('accepts the bounds: 1 ms timeouts, one member, no assignment pacing', async () => {
    const store = await OffsetStore.open({
      dir: tempDir(),
      clock: new ManualClock(),
      compaction: { strategy: 'none' },
      group: {
        heartbeatIntervalMs: 1,
        sessionTimeoutMs: 86_400_000,
        rebalanceTimeoutMs: 1,
        groupMembersMax: 1,
        assignmentIntervalMs: 0,
      },
    });
    store.setTableLayout(1, { bucketCount: 1 });
    const response = await store.heartbeat('g', { memberEpoch: 0, subscribedTableIds: [1] });
    expect(response.heartbeatIntervalMs).toBe(1);
    await expect(
      store.heartbeat('g', { memberEpoch: 0, subscribedTableIds: [1] }),
    ).rejects.toMatchObject({ code: 'GROUP_MAX_SIZE_REACHED' });
    await store.close();
  });
});
