/**
 * Listeners: where the server accepts connections and what each connection must do before it is
 * served, in Kafka's terms. A listener has a name (default: its security protocol, as Kafka's
 * `listeners=PLAINTEXT://...` does), a security protocol, an address to bind, the address clients
 * are told (Metadata and FindCoordinator answer with the advertised address of the listener the
 * request came in on), TLS material for SSL and SASL_SSL, and the SASL mechanisms of SASL_*.
 *
 * | protocol        | transport | who the client is                                        |
 * |-----------------|-----------|----------------------------------------------------------|
 * | PLAINTEXT       | TCP       | User:ANONYMOUS                                           |
 * | SSL             | TLS       | User:<subject of the client certificate> or User:ANONYMOUS |
 * | SASL_PLAINTEXT  | TCP       | User:<SASL user>, after SaslHandshake + SaslAuthenticate |
 * | SASL_SSL        | TLS       | User:<SASL user>, after SaslHandshake + SaslAuthenticate |
 *
 * Checks at the edge: PLAIN sends the password itself, so it is refused on a SASL_PLAINTEXT
 * listener unless `allowPlainWithoutTls`; TLS material is required exactly where TLS is used, and a
 * certificate or key that TLS cannot use (an empty one included) is refused by its option's name; a
 * CA must hold at least one PEM certificate and every certificate in it must parse (node:tls skips
 * text it cannot read, so a CA of none would leave client certificates unverified without a word).
 */
import { X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { notAnOptionsObject } from '../../util/index.js';
import type { ScramMechanism } from './scram.js';

/** Kafka's security protocols. */
export type SecurityProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL';

/** Every security protocol. */
export const SECURITY_PROTOCOLS: readonly SecurityProtocol[] = [
  'PLAINTEXT',
  'SSL',
  'SASL_PLAINTEXT',
  'SASL_SSL',
];

/** The SASL mechanisms served. */
export type SaslMechanism = 'PLAIN' | ScramMechanism;

/** Every SASL mechanism, in the order a listener offers them by default. */
export const SASL_MECHANISMS: readonly SaslMechanism[] = [
  'SCRAM-SHA-512',
  'SCRAM-SHA-256',
  'PLAIN',
];

/** TLS material of a listener (PEM text or bytes, as node:tls takes them). */
export interface ListenerTlsOptions {
  /** The server's certificate chain. */
  readonly cert: string | Buffer;
  /** The server's private key. */
  readonly key: string | Buffer;
  /** CAs that sign client certificates; needed to verify them. */
  readonly ca?: string | Buffer;
  /** Refuse a TLS client without a certificate signed by `ca` (Kafka's ssl.client.auth=required); default false. */
  readonly requireClientCertificate?: boolean;
}

/** One listener of `startKafkaServer({ listeners })`. */
export interface ListenerOptions {
  /** Its name (unique); default the security protocol. */
  readonly name?: string;
  /** Default 'PLAINTEXT'. */
  readonly securityProtocol?: SecurityProtocol;
  /** Address to bind; default '127.0.0.1'. */
  readonly host?: string;
  /** Port to bind; default 0 (a free one). */
  readonly port?: number;
  /** Host clients of this listener are told; default `host` (required for a wildcard host). */
  readonly advertisedHost?: string;
  /** Port clients of this listener are told; default the bound port. */
  readonly advertisedPort?: number;
  /** Required for SSL and SASL_SSL. */
  readonly tls?: ListenerTlsOptions;
  /** Mechanisms of a SASL_* listener; default SCRAM-SHA-512, SCRAM-SHA-256, and PLAIN on SASL_SSL only. */
  readonly saslMechanisms?: readonly SaslMechanism[];
  /** Allow PLAIN on SASL_PLAINTEXT (the password crosses the network in clear); default false. */
  readonly allowPlainWithoutTls?: boolean;
}

/** A listener after checking, with defaults. */
export interface ResolvedListener {
  readonly name: string;
  readonly securityProtocol: SecurityProtocol;
  readonly host: string;
  readonly port: number;
  readonly advertisedHost: string | undefined;
  readonly advertisedPort: number | undefined;
  readonly tls: ListenerTlsOptions | undefined;
  /** Empty unless SASL_*. */
  readonly saslMechanisms: readonly SaslMechanism[];
}

/** True for SASL_PLAINTEXT and SASL_SSL. */
export function usesSasl(protocol: SecurityProtocol): boolean {
  return protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
}

/** True for SSL and SASL_SSL. */
export function usesTls(protocol: SecurityProtocol): boolean {
  return protocol === 'SSL' || protocol === 'SASL_SSL';
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

/**
 * Parses Kafka's listener form `PROTOCOL://host:port` (`[ipv6]:port`), or a bare `host:port`
 * meaning PLAINTEXT; null when it is neither.
 */
export function parseListenerAddress(
  text: string,
): { securityProtocol: SecurityProtocol; host: string; port: number } | null {
  const match = /^(?:([A-Z_]+):\/\/)?(?:\[([^\]]+)\]|([^:[\]/]+)):(\d{1,5})$/.exec(text);
  if (match === null) return null;
  const protocol = (match[1] ?? 'PLAINTEXT') as SecurityProtocol;
  const port = Number(match[4]);
  if (!SECURITY_PROTOCOLS.includes(protocol) || port > 65_535) return null;
  return { securityProtocol: protocol, host: match[2] ?? match[3]!, port };
}

function port(value: unknown, name: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number')
    throw new TypeError(`options.${name} must be a number, got ${typeof value}`);
  if (!Number.isInteger(value) || value < min || value > 65_535)
    throw new RangeError(`options.${name} must be an integer in [${min}, 65535], got ${value}`);
  return value;
}

function text(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string')
    throw new TypeError(`options.${name} must be a string, got ${typeof value}`);
  return value;
}

/** PEM blocks that node:tls reads as a certificate of a CA. */
const PEM_CERTIFICATE = /-----BEGIN ((?:TRUSTED |X509 )?CERTIFICATE)-----[\s\S]*?-----END \1-----/g;

/**
 * Why `ca` cannot serve as the CA certificates of a TLS listener, or null when it can: it must hold
 * at least one PEM certificate, every one must parse, and every BEGIN line must start its line
 * (node:tls would stop at the first certificate that does not parse, and not see one whose BEGIN
 * follows other text on its line, as in a bundle concatenated from a file without a final newline:
 * silently, either way). Other PEM blocks and text between them are ignored, as node:tls does.
 */
export function caCertificatesProblem(ca: string | Buffer): string | null {
  const text = (typeof ca === 'string' ? ca : ca.toString('latin1')).replace(
    /^(\ufeff|\xef\xbb\xbf)/,
    '',
  );
  for (const begin of text.matchAll(/-----BEGIN /g)) {
    const before = text[begin.index - 1];
    if (before !== undefined && before !== '\n' && before !== '\r')
      return `has a BEGIN line that does not start its line (at character ${begin.index}; a bundle made of files without a final newline?): TLS would not read that block`;
  }
  const blocks = text.match(PEM_CERTIFICATE);
  if (blocks === null) return 'holds no PEM certificate (-----BEGIN CERTIFICATE-----)';
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (error) {
      return `certificate ${i + 1} does not parse: ${(error as Error).message}`;
    }
  }
  return null;
}

/** A TLS PEM option: a string or a Buffer, not empty. */
function pem(value: unknown, name: string): string | Buffer {
  if (typeof value !== 'string' && !Buffer.isBuffer(value))
    throw new TypeError(`options.${name} must be a string or a Buffer of PEM text`);
  if (value.length === 0) throw new RangeError(`options.${name} must not be empty`);
  return value;
}

/**
 * Refuses a certificate or key that TLS cannot use, or a key that is not the certificate's, with
 * a RangeError naming the option (node:tls's own error names neither), its error as the cause.
 */
function checkTlsMaterial(tls: ListenerTlsOptions, where: string): void {
  const attempts = [
    [{ cert: tls.cert }, `options.${where}.tls.cert is not a usable PEM certificate`],
    [{ key: tls.key }, `options.${where}.tls.key is not a usable PEM private key`],
    [{ cert: tls.cert, key: tls.key }, `options.${where}.tls.key is not the key of tls.cert`],
  ] as const;
  for (const [material, problem] of attempts) {
    try {
      createSecureContext(material);
    } catch (error) {
      throw new RangeError(`${problem}: ${(error as Error).message}`, { cause: error });
    }
  }
}

/** Checks one listener's options and applies the defaults. */
export function resolveListener(options: ListenerOptions, where: string): ResolvedListener {
  if (notAnOptionsObject(options) !== undefined)
    throw new TypeError(`options.${where} must be an object`);
  const securityProtocol = options.securityProtocol ?? 'PLAINTEXT';
  if (!SECURITY_PROTOCOLS.includes(securityProtocol))
    throw new RangeError(
      `options.${where}.securityProtocol must be one of ${SECURITY_PROTOCOLS.join(', ')}, got ${String(securityProtocol)}`,
    );
  const host = text(options.host, `${where}.host`) ?? '127.0.0.1';
  const advertisedHost = text(options.advertisedHost, `${where}.advertisedHost`);
  if (advertisedHost === undefined && WILDCARD_HOSTS.has(host)) {
    throw new RangeError(
      `options.${where}.advertisedHost is required when listening on the wildcard address '${host}': clients must be told an address they can connect to`,
    );
  }
  if (advertisedHost === '')
    throw new RangeError(`options.${where}.advertisedHost must not be empty`);
  const tls = options.tls;
  if (usesTls(securityProtocol)) {
    if (
      typeof tls !== 'object' ||
      tls === null ||
      tls.cert === undefined ||
      tls.key === undefined
    ) {
      throw new TypeError(
        `options.${where}.tls with cert and key is required for a ${securityProtocol} listener`,
      );
    }
    pem(tls.cert, `${where}.tls.cert`);
    pem(tls.key, `${where}.tls.key`);
    if (tls.requireClientCertificate === true && tls.ca === undefined)
      throw new TypeError(
        `options.${where}.tls.ca is required with requireClientCertificate (client certificates are verified against it)`,
      );
    if (tls.ca !== undefined) {
      const problem = caCertificatesProblem(pem(tls.ca, `${where}.tls.ca`));
      if (problem !== null) throw new RangeError(`options.${where}.tls.ca ${problem}`);
    }
    checkTlsMaterial(tls, where);
  } else if (tls !== undefined) {
    throw new RangeError(
      `options.${where}.tls is given but a ${securityProtocol} listener does not use TLS`,
    );
  }
  let saslMechanisms: readonly SaslMechanism[] = [];
  if (usesSasl(securityProtocol)) {
    const plainAllowed = securityProtocol === 'SASL_SSL' || options.allowPlainWithoutTls === true;
    saslMechanisms =
      options.saslMechanisms ?? SASL_MECHANISMS.filter((m) => m !== 'PLAIN' || plainAllowed);
    if (!Array.isArray(saslMechanisms) || saslMechanisms.length === 0)
      throw new RangeError(`options.${where}.saslMechanisms must be a non-empty array`);
    for (const mechanism of saslMechanisms) {
      if (!SASL_MECHANISMS.includes(mechanism))
        throw new RangeError(
          `options.${where}.saslMechanisms: unknown mechanism ${String(mechanism)} (served: ${SASL_MECHANISMS.join(', ')})`,
        );
      if (mechanism === 'PLAIN' && !plainAllowed)
        throw new RangeError(
          `options.${where}: PLAIN on a SASL_PLAINTEXT listener sends passwords in clear; set allowPlainWithoutTls to allow it`,
        );
    }
  } else if (options.saslMechanisms !== undefined) {
    throw new RangeError(
      `options.${where}.saslMechanisms is given but a ${securityProtocol} listener does not use SASL`,
    );
  }
  return {
    name: text(options.name, `${where}.name`) ?? securityProtocol,
    securityProtocol,
    host,
    port: port(options.port, `${where}.port`, 0) ?? 0,
    advertisedHost,
    advertisedPort: port(options.advertisedPort, `${where}.advertisedPort`, 1),
    tls: usesTls(securityProtocol) ? tls : undefined,
    saslMechanisms,
  };
}
