/**
 * NodeLease: a node's etcd lease, kept alive by this class (one keepalive every third of the TTL,
 * each with a deadline of at most a third of the TTL; one that gets no answer is sent again at
 * once, and the connection sends it to another member) rather than by the client's stream, so that the node knows at every moment
 * until when etcd has promised the lease: a keepalive sent at time t and answered with TTL s
 * extends the lease to at least t + s on etcd's side.
 *
 * Invariants:
 * - `valid()` is true only before `confirmedUntilMs - safetyMs` on the monotonic clock
 *   (performance.now, which also runs while the process is stopped), so a node paused past its
 *   lease finds it invalid the moment it resumes, before any timer or keepalive runs. A node serves
 *   its buckets only while `valid()`: after the lease expires etcd deletes its ownership keys and
 *   another node may own them.
 * - `onLost` is called once, when a keepalive is refused (etcd says the lease is gone) or when the
 *   promise runs out with no keepalive answered; the lease is never renewed after that.
 */
import type { Lease } from 'etcd3';
import { OffsetStoreError } from '../errors/index.js';
import { etcdError, type EtcdConnection } from './etcd-connection.js';

/** Delay before a keepalive that got no answer is sent again, ms. */
const KEEPALIVE_RETRY_MS = 50;

/** Options of a node lease. */
export interface NodeLeaseOptions {
  /** TTL of the lease, seconds (etcd's minimum is about 1 s plus the election timeout). */
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
  readonly #lease: Lease;
  /** The lease's id (decimal), once granted. */
  id = '';
  #confirmedUntilMs = 0;
  #timer: NodeJS.Timeout | undefined;
  #lost = false;
  #stopped = false;

  private constructor(connection: EtcdConnection, options: NodeLeaseOptions) {
    this.#connection = connection;
    this.#options = options;
    this.#lease = connection.client.lease(options.ttlSeconds, { autoKeepAlive: false });
    this.#lease.on('lost', () => {}); // keepalives are this class's; a client-side loss is seen by them
  }

  /** Grants a lease and starts keeping it alive. */
  static async grant(connection: EtcdConnection, options: NodeLeaseOptions): Promise<NodeLease> {
    const lease = new NodeLease(connection, options);
    const sentMs = performance.now();
    lease.id = await withDeadline(
      lease.#lease.grant(),
      connection.callTimeoutMs,
      'granting a lease',
    ).catch((error: unknown) => {
      throw etcdError(error, 'granting a lease');
    });
    lease.#confirmedUntilMs = sentMs + options.ttlSeconds * 1000;
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
    // Short enough that a keepalive lost to one member leaves time for another before the lease ends.
    const timeoutMs = Math.min(
      this.#connection.callTimeoutMs,
      (this.#options.ttlSeconds * 1000) / 3,
    );
    try {
      const res = await withDeadline(
        this.#lease.keepaliveOnce({ deadline: Date.now() + timeoutMs }),
        timeoutMs,
        'keeping the lease alive',
      );
      if (Number(res.TTL) <= 0) return this.#lose('etcd says the lease expired');
      this.#confirmedUntilMs = Math.max(this.#confirmedUntilMs, sentMs + Number(res.TTL) * 1000);
    } catch (error) {
      if (/lease.*(not found|expired)|requested lease not found/i.test((error as Error).message))
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

  #lose(reason: string): void {
    if (this.#lost || this.#stopped) return;
    this.#lost = true;
    clearTimeout(this.#timer);
    this.#options.onLost(reason);
  }

  /** Stops keeping the lease alive and, with `revoke`, deletes it (and every key attached to it) now. */
  async stop(revoke: boolean): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    if (revoke && !this.#lost)
      await withDeadline(
        this.#lease.revoke(),
        this.#connection.callTimeoutMs,
        'revoking the lease',
      ).catch(() => {});
    else this.#lease.release();
  }
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
