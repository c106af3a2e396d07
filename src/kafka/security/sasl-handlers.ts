/**
 * SaslHandshake (key 17, v1) and SaslAuthenticate (key 36, v0-2): authentication of a connection
 * on a SASL_* listener, as Kafka's SaslServerAuthenticator does it (KIP-152, KIP-84).
 *
 * Steps:
 * 1. SaslHandshake names a mechanism. One the listener does not enable is UNSUPPORTED_SASL_MECHANISM
 *    (with the enabled ones) and the connection closes. One more authentication of an address that
 *    has `handshakesPerAddressMax` in progress closes the connection unanswered (login-throttle.ts).
 * 2. SaslAuthenticate carries the tokens: PLAIN one (`authzid NUL user NUL password`, checked
 *    against the user's SCRAM verifier, PBKDF2 off the event loop), SCRAM two (scram.ts).
 * 3. Success makes the principal `User:<user>` and the connection serves every API. Failure is
 *    SASL_AUTHENTICATION_FAILED with a message that does not say whether the user exists, answered
 *    after the throttle's delay, and then the connection closes. The authentication counts as in
 *    progress for its address until then, even if the client hangs up first (a client that closes
 *    right after sending a password would otherwise get its slot back before the delay, and keep
 *    the server hashing passwords past the cap).
 *
 * On a listener without SASL, and on a connection already authenticated, both are
 * ILLEGAL_SASL_STATE (the connection stays open, as on Kafka's broker, where these requests then
 * reach KafkaApis). Session lifetime is not limited (session_lifetime_ms 0: no re-authentication).
 */
import { OffsetStoreError } from '../../errors/index.js';
import { KAFKA_ERROR, type API_KEYS, type ResponseInputOf } from '../protocol/index.js';
import { CLOSE_CONNECTION, type HandlerResult, type RequestHandler } from '../handlers/index.js';
import { ConnectionSession } from './connection-session.js';
import { scramPasswordMatches, ScramServerExchange } from './scram.js';
import type { ServerSecurity } from './server-security.js';

type AuthenticateResponse = ResponseInputOf<typeof API_KEYS.SaslAuthenticate>;

/** Parses a PLAIN token; null when malformed. */
function plainToken(bytes: Buffer): { authzid: string; user: string; password: string } | null {
  const parts = bytes.toString('utf8').split('\0');
  if (parts.length !== 3 || parts[1] === '' || parts[2] === '') return null;
  return { authzid: parts[0]!, user: parts[1]!, password: parts[2]! };
}

/** The SASL handlers of a server. */
export function saslHandlers(security: ServerSecurity): {
  handshake: RequestHandler<typeof API_KEYS.SaslHandshake>;
  authenticate: RequestHandler<typeof API_KEYS.SaslAuthenticate>;
} {
  const handshake: RequestHandler<typeof API_KEYS.SaslHandshake> = (
    _context,
    request,
    _header,
    peer,
  ) => {
    if (!(peer instanceof ConnectionSession) || peer.state !== 'handshake')
      return { errorCode: KAFKA_ERROR.ILLEGAL_SASL_STATE, mechanisms: [] };
    const enabled = peer.listener.saslMechanisms;
    const mechanism = enabled.find((m) => m === request.mechanism);
    if (mechanism === undefined) {
      peer.refuse();
      security.audit({
        peer,
        api: 'SaslHandshake',
        outcome: 'denied',
        reason: `unsupported mechanism ${JSON.stringify(request.mechanism.slice(0, 64))}`,
      });
      return { errorCode: KAFKA_ERROR.UNSUPPORTED_SASL_MECHANISM, mechanisms: [...enabled] };
    }
    if (!security.throttle.begin(peer.addressGroup)) {
      peer.refuse();
      security.audit({
        peer,
        api: 'SaslHandshake',
        outcome: 'denied',
        reason: 'too many authentications in progress from this address',
      });
      return CLOSE_CONNECTION;
    }
    peer.throttled = true;
    peer.handshaken(mechanism);
    return { errorCode: KAFKA_ERROR.NONE, mechanisms: [...enabled] };
  };

  const authenticate: RequestHandler<typeof API_KEYS.SaslAuthenticate> = (
    _context,
    request,
    _header,
    peer,
  ) => {
    if (!(peer instanceof ConnectionSession) || peer.state !== 'authenticate') {
      return {
        errorCode: KAFKA_ERROR.ILLEGAL_SASL_STATE,
        errorMessage: 'SaslAuthenticate is not expected now',
        authBytes: Buffer.alloc(0),
        sessionLifetimeMs: 0n,
      };
    }
    if (peer.mechanism === 'PLAIN') {
      peer.answering = true;
      return authenticatePlain(security, peer, request.authBytes);
    }
    return authenticateScram(security, peer, request.authBytes);
  };
  return { handshake, authenticate };
}

function succeeded(
  security: ServerSecurity,
  session: ConnectionSession,
  user: string,
  authBytes: Buffer,
): AuthenticateResponse {
  session.authenticated(user);
  release(security, session);
  security.audit({
    peer: session,
    api: 'SaslAuthenticate',
    outcome: 'allowed',
    reason: `authenticated with ${session.mechanism}`,
  });
  return { errorCode: KAFKA_ERROR.NONE, errorMessage: null, authBytes, sessionLifetimeMs: 0n };
}

/** The failure answer, after the throttle's delay; the connection then closes. */
function failed(
  security: ServerSecurity,
  session: ConnectionSession,
  user: string,
  reason: string,
): Promise<HandlerResult<typeof API_KEYS.SaslAuthenticate>> {
  session.refuse();
  session.answering = true;
  const delayMs = security.throttle.failed(session.addressGroup);
  security.audit({ peer: session, api: 'SaslAuthenticate', outcome: 'denied', reason, user });
  const answer: AuthenticateResponse = {
    errorCode: KAFKA_ERROR.SASL_AUTHENTICATION_FAILED,
    errorMessage: `Authentication failed: invalid credentials with SASL mechanism ${session.mechanism}`,
    authBytes: Buffer.alloc(0),
    sessionLifetimeMs: 0n,
  };
  return new Promise((resolve) => {
    security.clock.setTimer(delayMs, () => {
      release(security, session);
      resolve(answer);
    });
  });
}

function release(security: ServerSecurity, session: ConnectionSession): void {
  session.answering = false;
  if (!session.throttled) return;
  session.throttled = false;
  security.throttle.end(session.addressGroup);
}

async function authenticatePlain(
  security: ServerSecurity,
  session: ConnectionSession,
  token: Buffer,
): Promise<HandlerResult<typeof API_KEYS.SaslAuthenticate>> {
  const parsed = plainToken(token);
  if (parsed === null) return failed(security, session, '', 'malformed PLAIN token');
  const { authzid, user, password } = parsed;
  if (authzid !== '' && authzid !== user)
    return failed(security, session, user, 'PLAIN authorization id other than the user');
  const found = security.users.plainVerifier(user);
  // An unknown user costs the same PBKDF2 as a known one, so timing does not tell them apart.
  const matches =
    found === undefined
      ? await scramPasswordMatches('SCRAM-SHA-256', security.decoyVerifier, password).then(
          () => false,
        )
      : await scramPasswordMatches(found.mechanism, found.verifier, password);
  if (!matches) return failed(security, session, user, 'invalid credentials');
  return succeeded(security, session, user, Buffer.alloc(0));
}

function authenticateScram(
  security: ServerSecurity,
  session: ConnectionSession,
  token: Buffer,
): AuthenticateResponse | Promise<HandlerResult<typeof API_KEYS.SaslAuthenticate>> {
  const mechanism = session.mechanism as 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
  session.scram ??= new ScramServerExchange({
    mechanism,
    lookup: (user, m) => security.users.verifier(user, m),
    decoySecret: security.users.decoySecret,
    decoyIterations: security.users.typicalIterations(mechanism),
  });
  const exchange = session.scram;
  let answer: Buffer;
  try {
    answer = exchange.respond(token);
  } catch (error) {
    if (error instanceof OffsetStoreError && error.code === 'SASL_AUTHENTICATION_FAILED')
      return failed(security, session, exchange.user, error.message);
    throw error;
  }
  if (exchange.authenticated) return succeeded(security, session, exchange.user, answer);
  return {
    errorCode: KAFKA_ERROR.NONE,
    errorMessage: null,
    authBytes: answer,
    sessionLifetimeMs: 0n,
  };
}
