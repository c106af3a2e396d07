/**
 * The server's connection handling, driven over raw sockets: ApiVersions negotiation (an unsupported
 * version answered in v0 format with UNSUPPORTED_VERSION); pipelined requests answered strictly in
 * request order even when an earlier one finishes last; a Fetch held for max_wait_ms on the server's
 * clock without holding up another connection; idle connections closed; the connection limit;
 * graceful close (in-flight requests finish, held Fetches answered, the store closed only when
 * asked); and the start-up options (loopback by default, the advertised address, topics).
 */
import { cpSync, renameSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, OffsetStore, startKafkaServer } from '../../../src/index.js';
import { API_KEYS, KAFKA_ERROR, advertisedApis } from '../../../src/kafka/protocol/index.js';
import { HeldDatasyncFileSystem } from '../../store/store-fixtures.js';
import { dirFingerprint } from '../../support/dir-fingerprint.js';
import { tempDir } from '../../support/temp-dir.js';
import { SteppingClock } from '../../support/stepping-clock.js';
import { RawKafkaClient, TEST_SOFTWARE } from '../support/raw-kafka-client.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

let running: TestServer | undefined;
const clients: RawKafkaClient[] = [];

async function start(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  running = await startTestServer(options);
  return running;
}

async function connect(t: TestServer, options?: { read?: boolean }): Promise<RawKafkaClient> {
  const client = await RawKafkaClient.connect(t.server.port, options);
  clients.push(client);
  return client;
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
});

const FETCH = {
  maxWaitMs: 500,
  minBytes: 1,
  topics: [
    {
      topic: 'orders',
      partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }],
    },
  ],
};

describe('ApiVersions', () => {
  it('answers every advertised version (0-3) with the advertised ranges', async () => {
    const t = await start();
    const client = await connect(t);
    for (let version = 0; version <= 3; version++) {
      const response = await client.send(API_KEYS.ApiVersions, version, TEST_SOFTWARE);
      expect(response.errorCode, `v${version}`).toBe(0);
      expect(response.apiKeys, `v${version}`).toEqual(advertisedApis());
    }
  });

  it('answers v3 with INVALID_REQUEST and no API keys when the client software name or version is not letters, digits, dots and dashes (as Kafka does)', async () => {
    const t = await start();
    const client = await connect(t);
    const cases: [string, string, number][] = [
      ['librdkafka', '2.15.0', 0],
      ['platformatic-kafka', '1.35.0-rc.1', 0],
      ['', '1.0', KAFKA_ERROR.INVALID_REQUEST],
      ['name', '', KAFKA_ERROR.INVALID_REQUEST],
      ['-name', '1', KAFKA_ERROR.INVALID_REQUEST],
      ['name.', '1', KAFKA_ERROR.INVALID_REQUEST],
      ['my_client', '1', KAFKA_ERROR.INVALID_REQUEST],
      ['client', '1.0+build', KAFKA_ERROR.INVALID_REQUEST],
    ];
    for (const [name, version, errorCode] of cases) {
      const response = await client.send(API_KEYS.ApiVersions, 3, {
        clientSoftwareName: name,
        clientSoftwareVersion: version,
      });
      expect([response.errorCode, response.apiKeys.length > 0], `${name} ${version}`).toEqual([
        errorCode,
        errorCode === 0,
      ]);
    }
  });

  it('answers a version it does not advertise in the v0 format, with UNSUPPORTED_VERSION and the ranges', async () => {
    const t = await start();
    const client = await connect(t);
    const payload = await client.sendRaw(API_KEYS.ApiVersions, 4, {
      clientSoftwareName: 'future',
      clientSoftwareVersion: '9',
    });
    const response = client.decode(API_KEYS.ApiVersions, 0, payload);
    expect(response.errorCode).toBe(KAFKA_ERROR.UNSUPPORTED_VERSION);
    expect(response.apiKeys).toEqual(advertisedApis());
    expect(
      (await client.send(API_KEYS.ApiVersions, 2, {})).errorCode,
      'the connection goes on',
    ).toBe(0);
  });
});

describe('pipelining and order', () => {
  it('answers pipelined requests in order; a request behind a commit starts once the commit is answered, so it sees it', async () => {
    const fs = new HeldDatasyncFileSystem();
    const t = await start({
      store: { fs },
      server: { topics: [{ name: 'orders', partitions: 2 }] },
    });
    const client = await connect(t);
    fs.holding = true;
    const commit = client.send(API_KEYS.OffsetCommit, 8, {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 0, committedOffset: 7n }] }],
    });
    const versions = client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE);
    const fetched = client.send(API_KEYS.OffsetFetch, 8, {
      groups: [{ groupId: 'g', topics: [{ name: 'orders', partitionIndexes: [0] }] }],
    });
    await fs.heldCount(1);
    await waitFor(() => t.server.stats().connections[0]?.bufferedRequestBytes !== 0);
    expect(client.arrivals, 'nothing overtakes the commit held in fdatasync').toEqual([]);
    expect(
      t.server.stats().connections[0]!.inFlightRequests,
      'the requests behind the commit have not started',
    ).toBe(1);
    fs.holding = false;
    fs.releaseOne();
    const [committed, , offsets] = await Promise.all([commit, versions, fetched]);
    expect(client.arrivals).toEqual([1, 2, 3]);
    expect(committed.topics[0]!.partitions[0]!.errorCode).toBe(0);
    expect(
      offsets.groups[0]!.topics[0]!.partitions[0]!.committedOffset,
      'the fetch saw the commit before it',
    ).toBe(7n);
  });

  it('starts OffsetCommits pipelined behind OffsetCommits at once, and the last commit of a partition wins', async () => {
    const fs = new HeldDatasyncFileSystem();
    const t = await start({
      store: { fs },
      server: { topics: [{ name: 'orders', partitions: 2 }] },
    });
    const client = await connect(t);
    fs.holding = true;
    const commit = (offset: bigint) =>
      client.send(API_KEYS.OffsetCommit, 8, {
        groupId: 'g',
        generationIdOrMemberEpoch: -1,
        memberId: '',
        topics: [{ name: 'orders', partitions: [{ partitionIndex: 1, committedOffset: offset }] }],
      });
    const commits = [commit(1n), commit(2n), commit(3n)];
    await fs.heldCount(1);
    await waitFor(() => t.server.stats().connections[0]?.inFlightRequests === 3);
    fs.holding = false;
    fs.releaseOne();
    for (const response of await Promise.all(commits))
      expect(response.topics[0]!.partitions[0]!.errorCode).toBe(0);
    expect(client.arrivals).toEqual([1, 2, 3]);
    expect((await t.store.fetchOffsets('g', [{ tableId: 1, bucketId: 1 }]))[0]?.offset).toBe(3);
  });

  it('answers 500 pipelined requests, all in order', async () => {
    const t = await start({ server: { topics: [{ name: 'orders', partitions: 4 }] } });
    const client = await connect(t);
    const sent = Array.from({ length: 500 }, (_, i) =>
      i % 3 === 0
        ? client.send(API_KEYS.OffsetCommit, 5, {
            groupId: `g${i % 7}`,
            generationIdOrMemberEpoch: -1,
            memberId: '',
            topics: [
              {
                name: 'orders',
                partitions: [
                  { partitionIndex: i % 4, committedOffset: BigInt(i), committedMetadata: null },
                ],
              },
            ],
          })
        : client.send(API_KEYS.Metadata, 9, { topics: [{ name: 'orders' }] }),
    );
    await Promise.all(sent);
    expect(client.arrivals).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
  });
});

describe('long-polled Fetch', () => {
  it('holds a Fetch for max_wait_ms on the server clock, without holding up another connection', async () => {
    const clock = new ManualClock();
    const t = await start({ clock, server: { topics: [{ name: 'orders', partitions: 1 }] } });
    const fetcher = await connect(t);
    const other = await connect(t);
    let answered = false;
    const fetch = fetcher.send(API_KEYS.Fetch, 11, FETCH).then((r) => {
      answered = true;
      return r;
    });
    const behind = fetcher.send(API_KEYS.ApiVersions, 2, {});
    expect(
      (await other.send(API_KEYS.Metadata, 6, { topics: [{ name: 'orders' }] })).topics[0]!
        .errorCode,
      'the other connection is served',
    ).toBe(0);
    expect(
      (
        await other.send(API_KEYS.ListOffsets, 3, {
          replicaId: -1,
          topics: [{ name: 'orders', partitions: [{ partitionIndex: 0, timestamp: -1n }] }],
        })
      ).topics[0]!.partitions[0]!.offset,
    ).toBe(0n);
    expect(t.server.stats().heldFetches).toBe(1);
    clock.advance(499);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(answered, 'not before max_wait_ms').toBe(false);
    expect(fetcher.arrivals, 'the request behind it waits its turn').toEqual([]);
    clock.advance(1);
    const response = await fetch;
    await behind;
    expect(fetcher.arrivals).toEqual([1, 2]);
    expect(response.responses[0]!.partitions[0]).toMatchObject({
      partitionIndex: 0,
      errorCode: 0,
      highWatermark: 0n,
      records: expect.anything(),
    });
  });

  it('stops reading a connection whose next request waits behind a held Fetch, however much the client sends', async () => {
    const clock = new ManualClock();
    const t = await start({ clock, server: { topics: [{ name: 'orders', partitions: 1 }] } });
    const client = await connect(t);
    const fetch = client.send(API_KEYS.Fetch, 11, FETCH);
    await waitFor(() => t.server.stats().heldFetches === 1);
    const behind = client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE);
    // 16 MiB more, as 1 MiB frames (the server would take each one in its turn).
    const frame = Buffer.alloc(1024 * 1024);
    frame.writeInt32BE(frame.length - 4, 0);
    for (let i = 0; i < 16; i++) client.write(frame);
    await waitFor(() => t.server.stats().connections[0]?.readPaused === true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(
      t.server.stats().connections[0]!.bufferedRequestBytes,
      'the waiting request and one socket read at most',
    ).toBeLessThanOrEqual(2 * 1024 * 1024);
    clock.advance(FETCH.maxWaitMs);
    expect((await fetch).responses[0]!.partitions[0]!.errorCode).toBe(0);
    expect((await behind).errorCode).toBe(0);
  });

  it('drops a held Fetch when its connection closes, rather than keeping it until its wait ends', async () => {
    const clock = new ManualClock();
    const t = await start({ clock, server: { topics: [{ name: 'orders', partitions: 1 }] } });
    const client = await connect(t);
    void client.send(API_KEYS.Fetch, 11, { ...FETCH, maxWaitMs: 30_000 }).catch(() => {});
    await waitFor(() => t.server.stats().heldFetches === 1);
    client.socket.destroy();
    await waitFor(() => t.server.stats().connections.length === 0);
    await waitFor(() => t.server.stats().heldFetches === 0);
  });

  it('answers at once when min_bytes is 0, max_wait_ms is 0, or a partition is unknown', async () => {
    const t = await start({ server: { topics: [{ name: 'orders', partitions: 1 }] } });
    const client = await connect(t);
    expect(
      (await client.send(API_KEYS.Fetch, 11, { ...FETCH, minBytes: 0 })).responses[0]!
        .partitions[0]!.errorCode,
    ).toBe(0);
    expect(
      (await client.send(API_KEYS.Fetch, 12, { ...FETCH, maxWaitMs: 0 })).responses[0]!
        .partitions[0]!.errorCode,
    ).toBe(0);
    const unknown = await client.send(API_KEYS.Fetch, 4, {
      ...FETCH,
      topics: [
        { topic: 'orders', partitions: [{ partition: 1, fetchOffset: 0n, partitionMaxBytes: 1 }] },
      ],
    });
    expect(unknown.responses[0]!.partitions[0]!.errorCode).toBe(
      KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION,
    );
  });

  it('reads a topic id written where Fetch v12 carries a name (as @platformatic/kafka 1.35 writes it) as that topic, and echoes it', async () => {
    const t = await start({ server: { topics: [{ name: 'orders', partitions: 1 }] } });
    const client = await connect(t);
    const topicId = (await client.send(API_KEYS.Metadata, 12, { topics: null })).topics[0]!.topicId;
    const response = await client.send(API_KEYS.Fetch, 12, {
      ...FETCH,
      minBytes: 0,
      topics: [
        { topic: topicId, partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 }] },
      ],
    });
    expect(response.responses[0]!.topic).toBe(topicId);
    expect(response.responses[0]!.partitions[0]!.errorCode).toBe(0);
  });

  it('holds a Fetch at most fetchWaitMsMax, and answers whatever fetch offset it names', async () => {
    const clock = new ManualClock();
    const t = await start({
      clock,
      server: { topics: [{ name: 'orders', partitions: 1 }], fetchWaitMsMax: 100 },
    });
    const client = await connect(t);
    const fetch = client.send(API_KEYS.Fetch, 12, {
      ...FETCH,
      maxWaitMs: 60_000,
      topics: [
        {
          topic: 'orders',
          partitions: [{ partition: 0, fetchOffset: 123_456n, partitionMaxBytes: 1 }],
        },
      ],
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    clock.advance(100);
    expect(
      (await fetch).responses[0]!.partitions[0]!.errorCode,
      'no OFFSET_OUT_OF_RANGE: a client must not reset its position',
    ).toBe(0);
  });
});

describe('connections', () => {
  it('closes a connection idle for idleTimeoutMs, but not one with a Fetch in flight', async () => {
    const clock = new ManualClock();
    const t = await start({
      clock,
      server: {
        idleTimeoutMs: 1000,
        fetchWaitMsMax: 10_000,
        topics: [{ name: 'orders', partitions: 1 }],
      },
    });
    const idle = await connect(t);
    const busy = await connect(t);
    await idle.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE);
    const held = busy.send(API_KEYS.Fetch, 11, { ...FETCH, maxWaitMs: 5000 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    clock.advance(1250);
    await idle.closed;
    await waitFor(() => t.server.connectionCount === 1);
    clock.advance(3750);
    await held;
    clock.advance(1250);
    await busy.closed;
    await waitFor(() => t.server.connectionCount === 0);
  });

  it('measures idleness on interval time: a wall clock stepping an hour forward closes no active connection', async () => {
    const clock = new SteppingClock();
    const t = await start({ clock, server: { idleTimeoutMs: 60_000 } });
    const client = await connect(t);
    await client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE);
    clock.stepWall(3_600_000);
    clock.advance(20_000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(t.server.connectionCount, 'quiet for 20 s of 60').toBe(1);
    expect((await client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
    clock.advance(75_000);
    await client.closed;
  });

  it('closes connections beyond connectionsMax at once and serves the others', async () => {
    const t = await start({ server: { connectionsMax: 3 } });
    const kept = await Promise.all([connect(t), connect(t), connect(t)]);
    for (const c of kept) await c.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE);
    const extra = await connect(t);
    await extra.closed;
    expect(t.server.stats().refusedConnections).toBe(1);
    expect((await kept[0]!.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
    await kept[1]!.close();
    await waitFor(() => t.server.connectionCount === 2);
    const replacement = await connect(t);
    expect(
      (await replacement.send(API_KEYS.ApiVersions, 0, {})).errorCode,
      'a freed place is taken',
    ).toBe(0);
  });
});

describe('close', () => {
  it('lets in-flight requests finish, answers held Fetches at once, refuses new connections, and leaves the store open unless asked', async () => {
    const fs = new HeldDatasyncFileSystem();
    const t = await start({
      store: { fs },
      server: { topics: [{ name: 'orders', partitions: 1 }] },
    });
    const client = await connect(t);
    const fetcher = await connect(t);
    const held = fetcher.send(API_KEYS.Fetch, 11, { ...FETCH, maxWaitMs: 60_000 });
    await waitFor(() => t.server.stats().heldFetches === 1);
    fs.holding = true;
    const commit = client.send(API_KEYS.OffsetCommit, 5, {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [
        {
          name: 'orders',
          partitions: [{ partitionIndex: 0, committedOffset: 5n, committedMetadata: 'm' }],
        },
      ],
    });
    await fs.heldCount(1);
    const closing = t.server.close();
    expect((await held).responses[0]!.partitions[0]!.errorCode, 'the held Fetch is answered').toBe(
      0,
    );
    await expect(RawKafkaClient.connect(t.server.port)).rejects.toMatchObject({
      code: 'ECONNREFUSED',
    });
    fs.holding = false;
    fs.releaseOne();
    expect(
      (await commit).topics[0]!.partitions[0]!.errorCode,
      'the in-flight commit finished and was answered',
    ).toBe(0);
    await closing;
    await client.closed;
    expect((await t.store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0]).toMatchObject({
      offset: 5,
      metadata: 'm',
    });
    await t.store.close();
    running = undefined;
  });

  it('closes the store too with closeStore, once the connections are closed', async () => {
    const t = await start();
    const client = await connect(t);
    await client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE);
    await t.server.close({ closeStore: true });
    await client.closed;
    await expect(t.store.fetchOffsets('g', [])).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    running = undefined;
  });

  it('closes the store when asked by a later close, after a first close that did not ask', async () => {
    const t = await start();
    await t.server.close();
    expect(await t.store.fetchOffsets('g', [])).toEqual([]);
    await t.server.close({ closeStore: true });
    await expect(t.store.fetchOffsets('g', [])).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    await t.server.close({ closeStore: true }); // and again: idempotent
    running = undefined;
  });
});

describe('startKafkaServer', () => {
  it('listens on 127.0.0.1 by default and advertises the bound address unless told another', async () => {
    const t = await start();
    expect(t.server.host).toBe('127.0.0.1');
    expect(t.server.brokers).toEqual([`127.0.0.1:${t.server.port}`]);
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 1 });
    const other = await startKafkaServer({
      store,
      advertisedHost: 'kafka.example',
      advertisedPort: 19092,
    });
    expect(other.brokers).toEqual(['kafka.example:19092']);
    const client = await RawKafkaClient.connect(other.port);
    const metadata = await client.send(API_KEYS.Metadata, 12, { topics: [] });
    expect(metadata.brokers).toEqual([
      { nodeId: 0, host: 'kafka.example', port: 19092, rack: null },
    ]);
    expect(await client.send(API_KEYS.FindCoordinator, 2, { key: 'g', keyType: 0 })).toMatchObject({
      host: 'kafka.example',
      port: 19092,
    });
    await client.close();
    await other.close({ closeStore: true });
  });

  it('refuses a wildcard address without an advertised host, and bad options by name, before opening anything', async () => {
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 1 });
    await expect(startKafkaServer({ store, host: '0.0.0.0' })).rejects.toThrow(
      /advertisedHost is required/,
    );
    await expect(startKafkaServer({ store, port: 70_000 })).rejects.toThrow(RangeError);
    await expect(startKafkaServer({ store, requestBytesMax: 'big' as never })).rejects.toThrow(
      /options.requestBytesMax must be a number/,
    );
    await expect(
      startKafkaServer({ store, topics: [{ name: 'bad name', partitions: 1 }] }),
    ).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
    await expect(startKafkaServer({ store: {} as never })).rejects.toThrow(TypeError);
    // An array is an object to typeof: each bag of options refuses one, naming it, rather than take
    // it for options at their defaults (no quotas, no authorizer).
    for (const [options, name] of [
      [{ security: [] }, 'options.security must be an object'],
      [{ security: { quotas: [] } }, 'options.security.quotas must be an object'],
      [
        { security: { quotas: { default: [] } } },
        'options.security.quotas.default must be an object',
      ],
      [
        { security: { quotas: { principals: [] } } },
        'options.security.quotas.principals must be an object',
      ],
      [{ security: { authorizer: [] } }, 'options.security.authorizer must be an object'],
      [{ listeners: [[]] }, 'options.listeners[0] must be an object'],
    ] as const)
      await expect(startKafkaServer({ store, ...(options as object) })).rejects.toThrow(
        expect.objectContaining({ constructor: TypeError, message: expect.stringContaining(name) }),
      );
    await expect(startKafkaServer({ store, clock: { nowMs: () => 1 } as never })).rejects.toThrow(
      /options.clock must have nowMs\(\) and setTimer\(\)/,
    );
    const clock = Object.assign(new ManualClock(), { elapsedMs: 5 });
    await expect(startKafkaServer({ store, clock: clock as never })).rejects.toThrow(
      /options.clock.elapsedMs must be a function when given/,
    );
    await store.close();
  });

  it('refuses an address in use with INVALID_CONFIG, the Node error as its cause', async () => {
    const t = await start();
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 1 });
    await expect(startKafkaServer({ store, port: t.server.port })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      cause: expect.objectContaining({ code: 'EADDRINUSE' }),
    });
    await store.close();
  });

  it("never gives a new topic the table of offsets the store holds: with the catalog file lost, a new topic does not inherit an old one's committed offsets", async () => {
    const dir = tempDir();
    let t = await start({ dir, server: { topics: [{ name: 'orders', partitions: 1 }] } });
    let client = await connect(t);
    const commit = await client.send(API_KEYS.OffsetCommit, 8, {
      groupId: 'billing',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 0, committedOffset: 500n }] }],
    });
    expect(commit.topics[0]!.partitions[0]!.errorCode).toBe(0);
    await client.close();
    await t.close();
    running = undefined;
    rmSync(path.join(dir, 'kafka-topics.json'));
    t = await start({ dir, server: { topics: [{ name: 'payments', partitions: 1 }] } });
    client = await connect(t);
    const fetched = await client.send(API_KEYS.OffsetFetch, 8, {
      groups: [{ groupId: 'billing', topics: [{ name: 'payments', partitionIndexes: [0] }] }],
    });
    expect(fetched.groups[0]!.topics[0]!.partitions[0]!.committedOffset).toBe(-1n);
    expect(t.warnings.splice(0)).toEqual([
      expect.stringMatching(/holds offsets of tables up to 1 .*new topics take table ids from 2/),
    ]);
  });

  it('creates and grows the topics it is given, registers their layouts with the store, and refuses to shrink one', async () => {
    const dir = tempDir();
    let t = await start({
      dir,
      server: {
        topics: [
          { name: 'orders', partitions: 2 },
          { name: 'audit', partitions: 1 },
        ],
      },
    });
    await t.close();
    t = await start({ dir, server: { topics: [{ name: 'orders', partitions: 6 }] } });
    const client = await connect(t);
    const metadata = await client.send(API_KEYS.Metadata, 12, { topics: null });
    expect(metadata.topics.map((topic) => [topic.name, topic.partitions.length])).toEqual([
      ['audit', 1],
      ['orders', 6],
    ]);
    const joined = await t.store.heartbeat('layout-check', {
      memberEpoch: 0,
      subscribedTableIds: [1],
    });
    expect(joined.assignment, "the store assigns the grown topic's 6 partitions").toHaveLength(6);
    await client.close();
    await t.close();
    running = undefined;
    await expect(
      startTestServer({ dir, server: { topics: [{ name: 'orders', partitions: 3 }] } }),
    ).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});

/** Polls `condition` on the event loop until it holds (network events, not the store's timers). */
async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++)
    await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}

describe('a server whose store directory is renamed or replaced while it runs', () => {
  it('creates no topic in the catalog of the directory that now has the name', async () => {
    const base = tempDir();
    const [live, moved] = ['offsets', 'offsets.old'].map((n) => path.join(base, n));
    const t = await start({ dir: live!, server: { topics: [{ name: 'orders', partitions: 1 }] } });
    const client = await connect(t);
    renameSync(live!, moved!);
    cpSync(moved!, live!, { recursive: true });
    rmSync(path.join(live!, 'LOCK'));
    const copy = dirFingerprint(live!);
    const metadata = await client.send(API_KEYS.Metadata, 9, {
      topics: [{ name: 'later' }],
      allowAutoTopicCreation: true,
    });
    expect(metadata.topics[0]).toMatchObject({
      name: 'later',
      errorCode: KAFKA_ERROR.KAFKA_STORAGE_ERROR,
    });
    expect(dirFingerprint(live!), 'the copy under the name is untouched').toEqual(copy);
    expect(t.warnings).toEqual([]);
    running = undefined;
    await t.server.close();
    await expect(t.store.close()).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
  });
});
