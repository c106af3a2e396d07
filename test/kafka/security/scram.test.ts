/**
 * SCRAM as RFC 5802 and RFC 7677 define it: the server side of an exchange reproduces RFC 7677's
 * SCRAM-SHA-256 test vector byte for byte; a wrong proof, a changed nonce, and an unknown user all
 * fail the same way, and an unknown user still gets a server-first message (a salt that is stable
 * per name), so the exchange does not say which users exist.
 */
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem } from '../../../src/io/index.js';
import { tempDir } from '../../support/temp-dir.js';
import {
  ScramServerExchange,
  UserCredentials,
  scramPasswordMatches,
  scramVerifier,
  type ScramMechanism,
  type ScramVerifier,
} from '../../../src/kafka/security/index.js';

const RFC7677 = {
  clientFirst: 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO',
  serverNonce: '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
  serverFirst:
    'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
  clientFinal:
    'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverFinal: 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
};

async function rfcVerifier(): Promise<ScramVerifier> {
  return scramVerifier('SCRAM-SHA-256', 'pencil', {
    salt: Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'),
    iterations: 4096,
  });
}

function exchange(
  verifiers: Record<string, ScramVerifier>,
  mechanism: ScramMechanism = 'SCRAM-SHA-256',
  serverNonce?: string,
): ScramServerExchange {
  return new ScramServerExchange({
    mechanism,
    lookup: (user) => verifiers[user],
    decoySecret: Buffer.alloc(32, 7),
    ...(serverNonce === undefined ? {} : { serverNonce }),
  });
}

/** A SCRAM client computing its proof from the password (RFC 5802 section 3). */
function clientFinal(
  mechanism: ScramMechanism,
  password: string,
  clientFirstBare: string,
  serverFirst: string,
  nonce?: string,
  channelBinding = 'biws',
): string {
  const h = mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512';
  const attrs = Object.fromEntries(serverFirst.split(',').map((p) => [p[0], p.slice(2)]));
  const salted = pbkdf2Sync(
    password,
    Buffer.from(attrs.s!, 'base64'),
    Number(attrs.i),
    h === 'sha256' ? 32 : 64,
    h,
  );
  const clientKey = createHmac(h, salted).update('Client Key').digest();
  const storedKey = createHash(h).update(clientKey).digest();
  const withoutProof = `c=${channelBinding},r=${nonce ?? attrs.r}`;
  const signature = createHmac(h, storedKey)
    .update(`${clientFirstBare},${serverFirst},${withoutProof}`)
    .digest();
  const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!));
  return `${withoutProof},p=${proof.toString('base64')}`;
}

describe('SCRAM', () => {
  it("reproduces RFC 7677's SCRAM-SHA-256 test vector", async () => {
    const server = exchange({ user: await rfcVerifier() }, 'SCRAM-SHA-256', RFC7677.serverNonce);
    expect(server.respond(Buffer.from(RFC7677.clientFirst)).toString()).toBe(RFC7677.serverFirst);
    expect(server.respond(Buffer.from(RFC7677.clientFinal)).toString()).toBe(RFC7677.serverFinal);
    expect(server.authenticated).toBe(true);
    expect(server.user).toBe('user');
  });

  it('refuses a wrong proof, a changed nonce and a wrong channel binding with SASL_AUTHENTICATION_FAILED', async () => {
    const verifiers = { user: await rfcVerifier() };
    const wrongProof = RFC7677.clientFinal.replace('p=dHzb', 'p=dHzc');
    const changedNonce = RFC7677.clientFinal.replace('hNlF$k0', 'hNlF$k1');
    const binding = RFC7677.clientFinal.replace('c=biws', 'c=eSws');
    for (const final of [wrongProof, changedNonce, binding]) {
      const server = exchange(verifiers, 'SCRAM-SHA-256', RFC7677.serverNonce);
      server.respond(Buffer.from(RFC7677.clientFirst));
      expect(() => server.respond(Buffer.from(final))).toThrow(
        expect.objectContaining({ code: 'SASL_AUTHENTICATION_FAILED' }),
      );
      expect(server.authenticated).toBe(false);
    }
  });

  it('refuses a client-final whose channel binding is not its own gs2 header, even with a proof made for it (RFC 5802: a downgrade of channel binding)', async () => {
    const verifiers = { user: await rfcVerifier() };
    // gs2 header, and the channel binding the client-final claims (base64 of another header).
    for (const [gs2, binding] of [
      ['n,,', 'eSws'], // 'y,,'
      ['y,,', 'biws'], // 'n,,'
      ['n,,', 'bixhPXVzZXIs'], // 'n,a=user,'
    ] as const) {
      const server = exchange(verifiers);
      const bare = 'n=user,r=abcdef';
      const serverFirst = server.respond(Buffer.from(`${gs2}${bare}`)).toString();
      const final = clientFinal('SCRAM-SHA-256', 'pencil', bare, serverFirst, undefined, binding);
      expect(() => server.respond(Buffer.from(final)), `${gs2} against c=${binding}`).toThrow(
        /channel binding does not match/,
      );
      expect(server.authenticated).toBe(false);
    }
  });

  it("refuses a client-final with a proof made for the nonce cut short, or the client's part alone, and a proof with a byte more", async () => {
    const verifiers = { user: await rfcVerifier() };
    const clientFirstBare = RFC7677.clientFirst.slice(3);
    const serverNonce = RFC7677.serverFirst.split(',')[0]!.slice(2);
    const valid = clientFinal('SCRAM-SHA-256', 'pencil', clientFirstBare, RFC7677.serverFirst);
    const proofAt = valid.lastIndexOf(',p=');
    const longer = Buffer.concat([
      Buffer.from(valid.slice(proofAt + 3), 'base64'),
      Buffer.alloc(1),
    ]);
    const refused = [
      // Each proof is right for what it signs: only the nonce check can refuse the first two.
      clientFinal(
        'SCRAM-SHA-256',
        'pencil',
        clientFirstBare,
        RFC7677.serverFirst,
        serverNonce.slice(0, -1),
      ),
      clientFinal(
        'SCRAM-SHA-256',
        'pencil',
        clientFirstBare,
        RFC7677.serverFirst,
        'rOprNGfwEbeRWgbNEkqO',
      ),
      `${valid.slice(0, proofAt)},p=${longer.toString('base64')}`,
    ];
    for (const final of refused) {
      const server = exchange(verifiers, 'SCRAM-SHA-256', RFC7677.serverNonce);
      server.respond(Buffer.from(RFC7677.clientFirst));
      expect(() => server.respond(Buffer.from(final)), final).toThrow(
        expect.objectContaining({ code: 'SASL_AUTHENTICATION_FAILED' }),
      );
      expect(server.authenticated).toBe(false);
    }
    const server = exchange(verifiers, 'SCRAM-SHA-256', RFC7677.serverNonce);
    server.respond(Buffer.from(RFC7677.clientFirst));
    server.respond(Buffer.from(valid));
    expect(server.authenticated).toBe(true);
  });

  it('answers an unknown user like a known one and fails it only at the proof', async () => {
    const server = exchange({});
    const first = server.respond(Buffer.from('n,,n=nobody,r=abcdef')).toString();
    expect(first).toMatch(/^r=abcdef.+,s=[A-Za-z0-9+/=]+,i=4096$/);
    const again = exchange({}).respond(Buffer.from('n,,n=nobody,r=abcdef')).toString();
    expect(again.split(',')[1]).toBe(first.split(',')[1]); // same salt for the same name: no tell between attempts
    expect(() =>
      server.respond(
        Buffer.from(clientFinal('SCRAM-SHA-256', 'guess', 'n=nobody,r=abcdef', first)),
      ),
    ).toThrow(/invalid credentials/);
  });

  it('gives an unknown user the iterations most users have and a salt that lasts as long as the users file does (across restarts)', async () => {
    const dir = tempDir();
    const fs = new NodeFileSystem();
    await UserCredentials.addUser(fs, dir, 'alice', 'a-pw', { iterations: 8192 });
    await UserCredentials.addUser(fs, dir, 'bob', 'b-pw', { iterations: 8192 });
    await UserCredentials.addUser(fs, dir, 'carol', 'c-pw');
    const serverFirst = (users: UserCredentials, name: string) => {
      const server = new ScramServerExchange({
        mechanism: 'SCRAM-SHA-256',
        lookup: (user, m) => users.verifier(user, m),
        decoySecret: users.decoySecret,
        decoyIterations: users.typicalIterations('SCRAM-SHA-256'),
      });
      const [, salt, iterations] = server
        .respond(Buffer.from(`n,,n=${name},r=abcdef`))
        .toString()
        .split(',');
      return { salt, iterations };
    };
    const before = await UserCredentials.load(fs, dir);
    expect(serverFirst(before, 'alice').iterations).toBe('i=8192');
    expect(serverFirst(before, 'nobody').iterations).toBe('i=8192');
    // Loaded again, as a restarted server does: the known and the unknown keep their salts.
    const restarted = await UserCredentials.load(fs, dir);
    for (const name of ['alice', 'nobody'])
      expect(serverFirst(restarted, name), name).toEqual(serverFirst(before, name));
  });

  it.each(['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const)(
    '%s: a client that knows the password authenticates; one that does not is refused',
    async (mechanism) => {
      const verifiers = { alice: await scramVerifier(mechanism, 'correct horse') };
      for (const [password, ok] of [
        ['correct horse', true],
        ['battery staple', false],
      ] as const) {
        const server = exchange(verifiers, mechanism);
        const first = server.respond(Buffer.from('n,,n=alice,r=nonce123')).toString();
        const final = Buffer.from(clientFinal(mechanism, password, 'n=alice,r=nonce123', first));
        if (ok) expect(server.respond(final).toString()).toMatch(/^v=/);
        else expect(() => server.respond(final)).toThrow(/invalid credentials/);
        expect(server.authenticated).toBe(ok);
      }
    },
  );

  it.each(['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const)(
    '%s: hashes a password as its UTF-8 bytes, as Kafka does (it was NFKC-normalised: a client hashing "secret\\uFF11" was refused, and PLAIN took "secret1")',
    async (mechanism) => {
      const password = 'secret\uFF11'; // FULLWIDTH DIGIT ONE; NFKC makes it "secret1"
      const verifiers = { alice: await scramVerifier(mechanism, password) };
      for (const [candidate, ok] of [
        [password, true],
        ['secret1', false],
      ] as const) {
        const server = exchange(verifiers, mechanism);
        const first = server.respond(Buffer.from('n,,n=alice,r=nonce123')).toString();
        const final = Buffer.from(clientFinal(mechanism, candidate, 'n=alice,r=nonce123', first));
        if (ok) expect(server.respond(final).toString()).toMatch(/^v=/);
        else expect(() => server.respond(final)).toThrow(/invalid credentials/);
        expect(await scramPasswordMatches(mechanism, verifiers.alice, candidate)).toBe(ok);
      }
    },
  );

  it('refuses malformed messages, extensions, channel binding and a foreign authorization id', () => {
    for (const first of [
      '',
      'x',
      'p=tls-unique,,n=a,r=b',
      'n,,n=alice,r=abc,tokenauth=true',
      'n,a=bob,n=alice,r=abc',
      'n,,n=al=ice,r=abc',
      'n,,r=abc',
      'n,,r=abc,n=alice', // RFC 5802's order: the name, then the nonce
    ]) {
      expect(() => exchange({}).respond(Buffer.from(first)), first).toThrow(
        expect.objectContaining({ code: 'SASL_AUTHENTICATION_FAILED' }),
      );
    }
    // The client-final message too: the channel binding, then the nonce.
    const server = exchange({});
    server.respond(Buffer.from(RFC7677.clientFirst));
    const [binding, nonce, proof] = RFC7677.clientFinal.split(',');
    expect(() => server.respond(Buffer.from([nonce, binding, proof].join(',')))).toThrow(
      /SCRAM client-final: malformed/,
    );
  });

  it('checks a PLAIN password against a verifier, and keeps at least 4096 iterations', async () => {
    const verifier = await scramVerifier('SCRAM-SHA-512', 's3cret');
    expect(verifier.iterations).toBe(4096);
    expect(await scramPasswordMatches('SCRAM-SHA-512', verifier, 's3cret')).toBe(true);
    expect(await scramPasswordMatches('SCRAM-SHA-512', verifier, 's3cret ')).toBe(false);
    await expect(scramVerifier('SCRAM-SHA-256', 'x', { iterations: 4095 })).rejects.toThrow(
      RangeError,
    );
  });
});
