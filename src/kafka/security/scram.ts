/**
 * SCRAM (RFC 5802, with SHA-256 and SHA-512 as RFC 7677 and Kafka's KIP-84 use them): the salted
 * verifier a user's password becomes, and the server side of one authentication exchange.
 *
 * Verifier: SaltedPassword = PBKDF2(HMAC-H, password, salt, i); ClientKey = HMAC(SaltedPassword,
 * "Client Key"); StoredKey = H(ClientKey); ServerKey = HMAC(SaltedPassword, "Server Key"). Only
 * (salt, i, StoredKey, ServerKey) is kept: the password and SaltedPassword never leave
 * `scramVerifier`. StoredKey lets the server check a proof without being able to make one. The
 * password is hashed as its UTF-8 bytes, as given (as Kafka does; no SASLprep or NFKC), so two
 * passwords that differ in any byte are different passwords.
 *
 * Exchange (server side), as messages on the wire:
 * 1. client-first `n,,n=<user>,r=<client nonce>` (gs2 header `n,,` or `y,,`; an authzid, if any,
 *    must be the user itself; channel binding `p=` is refused; Kafka's `tokenauth` extension is
 *    refused: there are no delegation tokens here);
 * 2. server-first `r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>`;
 * 3. client-final `c=<base64 gs2 header>,r=<nonce>,p=<base64 proof>`: the nonce and the channel
 *    binding must echo steps 1-2; ClientKey = proof XOR HMAC(StoredKey, AuthMessage) and
 *    H(ClientKey) must equal StoredKey (compared in constant time);
 * 4. server-final `v=<base64 HMAC(ServerKey, AuthMessage)>`, which proves the server knew the verifier.
 *
 * Invariants: an unknown user gets a server-first like a known one (a salt derived from a server
 * secret and the name, the default iterations) and fails only at step 3, so the exchange does not
 * tell which users exist (Kafka's broker fails at step 1 instead); every failure is the same
 * SASL_AUTHENTICATION_FAILED, whose message names the step and never echoes a secret.
 */
import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { OffsetStoreError } from '../../errors/index.js';

const pbkdf2Async = promisify(pbkdf2);

/** The SCRAM mechanisms served, by their SASL names. */
export type ScramMechanism = 'SCRAM-SHA-256' | 'SCRAM-SHA-512';

/** Every SCRAM mechanism. */
export const SCRAM_MECHANISMS: readonly ScramMechanism[] = ['SCRAM-SHA-256', 'SCRAM-SHA-512'];

/** The fewest PBKDF2 iterations accepted (RFC 7677 and Kafka's minimum). */
export const SCRAM_ITERATIONS_MIN = 4096;

/**
 * The most PBKDF2 iterations a new user may be given (Kafka's maximum): a PLAIN login runs them on
 * the server for every attempt, so a larger count would make each login a denial of service.
 */
export const SCRAM_ITERATIONS_MAX = 16_384;

/** Bytes of a fresh salt. */
const SALT_BYTES = 16;

/** What the server keeps of a password for one mechanism. */
export interface ScramVerifier {
  /** The random salt. */
  readonly salt: Buffer;
  /** PBKDF2 iterations, at least SCRAM_ITERATIONS_MIN. */
  readonly iterations: number;
  /** H(ClientKey). */
  readonly storedKey: Buffer;
  /** HMAC(SaltedPassword, "Server Key"). */
  readonly serverKey: Buffer;
}

/** A failed exchange (SASL_AUTHENTICATION_FAILED); the message says at which step, never with a secret. */
function scramFailure(message: string): OffsetStoreError {
  return new OffsetStoreError('SASL_AUTHENTICATION_FAILED', message);
}

function hashOf(mechanism: ScramMechanism): { name: 'sha256' | 'sha512'; bytes: number } {
  return mechanism === 'SCRAM-SHA-256'
    ? { name: 'sha256', bytes: 32 }
    : { name: 'sha512', bytes: 64 };
}

function hmac(mechanism: ScramMechanism, key: Buffer, text: string | Buffer): Buffer {
  return createHmac(hashOf(mechanism).name, key).update(text).digest();
}

function hash(mechanism: ScramMechanism, bytes: Buffer): Buffer {
  return createHash(hashOf(mechanism).name).update(bytes).digest();
}

/**
 * The verifier of `password` (PBKDF2 on the thread pool, so the event loop is not held). The
 * password's UTF-8 bytes are hashed as they are, without SASLprep or other normalisation, as
 * Kafka's broker and clients do: a client must derive the same key from the same text.
 */
export async function scramVerifier(
  mechanism: ScramMechanism,
  password: string,
  options: { salt?: Buffer; iterations?: number } = {},
): Promise<ScramVerifier> {
  const iterations = options.iterations ?? SCRAM_ITERATIONS_MIN;
  if (!Number.isSafeInteger(iterations) || iterations < SCRAM_ITERATIONS_MIN)
    throw new RangeError(
      `iterations must be an integer >= ${SCRAM_ITERATIONS_MIN}, got ${iterations}`,
    );
  const salt = options.salt ?? randomBytes(SALT_BYTES);
  const { name, bytes } = hashOf(mechanism);
  const salted = await pbkdf2Async(Buffer.from(password, 'utf8'), salt, iterations, bytes, name);
  const clientKey = hmac(mechanism, salted, 'Client Key');
  return {
    salt,
    iterations,
    storedKey: hash(mechanism, clientKey),
    serverKey: hmac(mechanism, salted, 'Server Key'),
  };
}

/** True when `password` is the one `verifier` was made from (for SASL/PLAIN); constant-time compare. */
export async function scramPasswordMatches(
  mechanism: ScramMechanism,
  verifier: ScramVerifier,
  password: string,
): Promise<boolean> {
  const candidate = await scramVerifier(mechanism, password, {
    salt: verifier.salt,
    iterations: verifier.iterations,
  });
  return timingSafeEqual(candidate.storedKey, verifier.storedKey);
}

/** Decodes a SCRAM `saslname` (`=2C` is ',' and `=3D` is '='); null when malformed. */
function decodeSaslName(text: string): string | null {
  if (/=(?!2C|3D)/.test(text)) return null;
  return text.replace(/=2C/g, ',').replace(/=3D/g, '=');
}

/** The attributes of a SCRAM message, in order; null when malformed. */
function attributes(message: string): Map<string, string> | null {
  const found = new Map<string, string>();
  for (const part of message.split(',')) {
    const match = /^([a-zA-Z])=(.*)$/s.exec(part);
    if (match === null || found.has(match[1]!)) return null;
    found.set(match[1]!, match[2]!);
  }
  return found;
}

const PRINTABLE_NONCE = /^[\x21-\x2b\x2d-\x7e]+$/;

/** Finds the verifier of a user; undefined for an unknown one. */
export type VerifierLookup = (user: string, mechanism: ScramMechanism) => ScramVerifier | undefined;

/** Options of a ScramServerExchange. */
export interface ScramExchangeOptions {
  /** The mechanism negotiated. */
  readonly mechanism: ScramMechanism;
  /** Finds a user's verifier. */
  readonly lookup: VerifierLookup;
  /** Key of the fake salts given to unknown users (UserCredentials.decoySecret). */
  readonly decoySecret: Buffer;
  /** Iterations given to unknown users; default SCRAM_ITERATIONS_MIN. */
  readonly decoyIterations?: number;
  /** The server's nonce part; default 24 random bytes in base64 (tests pass RFC vectors' nonce). */
  readonly serverNonce?: string;
}

/** The server side of one SCRAM exchange: two client messages in, two server messages out. */
export class ScramServerExchange {
  readonly #options: ScramExchangeOptions;
  #step: 'first' | 'final' | 'done' = 'first';
  #authenticated = false;
  #user = '';
  #verifier: ScramVerifier | undefined;
  #nonce = '';
  #gs2Header = '';
  #clientFirstBare = '';
  #serverFirst = '';

  constructor(options: ScramExchangeOptions) {
    this.#options = options;
  }

  /** The user named by the client-first message ('' before it). */
  get user(): string {
    return this.#user;
  }

  /** True once the client proved it knows the password. */
  get authenticated(): boolean {
    return this.#authenticated;
  }

  /** Takes the next client message and returns the server's answer; throws SASL_AUTHENTICATION_FAILED to end the exchange. */
  respond(clientMessage: Buffer): Buffer {
    const text = clientMessage.toString('utf8');
    if (this.#step === 'first') return Buffer.from(this.#first(text), 'utf8');
    if (this.#step === 'final') return Buffer.from(this.#final(text), 'utf8');
    throw scramFailure('SCRAM: the exchange is already complete');
  }

  #first(text: string): string {
    const match = /^([ny]),(a=[^,]*)?,(.*)$/s.exec(text);
    if (match === null)
      throw scramFailure('SCRAM client-first: malformed or asks for channel binding');
    const bare = match[3]!;
    const attrs = attributes(bare);
    const user = attrs === null ? null : decodeSaslName(attrs.get('n') ?? '');
    const clientNonce = attrs?.get('r') ?? '';
    if (attrs === null || user === null || user === '' || !PRINTABLE_NONCE.test(clientNonce))
      throw scramFailure('SCRAM client-first: malformed');
    for (const key of attrs.keys())
      if (key !== 'n' && key !== 'r')
        throw scramFailure(`SCRAM client-first: extension '${key}' is not supported`);
    // RFC 5802: the user name first, then the nonce (as Kafka's broker reads the message).
    if ([...attrs.keys()].join() !== 'n,r') throw scramFailure('SCRAM client-first: malformed');
    const authzid = match[2] === undefined ? null : decodeSaslName(match[2].slice(2));
    if (authzid !== null && authzid !== user)
      throw scramFailure(
        'SCRAM client-first: an authorization id other than the user is not allowed',
      );
    const { mechanism, lookup, decoySecret } = this.#options;
    this.#user = user;
    this.#verifier = lookup(user, mechanism);
    const salt =
      this.#verifier?.salt ??
      hmac(mechanism, decoySecret, `${mechanism}\0${user}`).subarray(0, SALT_BYTES);
    const iterations =
      this.#verifier?.iterations ?? this.#options.decoyIterations ?? SCRAM_ITERATIONS_MIN;
    this.#nonce = clientNonce + (this.#options.serverNonce ?? randomBytes(24).toString('base64'));
    this.#gs2Header = text.slice(0, text.length - bare.length);
    this.#clientFirstBare = bare;
    this.#serverFirst = `r=${this.#nonce},s=${salt.toString('base64')},i=${iterations}`;
    this.#step = 'final';
    return this.#serverFirst;
  }

  #final(text: string): string {
    this.#step = 'done';
    const proofAt = text.lastIndexOf(',p=');
    const attrs = proofAt < 0 ? null : attributes(text.slice(0, proofAt));
    // RFC 5802: the channel binding first, then the nonce, extensions, and the proof last.
    const [first, second] = attrs === null ? [] : attrs.keys();
    if (attrs === null || first !== 'c' || second !== 'r')
      throw this.#fail('SCRAM client-final: malformed');
    if (attrs.get('c') !== Buffer.from(this.#gs2Header, 'utf8').toString('base64'))
      throw this.#fail('SCRAM client-final: channel binding does not match');
    if (attrs.get('r') !== this.#nonce)
      throw this.#fail('SCRAM client-final: nonce does not match');
    const proof = Buffer.from(text.slice(proofAt + 3), 'base64');
    const verifier = this.#verifier;
    const { mechanism } = this.#options;
    const authMessage = `${this.#clientFirstBare},${this.#serverFirst},${text.slice(0, proofAt)}`;
    // Compute as for a known user whatever happens, so an unknown one costs the same time.
    const storedKey = verifier?.storedKey ?? Buffer.alloc(hashOf(mechanism).bytes);
    const signature = hmac(mechanism, storedKey, authMessage);
    const clientKey = Buffer.alloc(signature.length);
    for (let i = 0; i < signature.length; i++) clientKey[i] = signature[i]! ^ (proof[i] ?? 0);
    const matches =
      proof.length === signature.length && timingSafeEqual(hash(mechanism, clientKey), storedKey);
    if (verifier === undefined || !matches)
      throw this.#fail('SCRAM client-final: invalid credentials');
    this.#authenticated = true;
    return `v=${hmac(mechanism, verifier.serverKey, authMessage).toString('base64')}`;
  }

  #fail(message: string): OffsetStoreError {
    this.#verifier = undefined;
    return scramFailure(message);
  }
}
