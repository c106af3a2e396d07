/**
 * Slows down password guessing per client address, without slowing the server (the way Kafka's
 * broker delays the answer to a failed authentication, connection.failed.authentication.delay.ms,
 * and caps connections per address).
 *
 * Rules:
 * - a failed authentication is answered only after a delay that doubles with each failure of its
 *   address in the current window (failureDelayMs, 2x, 4x, ... up to failureDelayMsMax); the
 *   connection holds no thread meanwhile, only a timer on the server's clock, and is then closed;
 * - at most `handshakesPerAddressMax` authentications of one address are in progress at once
 *   (from SaslHandshake to the answer of the last SaslAuthenticate, failure delay included); one
 *   more is refused at once by closing its connection, before any password is checked, so a flood
 *   of guesses costs the server a bounded amount of hashing and memory;
 * - a success does not reset the failures of its address (an attacker and a user behind one
 *   address cannot launder guesses through the user's logins); failures are forgotten
 *   `failureWindowMs` after the last one;
 * - at most `addressesMax` addresses are tracked; past it the one idle longest is forgotten.
 */
import { elapsedMs, type Clock } from '../../util/index.js';

/** Settings of the throttle. */
export interface LoginThrottleSettings {
  /** Delay of the first failed answer of an address; default 100 ms (Kafka's default). */
  readonly failureDelayMs: number;
  /** The longest delay; default 5 s. */
  readonly failureDelayMsMax: number;
  /** Authentications of one address in progress at once; default 16. */
  readonly handshakesPerAddressMax: number;
}

/** The defaults. */
export const LOGIN_THROTTLE_DEFAULTS: LoginThrottleSettings = {
  failureDelayMs: 100,
  failureDelayMsMax: 5000,
  handshakesPerAddressMax: 16,
};

const FAILURE_WINDOW_MS = 60_000;
const ADDRESSES_MAX = 65_536;

interface AddressState {
  inProgress: number;
  failures: number;
  lastFailureMs: number;
}

/** Per-address accounting of authentications. */
export class LoginThrottle {
  readonly #settings: LoginThrottleSettings;
  readonly #clock: Clock;
  /** In insertion order; re-inserted on use, so the first is the one idle longest. */
  readonly #addresses = new Map<string, AddressState>();
  #refused = 0;
  #failed = 0;

  constructor(settings: LoginThrottleSettings, clock: Clock) {
    this.#settings = settings;
    this.#clock = clock;
  }

  /** Authentications refused at once (the address had too many in progress). */
  get refusedCount(): number {
    return this.#refused;
  }

  /** Failed authentications so far. */
  get failedCount(): number {
    return this.#failed;
  }

  /** Starts an authentication of `address`; false (and nothing recorded) when it has too many in progress. */
  begin(address: string): boolean {
    const state = this.#state(address);
    if (state.inProgress >= this.#settings.handshakesPerAddressMax) {
      this.#refused++;
      return false;
    }
    state.inProgress++;
    return true;
  }

  /** Ends an authentication begun by `begin` (success, failure once answered, or a closed connection). */
  end(address: string): void {
    const state = this.#addresses.get(address);
    if (state === undefined || state.inProgress === 0) return;
    state.inProgress--;
  }

  /** Records a failure of `address`; returns how long to hold its answer. */
  failed(address: string): number {
    this.#failed++;
    const state = this.#state(address);
    const nowMs = elapsedMs(this.#clock);
    if (nowMs - state.lastFailureMs > FAILURE_WINDOW_MS) state.failures = 0;
    state.lastFailureMs = nowMs;
    const { failureDelayMs, failureDelayMsMax } = this.#settings;
    const delayMs = Math.min(failureDelayMsMax, failureDelayMs * 2 ** Math.min(state.failures, 30));
    state.failures++;
    return delayMs;
  }

  #state(address: string): AddressState {
    let state = this.#addresses.get(address);
    if (state !== undefined) {
      this.#addresses.delete(address);
    } else {
      state = { inProgress: 0, failures: 0, lastFailureMs: -Infinity };
      if (this.#addresses.size >= ADDRESSES_MAX) this.#forgetOne();
    }
    this.#addresses.set(address, state);
    return state;
  }

  #forgetOne(): void {
    for (const [address, state] of this.#addresses) {
      if (state.inProgress === 0) {
        this.#addresses.delete(address);
        return;
      }
    }
  }
}
