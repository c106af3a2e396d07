/**
 * EtcdConnection: the one way this package talks to etcd. Every call carries a deadline
 * (`callTimeoutMs`), and the etcd3 client's own retries are switched off: they hid a leader
 * failover for 7 s with no error when measured on a 3-member cluster, and a caller that must
 * resolve an unknown outcome needs to know at once that a call failed.
 *
 * Members that fail are avoided: the client sends each call to one member picked at random, so with
 * one of three members down or cut off a third of all calls would fail, every keepalive and every
 * page of a recovery among them. With more than one endpoint, a member that left a call without an
 * answer (a deadline passed, its connection failed; not an answer of etcd's, such as "no leader"
 * during an election) is avoided for MEMBER_AVOIDED_MS (MemberAvoidance): calls skip it at once and
 * go to another member with their whole deadline, and none waits on a trial call to it. When every
 * member is avoided, none is. Reads (`range`, and transactions of ranges only), which change
 * nothing, are retried once at once (on another member, the first being avoided now).
 *
 * etcd going back in time: every answer's header names the member that made it and the revision of
 * that member's store, which never decreases (a member restarted after a crash serves clients only
 * once it has applied all it had committed), and the cluster id they carry never changes. A member
 * that answers a call with a lower revision than it answered this connection with before the call
 * was sent was restored from a backup meanwhile: etcd holds less than what was written through
 * this connection since that backup; so may an etcd whose cluster id changed (restored under
 * another cluster token, or replaced). The connection tells those who asked (`onWentBack`: a
 * node's lease, which is then lost, so that the node loads its buckets again from what etcd
 * holds), and takes the restored cluster's answers as its new start.
 *
 * Errors become OffsetStoreErrors that say whether the call's outcome is known:
 * - REPLICA_NO_SPACE (the NOSPACE alarm: the backend reached its quota; retriable once an operator
 *   compacts, defragments and disarms): the answer is final, but etcd gives it both to a request it
 *   refused before proposing it and to one it applied that crossed the quota, so a writer reads back
 *   to learn which (reads are not held to the quota);
 * - INVALID_REQUEST (a request over etcd's size or operation limits): refused before proposing it;
 * - anything else (deadline passed, member unreachable, no leader, leader changed): the request may
 *   or may not have been applied. `outcomeUnknown(error)` is true for those; a writer resolves them
 *   by reading back, never by guessing.
 */
import { createRequire } from 'node:module';
import type {
  Etcd3,
  IRangeRequest,
  IRangeResponse,
  ITxnRequest,
  ITxnResponse,
  IDeleteRangeRequest,
  IDeleteRangeResponse,
  IResponseHeader,
  Lease,
} from 'etcd3';
import { BrokenCircuitError, isBrokenCircuitError, noop, type IPolicy } from 'cockatiel';
import { OffsetStoreError } from '../errors/index.js';

type Etcd3Package = typeof import('etcd3');

/**
 * The etcd client package, loaded by the first connection: it brings gRPC and etcd's protocol
 * buffers, about half of the package's import time (~240 ms, ~15 MB), which a process that never
 * joins a cluster (an embedded store, the CLI's other commands) does not pay.
 */
let etcd3: Etcd3Package | undefined;

function etcd3Package(): Etcd3Package {
  etcd3 ??= createRequire(import.meta.url)('etcd3') as Etcd3Package;
  return etcd3;
}

/** Options of a connection. */
export interface EtcdConnectionOptions {
  /** etcd client URLs, e.g. `['http://127.0.0.1:2379']`. */
  endpoints: readonly string[];
  /** Deadline of every call, ms; default 2000. */
  callTimeoutMs?: number;
  /** Deadline of establishing a connection, ms; default 2000. */
  dialTimeoutMs?: number;
  /** Largest response taken, bytes; default ETCD_RESPONSE_BYTES_MAX. */
  responseBytesMax?: number;
}

/** Default deadline of one etcd call. */
export const ETCD_CALL_TIMEOUT_MS = 2000;

/** How long calls avoid a member that left one without an answer, ms. */
export const MEMBER_AVOIDED_MS = 2000;

/**
 * Which members of a connection its calls avoid (see the module comment). The etcd client asks a
 * member's policy to run each call it sends there; a refusal (BrokenCircuitError) makes it try the
 * next member at once.
 */
export class MemberAvoidance {
  readonly #members: number;
  readonly #avoidedUntil = new Map<string, number>();

  constructor(members: number) {
    this.#members = members;
  }

  /** The policy of one member. */
  policy(member: string): IPolicy {
    const run = async <T>(fn: () => T | Promise<T>): Promise<T> => {
      if (this.#avoided(member)) throw new BrokenCircuitError();
      try {
        return await fn();
      } catch (error) {
        if (unanswered(error) && !isBrokenCircuitError(error))
          this.#avoidedUntil.set(member, performance.now() + MEMBER_AVOIDED_MS);
        throw error;
      }
    };
    return { execute: run } as unknown as IPolicy;
  }

  #avoided(member: string): boolean {
    const until = this.#avoidedUntil.get(member);
    if (until === undefined) return false;
    const nowMs = performance.now();
    if (nowMs >= until) {
      this.#avoidedUntil.delete(member);
      return false;
    }
    let avoided = 0;
    for (const [other, otherUntil] of this.#avoidedUntil)
      if (otherUntil > nowMs) avoided++;
      else this.#avoidedUntil.delete(other);
    return avoided < this.#members;
  }
}

/**
 * Default largest response a connection takes, bytes (gRPC's own default is 4 MiB, less than a
 * page of large batches of a log in etcd). Readers that page (etcd has no byte limit on a range)
 * shrink their pages when a response is over it (`responseTooLarge`).
 */
export const ETCD_RESPONSE_BYTES_MAX = 64 * 1024 * 1024;

/** Marks an OffsetStoreError whose request may have been applied by etcd. */
const UNKNOWN = Symbol('outcomeUnknown');

/** True when `error` came from an etcd call whose outcome is unknown (it may have been applied). */
export function outcomeUnknown(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { [UNKNOWN]?: boolean })[UNKNOWN] === true
  );
}

/**
 * True when `error` (or its cause) is etcd refusing a request made under a lease it no longer has
 * (expired, or revoked): an answer, not a silence, so the request was not applied.
 */
export function leaseGone(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause)
    if (/requested lease not found/i.test(e.message)) return true;
  return false;
}

/** An etcd error as an OffsetStoreError, `what` saying which call failed. */
export function etcdError(error: unknown, what: string): OffsetStoreError {
  if (error instanceof OffsetStoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (leaseGone(error)) {
    return new OffsetStoreError(
      'NOT_COORDINATOR',
      `${what}: etcd refused it, as the lease it was made under is gone (expired or revoked): ${message}`,
      { cause: error },
    );
  }
  if (/database space exceeded|NOSPACE/i.test(message)) {
    return new OffsetStoreError(
      'REPLICA_NO_SPACE',
      `${what}: etcd is out of space (its NOSPACE alarm is raised: compact, defragment and disarm it): ${message}`,
      { cause: error },
    );
  }
  if (/request is too large|too many operations/i.test(message)) {
    return new OffsetStoreError(
      'INVALID_REQUEST',
      `${what}: etcd refused the request: ${message}`,
      { cause: error },
    );
  }
  const unknown = new OffsetStoreError(
    'REQUEST_TIMED_OUT',
    `${what}: no answer from etcd, outcome unknown: ${message}`,
    { cause: error },
  );
  (unknown as unknown as { [UNKNOWN]: boolean })[UNKNOWN] = true;
  return unknown;
}

/**
 * True for an error of the etcd client that says a member did not answer (deadline passed,
 * unreachable, call cancelled): a reason to try another member. Not for etcd's own refusals.
 */
function unanswered(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  // RESOURCE_EXHAUSTED is an answer: etcd's NOSPACE alarm, or a response over responseBytesMax.
  // (Without the package loaded, no connection exists, so no error can be the etcd client's.)
  if (etcd3 !== undefined && error instanceof etcd3.GRPCResourceExhastedError) return false;
  // etcd's own refusals from a live member ("etcdserver: no leader", "leader changed", "request
  // timed out" during an election) are answers too: another member would say the same.
  if (/etcdserver:/.test(error.message)) return false;
  return (etcd3 !== undefined && etcd3.isRecoverableError(error)) || isBrokenCircuitError(error);
}

/** True when `error` says an etcd response was over the connection's `responseBytesMax` (ask for less). */
export function responseTooLarge(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause)
    if (/larger than max/i.test(e.message)) return true;
  return false;
}

/** A client of one etcd cluster with a deadline on every call. */
export class EtcdConnection {
  /** The underlying client (leases and watches use it directly). */
  readonly client: Etcd3;
  /** Deadline of every call, ms. */
  readonly callTimeoutMs: number;
  /** Largest response taken, bytes. */
  readonly responseBytesMax: number;
  /** The highest revision each etcd member (by member id) answered with since etcd last went back. */
  readonly #revisions = new Map<string, bigint>();
  /** The cluster id etcd's answers carry (undefined before the first). */
  #clusterId: string | undefined;
  readonly #wentBackListeners = new Set<(reason: string) => void>();

  constructor(options: EtcdConnectionOptions) {
    if (options.endpoints.length === 0)
      throw new RangeError('at least one etcd endpoint is needed');
    this.callTimeoutMs = options.callTimeoutMs ?? ETCD_CALL_TIMEOUT_MS;
    this.responseBytesMax = options.responseBytesMax ?? ETCD_RESPONSE_BYTES_MAX;
    const avoidance = new MemberAvoidance(options.endpoints.length);
    this.client = new (etcd3Package().Etcd3)({
      hosts: [...options.endpoints],
      dialTimeout: options.dialTimeoutMs ?? ETCD_CALL_TIMEOUT_MS,
      grpcOptions: { 'grpc.max_receive_message_length': this.responseBytesMax },
      faultHandling: {
        host: options.endpoints.length > 1 ? (member) => avoidance.policy(member) : () => noop,
        global: noop,
      },
      defaultCallOptions: (context) =>
        context.isStream ? {} : { deadline: Date.now() + this.callTimeoutMs },
    });
  }

  #deadline(): { deadline: number } {
    return { deadline: Date.now() + this.callTimeoutMs };
  }

  /**
   * Calls `listener` with what happened each time etcd is found to have gone back in time (see the
   * module comment), until the returned function is called.
   */
  onWentBack(listener: (reason: string) => void): () => void {
    this.#wentBackListeners.add(listener);
    return () => this.#wentBackListeners.delete(listener);
  }

  /**
   * Takes the header of an answer etcd gave (through this connection's calls, or a caller's own
   * call on `client`): records its member's revision, and tells the `onWentBack` listeners if the
   * cluster id changed, or, given `before` (what `revisions()` gave when the call was sent), if the
   * member had answered a call with a higher revision before this one was sent. Without `before`
   * no revision is compared: answers of calls in flight together arrive in any order (a txn applied
   * at revision 18 can be answered after one applied at 19), so only a call sent after an answer
   * must see that answer's revision or more.
   */
  observe(header: IResponseHeader | undefined, before?: ReadonlyMap<string, bigint>): void {
    if (header?.member_id === undefined || header.revision === undefined) return;
    const cluster = String(header.cluster_id);
    const member = String(header.member_id);
    const revision = BigInt(header.revision);
    const earlier = before?.get(member);
    const reason =
      this.#clusterId !== undefined && cluster !== this.#clusterId
        ? `etcd's cluster id changed from ${this.#clusterId} to ${cluster} (etcd was restored from a backup, or replaced, while this process ran?)`
        : earlier !== undefined && revision < earlier
          ? `etcd went back in time: member ${member} answered at revision ${revision}, after an answer at ${earlier} (restored from a backup while this process ran?)`
          : undefined;
    this.#clusterId = cluster;
    if (reason === undefined) {
      const highest = this.#revisions.get(member);
      if (highest === undefined || revision > highest) this.#revisions.set(member, revision);
      return;
    }
    // What the restored cluster answers from now on is the new start.
    this.#revisions.clear();
    this.#revisions.set(member, revision);
    for (const listener of [...this.#wentBackListeners]) listener(reason);
  }

  /** The highest revision each member answered with so far (a copy), for `observe`. */
  revisions(): ReadonlyMap<string, bigint> {
    return new Map(this.#revisions);
  }

  /** An answer of `send`, its header observed; a failure becomes an OffsetStoreError (etcdError). */
  async #answer<T extends { header: IResponseHeader }>(
    send: () => Promise<T>,
    what: string,
  ): Promise<T> {
    let response: T;
    try {
      response = await send();
    } catch (error) {
      throw etcdError(error, what);
    }
    this.observe(response.header);
    return response;
  }

  /**
   * One transaction. One that only reads (every operation a range) is sent again when it gets no
   * answer, as a range read is: it changes nothing, so its outcome is never in doubt.
   */
  txn(request: ITxnRequest, what: string): Promise<ITxnResponse> {
    const send = () => this.client.kv.txn(request, this.#deadline());
    return this.#answer(readsOnly(request) ? () => sentAgainIfUnanswered(send) : send, what);
  }

  /**
   * One range read (linearizable unless the request says serializable). A read that gets no answer
   * is sent again, to another member when there is one (the first is avoided for now).
   */
  range(request: IRangeRequest, what: string): Promise<IRangeResponse> {
    return this.#answer(
      () => sentAgainIfUnanswered(() => this.client.kv.range(request, this.#deadline())),
      what,
    );
  }

  /** One delete of a key or a range. */
  deleteRange(request: IDeleteRangeRequest, what: string): Promise<IDeleteRangeResponse> {
    return this.#answer(() => this.client.kv.deleteRange(request, this.#deadline()), what);
  }

  /**
   * Compacts etcd's history up to `revision`, so that its size follows the live keys (deleted log
   * entries stop taking space). A revision already compacted is not an error.
   */
  async compact(revision: number | string, what: string): Promise<void> {
    try {
      await this.client.kv.compact({ revision, physical: false }, this.#deadline());
    } catch (error) {
      if (
        error instanceof Error &&
        /required revision has been compacted|revision has been compacted/.test(error.message)
      )
        return;
      throw etcdError(error, what);
    }
  }

  /** A lease of `ttlSeconds`, kept alive by the client until revoked or lost. */
  lease(ttlSeconds: number): Lease {
    return this.client.lease(ttlSeconds);
  }

  /** Closes the client (in-flight calls fail). */
  close(): void {
    this.client.close();
  }
}

/**
 * `send()`, and once more if it got no answer (a read changes nothing, so sending it again is safe;
 * the member that left it unanswered is avoided now, so the second goes to another).
 */
function sentAgainIfUnanswered<T>(send: () => Promise<T>): Promise<T> {
  return send().catch((error: unknown) => {
    if (!unanswered(error)) throw error;
    return send();
  });
}

/** True for a transaction whose every operation, on success and on failure, is a range read. */
function readsOnly(request: ITxnRequest): boolean {
  const operations = [...(request.success ?? []), ...(request.failure ?? [])];
  return operations.every(
    (op) =>
      op.request_range !== undefined &&
      op.request_put === undefined &&
      op.request_delete_range === undefined &&
      op.request_txn === undefined,
  );
}
