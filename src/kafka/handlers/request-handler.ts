/**
 * What a request handler is: a function from a decoded request to the response body of the same API
 * at the same version (encoded by the server), synchronous when it can be (a fetch of committed
 * offsets is answered from memory in the same tick) and a promise when it waits for the store.
 *
 * A handler answers every error a client can act on inside its response (a per-partition, per-group
 * or top-level error code, as the API's schema has them) and never rejects for them; a handler that
 * throws or rejects has a bug, and the server closes that connection and reports it. A handler may
 * return CLOSE_CONNECTION instead of a body, which is how Kafka answers some requests (an acks=0
 * produce it refuses): the connection is closed once every earlier response was written.
 */
import type { ApiKey, RequestHeader, RequestOf, ResponseInputOf } from '../protocol/index.js';
import type { HandlerContext } from './handler-context.js';

/** Returned instead of a response body: close the connection after the earlier responses. */
export const CLOSE_CONNECTION: unique symbol = Symbol('close the connection');

/** Who sent a request: what the server knows of the connection. */
export interface Peer {
  /** The client's address as the socket reports it (Kafka's clientHost), e.g. `/127.0.0.1`. */
  readonly clientHost: string;
  /**
   * Aborted when the connection closes or the server starts closing it: a handler holding its
   * answer (a parked JoinGroup or SyncGroup) answers at once then, so neither waits on it.
   */
  readonly closing: AbortSignal;
  /** The listener the connection came in on (Metadata and FindCoordinator answer its advertised address); absent: the only one. */
  readonly listenerName?: string;
  /** Who the client is, Kafka-style (`User:alice`, `User:CN=host1`, `User:ANONYMOUS`); absent: anonymous. */
  readonly principal?: string;
  /** True while a SASL connection has not authenticated (its requests count against no quota); absent: false. */
  readonly unauthenticated?: boolean;
  /** Whether a request of `apiKey` may be served now (false before a SASL connection authenticated); absent: always. */
  mayServe?(apiKey: number): boolean;
  /** The largest request the connection may send now, when lower than the server's (before it authenticated). */
  requestBytesMax?(): number | undefined;
  /** True when the connection must close once the answer being written is out (a failed authentication). */
  readonly closeRequested?: boolean;
  /**
   * Until when the connection is muted for going over its quota, on the server clock's interval
   * time (`elapsedMs`, which the wall clock's steps do not move); absent: never.
   */
  readonly mutedUntilMs?: number | undefined;
  /** Mutes the connection until `untilMs` (a quota's throttle). */
  muteUntil?(untilMs: number): void;
  /**
   * Whether the principal may describe a topic the handler found by itself (those a subscription's
   * regular expression matches), which are left out otherwise; absent: every topic.
   */
  mayDescribeTopic?(topic: string): boolean;
}

/** A handler's answer: the response body, or CLOSE_CONNECTION. */
export type HandlerResult<K extends ApiKey> = ResponseInputOf<K> | typeof CLOSE_CONNECTION;

/** The handler of API `K`. */
export type RequestHandler<K extends ApiKey> = (
  context: HandlerContext,
  request: RequestOf<K>,
  header: RequestHeader,
  peer: Peer,
) => HandlerResult<K> | Promise<HandlerResult<K>>;

/** A handler for every API the server answers, by API key. */
export type HandlerTable = { readonly [K in ApiKey]?: RequestHandler<K> };
