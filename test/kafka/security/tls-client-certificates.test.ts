/**
 * An SSL listener that requires client certificates: a client with a certificate signed by the
 * listener's CA is `User:<subject, RFC 2253>` (as Kafka's default principal builder names it) and
 * ACLs on that principal apply; a certificate from another CA, or none, fails the TLS handshake.
 * A CA, certificate or key that TLS cannot use is refused at start, naming the option.
 */
import { X509Certificate } from 'node:crypto';
import * as tls from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { NodeFileSystem } from '../../../src/io/index.js';
import { API_KEYS, KAFKA_ERROR } from '../../../src/kafka/protocol/index.js';
import { OffsetStore, startKafkaServer } from '../../../src/index.js';
import { AclSet, certificatePrincipal } from '../../../src/kafka/security/index.js';
import { tempDir } from '../../support/temp-dir.js';
import { RawKafkaClient } from '../support/raw-kafka-client.js';
import { startTestServer, type TestServer } from '../support/server-fixture.js';
import { certificateWithSubject, testCertificates } from '../support/test-certificates.js';

const ALICE = 'User:CN=alice,OU=readers,O=offset-store-test';

/** The content octets of the OID of CN (2.5.4.3). */
const CN = [0x55, 0x04, 0x03];

/** A DER element (short or long length form) of `tag` around `content`. */
function der(tag: number, content: number[]): number[] {
  const n = content.length;
  const length: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) length.unshift(rest % 256);
  return [tag, ...(n < 0x80 ? [n] : [0x80 | length.length, ...length]), ...content];
}

/** The DER of a certificate-shaped structure around `subject`: only its place is read. */
function certificateDer(subject: number[]) {
  const name = der(0x30, []);
  const tbs = der(0x30, [
    ...der(0xa0, der(0x02, [2])), // version
    ...der(0x02, [1]), // serial number
    ...der(0x30, der(0x06, [0x2a, 0x03])), // signature algorithm
    ...name, // issuer
    ...der(0x30, []), // validity
    ...subject,
  ]);
  return Buffer.from(der(0x30, tbs));
}
let running: TestServer | undefined;
const sockets: tls.TLSSocket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await running?.close();
  running = undefined;
});

function connect(port: number, identity: { cert?: string; key?: string }): Promise<tls.TLSSocket> {
  const certs = testCertificates();
  const socket = tls.connect({
    host: '127.0.0.1',
    port,
    ca: certs.caCert,
    servername: 'localhost',
    ...identity,
  });
  sockets.push(socket);
  return new Promise((resolve, reject) => {
    socket.once('secureConnect', () => resolve(socket));
    socket.once('error', reject);
  });
}

describe('client certificates', () => {
  it('name the principal by the subject, and the ACLs on it apply', async () => {
    const certs = testCertificates();
    const dir = tempDir();
    await AclSet.add(new NodeFileSystem(), dir, [
      {
        principal: ALICE,
        host: '*',
        operation: 'Describe',
        permission: 'ALLOW',
        resourceType: 'Group',
        patternType: 'LITERAL',
        name: 'alices',
      },
    ]);
    running = await startTestServer({
      dir,
      server: {
        listeners: [
          {
            securityProtocol: 'SSL',
            tls: {
              cert: certs.serverCert,
              key: certs.serverKey,
              ca: certs.caCert,
              requireClientCertificate: true,
            },
          },
        ],
        security: { authorizer: {} },
      },
    });
    const client = RawKafkaClient.over(
      await connect(running.server.port, { cert: certs.clientCert, key: certs.clientKey }),
    );
    const described = await client.send(API_KEYS.DescribeGroups, 5, {
      groups: ['alices', 'bobs'],
      includeAuthorizedOperations: false,
    });
    expect(described.groups.map((g) => g.errorCode)).toEqual([
      0,
      KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED,
    ]);
    // The same attributes in another structure (CN and OU in one RDN) are another subject: not
    // alice, so not her ACL.
    const lookalike = RawKafkaClient.over(
      await connect(running.server.port, { cert: certs.lookalikeCert, key: certs.lookalikeKey }),
    );
    const toLookalike = await lookalike.send(API_KEYS.DescribeGroups, 5, {
      groups: ['alices'],
      includeAuthorizedOperations: false,
    });
    expect(toLookalike.groups.map((g) => g.errorCode)).toEqual([
      KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED,
    ]);
    await lookalike.close();

    // A certificate of another CA, and none at all, do not get through the handshake (or are cut right after it).
    for (const identity of [{ cert: certs.strangerCert, key: certs.strangerKey }, {}]) {
      const refused = await connect(running.server.port, identity).then(
        (socket) =>
          new Promise<boolean>((resolve) => {
            socket.once('close', () => resolve(true));
            socket.once('error', () => resolve(true));
            socket.write(Buffer.alloc(4));
          }),
        () => true,
      );
      expect(refused).toBe(true);
    }
    expect(running.server.connectionCount).toBe(1);
  });

  it('are verified against a tls.ca holding certificates that parse: one without is refused at start, naming the option (TLS ignored it, and every client certificate went unverified)', async () => {
    const certs = testCertificates();
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 1 });
    const damaged = certs.caCert.replace(/^(-----BEGIN CERTIFICATE-----\n)..../m, '$1AAAA');
    for (const [ca, message] of [
      ['not a certificate', /options.listeners\[0\].tls.ca holds no PEM certificate/],
      [Buffer.from(certs.clientKey), /options.listeners\[0\].tls.ca holds no PEM certificate/],
      [`${certs.caCert}${damaged}`, /options.listeners\[0\].tls.ca certificate 2 does not parse/],
      // `cat a.pem b.pem` of a file without its final newline: TLS reads the first one only.
      [
        `${certs.caCert.trimEnd()}${certs.clientCert}`,
        /tls.ca has a BEGIN line that does not start its line/,
      ],
      [`ca: ${certs.caCert}`, /tls.ca has a BEGIN line that does not start its line/],
    ] as const) {
      const server = startKafkaServer({
        store,
        listeners: [
          {
            securityProtocol: 'SSL',
            tls: { cert: certs.serverCert, key: certs.serverKey, ca },
          },
        ],
      });
      await expect(server).rejects.toThrow(RangeError);
      await expect(server).rejects.toThrow(message);
      await server.then((s) => s.close()).catch(() => {});
    }
    await store.close();
  });

  it('write the subject most specific first as RFC 2253 does, telling apart subjects that differ only in order or in a multi-valued RDN, exactly as Java does (attributes other than its keywords were written by OpenSSL name, e.g. emailAddress=..., not as <OID>=#<DER hex>)', () => {
    // Subjects in `openssl req -subj` form (most general first), and what Kafka's principal builder
    // (Java's X500Principal.getName()) makes of the certificates openssl makes of them.
    const cases: [string, string][] = [
      ['/C=US/O=Acme\\, Inc./CN=host-1', 'CN=host-1,O=Acme\\, Inc.,C=US'],
      ['/O=acme/OU=eng/CN=alice', 'CN=alice,OU=eng,O=acme'],
      ['/O=acme/OU=eng+CN=alice', 'OU=eng+CN=alice,O=acme'],
      ['/OU=a/OU=b/CN=x', 'CN=x,OU=b,OU=a'],
      ['/OU=a/CN=x/OU=b', 'OU=b,CN=x,OU=a'],
      [
        '/O=acme/CN=alice/emailAddress=alice@example.com',
        '1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d,CN=alice,O=acme',
      ],
      [
        '/DC=com/DC=example/UID=u1/CN=a=b#c; d<e>"f\\\\g\\+h/serialNumber=42/title=Boss/street=Main St',
        'STREET=Main St,2.5.4.12=#0c04426f7373,2.5.4.5=#13023432,CN=a\\=b\\#c\\; d\\<e\\>\\"f\\\\g\\+h,UID=u1,DC=example,DC=com',
      ],
      [
        '/CN= spaced /ST=ZH/OU=a+emailAddress=x@y',
        'OU=a+1.2.840.113549.1.9.1=#1603784079,ST=ZH,CN=\\ spaced\\ ',
      ],
    ];
    for (const [subject, expected] of cases)
      expect(
        certificatePrincipal(new X509Certificate(certificateWithSubject(subject))),
        subject,
      ).toBe(`User:${expected}`);
    expect(certificatePrincipal(undefined)).toBeUndefined();
    expect(certificatePrincipal({ raw: Buffer.from('not a certificate') })).toBeUndefined();
  });

  it("reads every string type's bytes as UTF-8, keeps the keyword of a value of another type and reads BER's indefinite lengths, as Java does; an empty subject is User: with an empty name", () => {
    // What Java's X500Principal.getName() writes for certificates whose subject holds these
    // attributes (CN unless said), each value given as its DER (tag, bytes).
    const cases: [oid: number[], tag: number, bytes: number[], java: string][] = [
      [CN, 0x13, [0x61, 0x6c, 0xc3, 0xa9], 'CN=al\u00e9'], // PrintableString holding UTF-8
      [CN, 0x14, [0x61, 0x6c, 0xe9, 0x63, 0x65], 'CN=al\ufffdce'], // T61String in Latin-1
      [CN, 0x14, [0x61, 0x6c, 0xc3, 0xa9], 'CN=al\u00e9'], // T61String holding UTF-8
      [CN, 0x1e, [0, 0x61, 0, 0x6c, 0, 0x69], 'CN=\\00a\\00l\\00i'], // BMPString
      [CN, 0x12, [0x31, 0x32, 0x33], 'CN=#1203313233'], // NumericString: not one of Java's strings
      [CN, 0x30, [0x0c, 0x01, 0x61], 'CN=#30030c0161'], // a constructed value
      [
        [0x2a, 0x03, 0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
        0x0c,
        [0x76],
        '1.2.3.18446744073709551617=#0c0176',
      ],
      [
        [0x2a, 0x03, 0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
        0x0c,
        [0x76],
        '1.2.3.18446744073709551616=#0c0176',
      ],
    ];
    for (const [oid, tag, bytes, java] of cases) {
      const attribute = der(0x30, [...der(0x06, oid), ...der(tag, bytes)]);
      const subject = der(0x30, der(0x31, attribute));
      expect(certificatePrincipal({ raw: certificateDer(subject) }), java).toBe(`User:${java}`);
    }
    expect(certificatePrincipal({ raw: certificateDer(der(0x30, [])) })).toBe('User:');
    // BER's indefinite lengths in the Name (OpenSSL accepts them, Java reads them): CN=bob, not
    // anonymous; nested past any Name's depth, or never ended, they are refused (undefined).
    const bob = der(0x30, [...der(0x06, CN), ...der(0x0c, [0x62, 0x6f, 0x62])]);
    const indefinite = (tag: number, content: number[]) => [tag, 0x80, ...content, 0, 0];
    expect(
      certificatePrincipal({
        raw: certificateDer(indefinite(0x30, indefinite(0x31, indefinite(0x30, bob.slice(2))))),
      }),
    ).toBe('User:CN=bob');
    // 50,000 levels: read by recursion without a bound, they would overflow the stack.
    const levels = 50_000;
    const deep = [
      ...Array.from({ length: levels }, () => [0x30, 0x80]).flat(),
      ...der(0x31, bob),
      ...Array.from({ length: 2 * levels }, () => 0),
    ];
    expect(certificatePrincipal({ raw: certificateDer(deep) })).toBeUndefined();
    expect(
      certificatePrincipal({ raw: certificateDer([0x30, 0x80, ...der(0x31, bob)]) }),
    ).toBeUndefined();
  });
});

describe("a TLS listener's certificate and key", () => {
  it('refuses an empty or unusable certificate or key at start, naming the listener and the option (empty ones started a server failing every handshake; others were a bare OpenSSL Error)', async () => {
    const certs = testCertificates();
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 1 });
    const good = { cert: certs.serverCert, key: certs.serverKey };
    try {
      for (const [material, error, message] of [
        [{ cert: '', key: '' }, RangeError, /options.listeners\[0\].tls.cert must not be empty/],
        [
          { ...good, key: Buffer.alloc(0) },
          RangeError,
          /options.listeners\[0\].tls.key must not be empty/,
        ],
        [
          { ...good, cert: 42 },
          TypeError,
          /options.listeners\[0\].tls.cert must be a string or a Buffer/,
        ],
        [
          { cert: 'not a cert', key: 'not a key' },
          RangeError,
          /options.listeners\[0\].tls.cert is not a usable PEM certificate: .*no start line/,
        ],
        [
          { ...good, key: certs.serverCert },
          RangeError,
          /options.listeners\[0\].tls.key is not a usable PEM private key/,
        ],
        [
          { ...good, key: certs.clientKey },
          RangeError,
          /options.listeners\[0\].tls.key is not the key of tls.cert: .*key values mismatch/,
        ],
      ] as const) {
        const server = startKafkaServer({
          store,
          listeners: [{ securityProtocol: 'SSL', tls: material as never }],
        });
        await expect(server).rejects.toThrow(error);
        await expect(server).rejects.toThrow(message);
        await server.then((s) => s.close()).catch(() => {});
      }
    } finally {
      await store.close();
    }
  });
});
