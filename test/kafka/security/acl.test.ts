/**
 * ACLs in Kafka's model, over the wire: a user allowed only the groups starting with `prefix-`
 * (a PREFIXED pattern) commits there, gets GROUP_AUTHORIZATION_FAILED (30) elsewhere with nothing
 * written, and does not see other groups in ListGroups or DescribeGroups; DENY wins over ALLOW;
 * a topic without Read is TOPIC_AUTHORIZATION_FAILED (29) while the others commit; a super user
 * may do everything; ACLs added while the server runs apply after `reloadSecurity()`. And the
 * authorizer's rules on their own: no ACL on a resource means refused unless
 * allowEveryoneIfNoAclFound, `User:*` and LITERAL `*`, and Read implying Describe.
 */
import fc from 'fast-check';
import { cpSync, renameSync, rmSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { longestStallDuring } from '../../support/event-loop-stall.js';
import { ManualClock } from '../../../src/index.js';
import { NodeFileSystem } from '../../../src/io/index.js';
import { API_KEYS, KAFKA_ERROR } from '../../../src/kafka/protocol/index.js';
import * as path from 'node:path';
import {
  ACLS_FILE,
  AclSet,
  Authorizer,
  UserCredentials,
  type AclBinding,
} from '../../../src/kafka/security/index.js';
import { canonicalAddress } from '../../../src/kafka/security/client-address.js';
import { writeSecurityFile } from '../../../src/kafka/security/security-file.js';
import { tempDir } from '../../support/temp-dir.js';
import { RawKafkaClient } from '../support/raw-kafka-client.js';
import { loginPlain } from '../support/sasl-login.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

const fs = new NodeFileSystem();
let running: TestServer | undefined;
const clients: RawKafkaClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
});

function acl(
  fields: Partial<AclBinding> &
    Pick<AclBinding, 'principal' | 'operation' | 'resourceType' | 'name'>,
): AclBinding {
  return { host: '*', permission: 'ALLOW', patternType: 'LITERAL', ...fields };
}

const ALICE_ACLS = [
  acl({
    principal: 'User:alice',
    operation: 'Read',
    resourceType: 'Group',
    patternType: 'PREFIXED',
    name: 'prefix-',
  }),
  acl({
    principal: 'User:alice',
    operation: 'Delete',
    resourceType: 'Group',
    patternType: 'PREFIXED',
    name: 'prefix-',
  }),
  acl({ principal: 'User:alice', operation: 'Read', resourceType: 'Topic', name: 'orders' }),
];

/** What the reload tests add: alice may do nothing with the group prefix-secret. */
const DENY_ALICE_SECRET = acl({
  principal: 'User:alice',
  permission: 'DENY',
  operation: 'All',
  resourceType: 'Group',
  name: 'prefix-secret',
});

async function start(acls: AclBinding[] = ALICE_ACLS): Promise<TestServer> {
  const dir = tempDir();
  await UserCredentials.addUser(fs, dir, 'alice', 'alice-pw');
  await UserCredentials.addUser(fs, dir, 'admin', 'admin-pw');
  await AclSet.add(fs, dir, acls);
  running = await startTestServer({
    dir,
    server: {
      topics: [
        { name: 'orders', partitions: 2 },
        { name: 'audit', partitions: 1 },
      ],
      listeners: [
        {
          securityProtocol: 'SASL_PLAINTEXT',
          saslMechanisms: ['PLAIN'],
          allowPlainWithoutTls: true,
        },
      ],
      security: { authorizer: { superUsers: ['User:admin'] } },
    },
  });
  await running.store.commitOffsets('other', [{ tableId: 1, bucketId: 0, offset: 1 }]);
  return running;
}

async function as(t: TestServer, user: string, password: string): Promise<RawKafkaClient> {
  const client = await RawKafkaClient.connect(t.server.port);
  clients.push(client);
  expect(await loginPlain(client, user, password)).toBe(0);
  return client;
}

function commit(client: RawKafkaClient, groupId: string, topics: string[]) {
  return client.send(API_KEYS.OffsetCommit, 8, {
    groupId,
    generationIdOrMemberEpoch: -1,
    memberId: '',
    topics: topics.map((name) => ({
      name,
      partitions: [
        { partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, committedMetadata: '' },
      ],
    })),
  });
}

/** A Fetch v12 of partition 0 of each of `topics` (names, or topic ids where a client writes them). */
function fetchV12(
  client: RawKafkaClient,
  topics: string[],
  extra: { maxWaitMs?: number; sessionId?: number; sessionEpoch?: number } = {},
) {
  return client.send(API_KEYS.Fetch, 12, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: topics.map((topic) => ({
      topic,
      partitions: [
        { partition: 0, currentLeaderEpoch: -1, fetchOffset: 0n, partitionMaxBytes: 1 << 20 },
      ],
    })),
    forgottenTopicsData: [],
    rackId: '',
    ...extra,
  });
}

const codes = (response: Awaited<ReturnType<typeof commit>>) =>
  response.topics.map((t) => [t.name, t.partitions.map((p) => p.errorCode)]);

describe('ACLs over the wire', () => {
  it("reports the operations the principal's ACLs allow on a described group or topic when asked (Read implying Describe), all of them to a super user; a topic's Write only by an ACL of All", async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    const admin = await as(t, 'admin', 'admin-pw');
    await commit(alice, 'prefix-a', ['orders']);
    const [READ, WRITE, DELETE, DESCRIBE] = [1 << 3, 1 << 4, 1 << 6, 1 << 8];
    const groupsOf = async (client: RawKafkaClient) =>
      (
        await client.send(API_KEYS.DescribeGroups, 5, {
          groups: ['prefix-a', 'other'],
          includeAuthorizedOperations: true,
        })
      ).groups.map((g) => [g.groupId, g.errorCode, g.authorizedOperations]);
    expect(await groupsOf(alice)).toEqual([
      ['prefix-a', 0, READ | DELETE | DESCRIBE],
      ['other', KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED, -2147483648],
    ]);
    expect(await groupsOf(admin)).toEqual([
      ['prefix-a', 0, READ | DELETE | DESCRIBE],
      ['other', 0, READ | DELETE | DESCRIBE],
    ]);
    const topicsOf = async (client: RawKafkaClient, topics: { name: string }[] | null) =>
      (
        await client.send(API_KEYS.Metadata, 12, {
          topics,
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: true,
        })
      ).topics.map((m) => [m.name, m.errorCode, m.topicAuthorizedOperations]);
    const orders = ['orders', 0, READ | DESCRIBE];
    expect(await topicsOf(alice, null)).toEqual([orders]);
    expect(await topicsOf(alice, [{ name: 'orders' }])).toEqual([orders]);
    expect(await topicsOf(alice, [{ name: 'orders' }, { name: 'audit' }])).toEqual([
      orders,
      ['audit', KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED, -2147483648],
    ]);
    // A topic's Write (a produce's) is the super user's, or granted by an ACL of All.
    expect(await topicsOf(admin, [{ name: 'audit' }])).toEqual([
      ['audit', 0, READ | WRITE | DELETE | DESCRIBE],
    ]);
    for (const c of clients.splice(0)) await c.close();
    await t.close();
    expect(t.warnings).toEqual([]);
    const all = acl({
      principal: 'User:alice',
      operation: 'All',
      resourceType: 'Topic',
      name: 'orders',
    });
    const granted = await start([...ALICE_ACLS, all]);
    const alice2 = await as(granted, 'alice', 'alice-pw');
    expect(await topicsOf(alice2, [{ name: 'orders' }])).toEqual([
      ['orders', 0, READ | WRITE | DELETE | DESCRIBE],
    ]);
    expect(await groupsOf(alice2), 'a group has no Write').toEqual([
      ['prefix-a', 0, READ | DELETE | DESCRIBE],
      ['other', KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED, -2147483648],
    ]);
  });

  it('a user allowed Group:prefix- (PREFIXED) commits there and gets 30 elsewhere, with nothing written', async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    expect(codes(await commit(alice, 'prefix-a', ['orders']))).toEqual([['orders', [0]]]);
    expect(codes(await commit(alice, 'other', ['orders']))).toEqual([
      ['orders', [KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED]],
    ]);
    expect(codes(await commit(alice, 'prefix', ['orders']))).toEqual([
      ['orders', [KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED]],
    ]);
    expect((await t.store.fetchOffsets('other', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(1);
    expect(await t.store.fetchOffsets('prefix', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
    expect((await t.store.fetchOffsets('prefix-a', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(
      5,
    );
  });

  it('hides other groups from ListGroups, DescribeGroups, OffsetFetch and DeleteGroups', async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    await commit(alice, 'prefix-a', ['orders']);
    expect(
      (await alice.send(API_KEYS.ListGroups, 4, { statesFilter: [] })).groups.map((g) => g.groupId),
    ).toEqual(['prefix-a']);
    const described = await alice.send(API_KEYS.DescribeGroups, 5, {
      groups: ['other', 'prefix-a'],
      includeAuthorizedOperations: false,
    });
    expect(described.groups.map((g) => [g.groupId, g.errorCode])).toEqual([
      ['other', KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED],
      ['prefix-a', 0],
    ]);
    const fetched = await alice.send(API_KEYS.OffsetFetch, 8, {
      groups: [
        { groupId: 'other', topics: null },
        { groupId: 'prefix-a', topics: null },
      ],
      requireStable: false,
    });
    expect(fetched.groups.map((g) => [g.groupId, g.errorCode, g.topics.length])).toEqual([
      ['other', KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED, 0],
      ['prefix-a', 0, 1],
    ]);
    const deleted = await alice.send(API_KEYS.DeleteGroups, 2, { groupsNames: ['other'] });
    expect(deleted.results).toEqual([
      { groupId: 'other', errorCode: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED },
    ]);
    expect((await t.store.listGroups()).map((g) => g.groupId).sort()).toEqual([
      'other',
      'prefix-a',
    ]);
    const admin = await as(t, 'admin', 'admin-pw');
    expect(
      (await admin.send(API_KEYS.ListGroups, 4, { statesFilter: [] })).groups
        .map((g) => g.groupId)
        .sort(),
    ).toEqual(['other', 'prefix-a']);
  });

  it('answers requests naming 40k groups or topics, half refused, in time linear in their size (each answer was looked up among all the allowed ones), with 10k ACLs (each check went through all of them)', async () => {
    // Other tenants' ACLs: one literal group each, and prefixes; none of them about alice.
    const others = Array.from({ length: 10_000 }, (_, i) =>
      acl({
        principal: `User:tenant-${i}`,
        operation: 'Read',
        resourceType: 'Group',
        patternType: i % 10 === 0 ? 'PREFIXED' : 'LITERAL',
        name: `tenant-${i}-group`,
      }),
    );
    const t = await start([...ALICE_ACLS, ...others]);
    const alice = await as(t, 'alice', 'alice-pw');
    const n = 40_000;
    const groups = Array.from({ length: n }, (_, i) =>
      i % 2 === 0 ? `prefix-${i}` : `other-${i}`,
    );
    const refusedAt = (i: number) => i % 2 === 1;
    // The server runs in this process: the longest gap between timer ticks is the longest time the
    // event loop was held.
    const { longestMs: longest } = await longestStallDuring(async () => {
      const described = await alice.send(API_KEYS.DescribeGroups, 5, {
        groups,
        includeAuthorizedOperations: false,
      });
      expect(described.groups.map((g) => g.groupId)).toEqual(groups);
      expect(
        described.groups.every(
          (g, i) =>
            (g.errorCode === KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED) === refusedAt(i) &&
            (refusedAt(i) || g.groupState === 'Dead'),
        ),
      ).toBe(true);
      const consumerDescribed = await alice.send(API_KEYS.ConsumerGroupDescribe, 0, {
        groupIds: groups,
        includeAuthorizedOperations: false,
      });
      expect(
        consumerDescribed.groups.every(
          (g, i) =>
            g.groupId === groups[i] &&
            (g.errorCode === KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED) === refusedAt(i),
        ),
      ).toBe(true);
      const deleted = await alice.send(API_KEYS.DeleteGroups, 2, { groupsNames: groups });
      expect(
        deleted.results.every(
          (r, i) =>
            r.groupId === groups[i] &&
            r.errorCode ===
              (refusedAt(i)
                ? KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED
                : KAFKA_ERROR.GROUP_ID_NOT_FOUND),
        ),
      ).toBe(true);
      const found = await alice.send(API_KEYS.FindCoordinator, 4, {
        keyType: 0,
        coordinatorKeys: groups,
      });
      expect(
        found.coordinators.every(
          (c, i) =>
            c.key === groups[i] &&
            (c.errorCode === KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED) === refusedAt(i),
        ),
      ).toBe(true);
      // Topics: 'orders' may be read, 'audit' not; each named n / 2 times in one commit.
      const committed = await commit(
        alice,
        'prefix-many',
        Array.from({ length: n }, (_, i) => (refusedAt(i) ? 'audit' : 'orders')),
      );
      expect(
        committed.topics.every(
          (tp, i) =>
            tp.partitions[0]!.errorCode ===
            (refusedAt(i) ? KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED : 0),
        ),
      ).toBe(true);
    });
    // Linear: ~100-300 ms for the largest step here; several seconds when quadratic.
    expect(longest).toBeLessThan(1500);
  });

  it('answers a topic without Read with 29 and commits the others; OffsetFetch answers it 29', async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    expect(codes(await commit(alice, 'prefix-b', ['audit', 'orders']))).toEqual([
      ['audit', [KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED]],
      ['orders', [0]],
    ]);
    expect(await t.store.fetchOffsets('prefix-b', [{ tableId: 2, bucketId: 0 }])).toEqual([null]);
    const fetched = await alice.send(API_KEYS.OffsetFetch, 7, {
      groupId: 'prefix-b',
      topics: [
        { name: 'audit', partitionIndexes: [0] },
        { name: 'orders', partitionIndexes: [0] },
      ],
      requireStable: false,
    });
    expect(
      fetched.topics.map((tp) => [
        tp.name,
        tp.partitions[0]!.errorCode,
        tp.partitions[0]!.committedOffset,
      ]),
    ).toEqual([
      ['audit', KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED, -1n],
      ['orders', 0, 5n],
    ]);
  });

  it('answers each entry of an OffsetFetch v8 naming one group twice with its own topics (both got the last entry answer)', async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    await commit(alice, 'prefix-d', ['orders']);
    const fetched = await alice.send(API_KEYS.OffsetFetch, 8, {
      groups: [
        { groupId: 'prefix-d', topics: [{ name: 'orders', partitionIndexes: [0] }] },
        { groupId: 'other', topics: null },
        { groupId: 'prefix-d', topics: [{ name: 'audit', partitionIndexes: [0] }] },
        { groupId: 'prefix-d', topics: null },
      ],
      requireStable: false,
    });
    expect(
      fetched.groups.map((g) => [
        g.groupId,
        g.errorCode,
        g.topics.map((tp) => [tp.name, tp.partitions.map((p) => [p.errorCode, p.committedOffset])]),
      ]),
    ).toEqual([
      ['prefix-d', 0, [['orders', [[0, 5n]]]]],
      ['other', KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED, []],
      ['prefix-d', 0, [['audit', [[KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED, -1n]]]]],
      ['prefix-d', 0, [['orders', [[0, 5n]]]]],
    ]);
  });

  it('lets DENY win over ALLOW, and applies ACLs added while running after reloadSecurity()', async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    expect(codes(await commit(alice, 'prefix-secret', ['orders']))).toEqual([['orders', [0]]]);
    await AclSet.add(fs, t.dir, [DENY_ALICE_SECRET]);
    await t.server.reloadSecurity();
    expect(codes(await commit(alice, 'prefix-secret', ['orders']))).toEqual([
      ['orders', [KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED]],
    ]);
    expect(
      (await t.store.fetchOffsets('prefix-secret', [{ tableId: 1, bucketId: 0 }]))[0]?.offset,
    ).toBe(5);
    // The ACL file deleted by mistake: the reload is refused, and the DENY stays in force.
    rmSync(path.join(t.dir, ACLS_FILE));
    await expect(t.server.reloadSecurity()).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining(`${ACLS_FILE} is gone since the last read`),
    });
    expect(codes(await commit(alice, 'prefix-secret', ['orders']))).toEqual([
      ['orders', [KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED]],
    ]);
  });

  it("refuses a produce to topics the principal may not write (29 for every partition), so that its errors do not tell which topics exist or their partitions; a super user's is answered as without ACLs", async () => {
    const t = await start([
      ...ALICE_ACLS,
      acl({ principal: 'User:alice', operation: 'All', resourceType: 'Topic', name: 'audit' }),
    ]);
    const alice = await as(t, 'alice', 'alice-pw');
    const admin = await as(t, 'admin', 'admin-pw');
    const records = Buffer.from('not really a record batch');
    const produce = async (client: RawKafkaClient) =>
      (
        await client.send(API_KEYS.Produce, 9, {
          acks: -1,
          timeoutMs: 1000,
          topicData: ['orders', 'audit', 'missing'].map((name) => ({
            name,
            partitionData: [
              { index: 0, records },
              { index: 5, records },
            ],
          })),
        })
      ).responses.map((r) => [r.name, r.partitionResponses.map((p) => p.errorCode)]);
    const refused = [
      KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
      KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
    ];
    const unknown = [
      KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
      KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
    ];
    // Read on orders is not Write; All on audit is.
    expect(await produce(alice)).toEqual([
      ['orders', refused],
      ['audit', [KAFKA_ERROR.INVALID_REQUEST, KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION]],
      ['missing', refused],
    ]);
    expect(await produce(admin)).toEqual([
      ['orders', [KAFKA_ERROR.INVALID_REQUEST, KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION]],
      ['audit', [KAFKA_ERROR.INVALID_REQUEST, KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION]],
      ['missing', unknown],
    ]);
  });

  it('applies reloads in the order they were asked for: one that read the ACLs before a DENY was added, and finished last, does not put them back', async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    expect(codes(await commit(alice, 'prefix-secret', ['orders']))).toEqual([['orders', [0]]]);
    // The first reload's read of the ACL file is slow (a busy disk): it ends after the second's.
    const readFile = NodeFileSystem.prototype.readFile;
    let slowNext = true;
    const slowed = vi
      .spyOn(NodeFileSystem.prototype, 'readFile')
      .mockImplementation(async function (this: NodeFileSystem, file: string) {
        const bytes = await readFile.call(this, file);
        if (slowNext && file.endsWith(ACLS_FILE)) {
          slowNext = false;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        return bytes;
      });
    try {
      const first = t.server.reloadSecurity(); // a first SIGHUP
      await new Promise((resolve) => setTimeout(resolve, 20));
      await AclSet.add(fs, t.dir, [DENY_ALICE_SECRET]);
      const second = t.server.reloadSecurity(); // a second, once the DENY is in the file
      await Promise.all([first, second]);
    } finally {
      slowed.mockRestore();
    }
    expect(codes(await commit(alice, 'prefix-secret', ['orders']))).toEqual([
      ['orders', [KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED]],
    ]);
  });

  it('reads no ACLs or users on reloadSecurity() from another directory put under the store name', async () => {
    const t = await start([...ALICE_ACLS, DENY_ALICE_SECRET]);
    const alice = await as(t, 'alice', 'alice-pw');
    // The store's directory moved aside and a copy put under its name, whose ACLs then lose the
    // DENY and whose users file lets mallory in: the server keeps what it read from its own.
    const moved = `${t.dir}.old`;
    renameSync(t.dir, moved);
    cpSync(moved, t.dir, { recursive: true });
    rmSync(path.join(t.dir, 'LOCK'));
    await AclSet.remove(fs, t.dir, [DENY_ALICE_SECRET]);
    await UserCredentials.addUser(fs, t.dir, 'mallory', 'mallory-pw');
    await expect(t.server.reloadSecurity()).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringContaining(t.dir),
    });
    expect(codes(await commit(alice, 'prefix-secret', ['orders']))).toEqual([
      ['orders', [KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED]],
    ]);
    const mallory = await RawKafkaClient.connect(t.server.port);
    clients.push(mallory);
    let answer: number | undefined;
    const refused = loginPlain(mallory, 'mallory', 'mallory-pw').then((code) => (answer = code));
    // A failed login is answered after the failure delay, on the server's (manual) clock.
    while (answer === undefined) {
      (t.clock as ManualClock).advance(1000);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(await refused).toBe(KAFKA_ERROR.SASL_AUTHENTICATION_FAILED);
    running = undefined;
    for (const c of clients.splice(0)) await c.close();
    await t.server.close();
    await expect(t.store.close()).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    expect(t.warnings).toEqual([]);
  });

  it('refuses FindCoordinator and Metadata topics the principal may not describe', async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    const found = await alice.send(API_KEYS.FindCoordinator, 4, {
      keyType: 0,
      coordinatorKeys: ['prefix-x', 'other'],
    });
    expect(found.coordinators.map((c) => [c.key, c.errorCode])).toEqual([
      ['prefix-x', 0],
      ['other', KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED],
    ]);
    const metadata = await alice.send(API_KEYS.Metadata, 12, {
      topics: null,
      allowAutoTopicCreation: false,
    });
    expect(metadata.topics.map((tp) => tp.name)).toEqual(['orders']);
    const asked = await alice.send(API_KEYS.Metadata, 12, {
      topics: [
        { name: 'audit', topicId: '00000000-0000-0000-0000-000000000000' },
        { name: 'secret-new', topicId: '00000000-0000-0000-0000-000000000000' },
      ],
      allowAutoTopicCreation: true,
    });
    expect(asked.topics.map((tp) => [tp.name, tp.errorCode])).toEqual([
      ['audit', KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED],
      ['secret-new', KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED],
    ]);
    expect(t.server.stats().topics).toBe(2);
  });

  it('assigns a subscription by regular expression only the topics the principal may describe, and refuses to describe a group whose members use others (29)', async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    const admin = await as(t, 'admin', 'admin-pw');
    const topicIds = new Map(
      (await admin.send(API_KEYS.Metadata, 12, { topics: null })).topics.map((tp) => [
        tp.topicId,
        tp.name,
      ]),
    );
    const join = (client: RawKafkaClient, memberId: string, regex: string) =>
      client.send(API_KEYS.ConsumerGroupHeartbeat, 1, {
        groupId: 'prefix-regex',
        memberId,
        memberEpoch: 0,
        rebalanceTimeoutMs: 60_000,
        subscribedTopicNames: null,
        subscribedTopicRegex: regex,
        topicPartitions: [],
      });
    // '.*' matches 'audit' too, which alice may not describe: named, it is refused (29).
    const joined = await join(alice, 'alice-member', '.*');
    expect(joined.errorCode).toBe(0);
    const assigned = (joined.assignment?.topicPartitions ?? []).map((tp) => [
      topicIds.get(tp.topicId),
      tp.partitions,
    ]);
    expect(assigned).toEqual([['orders', [0, 1]]]);
    // The admin's member of the same group is subscribed to 'audit': alice may describe the group,
    // not that topic, so the group is not described to her; the admin sees it whole.
    expect((await join(admin, 'admin-member', 'aud.*')).errorCode).toBe(0);
    const describe = (client: RawKafkaClient) =>
      client.send(API_KEYS.ConsumerGroupDescribe, 0, {
        groupIds: ['prefix-regex'],
        includeAuthorizedOperations: false,
      });
    const toAlice = (await describe(alice)).groups[0]!;
    expect([toAlice.errorCode, toAlice.members]).toEqual([
      KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
      [],
    ]);
    const toAdmin = (await describe(admin)).groups[0]!;
    expect(toAdmin.errorCode).toBe(0);
    expect(toAdmin.members.map((m) => m.memberId).sort()).toEqual(['admin-member', 'alice-member']);
  });

  it('answers an OffsetDelete refused for its group (GROUP_ID_NOT_FOUND) in the top-level code, with no topic, when some of its topics are refused', async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    const response = await alice.send(API_KEYS.OffsetDelete, 0, {
      groupId: 'prefix-unknown',
      topics: ['orders', 'audit'].map((name) => ({ name, partitions: [{ partitionIndex: 0 }] })),
    });
    expect([response.errorCode, response.topics]).toEqual([KAFKA_ERROR.GROUP_ID_NOT_FOUND, []]);
  });

  it('lets OffsetDelete delete only the offsets of topics the principal may Read (Describe is not enough), as Kafka', async () => {
    const t = await start([
      ...ALICE_ACLS,
      acl({ principal: 'User:alice', operation: 'Describe', resourceType: 'Topic', name: 'audit' }),
    ]);
    const admin = await as(t, 'admin', 'admin-pw');
    expect(codes(await commit(admin, 'prefix-x', ['orders', 'audit']))).toEqual([
      ['orders', [0]],
      ['audit', [0]],
    ]);
    const alice = await as(t, 'alice', 'alice-pw');
    const response = await alice.send(API_KEYS.OffsetDelete, 0, {
      groupId: 'prefix-x',
      topics: ['orders', 'audit'].map((name) => ({ name, partitions: [{ partitionIndex: 0 }] })),
    });
    expect(response.topics.map((tp) => [tp.name, tp.partitions[0]!.errorCode])).toEqual([
      ['orders', 0],
      ['audit', KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED],
    ]);
    const left = await t.store.fetchOffsets('prefix-x');
    expect(left.map((o) => o?.offset)).toEqual([5]);
  });

  it('refuses the group calls of a member to a principal that may only Describe the group (30): JoinGroup, SyncGroup, Heartbeat, LeaveGroup', async () => {
    const t = await start([
      acl({
        principal: 'User:alice',
        operation: 'Describe',
        resourceType: 'Group',
        name: 'watched',
      }),
    ]);
    const alice = await as(t, 'alice', 'alice-pw');
    const member = { groupId: 'watched', memberId: 'm-1', groupInstanceId: null };
    const answers = [
      await alice.send(API_KEYS.JoinGroup, 5, {
        ...member,
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 10_000,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
      }),
      await alice.send(API_KEYS.SyncGroup, 3, { ...member, generationId: 1, assignments: [] }),
      await alice.send(API_KEYS.Heartbeat, 3, { ...member, generationId: 1 }),
      await alice.send(API_KEYS.LeaveGroup, 3, {
        groupId: 'watched',
        members: [{ memberId: 'm-1', groupInstanceId: null }],
      }),
    ];
    expect(answers.map((a) => a.errorCode)).toEqual(
      Array(4).fill(KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED),
    );
  });

  it('answers ListOffsets and Fetch of a topic the principal may not describe or read with 29, and the rest as usual', async () => {
    const t = await start();
    const alice = await as(t, 'alice', 'alice-pw');
    const listed = await alice.send(API_KEYS.ListOffsets, 6, {
      replicaId: -1,
      isolationLevel: 0,
      topics: ['orders', 'audit'].map((name) => ({
        name,
        partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }],
      })),
    });
    expect(listed.topics.map((tp) => [tp.name, tp.partitions[0]!.errorCode])).toEqual([
      ['orders', 0],
      ['audit', KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED],
    ]);
    const started = Date.now();
    const fetched = await fetchV12(alice, ['audit', 'orders'], { maxWaitMs: 5000 });
    expect(fetched.responses.map((r) => [r.topic, r.partitions[0]!.errorCode])).toEqual([
      ['audit', KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED],
      ['orders', 0],
    ]);
    expect(Date.now() - started, 'answered at once, not held').toBeLessThan(2000);
    // By topic id where the name goes (as @platformatic/kafka 1.35 writes Fetch v12): the same checks.
    const metadata = await alice.send(API_KEYS.Metadata, 12, {
      topics: null,
      allowAutoTopicCreation: false,
    });
    const ordersId = metadata.topics.find((tp) => tp.name === 'orders')!.topicId;
    const byId = await fetchV12(alice, [ordersId, 'audit']);
    expect(byId.responses.map((r) => r.partitions[0]!.errorCode)).toEqual([
      0,
      KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED,
    ]);
    // An unknown fetch session with a refused topic: the session's error, no topics.
    const session = await fetchV12(alice, ['orders', 'audit'], { sessionId: 7, sessionEpoch: 1 });
    expect([session.errorCode, session.responses]).toEqual([70, []]);
    // v4 (no top-level error code): merged all the same.
    const v4 = await alice.send(API_KEYS.Fetch, 4, {
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      topics: ['audit', 'orders'].map((topic) => ({
        topic,
        partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }],
      })),
    } as never);
    expect(v4.responses.map((r) => [r.topic, r.partitions[0]!.errorCode])).toEqual([
      ['audit', KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED],
      ['orders', 0],
    ]);
  });
});

const DENY_ALL_G: AclBinding = {
  principal: 'User:*',
  host: '*',
  operation: 'All',
  permission: 'DENY',
  resourceType: 'Group',
  patternType: 'LITERAL',
  name: 'g',
};

describe('ACL hosts', () => {
  it('a DENY for 127.0.0.1 applies to an IPv4 client of a listener bound to :: (which reports it as ::ffff:127.0.0.1)', async () => {
    const dir = tempDir();
    await AclSet.add(fs, dir, [
      acl({ principal: 'User:*', operation: 'All', resourceType: 'Group', name: '*' }),
      acl({ principal: 'User:*', operation: 'All', resourceType: 'Topic', name: '*' }),
      acl({
        principal: 'User:*',
        host: '127.0.0.1',
        operation: 'All',
        permission: 'DENY',
        resourceType: 'Group',
        name: 'payroll',
      }),
    ]);
    running = await startTestServer({
      dir,
      server: {
        topics: [{ name: 'orders', partitions: 2 }],
        listeners: [{ securityProtocol: 'PLAINTEXT', host: '::', advertisedHost: '127.0.0.1' }],
        security: { authorizer: {} },
      },
    });
    const client = await RawKafkaClient.connect(running.server.port);
    clients.push(client);
    expect(codes(await commit(client, 'payroll', ['orders']))).toEqual([
      ['orders', [KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED]],
    ]);
    expect(codes(await commit(client, 'others', ['orders']))).toEqual([['orders', [0]]]);
    expect(running.server.stats().connections[0]?.clientHost).toBe('/127.0.0.1');
    expect(await running.store.fetchOffsets('payroll')).toEqual([]);
  });

  it('are * or IP addresses, kept in one canonical form; a name is refused', async () => {
    const dir = tempDir();
    const deny = (host: string) =>
      acl({ principal: 'User:*', host, operation: 'All', resourceType: 'Group', name: 'g' });
    await expect(AclSet.add(fs, dir, [deny('db1')])).rejects.toThrow(
      /host must be \* or an IP address/,
    );
    const added = await AclSet.add(fs, dir, [
      deny('::ffff:10.0.0.1'),
      deny('10.0.0.1'),
      deny('0:0:0:0:0:0:0:1'),
      deny('2001:DB8::0:1'),
    ]);
    expect(added.acls.map((a) => a.host)).toEqual(['10.0.0.1', '::1', '2001:db8::1']);
    const { count } = await AclSet.remove(fs, dir, [deny('::1')]);
    expect(count).toBe(1);
    // Only the two groups after ::ffff: are an IPv4 address.
    expect(canonicalAddress('0:0:0:ffff:a00:1:0:5')).toBe('::ffff:a00:1:0:5');
    expect(canonicalAddress('0:0:0:0:0:ffff:a00:1')).toBe('10.0.0.1');
  });

  it('still reads a file an earlier version wrote with a host name: the entry matches no client, and can be removed', async () => {
    const dir = tempDir();
    const byName = { ...DENY_ALL_G, host: 'db1' };
    await writeSecurityFile(fs, path.join(dir, ACLS_FILE), 'acls', [byName]);
    const loaded = await AclSet.load(fs, dir);
    expect(loaded.acls).toEqual([byName]);
    expect(await AclSet.remove(fs, dir, [byName])).toMatchObject({ count: 1 });
  });
});

describe('Authorizer', () => {
  const decide = (
    acls: AclBinding[],
    settings: { allowEveryoneIfNoAclFound?: boolean; superUsers?: string[] } = {},
  ) =>
    new Authorizer(
      {
        superUsers: settings.superUsers ?? [],
        allowEveryoneIfNoAclFound: settings.allowEveryoneIfNoAclFound ?? false,
      },
      new AclSet(acls),
    );

  it('decides as a check of every ACL in turn would, for any ACLs and any question (the ACLs are indexed)', () => {
    const names = ['', '*', 'a', 'ab', 'abc', 'b', 'ba'];
    const operations = ['Read', 'Describe', 'Delete', 'All'] as const;
    // Some principals and hosts begin with others: each is matched whole, never by its start.
    const principals = ['User:x', 'User:xy', 'User:y', 'User:*'];
    const hosts = ['*', '10.0.0.1', '10.0.0.10', '10.0.0.2'];
    const binding = fc.record({
      principal: fc.constantFrom(...principals),
      host: fc.constantFrom(...hosts),
      operation: fc.constantFrom(...operations),
      permission: fc.constantFrom('ALLOW' as const, 'DENY' as const),
      resourceType: fc.constantFrom('Group' as const, 'Topic' as const),
      patternType: fc.constantFrom('LITERAL' as const, 'PREFIXED' as const),
      name: fc.constantFrom(...names.filter((n) => n !== '')),
    });
    // Rules 2-6 of the authorizer, ACL by ACL.
    const reference = (
      acls: readonly AclBinding[],
      everyone: boolean,
      principal: string,
      host: string,
      operation: (typeof operations)[number],
      resourceType: 'Group' | 'Topic',
      name: string,
    ): boolean => {
      let any = false;
      let allowed = false;
      for (const a of acls) {
        const matches =
          a.resourceType === resourceType &&
          (a.patternType === 'LITERAL'
            ? a.name === name || a.name === '*'
            : name.startsWith(a.name));
        if (!matches) continue;
        any = true;
        if (a.principal !== principal && a.principal !== 'User:*') continue;
        if (a.host !== '*' && a.host !== host) continue;
        const implied =
          a.operation === 'All' ||
          a.operation === operation ||
          (operation === 'Describe' &&
            a.permission === 'ALLOW' &&
            ['Read', 'Delete'].includes(a.operation));
        if (!implied) continue;
        if (a.permission === 'DENY') {
          if (a.operation === operation || a.operation === 'All') return false;
          continue;
        }
        allowed = true;
      }
      return any ? allowed : everyone;
    };
    fc.assert(
      fc.property(
        fc.array(binding, { maxLength: 12 }),
        fc.boolean(),
        fc.array(
          fc.tuple(
            fc.constantFrom('User:x', 'User:xy', 'User:y'),
            fc.constantFrom('10.0.0.1', '10.0.0.10', '10.0.0.2'),
            fc.constantFrom(...operations.filter((o) => o !== 'All')),
            fc.constantFrom('Group' as const, 'Topic' as const),
            fc.constantFrom(...names),
          ),
          { minLength: 1, maxLength: 20 },
        ),
        (acls, everyone, questions) => {
          const authorizer = decide(acls, { allowEveryoneIfNoAclFound: everyone });
          const normalized = authorizer.acls.acls;
          for (const q of questions)
            expect(authorizer.authorize(...q), JSON.stringify(q)).toBe(
              reference(normalized, everyone, ...q),
            );
        },
      ),
      { numRuns: 500 },
    );
  });

  it('refuses a resource with no ACL unless allowEveryoneIfNoAclFound; a super user may do anything', () => {
    expect(decide([]).authorize('User:a', '127.0.0.1', 'Read', 'Group', 'g')).toBe(false);
    expect(
      decide([], { allowEveryoneIfNoAclFound: true }).authorize(
        'User:a',
        '127.0.0.1',
        'Read',
        'Group',
        'g',
      ),
    ).toBe(true);
    const onlyBob = decide(
      [acl({ principal: 'User:bob', operation: 'Read', resourceType: 'Group', name: 'g' })],
      { allowEveryoneIfNoAclFound: true },
    );
    expect(onlyBob.authorize('User:a', '127.0.0.1', 'Read', 'Group', 'g')).toBe(false); // an ACL exists on g: the default no longer applies
    expect(
      decide([], { superUsers: ['User:root'] }).authorize(
        'User:root',
        '127.0.0.1',
        'Delete',
        'Topic',
        't',
      ),
    ).toBe(true);
  });

  it('matches User:*, LITERAL *, hosts, and lets Read and Delete imply Describe but not the reverse', () => {
    const any = decide([
      acl({ principal: 'User:*', operation: 'Read', resourceType: 'Topic', name: '*' }),
    ]);
    expect(any.authorize('User:x', '10.0.0.1', 'Read', 'Topic', 'anything')).toBe(true);
    expect(any.authorize('User:x', '10.0.0.1', 'Describe', 'Topic', 'anything')).toBe(true);
    expect(any.authorize('User:x', '10.0.0.1', 'Delete', 'Topic', 'anything')).toBe(false);
    expect(any.authorize('User:x', '10.0.0.1', 'Read', 'Group', 'anything')).toBe(false);
    const describeOnly = decide([
      acl({ principal: 'User:x', operation: 'Describe', resourceType: 'Group', name: 'g' }),
    ]);
    expect(describeOnly.authorize('User:x', '1.1.1.1', 'Read', 'Group', 'g')).toBe(false);
    const fromHost = decide([
      acl({
        principal: 'User:x',
        host: '10.0.0.2',
        operation: 'All',
        resourceType: 'Group',
        name: 'g',
      }),
    ]);
    expect(fromHost.authorize('User:x', '10.0.0.2', 'Delete', 'Group', 'g')).toBe(true);
    expect(fromHost.authorize('User:x', '10.0.0.3', 'Delete', 'Group', 'g')).toBe(false);
    // A principal and a host are matched whole: alice's ACL is not alice2's, 10.0.0.2's not 10.0.0.23's.
    expect(fromHost.authorize('User:x', '10.0.0.23', 'Delete', 'Group', 'g')).toBe(false);
    expect(fromHost.authorize('User:xy', '10.0.0.2', 'Delete', 'Group', 'g')).toBe(false);
  });

  it('lets a DENY of the operation win, and a DENY of Read leave Describe allowed', () => {
    const acls = [
      acl({
        principal: 'User:x',
        operation: 'All',
        resourceType: 'Group',
        patternType: 'PREFIXED',
        name: 'team-',
      }),
      acl({
        principal: 'User:*',
        permission: 'DENY',
        operation: 'Read',
        resourceType: 'Group',
        name: 'team-locked',
      }),
    ];
    expect(decide(acls).authorize('User:x', 'h', 'Read', 'Group', 'team-open')).toBe(true);
    expect(decide(acls).authorize('User:x', 'h', 'Read', 'Group', 'team-locked')).toBe(false);
    expect(decide(acls).authorize('User:x', 'h', 'Describe', 'Group', 'team-locked')).toBe(true);
  });
});
