/**
 * TLS material for tests, made with the `openssl` command line at test time (Node cannot create
 * X.509 certificates itself) in a temporary directory, once per test process: a CA, a server
 * certificate for 127.0.0.1 and localhost signed by it, and client certificates (CN=alice, and one
 * from another CA that the server must refuse). EC P-256 keys, so making them takes milliseconds.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileTempDir } from '../../support/temp-dir.js';

/** PEM text of every piece. */
export interface TestCertificates {
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  /** CN=alice,OU=readers,O=offset-store-test, signed by the CA. */
  readonly clientCert: string;
  readonly clientKey: string;
  /**
   * Signed by the CA, with alice's attributes but CN and OU in one multi-valued RDN
   * (`OU=readers+CN=alice,O=offset-store-test`): another subject, so another principal.
   */
  readonly lookalikeCert: string;
  readonly lookalikeKey: string;
  /** CN=mallory, signed by a CA the server does not know. */
  readonly strangerCert: string;
  readonly strangerKey: string;
}

let made: TestCertificates | undefined;

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

function keyPair(dir: string, name: string): void {
  openssl(dir, ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
}

function signed(dir: string, name: string, subject: string, ca: string, extensions: string): void {
  keyPair(dir, name);
  openssl(dir, [
    'req',
    '-new',
    '-key',
    `${name}.key`,
    '-subj',
    subject,
    ...(subject.includes('+') ? ['-multivalue-rdn'] : []),
    '-out',
    `${name}.csr`,
  ]);
  writeFileSync(path.join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '3650',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.crt`,
  ]);
}

function selfSignedCa(dir: string, name: string, subject: string): void {
  keyPair(dir, name);
  openssl(dir, [
    'req',
    '-x509',
    '-new',
    '-key',
    `${name}.key`,
    '-subj',
    subject,
    '-days',
    '3650',
    '-out',
    `${name}.crt`,
  ]);
}

/** True when the `openssl` command is there. */
export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

/** The test certificates (made on the first call). */
export function testCertificates(): TestCertificates {
  if (made !== undefined) return made;
  const dir = fileTempDir('offset-store-tls-');
  selfSignedCa(dir, 'ca', '/CN=offset-store test CA');
  selfSignedCa(dir, 'other-ca', '/CN=someone else');
  signed(
    dir,
    'server',
    '/CN=localhost',
    'ca',
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  signed(
    dir,
    'client',
    '/O=offset-store-test/OU=readers/CN=alice',
    'ca',
    'extendedKeyUsage=clientAuth\n',
  );
  signed(
    dir,
    'lookalike',
    '/O=offset-store-test/CN=alice+OU=readers',
    'ca',
    'extendedKeyUsage=clientAuth\n',
  );
  signed(dir, 'stranger', '/CN=mallory', 'other-ca', 'extendedKeyUsage=clientAuth\n');
  const read = (name: string) => readFileSync(path.join(dir, name), 'utf8');
  made = {
    caCert: read('ca.crt'),
    serverCert: read('server.crt'),
    serverKey: read('server.key'),
    clientCert: read('client.crt'),
    clientKey: read('client.key'),
    lookalikeCert: read('lookalike.crt'),
    lookalikeKey: read('lookalike.key'),
    strangerCert: read('stranger.crt'),
    strangerKey: read('stranger.key'),
  };
  return made;
}

const withSubject = new Map<string, string>();

/**
 * A self-signed certificate (PEM) of `subject`, in `openssl req -subj` form (`/O=acme/CN=alice`,
 * most general first; `+` joins a multi-valued RDN, `\+` is a plus in a value); made once per subject.
 */
export function certificateWithSubject(subject: string): string {
  const known = withSubject.get(subject);
  if (known !== undefined) return known;
  const dir = fileTempDir('offset-store-subject-');
  keyPair(dir, 'subject');
  openssl(dir, [
    'req',
    '-x509',
    '-new',
    '-key',
    'subject.key',
    '-subj',
    subject,
    ...(/(?<!\\)\+/.test(subject) ? ['-multivalue-rdn'] : []),
    '-days',
    '3650',
    '-out',
    'subject.crt',
  ]);
  const pem = readFileSync(path.join(dir, 'subject.crt'), 'utf8');
  withSubject.set(subject, pem);
  return pem;
}
