/**
 * kafkajs 2.2.4's admin client against the server on port 0, unmodified: listGroups,
 * describeGroups, fetchOffsets (every partition of the topic as Metadata reports it, negative
 * offsets as kafkajs's strings), fetchTopicOffsets (0 and 0: no records are stored) and
 * deleteGroups (refusing a group with members). setOffsets and resetOffsets, which run a
 * classic-protocol consumer and wait out its 5 s fetch wait each, are in the slow tier
 * (kafkajs-admin-offsets.test.ts).
 */
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

let running: TestServer | undefined;
let admin: Admin | undefined;

async function start(): Promise<{ t: TestServer; admin: Admin }> {
  running = await startTestServer({
    server: {
      topics: [
        { name: 'orders', partitions: 3 },
        { name: 'audit', partitions: 1 },
      ],
    },
  });
  const kafka = new Kafka({
    clientId: 'kafkajs-admin-test',
    brokers: running.server.brokers,
    logLevel: logLevel.NOTHING,
    retry: { retries: 3, initialRetryTime: 50 },
  });
  admin = kafka.admin();
  await admin.connect();
  return { t: running, admin };
}

afterEach(async () => {
  await admin?.disconnect();
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
  admin = undefined;
});

/** A group with offsets, negative ones included, and a group with a member. */
async function seed(t: TestServer): Promise<void> {
  await t.store.commitOffsets('readers', [
    { tableId: 1, bucketId: 0, offset: 1042, metadata: 'host-a' },
    { tableId: 1, bucketId: 2, offset: -2 },
    { tableId: 2, bucketId: 0, offset: -1 },
  ]);
  await t.store.commitOffsets('busy', [{ tableId: 1, bucketId: 1, offset: 7 }]);
  await t.store.heartbeat('busy', { memberEpoch: 0, subscribedTableIds: [1] });
}

describe('kafkajs 2.2.4 admin', () => {
  it('listGroups and describeGroups', async () => {
    const { t, admin } = await start();
    await seed(t);
    expect((await admin.listGroups()).groups).toEqual([
      { groupId: 'busy', protocolType: 'consumer' },
      { groupId: 'readers', protocolType: '' },
    ]);
    const { groups } = await admin.describeGroups(['readers', 'busy', 'nobody']);
    expect(
      groups.map((g) => [
        g.groupId,
        (g as typeof g & { errorCode: number }).errorCode,
        g.state,
        g.protocolType,
      ]),
    ).toEqual([
      ['readers', 0, 'Empty', ''],
      ['busy', 0, 'Stable', 'consumer'],
      ['nobody', 0, 'Dead', ''],
    ]);
    expect(groups[1]!.members).toHaveLength(1);
  });

  it('fetchOffsets: every partition of the topic, negative offsets as committed, -1 where nothing is', async () => {
    const { t, admin } = await start();
    await seed(t);
    const fetched = await admin.fetchOffsets({ groupId: 'readers', topics: ['orders', 'audit'] });
    expect(fetched).toEqual([
      {
        topic: 'orders',
        partitions: [
          { partition: 0, offset: '1042', metadata: 'host-a' },
          { partition: 1, offset: '-1', metadata: null },
          { partition: 2, offset: '-2', metadata: null },
        ],
      },
      { topic: 'audit', partitions: [{ partition: 0, offset: '-1', metadata: null }] },
    ]);
    const all = await admin.fetchOffsets({ groupId: 'readers' });
    expect(all.map((topic) => topic.topic).sort()).toEqual(['audit', 'orders']);
    await expect(
      admin.fetchOffsets({ groupId: 'readers', topics: ['missing'] }),
    ).rejects.toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });

  it('fetchTopicOffsets: low and high 0 for every partition', async () => {
    const { admin } = await start();
    expect(await admin.fetchTopicOffsets('orders')).toEqual(
      [0, 1, 2].map((partition) => ({ partition, offset: '0', high: '0', low: '0' })),
    );
  });

  it('deleteGroups: deletes a group without members, refuses one with members', async () => {
    const { t, admin } = await start();
    await seed(t);
    await admin.deleteGroups(['readers']);
    expect((await admin.listGroups()).groups.map((g) => g.groupId)).toEqual(['busy']);
    await expect(admin.deleteGroups(['busy'])).rejects.toMatchObject({
      name: 'KafkaJSDeleteGroupsError',
      groups: [expect.objectContaining({ groupId: 'busy', errorCode: 68 })],
    });
  });
});
