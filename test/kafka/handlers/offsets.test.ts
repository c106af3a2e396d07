/**
 * OffsetCommit, OffsetFetch and ListOffsets as each version speaks them. Offsets, leader epochs and
 * metadata round-trip through every advertised version pair, negative offsets (kafkajs's -1 and -2)
 * included; partition p of a topic is bucket p of its table. Per-partition errors leave the other
 * partitions committed; a commit's store error applies to all its partitions; an admin commit
 * (generation -1, no member) is refused while the group has members. OffsetFetch answers -1 for
 * nothing committed, every catalog topic's offsets for null topics, several groups from v8, the
 * group's error where each version carries it, and UNSTABLE_OFFSET_COMMIT under require_stable
 * while a commit is in flight. ListOffsets answers 0 for the ends of every known partition.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  API_KEYS,
  KAFKA_ERROR,
  encodeRequest,
  type RequestInputOf,
} from '../../../src/kafka/protocol/index.js';
import { OffsetStore, startKafkaServer } from '../../../src/index.js';
import { HeldDatasyncFileSystem } from '../../store/store-fixtures.js';
import { tempDir } from '../../support/temp-dir.js';
import { RawKafkaClient } from '../support/raw-kafka-client.js';
import {
  startTestServer,
  type TestServer,
  type TestServerOptions,
} from '../support/server-fixture.js';

let running: TestServer | undefined;
const clients: RawKafkaClient[] = [];

async function startServer(
  options: TestServerOptions = {},
): Promise<{ t: TestServer; client: RawKafkaClient }> {
  running = await startTestServer({
    ...options,
    server: {
      topics: [
        { name: 'orders', partitions: 4 },
        { name: 'audit', partitions: 1 },
      ],
      ...options.server,
    },
  });
  const client = await RawKafkaClient.connect(running.server.port);
  clients.push(client);
  return { t: running, client };
}

/**
 * A server whose fdatasyncs are held, a second client to read with, and group g's admin commit of
 * orders-0 at 8 sent and held in flight (`fs.releaseOne()` lets it land).
 */
async function commitHeldInFlight(
  start: (options: TestServerOptions) => Promise<{ t: TestServer; client: RawKafkaClient }>,
) {
  const fs = new HeldDatasyncFileSystem();
  const { t, client } = await start({ store: { fs } });
  const reader = await RawKafkaClient.connect(t.server.port);
  clients.push(reader);
  fs.holding = true;
  const commit = client.send(
    API_KEYS.OffsetCommit,
    9,
    adminCommit('g', { orders: [{ partitionIndex: 0, committedOffset: 8n }] }),
  );
  await fs.heldCount(1);
  return { fs, reader, commit };
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
});

type CommitRequest = RequestInputOf<typeof API_KEYS.OffsetCommit>;
type CommitPartition = NonNullable<
  NonNullable<CommitRequest['topics']>[number]['partitions']
>[number];

function adminCommit(
  groupId: string,
  partitions: Record<string, CommitPartition[]>,
): CommitRequest {
  return {
    groupId,
    generationIdOrMemberEpoch: -1,
    memberId: '',
    topics: Object.entries(partitions).map(([name, p]) => ({ name, partitions: p })),
  };
}

/**
 * Every test of commits and fetches runs on a plain server and behind an authorizer that lets
 * everything through (the anonymous client is a super user): the ACL wrappers in front of the
 * handlers must change no answer the handlers give. The two also take the two paths of an
 * OffsetCommit: a plain server reads it into columns and answers from them, one with wrapped
 * handlers decodes it the table-driven way for the wrappers.
 */
const SERVERS = [
  { path: 'plain', server: {} },
  {
    path: 'authorizer',
    server: { security: { authorizer: { superUsers: ['User:ANONYMOUS'] } } },
  },
] as const;

describe.each(SERVERS)('OffsetCommit and OffsetFetch ($path)', ({ server }) => {
  const start = (options: TestServerOptions = {}) =>
    startServer({ ...options, server: { ...server, ...options.server } });

  it('round-trip offsets (negative ones too), leader epochs and metadata through every advertised version', async () => {
    const { client } = await start();
    for (let commitVersion = 2; commitVersion <= 9; commitVersion++) {
      const groupId = `g${commitVersion}`;
      const committed = await client.send(
        API_KEYS.OffsetCommit,
        commitVersion,
        adminCommit(groupId, {
          orders: [
            {
              partitionIndex: 0,
              committedOffset: 1042n,
              committedLeaderEpoch: 7,
              committedMetadata: 'host-a',
            },
            { partitionIndex: 1, committedOffset: -1n, committedMetadata: null },
            { partitionIndex: 2, committedOffset: -2n, committedMetadata: '' },
          ],
        }),
      );
      expect(
        committed.topics[0]!.partitions.map((p) => p.errorCode),
        `v${commitVersion}`,
      ).toEqual([0, 0, 0]);
      for (let fetchVersion = 1; fetchVersion <= 9; fetchVersion++) {
        const asked = [{ name: 'orders', partitionIndexes: [0, 1, 2, 3] }];
        const response = await client.send(
          API_KEYS.OffsetFetch,
          fetchVersion,
          fetchVersion >= 8 ? { groups: [{ groupId, topics: asked }] } : { groupId, topics: asked },
        );
        const partitions = (fetchVersion >= 8 ? response.groups[0]!.topics : response.topics)[0]!
          .partitions;
        const where = `commit v${commitVersion}, fetch v${fetchVersion}`;
        expect(
          partitions.map((p) => p.committedOffset),
          where,
        ).toEqual([1042n, -1n, -2n, -1n]);
        expect(
          partitions.map((p) => p.metadata),
          where,
        ).toEqual(['host-a', '', '', '']);
        expect(
          partitions.map((p) => p.errorCode),
          where,
        ).toEqual([0, 0, 0, 0]);
        if (fetchVersion >= 5)
          expect(partitions[0]!.committedLeaderEpoch, where).toBe(commitVersion >= 6 ? 7 : -1);
      }
    }
  });

  it('commits the valid partitions and answers the others: unknown topic or partition, metadata over 4096 bytes, an offset beyond a safe integer', async () => {
    const { t, client } = await start();
    const response = await client.send(
      API_KEYS.OffsetCommit,
      8,
      adminCommit('g', {
        orders: [
          { partitionIndex: 0, committedOffset: 5n },
          { partitionIndex: 4, committedOffset: 5n },
          { partitionIndex: 1, committedOffset: 6n, committedMetadata: 'é'.repeat(2049) },
          { partitionIndex: 2, committedOffset: 2n ** 53n },
          { partitionIndex: 2, committedOffset: -(2n ** 53n) },
          { partitionIndex: 3, committedOffset: 2n ** 53n - 1n },
        ],
        nope: [{ partitionIndex: 0, committedOffset: 5n }],
        audit: [{ partitionIndex: 0, committedOffset: 9n, committedMetadata: 'm'.repeat(4096) }],
      }),
    );
    expect(response.topics.map((topic) => topic.partitions.map((p) => p.errorCode))).toEqual([
      [
        0,
        KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
        KAFKA_ERROR.OFFSET_METADATA_TOO_LARGE,
        KAFKA_ERROR.INVALID_REQUEST,
        KAFKA_ERROR.INVALID_REQUEST,
        0,
      ],
      [KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION],
      [0],
    ]);
    const stored = await t.store.fetchOffsets('g', [
      { tableId: 1, bucketId: 0 },
      { tableId: 1, bucketId: 1 },
      { tableId: 1, bucketId: 2 },
      { tableId: 1, bucketId: 3 },
      { tableId: 2, bucketId: 0 },
    ]);
    expect(stored.map((o) => o?.offset ?? null)).toEqual([
      5,
      null,
      null,
      Number.MAX_SAFE_INTEGER,
      9,
    ]);
  });

  it("holds a commit to the store's limit on offsets per commit: over it, every partition is INVALID_REQUEST and nothing is written", async () => {
    const { t, client } = await start({ store: { commitRecordCountMax: 2 } });
    const partitions = (count: number) => ({
      orders: Array.from({ length: count }, (_, p) => ({
        partitionIndex: p,
        committedOffset: 7n,
      })),
    });
    const codes = async (request: CommitRequest) =>
      (await client.send(API_KEYS.OffsetCommit, 8, request)).topics[0]!.partitions.map(
        (p) => p.errorCode,
      );
    expect(await codes(adminCommit('g', partitions(3)))).toEqual([42, 42, 42]);
    expect((await t.store.stats()).totals.liveOffsets, 'none of it was written').toBe(0);
    expect(await codes(adminCommit('g', partitions(2)))).toEqual([0, 0]);
    expect((await t.store.stats()).totals.liveOffsets).toBe(2);
  });

  it('refuses, writing nothing, a commit naming a topic whose malformed UTF-8 could not be written back in the answer', async () => {
    const { t, client } = await start();
    // 11,000 bytes of 0xFF: each reads as U+FFFD, three bytes when the answer echoes the name, over
    // the 32,767 bytes a string may take on the wire. Framed with a placeholder name of that many
    // bytes, then overwritten.
    const placeholder = 'x'.repeat(11_000);
    const frame = encodeRequest(
      { apiKey: API_KEYS.OffsetCommit, apiVersion: 8, correlationId: 1, clientId: 'raw-test' },
      adminCommit('g', {
        orders: [{ partitionIndex: 0, committedOffset: 42n }],
        [placeholder]: [{ partitionIndex: 0, committedOffset: 7n }],
      }),
    );
    const at = frame.indexOf(placeholder);
    frame.fill(0xff, at, at + placeholder.length);
    client.write(frame);
    await client.closed;
    expect(await t.store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
    // Nothing was wrong with the server: no warning (afterEach checks).
  });

  it('commits a partition named twice once, with its last value', async () => {
    const { t, client } = await start();
    const response = await client.send(
      API_KEYS.OffsetCommit,
      9,
      adminCommit('g', {
        orders: [
          { partitionIndex: 2, committedOffset: 1n },
          { partitionIndex: 0, committedOffset: 2n },
          { partitionIndex: 2, committedOffset: 3n },
        ],
        audit: [{ partitionIndex: 0, committedOffset: 4n }],
      }),
    );
    expect(response.topics.flatMap((topic) => topic.partitions.map((p) => p.errorCode))).toEqual([
      0, 0, 0, 0,
    ]);
    expect((await t.store.fetchOffsets('g', [{ tableId: 1, bucketId: 2 }]))[0]?.offset).toBe(3);
  });

  it('gives every partition the commit carried the error of the commit: INVALID_GROUP_ID; for a member of a group id with no group ILLEGAL_GENERATION (v2-8, a classic generation) or UNKNOWN_MEMBER_ID (v9, a member epoch); UNKNOWN_MEMBER_ID for an admin commit to a group with members', async () => {
    const { t, client } = await start();
    const partitions = {
      orders: [
        { partitionIndex: 0, committedOffset: 1n },
        { partitionIndex: 1, committedOffset: 1n },
      ],
    };
    const codes = async (request: CommitRequest, version = 8) =>
      (await client.send(API_KEYS.OffsetCommit, version, request)).topics[0]!.partitions.map(
        (p) => p.errorCode,
      );
    expect(await codes(adminCommit('', partitions))).toEqual([
      KAFKA_ERROR.INVALID_GROUP_ID,
      KAFKA_ERROR.INVALID_GROUP_ID,
    ]);
    expect(
      await codes(
        { ...adminCommit('g', partitions), generationIdOrMemberEpoch: 3, memberId: 'someone' },
        5,
      ),
    ).toEqual([22, 22]);
    expect(
      await codes(
        { ...adminCommit('g', partitions), generationIdOrMemberEpoch: 3, memberId: 'someone' },
        9,
      ),
    ).toEqual([25, 25]);
    await t.store.heartbeat('busy', { memberEpoch: 0, subscribedTableIds: [1] });
    expect(await codes(adminCommit('busy', partitions))).toEqual([25, 25]);
    // The commit's error goes to the partitions it carried; a partition refused on its own keeps its code.
    const mixed = await client.send(
      API_KEYS.OffsetCommit,
      8,
      adminCommit('busy', {
        orders: [...partitions.orders, { partitionIndex: 9, committedOffset: 1n }],
        nope: [{ partitionIndex: 0, committedOffset: 1n }],
      }),
    );
    expect(mixed.topics.map((topic) => [topic.name, topic.partitions])).toEqual([
      [
        'orders',
        [
          { partitionIndex: 0, errorCode: 25 },
          { partitionIndex: 1, errorCode: 25 },
          { partitionIndex: 9, errorCode: KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION },
        ],
      ],
      ['nope', [{ partitionIndex: 0, errorCode: KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION }]],
    ]);
    expect((await t.store.stats()).totals.liveOffsets, 'none of it was written').toBe(0);
  });

  it('takes a commit with a negative generation as Kafka does: without a member while the group has none, whatever member id it names (a consumer that left commits with its old one); fenced as usual while it has members', async () => {
    const { t, client } = await start();
    const commit = (groupId: string, generation: number, memberId: string, offset: bigint) => ({
      ...adminCommit(groupId, { orders: [{ partitionIndex: 0, committedOffset: offset }] }),
      generationIdOrMemberEpoch: generation,
      memberId,
    });
    const code = async (request: CommitRequest, version: number) =>
      (await client.send(API_KEYS.OffsetCommit, version, request)).topics[0]!.partitions[0]!
        .errorCode;
    const committed = async (groupId: string) =>
      (await t.store.fetchOffsets(groupId, [{ tableId: 1, partitionId: null, bucketId: 0 }]))[0]
        ?.offset;
    // No group of that id: v8 (a generation) and v9 (a member epoch).
    expect(await code(commit('fresh8', -1, 'm', 11n), 8)).toBe(0);
    expect(await code(commit('fresh9', -1, 'm', 12n), 9)).toBe(0);
    expect(await code(commit('fresh9', -3, '', 13n), 9)).toBe(0);
    expect([await committed('fresh8'), await committed('fresh9')]).toEqual([11, 13]);
    // A consumer-protocol group whose member left: Empty, its old member id still names no one.
    const joined = await t.store.heartbeat('left', { memberEpoch: 0, subscribedTableIds: [1] });
    await t.store.heartbeat('left', { memberId: joined.memberId, memberEpoch: -1 });
    expect(await code(commit('left', -1, joined.memberId, 14n), 9)).toBe(0);
    expect(await committed('left')).toBe(14);
    // A group with a member: the member id and epoch are checked as ever.
    const busy = await t.store.heartbeat('busy', { memberEpoch: 0, subscribedTableIds: [1] });
    expect(await code(commit('busy', -1, busy.memberId, 15n), 9)).toBe(
      KAFKA_ERROR.STALE_MEMBER_EPOCH,
    );
    expect(await code(commit('busy', -1, 'stranger', 15n), 9)).toBe(KAFKA_ERROR.UNKNOWN_MEMBER_ID);
    expect(await committed('busy')).toBeUndefined();
  });

  it('refuses a commit before v9 from a member of a consumer-protocol group with UNSUPPORTED_VERSION per partition, as Kafka does; a stranger is still UNKNOWN_MEMBER_ID', async () => {
    const { t, client } = await start();
    const member = await t.store.heartbeat('modern', { memberEpoch: 0, subscribedTableIds: [1] });
    const commit = (memberId: string, generation: number) => ({
      ...adminCommit('modern', {
        orders: [
          { partitionIndex: 0, committedOffset: 5n },
          { partitionIndex: 1, committedOffset: 6n },
        ],
      }),
      generationIdOrMemberEpoch: generation,
      memberId,
    });
    const codes = async (version: number, memberId: string, generation: number) =>
      (
        await client.send(API_KEYS.OffsetCommit, version, commit(memberId, generation))
      ).topics[0]!.partitions.map((p) => p.errorCode);
    for (const version of [2, 8])
      expect(await codes(version, member.memberId, member.memberEpoch)).toEqual([
        KAFKA_ERROR.UNSUPPORTED_VERSION,
        KAFKA_ERROR.UNSUPPORTED_VERSION,
      ]);
    expect(await codes(8, 'stranger', member.memberEpoch)).toEqual([
      KAFKA_ERROR.UNKNOWN_MEMBER_ID,
      KAFKA_ERROR.UNKNOWN_MEMBER_ID,
    ]);
    expect((await t.store.stats()).totals.liveOffsets, 'nothing was written').toBe(0);
    expect(await codes(9, member.memberId, member.memberEpoch)).toEqual([0, 0]);
  });

  it('fetches every committed offset of catalog topics for null topics (v2+), several groups at once from v8', async () => {
    const { t, client } = await start();
    await client.send(
      API_KEYS.OffsetCommit,
      8,
      adminCommit('a', {
        orders: [
          { partitionIndex: 3, committedOffset: 30n },
          { partitionIndex: 1, committedOffset: 10n },
        ],
        audit: [{ partitionIndex: 0, committedOffset: 1n }],
      }),
    );
    await t.store.commitOffsets('a', [
      { tableId: 77, bucketId: 0, offset: 5 },
      { tableId: 1, partitionId: 3, bucketId: 0, offset: 5 },
    ]);
    const v2 = await client.send(API_KEYS.OffsetFetch, 2, { groupId: 'a', topics: null });
    const flat = (topics: typeof v2.topics) =>
      topics
        .flatMap((topic) =>
          topic.partitions.map((p) => `${topic.name}:${p.partitionIndex}=${p.committedOffset}`),
        )
        .sort();
    expect(flat(v2.topics), 'tables that are not topics are left out').toEqual([
      'audit:0=1',
      'orders:1=10',
      'orders:3=30',
    ]);
    const v8 = await client.send(API_KEYS.OffsetFetch, 8, {
      groups: [
        { groupId: 'a', topics: null },
        { groupId: 'none', topics: null },
        { groupId: 'b', topics: [{ name: 'orders', partitionIndexes: [1] }] },
      ],
    });
    expect(v8.groups.map((g) => g.groupId)).toEqual(['a', 'none', 'b']);
    expect(flat(v8.groups[0]!.topics)).toEqual(['audit:0=1', 'orders:1=10', 'orders:3=30']);
    expect(v8.groups[1]!.topics).toEqual([]);
    expect(v8.groups[2]!.topics[0]!.partitions[0]!.committedOffset).toBe(-1n);
  });

  it("answers a group's error where each version carries it: each partition (v1), top level (v2-7), the group (v8+)", async () => {
    const { client } = await start();
    const asked = [{ name: 'orders', partitionIndexes: [0, 1] }];
    const v1 = await client.send(API_KEYS.OffsetFetch, 1, { groupId: '', topics: asked });
    expect(v1.topics[0]!.partitions.map((p) => [p.errorCode, p.committedOffset])).toEqual([
      [24, -1n],
      [24, -1n],
    ]);
    expect(
      (await client.send(API_KEYS.OffsetFetch, 4, { groupId: '', topics: asked })).errorCode,
    ).toBe(24);
    expect(
      (await client.send(API_KEYS.OffsetFetch, 9, { groups: [{ groupId: '', topics: asked }] }))
        .groups[0]!.errorCode,
    ).toBe(24);
  });

  it("checks v9's member id and epoch in a consumer-protocol group, as Kafka does: another epoch (or -1 with a member id) is STALE_MEMBER_EPOCH, a stranger (or an epoch without a member id) UNKNOWN_MEMBER_ID, only an admin's fetch (null, -1) passes", async () => {
    const { t, client } = await start();
    const joined = await client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
      groupId: 'c',
      memberId: 'm',
      memberEpoch: 0,
      rebalanceTimeoutMs: 60_000,
      subscribedTopicNames: ['orders'],
      topicPartitions: [],
    });
    expect(joined.errorCode).toBe(0);
    await t.store.commitOffsets('c', [{ tableId: 1, bucketId: 0, offset: 12 }], {
      memberId: 'm',
      memberEpoch: joined.memberEpoch,
    });
    await t.store.commitOffsets('plain', [{ tableId: 1, bucketId: 0, offset: 3 }]);
    const fetch = async (groupId: string, memberId: string | null, memberEpoch: number) => {
      const answer = await client.send(API_KEYS.OffsetFetch, 9, {
        groups: [
          { groupId, memberId, memberEpoch, topics: [{ name: 'orders', partitionIndexes: [0] }] },
        ],
      });
      const group = answer.groups[0]!;
      return [group.errorCode, group.topics[0]?.partitions[0]?.committedOffset ?? null];
    };
    expect(await fetch('c', 'm', joined.memberEpoch)).toEqual([0, 12n]);
    expect(await fetch('c', null, -1)).toEqual([0, 12n]);
    expect(await fetch('c', 'm', joined.memberEpoch + 1)).toEqual([
      KAFKA_ERROR.STALE_MEMBER_EPOCH,
      null,
    ]);
    expect(await fetch('c', 'm', joined.memberEpoch - 1)).toEqual([
      KAFKA_ERROR.STALE_MEMBER_EPOCH,
      null,
    ]);
    expect(await fetch('c', 'stranger', joined.memberEpoch)).toEqual([
      KAFKA_ERROR.UNKNOWN_MEMBER_ID,
      null,
    ]);
    // Only a null member id and epoch -1 together pass unchecked: a member with -1 is checked, and
    // so is an epoch without a member id.
    expect(await fetch('c', 'm', -1)).toEqual([KAFKA_ERROR.STALE_MEMBER_EPOCH, null]);
    expect(await fetch('c', null, joined.memberEpoch)).toEqual([
      KAFKA_ERROR.UNKNOWN_MEMBER_ID,
      null,
    ]);
    // A group of offsets only (or a classic one): nothing to check, as in Kafka.
    expect(await fetch('plain', 'anyone', 5)).toEqual([0, 3n]);
    await expect(
      t.store.fetchOffsets('c', [{ tableId: 1, bucketId: 0 }], {
        member: { memberId: 'm', memberEpoch: 1.5 },
      }),
    ).rejects.toThrow(/INVALID_REQUEST: options.member must be/);
  });

  it('with require_stable, answers UNSTABLE_OFFSET_COMMIT while a commit of the group is in flight, and the value once it is durable', async () => {
    const { fs, reader, commit } = await commitHeldInFlight(start);
    const asked = {
      groups: [{ groupId: 'g', topics: [{ name: 'orders', partitionIndexes: [0, 1] }] }],
      requireStable: true,
    };
    const unstable = await reader.send(API_KEYS.OffsetFetch, 8, asked);
    expect(unstable.groups[0]!.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      KAFKA_ERROR.UNSTABLE_OFFSET_COMMIT,
      KAFKA_ERROR.UNSTABLE_OFFSET_COMMIT,
    ]);
    const all = await reader.send(API_KEYS.OffsetFetch, 7, {
      groupId: 'g',
      topics: null,
      requireStable: true,
    });
    expect(all.errorCode).toBe(KAFKA_ERROR.UNSTABLE_OFFSET_COMMIT);
    const plain = await reader.send(API_KEYS.OffsetFetch, 8, { ...asked, requireStable: false });
    expect(
      plain.groups[0]!.topics[0]!.partitions[0]!.committedOffset,
      'without require_stable: the durable value',
    ).toBe(-1n);
    fs.holding = false;
    fs.releaseOne();
    await commit;
    const stable = await reader.send(API_KEYS.OffsetFetch, 8, asked);
    expect(
      stable.groups[0]!.topics[0]!.partitions.map((p) => [p.errorCode, p.committedOffset]),
    ).toEqual([
      [0, 8n],
      [0, -1n],
    ]);
  });
});

describe('OffsetCommit on a node that does not own the group', () => {
  it("answers a member's commit NOT_COORDINATOR per partition, as a memberless one, and keeps the connection", async () => {
    // A hosting store hosts no offsets-bucket until a cluster node hands it one.
    const warnings: string[] = [];
    const store = await OffsetStore.openHosted({ dir: tempDir(), bucketCount: 4 });
    const server = await startKafkaServer({
      store,
      port: 0,
      topics: [{ name: 'orders', partitions: 2 }],
      onWarning: (message) => warnings.push(message),
    });
    const client = await RawKafkaClient.connect(server.port);
    try {
      for (const [version, memberId, generation] of [
        [8, 'consumer-1', 3], // what a kafkajs consumer in a group sends
        [8, '', -1],
        [9, 'consumer-1', 3],
      ] as const) {
        const answer = await client.send(API_KEYS.OffsetCommit, version, {
          ...adminCommit('elsewhere', { orders: [{ partitionIndex: 0, committedOffset: 5n }] }),
          generationIdOrMemberEpoch: generation,
          memberId,
        });
        expect(
          answer.topics[0]!.partitions.map((p) => p.errorCode),
          `v${version} ${memberId}`,
        ).toEqual([KAFKA_ERROR.NOT_COORDINATOR]);
      }
      expect(warnings).toEqual([]);
    } finally {
      await client.close();
      await server.close({ closeStore: true });
    }
  });
});

describe('ListOffsets', () => {
  it('answers 0 for latest and earliest, -1 for a timestamp, UNKNOWN_TOPIC_OR_PARTITION for what the catalog lacks, at v1-6', async () => {
    const { client } = await startServer();
    for (let version = 1; version <= 6; version++) {
      const response = await client.send(API_KEYS.ListOffsets, version, {
        replicaId: -1,
        topics: [
          {
            name: 'orders',
            partitions: [
              { partitionIndex: 0, timestamp: -1n },
              { partitionIndex: 3, timestamp: -2n },
              { partitionIndex: 1, timestamp: 1_700_000_000_000n },
              { partitionIndex: 4, timestamp: -1n },
            ],
          },
          { name: 'nope', partitions: [{ partitionIndex: 0, timestamp: -2n }] },
        ],
      });
      expect(
        response.topics.map((t) => t.partitions.map((p) => [p.errorCode, p.offset])),
        `v${version}`,
      ).toEqual([
        [
          [0, 0n],
          [0, 0n],
          [0, -1n],
          [3, -1n],
        ],
        [[3, -1n]],
      ]);
    }
  });

  it('answers INVALID_REQUEST for a partition named twice, wherever it is named, and the others as usual', async () => {
    const { client } = await startServer();
    const response = await client.send(API_KEYS.ListOffsets, 5, {
      replicaId: -1,
      topics: [
        {
          name: 'orders',
          partitions: [
            { partitionIndex: 0, timestamp: -1n },
            { partitionIndex: 1, timestamp: -1n },
          ],
        },
        { name: 'orders', partitions: [{ partitionIndex: 0, timestamp: -2n }] },
      ],
    });
    expect(response.topics.map((t) => t.partitions.map((p) => [p.errorCode, p.offset]))).toEqual([
      [
        [KAFKA_ERROR.INVALID_REQUEST, -1n],
        [0, 0n],
      ],
      [[KAFKA_ERROR.INVALID_REQUEST, -1n]],
    ]);
  });
});

describe('OffsetFetch: partitions, versions and members at their edges', () => {
  it('answers partitions the catalog lacks (beyond the count, negative, of an unknown topic) -1 without error, and the committed ones beside them their own values', async () => {
    const { client } = await startServer();
    await client.send(
      API_KEYS.OffsetCommit,
      8,
      adminCommit('g', {
        orders: [
          { partitionIndex: 0, committedOffset: 10n },
          { partitionIndex: 3, committedOffset: 33n },
        ],
      }),
    );
    const asked = [
      { name: 'orders', partitionIndexes: [4, 0, -1, 3] },
      { name: 'nope', partitionIndexes: [0] },
    ];
    for (const version of [1, 5, 8]) {
      const response = await client.send(
        API_KEYS.OffsetFetch,
        version,
        version >= 8
          ? { groups: [{ groupId: 'g', topics: asked }] }
          : { groupId: 'g', topics: asked },
      );
      const topics = version >= 8 ? response.groups[0]!.topics : response.topics;
      expect(
        topics.map((t) =>
          t.partitions.map((p) => [p.partitionIndex, p.errorCode, p.committedOffset]),
        ),
        `v${version}`,
      ).toEqual([
        [
          [4, 0, -1n],
          [0, 0, 10n],
          [-1, 0, -1n],
          [3, 0, 33n],
        ],
        [[0, 0, -1n]],
      ]);
    }
  });

  it('answers a group error in the top-level error code at every version from v2 to v7', async () => {
    const { client } = await startServer();
    const topics = [{ name: 'orders', partitionIndexes: [0] }];
    for (let version = 2; version <= 7; version++) {
      const response = await client.send(API_KEYS.OffsetFetch, version, { groupId: '', topics });
      expect([response.errorCode, response.topics], `v${version}`).toEqual([
        KAFKA_ERROR.INVALID_GROUP_ID,
        [],
      ]);
    }
  });

  it('with require_stable and a commit in flight, answers the partitions the catalog lacks -1 without error, the others UNSTABLE_OFFSET_COMMIT', async () => {
    const { fs, reader, commit } = await commitHeldInFlight(startServer);
    const unstable = await reader.send(API_KEYS.OffsetFetch, 8, {
      groups: [
        {
          groupId: 'g',
          topics: [
            { name: 'orders', partitionIndexes: [0, 9] },
            { name: 'nope', partitionIndexes: [0] },
          ],
        },
      ],
      requireStable: true,
    });
    expect(
      unstable.groups[0]!.topics.map((topic) => topic.partitions.map((p) => p.errorCode)),
    ).toEqual([[KAFKA_ERROR.UNSTABLE_OFFSET_COMMIT, 0], [0]]);
    fs.holding = false;
    fs.releaseOne();
    await commit;
  });
});

describe('ListOffsets: partitions the catalog lacks', () => {
  it('answers a negative partition of a known topic UNKNOWN_TOPIC_OR_PARTITION', async () => {
    const { client } = await startServer();
    const response = await client.send(API_KEYS.ListOffsets, 6, {
      replicaId: -1,
      topics: [
        {
          name: 'orders',
          partitions: [
            { partitionIndex: -1, timestamp: -1n },
            { partitionIndex: 0, timestamp: -1n },
          ],
        },
      ],
    });
    expect(response.topics[0]!.partitions.map((p) => [p.errorCode, p.offset])).toEqual([
      [KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, -1n],
      [0, 0n],
    ]);
  });
});
