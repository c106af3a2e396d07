/**
 * GroupSettings: the coordinator settings a store or an embedder chooses (heartbeat interval, default
 * session and rebalance timeouts, group size limit, assignment pacing, the classic protocol's initial
 * rebalance delay and new-member join timeout), their defaults and their
 * rules — in one place. `OffsetStore.open` resolves its `group` option here before it touches the
 * disk, and the GroupCoordinator constructor resolves its own options here too, so both edges
 * apply the same rules.
 *
 * Wrong types are TypeError, values out of range RangeError, naming the option (`options.group.x`).
 * Durations are bounded by MEMBER_TIMEOUT_MS_MAX (one day), as heartbeat requests are: a timer
 * longer than 2^31 - 1 ms would fire at once.
 */
import { checkOptionsObject } from '../util/index.js';
import { MEMBER_TIMEOUT_MS_MAX } from './heartbeat.js';

/** Coordinator settings with every field present. */
export interface GroupSettings {
  /** Sent to members as the interval between heartbeats. */
  readonly heartbeatIntervalMs: number;
  /** Session timeout of members that do not ask for one. */
  readonly sessionTimeoutMs: number;
  /** Rebalance timeout of members that do not ask for one. */
  readonly rebalanceTimeoutMs: number;
  /** Most members one group may have (GROUP_MAX_SIZE_REACHED beyond). */
  readonly groupMembersMax: number;
  /** Least time between two target assignment computations of a group (0 = compute on every change). */
  readonly assignmentIntervalMs: number;
  /**
   * Classic groups: how long a group's first rebalance (from Empty) waits for more members, extended
   * by this much while members keep joining, up to the rebalance timeout (Kafka's
   * `group.initial.rebalance.delay.ms`; 0 = no wait beyond the current turn of the event loop).
   */
  readonly initialRebalanceDelayMs: number;
  /**
   * Classic groups: how long a new member's JoinGroup may stay parked before the member is removed
   * (5 minutes, Kafka's fixed new-member join timeout; a setting here so tests can shorten it).
   */
  readonly newMemberJoinTimeoutMs: number;
}

/** Defaults of the settings. */
export const GROUP_SETTINGS_DEFAULTS: GroupSettings = Object.freeze({
  heartbeatIntervalMs: 5000,
  sessionTimeoutMs: 45_000,
  rebalanceTimeoutMs: 60_000,
  groupMembersMax: 4096,
  assignmentIntervalMs: 0,
  initialRebalanceDelayMs: 3000,
  newMemberJoinTimeoutMs: 300_000,
});

/** The names of the settings: any other key of a user's settings object is refused. */
export const GROUP_SETTING_NAMES: readonly string[] = Object.keys(GROUP_SETTINGS_DEFAULTS);

/**
 * Checks `options` (undefined = all defaults) and fills in `defaults`; `name` is how errors call the
 * options object, e.g. `options.group`.
 */
export function resolveGroupSettings(
  options: Partial<GroupSettings> | undefined,
  name: string,
  defaults: GroupSettings = GROUP_SETTINGS_DEFAULTS,
): GroupSettings {
  if (options !== undefined) checkOptionsObject(options, name);
  const field = <K extends keyof GroupSettings>(key: K, min: number, max: number): number => {
    const given: unknown = options?.[key]; // read once: the value checked is the value kept
    const value: unknown = given === undefined ? defaults[key] : given;
    if (typeof value !== 'number')
      throw new TypeError(`${name}.${key} must be a number, got ${typeof value}`);
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      throw new RangeError(
        `${name}.${key} must be an integer ${max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in [${min}, ${max}]`}, got ${value}`,
      );
    }
    return value;
  };
  return {
    heartbeatIntervalMs: field('heartbeatIntervalMs', 1, MEMBER_TIMEOUT_MS_MAX),
    sessionTimeoutMs: field('sessionTimeoutMs', 1, MEMBER_TIMEOUT_MS_MAX),
    rebalanceTimeoutMs: field('rebalanceTimeoutMs', 1, MEMBER_TIMEOUT_MS_MAX),
    groupMembersMax: field('groupMembersMax', 1, Number.MAX_SAFE_INTEGER),
    assignmentIntervalMs: field('assignmentIntervalMs', 0, MEMBER_TIMEOUT_MS_MAX),
    initialRebalanceDelayMs: field('initialRebalanceDelayMs', 0, MEMBER_TIMEOUT_MS_MAX),
    newMemberJoinTimeoutMs: field('newMemberJoinTimeoutMs', 1, MEMBER_TIMEOUT_MS_MAX),
  };
}
