/**
 * Real clients authenticate against the server's listeners, unmodified: kafkajs 2.2.4 with SASL
 * PLAIN over TLS and with SCRAM-SHA-256 and SCRAM-SHA-512, @platformatic/kafka 1.35 with SCRAM (it
 * speaks SaslHandshake v1 and SaslAuthenticate v2); a wrong password, an unknown user and a
 * plaintext client on a TLS listener are refused; a PLAINTEXT and a SASL_SSL listener serve side by
 * side, each advertising its own address.
 *
 * The server runs on real time here (a failed login's answer is delayed on the server's clock), with
 * a short failure delay; the store stays on a manual clock.
 */
import { Admin } from '@platformatic/kafka';
import { Kafka, logLevel, type SASLOptions } from 'kafkajs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SystemClock } from '../../../src/index.js';
import { UserCredentials } from '../../../src/kafka/security/index.js';
import { tempDir } from '../../support/temp-dir.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';
import { testCertificates, type TestCertificates } from '../support/test-certificates.js';

let certs: TestCertificates;
let running: TestServer | undefined;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(() => {
  certs = testCertificates();
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  await running?.close();
  expect(running?.warnings ?? []).toEqual([]);
  running = undefined;
});

/** A server with a PLAINTEXT, a SASL_SSL and a SASL_PLAINTEXT listener, and users alice and bob. */
async function start(): Promise<TestServer> {
  const dir = tempDir();
  const { NodeFileSystem } = await import('../../../src/io/index.js');
  const fs = new NodeFileSystem();
  await UserCredentials.addUser(fs, dir, 'alice', 'alice-secret');
  await UserCredentials.addUser(fs, dir, 'bob', 'bob-secret', { mechanisms: ['SCRAM-SHA-512'] });
  running = await startTestServer({
    dir,
    server: {
      clock: new SystemClock(),
      topics: [{ name: 'orders', partitions: 2 }],
      listeners: [
        { securityProtocol: 'PLAINTEXT' },
        { securityProtocol: 'SASL_SSL', tls: { cert: certs.serverCert, key: certs.serverKey } },
        { securityProtocol: 'SASL_PLAINTEXT' },
      ],
      security: { authFailureDelayMs: 5, authFailureDelayMsMax: 20 },
    },
  });
  // The PLAINTEXT listener serves anyone, with no authorizer: deliberate here, and warned of.
  expect(running.warnings).toEqual([
    expect.stringMatching(
      /listener PLAINTEXT \(PLAINTEXT\) serves clients that have not authenticated .* beside SASL listener SASL_SSL, SASL_PLAINTEXT/,
    ),
  ]);
  running.warnings.length = 0;
  return running;
}

function brokerOf(t: TestServer, name: string): string {
  return t.server.listeners.find((l) => l.name === name)!.brokers[0]!;
}

function kafkajsAdmin(broker: string, options: { ssl?: boolean; sasl?: SASLOptions }) {
  const kafka = new Kafka({
    clientId: 'sasl-test',
    brokers: [broker],
    logLevel: logLevel.NOTHING,
    retry: { retries: 2, initialRetryTime: 20 },
    connectionTimeout: 3000,
    authenticationTimeout: 3000,
    ...(options.ssl === true ? { ssl: { ca: [certs.caCert] } } : {}),
    ...(options.sasl === undefined ? {} : { sasl: options.sasl }),
  });
  const admin = kafka.admin();
  closers.push(() => admin.disconnect());
  return admin;
}

describe('SASL and TLS with real clients', () => {
  it('kafkajs: PLAIN over TLS reads offsets', async () => {
    const t = await start();
    await t.store.commitOffsets('tls-readers', [{ tableId: 1, bucketId: 0, offset: 42 }]);
    const admin = kafkajsAdmin(brokerOf(t, 'SASL_SSL'), {
      ssl: true,
      sasl: { mechanism: 'plain', username: 'alice', password: 'alice-secret' },
    });
    await admin.connect();
    const fetched = await admin.fetchOffsets({ groupId: 'tls-readers', topics: ['orders'] });
    expect(fetched[0]!.partitions.find((p) => p.partition === 0)!.offset).toBe('42');
  });

  it.each([
    ['scram-sha-256', 'alice', 'alice-secret'],
    ['scram-sha-512', 'alice', 'alice-secret'],
    ['scram-sha-512', 'bob', 'bob-secret'],
  ] as const)(
    'kafkajs: %s as %s over SASL_PLAINTEXT and SASL_SSL',
    async (mechanism, username, password) => {
      const t = await start();
      for (const [listener, ssl] of [
        ['SASL_PLAINTEXT', false],
        ['SASL_SSL', true],
      ] as const) {
        const admin = kafkajsAdmin(brokerOf(t, listener), {
          ssl,
          sasl: { mechanism, username, password },
        });
        await admin.connect();
        expect((await admin.listGroups()).groups).toEqual([]);
        await admin.disconnect();
      }
    },
  );

  it('@platformatic/kafka: SCRAM-SHA-256 and SCRAM-SHA-512 over TLS commit offsets', async () => {
    const t = await start();
    for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const) {
      const admin = new Admin({
        clientId: 'plt-sasl',
        bootstrapBrokers: [brokerOf(t, 'SASL_SSL')],
        retries: 0,
        tls: { ca: certs.caCert },
        sasl: { mechanism, username: 'alice', password: 'alice-secret' },
      });
      closers.push(() => admin.close());
      await admin.alterConsumerGroupOffsets({
        groupId: 'plt',
        topics: [{ name: 'orders', partitionOffsets: [{ partition: 1, offset: 7n }] }],
      });
      const groups = await admin.listGroups();
      expect([...groups.keys()]).toEqual(['plt']);
    }
    expect((await t.store.fetchOffsets('plt', [{ tableId: 1, bucketId: 1 }]))[0]?.offset).toBe(7);
  });

  it('refuses a wrong password, an unknown user, and a mechanism the user has no verifier for', async () => {
    const t = await start();
    const attempts: [string, string, SASLOptions['mechanism']][] = [
      ['alice', 'wrong', 'plain'],
      ['alice', 'wrong', 'scram-sha-256'],
      ['nobody', 'x', 'scram-sha-512'],
      ['nobody', 'x', 'plain'],
      ['bob', 'bob-secret', 'scram-sha-256'],
    ];
    for (const [username, password, mechanism] of attempts) {
      const admin = kafkajsAdmin(brokerOf(t, 'SASL_SSL'), {
        ssl: true,
        sasl: { mechanism, username, password } as SASLOptions,
      });
      await expect(admin.connect(), `${username}/${mechanism}`).rejects.toThrow(
        /SASL|authentication|credentials/i,
      );
    }
    expect(t.server.stats().security.failedAuthentications).toBe(attempts.length);
  });

  it('refuses a plaintext client on the TLS listener, and a SASL-less client on a SASL listener', async () => {
    const t = await start();
    await expect(kafkajsAdmin(brokerOf(t, 'SASL_SSL'), {}).connect()).rejects.toThrow();
    await expect(kafkajsAdmin(brokerOf(t, 'SASL_PLAINTEXT'), {}).listGroups()).rejects.toThrow();
    expect(await t.store.listGroups()).toEqual([]);
  });

  it('serves PLAINTEXT beside SASL_SSL, each advertising its own address', async () => {
    const t = await start();
    expect(t.server.listeners.map((l) => [l.name, l.securityProtocol])).toEqual([
      ['PLAINTEXT', 'PLAINTEXT'],
      ['SASL_SSL', 'SASL_SSL'],
      ['SASL_PLAINTEXT', 'SASL_PLAINTEXT'],
    ]);
    expect(t.server.brokers).toEqual([brokerOf(t, 'PLAINTEXT')]);
    const plain = kafkajsAdmin(brokerOf(t, 'PLAINTEXT'), {});
    await plain.connect();
    const secure = kafkajsAdmin(brokerOf(t, 'SASL_SSL'), {
      ssl: true,
      sasl: { mechanism: 'scram-sha-256', username: 'alice', password: 'alice-secret' },
    });
    await secure.connect();
    const portOf = (broker: string) => Number(broker.split(':')[1]);
    expect((await plain.describeCluster()).brokers.map((b) => b.port)).toEqual([
      portOf(brokerOf(t, 'PLAINTEXT')),
    ]);
    expect((await secure.describeCluster()).brokers.map((b) => b.port)).toEqual([
      portOf(brokerOf(t, 'SASL_SSL')),
    ]);
  });
});
