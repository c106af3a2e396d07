/**
 * Decoding bytes from the network: truncated, flipped, random or length-lying input raises
 * KafkaDecodeError (INVALID_REQUEST) and nothing else, never a RangeError from Buffer, never a long
 * loop or a large allocation. Samples are random; a failure prints the seed, and
 * KAFKA_PROPERTY_SEED=<seed> replays it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  API_KEYS,
  ARRAY_ELEMENTS_MAX,
  KAFKA_APIS,
  KafkaDecodeError,
  decodeOffsetCommitColumns,
  decodeRequest,
  decodeRequestHeader,
  decodeResponse,
  encodeRequest,
  versionsOf,
  type ApiKey,
} from '../../../src/kafka/protocol/index.js';
import { isOffsetStoreError } from '../../../src/errors/index.js';
import { hex, messageArb, propertyParameters, utf8Hex } from './protocol-fixtures.js';

const SEED = Number(process.env.KAFKA_PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const APIS = Object.entries(KAFKA_APIS).map(([key, entry]) => ({
  apiKey: Number(key) as ApiKey,
  ...entry,
}));
const ADVERTISED = APIS.flatMap((api) =>
  api.advertised === null
    ? []
    : versionsOf(`${api.advertised.min}-${api.advertised.max}`).map((version) => ({
        api,
        version,
      })),
);

/** 'decoded' or 'refused'; anything thrown but a KafkaDecodeError fails the test with its context. */
function outcome(run: () => unknown, context: string): 'decoded' | 'refused' {
  try {
    run();
    return 'decoded';
  } catch (error) {
    if (error instanceof KafkaDecodeError && isOffsetStoreError(error, 'INVALID_REQUEST'))
      return 'refused';
    throw new TypeError(`${context} (seed ${SEED}): threw ${String(error)}`, { cause: error });
  }
}

/** One request payload (no size field) per advertised API version, random but valid. */
function samplePayloads(): { name: string; payload: Buffer }[] {
  return ADVERTISED.map(({ api, version }, i) => {
    const [body] = fc.sample(messageArb(api.request, version), { numRuns: 1, seed: SEED + i });
    const frame = encodeRequest(
      { apiKey: api.apiKey, apiVersion: version, correlationId: i, clientId: 'c' },
      body!,
    );
    return { name: `${api.name} v${version}`, payload: frame.subarray(4) };
  });
}

describe('hostile input', () => {
  const samples = samplePayloads();

  it('every truncation of a request, at every byte, is refused (one random request per advertised API version)', () => {
    for (const { name, payload } of samples) {
      for (let bytes = 0; bytes < payload.length; bytes++) {
        expect(
          outcome(
            () => decodeRequest(payload.subarray(0, bytes)),
            `${name} cut to ${bytes} of ${payload.length} bytes`,
          ),
          `${name} cut to ${bytes} bytes (seed ${SEED})`,
        ).toBe('refused');
      }
      expect(outcome(() => decodeRequest(payload), name)).toBe('decoded');
    }
  });

  it('every single-byte flip of a request decodes to something or is refused, never anything else', () => {
    for (const { name, payload } of samples) {
      for (let position = 0; position < payload.length; position++) {
        for (const mask of [0x01, 0x80, 0xff]) {
          const copy = Buffer.from(payload);
          copy[position]! ^= mask;
          outcome(() => decodeRequest(copy), `${name} with byte ${position} ^ ${mask}`);
        }
      }
    }
  });

  it('random bytes as a request payload only ever raise KafkaDecodeError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        outcome(
          () => decodeRequest(Buffer.from(bytes)),
          `random payload ${Buffer.from(bytes).toString('hex')}`,
        );
        outcome(() => decodeRequestHeader(Buffer.from(bytes)), 'random header');
      }),
      propertyParameters(2000),
    );
  });

  it('random bytes after a valid header, for every API version described, only ever raise KafkaDecodeError', () => {
    const targets = APIS.flatMap((api) =>
      versionsOf(api.request.versions).map((version) => ({ api, version })),
    );
    fc.assert(
      fc.property(
        fc.constantFrom(...targets),
        fc.uint8Array({ maxLength: 200 }),
        ({ api, version }, bytes) => {
          const header = encodeRequest(
            { apiKey: api.apiKey, apiVersion: version, correlationId: 1, clientId: null },
            {},
          ).subarray(4);
          const headerBytes = decodeRequestHeader(header).headerBytes;
          const payload = Buffer.concat([header.subarray(0, headerBytes), bytes]);
          outcome(
            () => decodeRequest(payload),
            `${api.name} v${version} request body ${Buffer.from(bytes).toString('hex')}`,
          );
          outcome(
            () => decodeResponse(api.apiKey, version, Buffer.from(bytes)),
            `${api.name} v${version} response ${Buffer.from(bytes).toString('hex')}`,
          );
        },
      ),
      propertyParameters(3000),
    );
  });

  it('lengths and counts larger than the bytes present are refused before anything is read or allocated', () => {
    const commit = (body: string) => hex`0008 0005 00000001 0000 ${body}`;
    const cases: [string, Buffer, RegExp][] = [
      [
        'an int32 array count of 2^31 - 1',
        commit(`0002 ${utf8Hex('g1')} 00000001 0000 7fffffff`),
        /topics: 2147483647 elements of at least 6 bytes cannot fit in 0 bytes/,
      ],
      [
        'a negative array count below -1',
        commit(`0002 ${utf8Hex('g1')} 00000001 0000 80000000`),
        /topics: negative length -2147483648/,
      ],
      [
        'a string longer than the bytes left',
        commit(`7fff 6731`),
        /truncated groupId: needs 32767 bytes, 2 left/,
      ],
      [
        'a compact count of 2^32 - 2',
        hex`0008 0008 00000001 0000 00  03 ${utf8Hex('g1')} ffffffff 01 00 ffffffff0f`,
        /topics: 4294967294 elements/,
      ],
      [
        'a compact string length of 2^32 - 2',
        hex`0008 0008 00000001 0000 00  ffffffff0f`,
        /groupId: string of 4294967294 bytes/,
      ],
      [
        'bytes longer than the bytes left',
        hex`000e 0003 00000001 0000  0002 ${utf8Hex('g1')} 00000001 0000 ffff 00000001 0000 7fffffff 00`,
        /truncated assignments\[\]\.assignment: needs 2147483647 bytes/,
      ],
      [
        'a tagged field larger than the message',
        hex`000c 0004 00000001 0000 00  02 67 00000000 02 6d 00 01 00 7fffffff`,
        /truncated unknown tagged field 0/,
      ],
      [
        'a header tagged section that runs past the end',
        hex`000c 0004 00000001 0000 05 01 02 aa`,
        /tagged fields: 5 elements of at least 2 bytes cannot fit in 3 bytes/,
      ],
      [
        'a header tagged field larger than the bytes left',
        hex`000c 0004 00000001 0000 01 01 05 aa`,
        /truncated/,
      ],
    ];
    for (const [what, payload, message] of cases) {
      let caught: unknown;
      try {
        decodeRequest(payload);
      } catch (error) {
        caught = error;
      }
      expect(caught, what).toBeInstanceOf(KafkaDecodeError);
      expect((caught as Error).message, what).toMatch(message);
    }
  });

  it('a message of more than ARRAY_ELEMENTS_MAX array elements in all is refused, however few bytes each takes', () => {
    // An empty topic of a flexible OffsetCommit takes 3 bytes: a 100 MiB request could hold 35
    // million, and decoding them held the event loop for seconds.
    const commit = (topics: number) =>
      encodeRequest(
        { apiKey: API_KEYS.OffsetCommit, apiVersion: 8, correlationId: 1, clientId: 'c' },
        {
          groupId: 'g',
          topics: Array.from({ length: topics }, () => ({ name: '', partitions: [] })),
        },
      ).subarray(4);
    expect(ARRAY_ELEMENTS_MAX).toBe(1_000_000);
    const atLimit = decodeRequest(commit(ARRAY_ELEMENTS_MAX));
    expect((atLimit.body as { topics: unknown[] }).topics.length).toBe(ARRAY_ELEMENTS_MAX);
    const columns = (payload: Buffer) =>
      decodeOffsetCommitColumns(payload, decodeRequestHeader(payload));
    expect(columns(commit(ARRAY_ELEMENTS_MAX))).toBeDefined();
    const over = commit(ARRAY_ELEMENTS_MAX + 1);
    expect(() => decodeRequest(over)).toThrow(
      expect.objectContaining({
        constructor: KafkaDecodeError,
        message: expect.stringMatching(/topics: more than 1000000 array elements in one message/),
      }),
    );
    // The column reader leaves it to the table-driven decoder, which refuses it.
    expect(columns(over)).toBeUndefined();
    // Elements of nested arrays count too: 2 topics of 500,000 partitions and one more.
    const partitions = (n: number) =>
      Array.from({ length: n }, (_, p) => ({ partitionIndex: p, committedOffset: 1n }));
    const nested = encodeRequest(
      { apiKey: API_KEYS.OffsetCommit, apiVersion: 8, correlationId: 1, clientId: 'c' },
      {
        groupId: 'g',
        topics: [
          { name: 'a', partitions: partitions(500_000) },
          { name: 'b', partitions: partitions(499_999) },
        ],
      },
    ).subarray(4);
    expect(() => decodeRequest(nested)).toThrow(/partitions: more than 1000000 array elements/);
  });

  it('a tagged section claiming more fields than its bytes could hold, or than ARRAY_ELEMENTS_MAX, is refused before any is read', () => {
    const zeros = Buffer.alloc(1 << 20);
    const heartbeat = (tags: string, rest: Buffer) =>
      Buffer.concat([hex`000c 0004 00000001 0000 00  02 67 00000000 02 6d 00  ${tags}`, rest]);
    expect(() => decodeRequest(heartbeat('ffffffff0f', zeros))).toThrow(
      /tagged fields: 4294967295 elements of at least 2 bytes cannot fit in 1048576 bytes/,
    );
    // Empty unknown tags take 2 bytes each: a million and one fit in 2 MB.
    const emptyTags = Buffer.alloc(2 * (ARRAY_ELEMENTS_MAX + 1));
    expect(() => decodeRequest(heartbeat('c1843d', emptyTags))).toThrow(
      /tagged fields: more than 1000000 array elements in one message/,
    );
    // The header's tagged section too.
    expect(() =>
      decodeRequestHeader(Buffer.concat([hex`000c 0004 00000001 0000 c1843d`, emptyTags])),
    ).toThrow(/tagged fields: more than 1000000 array elements/);
  });
});
