/**
 * Hostile clients against a SASL listener:
 * - before authenticating, a request of every advertised API other than ApiVersions and the SASL
 *   ones closes the connection unanswered, and the store is untouched (its log bytes and groups
 *   are what they were); so does a frame over 512 KiB, at its length prefix;
 * - 10,000 failed logins in a loop are throttled: failures are held on the server's clock, at most
 *   `authenticationsPerAddressMax` are in progress per address and the rest are refused before any
 *   password is checked, while an authenticated client keeps being served; once the attacker stops,
 *   the user logs in;
 * - a slow-loris client holding connections open (TCP and TLS, never finishing) hits the
 *   per-address connection limit, not the server's, and its connections are freed when it goes;
 *   TLS handshakes not over count against connectionsMax, and one that fails frees its place.
 */
import * as net from 'node:net';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, SystemClock } from '../../../src/index.js';
import { NodeFileSystem } from '../../../src/io/index.js';
import {
  API_KEYS,
  KAFKA_ERROR,
  advertisedApis,
  encodeRequest,
  type ApiKey,
} from '../../../src/kafka/protocol/index.js';
import { USERS_FILE, UserCredentials, scramVerifier } from '../../../src/kafka/security/index.js';
import { writeSecurityFile } from '../../../src/kafka/security/security-file.js';
import { addressGroup } from '../../../src/kafka/security/client-address.js';
import { tempDir } from '../../support/temp-dir.js';
import { RawKafkaClient, TEST_SOFTWARE } from '../support/raw-kafka-client.js';
import { loginPlain, loginScram } from '../support/sasl-login.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';
import { testCertificates } from '../support/test-certificates.js';

let running: TestServer | undefined;
const sockets: net.Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await running?.close();
  running = undefined;
});

async function start(
  security: Record<string, number> = {},
  clock: ManualClock | SystemClock = new ManualClock(),
  server: { connectionsMax?: number } = {},
): Promise<TestServer> {
  const dir = tempDir();
  await UserCredentials.addUser(new NodeFileSystem(), dir, 'alice', 'alice-pw');
  const certs = testCertificates();
  running = await startTestServer({
    dir,
    clock,
    server: {
      topics: [{ name: 'orders', partitions: 1 }],
      listeners: [
        {
          securityProtocol: 'SASL_PLAINTEXT',
          saslMechanisms: ['PLAIN', 'SCRAM-SHA-256'],
          allowPlainWithoutTls: true,
        },
        { securityProtocol: 'SASL_SSL', tls: { cert: certs.serverCert, key: certs.serverKey } },
        { securityProtocol: 'PLAINTEXT' },
      ],
      security,
      ...server,
    },
  });
  return running;
}

/** Waits (on real time: the sockets are real) until `condition` holds, at most 10 s. */
async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited > 10_000) throw new TypeError('condition not met within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The APIs a SASL listener serves only once a client has logged in: all but ApiVersions and SASL's. */
function apisBehindLogin() {
  const open: number[] = [API_KEYS.ApiVersions, API_KEYS.SaslHandshake, API_KEYS.SaslAuthenticate];
  return advertisedApis().filter((api) => !open.includes(api.apiKey));
}

async function logBytes(t: TestServer): Promise<number> {
  return (await t.store.stats()).buckets.reduce((sum, b) => sum + b.logBytes, 0);
}

describe('a PLAIN login with an authorization id', () => {
  it('is refused when the id names another user (as Kafka refuses it), with the right password; accepted when it is the user', async () => {
    const t = await start({}, new SystemClock()); // a refused login is answered after a delay
    const login = async (authzid: string) => {
      const client = await RawKafkaClient.connect(t.server.port);
      sockets.push(client.socket);
      return loginPlain(client, 'alice', 'alice-pw', authzid);
    };
    expect(await login('bob')).toBe(KAFKA_ERROR.SASL_AUTHENTICATION_FAILED);
    expect(await login('alice')).toBe(0);
  });
});

describe('a PLAIN login with an empty password', () => {
  it('is refused before any password is checked, even for a users file that holds a verifier of the empty password', async () => {
    const dir = tempDir();
    // Written by hand or other tooling: `users add` refuses an empty password.
    const verifier = await scramVerifier('SCRAM-SHA-256', '');
    await writeSecurityFile(new NodeFileSystem(), path.join(dir, USERS_FILE), 'users', [
      {
        name: 'alice',
        scram: {
          'SCRAM-SHA-256': {
            salt: verifier.salt.toString('base64'),
            iterations: verifier.iterations,
            storedKey: verifier.storedKey.toString('base64'),
            serverKey: verifier.serverKey.toString('base64'),
          },
        },
      },
    ]);
    running = await startTestServer({
      dir,
      clock: new SystemClock(), // a refused login is answered after a delay on the server's clock
      server: {
        listeners: [
          {
            securityProtocol: 'SASL_PLAINTEXT',
            saslMechanisms: ['PLAIN'],
            allowPlainWithoutTls: true,
          },
        ],
      },
    });
    const client = await RawKafkaClient.connect(running.server.port);
    sockets.push(client.socket);
    expect(await loginPlain(client, 'alice', '')).toBe(KAFKA_ERROR.SASL_AUTHENTICATION_FAILED);
  });
});

describe('unauthenticated requests', () => {
  it('close the connection for every API key but ApiVersions and SASL, and touch nothing', async () => {
    const t = await start();
    await t.store.commitOffsets('existing', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    const bytesBefore = await logBytes(t);
    const refused: number[] = [];
    for (const api of apisBehindLogin()) {
      for (const version of new Set([api.minVersion, api.maxVersion])) {
        const client = await RawKafkaClient.connect(t.server.port);
        // A body of every field's default: a well-formed request, e.g. an OffsetCommit of no partitions, or a DeleteGroups.
        const body = api.apiKey === API_KEYS.DeleteGroups ? { groupsNames: ['existing'] } : {};
        client.write(
          encodeRequest(
            {
              apiKey: api.apiKey as ApiKey,
              apiVersion: version,
              correlationId: 7,
              clientId: 'intruder',
            },
            body as never,
          ),
        );
        await client.closed;
        expect(client.arrivals, `API ${api.apiKey} v${version} was answered`).toEqual([]);
        refused.push(api.apiKey);
      }
    }
    expect(new Set(refused).size).toBe(apisBehindLogin().length);
    expect(await logBytes(t)).toBe(bytesBefore);
    expect((await t.store.listGroups()).map((g) => g.groupId)).toEqual(['existing']);
    expect(t.server.stats().topics).toBe(1);
  });

  it('close the connection, unanswered, for every API key sent in the middle of a login (after the handshake, and after a SCRAM client-first): a request there would run as no one', async () => {
    const t = await start();
    await t.store.commitOffsets('existing', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    const bytesBefore = await logBytes(t);
    for (const midScram of [false, true]) {
      for (const api of apisBehindLogin()) {
        const client = await RawKafkaClient.connect(t.server.port);
        sockets.push(client.socket);
        const handshake = await client.send(API_KEYS.SaslHandshake, 1, {
          mechanism: 'SCRAM-SHA-256',
        });
        expect(handshake.errorCode).toBe(0);
        if (midScram) {
          const first = await client.send(API_KEYS.SaslAuthenticate, 2, {
            authBytes: Buffer.from('n,,n=alice,r=abcdef'),
          });
          expect(first.errorCode).toBe(0);
        }
        const answered = client.arrivals.length;
        const body = api.apiKey === API_KEYS.DeleteGroups ? { groupsNames: ['existing'] } : {};
        client.write(
          encodeRequest(
            {
              apiKey: api.apiKey as ApiKey,
              apiVersion: api.maxVersion,
              correlationId: 7,
              clientId: 'intruder',
            },
            body as never,
          ),
        );
        await client.closed;
        expect(
          client.arrivals.length,
          `API ${api.apiKey} was answered${midScram ? ' after a client-first' : ' after the handshake'}`,
        ).toBe(answered);
      }
    }
    expect(await logBytes(t)).toBe(bytesBefore);
    expect((await t.store.listGroups()).map((g) => g.groupId)).toEqual(['existing']);
  });

  it('on a listener without SASL, SaslHandshake and SaslAuthenticate are ILLEGAL_SASL_STATE, as on Kafka', async () => {
    running = await startTestServer();
    const client = await RawKafkaClient.connect(running.server.port);
    expect((await client.send(API_KEYS.SaslHandshake, 1, { mechanism: 'PLAIN' })).errorCode).toBe(
      34,
    );
    expect(
      (await client.send(API_KEYS.SaslAuthenticate, 2, { authBytes: Buffer.from('\0a\0b') }))
        .errorCode,
    ).toBe(34);
    client.close();
  });

  it('answer ApiVersions, and close after a SaslAuthenticate out of turn or an unknown mechanism', async () => {
    const t = await start();
    const client = await RawKafkaClient.connect(t.server.port);
    expect((await client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
    expect(
      (await client.send(API_KEYS.SaslHandshake, 1, { mechanism: 'GSSAPI' })).mechanisms,
    ).toEqual(['PLAIN', 'SCRAM-SHA-256']);
    await client.closed;
    const early = await RawKafkaClient.connect(t.server.port);
    early.write(
      encodeRequest(
        { apiKey: API_KEYS.SaslAuthenticate, apiVersion: 2, correlationId: 1, clientId: 'x' },
        { authBytes: Buffer.from('\0alice\0alice-pw') },
      ),
    );
    await early.closed;
    expect(early.arrivals).toEqual([]);
  });

  it('close at the length prefix of a frame over 512 KiB, before any of it is buffered; once authenticated the server maximum applies', async () => {
    const t = await start();
    const big = 512 * 1024 + 1;
    const intruder = await RawKafkaClient.connect(t.server.port);
    const prefix = Buffer.alloc(4);
    prefix.writeInt32BE(big);
    intruder.write(prefix);
    intruder.write(Buffer.alloc(64 * 1024));
    await intruder.closed;
    expect(intruder.arrivals).toEqual([]);
    // After SaslHandshake, still unauthenticated.
    const halfway = await RawKafkaClient.connect(t.server.port);
    expect((await halfway.send(API_KEYS.SaslHandshake, 1, { mechanism: 'PLAIN' })).errorCode).toBe(
      0,
    );
    halfway.write(prefix);
    await halfway.closed;
    // Authenticated: a commit request of more than 512 KiB (metadata in many partitions) is served.
    const alice = await RawKafkaClient.connect(t.server.port);
    expect(await loginPlain(alice, 'alice', 'alice-pw')).toBe(0);
    const response = await alice.send(API_KEYS.OffsetCommit, 8, {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [
        {
          name: 'orders',
          partitions: Array.from({ length: 200 }, () => ({
            partitionIndex: 0,
            committedOffset: 1n,
            committedLeaderEpoch: -1,
            committedMetadata: 'm'.repeat(4000),
          })),
        },
      ],
    });
    expect(response.topics[0]!.partitions[0]!.errorCode).toBe(0);
    await alice.close();
  });
});

describe('failed logins', () => {
  it('10,000 in a loop are throttled per address while the server keeps serving an authenticated client', async () => {
    const clock = new ManualClock();
    const t = await start(
      {
        authenticationsPerAddressMax: 16,
        connectionsPerAddressMax: 1000,
        authFailureDelayMs: 100,
        authFailureDelayMsMax: 5000,
      },
      clock,
    );
    const user = await RawKafkaClient.connect(t.server.port);
    expect(await loginScram(user, 'SCRAM-SHA-256', 'alice', 'alice-pw')).toBe(0);
    const handshake = encodeRequest(
      { apiKey: API_KEYS.SaslHandshake, apiVersion: 1, correlationId: 1, clientId: 'x' },
      { mechanism: 'PLAIN' },
    );
    const guess = (i: number) =>
      encodeRequest(
        { apiKey: API_KEYS.SaslAuthenticate, apiVersion: 2, correlationId: 2, clientId: 'x' },
        { authBytes: Buffer.from(`\0alice\0guess-${i}`) },
      );
    const attempt = (i: number) =>
      new Promise<void>((resolve) => {
        const socket = net.connect({ host: '127.0.0.1', port: t.server.port }, () =>
          socket.write(Buffer.concat([handshake, guess(i)])),
        );
        sockets.push(socket);
        socket.on('error', () => {});
        // Refused attempts are closed unanswered; the ones let through get their SaslHandshake answer,
        // and then the answer to their guess waits on the server's clock.
        socket.once('data', () => resolve());
        socket.once('close', () => resolve());
      });
    const ATTEMPTS = 10_000;
    const BATCH = 100;
    let served = 0;
    for (let i = 0; i < ATTEMPTS; i += BATCH) {
      await Promise.all(Array.from({ length: BATCH }, (_, j) => attempt(i + j)));
      if (i % 2000 === 0) {
        const fetched = await user.send(API_KEYS.OffsetFetch, 8, {
          groups: [{ groupId: 'g', topics: null }],
          requireStable: false,
        });
        expect(fetched.groups[0]!.errorCode).toBe(0);
        served++;
      }
      for (const s of sockets.splice(0))
        if (s.destroyed) continue;
        else sockets.push(s);
    }
    expect(served).toBe(5);
    const stats = t.server.stats().security;
    expect(stats.failedAuthentications, 'passwords checked').toBeLessThanOrEqual(16);
    expect(stats.refusedAuthentications + stats.failedAuthentications).toBeGreaterThanOrEqual(
      ATTEMPTS - 16,
    );
    for (const s of sockets.splice(0)) s.destroy();
    clock.advance(10_000);
    const later = await RawKafkaClient.connect(t.server.port);
    expect(await loginPlain(later, 'alice', 'alice-pw')).toBe(0);
    await later.close();
    await user.close();
  });

  it('doubles the delay of each failure of an address, up to the maximum', async () => {
    const clock = new ManualClock();
    const t = await start({ authFailureDelayMs: 100, authFailureDelayMsMax: 300 }, clock);
    const expected = [100, 200, 300, 300];
    for (let i = 0; i < expected.length; i++) {
      const client = await RawKafkaClient.connect(t.server.port);
      let answered = false;
      const outcome = loginPlain(client, 'alice', 'wrong').then((code) => {
        answered = true;
        return code;
      });
      // The failure is recorded (and its timer armed) once PBKDF2 has checked the password.
      while (t.server.stats().security.failedAuthentications === i)
        await new Promise((resolve) => setTimeout(resolve, 2));
      clock.advance(expected[i]! - 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(answered, `failure ${i + 1} answered before ${expected[i]} ms`).toBe(false);
      clock.advance(1);
      expect(await outcome).toBe(58);
      await client.closed;
    }
  });

  it('hanging up right after a wrong password keeps the slot held until the failure delay ends', async () => {
    const clock = new ManualClock();
    const t = await start(
      { authenticationsPerAddressMax: 2, authFailureDelayMs: 1000, authFailureDelayMsMax: 1000 },
      clock,
    );
    const guessAndHangUp = async (i: number) => {
      const client = await RawKafkaClient.connect(t.server.port);
      void loginPlain(client, 'alice', `guess-${i}`).catch(() => {});
      while (t.server.stats().security.failedAuthentications === i)
        await new Promise((resolve) => setTimeout(resolve, 2));
      await client.close();
    };
    await guessAndHangUp(0);
    await guessAndHangUp(1);
    // Both slots of the address are still held: the next handshake is refused unanswered.
    const third = await RawKafkaClient.connect(t.server.port);
    third.write(
      encodeRequest(
        { apiKey: API_KEYS.SaslHandshake, apiVersion: 1, correlationId: 1, clientId: 'x' },
        { mechanism: 'PLAIN' },
      ),
    );
    const closed = await Promise.race([
      third.closed.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 2000)),
    ]);
    expect(closed, 'the third handshake closes the connection').toBe(true);
    expect(third.arrivals).toEqual([]);
    expect(t.server.stats().security.refusedAuthentications).toBe(1);
    clock.advance(1000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const user = await RawKafkaClient.connect(t.server.port);
    expect(await loginPlain(user, 'alice', 'alice-pw')).toBe(0);
    await user.close();
  });
});

describe('slow-loris', () => {
  it('counts a TLS connection against connectionsMax from its TCP connection, before its handshake ends, and frees it when the handshake fails (one was counted only once its handshake had finished)', async () => {
    const t = await start({}, new ManualClock(), { connectionsMax: 3 });
    const tlsPort = t.server.listeners.find((l) => l.name === 'SASL_SSL')!.port;
    const plainPort = t.server.listeners.find((l) => l.name === 'PLAINTEXT')!.port;
    const closedByServer = new Set<net.Socket>();
    const opened = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<net.Socket>((resolve) => {
            const socket = net.connect({ host: '127.0.0.1', port: tlsPort }, () => resolve(socket));
            socket.on('error', () => {});
            socket.once('close', () => closedByServer.add(socket));
            sockets.push(socket);
          }),
      ),
    );
    // Three handshakes not begun hold every place: the fourth connection is closed, and so is
    // one to another listener.
    await until(() => closedByServer.size === 1);
    expect(t.server.stats().refusedConnections).toBe(1);
    const pending = opened.filter((socket) => !closedByServer.has(socket));
    const refused = await RawKafkaClient.connect(plainPort);
    await refused.closed;
    expect(t.server.stats().refusedConnections).toBe(2);
    // A failed handshake frees its place.
    pending[0]!.write('not a TLS client hello\n');
    await until(() => closedByServer.has(pending[0]!));
    const client = await RawKafkaClient.connect(plainPort);
    expect((await client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
    await client.close();
  });

  it('closes at once with a TLS connection whose handshake never began (close waited for the 10 s handshake timeout)', async () => {
    const t = await start({});
    const tlsPort = t.server.listeners.find((l) => l.name === 'SASL_SSL')!.port;
    const silent = await new Promise<net.Socket>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port: tlsPort }, () => resolve(socket));
      socket.on('error', () => {});
      sockets.push(socket);
    });
    const closed = new Promise<void>((resolve) => silent.once('close', () => resolve()));
    const closing = t.server.close();
    // The handshake timeout is 10 s; a close that waited for it would miss this bound by far.
    const outcome = await Promise.race([
      closing.then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('still closing'), 5000)),
    ]);
    expect(outcome).toBe('closed');
    await closed;
  });

  it('hits the per-address connection limit, not the server, and frees it when it goes', async () => {
    const t = await start({ connectionsPerAddressMax: 10 });
    const port = t.server.listeners.find((l) => l.name === 'SASL_SSL')!.port;
    const plainPort = t.server.listeners.find((l) => l.name === 'PLAINTEXT')!.port;
    const open = (p: number) =>
      new Promise<net.Socket>((resolve) => {
        const socket = net.connect({ host: '127.0.0.1', port: p }, () => resolve(socket));
        socket.on('error', () => {});
        sockets.push(socket);
      });
    const closedByServer = new Set<net.Socket>();
    const loris = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const socket = await open(i % 2 === 0 ? port : t.server.port);
        socket.once('close', () => closedByServer.add(socket));
        return socket;
      }),
    );
    await until(() => closedByServer.size === 40);
    expect(t.server.stats().security.refusedConnectionsPerAddress).toBe(40);
    // Said once (at most once a minute), not per refusal: their clients see only closed connections.
    expect(t.warnings.filter((w) => /per-address limit/.test(w))).toEqual([
      expect.stringMatching(
        /^refused a connection from 127\.0\.0\.1 for the per-address limit \(security\.connectionsPerAddressMax, 10\); 1 refused since the server started/,
      ),
    ]);
    expect(t.server.connectionCount).toBeLessThanOrEqual(10);
    for (const s of loris) s.destroy();
    await until(() => t.server.connectionCount === 0);
    const client = await RawKafkaClient.connect(plainPort);
    expect((await client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
    await client.close();
    // A TLS client that does finish its handshake is served once there is room again.
    const certs = testCertificates();
    const secure = tls.connect({
      host: '127.0.0.1',
      port,
      ca: certs.caCert,
      servername: 'localhost',
    });
    sockets.push(secure);
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', () => resolve());
      secure.once('error', reject);
    });
    const tlsClient = RawKafkaClient.over(secure);
    expect((await tlsClient.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
    expect(await loginScram(tlsClient, 'SCRAM-SHA-512', 'alice', 'alice-pw')).toBe(0);
  });

  it('closes a SASL connection that has not authenticated within authenticationTimeoutMs, however busy with ApiVersions; not one that has', async () => {
    const clock = new ManualClock();
    const t = await start({ authenticationTimeoutMs: 5_000 }, clock);
    const loris = await RawKafkaClient.connect(t.server.port);
    const alice = await RawKafkaClient.connect(t.server.port);
    const anonymous = await RawKafkaClient.connect(
      t.server.listeners.find((l) => l.name === 'PLAINTEXT')!.port,
    );
    expect(await loginPlain(alice, 'alice', 'alice-pw')).toBe(0);
    for (let ms = 0; ms < 4_000; ms += 1_000) {
      expect((await loris.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
      clock.advance(1_000);
    }
    expect(t.server.connectionCount).toBe(3);
    clock.advance(1_000);
    await until(() => t.server.connectionCount === 2);
    await loris.closed;
    for (const client of [alice, anonymous])
      expect((await client.send(API_KEYS.ApiVersions, 3, TEST_SOFTWARE)).errorCode).toBe(0);
    await Promise.all([alice.close(), anonymous.close()]);
  });

  it('counts an IPv6 client per /64 network for the per-address limits, an IPv4 one per address', () => {
    for (const [a, b, same] of [
      ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:fffe', true],
      ['2001:db8:1:2::1', '2001:db8:1:3::1', false],
      ['::1', '::2', true],
      ['fe80::1%eth0', 'fe80::2%eth1', true],
      ['10.0.0.1', '10.0.0.2', false],
    ] as const)
      expect(addressGroup(a) === addressGroup(b), `${a} and ${b}`).toBe(same);
    expect(addressGroup('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('10.0.0.1')).toBe('10.0.0.1');
  });
});
