/**
 * Options are checked before anything touches the disk: a wrong option is a TypeError or RangeError
 * naming it, thrown before the store directory is created or a file is opened.
 */
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
    [
      'group options that are not an object',
      5,
      TypeError,
      /^options\.group must be an object, got number$/,
    ],
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

describe('store options of the wrong type or past their bounds', () => {
  const invalid: [string, Record<string, unknown>, ErrorConstructor, RegExp][] = [
    [
      'compaction options that are a number',
      { compaction: 5 },
      TypeError,
      /^options\.compaction must be an object, got number$/,
    ],
    [
      'compaction options that are null',
      { compaction: null },
      TypeError,
      /^options\.compaction must be an object, got null$/,
    ],
    [
      'compaction options that are an array',
      { compaction: [] },
      TypeError,
      /^options\.compaction must be an object, got an array$/,
    ],
    [
      'group options that are an array',
      { group: [] },
      TypeError,
      /^options\.group must be an object, got an array$/,
    ],
    // Null is not an absent option: it is refused like any other wrong type.
    [
      'a durability of null',
      { durability: null },
      RangeError,
      /^options\.durability must be 'fsync' or 'os', got null$/,
    ],
    [
      'a clock of null',
      { clock: null },
      TypeError,
      /^options\.clock must have nowMs\(\) and setTimer\(\)$/,
    ],
    [
      'an onWarning of null',
      { onWarning: null },
      TypeError,
      /^options\.onWarning must be a function$/,
    ],
    [
      'a compaction background of null',
      { compaction: { background: null } },
      TypeError,
      /^options\.compaction\.background must be a boolean, got null$/,
    ],
    [
      'a compaction minDirtyRatio of null',
      { compaction: { minDirtyRatio: null } },
      TypeError,
      /^options\.compaction\.minDirtyRatio must be a number, got null$/,
    ],
    [
      'a compaction strategy that is not a string',
      { compaction: { strategy: 5 } },
      TypeError,
      /^options\.compaction\.strategy must be a string, got number$/,
    ],
    [
      'a misspelt option (it would be ignored, and a bucket count is fixed for good)',
      { bucketcount: 64 },
      TypeError,
      /^options\.bucketcount is not an option \(did you mean options\.bucketCount\?\); the options are dir, bucketCount, /,
    ],
    [
      'a misspelt compaction option',
      { compaction: { stratgy: 'checkpoint' } },
      TypeError,
      /^options\.compaction\.stratgy is not an option \(did you mean options\.compaction\.strategy\?\)/,
    ],
    [
      'a misspelt group option',
      { group: { sessionTimeout: 1000 } },
      TypeError,
      /^options\.group\.sessionTimeout is not an option \(did you mean options\.group\.sessionTimeoutMs\?\)/,
    ],
    [
      'an option of something else',
      { port: 9092 },
      TypeError,
      /^options\.port is not an option; the options are /,
    ],
    [
      'an empty directory path',
      { dir: '' },
      RangeError,
      /^options\.dir must be a non-empty string$/,
    ],
    [
      'awaitRecovery given as a string',
      { awaitRecovery: 'yes' },
      TypeError,
      /options\.awaitRecovery/,
    ],
    ['awaitRecovery given as a number', { awaitRecovery: 0 }, TypeError, /options\.awaitRecovery/],
    [
      'a file system that is an empty object',
      { fs: {} },
      TypeError,
      /^options\.fs must be a FileSystem: it has no open\(\), readFile\(\), readdir\(\), mkdir\(\)/,
    ],
    [
      'a file system that is a string',
      { fs: '/tmp' },
      TypeError,
      /^options\.fs must be a FileSystem object, got string$/,
    ],
    [
      '2^32 offsets-buckets',
      { bucketCount: 2 ** 32 },
      RangeError,
      /^options\.bucketCount must be an integer in \[1, 1048576\], got 4294967296$/,
    ],
    [
      'a directory path with a lone surrogate (it has no UTF-8 name)',
      // Under the temporary folder: were it accepted, the store would be made as offsets-\ufffd.
      { dir: path.join(tmpdir(), 'offset-store-lone-surrogate-\ud800') },
      RangeError,
      /^options\.dir must be well-formed UTF-16 \(it holds a lone surrogate\)/,
    ],
    [
      '2^52 compaction workers (a pool that large failed only after the open resolved)',
      { compaction: { workers: 2 ** 52 } },
      RangeError,
      /^options\.compaction\.workers must be an integer in \[1, 64\], got 4503599627370496$/,
    ],
    [
      'a minimum dirty ratio given as a string',
      { compaction: { minDirtyRatio: '0.5' } },
      TypeError,
      /^options\.compaction\.minDirtyRatio must be a number, got string$/,
    ],
    [
      'a clock whose elapsedMs is not a function',
      { clock: { nowMs: () => 1, setTimer: () => ({ cancel() {} }), elapsedMs: 5 } },
      TypeError,
      /^options\.clock\.elapsedMs must be a function when given$/,
    ],
    [
      'a starved-job time a timer cannot hold (Node would fire it after 1 ms)',
      { compaction: { workerStarvedMs: 2 ** 31 } },
      RangeError,
      /^options\.compaction\.workerStarvedMs must be an integer in \[0, 2147483647\], got 2147483648$/,
    ],
    [
      'a directory path with a NUL character',
      { dir: 'offsets\0-and-more' },
      RangeError,
      /^options\.dir must be a non-empty string without NUL characters, got "offsets\\u0000-and-more"$/,
    ],
  ];
  for (const [what, options, type, message] of invalid) {
    it(`refuses ${what} before creating the directory`, async () => {
      const dir = path.join(tempDir(), 'offsets');
      const opening = OffsetStore.open({ dir, ...options });
      await expect(opening).rejects.toThrow(type);
      await expect(opening).rejects.toThrow(message);
      expect(existsSync(dir), 'the directory was not created').toBe(false);
    });
  }

  it('refuses commit, fetch and delete options that are not an object or of the wrong type, and highestTableId after close', async () => {
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 1 });
    for (const options of [5, 'm', true])
      await expect(
        store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }], options as never),
      ).rejects.toThrow(/the commit's options must be an object/);
    expect(await store.fetchOffsets('g')).toEqual([]);
    // Fetch and delete options too: a requireStable that is not a boolean was taken for false.
    const b = { tableId: 1, bucketId: 0 };
    expect(() => store.fetchOffsetsSync('g', [b], { requireStable: 'yes' } as never)).toThrow(
      new TypeError('options.requireStable must be a boolean, got string'),
    );
    await expect(store.fetchOffsets('g', [b], 5 as never)).rejects.toThrow(
      new TypeError('options must be an object, got number'),
    );
    await expect(store.deleteOffsets('g', [b], 5 as never)).rejects.toThrow(
      new TypeError('options must be an object, got number'),
    );
    await store.close();
    await expect(store.highestTableId()).rejects.toMatchObject({ code: 'STORE_CLOSED' });
  });

  it('refuses scanner options of the wrong kind when the scanner is made, not at its first assign', async () => {
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 1 });
    try {
      for (const [options, message] of [
        [null, /the scanner's options must be an object, got null/],
        [
          { onMissing: 'latest' },
          /onMissing must be 'earliest', 'error' or a function, got "latest"/,
        ],
        [{ onMissing: 5 }, /onMissing must be .*, got number/],
        [{ onAutoCommitError: 'log' }, /onAutoCommitError must be a function, got string/],
      ] as const)
        expect(() => store.scanner('g', options as never), JSON.stringify(options)).toThrow(
          expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(message) }),
        );
    } finally {
      await store.close();
    }
  });
});
