/**
 * From a request payload to the bytes of its response: decodes the header, checks the API and
 * version against what the server advertises, decodes the body, asks the API's handler, and encodes
 * its answer as a framed response (size, header, body) ready for one socket write.
 *
 * What Kafka's broker does with a request it cannot serve, this does too:
 * - an ApiVersions request of a version not advertised: answered in the v0 format with
 *   UNSUPPORTED_VERSION (35) and the advertised ranges (KIP-511), so the client can pick a version;
 * - any other API key or version not advertised, a header or body that does not decode: the
 *   connection is closed (CLOSE_CONNECTION), since no response a client could parse is possible;
 * - a request the connection may not make yet (`peer.mayServe`: anything but ApiVersions and the
 *   SASL requests before a SASL connection authenticated): the connection is closed, before the
 *   body is decoded or a handler runs.
 *
 * Handler failures (a throw, a rejection, a body the encoder refuses) are bugs: the router reports
 * them (onWarning) and closes that connection; the server and other connections go on.
 *
 * OffsetCommit, the request a busy consumer sends most, takes a shorter path when nothing wraps its
 * handler (no ACLs, audit log, group limits or quotas): read straight into columns, committed by
 * `commitOffsetColumns`, answered straight from the handler's arrays (offset-commit-columns.ts),
 * with no object per partition on the way. A request that path is not sure of goes the table-driven
 * way, as does every OffsetCommit of a server whose handler is wrapped.
 */
import {
  API_KEYS,
  KAFKA_ERROR,
  advertisedApis,
  decodeRequest,
  decodeOffsetCommitColumns,
  decodeRequestHeader,
  encodeOffsetCommitResponse,
  encodeResponse,
  isAdvertised,
  type ApiKey,
  type OffsetCommitAnswerColumns,
  type OffsetCommitColumns,
  type RequestHeader,
} from '../protocol/index.js';
import {
  CLOSE_CONNECTION,
  commitOffsetColumns,
  handleOffsetCommit,
  type HandlerContext,
  type HandlerResult,
  type HandlerTable,
  type Peer,
  type RequestHandler,
} from '../handlers/index.js';
import { elapsedMs } from '../../util/index.js';

/** What a request comes to: the framed response, or closing the connection; now or later. */
export type Routed = Buffer | typeof CLOSE_CONNECTION;

/**
 * Accounts each answered request to its client and says how long to throttle it (client quotas):
 * `bytes` in and out, `timeMs` the server spent on it.
 */
export interface QuotaMeter {
  record(principal: string, clientId: string, bytes: number, timeMs: number): number;
}

const API_VERSIONS_UNSUPPORTED = {
  errorCode: KAFKA_ERROR.UNSUPPORTED_VERSION,
  apiKeys: advertisedApis(),
};

/** Routes requests to their handlers and encodes the answers. */
export class RequestRouter {
  readonly #handlers: HandlerTable;
  readonly #context: HandlerContext;
  readonly #quotas: QuotaMeter | undefined;
  /** Whether OffsetCommits take the columnar path (their handler is the plain one, and no quotas). */
  readonly #columnarCommits: boolean;

  /** `quotas`: when given, every answer is accounted, and a client over its quota throttled (throttle_time_ms, muted). */
  constructor(handlers: HandlerTable, context: HandlerContext, quotas?: QuotaMeter) {
    this.#handlers = handlers;
    this.#context = context;
    this.#quotas = quotas;
    this.#columnarCommits =
      handlers[API_KEYS.OffsetCommit] === handleOffsetCommit && quotas === undefined;
  }

  /** The response to one request payload (the bytes after the frame's size field). */
  route(payload: Buffer, peer: Peer): Routed | Promise<Routed> {
    let header: RequestHeader;
    try {
      header = decodeRequestHeader(payload);
    } catch {
      return CLOSE_CONNECTION;
    }
    if (!isAdvertised(header.apiKey, header.apiVersion)) {
      if (header.apiKey !== API_KEYS.ApiVersions) return CLOSE_CONNECTION;
      return encodeResponse(
        { apiKey: API_KEYS.ApiVersions, apiVersion: 0, correlationId: header.correlationId },
        API_VERSIONS_UNSUPPORTED,
      );
    }
    // Before a SASL connection authenticated, anything but ApiVersions and SASL closes it (Kafka's rule).
    if (peer.mayServe !== undefined && !peer.mayServe(header.apiKey)) return CLOSE_CONNECTION;
    const handler = this.#handlers[header.apiKey as ApiKey] as RequestHandler<ApiKey> | undefined;
    if (handler === undefined) return CLOSE_CONNECTION;
    if (header.apiKey === API_KEYS.OffsetCommit && this.#columnarCommits) {
      let columns;
      try {
        columns = decodeOffsetCommitColumns(payload, header);
      } catch (error) {
        return this.#failed(header, error); // a bug: the reader answers undefined to bad bytes
      }
      if (columns !== undefined) return this.#commitColumns(header, columns);
    }
    let body;
    try {
      body = decodeRequest(payload, header).body;
    } catch {
      return CLOSE_CONNECTION;
    }
    const startedMs = this.#quotas === undefined ? 0 : performance.now();
    // As of the request's arrival: the SaslAuthenticate that authenticates a connection counts no
    // more than the requests before it.
    const unmetered = peer.unauthenticated === true;
    let answer: HandlerResult<ApiKey> | Promise<HandlerResult<ApiKey>>;
    try {
      answer = handler(this.#context, body as never, header, peer);
    } catch (error) {
      return this.#failed(header, error);
    }
    if (answer instanceof Promise) {
      const syncMs = this.#quotas === undefined ? 0 : performance.now() - startedMs;
      // Only the length is kept while the answer waits: the payload is a view of a socket read,
      // which the closure would otherwise keep alive with every request it carried.
      const requestBytes = payload.length;
      return answer.then(
        (result) =>
          this.#encode(header, result, peer, unmetered, requestBytes, syncMs, performance.now()),
        (error: unknown) => this.#failed(header, error),
      );
    }
    return this.#encode(header, answer, peer, unmetered, payload.length, 0, startedMs);
  }

  /** An OffsetCommit read as columns, answered from the handler's columns. */
  #commitColumns(header: RequestHeader, columns: OffsetCommitColumns): Routed | Promise<Routed> {
    let answer: OffsetCommitAnswerColumns | Promise<OffsetCommitAnswerColumns>;
    try {
      answer = commitOffsetColumns(this.#context, columns, header.apiVersion);
    } catch (error) {
      return this.#failed(header, error);
    }
    return answer instanceof Promise
      ? answer.then(
          (result) => this.#encodeCommit(header, result),
          (error: unknown) => this.#failed(header, error),
        )
      : this.#encodeCommit(header, answer);
  }

  #encodeCommit(header: RequestHeader, result: OffsetCommitAnswerColumns): Routed {
    try {
      return encodeOffsetCommitResponse(header.apiVersion, header.correlationId, 0, result);
    } catch (error) {
      return this.#failed(header, error);
    }
  }

  /** Encodes an answer; with quotas, accounts it and, over the quota, sets its throttle time and mutes the peer. */
  #encode(
    header: RequestHeader,
    result: HandlerResult<ApiKey>,
    peer: Peer,
    unmetered: boolean,
    requestBytes: number,
    earlierMs: number,
    startedMs: number,
  ): Routed {
    if (result === CLOSE_CONNECTION) return CLOSE_CONNECTION;
    const responseHeader = {
      apiKey: header.apiKey as ApiKey,
      apiVersion: header.apiVersion,
      correlationId: header.correlationId,
    };
    try {
      const encoded = encodeResponse(responseHeader, result as never);
      // As Kafka's authenticator: what a client sends before it has authenticated, the SASL
      // exchange included, counts against no quota. A client that has not proved who it is must not
      // spend the quota of the client id it claims (and throttle the clients that own it). Once
      // authenticated, SASL requests (answered ILLEGAL_SASL_STATE) count as any other, as in Kafka.
      if (this.#quotas === undefined || unmetered) return encoded;
      const timeMs = earlierMs + performance.now() - startedMs;
      const throttleMs = this.#quotas.record(
        peer.principal ?? 'User:ANONYMOUS',
        header.clientId ?? '',
        requestBytes + encoded.length,
        timeMs,
      );
      if (throttleMs <= 0) return encoded;
      peer.muteUntil?.(elapsedMs(this.#context.clock) + throttleMs);
      // Responses without a throttle_time_ms field (in this version) leave it out when encoded.
      return encodeResponse(responseHeader, {
        ...(result as object),
        throttleTimeMs: throttleMs,
      } as never);
    } catch (error) {
      return this.#failed(header, error);
    }
  }

  #failed(header: RequestHeader, error: unknown): typeof CLOSE_CONNECTION {
    this.#context.warn(
      `kafka server: answering API key ${header.apiKey} v${header.apiVersion} (correlation id ${header.correlationId}) failed; the connection is closed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    return CLOSE_CONNECTION;
  }
}
