/**
 * The columnar OffsetCommit path against the table-driven codec, the authority on the format: every
 * request the column reader accepts must decode the table-driven way to the same values, and the
 * response writer must write the bytes `encodeResponse` writes. Samples are random; a failure
 * prints fast-check's seed, and KAFKA_PROPERTY_SEED=<seed> replays it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  API_KEYS,
  FRAME_SIZE_BYTES,
  OFFSET_COMMIT_REQUEST,
  OFFSET_COMMIT_RESPONSE,
  decodeOffsetCommitColumns,
  decodeRequest,
  decodeRequestHeader,
  encodeOffsetCommitResponse,
  encodeRequest,
  encodeResponse,
  type OffsetCommitColumns,
  type RequestOf,
  type ResponseInputOf,
} from '../../../src/kafka/protocol/index.js';
import { messageArb, propertyParameters } from './protocol-fixtures.js';

type CommitRequest = RequestOf<typeof API_KEYS.OffsetCommit>;
type CommitResponse = ResponseInputOf<typeof API_KEYS.OffsetCommit>;

const VERSIONS = [2, 3, 4, 5, 6, 7, 8, 9];

/** The columns a decoded request comes to, computed from the table-driven decoder's values. */
function expectedColumns(body: CommitRequest): OffsetCommitColumns {
  const partitions = body.topics.flatMap((t) => t.partitions);
  return {
    groupId: body.groupId,
    generationIdOrMemberEpoch: body.generationIdOrMemberEpoch,
    memberId: body.memberId,
    groupInstanceId: body.groupInstanceId,
    topicNames: body.topics.map((t) => t.name),
    topicCounts: body.topics.map((t) => t.partitions.length),
    partitionIndexes: partitions.map((p) => p.partitionIndex),
    offsets: partitions.map((p) => Number(p.committedOffset)),
    leaderEpochs: partitions.map((p) => p.committedLeaderEpoch),
    metadata: partitions.map((p) => p.committedMetadata),
  };
}

function frameOf(version: number, body: unknown): Buffer {
  return encodeRequest(
    { apiKey: API_KEYS.OffsetCommit, apiVersion: version, correlationId: 7, clientId: 'test' },
    body as CommitRequest,
  );
}

/** An admin commit (no member) of one topic `t`, as the table-driven decoder gives it back. */
function adminCommit(partitions: CommitRequest['topics'][number]['partitions']): CommitRequest {
  return {
    groupId: 'g',
    generationIdOrMemberEpoch: -1,
    memberId: '',
    groupInstanceId: null,
    retentionTimeMs: -1n,
    topics: [{ name: 't', partitions }],
  };
}

/** The column reader's verdict on a payload, checked against the table-driven decoder's. */
function checkAgainstTableDriven(payload: Buffer): OffsetCommitColumns | undefined {
  let header;
  try {
    header = decodeRequestHeader(payload);
  } catch {
    return undefined;
  }
  const columns = decodeOffsetCommitColumns(payload, header);
  if (columns !== undefined) {
    const body = decodeRequest(payload, header).body as CommitRequest;
    expect(columns).toEqual(expectedColumns(body));
  }
  return columns;
}

describe('OffsetCommit read into columns', () => {
  it('reads every valid request of v2-v9 as the table-driven decoder does (offsets as Number(int64))', () => {
    for (const version of VERSIONS) {
      fc.assert(
        fc.property(messageArb(OFFSET_COMMIT_REQUEST, version), (body) => {
          const payload = frameOf(version, body).subarray(FRAME_SIZE_BYTES);
          const columns = checkAgainstTableDriven(payload);
          expect(columns, `v${version} was not read`).toBeDefined();
        }),
        propertyParameters(),
      );
    }
  });

  it('reads a 100-partition commit, offsets past 2^53 coming out unsafe', () => {
    const body = {
      groupId: 'g',
      generationIdOrMemberEpoch: 3,
      memberId: 'm',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [
        {
          name: 'orders',
          partitions: Array.from({ length: 100 }, (_, p) => ({
            partitionIndex: p,
            committedOffset: p === 99 ? 2n ** 53n + 1n : BigInt(p * 1000 - 2),
            committedLeaderEpoch: 5,
            commitTimestamp: -1n,
            committedMetadata: p % 2 === 0 ? '' : null,
          })),
        },
      ],
    };
    const payload = frameOf(8, body).subarray(FRAME_SIZE_BYTES);
    const columns = checkAgainstTableDriven(payload)!;
    expect(columns.offsets[0]).toBe(-2);
    expect(columns.offsets[98]).toBe(97_998);
    expect(Number.isSafeInteger(columns.offsets[99])).toBe(false);
    expect(columns.metadata.slice(0, 2)).toEqual(['', null]);
  });

  it('reads partitions with empty, null and other metadata, one after another, at every version', () => {
    const metadata = ['', null, 'checkpoint-7', '', 'é✓', null, ''];
    for (const version of VERSIONS) {
      const body = adminCommit(
        metadata.map((m, p) => ({
          partitionIndex: p,
          committedOffset: BigInt(p) - 2n,
          committedLeaderEpoch: p - 1,
          commitTimestamp: -1n,
          committedMetadata: m,
        })),
      );
      const payload = frameOf(version, body).subarray(FRAME_SIZE_BYTES);
      const columns = checkAgainstTableDriven(payload);
      expect(columns?.metadata, `v${version}`).toEqual(metadata);
      expect(columns?.offsets.slice(0, 3)).toEqual([-2, -1, 0]);
    }
  });

  it('leaves a partition with a tagged field to the table-driven decoder', () => {
    const body = adminCommit([
      {
        partitionIndex: 3,
        committedOffset: 5n,
        committedLeaderEpoch: 1,
        commitTimestamp: -1n,
        committedMetadata: '',
      },
    ]);
    const payload = frameOf(8, body).subarray(FRAME_SIZE_BYTES);
    const header = decodeRequestHeader(payload);
    // The partition's tag section is the third byte from the end (then the topic's and the body's).
    const tagged = Buffer.concat([
      payload.subarray(0, -3),
      Buffer.from([1, 7, 1, 0xab]),
      payload.subarray(-2),
    ]);
    expect(decodeOffsetCommitColumns(tagged, header)).toBeUndefined();
    // A tag section [1, 0, 0] (one empty field, tag 0) and nothing after it: a reader that took its
    // first byte for an empty section would read the rest as the topic's and the body's sections.
    const shifted = Buffer.concat([payload.subarray(0, -3), Buffer.from([1, 0, 0])]);
    expect(decodeOffsetCommitColumns(shifted, header)).toBeUndefined();
    const decoded = decodeRequest(tagged, header).body as CommitRequest;
    expect(decoded.topics[0]!.partitions[0]!).toMatchObject({
      partitionIndex: 3,
      committedOffset: 5n,
    });
  });

  it('leaves to the table-driven decoder what it is not sure of: tagged fields, bytes left over, a truncated body, other versions', () => {
    const body = adminCommit([
      {
        partitionIndex: 0,
        committedOffset: 5n,
        committedLeaderEpoch: -1,
        commitTimestamp: -1n,
        committedMetadata: '',
      },
    ]);
    const payload = frameOf(8, body).subarray(FRAME_SIZE_BYTES);
    const header = decodeRequestHeader(payload);
    expect(decodeOffsetCommitColumns(payload, header)).toBeDefined();
    // An unknown tagged field in the body's own section (the last byte): the table-driven decoder
    // skips it; the column reader leaves it to that decoder.
    const tagged = Buffer.concat([payload.subarray(0, -1), Buffer.from([1, 9, 2, 0xab, 0xcd])]);
    expect(decodeOffsetCommitColumns(tagged, header)).toBeUndefined();
    expect(decodeRequest(tagged, header).body).toMatchObject({ groupId: 'g' });
    // Bytes left over, and a body cut short.
    expect(decodeOffsetCommitColumns(Buffer.concat([payload, Buffer.from([0])]), header)).toBe(
      undefined,
    );
    expect(decodeOffsetCommitColumns(payload.subarray(0, -3), header)).toBeUndefined();
    // v0 and v1 (not served) and other APIs are not read here.
    const v1 = frameOf(1, body).subarray(FRAME_SIZE_BYTES);
    expect(decodeOffsetCommitColumns(v1, decodeRequestHeader(v1))).toBeUndefined();
    expect(decodeOffsetCommitColumns(payload, { ...header, apiKey: API_KEYS.OffsetFetch })).toBe(
      undefined,
    );
  });

  it('refuses a hostile partition count before sizing anything by it', () => {
    const body = adminCommit([]);
    for (const version of [7, 8]) {
      const payload = frameOf(version, body).subarray(FRAME_SIZE_BYTES);
      const header = decodeRequestHeader(payload);
      // The partition count is the body's last bytes but one (flexible: a varint, then the topic's
      // and the body's tag sections) or last four (int32).
      const hostile = Buffer.from(payload);
      if (version >= 8) {
        const count = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x07]); // 2^31 - 1 + 1
        const cut = hostile.subarray(0, -3);
        const bytes = Buffer.concat([cut, count, Buffer.from([0, 0])]);
        expect(decodeOffsetCommitColumns(bytes, header)).toBeUndefined();
      } else {
        hostile.writeInt32BE(0x7fffffff, hostile.length - 4);
        expect(decodeOffsetCommitColumns(hostile, header)).toBeUndefined();
      }
    }
  });

  it('never throws, and agrees with the table-driven decoder on whatever it reads from damaged requests', () => {
    for (const version of VERSIONS) {
      fc.assert(
        fc.property(
          messageArb(OFFSET_COMMIT_REQUEST, version),
          fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), {
            minLength: 1,
            maxLength: 4,
          }),
          fc.nat(),
          (body, flips, cut) => {
            const payload = Buffer.from(frameOf(version, body).subarray(FRAME_SIZE_BYTES));
            const headerBytes = decodeRequestHeader(payload).headerBytes;
            const bodyBytes = payload.length - headerBytes;
            if (bodyBytes === 0) return;
            for (const [at, value] of flips) payload[headerBytes + (at % bodyBytes)] = value;
            checkAgainstTableDriven(payload);
            checkAgainstTableDriven(payload.subarray(0, headerBytes + (cut % bodyBytes)));
          },
        ),
        propertyParameters(),
      );
    }
  });
});

describe('OffsetCommit response written from columns', () => {
  it('writes the bytes encodeResponse writes, at every version v2-v9', () => {
    for (const version of VERSIONS) {
      fc.assert(
        fc.property(
          messageArb(OFFSET_COMMIT_RESPONSE, version),
          fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
          (body, correlationId) => {
            const response = body as CommitResponse;
            const topics = response.topics ?? [];
            const answer = {
              topicNames: topics.map((t) => t.name),
              topicCounts: topics.map((t) => t.partitions?.length ?? 0),
              partitionIndexes: topics.flatMap((t) => t.partitions?.map((p) => p.partitionIndex)),
              errorCodes: topics.flatMap((t) => t.partitions?.map((p) => p.errorCode)),
            };
            const throttle = response.throttleTimeMs ?? 0;
            const expected = encodeResponse(
              { apiKey: API_KEYS.OffsetCommit, apiVersion: version, correlationId },
              { ...response, throttleTimeMs: throttle },
            );
            const written = encodeOffsetCommitResponse(
              version,
              correlationId,
              throttle,
              answer as never,
            );
            expect(written.toString('hex')).toBe(expected.toString('hex'));
          },
        ),
        propertyParameters(),
      );
    }
  });

  it('refuses a topic name over 32767 UTF-8 bytes, as encodeResponse does', () => {
    const name = 'é'.repeat(20_000); // 40,000 bytes
    const answer = { topicNames: [name], topicCounts: [0], partitionIndexes: [], errorCodes: [] };
    expect(() => encodeOffsetCommitResponse(8, 1, 0, answer)).toThrow(RangeError);
    expect(() =>
      encodeResponse(
        { apiKey: API_KEYS.OffsetCommit, apiVersion: 8, correlationId: 1 },
        { throttleTimeMs: 0, topics: [{ name, partitions: [] }] },
      ),
    ).toThrow(RangeError);
  });
});
