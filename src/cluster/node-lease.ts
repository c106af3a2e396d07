/**
 * NodeLease: a node's etcd lease, kept alive by this class (one keepalive every third of the TTL,
 * each with a deadline of at most a third of the TTL; one that gets no answer is sent again at
 * once, and the connection sends it to another member) rather than by the client's stream, so that the node knows at every moment
 * until when etcd has promised the lease: a grant or keepalive sent at time t and answered with TTL
 * s extends the lease to at least t + s on etcd's side. The TTL counted on is the one etcd answered
 * (it raises one below its minimum), and a TTL must be a whole number of seconds (etcd truncates a
 * fraction, which would end the lease before the node thinks).
 *
 * Invariants:
 * - `valid()` is true only before `confirmedUntilMs - safetyMs` on the monotonic clock
 *   (performance.now, which also runs while the process is stopped), so a node paused past its
 *   lease finds it invalid the moment it resumes, before any timer or keepalive runs. A node serves
 *   its buckets only while `valid()`: after the lease expires etcd deletes its ownership keys and
 *   another node may own them.
 * - `onLost` is called once, when a keepalive is refused (etcd says the lease is gone), when the
 *   promise runs out with no keepalive answered, or when etcd went back in time (a member answered
 *   a keepalive with a lower revision than it answered a call of the connection with before the
 *   keepalive was sent, or the cluster id changed: restored from a backup while the node ran,
 *   EtcdConnection.observe); the lease is never renewed after that. A restore brings the
 *   lease back with everything else, so its keepalives would go on succeeding while the node's
 *   buckets held commits etcd no longer has; losing it makes the node load them again.
 */
import type { ILeaseKeepAliveResponse } from 'etcd3';
import { OffsetStoreError } from '../errors/index.js';
import { etcdError, leaseGone, type EtcdConnection } from './etcd-connection.js';

/**
 * Longest lease TTL taken, seconds (an hour). Failover takes about the TTL, and a third of it must fit
 * a timer (2^31 - 1 ms, past which Node fires timers at once, so keepalives would spin).
 */
export const LEASE_TTL_SECONDS_MAX = 3600;

/** Delay before a keepalive that got no answer is sent again, ms. */
const KEEPALIVE_RETRY_MS = 50;

/** Options of a node lease. */
export interface NodeLeaseOptions {
  /**
   * TTL of the lease, seconds: a whole number from 1 (etcd raises it to its minimum, about one and
   * a half election timeouts) to LEASE_TTL_SECONDS_MAX; RangeError otherwise (etcd would truncate a
   * fraction).
   */
  ttlSeconds: number;
  /** Margin before the promised end at which `valid()` turns false, ms; default a sixth of the TTL. */
  safetyMs?: number;
  /** Called once when the lease is lost. */
  onLost: (reason: string) => void;
}

/** A node's lease in etcd. */
export class NodeLease {
  readonly #connection: EtcdConnection;
  readonly #options: NodeLeaseOptions;
  /** The lease's id (decimal), once granted. */
  id = '';
  /** The TTL etcd granted, seconds (at least the one asked for). */
  ttlSeconds = 0;
  #confirmedUntilMs = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Stops listening for etcd going back in time. */
  #stopListening: () => void = () => {};
  #lost = false;
  #stopped = false;

  private constructor(connection: EtcdConnection, options: NodeLeaseOptions) {
    this.#connection = connection;
    this.#options = options;
  }

  /** Grants a lease and starts keeping it alive. */
  static async grant(connection: EtcdConnection, options: NodeLeaseOptions): Promise<NodeLease> {
    checkLeaseTtl(options.ttlSeconds, 'ttlSeconds');
    const lease = new NodeLease(connection, options);
    const sentMs = performance.now();
    const granted = await withDeadline(
      connection.client.leaseClient.leaseGrant({ TTL: options.ttlSeconds }),
      connection.callTimeoutMs,
      'granting a lease',
    ).catch((error: unknown) => {
      throw etcdError(error, 'granting a lease');
    });
    connection.observe(granted.header);
    lease.#stopListening = connection.onWentBack((reason) => lease.#lose(reason));
    lease.id = String(granted.ID);
    // What etcd promised, not what was asked: the two differ when etcd raises a TTL to its minimum.
    lease.ttlSeconds = Number(granted.TTL);
    lease.#confirmedUntilMs = sentMs + lease.ttlSeconds * 1000;
    lease.#schedule();
    return lease;
  }

  /** True while etcd has promised the lease for longer than the safety margin. */
  valid(): boolean {
    return !this.#lost && performance.now() < this.#confirmedUntilMs - this.#safetyMs();
  }

  /** True once the lease was lost. */
  get lost(): boolean {
    return this.#lost;
  }

  /**
   * Runs `call`, a request made under this lease (`what` names it). When etcd refuses it as made
   * under a lease it no longer has (etcd-connection's `leaseGone`), the lease is lost now (`onLost`
   * hears why), not at the next keepalive, and the call resolves undefined: nothing was applied.
   */
  async unlessGone<T>(what: string, call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (error) {
      if (!leaseGone(error)) throw error;
      this.#lose(`etcd refused ${what} under it: ${(error as Error).message}`);
      return undefined;
    }
  }

  #safetyMs(): number {
    return this.#options.safetyMs ?? (this.#options.ttlSeconds * 1000) / 6;
  }

  #schedule(delayMs = (this.#options.ttlSeconds * 1000) / 3): void {
    if (this.#stopped || this.#lost) return;
    this.#timer = setTimeout(() => void this.#keepAlive(), delayMs);
  }

  async #keepAlive(): Promise<void> {
    if (this.#stopped || this.#lost) return;
    if (performance.now() >= this.#confirmedUntilMs)
      return this.#lose('no keepalive was answered before the lease ran out');
    const sentMs = performance.now();
    const revisions = this.#connection.revisions();
    // Short enough that a keepalive lost to one member leaves time for another before the lease ends.
    const timeoutMs = Math.min(
      this.#connection.callTimeoutMs,
      (this.#options.ttlSeconds * 1000) / 3,
    );
    try {
      const res = await withDeadline(
        this.#keepAliveOnce(Date.now() + timeoutMs),
        timeoutMs,
        'keeping the lease alive',
      );
      this.#connection.observe(res.header, revisions);
      if (this.#lost) return;
      if (Number(res.TTL) <= 0) return this.#lose('etcd says the lease expired');
      this.#confirmedUntilMs = Math.max(this.#confirmedUntilMs, sentMs + Number(res.TTL) * 1000);
    } catch (error) {
      if (leaseGone(error) || /lease.*(not found|expired)/i.test((error as Error).message))
        return this.#lose(`etcd refused the keepalive: ${(error as Error).message}`);
      // No answer: try again soon (the member that did not answer is avoided for now); the lease
      // runs out on its own if no answer comes.
      if (performance.now() >= this.#confirmedUntilMs)
        return this.#lose('no keepalive was answered before the lease ran out');
      this.#schedule(KEEPALIVE_RETRY_MS);
      return;
    }
    if (performance.now() >= this.#confirmedUntilMs)
      return this.#lose('no keepalive was answered before the lease ran out');
    this.#schedule();
  }

  /** One keepalive on a stream of its own (ended once answered); etcd answers TTL 0 for a lease it no longer has. */
  async #keepAliveOnce(deadline: number): Promise<ILeaseKeepAliveResponse> {
    const stream = await this.#connection.client.leaseClient.leaseKeepAlive({ deadline });
    try {
      return await new Promise<ILeaseKeepAliveResponse>((resolve, reject) => {
        stream.on('data', resolve);
        stream.on('error', reject);
        stream.write({ ID: this.id });
      });
    } finally {
      stream.end();
    }
  }

  #lose(reason: string): void {
    if (this.#lost || this.#stopped) return;
    this.#lost = true;
    clearTimeout(this.#timer);
    this.#stopListening();
    this.#options.onLost(reason);
  }

  /** Stops keeping the lease alive and, with `revoke`, deletes it (and every key attached to it) now. */
  async stop(revoke: boolean): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#stopListening();
    if (revoke && !this.#lost)
      await withDeadline(
        this.#connection.client.leaseClient.leaseRevoke({ ID: this.id }),
        this.#connection.callTimeoutMs,
        'revoking the lease',
      ).catch(() => {});
  }
}

/**
 * Refuses a lease TTL that is not a whole number of seconds from 1 to LEASE_TTL_SECONDS_MAX:
 * TypeError for a non-number, RangeError otherwise, naming the option `name`. (etcd truncates a
 * fraction: a lease granted for 4.9 s ends after 4, while this class would count on 4.9.)
 */
export function checkLeaseTtl(ttlSeconds: unknown, name: string): void {
  if (typeof ttlSeconds !== 'number')
    throw new TypeError(`${name} must be a number, got ${typeof ttlSeconds}`);
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > LEASE_TTL_SECONDS_MAX)
    throw new RangeError(
      `${name} must be an integer number of seconds in [1, ${LEASE_TTL_SECONDS_MAX}], got ${ttlSeconds}`,
    );
}

/** `promise`, or a rejection after `timeoutMs`. */
async function withDeadline<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new OffsetStoreError(
                'REQUEST_TIMED_OUT',
                `${what}: no answer from etcd in ${timeoutMs} ms`,
              ),
            ),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
