/**
 * Messages written byte by byte from the protocol specification, decoded and re-encoded: the codec
 * must read them as specified and produce exactly these bytes.
 */
import { describe, expect, it } from 'vitest';
import {
  API_KEYS,
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  type ApiKey,
  type RequestHeader,
  type RequestOf,
} from '../../../src/kafka/protocol/index.js';
import { hex, utf8Hex } from './protocol-fixtures.js';

/** Decodes a request payload that must be of API `apiKey`; the narrowing is the typed server's switch. */
function requestOf<K extends ApiKey>(
  apiKey: K,
  payload: Buffer,
): { header: RequestHeader; body: RequestOf<K> } {
  const request = decodeRequest(payload);
  expect(request.apiKey).toBe(apiKey);
  return request as { header: RequestHeader; body: RequestOf<K> };
}

describe('golden requests', () => {
  it('ApiVersions v0: header v1 and an empty body', () => {
    const frame = hex`
      00000011                    # size: 17
      0012 0000 0000002a          # ApiVersions v0, correlation id 42
      0007 ${utf8Hex('kafkajs')}  # client id
    `;
    const request = requestOf(API_KEYS.ApiVersions, frame.subarray(4));
    expect(request.header).toEqual({
      apiKey: 18,
      apiVersion: 0,
      correlationId: 42,
      clientId: 'kafkajs',
      headerVersion: 1,
      headerBytes: 17,
    });
    expect(request.body).toEqual({ clientSoftwareName: '', clientSoftwareVersion: '' });
    expect(
      encodeRequest(
        { apiKey: API_KEYS.ApiVersions, apiVersion: 0, correlationId: 42, clientId: 'kafkajs' },
        {},
      ),
    ).toEqual(frame);
  });

  it('ApiVersions v3: header v2, compact strings naming the client software', () => {
    const frame = hex`
      00000025                        # size: 37
      0012 0003 00000001              # ApiVersions v3, correlation id 1
      0007 ${utf8Hex('rdkafka')} 00   # client id (int16 length), header tags
      0b ${utf8Hex('librdkafka')}     # clientSoftwareName: compact, 10 + 1
      07 ${utf8Hex('2.15.1')}         # clientSoftwareVersion: 6 + 1
      00                              # body tags
    `;
    const request = requestOf(API_KEYS.ApiVersions, frame.subarray(4));
    expect(request.body).toEqual({
      clientSoftwareName: 'librdkafka',
      clientSoftwareVersion: '2.15.1',
    });
    expect(
      encodeRequest(
        { apiKey: API_KEYS.ApiVersions, apiVersion: 3, correlationId: 1, clientId: 'rdkafka' },
        request.body,
      ),
    ).toEqual(frame);
  });

  it('OffsetCommit v8 (flexible) as @platformatic/kafka sends it for an admin commit: generation -1, member ""', () => {
    const frame = hex`
      00000030                          # size: 48
      0008 0008 00000005                # OffsetCommit v8, correlation id 5
      0003 ${utf8Hex('plt')} 00         # client id, header tags
      03 ${utf8Hex('g1')}               # groupId
      ffffffff                          # generationIdOrMemberEpoch: -1
      01                                # memberId: ''
      00                                # groupInstanceId: null
      02                                # topics: 1
        03 ${utf8Hex('t1')}             #   name
        02                              #   partitions: 1
          00000000                      #     partitionIndex 0
          000000000000002a              #     committedOffset 42
          ffffffff                      #     committedLeaderEpoch -1
          00                            #     committedMetadata: null
          00                            #     partition tags
        00                              #   topic tags
      00                                # body tags
    `;
    const request = requestOf(API_KEYS.OffsetCommit, frame.subarray(4));
    expect(request.body).toEqual({
      groupId: 'g1',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [
        {
          name: 't1',
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: 42n,
              committedLeaderEpoch: -1,
              commitTimestamp: -1n,
              committedMetadata: null,
            },
          ],
        },
      ],
    });
    expect(
      encodeRequest(
        { apiKey: API_KEYS.OffsetCommit, apiVersion: 8, correlationId: 5, clientId: 'plt' },
        request.body,
      ),
    ).toEqual(frame);
  });

  it('OffsetCommit v5 (non-flexible) as kafkajs resetOffsets sends it: the literal sentinel -2', () => {
    const frame = hex`
      00000037                          # size: 55
      0008 0005 00000007                # OffsetCommit v5, correlation id 7
      0007 ${utf8Hex('kafkajs')}        # client id
      0002 ${utf8Hex('g1')}             # groupId
      00000001                          # generationIdOrMemberEpoch
      0002 ${utf8Hex('m1')}             # memberId
      00000001                          # topics: 1
        0002 ${utf8Hex('t1')}           #   name
        00000001                        #   partitions: 1
          00000000                      #     partitionIndex
          fffffffffffffffe              #     committedOffset: -2 (earliest)
          ffff                          #     committedMetadata: null
    `;
    const { body } = requestOf(API_KEYS.OffsetCommit, frame.subarray(4));
    expect(body).toMatchObject({
      groupId: 'g1',
      generationIdOrMemberEpoch: 1,
      memberId: 'm1',
      topics: [{ name: 't1', partitions: [{ committedOffset: -2n, committedMetadata: null }] }],
    });
    expect(
      encodeRequest(
        { apiKey: API_KEYS.OffsetCommit, apiVersion: 5, correlationId: 7, clientId: 'kafkajs' },
        body,
      ),
    ).toEqual(frame);
  });
});

describe('golden responses', () => {
  it('ApiVersions v0: the answer to an ApiVersions version the server does not support (error 35)', () => {
    const frame = encodeResponse(
      { apiKey: API_KEYS.ApiVersions, apiVersion: 0, correlationId: 1 },
      {
        errorCode: 35,
        apiKeys: [
          { apiKey: 18, minVersion: 0, maxVersion: 3 },
          { apiKey: 3, minVersion: 0, maxVersion: 12 },
        ],
      },
    );
    expect(frame).toEqual(hex`
      00000016                  # size: 22
      00000001                  # correlation id (header v0)
      0023                      # errorCode 35: UNSUPPORTED_VERSION
      00000002                  # apiKeys: 2
        0012 0000 0003          #   ApiVersions 0-3
        0003 0000 000c          #   Metadata 0-12
    `);
  });

  it('ApiVersions v3: header v0 even though the body is flexible, a tagged field written because it is not its default', () => {
    const frame = hex`
      00000024                  # size: 36
      00000001                  # correlation id: header v0, no tagged section
      0000                      # errorCode
      03                        # apiKeys: compact, 2 + 1
        0012 0000 0003 00       #   ApiVersions 0-3, element tags
        0003 0000 000c 00       #   Metadata 0-12
      00000000                  # throttleTimeMs
      01                        # tagged fields: 1
        01 08 0000000000000005  #   tag 1 (finalizedFeaturesEpoch), 8 bytes: 5
    `;
    const { correlationId, body } = decodeResponse(API_KEYS.ApiVersions, 3, frame.subarray(4));
    expect(correlationId).toBe(1);
    expect(body).toEqual({
      errorCode: 0,
      apiKeys: [
        { apiKey: 18, minVersion: 0, maxVersion: 3 },
        { apiKey: 3, minVersion: 0, maxVersion: 12 },
      ],
      throttleTimeMs: 0,
      supportedFeatures: [],
      finalizedFeaturesEpoch: 5n,
      finalizedFeatures: [],
      zkMigrationReady: false,
    });
    expect(
      encodeResponse({ apiKey: API_KEYS.ApiVersions, apiVersion: 3, correlationId: 1 }, body),
    ).toEqual(frame);
  });

  it('ConsumerGroupHeartbeat v1: the assignment behind its int8 presence byte, null as -1', () => {
    const topicId = '0123456789abcdef0123456789abcdef'.replace(
      /(.{8})(.{4})(.{4})(.{4})(.{12})/,
      '$1-$2-$3-$4-$5',
    );
    const assigned = encodeResponse(
      { apiKey: API_KEYS.ConsumerGroupHeartbeat, apiVersion: 1, correlationId: 3 },
      {
        memberId: 'm',
        memberEpoch: 2,
        heartbeatIntervalMs: 5000,
        assignment: { topicPartitions: [{ topicId, partitions: [0, 1] }] },
      },
    );
    expect(assigned).toEqual(hex`
      00000034                            # size: 52
      00000003 00                         # correlation id, header v1 tags
      00000000 0000                       # throttleTimeMs, errorCode
      00                                  # errorMessage: null
      02 ${utf8Hex('m')}                  # memberId
      00000002 00001388                   # memberEpoch 2, heartbeatIntervalMs 5000
      01                                  # assignment: present
        02                                #   topicPartitions: 1
          0123456789abcdef0123456789abcdef  # topicId
          03 00000000 00000001            #   partitions [0, 1]
          00                              #   element tags
        00                                #   assignment tags
      00                                  # body tags
    `);
    const unchanged = encodeResponse(
      { apiKey: API_KEYS.ConsumerGroupHeartbeat, apiVersion: 1, correlationId: 3 },
      { memberEpoch: 2, heartbeatIntervalMs: 5000 },
    );
    expect(unchanged.subarray(4)).toEqual(
      hex`00000003 00  00000000 0000 00 00 00000002 00001388 ff 00`,
    );
    expect(
      decodeResponse(API_KEYS.ConsumerGroupHeartbeat, 1, unchanged.subarray(4)).body.assignment,
    ).toBeNull();
  });

  it("Fetch v12: an empty partition with tagged structs written in tag order, whatever the value's key order", () => {
    const frame = encodeResponse(
      { apiKey: API_KEYS.Fetch, apiVersion: 12, correlationId: 4 },
      {
        responses: [
          {
            topic: 't1',
            partitions: [
              {
                snapshotId: { endOffset: 5n, epoch: 1 },
                divergingEpoch: { epoch: 3, endOffset: 4n },
                records: null,
              },
            ],
          },
        ],
      },
    );
    expect(frame.subarray(4)).toEqual(hex`
      00000004 00                  # correlation id, header tags
      00000000 0000 00000000       # throttleTimeMs, errorCode, sessionId
      02                           # responses: 1
        03 ${utf8Hex('t1')}        #   topic
        02                         #   partitions: 1
          00000000 0000            #     partitionIndex, errorCode
          0000000000000000         #     highWatermark 0
          ffffffffffffffff         #     lastStableOffset -1
          ffffffffffffffff         #     logStartOffset -1
          01                       #     abortedTransactions: []
          ffffffff                 #     preferredReadReplica -1
          00                       #     records: null
          02                       #     tagged fields: 2
            00 0d 00000003 0000000000000004 00   # tag 0 divergingEpoch {3, 4}, 13 bytes
            02 0d 0000000000000005 00000001 00   # tag 2 snapshotId {5, 1}, 13 bytes
        00                         #   topic tags
      00                           # body tags
    `);
  });
});
