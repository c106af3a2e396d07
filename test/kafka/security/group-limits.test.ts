/**
 * groupsPerPrincipalMax: a principal that has created as many groups as allowed gets
 * POLICY_VIOLATION (44) for the next new group, with nothing written, while groups that exist
 * already (whoever made them) and the ones it created stay open to it, and another principal has
 * its own count.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { NodeFileSystem } from '../../../src/io/index.js';
import { OffsetStoreError } from '../../../src/errors/index.js';
import { API_KEYS, KAFKA_ERROR } from '../../../src/kafka/protocol/index.js';
import { GroupLimits, UserCredentials } from '../../../src/kafka/security/index.js';
import { tempDir } from '../../support/temp-dir.js';
import { RawKafkaClient } from '../support/raw-kafka-client.js';
import { loginPlain } from '../support/sasl-login.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

function commit(client: RawKafkaClient, groupId: string, offset = 9n) {
  return client
    .send(API_KEYS.OffsetCommit, 8, {
      groupId,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [
        {
          name: 'orders',
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: offset,
              committedLeaderEpoch: -1,
              committedMetadata: '',
            },
          ],
        },
      ],
    })
    .then((r) => r.topics[0]!.partitions[0]!.errorCode);
}

describe('groups per principal', () => {
  it('refuses a principal its third new group and writes nothing, but not existing groups or another principal', async () => {
    const dir = tempDir();
    const fs = new NodeFileSystem();
    await UserCredentials.addUser(fs, dir, 'alice', 'a');
    await UserCredentials.addUser(fs, dir, 'bob', 'b');
    running = await startTestServer({
      dir,
      server: {
        topics: [{ name: 'orders', partitions: 1 }],
        listeners: [
          {
            securityProtocol: 'SASL_PLAINTEXT',
            saslMechanisms: ['PLAIN'],
            allowPlainWithoutTls: true,
          },
        ],
        security: { groupsPerPrincipalMax: 2 },
      },
    });
    await running.store.commitOffsets('shared', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    const alice = await RawKafkaClient.connect(running.server.port);
    expect(await loginPlain(alice, 'alice', 'a')).toBe(0);
    expect(
      await Promise.all([commit(alice, 'a1'), commit(alice, 'a2'), commit(alice, 'a3')]),
    ).toEqual([0, 0, KAFKA_ERROR.POLICY_VIOLATION]);
    expect(await running.store.fetchOffsets('a3', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
    expect(await commit(alice, 'a1')).toBe(0);
    expect(await commit(alice, 'shared')).toBe(0);
    const bob = await RawKafkaClient.connect(running.server.port);
    expect(await loginPlain(bob, 'bob', 'b')).toBe(0);
    expect(await commit(bob, 'b1')).toBe(0);
    expect(await commit(bob, 'a3')).toBe(0);
    expect(running.server.stats().security.refusedGroupCreations).toBe(1);
    await alice.close();
    await bob.close();
  });

  it('counts no group the principal made that is gone: deleted through the wire, or in process', async () => {
    running = await startTestServer({
      server: {
        topics: [{ name: 'orders', partitions: 1 }],
        security: { groupsPerPrincipalMax: 2 },
      },
    });
    const client = await RawKafkaClient.connect(running.server.port);
    expect(await commit(client, 'g1')).toBe(0);
    expect(await commit(client, 'g2')).toBe(0);
    expect(await commit(client, 'g3')).toBe(KAFKA_ERROR.POLICY_VIOLATION);
    const deleted = await client.send(API_KEYS.DeleteGroups, 2, { groupsNames: ['g1'] });
    expect(deleted.results).toEqual([{ groupId: 'g1', errorCode: 0 }]);
    // At once: the delete went through this server.
    expect(await commit(client, 'g3')).toBe(0);
    expect(await commit(client, 'g4')).toBe(KAFKA_ERROR.POLICY_VIOLATION);
    // A group deleted elsewhere (in process, or expired) is found gone when the limit is reached,
    // looked for at most once a second per principal.
    await running.store.deleteGroup('g2');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await commit(client, 'g4')).toBe(0);
    expect(await commit(client, 'g5')).toBe(KAFKA_ERROR.POLICY_VIOLATION);
    expect(await running.store.fetchOffsets('g5', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
    expect(running.server.stats().security.refusedGroupCreations).toBe(3);
    await client.close();
  });

  it('keeps counting a deleted group while a request of its maker for it is being handled (it may write the group again)', async () => {
    const groups = new Set<string>();
    const store = {
      describeGroup: async (groupId: string) => {
        if (!groups.has(groupId))
          throw new OffsetStoreError('GROUP_ID_NOT_FOUND', `no group ${groupId}`);
        return {};
      },
    } as never;
    const limits = new GroupLimits(1);
    const alice = 'User:alice';
    expect(await limits.mayWrite(store, alice, 'g1')).toBe(true);
    groups.add('g1');
    limits.handled(alice, 'g1');
    // A commit to g1 is in its handler when a DeleteGroups of g1 succeeds; the commit then writes
    // g1 again.
    expect(await limits.mayWrite(store, alice, 'g1')).toBe(true);
    groups.delete('g1');
    limits.deleted('g1');
    groups.add('g1');
    limits.handled(alice, 'g1');
    expect(await limits.mayWrite(store, alice, 'g2')).toBe(false);
    // Deleted with nothing in flight: uncounted at once.
    groups.delete('g1');
    limits.deleted('g1');
    expect(await limits.mayWrite(store, alice, 'g2')).toBe(true);
  });

  it('keeps pipelined commits of a new group in order: the last one wins', async () => {
    running = await startTestServer({
      server: {
        topics: [{ name: 'orders', partitions: 1 }],
        security: { groupsPerPrincipalMax: 10 },
      },
    });
    const client = await RawKafkaClient.connect(running.server.port);
    // One write, so one read on the server: the first commit checks the group, the others follow.
    client.socket.cork();
    const answers = [
      commit(client, 'fresh', 1n),
      commit(client, 'fresh', 2n),
      commit(client, 'fresh', 3n),
    ];
    client.socket.uncork();
    expect(await Promise.all(answers)).toEqual([0, 0, 0]);
    expect(
      (await running.store.fetchOffsets('fresh', [{ tableId: 1, bucketId: 0 }]))[0]?.offset,
    ).toBe(3);
    await client.close();
  });
});
