/**
 * The KvRecordBatch codec: offset batches (tombstones, unicode group ids, maximal metadata, negative
 * offsets down to -(2^53 - 1)) and group snapshots round-trip; every single-byte flip and every truncation of an encoded batch is refused with
 * CORRUPT_MESSAGE, never decoded to something else; an insane length field is refused without being
 * allocated, and a record whose lengths point outside its batch even when the checksum matches.
 * CODEC_PROPERTY_RUNS sets the round-trip runs (default 200).
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BATCH_HEADER_BYTES,
  buildGroupSnapshotBatch,
  buildOffsetBatch,
  checkBatch,
  decodeBatch,
  loadChecksum,
  offsetRecordBytes,
  offsetRecordPrefixBytes,
  sealBatch,
  type OffsetRecordSpec,
} from '../../src/codec/index.js';
import { isOffsetStoreError } from '../../src/errors/index.js';

beforeAll(() => loadChecksum());

const runs = Number(process.env.CODEC_PROPERTY_RUNS ?? 200);

const groupIdArb = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 60 })
  .filter((s) => Buffer.byteLength(s) <= 255);
const metadataArb = fc.oneof(
  fc.constant(''),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.constant('x'.repeat(4096)),
  fc.constant('é'.repeat(2048)),
);
const recordArb: fc.Arbitrary<OffsetRecordSpec> = fc.record({
  tableId: fc.oneof(fc.nat(1000), fc.constant(Number.MAX_SAFE_INTEGER)),
  partitionId: fc.oneof(fc.constant(null), fc.nat(1000), fc.constant(Number.MAX_SAFE_INTEGER)),
  bucketId: fc.nat(2 ** 31 - 1),
  offset: fc.oneof(
    fc.nat(),
    fc.constant(Number.MAX_SAFE_INTEGER),
    fc.constant(0),
    fc.constantFrom(-1, -2, Number.MIN_SAFE_INTEGER),
    fc.integer({ min: Number.MIN_SAFE_INTEGER, max: -1 }),
  ),
  leaderEpoch: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
  metadata: metadataArb,
  tombstone: fc.boolean(),
});

describe('KvRecordBatch codec', () => {
  it('sizes each offset record as the batch encodes it (what splitting a write into batches counts on)', () => {
    fc.assert(
      fc.property(groupIdArb, fc.array(recordArb, { maxLength: 20 }), (groupId, records) => {
        const prefix = offsetRecordPrefixBytes(Buffer.byteLength(groupId));
        const counted = records.reduce((n, r) => n + offsetRecordBytes(prefix, r), 0);
        expect(buildOffsetBatch(groupId, records, 0).length).toBe(BATCH_HEADER_BYTES + counted);
      }),
      { numRuns: runs },
    );
  });

  it('round-trips offset batches, including tombstones, unicode group ids and maximal metadata', () => {
    fc.assert(
      fc.property(
        groupIdArb,
        fc.array(recordArb, { maxLength: 20 }),
        fc.nat(2 ** 50),
        fc.nat(2 ** 40),
        (groupId, records, ts, logOffset) => {
          const batch = buildOffsetBatch(groupId, records, ts);
          sealBatch(batch, logOffset);
          const { header, records: decoded } = decodeBatch(batch);
          expect(header).toEqual({
            logOffset,
            commitTimestampMs: ts,
            coordinatorEpoch: 0,
            recordCount: records.length,
          });
          expect(decoded).toHaveLength(records.length);
          records.forEach((r, i) => {
            const d = decoded[i]!;
            expect(d).toMatchObject({
              type: 0,
              index: i,
              groupId,
              tableId: r.tableId,
              partitionId: r.partitionId,
              bucketId: r.bucketId,
              tombstone: r.tombstone,
            });
            if (!r.tombstone)
              expect(d).toMatchObject({
                offset: r.offset,
                leaderEpoch: r.leaderEpoch,
                metadata: r.metadata,
                commitTimestampMs: ts,
              });
          });
        },
      ),
      { numRuns: runs },
    );
  });

  it('encodes a uniform batch (one table, partition and epoch, no metadata) record for record as the general encoder does', () => {
    const uniformArb = fc.record({
      tableId: fc.oneof(fc.nat(1000), fc.constant(Number.MAX_SAFE_INTEGER)),
      partitionId: fc.oneof(fc.constant(null), fc.nat(1000)),
      leaderEpoch: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
      slots: fc.array(
        fc.record({
          bucketId: fc.nat(2 ** 31 - 1),
          offset: fc.oneof(fc.nat(), fc.constant(Number.MAX_SAFE_INTEGER), fc.constant(2 ** 32)),
        }),
        { minLength: 1, maxLength: 300 },
      ),
    });
    fc.assert(
      fc.property(
        groupIdArb,
        uniformArb,
        fc.nat(2 ** 50),
        (groupId, { tableId, partitionId, leaderEpoch, slots }, ts) => {
          const records: OffsetRecordSpec[] = slots.map(({ bucketId, offset }) => ({
            tableId,
            partitionId,
            bucketId,
            offset,
            leaderEpoch,
            metadata: '',
          }));
          const uniform = buildOffsetBatch(groupId, records, ts);
          // One record with metadata makes the batch not uniform: the same records go through the general encoder.
          const general = buildOffsetBatch(
            groupId,
            [
              ...records,
              { tableId, partitionId, bucketId: 0, offset: 0, leaderEpoch, metadata: 'm' },
            ],
            ts,
          );
          expect(
            uniform
              .subarray(BATCH_HEADER_BYTES)
              .equals(general.subarray(BATCH_HEADER_BYTES, uniform.length)),
          ).toBe(true);
          sealBatch(uniform, 1);
          const decoded = decodeBatch(uniform).records;
          expect(decoded.map((d) => [d.bucketId, d.offset])).toEqual(
            slots.map((r) => [r.bucketId, r.offset]),
          );
        },
      ),
      { numRuns: runs },
    );
  });

  it('round-trips group snapshots and their tombstones', () => {
    const snapshot = {
      groupEpoch: 7,
      members: [{ memberId: 'm-1', instanceId: null, assigned: [[1, -1, 3]] }],
      nested: { a: 'ü' },
    };
    const batch = buildGroupSnapshotBatch('grüppe', snapshot, 123);
    sealBatch(batch, 9);
    expect(decodeBatch(batch).records).toEqual([
      expect.objectContaining({ type: 1, groupId: 'grüppe', tombstone: false, snapshot }),
    ]);
    const tombstone = buildGroupSnapshotBatch('grüppe', null, 124);
    sealBatch(tombstone, 10);
    expect(decodeBatch(tombstone).records).toEqual([
      expect.objectContaining({ type: 1, groupId: 'grüppe', tombstone: true, snapshot: null }),
    ]);
  });

  it('detects every single-byte flip of an encoded batch (exhaustive)', () => {
    const batch = buildOffsetBatch(
      'group-a',
      [
        {
          tableId: 1,
          partitionId: null,
          bucketId: 0,
          offset: 42,
          leaderEpoch: 3,
          metadata: 'meta',
        },
        {
          tableId: 1,
          partitionId: 7,
          bucketId: 1,
          offset: 0,
          leaderEpoch: -1,
          metadata: '',
          tombstone: true,
        },
      ],
      1_700_000_000_000,
    );
    sealBatch(batch, 5);
    const original = decodeBatch(batch);
    for (let position = 0; position < batch.length; position++) {
      for (const mask of [0x01, 0x80, 0xff]) {
        const copy = Buffer.from(batch);
        copy[position]! ^= mask;
        let outcome: string;
        try {
          expect(decodeBatch(copy, 0, 1 << 20)).toEqual(original);
          outcome = 'same';
        } catch (error) {
          expect(
            isOffsetStoreError(error, 'CORRUPT_MESSAGE'),
            `flip at ${position}: ${String(error)}`,
          ).toBe(true);
          outcome = 'corrupt';
        }
        expect(outcome, `flip ${mask} at byte ${position}`).toBe('corrupt');
      }
    }
  });

  it('detects every truncation of an encoded batch', () => {
    const batch = buildOffsetBatch(
      'g',
      [{ tableId: 2, partitionId: 1, bucketId: 3, offset: 9, leaderEpoch: 1, metadata: 'abc' }],
      1,
    );
    sealBatch(batch, 0);
    for (let length = 0; length < batch.length; length++) {
      const check = checkBatch(batch.subarray(0, length), 0, length, 1 << 20);
      expect(check.kind, `truncated to ${length}`).toBe('incomplete');
      expect(() => decodeBatch(batch.subarray(0, length), 0, 1 << 20)).toThrow(/CORRUPT_MESSAGE/);
    }
  });

  it('refuses a batch whose schema id or attributes are not 0 even when its checksum matches: a batch of a later version is not read as a plain one', () => {
    for (const [position, value, reason] of [
      [29, 7, /unknown schema id 7/],
      [31, 0x81, /unknown attributes 0x81/],
    ] as const) {
      const batch = buildOffsetBatch(
        'g',
        [{ tableId: 2, partitionId: 1, bucketId: 3, offset: 9, leaderEpoch: 1, metadata: '' }],
        1,
      );
      batch[position] = value;
      sealBatch(batch, 0);
      // Whole, with its checksum: not damage (a torn tail to cut), but a batch not to be read.
      expect(checkBatch(batch, 0, batch.length, 8 << 20)).toMatchObject({ kind: 'ok' });
      expect(() => decodeBatch(batch, 0, 1 << 20)).toThrow(/CORRUPT_MESSAGE/);
      expect(() => decodeBatch(batch, 0, 1 << 20)).toThrow(reason);
    }
  });

  it('rejects an insane length field without allocating it', () => {
    const batch = buildOffsetBatch('g', [], 1);
    sealBatch(batch, 0);
    batch.writeUInt32LE(0xffffffff, 0);
    expect(checkBatch(batch, 0, batch.length, 8 << 20)).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(/above the limit/),
    });
  });

  it('round-trips negative committed offsets down to -(2^53 - 1) and refuses -2^53, which is not a safe integer', () => {
    const batch = buildOffsetBatch(
      'g',
      [
        {
          tableId: 2,
          partitionId: null,
          bucketId: 3,
          offset: Number.MIN_SAFE_INTEGER,
          leaderEpoch: -1,
          metadata: '',
          tombstone: false,
        },
      ],
      1,
    );
    sealBatch(batch, 0);
    expect(decodeBatch(batch).records[0]!.offset).toBe(Number.MIN_SAFE_INTEGER);
    // MIN_SAFE_INTEGER is high word -2^21, low word 1; -2^53 is the same with low word 0.
    let position = -1;
    for (let p = 48; p + 8 <= batch.length; p++)
      if (batch.readUInt32LE(p) === 1 && batch.readInt32LE(p + 4) === -0x200000) position = p;
    expect(position).toBeGreaterThan(0);
    batch.writeUInt32LE(0, position);
    sealBatch(batch, 0);
    expect(() => decodeBatch(batch)).toThrow(/CORRUPT_MESSAGE.*safe integer/);
  });

  it('rejects a record whose lengths point outside the batch even when the checksum matches', () => {
    const batch = buildOffsetBatch(
      'g',
      [{ tableId: 2, partitionId: 1, bucketId: 3, offset: 9, leaderEpoch: 1, metadata: 'abc' }],
      1,
    );
    batch.writeInt32LE(1_000_000, 48); // record length beyond the batch, then re-seal so only the record is wrong
    sealBatch(batch, 0);
    expect(() => decodeBatch(batch)).toThrow(/CORRUPT_MESSAGE.*record length/);
  });
});
