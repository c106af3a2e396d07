/**
 * Who is on the other end of one connection, and what it may ask for yet: the connection's `Peer`
 * as the handlers see it (client address, listener, principal), plus the SASL state of a SASL_*
 * listener.
 *
 * States of a SASL connection (Kafka's SaslServerAuthenticator):
 *
 * | state          | served                                              | next                        |
 * |----------------|-----------------------------------------------------|-----------------------------|
 * | handshake      | ApiVersions, SaslHandshake                          | authenticate                |
 * | authenticate   | ApiVersions, SaslAuthenticate                       | authenticated, or closed    |
 * | authenticated  | everything (SaslHandshake: ILLEGAL_SASL_STATE)      |                             |
 * | closing        | nothing: the connection closes after its answer     |                             |
 *
 * Invariant: until a SASL connection is authenticated, a request of any other API never reaches a
 * handler (the router asks `mayServe` first and closes the connection instead), so nothing
 * unauthenticated touches the store. A connection of a PLAINTEXT or SSL listener is authenticated
 * from the start (User:ANONYMOUS, or the subject of its verified client certificate).
 */
import type { Peer } from '../handlers/index.js';
import { API_KEYS } from '../protocol/index.js';
import { addressGroup } from './client-address.js';
import { usesSasl, type ResolvedListener, type SaslMechanism } from './listener.js';
import type { ScramServerExchange } from './scram.js';

/** The largest request of a connection that has not authenticated (Kafka's sasl.server.max.receive.size). */
export const UNAUTHENTICATED_REQUEST_BYTES_MAX = 512 * 1024;

/** The principal of a connection that has not proved who it is. */
export const ANONYMOUS = 'User:ANONYMOUS';

/** SASL state of a connection. */
export type SessionState = 'handshake' | 'authenticate' | 'authenticated' | 'closing';

/** One connection's identity and authentication state. */
export class ConnectionSession implements Peer {
  readonly clientHost: string;
  /** The client's address without the leading '/'. */
  readonly address: string;
  /** What the address counts in for per-client limits: itself (IPv4) or its IPv6 /64 (client-address.ts). */
  readonly addressGroup: string;
  /** The listener it came in on. */
  readonly listener: ResolvedListener;
  #principal: string;
  #state: SessionState;
  /** The mechanism named by SaslHandshake. */
  mechanism: SaslMechanism | undefined;
  /** The SCRAM exchange in progress. */
  scram: ScramServerExchange | undefined;
  /** True while this connection counts against its address's authentications in progress. */
  throttled = false;
  /**
   * True while a SaslAuthenticate is being checked (a PLAIN password's PBKDF2) or its failure answer
   * is held for the throttle's delay: the address's slot is then given back when that ends, not when
   * the connection closes, so hanging up after a wrong password neither frees the slot early nor
   * stops the hashing from counting.
   */
  answering = false;
  /** Until when the connection is muted for going over its quota (interval time, `elapsedMs`). */
  mutedUntilMs: number | undefined;
  #closing: AbortSignal | undefined;

  constructor(
    address: string,
    listener: ResolvedListener,
    certificatePrincipal: string | undefined,
  ) {
    this.address = address;
    this.addressGroup = addressGroup(address);
    this.clientHost = `/${address}`;
    this.listener = listener;
    this.#principal = certificatePrincipal ?? ANONYMOUS;
    this.#state = usesSasl(listener.securityProtocol) ? 'handshake' : 'authenticated';
  }

  /** Aborted when the connection closes (set by `attach`). */
  get closing(): AbortSignal {
    this.#closing ??= new AbortController().signal;
    return this.#closing;
  }

  /** Takes the connection's closing signal; returns this session, as the connection's peer. */
  attach(closing: AbortSignal): this {
    this.#closing = closing;
    return this;
  }

  get listenerName(): string {
    return this.listener.name;
  }

  get principal(): string {
    return this.#principal;
  }

  /** The SASL state. */
  get state(): SessionState {
    return this.#state;
  }

  /** True until a SASL connection has authenticated (and after its authentication failed). */
  get unauthenticated(): boolean {
    return this.#state !== 'authenticated';
  }

  /** True once the connection should be closed after the answer being written. */
  get closeRequested(): boolean {
    return this.#state === 'closing';
  }

  /**
   * Before a SASL connection has authenticated, its requests (ApiVersions, SaslHandshake,
   * SaslAuthenticate) are small: a larger frame is refused before any of it is buffered, so that a
   * client that never authenticates cannot make the server hold the server's request maximum (100
   * MiB by default) per connection. Kafka bounds it the same way (sasl.server.max.receive.size).
   */
  requestBytesMax(): number | undefined {
    return this.#state === 'authenticated' ? undefined : UNAUTHENTICATED_REQUEST_BYTES_MAX;
  }

  mayServe(apiKey: number): boolean {
    switch (this.#state) {
      case 'authenticated':
        return true;
      case 'handshake':
        return apiKey === API_KEYS.ApiVersions || apiKey === API_KEYS.SaslHandshake;
      case 'authenticate':
        return apiKey === API_KEYS.ApiVersions || apiKey === API_KEYS.SaslAuthenticate;
      case 'closing':
        return false;
    }
  }

  muteUntil(untilMs: number): void {
    this.mutedUntilMs = Math.max(this.mutedUntilMs ?? 0, untilMs);
  }

  /** SaslHandshake accepted `mechanism`. */
  handshaken(mechanism: SaslMechanism): void {
    this.mechanism = mechanism;
    this.#state = 'authenticate';
  }

  /** The client proved it is `user`. */
  authenticated(user: string): void {
    this.#principal = `User:${user}`;
    this.#state = 'authenticated';
    this.scram = undefined;
  }

  /** Authentication failed or was refused: the connection closes after this answer. */
  refuse(): void {
    this.#state = 'closing';
    this.scram = undefined;
  }
}
