/**
 * @platformatic/kafka 1.35.0 consumers with groupProtocol 'classic', unmodified, against the server
 * on port 0: JoinGroup v6 (flexible, MEMBER_ID_REQUIRED first), SyncGroup v4, Heartbeat v4; two
 * consumers split the topic's partitions, commit under their generation (OffsetCommit v9, which the
 * server reads as a generation in a classic group), and the one left takes every partition when the
 * other leaves (LeaveGroup v4).
 *
 * Real clients run on real time, so the store and the server run on the system clock here, with
 * short client timeouts and no initial rebalance delay.
 */
import { Consumer } from '@platformatic/kafka';
import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock } from '../../../src/index.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

let running: TestServer | undefined;
const closers: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
});

type PltConsumer = Consumer<Buffer, Buffer, Buffer, Buffer>;

function consumerOf(t: TestServer, clientId: string): PltConsumer {
  const consumer = new Consumer({
    clientId,
    groupId: 'plt-classic',
    bootstrapBrokers: [...t.server.brokers],
    groupProtocol: 'classic',
    sessionTimeout: 3_000,
    rebalanceTimeout: 3_000,
    heartbeatInterval: 100,
    maxWaitTime: 100,
    autocommit: false,
    retries: 2,
    retryDelay: 50,
  });
  closers.push(() => closeNow(consumer));
  return consumer;
}

/** Closes a consumer without waiting for its in-flight fetches (leaving its group). */
function closeNow(consumer: PltConsumer): Promise<void> {
  return new Promise((resolve, reject) =>
    consumer.close(true, (error) => (error ? reject(error) : resolve())),
  );
}

/** Waits (on real time: the clients' and the store's timers run on it) until `condition` holds. */
async function eventually(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300 && !condition(); i++)
    await new Promise((resolve) => setTimeout(resolve, 25));
  expect(condition(), what).toBe(true);
}

const owned = (c: PltConsumer) =>
  (c.assignments ?? []).flatMap((a) => a.partitions).sort((x, y) => x - y);

describe("@platformatic/kafka 1.35 consumers with groupProtocol 'classic'", () => {
  it('split the partitions, commit under their generation, and the one left takes all when the other leaves', async () => {
    running = await startTestServer({
      clock: new SystemClock(),
      store: { group: { assignmentIntervalMs: 0, initialRebalanceDelayMs: 0 } },
      server: { topics: [{ name: 'orders', partitions: 4 }] },
    });
    const t = running;
    const first = consumerOf(t, 'first');
    await first.consume({ topics: ['orders'], mode: 'committed', fallbackMode: 'earliest' });
    await eventually(() => owned(first).length === 4, 'the first consumer owns all 4 partitions');
    const second = consumerOf(t, 'second');
    await second.consume({ topics: ['orders'], mode: 'committed', fallbackMode: 'earliest' });
    await eventually(
      () => owned(first).length === 2 && owned(second).length === 2,
      'two partitions each',
    );
    expect([...owned(first), ...owned(second)].sort()).toEqual([0, 1, 2, 3]);
    const description = (await t.store.describeGroup('plt-classic')).classic!;
    expect(description).toMatchObject({ state: 'Stable', protocolType: 'consumer' });
    expect(description.members.map((m) => m.memberId).sort()).toEqual(
      [first.memberId, second.memberId].sort(),
    );

    const partition = owned(second)[0]!;
    await second.commit({
      offsets: [{ topic: 'orders', partition, offset: 123n, leaderEpoch: 0 }],
    });
    expect(
      (await t.store.fetchOffsets('plt-classic', [{ tableId: 1, bucketId: partition }]))[0],
    ).toMatchObject({ offset: 123, leaderEpoch: 0 });

    await closeNow(second);
    await eventually(
      () => owned(first).length === 4,
      'the first consumer owns all 4 again after the second left',
    );
    expect(
      (await t.store.describeGroup('plt-classic')).classic!.members.map((m) => m.memberId),
    ).toEqual([first.memberId]);
  });
});
