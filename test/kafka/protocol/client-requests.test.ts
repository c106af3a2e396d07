/**
 * The requests kafkajs 2.2.4, librdkafka 2.15 and @platformatic/kafka 1.35 send, in the versions
 * they pick from the advertised ranges, decode into what the server needs. Where the bytes are
 * written out by hand they follow the clients' encoders (payloads, without the size field); the
 * others are built with this codec's encoder from the fields those encoders set.
 */
import { describe, expect, it } from 'vitest';
import {
  API_KEYS,
  decodeRequest,
  encodeRequest,
  encodeResponse,
  decodeResponse,
  isAdvertised,
  type ApiKey,
  type DecodedRequest,
  type RequestInputOf,
  type RequestOf,
} from '../../../src/kafka/protocol/index.js';
import { hex, utf8Hex } from './protocol-fixtures.js';

const T1 = utf8Hex('t1');
const G1 = utf8Hex('g1');

/** Decodes a payload and checks the API, version and that the server advertises that version. */
function decoded<K extends ApiKey>(apiKey: K, apiVersion: number, payload: Buffer): RequestOf<K> {
  const request: DecodedRequest = decodeRequest(payload);
  expect([request.apiKey, request.header.apiVersion]).toEqual([apiKey, apiVersion]);
  expect(isAdvertised(apiKey, apiVersion), `advertised ${apiKey} v${apiVersion}`).toBe(true);
  return request.body as RequestOf<K>;
}

/** Encodes a request as a client would and decodes it as the server will. */
function sent<K extends ApiKey>(
  apiKey: K,
  apiVersion: number,
  body: RequestInputOf<K>,
  clientId = 'client',
): RequestOf<K> {
  const frame = encodeRequest({ apiKey, apiVersion, correlationId: 11, clientId }, body);
  return decoded(apiKey, apiVersion, frame.subarray(4));
}

describe('kafkajs 2.2.4: non-flexible versions, request header v1', () => {
  const header = (apiKey: number, version: number) =>
    hex`${apiKey.toString(16).padStart(4, '0')} ${version.toString(16).padStart(4, '0')} 00000001 0007 ${utf8Hex('kafkajs')}`;

  it('admin listGroups: Metadata v6 for all topics (null) without auto-creation, then ListGroups v2', () => {
    const metadata = decoded(API_KEYS.Metadata, 6, Buffer.concat([header(3, 6), hex`ffffffff 00`]));
    expect(metadata).toMatchObject({ topics: null, allowAutoTopicCreation: false });
    expect(decoded(API_KEYS.ListGroups, 2, header(16, 2))).toEqual({
      statesFilter: [],
      typesFilter: [],
    });
  });

  it('consumer subscribe: Metadata v6 for one topic with auto-creation', () => {
    const metadata = decoded(
      API_KEYS.Metadata,
      6,
      Buffer.concat([header(3, 6), hex`00000001 0002 ${T1} 01`]),
    );
    expect(metadata.topics).toEqual([
      { topicId: '00000000-0000-0000-0000-000000000000', name: 't1' },
    ]);
    expect(metadata.allowAutoTopicCreation).toBe(true);
  });

  it('FindCoordinator v2 for a group, JoinGroup v5 with an empty member id and no instance id', () => {
    expect(
      decoded(API_KEYS.FindCoordinator, 2, Buffer.concat([header(10, 2), hex`0002 ${G1} 00`])),
    ).toMatchObject({ key: 'g1', keyType: 0 });
    const join = decoded(
      API_KEYS.JoinGroup,
      5,
      Buffer.concat([
        header(11, 5),
        hex`
      0002 ${G1}                      # groupId
      00007530 0000ea60               # session 30000 ms, rebalance 60000 ms
      0000                            # memberId ''
      ffff                            # groupInstanceId: null
      0008 ${utf8Hex('consumer')}     # protocolType
      00000001                        # protocols: 1
        0012 ${utf8Hex('RoundRobinAssigner')}
        0000000e 0001 00000001 0002 ${T1} 00000000   # metadata: version 1, topics [t1], no user data
    `,
      ]),
    );
    expect(join).toMatchObject({
      groupId: 'g1',
      sessionTimeoutMs: 30000,
      rebalanceTimeoutMs: 60000,
      memberId: '',
      groupInstanceId: null,
      protocolType: 'consumer',
      reason: null,
    });
    expect(join.protocols).toEqual([
      { name: 'RoundRobinAssigner', metadata: hex`0001 00000001 0002 ${T1} 00000000` },
    ]);
  });

  it('SyncGroup v3 from the leader, Heartbeat v3, LeaveGroup v3 with a members list', () => {
    const sync = sent(API_KEYS.SyncGroup, 3, {
      groupId: 'g1',
      generationId: 1,
      memberId: 'm1',
      groupInstanceId: null,
      assignments: [{ memberId: 'm1', assignment: Buffer.from([0, 1]) }],
    });
    expect(sync).toMatchObject({
      generationId: 1,
      assignments: [{ memberId: 'm1', assignment: Buffer.from([0, 1]) }],
      protocolType: null,
      protocolName: null,
    });
    expect(
      sent(API_KEYS.Heartbeat, 3, {
        groupId: 'g1',
        generationId: 1,
        memberId: 'm1',
        groupInstanceId: null,
      }),
    ).toMatchObject({ generationId: 1, memberId: 'm1' });
    const leave = sent(API_KEYS.LeaveGroup, 3, {
      groupId: 'g1',
      members: [{ memberId: 'm1', groupInstanceId: null }],
    });
    expect(leave).toMatchObject({
      memberId: '',
      members: [{ memberId: 'm1', groupInstanceId: null, reason: null }],
    });
  });

  it('OffsetFetch v4 for all topics (null), and for every partition of a topic', () => {
    expect(
      decoded(API_KEYS.OffsetFetch, 4, Buffer.concat([header(9, 4), hex`0002 ${G1} ffffffff`])),
    ).toMatchObject({ groupId: 'g1', topics: null, groups: [] });
    const listed = decoded(
      API_KEYS.OffsetFetch,
      4,
      Buffer.concat([header(9, 4), hex`0002 ${G1} 00000001 0002 ${T1} 00000002 00000000 00000001`]),
    );
    expect(listed.topics).toEqual([{ name: 't1', partitionIndexes: [0, 1] }]);
  });

  it('ListOffsets v3 for latest (-1) and earliest (-2)', () => {
    const list = sent(API_KEYS.ListOffsets, 3, {
      replicaId: -1,
      isolationLevel: 1,
      topics: [
        {
          name: 't1',
          partitions: [
            { partitionIndex: 0, timestamp: -1n },
            { partitionIndex: 1, timestamp: -2n },
          ],
        },
      ],
    });
    expect(list.topics[0]!.partitions.map((p) => p.timestamp)).toEqual([-1n, -2n]);
    expect(list.topics[0]!.partitions[0]!.currentLeaderEpoch).toBe(-1);
  });

  it('Fetch v11 on its own connection: session epoch -1, rack id ""', () => {
    const fetch = decoded(
      API_KEYS.Fetch,
      11,
      Buffer.concat([
        header(1, 11),
        hex`
      ffffffff 000001f4 00000001 00a00000   # replicaId -1, maxWaitMs 500, minBytes 1, maxBytes 10 MiB
      01 00000000 ffffffff                  # READ_COMMITTED, sessionId 0, sessionEpoch -1
      00000001 0002 ${T1}                   # topics: t1
        00000001 00000000 ffffffff          #   partition 0, currentLeaderEpoch -1
        0000000000000000 ffffffffffffffff   #   fetchOffset 0, logStartOffset -1
        00100000                            #   partitionMaxBytes 1 MiB
      00000000                              # forgottenTopicsData: []
      0000                                  # rackId ''
    `,
      ]),
    );
    expect(fetch).toMatchObject({
      maxWaitMs: 500,
      sessionEpoch: -1,
      rackId: '',
      forgottenTopicsData: [],
      clusterId: null,
    });
    expect(fetch.topics).toEqual([
      {
        topic: 't1',
        topicId: '00000000-0000-0000-0000-000000000000',
        partitions: [
          {
            partition: 0,
            currentLeaderEpoch: -1,
            fetchOffset: 0n,
            lastFetchedEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: 1048576,
            replicaDirectoryId: '00000000-0000-0000-0000-000000000000',
          },
        ],
      },
    ]);
  });

  it('admin describeGroups and deleteGroups: DescribeGroups v2, DeleteGroups v1', () => {
    expect(
      decoded(API_KEYS.DescribeGroups, 2, Buffer.concat([header(15, 2), hex`00000001 0002 ${G1}`]))
        .groups,
    ).toEqual(['g1']);
    expect(
      decoded(
        API_KEYS.DeleteGroups,
        1,
        Buffer.concat([header(42, 1), hex`00000002 0002 ${G1} 0000`]),
      ).groupsNames,
    ).toEqual(['g1', '']);
  });
});

describe('librdkafka 2.15: flexible versions where offered (ApiVersions v3, header v2)', () => {
  const header = (apiKey: number, version: number) =>
    hex`${apiKey.toString(16).padStart(4, '0')} ${version.toString(16).padStart(4, '0')} 00000002 0007 ${utf8Hex('rdkafka')} 00`;

  it('Metadata v12 for brokers only (topics []) and for all topics (null)', () => {
    expect(
      decoded(API_KEYS.Metadata, 12, Buffer.concat([header(3, 12), hex`01 01 00 00`])),
    ).toMatchObject({ topics: [], allowAutoTopicCreation: true });
    expect(
      decoded(API_KEYS.Metadata, 12, Buffer.concat([header(3, 12), hex`00 00 00 00`])),
    ).toMatchObject({ topics: null, allowAutoTopicCreation: false });
  });

  it('Metadata v12 for all topics as librdkafka 2.15.1 really sends it: a 4-byte placeholder of zeros where the compact null belongs, read as null', () => {
    // rd_kafka_MetadataRequest0 (rdkafka_request.c) reserves an int32 for the topic count and, for
    // all topics at v9+, leaves it as 00000000 ("varint encoded null") instead of one 00 byte;
    // captured from a librdkafka 2.15.1 consumer.
    const payload = Buffer.concat([
      header(3, 12),
      hex`00000000 # topics: null, 4 bytes
      01 # allowAutoTopicCreation
      00 # includeTopicAuthorizedOperations
      00 # tags`,
    ]);
    expect(decoded(API_KEYS.Metadata, 12, payload)).toMatchObject({
      topics: null,
      allowAutoTopicCreation: true,
      includeTopicAuthorizedOperations: false,
    });
  });

  it('admin fetchOffsets: OffsetFetch v8 with require_stable and topics null', () => {
    const fetch = decoded(
      API_KEYS.OffsetFetch,
      8,
      Buffer.concat([
        header(9, 8),
        hex`
      02                 # groups: 1
        03 ${G1}         #   groupId
        00               #   topics: null (all)
        00               #   group tags
      01                 # requireStable
      00                 # body tags
    `,
      ]),
    );
    expect(fetch).toEqual({
      groupId: '',
      topics: [],
      groups: [{ groupId: 'g1', memberId: null, memberEpoch: -1, topics: null }],
      requireStable: true,
    });
  });

  it('ListOffsets v6, one request per partition, for the earliest offset', () => {
    const list = decoded(
      API_KEYS.ListOffsets,
      6,
      Buffer.concat([
        header(2, 6),
        hex`
      ffffffff 01                       # replicaId -1, READ_COMMITTED
      02 03 ${T1}                       # topics: t1
        02 00000000 ffffffff            #   partition 0, currentLeaderEpoch -1
        fffffffffffffffe 00             #   timestamp -2 (earliest), partition tags
        00                              #   topic tags
      00                                # body tags
    `,
      ]),
    );
    expect(list.topics).toEqual([
      {
        name: 't1',
        partitions: [
          { partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -2n, maxNumOffsets: 1 },
        ],
      },
    ]);
  });

  it('Fetch v12 without fetch sessions, OffsetCommit v9 with a member epoch, LeaveGroup v1', () => {
    const fetch = sent(
      API_KEYS.Fetch,
      12,
      {
        maxWaitMs: 500,
        minBytes: 1,
        maxBytes: 52428800,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [
          {
            topic: 't1',
            partitions: [
              {
                partition: 0,
                currentLeaderEpoch: -1,
                fetchOffset: 0n,
                lastFetchedEpoch: -1,
                partitionMaxBytes: 1048576,
              },
            ],
          },
        ],
      },
      'rdkafka',
    );
    expect(fetch).toMatchObject({
      replicaId: -1,
      sessionEpoch: -1,
      topics: [{ topic: 't1', partitions: [{ fetchOffset: 0n, lastFetchedEpoch: -1 }] }],
    });
    const commit = sent(API_KEYS.OffsetCommit, 9, {
      groupId: 'g1',
      generationIdOrMemberEpoch: 3,
      memberId: 'Zm9vYmFyYmF6cXV4cXV1eA',
      topics: [
        {
          name: 't1',
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: 10n,
              committedLeaderEpoch: -1,
              committedMetadata: '',
            },
          ],
        },
      ],
    });
    expect(commit).toMatchObject({
      generationIdOrMemberEpoch: 3,
      memberId: 'Zm9vYmFyYmF6cXV4cXV1eA',
      groupInstanceId: null,
    });
    expect(
      decoded(
        API_KEYS.LeaveGroup,
        1,
        Buffer.concat([
          hex`000d 0001 00000002 0007 ${utf8Hex('rdkafka')}`,
          hex`0002 ${G1} 0002 ${utf8Hex('m1')}`,
        ]),
      ),
    ).toEqual({ groupId: 'g1', memberId: 'm1', members: [] });
  });

  it('KIP-848: a sparse ConsumerGroupHeartbeat v1 sends unchanged fields as null', () => {
    const memberId = 'Zm9vYmFyYmF6cXV4cXV1eA';
    const heartbeat = decoded(
      API_KEYS.ConsumerGroupHeartbeat,
      1,
      Buffer.concat([
        header(68, 1),
        hex`
      03 ${G1}                           # groupId
      17 ${utf8Hex(memberId)}            # memberId: 22 characters, client-made (KIP-1082)
      00000001                           # memberEpoch
      00 00                              # instanceId, rackId: null
      ffffffff                           # rebalanceTimeoutMs: -1, unchanged
      00 00 00                           # subscribedTopicNames, subscribedTopicRegex, serverAssignor: null
      00                                 # topicPartitions: null, unchanged
      00                                 # body tags
    `,
      ]),
    );
    expect(heartbeat).toEqual({
      groupId: 'g1',
      memberId,
      memberEpoch: 1,
      instanceId: null,
      rackId: null,
      rebalanceTimeoutMs: -1,
      subscribedTopicNames: null,
      subscribedTopicRegex: null,
      serverAssignor: null,
      topicPartitions: null,
    });
  });

  it('admin: DescribeGroups v5, ListGroups v4 with no state filter, DeleteGroups v2', () => {
    expect(
      sent(API_KEYS.DescribeGroups, 5, { groups: ['g1'], includeAuthorizedOperations: false })
        .groups,
    ).toEqual(['g1']);
    expect(sent(API_KEYS.ListGroups, 4, { statesFilter: [] })).toEqual({
      statesFilter: [],
      typesFilter: [],
    });
    expect(sent(API_KEYS.DeleteGroups, 2, { groupsNames: ['g1'] })).toEqual({
      groupsNames: ['g1'],
    });
  });
});

describe('@platformatic/kafka 1.35: flexible versions only', () => {
  const header = (apiKey: number, version: number) =>
    hex`${apiKey.toString(16).padStart(4, '0')} ${version.toString(16).padStart(4, '0')} 00000003 0003 ${utf8Hex('plt')} 00`;

  it('FindCoordinator v4 with a batch of coordinator keys', () => {
    const find = decoded(
      API_KEYS.FindCoordinator,
      4,
      Buffer.concat([header(10, 4), hex`00 02 03 ${G1} 00`]),
    );
    expect(find).toEqual({ key: '', keyType: 0, coordinatorKeys: ['g1'] });
  });

  it('classic consumer: JoinGroup v6, SyncGroup v4, Heartbeat v4, LeaveGroup v4', () => {
    expect(
      sent(API_KEYS.JoinGroup, 6, {
        groupId: 'g1',
        sessionTimeoutMs: 30000,
        rebalanceTimeoutMs: 60000,
        memberId: '',
        protocolType: 'consumer',
        protocols: [{ name: 'roundrobin', metadata: Buffer.from([1]) }],
      }),
    ).toMatchObject({ memberId: '', groupInstanceId: null, protocols: [{ name: 'roundrobin' }] });
    expect(
      sent(API_KEYS.SyncGroup, 4, {
        groupId: 'g1',
        generationId: 1,
        memberId: 'm1',
        assignments: [],
      }),
    ).toMatchObject({ assignments: [] });
    expect(
      sent(API_KEYS.Heartbeat, 4, { groupId: 'g1', generationId: 1, memberId: 'm1' }),
    ).toMatchObject({ generationId: 1 });
    expect(
      sent(API_KEYS.LeaveGroup, 4, { groupId: 'g1', members: [{ memberId: 'm1' }] }).members,
    ).toEqual([{ memberId: 'm1', groupInstanceId: null, reason: null }]);
  });

  it('admin deleteConsumerGroupOffsets: OffsetDelete v0, the one non-flexible request it sends', () => {
    const payload = hex`002f 0000 00000003 0003 ${utf8Hex('plt')}   0002 ${G1} 00000001 0002 ${T1} 00000002 00000000 00000001`;
    expect(decoded(API_KEYS.OffsetDelete, 0, payload)).toEqual({
      groupId: 'g1',
      topics: [{ name: 't1', partitions: [{ partitionIndex: 0 }, { partitionIndex: 1 }] }],
    });
  });

  it('KIP-848: a full ConsumerGroupHeartbeat v1 joining with epoch 0, and OffsetFetch v9 with the member epoch', () => {
    const join = sent(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'g1',
      memberId: '3b0a3b1e-7d3c-4d40-8a7e-1f1d2c3b4a59',
      memberEpoch: 0,
      rebalanceTimeoutMs: 300000,
      subscribedTopicNames: ['t1'],
      topicPartitions: [],
    });
    expect(join).toMatchObject({
      memberEpoch: 0,
      subscribedTopicNames: ['t1'],
      topicPartitions: [],
      serverAssignor: null,
      subscribedTopicRegex: null,
    });
    const fetch = sent(API_KEYS.OffsetFetch, 9, {
      groups: [
        {
          groupId: 'g1',
          memberId: 'm',
          memberEpoch: 1,
          topics: [{ name: 't1', partitionIndexes: [0] }],
        },
      ],
      requireStable: false,
    });
    expect(fetch.groups).toEqual([
      {
        groupId: 'g1',
        memberId: 'm',
        memberEpoch: 1,
        topics: [{ name: 't1', partitionIndexes: [0] }],
      },
    ]);
  });

  it('Metadata v12 naming topics, answered with topic ids', () => {
    expect(
      sent(API_KEYS.Metadata, 12, { topics: [{ name: 't1' }], allowAutoTopicCreation: false })
        .topics,
    ).toEqual([{ topicId: '00000000-0000-0000-0000-000000000000', name: 't1' }]);
    const topicId = '6f1c2c1e-0b55-4b3e-9a0e-3c2d1b0a9f8e';
    const response = encodeResponse(
      { apiKey: API_KEYS.Metadata, apiVersion: 12, correlationId: 1 },
      {
        brokers: [{ nodeId: 1, host: '127.0.0.1', port: 9092 }],
        controllerId: 1,
        topics: [
          {
            name: 't1',
            topicId,
            partitions: [{ partitionIndex: 0, leaderId: 1, replicaNodes: [1], isrNodes: [1] }],
          },
        ],
      },
    );
    const { body } = decodeResponse(API_KEYS.Metadata, 12, response.subarray(4));
    expect(body.topics[0]).toMatchObject({
      name: 't1',
      topicId,
      partitions: [{ leaderEpoch: -1, offlineReplicas: [] }],
    });
  });
});

describe("Produce, advertised for librdkafka's Fetch gate", () => {
  it('decodes v3 and v9 requests with their record sets as raw bytes, and answers each partition with an error', () => {
    const batch = Buffer.from('000000000000000000000031ffffffff02', 'hex');
    for (const version of [3, 9]) {
      const produce = sent(API_KEYS.Produce, version, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 30000,
        topicData: [
          {
            name: 't1',
            partitionData: [
              { index: 0, records: batch },
              { index: 1, records: null },
            ],
          },
        ],
      });
      expect(produce.topicData[0]!.partitionData).toEqual([
        { index: 0, records: batch },
        { index: 1, records: null },
      ]);
      const answer = encodeResponse(
        { apiKey: API_KEYS.Produce, apiVersion: version, correlationId: 1 },
        {
          responses: produce.topicData.map((t) => ({
            name: t.name,
            partitionResponses: t.partitionData.map((p) => ({
              index: p.index,
              errorCode: 42,
              baseOffset: -1n,
            })),
          })),
        },
      );
      const { body } = decodeResponse(API_KEYS.Produce, version, answer.subarray(4));
      expect(body.responses[0]!.partitionResponses.map((p) => [p.index, p.errorCode])).toEqual([
        [0, 42],
        [1, 42],
      ]);
    }
  });
});
