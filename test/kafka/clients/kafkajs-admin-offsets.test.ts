/**
 * kafkajs 2.2.4's admin setOffsets and resetOffsets against the server on port 0, unmodified: each
 * runs a classic-protocol consumer (JoinGroup with MEMBER_ID_REQUIRED, SyncGroup, one OffsetCommit
 * per partition with the consumer's generation, LeaveGroup), which commits the offsets given, or
 * the sentinels -2 (earliest) and -1 (latest) literally. Slow tier: kafkajs's consumer waits out its
 * 5 s fetch wait before it leaves, once per call. Real clients run on real time, so the store and
 * the server run on the system clock here, with no initial rebalance delay.
 */
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock } from '../../../src/index.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

let running: TestServer | undefined;
let admin: Admin | undefined;

afterEach(async () => {
  await admin?.disconnect();
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
  admin = undefined;
});

describe('kafkajs 2.2.4 admin through the classic group protocol', () => {
  it('setOffsets commits the given offsets; resetOffsets commits the sentinels -2 (earliest) and -1 (latest) literally', async () => {
    running = await startTestServer({
      clock: new SystemClock(),
      store: { group: { assignmentIntervalMs: 0, initialRebalanceDelayMs: 0 } },
      server: { topics: [{ name: 'orders', partitions: 3 }] },
    });
    const kafka = new Kafka({
      clientId: 'kafkajs-admin-offsets',
      brokers: running.server.brokers, // as the README hands it to kafkajs: a string[]
      logLevel: logLevel.NOTHING,
      retry: { retries: 3, initialRetryTime: 50 },
    });
    admin = kafka.admin();
    await admin.connect();
    await admin.setOffsets({
      groupId: 'seeded',
      topic: 'orders',
      partitions: [
        { partition: 0, offset: '25' },
        { partition: 2, offset: '7' },
      ],
    });
    expect(
      (await admin.fetchOffsets({ groupId: 'seeded', topics: ['orders'] }))[0]!.partitions.map(
        (p) => p.offset,
      ),
    ).toEqual(['25', '-1', '7']);
    await admin.resetOffsets({ groupId: 'seeded', topic: 'orders', earliest: true });
    expect(
      (await admin.fetchOffsets({ groupId: 'seeded', topics: ['orders'] }))[0]!.partitions.map(
        (p) => p.offset,
      ),
    ).toEqual(['-2', '-2', '-2']);
    await admin.resetOffsets({ groupId: 'seeded', topic: 'orders', earliest: false });
    expect(
      (await admin.fetchOffsets({ groupId: 'seeded', topics: ['orders'] }))[0]!.partitions.map(
        (p) => p.offset,
      ),
    ).toEqual(['-1', '-1', '-1']);
    const [group] = (await admin.describeGroups(['seeded'])).groups;
    expect([group!.state, group!.protocolType, group!.members], 'every consumer left').toEqual([
      'Empty',
      'consumer',
      [],
    ]);
  });
});
