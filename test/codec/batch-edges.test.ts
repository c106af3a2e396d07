/**
 * Edges of the KvRecordBatch codec that a batch with a matching checksum can still cross: a log
 * offset that is not a safe integer or is negative, ids below their range, a value whose metadata
 * length says 0 with bytes after it, a group id of exactly the longest length (kept) and one byte
 * longer (refused), and records the raw record reader (what compaction copies by) must refuse.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BATCH_HEADER_BYTES,
  buildOffsetBatch,
  checkBatch,
  decodeBatch,
  forEachRawRecord,
  loadChecksum,
  sealBatch,
  type OffsetRecordSpec,
} from '../../src/codec/index.js';
import { GROUP_ID_BYTES_MAX } from '../../src/model/index.js';

beforeAll(() => loadChecksum());

const LIMIT = 8 << 20;

function spec(overrides: Partial<OffsetRecordSpec> = {}): OffsetRecordSpec {
  return {
    tableId: 2,
    partitionId: 1,
    bucketId: 3,
    offset: 9,
    leaderEpoch: 1,
    metadata: '',
    ...overrides,
  };
}

describe('KvRecordBatch edges', () => {
  it('accepts a log offset of 2^53 - 1 and refuses 2^53, which is not a safe integer, even when the checksum matches', () => {
    const batch = buildOffsetBatch('g', [spec()], 1);
    sealBatch(batch, Number.MAX_SAFE_INTEGER);
    expect(checkBatch(batch, 0, batch.length, LIMIT)).toEqual({
      kind: 'ok',
      sizeBytes: batch.length,
      logOffset: Number.MAX_SAFE_INTEGER,
    });
    sealBatch(batch, 2 ** 53);
    expect(checkBatch(batch, 0, batch.length, LIMIT)).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(/safe integer/),
    });
  });

  it('refuses a negative log offset even when the checksum matches', () => {
    const batch = buildOffsetBatch('g', [spec()], 1);
    sealBatch(batch, -1);
    expect(checkBatch(batch, 0, batch.length, LIMIT)).toMatchObject({
      kind: 'invalid',
      reason: expect.stringMatching(/negative log offset -1/),
    });
    expect(() => decodeBatch(batch)).toThrow(/CORRUPT_MESSAGE/);
  });

  it('refuses an offset key with a negative table, partition (other than -1 = none) or bucket id', () => {
    for (const ids of [{ tableId: -1 }, { partitionId: -2 }, { bucketId: -1 }]) {
      const batch = buildOffsetBatch('g', [spec(ids)], 1);
      sealBatch(batch, 0);
      expect(() => decodeBatch(batch), JSON.stringify(ids)).toThrow(/CORRUPT_MESSAGE.*negative id/);
    }
  });

  it('refuses a value whose metadata length is 0 but that has bytes after it, rather than dropping them', () => {
    const batch = buildOffsetBatch('g', [spec({ metadata: 'abc' })], 1);
    const lengthAt = batch.indexOf('abc', BATCH_HEADER_BYTES) - 1;
    expect(batch[lengthAt]).toBe(3);
    batch[lengthAt] = 0;
    sealBatch(batch, 0);
    expect(() => decodeBatch(batch)).toThrow(/CORRUPT_MESSAGE.*metadata of 0 bytes/);
  });

  it(`round-trips a group id of exactly ${GROUP_ID_BYTES_MAX} bytes and refuses one a byte longer`, () => {
    const longest = 'g'.repeat(GROUP_ID_BYTES_MAX);
    const batch = buildOffsetBatch(longest, [spec(), spec({ bucketId: 4, offset: 10 })], 1);
    sealBatch(batch, 0);
    expect(decodeBatch(batch).records.map((r) => [r.groupId, r.bucketId, r.offset])).toEqual([
      [longest, 3, 9],
      [longest, 4, 10],
    ]);
    const tooLong = buildOffsetBatch(`${longest}g`, [spec()], 1);
    sealBatch(tooLong, 0);
    expect(() => decodeBatch(tooLong)).toThrow(/CORRUPT_MESSAGE.*group id of 256 bytes/);
  });

  it('has the raw record reader refuse bytes after the last record and a key shorter than its type', () => {
    const trailing = buildOffsetBatch('g', [spec(), spec({ bucketId: 4 })], 1);
    trailing.writeInt32LE(1, 44); // record count 1 of the 2 records present
    sealBatch(trailing, 0);
    expect(() => forEachRawRecord(trailing, 0, () => {})).toThrow(/bytes after the last record/);

    const shortKey = buildOffsetBatch('g', [spec()], 1);
    shortKey[BATCH_HEADER_BYTES + 4] = 1; // key length 1: not even the int16 record type
    sealBatch(shortKey, 0);
    expect(() => forEachRawRecord(shortKey, 0, () => {})).toThrow(/key length 1 out of bounds/);
  });
});
