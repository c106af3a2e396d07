/**
 * Planning an offsets reset, without a store: the rows a to-offset, shift-by or from-file target gives
 * for a selection (bucket order, clamped at 0 and marked, a fully named bucket without a commit
 * included); and the offsets documents the CLI reads from --from-file and --log-end (a key map, an
 * array, a reset plan's rows), malformed keys, values and duplicates refused naming the entry.
 */
import { describe, expect, it } from 'vitest';
import {
  parseBucketKey,
  parseBucketOffsets,
  planResetRows,
  type CommittedBucketOffset,
} from '../../src/admin/index.js';

const committed: CommittedBucketOffset[] = [
  { tableId: 1, partitionId: null, bucketId: 0, offset: 100 },
  { tableId: 1, partitionId: null, bucketId: 1, offset: 5 },
  { tableId: 2, partitionId: 7, bucketId: 0, offset: 42 },
];

describe('planResetRows', () => {
  it('to-offset covers every committed bucket by default, in bucket order', () => {
    const rows = planResetRows([...committed].reverse(), {
      target: { kind: 'to-offset', offset: 0 },
    });
    expect(
      rows.map((r) => [r.tableId, r.partitionId, r.bucketId, r.currentOffset, r.newOffset]),
    ).toEqual([
      [1, null, 0, 100, 0],
      [1, null, 1, 5, 0],
      [2, 7, 0, 42, 0],
    ]);
  });

  it('narrows to the selection, and sets a fully named bucket that has no commit yet', () => {
    expect(
      planResetRows(committed, {
        target: { kind: 'to-offset', offset: 9 },
        selection: { tableId: 2 },
      }).map((r) => r.bucketId),
    ).toEqual([0]);
    expect(
      planResetRows(committed, {
        target: { kind: 'to-offset', offset: 9 },
        selection: { tableId: 1, bucketId: 8 },
      }),
    ).toEqual([
      {
        tableId: 1,
        partitionId: null,
        bucketId: 8,
        currentOffset: null,
        newOffset: 9,
        clamped: false,
      },
    ]);
    expect(
      planResetRows(committed, {
        target: { kind: 'to-offset', offset: 9 },
        selection: { tableId: 3 },
      }),
    ).toEqual([]);
  });

  it('shift-by moves committed offsets and clamps at 0, marking the clamped rows', () => {
    const rows = planResetRows(committed, { target: { kind: 'shift-by', delta: -10 } });
    expect(rows.map((r) => [r.newOffset, r.clamped])).toEqual([
      [90, false],
      [0, true],
      [32, false],
    ]);
    expect(() =>
      planResetRows(committed, {
        target: { kind: 'shift-by', delta: 1 },
        selection: { tableId: 1, bucketId: 8 },
      }),
    ).toThrow(/INVALID_REQUEST.*no committed offset/);
  });

  it('shift-by refuses a bucket committed at a sentinel (-1 latest, -2 earliest) and a shift past 2^53 - 1, naming the bucket', () => {
    const withSentinels: CommittedBucketOffset[] = [
      ...committed,
      { tableId: 3, partitionId: null, bucketId: 0, offset: -1 },
      { tableId: 3, partitionId: null, bucketId: 1, offset: -2 },
      { tableId: 4, partitionId: null, bucketId: 0, offset: Number.MAX_SAFE_INTEGER },
    ];
    const shift = (selection: { tableId: number; bucketId?: number }, delta = 100) =>
      planResetRows(withSentinels, { target: { kind: 'shift-by', delta }, selection });
    expect(() => shift({ tableId: 3, bucketId: 0 })).toThrow(
      /INVALID_REQUEST: table 3 bucket 0 is committed at -1, a sentinel \(latest\)/,
    );
    expect(() => shift({ tableId: 3 })).toThrow(/table 3 bucket 0 .*cannot be shifted/);
    expect(() => shift({ tableId: 3, bucketId: 1 })).toThrow(/at -2, a sentinel \(earliest\)/);
    expect(() => shift({ tableId: 4 })).toThrow(
      /INVALID_REQUEST: table 4 bucket 0: 9007199254740991 shifted by 100 is past 2\^53 - 1/,
    );
    expect(shift({ tableId: 4 }, -1)[0]!.newOffset).toBe(Number.MAX_SAFE_INTEGER - 1);
    expect(shift({ tableId: 1 }).map((r) => r.newOffset)).toEqual([200, 105]);
  });

  it('from-file takes the buckets the file names, with their current offsets where committed', () => {
    const offsets = [
      { tableId: 1, partitionId: null, bucketId: 1, offset: 50 },
      { tableId: 1, partitionId: null, bucketId: 9, offset: 1 },
      { tableId: 2, partitionId: 7, bucketId: 0, offset: 7 },
    ];
    const rows = planResetRows(committed, {
      target: { kind: 'from-file', source: 'plan.json', offsets },
      selection: { tableId: 1 },
    });
    expect(rows.map((r) => [r.bucketId, r.currentOffset, r.newOffset])).toEqual([
      [1, 5, 50],
      [9, null, 1],
    ]);
  });

  it('rejects a bucket selection without a table and negative offsets', () => {
    expect(() =>
      planResetRows(committed, {
        target: { kind: 'to-offset', offset: 0 },
        selection: { bucketId: 1 },
      }),
    ).toThrow(/INVALID_REQUEST/);
    expect(() => planResetRows(committed, { target: { kind: 'to-offset', offset: -1 } })).toThrow(
      /INVALID_REQUEST/,
    );
  });
});

describe('offsets documents', () => {
  it('accept a key map, an array, and the rows of a reset plan', () => {
    const expected = [
      { tableId: 1, partitionId: null, bucketId: 0, offset: 500 },
      { tableId: 2, partitionId: 7, bucketId: 3, offset: 20 },
    ];
    expect(parseBucketOffsets({ '2:7:3': 20, '1:0': 500 }, 'x')).toEqual(expected);
    expect(
      parseBucketOffsets(
        [
          { tableId: 1, bucketId: 0, offset: 500 },
          { tableId: 2, partitionId: 7, bucketId: 3, logEndOffset: 20 },
        ],
        'x',
      ),
    ).toEqual(expected);
    expect(
      parseBucketOffsets(
        {
          rows: [
            { tableId: 1, partitionId: null, bucketId: 0, currentOffset: 3, newOffset: 500 },
            { tableId: 2, partitionId: 7, bucketId: 3, newOffset: 20 },
          ],
        },
        'x',
      ),
    ).toEqual([{ ...expected[0], currentOffset: 3 }, expected[1]]);
    // A plan's committed offset may be a sentinel, or none; anything else is refused.
    expect(
      parseBucketOffsets(
        [
          { tableId: 1, bucketId: 0, currentOffset: -2, offset: 5 },
          { tableId: 1, bucketId: 1, currentOffset: null, offset: 5 },
        ],
        'x',
      ).map((o) => o.currentOffset),
    ).toEqual([-2, null]);
    expect(() =>
      parseBucketOffsets([{ tableId: 1, bucketId: 0, currentOffset: '3', offset: 5 }], 'f'),
    ).toThrow(/f\[0\]\.currentOffset must be a safe integer or null/);
  });

  it('from a plan refuse a bucket committed at another offset than the plan was made against', () => {
    const offsets = parseBucketOffsets(
      [
        { tableId: 1, bucketId: 0, currentOffset: 10, offset: 5 },
        { tableId: 1, bucketId: 1, currentOffset: null, offset: 5 },
      ],
      'plan.json',
    );
    const target = { kind: 'from-file' as const, source: 'plan.json', offsets };
    const at = (b0: number, b1?: number) => [
      { tableId: 1, partitionId: null, bucketId: 0, offset: b0 },
      ...(b1 === undefined ? [] : [{ tableId: 1, partitionId: null, bucketId: 1, offset: b1 }]),
    ];
    expect(planResetRows(at(10), { target }).map((r) => r.newOffset)).toEqual([5, 5]);
    expect(() => planResetRows(at(11), { target })).toThrow(
      /table 1 bucket 0 is committed at 11 now, but plan\.json was planned against 10/,
    );
    expect(() => planResetRows(at(10, 3), { target })).toThrow(
      /table 1 bucket 1 is committed at 3 now, but plan\.json was planned against nothing/,
    );
  });

  it('reject malformed keys, values and duplicates, naming the entry', () => {
    expect(() => parseBucketOffsets({ '1': 5 }, 'f')).toThrow(/INVALID_REQUEST: bucket key "1"/);
    expect(() => parseBucketOffsets({ '1:0': -5 }, 'f')).toThrow(
      /f\["1:0"\] must be a safe integer >= 0/,
    );
    expect(() => parseBucketOffsets([{ tableId: 1, bucketId: 0 }], 'f')).toThrow(/f\[0\]\.offset/);
    // A bucket id is an int32, as a commit's is: what --execute would refuse, a dry run refuses too.
    expect(() => parseBucketOffsets({ '1:2147483648': 5 }, 'f')).toThrow(
      /INVALID_REQUEST: bucket key 1:2147483648: its bucket id must be at most 2147483647/,
    );
    expect(() => parseBucketOffsets([{ tableId: 1, bucketId: 2 ** 31, offset: 1 }], 'f')).toThrow(
      /f\[0\]\.bucketId must be at most 2147483647/,
    );
    expect(parseBucketOffsets({ '1:2147483647': 5 }, 'f')).toEqual([
      { tableId: 1, partitionId: null, bucketId: 2147483647, offset: 5 },
    ]);
    expect(() =>
      parseBucketOffsets(
        [
          { tableId: 1, bucketId: 0, offset: 1 },
          { tableId: 1, partitionId: null, bucketId: 0, offset: 2 },
        ],
        'f',
      ),
    ).toThrow(/names bucket 1:0 twice/);
    expect(() => parseBucketOffsets('nope', 'f')).toThrow(/INVALID_REQUEST/);
    // A number JSON cannot hold is named as what it became, not as JSON's null.
    expect(() => parseBucketOffsets(JSON.parse('{"1:0": 1e400}'), 'f')).toThrow(
      /f\["1:0"\] must be a safe integer >= 0, got Infinity$/,
    );
    // Two offsets for one bucket are refused, not resolved to one of them.
    expect(() =>
      parseBucketOffsets([{ tableId: 1, bucketId: 0, offset: 99, newOffset: 3 }], 'f'),
    ).toThrow(/f\[0\] gives offset and newOffset: give one/);
    // A field set to null gives nothing.
    expect(
      parseBucketOffsets(
        [
          { tableId: 1, bucketId: 0, offset: null, newOffset: 5 },
          { tableId: 1, bucketId: 1, offset: 6, logEndOffset: null },
        ],
        'f',
      ).map((e) => e.offset),
    ).toEqual([5, 6]);
    expect(() => parseBucketKey('1:x')).toThrow(/INVALID_REQUEST/);
    expect(parseBucketKey('3:4:5')).toEqual({ tableId: 3, partitionId: 4, bucketId: 5 });
  });

  it('refuse a bucket key of more than three ids and a currentOffset that is a number but no safe integer', () => {
    // Four ids name no bucket: refused, not read as the first three.
    for (const key of ['1:2:3:4', '1:2:3:']) {
      expect(() => parseBucketKey(key)).toThrow(/INVALID_REQUEST: bucket key "1:2:3:/);
      expect(() => parseBucketOffsets({ [key]: 5 }, 'f')).toThrow(/INVALID_REQUEST: bucket key/);
    }
    // A plan's committed offset is compared exactly with the group's: a fraction or a number past
    // 2^53 - 1 is no committed offset.
    for (const currentOffset of [1.5, 2 ** 53, -(2 ** 53)]) {
      expect(() =>
        parseBucketOffsets([{ tableId: 1, bucketId: 0, currentOffset, offset: 5 }], 'f'),
      ).toThrow(
        new RegExp(
          `f\\[0\\]\\.currentOffset must be a safe integer or null .*, got ${currentOffset}$`,
        ),
      );
    }
  });
});
