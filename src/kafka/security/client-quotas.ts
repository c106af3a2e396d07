/**
 * Client quotas, as Kafka's ClientQuotaManager applies them: a client that uses more than its quota
 * is slowed down, not refused and not allowed to slow the server. Two measures over a sliding
 * window of `windowCount` samples of `windowMs` each (Kafka's
 * quota.window.num = 11, quota.window.size.seconds = 1):
 * - bytes: request plus response bytes per second (`bytesPerSecond`);
 * - request time: the server's time spent handling the client's requests, as a percentage of one
 *   thread (`requestPercentage`, Kafka's request quota; 100 = one thread's whole time).
 *
 * When a measure's rate is over its bound, the client's response carries `throttle_time_ms` =
 * (rate - bound) / bound * window, capped at one window span (Kafka's formula), and its connection
 * is muted (not read) for that long (KIP-219: the response goes out at once, the client is expected
 * to wait, and the server stops reading in case it does not). The quota of a client is the first
 * of: its principal's, its client id's, the default; none means unlimited. Its usage is counted
 * for whom the quota names, as Kafka counts it for the quota's entity: a principal's quota is
 * shared by all that principal's connections and client ids, a client id's by every client with
 * that id; the default is counted per principal, and per client id among anonymous clients (whose
 * client id is all that tells them apart). At most KEYS_MAX usages are tracked; past it the
 * idle-longest is forgotten.
 */
import { ANONYMOUS } from './connection-session.js';
import { elapsedMs, type Clock } from '../../util/index.js';

/** Limits of one client. */
export interface QuotaLimits {
  /** Request plus response bytes per second. */
  readonly bytesPerSecond?: number;
  /** Server time handling the client's requests, percent of one thread. */
  readonly requestPercentage?: number;
}

/** Quotas of a server. */
export interface QuotaOptions {
  /** For every client without one of its own. */
  readonly default?: QuotaLimits;
  /** By principal (`User:alice`); wins over clientIds and default. */
  readonly principals?: Readonly<Record<string, QuotaLimits>>;
  /** By client id; wins over default. */
  readonly clientIds?: Readonly<Record<string, QuotaLimits>>;
  /** Samples in the window; default 11. */
  readonly windowCount?: number;
  /** Length of a sample; default 1000 ms. */
  readonly windowMs?: number;
}

const KEYS_MAX = 10_000;

/** A rate over a sliding window of samples. */
class Rate {
  readonly #windowMs: number;
  readonly #samples: { startMs: number; value: number }[] = [];
  readonly #count: number;

  constructor(windowMs: number, count: number) {
    this.#windowMs = windowMs;
    this.#count = count;
  }

  record(nowMs: number, value: number): void {
    const last = this.#samples[this.#samples.length - 1];
    if (last !== undefined && nowMs - last.startMs < this.#windowMs) {
      last.value += value;
    } else {
      this.#samples.push({ startMs: nowMs, value });
      if (this.#samples.length > this.#count) this.#samples.shift();
    }
  }

  /** Per second, over the samples still in the window (the span counts at least all but the current sample in full, as Kafka's Rate does). */
  perSecond(nowMs: number): number {
    const oldest = nowMs - this.#windowMs * this.#count;
    while (this.#samples.length > 0 && this.#samples[0]!.startMs + this.#windowMs <= oldest)
      this.#samples.shift();
    if (this.#samples.length === 0) return 0;
    const total = this.#samples.reduce((sum, s) => sum + s.value, 0);
    const spanMs = Math.max(nowMs - this.#samples[0]!.startMs, this.#windowMs * (this.#count - 1));
    return (total * 1000) / spanMs;
  }

  get spanMs(): number {
    return this.#windowMs * this.#count;
  }
}

interface ClientUsage {
  readonly bytes: Rate;
  readonly timeMs: Rate;
}

/** Per-client usage and throttling. */
export class ClientQuotas {
  readonly #options: QuotaOptions;
  readonly #clock: Clock;
  readonly #windowMs: number;
  readonly #windowCount: number;
  readonly #usage = new Map<string, ClientUsage>();
  #throttled = 0;

  constructor(options: QuotaOptions, clock: Clock) {
    this.#options = options;
    this.#clock = clock;
    this.#windowMs = options.windowMs ?? 1000;
    this.#windowCount = options.windowCount ?? 11;
  }

  /** Responses that carried a throttle time. */
  get throttledCount(): number {
    return this.#throttled;
  }

  /** True when some quota is set (else the server skips the accounting). */
  get enabled(): boolean {
    const { default: d, principals, clientIds } = this.#options;
    return (
      d !== undefined ||
      Object.keys(principals ?? {}).length > 0 ||
      Object.keys(clientIds ?? {}).length > 0
    );
  }

  /**
   * The quota that applies and the key its usage is counted under (see the module comment): the
   * usage is that of whom the quota names, so a principal cannot leave its quota behind by
   * changing client id from request to request.
   */
  #quota(principal: string, clientId: string): { limits: QuotaLimits; key: string } | undefined {
    const { principals, clientIds } = this.#options;
    // Own keys only: a client id such as `constructor` or `__proto__` must not find what every
    // object inherits (and so escape the default quota).
    const byPrincipal =
      principals !== undefined && Object.hasOwn(principals, principal)
        ? principals[principal]
        : undefined;
    if (byPrincipal !== undefined) return { limits: byPrincipal, key: `p\0${principal}` };
    const byClientId =
      clientIds !== undefined && Object.hasOwn(clientIds, clientId)
        ? clientIds[clientId]
        : undefined;
    if (byClientId !== undefined) return { limits: byClientId, key: `c\0${clientId}` };
    const byDefault = this.#options.default;
    if (byDefault === undefined) return undefined;
    return {
      limits: byDefault,
      key: principal === ANONYMOUS ? `d\0${principal}\0${clientId}` : `d\0${principal}`,
    };
  }

  /**
   * Records one request of a client (`bytes` in and out, `timeMs` of handling) and returns how long
   * it must be throttled (0: not at all).
   */
  record(principal: string, clientId: string, bytes: number, timeMs: number): number {
    const quota = this.#quota(principal, clientId);
    if (quota === undefined) return 0;
    const { limits, key } = quota;
    let usage = this.#usage.get(key);
    if (usage === undefined) {
      if (this.#usage.size >= KEYS_MAX) this.#usage.delete(this.#usage.keys().next().value!);
      usage = {
        bytes: new Rate(this.#windowMs, this.#windowCount),
        timeMs: new Rate(this.#windowMs, this.#windowCount),
      };
    } else {
      this.#usage.delete(key);
    }
    this.#usage.set(key, usage);
    const nowMs = elapsedMs(this.#clock);
    usage.bytes.record(nowMs, bytes);
    usage.timeMs.record(nowMs, timeMs);
    let throttleMs = 0;
    if (limits.bytesPerSecond !== undefined)
      throttleMs = Math.max(throttleMs, throttleFor(usage.bytes, nowMs, limits.bytesPerSecond));
    if (limits.requestPercentage !== undefined)
      throttleMs = Math.max(
        throttleMs,
        throttleFor(usage.timeMs, nowMs, limits.requestPercentage * 10),
      );
    if (throttleMs > 0) this.#throttled++;
    return throttleMs;
  }
}

/** Kafka's throttle time: (rate - bound) / bound * window, capped at the window span. */
function throttleFor(rate: Rate, nowMs: number, bound: number): number {
  const observed = rate.perSecond(nowMs);
  if (observed <= bound) return 0;
  return Math.min(rate.spanMs, Math.ceil(((observed - bound) / bound) * rate.spanMs));
}
