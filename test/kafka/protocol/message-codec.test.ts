import { describe, expect, it } from 'vitest';
import {
  KafkaDecodeError,
  decodeMessage,
  encodeMessage,
  message,
} from '../../../src/kafka/protocol/index.js';
import { hex, utf8Hex } from './protocol-fixtures.js';

/** A small table exercising what the real ones use: flexible from 2, tags, nullable structs. */
const SAMPLE = message({
  name: 'SampleRequest',
  apiKey: 1000,
  kind: 'request',
  versions: '0-3',
  flexible: '2+',
  fields: [
    { name: 'id', type: 'int32', versions: '0+' },
    { name: 'note', type: 'string', versions: '0+', nullable: '1+' },
    { name: 'early', type: 'int16', versions: '0-1', default: 7 },
    { name: 'late', type: 'int64', versions: '3+', default: -1 },
    { name: 'hint', type: 'string', versions: '2+', tag: 5, nullable: '2+', default: null },
    { name: 'epoch', type: 'int32', versions: '2+', tag: 1, default: -1 },
    {
      name: 'owner',
      type: 'struct',
      versions: '2+',
      nullable: '2+',
      default: null,
      fields: [{ name: 'ids', type: '[]int32', versions: '2+' }],
    },
    {
      name: 'items',
      type: '[]struct',
      versions: '0+',
      nullable: '1+',
      fields: [
        { name: 'key', type: 'string', versions: '0+' },
        { name: 'value', type: 'bytes', versions: '0+', nullable: '0+' },
      ],
    },
  ],
});

function decodeError(run: () => unknown): KafkaDecodeError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(KafkaDecodeError);
    return error as KafkaDecodeError;
  }
  throw new TypeError('expected a KafkaDecodeError');
}

describe('message codec', () => {
  it('writes non-flexible versions with int16 string and int32 array lengths, -1 for null', () => {
    const bytes = encodeMessage(SAMPLE, 1, {
      id: 1,
      note: null,
      early: 2,
      items: [{ key: 'k', value: null }],
    });
    expect(bytes).toEqual(hex`
      00000001            # id
      ffff                # note: null
      0002                # early
      00000001            # items: 1
        0001 ${utf8Hex('k')} ffffffff   # key 'k', value null
    `);
    expect(decodeMessage(SAMPLE, 1, bytes)).toEqual({
      id: 1,
      note: null,
      early: 2,
      late: -1n,
      hint: null,
      epoch: -1,
      owner: null,
      items: [{ key: 'k', value: null }],
    });
  });

  it('writes flexible versions compactly, with a tagged section after every struct and tags in tag order', () => {
    const bytes = encodeMessage(SAMPLE, 3, {
      id: 1,
      note: 'n',
      late: 5n,
      hint: 'h',
      epoch: 9,
      owner: { ids: [4] },
      items: [{ key: '', value: Buffer.from([0xab]) }],
    });
    expect(bytes).toEqual(hex`
      00000001             # id
      02 ${utf8Hex('n')}   # note: compact length 1 + 1
      0000000000000005     # late (early is absent from v3)
      01                   # owner present
        02 00000004        # ids: [4]
        00                 # owner's tagged section: empty
      02                   # items: 1
        01                 # key ''
        02 ab              # value
        00                 # element's tagged section
      02                   # tagged section: 2 fields
        01 04 00000009     # tag 1 (epoch), 4 bytes
        05 02 02 ${utf8Hex('h')}   # tag 5 (hint), 2 bytes: compact 'h'
    `);
    expect(decodeMessage(SAMPLE, 3, bytes)).toMatchObject({
      early: 7,
      late: 5n,
      hint: 'h',
      epoch: 9,
      owner: { ids: [4] },
    });
  });

  it('leaves tagged fields at their default out, and decodes their absence as the default', () => {
    const bytes = encodeMessage(SAMPLE, 2, { id: 1, epoch: -1, hint: null });
    expect(bytes).toEqual(hex`00000001 01 ff 01 00`);
    expect(decodeMessage(SAMPLE, 2, bytes)).toEqual({
      id: 1,
      note: '',
      early: 7,
      late: -1n,
      hint: null,
      epoch: -1,
      owner: null,
      items: [],
    });
  });

  it('skips unknown tags by their size and reads a known tag within its size', () => {
    const body = hex`00000001 01 ff 01`;
    const decoded = decodeMessage(
      SAMPLE,
      2,
      Buffer.concat([body, hex`03  00 02 abcd  01 05 00000009 ee  7f 00`]),
    );
    expect(decoded).toMatchObject({ epoch: 9, hint: null });
    const short = decodeError(() =>
      decodeMessage(SAMPLE, 2, Buffer.concat([body, hex`01 01 03 000000`])),
    );
    expect(short.message).toMatch(/SampleRequest v2: truncated epoch/);
  });

  it('refuses null where the version does not allow it, on both sides', () => {
    expect(() => encodeMessage(SAMPLE, 0, { note: null })).toThrow(TypeError);
    expect(() => encodeMessage(SAMPLE, 0, { items: null })).toThrow(
      /SampleRequest v0: items is not nullable in this version/,
    );
    expect(
      decodeError(() => decodeMessage(SAMPLE, 0, hex`00000001 ffff 0007 00000000`)).message,
    ).toMatch(/note: null, which this version does not allow/);
    expect(
      decodeError(() => decodeMessage(SAMPLE, 0, hex`00000001 0000 0007 ffffffff`)).message,
    ).toMatch(/items: null/);
    expect(
      decodeError(() => decodeMessage(SAMPLE, 1, hex`00000001 fffe 0007 00000000`)).message,
    ).toMatch(/note: negative length -2/);
  });

  it('reads any negative presence byte as a null struct and any other as present, as Kafka does', () => {
    expect(decodeMessage(SAMPLE, 2, hex`00000001 01 80 01 00`).owner).toBeNull();
    expect(decodeMessage(SAMPLE, 2, hex`00000001 01 00 01 00 01 00`).owner).toEqual({ ids: [] });
  });

  it('holds strings to 32767 UTF-8 bytes in both encodings', () => {
    expect(
      decodeMessage(SAMPLE, 0, encodeMessage(SAMPLE, 0, { note: 'é'.repeat(16383) })).note,
    ).toHaveLength(16383);
    expect(() => encodeMessage(SAMPLE, 3, { note: 'x'.repeat(32768) })).toThrow(
      /note has 32768 UTF-8 bytes, more than 32767/,
    );
    const long = decodeError(() =>
      decodeMessage(SAMPLE, 3, Buffer.concat([hex`00000001 818002`, Buffer.alloc(32768)])),
    );
    expect(long.message).toMatch(/note: string of 32768 bytes, more than 32767/);
  });

  it('refuses a string of malformed UTF-8 that would outgrow 32767 bytes when written back', () => {
    // Each 0xFF byte reads as U+FFFD, three bytes in UTF-8: 10,922 of them fit, 10,923 do not.
    const malformed = (bytes: number): Buffer => {
      const placeholder = 'x'.repeat(bytes);
      const message = encodeMessage(SAMPLE, 0, { note: placeholder });
      const at = message.indexOf(placeholder);
      return message.fill(0xff, at, at + bytes);
    };
    expect(Buffer.byteLength(decodeMessage(SAMPLE, 0, malformed(10_922)).note as string)).toBe(
      32_766,
    );
    expect(decodeError(() => decodeMessage(SAMPLE, 0, malformed(10_923))).message).toMatch(
      /note: malformed UTF-8 of 10923 bytes that would take 32769 to write back, more than 32767/,
    );
  });

  it('refuses bytes left after the message: the sender and the table disagree', () => {
    expect(
      decodeError(() => decodeMessage(SAMPLE, 2, hex`00000001 01 ff 01 00 00`)).message,
    ).toMatch(/1 bytes left after the message/);
  });

  it('validates values before writing anything, naming the field', () => {
    expect(() => encodeMessage(SAMPLE, 0, { id: 2 ** 31 })).toThrow(
      /SampleRequest v0: id must be an int32, got 2147483648/,
    );
    expect(() => encodeMessage(SAMPLE, 0, { id: 1.5 })).toThrow(RangeError);
    expect(() => encodeMessage(SAMPLE, 3, { late: 2n ** 63n })).toThrow(/late must be an int64/);
    // @ts-expect-error a number where a bigint is expected
    expect(() => encodeMessage(SAMPLE, 3, { late: 5 })).toThrow(
      /late must be a bigint, got number/,
    );
    // @ts-expect-error a string where bytes are expected
    expect(() => encodeMessage(SAMPLE, 0, { items: [{ key: 'k', value: 'v' }] })).toThrow(
      /items\[\]\.value must be a Uint8Array/,
    );
    expect(() => encodeMessage(SAMPLE, 3, { owner: { ids: [2 ** 40] } })).toThrow(
      /owner\.ids must be an int32/,
    );
    expect(() => encodeMessage(SAMPLE, 4, {})).toThrow(/SampleRequest has no version 4/);
  });

  it('ignores fields a version lacks when encoding, as they are not on the wire', () => {
    expect(encodeMessage(SAMPLE, 0, { id: 1, late: 5n, hint: 'x', owner: { ids: [1] } })).toEqual(
      encodeMessage(SAMPLE, 0, { id: 1 }),
    );
  });
});
