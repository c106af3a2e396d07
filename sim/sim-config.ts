/**
 * What one simulation runs: the store's configuration, the workload's mix and the faults, all drawn
 * from the seed. In swarm mode (as in TigerBeetle's VOPR) the seed also draws which operations and
 * faults are enabled and how likely each is, so that different seeds explore different corners
 * (a run of only commits and power losses finds other bugs than one heavy on rebalances).
 */
import type { CompactionStrategy } from '../src/index.js';
import { NO_FAULTS, type FaultProfile } from './sim-file-system.js';
import type { SimRandom } from './sim-random.js';
import { JOURNAL_FILE_BYTES_MAX } from '../src/log/index.js';

/** Named fault profiles for `--faults`. */
export const FAULT_PROFILES = {
  none: { io: NO_FAULTS, rot: 0, latent: 0, lostSector: 0, lostFile: 0 },
  crash: { io: NO_FAULTS, rot: 0, latent: 0, lostSector: 0, lostFile: 0 },
  io: {
    io: {
      writeError: 0.002,
      readError: 0.001,
      syncError: 0.002,
      dirOpError: 0.001,
      noSpace: 0.001,
    },
    rot: 0,
    latent: 0,
    lostSector: 0,
    lostFile: 0,
  },
  rest: { io: NO_FAULTS, rot: 0.002, latent: 0.001, lostSector: 0.001, lostFile: 0.0005 },
  // Faults at rest end a run once detected, so they are rarer here than I/O errors, which the
  // store survives by restarting.
  all: {
    io: {
      writeError: 0.001,
      readError: 0.0005,
      syncError: 0.001,
      dirOpError: 0.0005,
      noSpace: 0.0005,
    },
    rot: 0.0002,
    latent: 0.0001,
    lostSector: 0.0001,
    lostFile: 0.00004,
  },
} as const satisfies Record<string, FaultRates>;

/** Fault probabilities: per I/O operation (`io`), per workload action (the faults at rest). */
export interface FaultRates {
  io: FaultProfile;
  /** A bit flipped in durable data. */
  rot: number;
  /** A sector whose reads fail until rewritten. */
  latent: number;
  /** A durable sector read back as zeros. */
  lostSector: number;
  /** A file gone. */
  lostFile: number;
}

/** A fault profile's name. */
export type FaultProfileName = keyof typeof FAULT_PROFILES;

/** Relative weights of the workload's actions. */
export interface ActionWeights {
  commit: number;
  bigCommit: number;
  fetch: number;
  reset: number;
  deleteOffsets: number;
  deleteGroup: number;
  join: number;
  leave: number;
  silence: number;
  zombieCommit: number;
  memberCommit: number;
  compact: number;
  /** store.convertCompaction to a random built-in strategy. */
  convert: number;
  advanceTime: number;
  crash: number;
  powerLoss: number;
  restart: number;
}

/** Everything a run does, from its seed. */
export interface SimConfig {
  bucketCount: number;
  segmentBytesMax: number;
  /** Size from which the commit journal starts a new file (small: a run goes through many). */
  journalFileBytesMax: number;
  /**
   * Bytes of batches in the active segment from which a log prepares its next segment (a quarter
   * of the segment, in half the runs: small segments never reach the default 256 KiB).
   */
  prepareAtBytes: number | undefined;
  /**
   * Chance per action that a backup (`store.backup`) starts, when none is running; drawn from a
   * stream of its own, like the backups themselves, so the workload's draws stay those older seeds
   * made.
   */
  backupChance: number;
  /**
   * Chance that a process opens the store in durability 'os' rather than 'fsync' (0 in most runs);
   * each open draws its own.
   */
  osShare: number;
  /**
   * Chance that a process opens the store with `awaitRecovery: false`, so that the workload runs
   * while buckets still recover (0 in most runs); each open draws its own.
   */
  lazyOpenShare: number;
  /**
   * Chance per action that a read-only view of the store (`readOnly: true`) is opened beside the
   * live process and checked; drawn from a stream of its own, as backups.
   */
  viewChance: number;
  /**
   * Chance that a process's file system offers fdatasyncs on the calling thread
   * (`FileHandle.datasyncNow`, which the real one makes when one log flushes alone); each open
   * draws its own.
   */
  syncNowShare: number;
  strategy: CompactionStrategy;
  compactionIntervalMs: number;
  minDirtyRatio: number;
  deleteRetentionMs: number;
  retentionMs: number;
  retentionCheckMs: number;
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  assignmentIntervalMs: number;
  /** Groups committed to by an admin (no members) and groups with members. */
  adminGroups: string[];
  memberGroups: string[];
  /** Buckets per table for tables 1 and 2 (the ones members subscribe to). */
  tableBuckets: [number, number];
  maxInFlight: number;
  weights: ActionWeights;
  faults: FaultRates;
}

const BASE_WEIGHTS: ActionWeights = {
  commit: 30,
  bigCommit: 1.5,
  fetch: 20,
  reset: 2,
  deleteOffsets: 2,
  deleteGroup: 0.7,
  join: 2,
  leave: 1,
  silence: 0.7,
  zombieCommit: 2,
  memberCommit: 12,
  compact: 1.5,
  convert: 0.3,
  advanceTime: 6,
  crash: 0.6,
  powerLoss: 0.6,
  restart: 0.4,
};

/** The run's configuration: fixed shape with `swarm` false, everything varied per seed with it true. */
export function configFor(random: SimRandom, faults: FaultProfileName, swarm: boolean): SimConfig {
  const weights = { ...BASE_WEIGHTS };
  let profile: FaultRates = FAULT_PROFILES[faults];
  if (swarm) {
    for (const key of Object.keys(weights) as (keyof ActionWeights)[]) {
      // Each action off with probability 1/4 (commits and fetches always on), else scaled 0.2x-3x.
      if (key !== 'commit' && key !== 'fetch' && random.chance(0.25)) weights[key] = 0;
      else weights[key] *= 0.2 + random.float() * 2.8;
    }
    // Each kind of fault on with probability 1/2, then all scaled 0-2x together.
    const scale = random.float() * 2;
    const rate = (p: number): number => (random.chance(0.5) ? p * scale : 0);
    profile = {
      io: Object.fromEntries(
        Object.entries(profile.io).map(([k, v]) => [k, rate(v)]),
      ) as unknown as FaultProfile,
      rot: rate(profile.rot),
      latent: rate(profile.latent),
      lostSector: rate(profile.lostSector),
      lostFile: rate(profile.lostFile),
    };
  }
  const groupCount = random.int(1, swarm ? 6 : 3);
  const config: Omit<SimConfig, 'prepareAtBytes'> = {
    bucketCount: random.pick([1, 2, 4, 8]),
    segmentBytesMax: random.pick([1024, 4096, 16384, 65536]),
    // From a stream of its own: the draws above and below stay those older seeds made.
    journalFileBytesMax: random.fork('journal').pick([8192, 32_768, JOURNAL_FILE_BYTES_MAX]),
    backupChance: random.fork('backup').pick([0, 0.004, 0.02]),
    osShare: random.fork('durability').pick([0, 0, 0, 0.5, 1]),
    lazyOpenShare: random.fork('lazy-open').pick([0, 0, 0.5]),
    viewChance: random.fork('view').pick([0, 0, 0.01, 0.05]),
    syncNowShare: random.fork('sync-now').pick([0, 0.5, 1]),
    strategy: random.pick<CompactionStrategy>([
      'log-cleaner',
      'log-cleaner',
      'incremental',
      'incremental',
      'checkpoint',
      'none',
    ]),
    compactionIntervalMs: random.int(500, 20_000),
    minDirtyRatio: random.pick([0.05, 0.2, 0.5]),
    deleteRetentionMs: random.pick([0, 1000, 60_000]),
    retentionMs: random.pick([30_000, 120_000, 600_000]),
    retentionCheckMs: random.pick([1000, 5000]),
    sessionTimeoutMs: random.pick([6000, 10_000]),
    heartbeatIntervalMs: random.pick([1000, 2000]),
    assignmentIntervalMs: random.pick([0, 0, 1000]),
    adminGroups: Array.from({ length: groupCount }, (_, i) => `admin-${i}`),
    memberGroups: Array.from({ length: random.int(1, 2) }, (_, i) => `team-${i}`),
    tableBuckets: [random.int(1, 8), random.int(1, 4)],
    maxInFlight: random.int(1, 12),
    weights,
    faults: profile,
  };
  return {
    ...config,
    // From a stream of its own, as journalFileBytesMax.
    prepareAtBytes: random.fork('prepare').chance(0.5) ? config.segmentBytesMax / 4 : undefined,
  };
}
