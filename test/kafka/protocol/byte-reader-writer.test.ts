import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ByteReader,
  ByteWriter,
  KafkaDecodeError,
  unsignedVarintBytes,
  varintBytes,
  varlongBytes,
} from '../../../src/kafka/protocol/index.js';
import { isOffsetStoreError } from '../../../src/errors/index.js';
import { hex, propertyParameters } from './protocol-fixtures.js';

function reader(bytes: Buffer): ByteReader {
  return new ByteReader(bytes, 0, bytes.length, 'test');
}

function written(bytes: number, write: (w: ByteWriter) => void): Buffer {
  const w = new ByteWriter(bytes);
  write(w);
  return w.finish();
}

describe('varints', () => {
  it('encode unsigned varints as in KIP-482 (7 bits a byte, low first)', () => {
    expect(written(1, (w) => w.unsignedVarint(0))).toEqual(hex`00`);
    expect(written(1, (w) => w.unsignedVarint(127))).toEqual(hex`7f`);
    expect(written(2, (w) => w.unsignedVarint(128))).toEqual(hex`8001`);
    expect(written(2, (w) => w.unsignedVarint(300))).toEqual(hex`ac02`);
    expect(written(5, (w) => w.unsignedVarint(0xffffffff))).toEqual(hex`ffffffff0f`);
  });

  it('encode signed varints and varlongs zigzag (0, -1, 1, -2 -> 0, 1, 2, 3)', () => {
    expect(
      written(4, (w) => {
        w.varint(0);
        w.varint(-1);
        w.varint(1);
        w.varint(-2);
      }),
    ).toEqual(hex`00 01 02 03`);
    expect(written(5, (w) => w.varint(-(2 ** 31)))).toEqual(hex`ffffffff0f`);
    expect(written(10, (w) => w.varlong(-(2n ** 63n)))).toEqual(hex`ffffffffffffffffff01`);
    expect(written(1, (w) => w.varlong(-1n))).toEqual(hex`01`);
  });

  it('round-trip over their whole ranges, with sizes matching what is written', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        (u, s, l) => {
          const bytes = unsignedVarintBytes(u) + varintBytes(s) + varlongBytes(l);
          const buf = written(bytes, (w) => {
            w.unsignedVarint(u);
            w.varint(s);
            w.varlong(l);
          });
          const r = reader(buf);
          expect([r.unsignedVarint('u'), r.varint('s'), r.varlong('l'), r.remaining]).toEqual([
            u,
            s,
            l,
            0,
          ]);
        },
      ),
      propertyParameters(500),
    );
  });

  it('refuse encodings longer than their type allows instead of reading on', () => {
    expect(() => reader(hex`ffffffff7f`).unsignedVarint('count')).toThrow(/above 2\^32 - 1/);
    expect(() => reader(hex`8080808080 00`).unsignedVarint('count')).toThrow(/longer than 5 bytes/);
    expect(() => reader(hex`80808080808080808080 00`).varlong('delta')).toThrow(
      /longer than 10 bytes/,
    );
    expect(() => reader(hex`ffffffffffffffffff7f`).varlong('delta')).toThrow(/above 64 bits/);
    expect(() => reader(hex`8080`).unsignedVarint('count')).toThrow(/truncated count/);
  });
});

describe('fixed-width integers', () => {
  it('round-trip over their whole ranges, byte for byte as Buffer writes them (int64 on both sides of the safe-integer range)', () => {
    const int64 = fc.oneof(
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      fc.bigInt({ min: -(2n ** 53n) - 2n, max: -(2n ** 53n) + 2n }),
      fc.bigInt({ min: 2n ** 53n - 2n, max: 2n ** 53n + 2n }),
      fc.constantFrom(0n, -1n, -2n, 2n ** 32n - 1n, 2n ** 32n, -(2n ** 32n)),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: -128, max: 127 }),
        fc.integer({ min: -32768, max: 32767 }),
        fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
        int64,
        (a, b, c, d) => {
          const buf = written(15, (w) => {
            w.int8(a);
            w.int16(b);
            w.int32(c);
            w.int64(d);
          });
          const expected = Buffer.alloc(15);
          expected.writeInt8(a, 0);
          expected.writeInt16BE(b, 1);
          expected.writeInt32BE(c, 3);
          expected.writeBigInt64BE(d, 7);
          expect(buf).toEqual(expected);
          const r = reader(buf);
          expect([r.int8('a'), r.int16('b'), r.int32('c'), r.int64('d'), r.remaining]).toEqual([
            a,
            b,
            c,
            d,
            0,
          ]);
        },
      ),
      propertyParameters(1000),
    );
  });

  it('a write past the measured end is caught by finish()', () => {
    const w = new ByteWriter(3);
    w.int32(1);
    expect(() => w.finish()).toThrow(/wrote 4 of 3 measured bytes/);
  });
});

describe('ByteReader', () => {
  it('reads big-endian integers, bools (any non-zero is true), and uuids as lowercase 8-4-4-4-12', () => {
    const r = reader(hex`ff 8000 7fffffff 8000000000000000 02 00 0123456789ABCDEF0011223344556677`);
    expect(r.int8('a')).toBe(-1);
    expect(r.int16('b')).toBe(-32768);
    expect(r.int32('c')).toBe(2147483647);
    expect(r.int64('d')).toBe(-(2n ** 63n));
    expect(r.bool('e')).toBe(true);
    expect(r.bool('f')).toBe(false);
    expect(r.uuid('g')).toBe('01234567-89ab-cdef-0011-223344556677');
    expect(r.remaining).toBe(0);
  });

  it('raises a KafkaDecodeError (INVALID_REQUEST) naming what was cut short, never a Buffer RangeError', () => {
    const r = reader(hex`0001`);
    expect(r.int16('x')).toBe(1);
    for (const read of [
      () => r.int8('a'),
      () => r.int32('b'),
      () => r.int64('c'),
      () => r.uuid('d'),
      () => r.utf8(1, 'e'),
      () => r.bytes(1, 'f'),
      () => r.skip(1, 'g'),
    ]) {
      let caught: unknown;
      try {
        read();
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(KafkaDecodeError);
      expect(isOffsetStoreError(caught, 'INVALID_REQUEST')).toBe(true);
      expect((caught as KafkaDecodeError).position).toBe(2);
      expect(String(caught)).toMatch(/^KafkaDecodeError: INVALID_REQUEST: test: truncated [a-g]/);
    }
  });

  it('refuses an element count that cannot fit in the bytes left, before anything is allocated', () => {
    const r = reader(Buffer.alloc(100));
    r.checkCount(25, 4, 'ok');
    expect(() => r.checkCount(26, 4, 'partitions')).toThrow(
      /partitions: 26 elements of at least 4 bytes cannot fit in 100 bytes/,
    );
    expect(() => r.checkCount(101, 0, 'empty structs')).toThrow(KafkaDecodeError);
  });

  it('reads within a declared size and continues after it, whatever the inner read consumed', () => {
    const r = reader(hex`00000001 ee ff 07`);
    expect(r.within(5, 'tagged', () => r.int32('inner'))).toBe(1);
    expect(r.int8('after')).toBe(-1);
    expect(() => r.within(2, 'tagged', () => r.int16('inner'))).toThrow(/truncated tagged/);
    const s = reader(hex`0000 01`);
    expect(() => s.within(2, 'tagged', () => s.int32('inner'))).toThrow(/truncated inner/);
  });

  it('copies bytes out, so a decoded value does not pin the input buffer', () => {
    const input = hex`010203`;
    const value = reader(input).bytes(3, 'b');
    input[0] = 9;
    expect(value).toEqual(hex`010203`);
  });
});

describe('ByteWriter', () => {
  it('asserts that exactly the measured bytes were written', () => {
    const w = new ByteWriter(3);
    w.int16(1);
    expect(() => w.finish()).toThrow(/wrote 2 of 3 measured bytes/);
  });
});
