/**
 * The frame reader on its own: payloads come out whole and in order however the stream is split,
 * and a stream split into tiny pieces costs neither time nor memory out of proportion to its bytes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KafkaDecodeError } from '../../../src/kafka/protocol/index.js';
import { FrameReader } from '../../../src/kafka/server/index.js';

function frame(payload: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length);
  return Buffer.concat([size, payload]);
}

function payloadOf(length: number, seed: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) bytes[i] = (seed * 31 + i * 7) & 0xff;
  return bytes;
}

describe('FrameReader', () => {
  it('cuts out every payload whole and in order, however the stream is split', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.integer({ min: 1, max: 2500 }), { minLength: 1, maxLength: 40 }),
        (lengths, cuts) => {
          const payloads = lengths.map((length, i) => payloadOf(length, i));
          const stream = Buffer.concat(payloads.map(frame));
          const reader = new FrameReader(1 << 20);
          const out: Buffer[] = [];
          let at = 0;
          for (let c = 0; at < stream.length; c++) {
            const end = Math.min(stream.length, at + cuts[c % cuts.length]!);
            reader.push(stream.subarray(at, end));
            at = end;
            for (let p = reader.next(); p !== null; p = reader.next()) out.push(Buffer.from(p));
          }
          expect(out.length).toBe(payloads.length);
          out.forEach((p, i) => expect(p.equals(payloads[i]!)).toBe(true));
          expect(reader.bufferedBytes).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('keeps a payload it returned intact while later bytes arrive', () => {
    const reader = new FrameReader(1 << 20);
    const first = payloadOf(10, 1);
    const second = payloadOf(10, 2);
    for (const byte of frame(first)) reader.push(Buffer.from([byte]));
    const taken = reader.next()!;
    for (const byte of frame(second)) reader.push(Buffer.from([byte]));
    expect(taken).toEqual(first);
    expect(reader.next()).toEqual(second);
  });

  it('takes a frame sent a byte at a time in time and memory proportional to its bytes', () => {
    // 200k chunks: a reader that shifted its chunk array per chunk took ~40 s for this, and one
    // holding a Buffer per chunk held ~40 MB for these 200 KB.
    const payload = payloadOf(200_000, 3);
    const stream = frame(payload);
    const reader = new FrameReader(1 << 20);
    let chunksMax = 0;
    let early = 0;
    for (let i = 0; i < stream.length; i++) {
      reader.push(stream.subarray(i, i + 1));
      if (i % 1000 === 0) chunksMax = Math.max(chunksMax, reader.chunkCount);
      if (i < stream.length - 1 && reader.peek() !== null) early++;
    }
    expect(early).toBe(0);
    // 16 KiB blocks: ~13 of them for 200 KB.
    expect(chunksMax).toBeLessThan(20);
    expect(reader.next()).toEqual(payload);
    expect(reader.chunkCount).toBe(0);
    expect(reader.bufferedBytes).toBe(0);
  });

  it('holds about the bytes of a frame sent in small and large pieces by turns, and no block once all is consumed', () => {
    const payload = payloadOf(4 << 20, 5);
    const stream = frame(payload);
    const reader = new FrameReader(8 << 20);
    const before = process.memoryUsage().arrayBuffers;
    let at = 0;
    for (let i = 0; at < stream.length; i++) {
      const end = Math.min(stream.length, at + (i % 2 === 0 ? 1 : 1025));
      reader.push(stream.subarray(at, end));
      at = end;
    }
    // The pieces are views of `stream`: what grew is the reader's blocks (a fresh 16 KiB block per
    // 1-byte piece would be ~64 MB here).
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(8 << 20);
    expect(reader.next()!.equals(payload)).toBe(true);
    expect(reader.chunkCount).toBe(0);
  });

  it('refuses a size over the bound as soon as its 4 bytes are in', () => {
    const reader = new FrameReader(100);
    reader.push(Buffer.from([0, 0]));
    expect(reader.peek()).toBeNull();
    reader.push(Buffer.from([0, 101]));
    expect(() => reader.peek()).toThrow(KafkaDecodeError);
    const lower = new FrameReader(100);
    lower.push(frame(payloadOf(60, 4)));
    expect(() => lower.peek(50)).toThrow(/outside \[0, 50\]/);
  });
});
