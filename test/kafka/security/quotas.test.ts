/**
 * Client quotas as Kafka applies them: a client over its bytes/s quota gets its response with
 * throttle_time_ms and its connection is muted for that long on the server's clock (the next
 * request waits, unread), while another client id with its own quota goes on unthrottled; a
 * principal's quota wins over the default; nothing sent before a SASL connection has authenticated
 * counts. And the rate arithmetic on its own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, NodeFileSystem } from '../../../src/index.js';
import { API_KEYS } from '../../../src/kafka/protocol/index.js';
import {
  ClientQuotas,
  UserCredentials,
  type QuotaOptions,
} from '../../../src/kafka/security/index.js';
import { SteppingClock } from '../../support/stepping-clock.js';
import { RawKafkaClient, TEST_SOFTWARE } from '../support/raw-kafka-client.js';
import { loginPlain } from '../support/sasl-login.js';
import { tempDir } from '../../support/temp-dir.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';

let running: TestServer | undefined;

afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** Lets the event loop turn a few times (the server is in this process). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 2));
}

/** A server on a manual clock with one SASL_PLAINTEXT listener (PLAIN), user alice, and `quotas`. */
async function startSaslWithQuotas(quotas: QuotaOptions): Promise<TestServer> {
  const dir = tempDir();
  await UserCredentials.addUser(new NodeFileSystem(), dir, 'alice', 'alice-pw');
  return startTestServer({
    dir,
    clock: new ManualClock(),
    server: {
      listeners: [
        {
          securityProtocol: 'SASL_PLAINTEXT',
          saslMechanisms: ['PLAIN'],
          allowPlainWithoutTls: true,
        },
      ],
      security: { quotas },
    },
  });
}

describe('client quotas over the wire', () => {
  it('throttles a client over its bytes/s quota and mutes its connection, not the others', async () => {
    const clock = new ManualClock();
    running = await startTestServer({
      clock,
      server: {
        security: { quotas: { default: { bytesPerSecond: 2000 }, windowMs: 1000, windowCount: 2 } },
      },
    });
    const greedy = await RawKafkaClient.connect(running.server.port);
    const polite = await RawKafkaClient.connect(running.server.port);
    let throttleMs = 0;
    let requests = 0;
    while (throttleMs === 0 && requests < 100) {
      throttleMs = (await greedy.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE, 'greedy'))
        .throttleTimeMs;
      requests++;
    }
    expect(
      requests,
      'a few hundred bytes each: throttled once past 2000 bytes in the window',
    ).toBeGreaterThan(3);
    expect(throttleMs).toBeGreaterThan(0);
    const waiting = greedy.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE, 'greedy');
    await settle();
    expect(greedy.pendingCount, 'muted: the next request is not read').toBe(1);
    expect(
      (await polite.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE, 'polite')).throttleTimeMs,
      'another client id has its own usage',
    ).toBe(0);
    clock.advance(throttleMs);
    await waiting;
    expect(running.server.stats().security.throttledResponses).toBeGreaterThanOrEqual(1);
    await greedy.close();
    await polite.close();
  });

  it('counts nothing a client sends before it has authenticated, nor its SASL exchange: it cannot spend the quota of a client id it claims', async () => {
    running = await startSaslWithQuotas({
      clientIds: { dashboards: { bytesPerSecond: 2000 } },
      windowMs: 1000,
      windowCount: 2,
    });
    // No credentials, claiming alice's client id: ApiVersions is all it may send, as often as it likes.
    const stranger = await RawKafkaClient.connect(running.server.port);
    for (let i = 0; i < 50; i++)
      expect(
        (await stranger.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE, 'dashboards')).throttleTimeMs,
      ).toBe(0);
    const alice = await RawKafkaClient.connect(running.server.port);
    expect(await loginPlain(alice, 'alice', 'alice-pw')).toBe(0);
    expect(
      (await alice.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE, 'dashboards')).throttleTimeMs,
      'her quota is hers, untouched',
    ).toBe(0);
    // Once authenticated, her own requests count.
    let throttleMs = 0;
    for (let i = 0; throttleMs === 0 && i < 100; i++)
      throttleMs = (await alice.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE, 'dashboards'))
        .throttleTimeMs;
    expect(throttleMs).toBeGreaterThan(0);
    await stranger.close();
    alice.socket.destroy();
  });

  it('counts the SASL requests of a client that has authenticated (answered ILLEGAL_SASL_STATE): no way around its quota', async () => {
    running = await startSaslWithQuotas({
      default: { bytesPerSecond: 500 },
      windowMs: 1000,
      windowCount: 2,
    });
    const alice = await RawKafkaClient.connect(running.server.port);
    expect(await loginPlain(alice, 'alice', 'alice-pw')).toBe(0);
    let muted = false;
    for (let i = 0; i < 200 && !muted; i++) {
      const answer = alice.send(API_KEYS.SaslHandshake, 1, { mechanism: 'PLAIN' }, 'flood');
      await settle();
      muted = alice.pendingCount === 1;
      if (!muted) expect((await answer).errorCode).toBe(34); // ILLEGAL_SASL_STATE
    }
    expect(muted, 'over its quota, its connection is muted').toBe(true);
    alice.socket.destroy();
  });

  it('mutes a throttled connection for its throttle time even when the wall clock steps back an hour meanwhile', async () => {
    const clock = new SteppingClock();
    running = await startTestServer({
      clock,
      server: {
        security: { quotas: { default: { bytesPerSecond: 2000 }, windowMs: 1000, windowCount: 2 } },
      },
    });
    const greedy = await RawKafkaClient.connect(running.server.port);
    let throttleMs = 0;
    while (throttleMs === 0)
      throttleMs = (await greedy.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE, 'greedy'))
        .throttleTimeMs;
    const waiting = greedy.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE, 'greedy');
    await settle();
    expect(greedy.pendingCount, 'muted').toBe(1);
    clock.stepWall(-3_600_000);
    clock.advance(throttleMs);
    await settle();
    expect(greedy.pendingCount, 'answered once the throttle time has passed').toBe(0);
    await waiting;
    await greedy.close();
  });
});

describe('ClientQuotas', () => {
  it("throttles by Kafka's formula, (rate - bound) / bound * window, and forgets usage as the window slides", () => {
    const clock = new ManualClock();
    const quotas = new ClientQuotas(
      { default: { bytesPerSecond: 100 }, windowMs: 1000, windowCount: 2 },
      clock,
    );
    expect(quotas.record('User:a', 'c', 100, 0)).toBe(0);
    // 300 bytes over a 1 s span = 300/s, twice the bound over: 2 * 2000 ms, capped at the 2000 ms window.
    expect(quotas.record('User:a', 'c', 200, 0)).toBe(2000);
    clock.advance(5000);
    expect(quotas.record('User:a', 'c', 50, 0)).toBe(0);
  });

  it('takes the principal quota over the client id one over the default, and counts request time', () => {
    const clock = new ManualClock();
    const quotas = new ClientQuotas(
      {
        default: { bytesPerSecond: 10 },
        clientIds: { batch: { bytesPerSecond: 1000 } },
        principals: { 'User:ops': { requestPercentage: 10 } },
      },
      clock,
    );
    expect(quotas.record('User:x', 'batch', 500, 0)).toBe(0);
    expect(quotas.record('User:x', 'other', 500, 0)).toBeGreaterThan(0);
    expect(quotas.record('User:ops', 'other', 10_000, 50)).toBe(0); // 50 ms over a 10 s span = 0.5% of a thread
    expect(quotas.record('User:ops', 'other', 0, 2000)).toBeGreaterThan(0); // 2050 ms over 10 s = 20.5% > 10%
  });

  it('counts a quota against whom it names: a principal changing client id at every request is throttled like one keeping its own', () => {
    const quotas = new ClientQuotas(
      {
        default: { bytesPerSecond: 100 },
        clientIds: { batch: { bytesPerSecond: 100 } },
        principals: { 'User:alice': { bytesPerSecond: 100 } },
      },
      new ManualClock(),
    );
    const throttledAt = (principal: string, clientId: (n: number) => string) => {
      for (let n = 1; n <= 100; n++)
        if (quotas.record(principal, clientId(n), 100, 0) > 0) return n;
      return undefined;
    };
    // 100 bytes/s over an 11 s window: the 11th request of 100 bytes is over it, whatever its id.
    expect(throttledAt('User:alice', (n) => `alice-${n}`)).toBe(11);
    expect(throttledAt('User:bob', (n) => `bob-${n}`)).toBe(11); // the default, per principal
    expect(throttledAt('User:carol', () => 'batch')).toBe(11);
    expect(throttledAt('User:dave', () => 'batch')).toBe(1); // the client id's quota is shared
    // Anonymous clients are told apart by their client id alone.
    expect(throttledAt('User:ANONYMOUS', () => 'one')).toBe(11);
    expect(throttledAt('User:ANONYMOUS', () => 'two')).toBe(11);
  });

  it('gives a client id or principal named like an inherited property (constructor, __proto__, toString) the default quota', () => {
    const quotas = new ClientQuotas(
      {
        default: { bytesPerSecond: 10 },
        clientIds: { batch: { bytesPerSecond: 1000 } },
        principals: { 'User:ops': { bytesPerSecond: 1000 } },
      },
      new ManualClock(),
    );
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty'])
      expect(quotas.record(name, name, 500, 0), name).toBeGreaterThan(0);
  });
});
