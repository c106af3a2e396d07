/**
 * The public types of OffsetStore (requests, results, options) and the resolution of options into
 * validated settings with their defaults. Wrong option types are programmer errors (TypeError /
 * RangeError); options that contradict the store on disk are checked when it is opened.
 */
import * as path from 'node:path';
import {
  STARVED_JOB_MS,
  isCompactionStrategy,
  isStrategyModulePath,
  strategyModuleUrl,
  type BucketCompactedListener,
  type CompactionRunListener,
  type CompactionStrategy,
  type StrategyRef,
} from './compaction/index.js';
import { OffsetStoreError } from './errors/index.js';
import { NodeFileSystem, OverlayFileSystem, realPathOf, type FileSystem } from './io/index.js';
import type { CheckpointInfo, CommittedOffsetValue } from './kv/index.js';
import { JOURNAL_FILE_BYTES_MAX, LOG_DEFAULTS, type Durability } from './log/index.js';
import {
  GROUP_SETTINGS_DEFAULTS,
  resolveGroupSettings,
  GROUP_SETTING_NAMES,
  type ClassicGroupDescription,
  type GroupSettings,
  type MemberDescription,
} from './group/index.js';
import {
  callUserCallback,
  checkClock,
  checkOptionsBag,
  failureMessage,
  refuseUnknownOptions,
  SystemClock,
  TIMER_MS_MAX,
  withoutTimers,
  type Clock,
  type Timer,
} from './util/index.js';
import type { BucketRef } from './model/index.js';

/** One offset to commit: the next offset the group will read in the bucket. */
export interface OffsetCommit extends BucketRef {
  /**
   * The next offset the group will read in the bucket (last processed + 1): any safe integer. Negative
   * values are kept as they are (Kafka clients commit the sentinels -1 latest and -2 earliest).
   */
  offset: number;
  /** Leader epoch the offset was read under, an integer in [-1, 2^31 - 1]; default -1 (unknown). */
  leaderEpoch?: number;
  /**
   * Caller's metadata stored with the offset, at most 4096 UTF-8 bytes (OFFSET_METADATA_TOO_LARGE
   * beyond); default ''.
   */
  metadata?: string;
}

/** A committed offset as fetched. */
export type CommittedOffset = CommittedOffsetValue;

/**
 * Who commits: omitted for an admin or manual commit. A consumer-protocol member gives `memberId`
 * and `memberEpoch`; a classic-protocol member `generationId` and `memberId` (and its
 * `groupInstanceId` if static), as Kafka's OffsetCommit carries them.
 */
export interface CommitOptions {
  /**
   * The committing member; without it the commit is made without membership, refused
   * (UNKNOWN_MEMBER_ID) while the group has members.
   */
  memberId?: string;
  /**
   * The consumer-protocol member's current epoch, required with `memberId` unless `generationId` is
   * given: an older one is STALE_MEMBER_EPOCH, a newer one FENCED_MEMBER_EPOCH.
   */
  memberEpoch?: number;
  /**
   * A classic-protocol commit: the member's generation (ILLEGAL_GENERATION unless the group's;
   * REBALANCE_IN_PROGRESS while the group waits for its leader's assignment). -1 (any negative) with
   * no `memberId` (or '') and no `groupInstanceId` is a commit without membership, as Kafka's admin
   * commits are. Not together with `memberEpoch` (INVALID_REQUEST).
   */
  generationId?: number;
  /** With `generationId`: the static member's instance id (FENCED_INSTANCE_ID when another member holds it now). */
  groupInstanceId?: string | null;
}

/** Options of `deleteOffsets`. */
export interface DeleteOffsetsOptions {
  /**
   * How to read the subscriptions of a classic group with members (whose protocol metadata the
   * store cannot read itself): the tables its members subscribe to, or undefined when they cannot be
   * read (a protocol the caller does not know). Called while the delete is checked, with the group
   * as it is then. Without it, or when it answers undefined, no offset of a classic group with
   * members may be deleted (NON_EMPTY_GROUP); with it, only buckets of the tables it names are
   * refused (GROUP_SUBSCRIBED_TO_BUCKET). The Kafka front end reads the consumer protocol's
   * subscriptions this way, as Kafka's coordinator does.
   */
  classicSubscriptions?: (group: ClassicGroupDescription) => ReadonlySet<number> | undefined;
}

/** Fetch options. */
export interface FetchOptions {
  /** Reject with UNSTABLE_OFFSET_COMMIT instead of returning a value a pending commit is about to change. */
  requireStable?: boolean;
  /**
   * The fetching member of a consumer-protocol group (Kafka's OffsetFetch v9): refused with
   * UNKNOWN_MEMBER_ID when the group has no such member, STALE_MEMBER_EPOCH when its epoch is not
   * `memberEpoch`. Not checked for a classic group or a group with offsets only (as Kafka).
   */
  member?: { memberId: string; memberEpoch: number };
}

/** Options of `OffsetStore.open`. */
export interface OffsetStoreOptions {
  /** The store directory (resolved against the working directory); created with its parents if missing. */
  dir: string;
  /** Number of offsets-buckets; default 16; fixed when the store is created. */
  bucketCount?: number;
  /** 'fsync' (default): a commit resolves after fdatasync; 'os': after the write reaches the OS. */
  durability?: Durability;
  /** Segment size at which the log rolls; default 64 MiB, at least 1024. */
  segmentBytesMax?: number;
  /** How long an offset of a group without members is kept after its commit; default 7 days. */
  offsetsRetentionMs?: number;
  /** How often expired offsets are looked for; default 60 s. */
  offsetsRetentionCheckIntervalMs?: number;
  /** Most offsets in one commit; default 100,000. */
  commitRecordCountMax?: number;
  /** Most commits pending per offsets-bucket before new ones are refused (retriable); default 65,536. */
  pendingCommitsMax?: number;
  /** Group coordinator settings. */
  group?: GroupOptions;
  /** Compaction: strategy, workers and pacing (defaults in docs/api.md; how it runs in docs/architecture.md). */
  compaction?: CompactionOptions;
  /** Receives recoverable problems (an ignored checkpoint, a failed background compaction); default process.emitWarning. */
  onWarning?: (message: string) => void;
  /** Time source and timers; tests pass a ManualClock. Read in whole milliseconds (fractions are dropped). */
  clock?: Clock;
  /** File-system port (default `new NodeFileSystem()`, which makes writes of up to 256 KiB on the
   * calling thread; `new NodeFileSystem({ syncWriteBytesMax: 0 })` sends every write through the
   * thread pool); tests pass one that counts or fails operations. */
  fs?: FileSystem;
  /** Resolve `open` only once every offsets-bucket has recovered (default true); with false, calls
   * on a bucket still recovering reject with COORDINATOR_LOAD_IN_PROGRESS. */
  awaitRecovery?: boolean;
  /**
   * With durability 'fsync', make the write rounds of offsets-buckets that commit at the same moment
   * durable with one fdatasync of a shared journal (`journal/` in the store directory) instead of
   * one fdatasync per bucket (default true). A round of one bucket alone still fdatasyncs its log.
   * See docs/recovery.md for the trade-off.
   */
  commitJournal?: boolean;
  /**
   * Open the store to read it only (default false), also while another process has it open. No
   * lock is taken and nothing in `dir` is written, ever: recovery runs as in any open, with its
   * repairs (a torn tail cut, the commit journal replayed) made in memory, so the store serves the
   * state a real open would serve, as of the moment it opened. Every call that writes (commits,
   * resets, deletes, heartbeats, joins, compaction, conversion, backup) is refused with
   * STORE_READ_ONLY, and no timer runs (sessions, retention, compaction): members and offsets stay
   * as they were read. `open` resolves once the whole view is read (`awaitRecovery` does not
   * apply). For inspecting a store that a service has open; close it when done.
   */
  readOnly?: boolean;
  /**
   * Not for users (the simulator's): the size from which the commit journal starts a new file
   * (default 64 MiB), so that a short run goes through many.
   */
  [JOURNAL_FILE_BYTES]?: number;
  /**
   * Not for users (the simulator's): the bytes of batches in the active segment from which the next
   * segment is prepared (default 256 KiB), so that a run of small segments prepares some.
   */
  [PREPARE_AT_BYTES]?: number;
  /**
   * Not for users (the simulator's): how a read-only open waits before it reads a store a live
   * process changed under it again (default a real timer of `ms`), so that the wait runs on
   * simulated time.
   */
  [READ_ONLY_PAUSE]?: (ms: number) => Promise<void>;
}

/** Key of the journal file size option (see OffsetStoreOptions), outside the package's API. */
export const JOURNAL_FILE_BYTES: unique symbol = Symbol('offset-store: journal file bytes');
/** Key of the segment preparation threshold (see OffsetStoreOptions), outside the package's API. */
export const PREPARE_AT_BYTES: unique symbol = Symbol('offset-store: prepare at bytes');
/** Key of a read-only open's pause between reads (see OffsetStoreOptions), outside the package's API. */
export const READ_ONLY_PAUSE: unique symbol = Symbol('offset-store: read-only pause');

/** Options of `compact()`. */
export interface CompactOptions {
  /** Hears of each offsets-bucket as its compaction finishes: its report, buckets finished, buckets in all. */
  onBucketCompacted?: BucketCompactedListener;
}

/** Compaction options. */
export interface CompactionOptions {
  /**
   * A built-in strategy ('log-cleaner', 'incremental', 'checkpoint', 'none') or the path of a
   * strategy module (docs/compaction.md), resolved against the working directory; default the
   * store's own ('log-cleaner' for a new store; a store compacted by a module opens with compaction
   * off unless its module is given). A different one than the store's is INVALID_CONFIG: convert with
   * `convertCompaction`.
   */
  strategy?: CompactionStrategy | string;
  /** Worker threads (log-cleaner) and buckets compacted at once; default 1. */
  workers?: number;
  /**
   * How the compaction worker threads yield the CPU to the threads that answer commits. `'idle'`
   * (default): SCHED_IDLE, they run only on a core nothing else wants and give it up the moment a
   * commit's thread wakes (nice 19 where that policy cannot be set); a nice increment in [0, 19]:
   * they share the cores at that lower priority, so compaction keeps a share on a machine whose
   * cores are busy all the time (under 'idle' it would wait for an idle moment). Linux only, where
   * both are per thread; ignored elsewhere (there they would lower the whole process).
   */
  workerNice?: number | 'idle';
  /**
   * Under `workerNice: 'idle'`, how long a compaction job may run (waiting for idle cores on a busy
   * machine) before its worker threads are taken back to the normal policy at nice 10, until their
   * next job; default 10 s. Compaction thus progresses on a machine that is never idle.
   */
  workerStarvedMs?: number;
  /**
   * How long one compaction run of one offsets-bucket may take before it is given up: its worker
   * thread is stopped (a strategy whose plan never settles, or loops, would hold it for good, and
   * with it the background passes over every bucket), nothing is changed, and it fails with
   * REQUEST_TIMED_OUT (a warning; the next pass tries again); default 10 minutes.
   */
  runTimeoutMs?: number;
  /** Estimated garbage ratio above which a bucket is cleaned in the background; default 0.5. */
  minDirtyRatio?: number;
  /** A bucket whose log grows past this many bytes is compacted whatever its ratio; default none. */
  logBytesMax?: number;
  /** How often background compaction looks for work; default 30 s. */
  intervalMs?: number;
  /** How long tombstones are kept by the log cleaner; default 24 h. */
  deleteRetentionMs?: number;
  /** Compact in the background on the clock (default true); with false, only `compact()` does. */
  background?: boolean;
  /** Hears of every compaction run of one offsets-bucket (background or `compact()`): started, finished with its report, or failed. */
  onRun?: CompactionRunListener;
}

/** One row of `listGroups`. */
export interface GroupListing {
  /** The group. */
  groupId: string;
  /** Its state; 'Empty' for a group with committed offsets and no members. */
  state: GroupState;
  /** The offsets-bucket it lives in (`bucketFor(groupId)`). */
  offsetsBucket: number;
  /**
   * 'consumer' for a group of the consumer protocol (KIP-848 heartbeats), 'classic' for one of the
   * classic protocol (JoinGroup/SyncGroup) and for a group with committed offsets only (what Kafka
   * calls a simple group).
   */
  groupType: GroupType;
  /** 'consumer' for a consumer-protocol group; a classic group's members' protocol type; '' for a group with offsets only. */
  protocolType: string;
}

/** The protocol a group speaks: a group id has one at a time. */
export type GroupType = 'consumer' | 'classic';

/**
 * Group states (docs/group-protocol.md): a consumer group's Empty, Assigning, Reconciling, Stable; a
 * classic group's Empty, PreparingRebalance, CompletingRebalance, Stable; plus Dead, reserved for a
 * deleted group (no call returns it).
 */
export type GroupState =
  | 'Empty'
  | 'Assigning'
  | 'Reconciling'
  | 'Stable'
  | 'PreparingRebalance'
  | 'CompletingRebalance'
  | 'Dead';

/** What `describeGroup` returns: JSON-safe, except a classic group's metadata and assignment bytes (Buffers). */
export interface GroupDescription {
  /** The group. */
  groupId: string;
  /** The offsets-bucket it lives in. */
  offsetsBucket: number;
  /** Its state; 'Empty' for a group with committed offsets and no members. */
  state: GroupState;
  /** Its type (see GroupListing). */
  groupType: GroupType;
  /** Its protocol type (see GroupListing). */
  protocolType: string;
  /** Group epoch of a consumer group (0 for a classic group and for one that never had members). */
  groupEpoch: number;
  /** Epoch of a consumer group's current target assignment. */
  assignmentEpoch: number;
  /** The assignor a consumer group's next target assignment uses, if it has members. */
  assignor: string | null;
  /** A consumer group's members, sorted by id (static members away with epoch -2 included); empty for a classic group. */
  members: MemberDescription[];
  /** A classic group's generation, protocol, leader and members; null for any other group. */
  classic: ClassicGroupDescription | null;
  /** Every committed offset of the group, in no particular order. */
  offsets: CommittedOffset[];
}

/** Options of the group coordinators. */
export interface GroupOptions {
  /** Heartbeat interval sent to members; default 5 s. */
  heartbeatIntervalMs?: number;
  /** Session timeout of members that ask for none; default 45 s. */
  sessionTimeoutMs?: number;
  /** Rebalance timeout of members that ask for none; default 60 s. */
  rebalanceTimeoutMs?: number;
  /** Most members per group (GROUP_MAX_SIZE_REACHED beyond); default 4096. */
  groupMembersMax?: number;
  /**
   * A change that follows another within this many ms waits for the interval's end, so a join
   * storm computes one target assignment instead of one per join; default 1000 (0 = every change
   * at once, O(members^2) for a storm).
   */
  assignmentIntervalMs?: number;
  /**
   * Classic groups: a group's first rebalance (from Empty) waits this long for more members, again
   * while members keep joining, up to the rebalance timeout; default 3000, as Kafka's
   * `group.initial.rebalance.delay.ms` (0 = complete it on the next timer turn).
   */
  initialRebalanceDelayMs?: number;
  /** Classic groups: a new member whose JoinGroup stays parked this long is removed; default 300,000 (5 minutes). */
  newMemberJoinTimeoutMs?: number;
}

/** Per offsets-bucket figures. */
export interface BucketStats {
  /** The offsets-bucket's number. */
  bucket: number;
  /**
   * 'loading' while it recovers, 'failed' when recovery failed (its calls get its error),
   * 'not-owned' in a hosting store for a bucket another node serves, 'stopped' when a storage
   * failure fail-stopped its log since (its fetches are served, its writes refused with
   * LOG_STORAGE_ERROR until the store is reopened), else 'ready'; the figures are 0 unless ready or
   * stopped.
   */
  state: 'loading' | 'ready' | 'stopped' | 'failed' | 'not-owned';
  /** Bytes of its log's segments (preallocated zeros not counted). */
  logBytes: number;
  /** Bytes of batches appended to its log since the store was opened (what commits, deletes and snapshots wrote). */
  appendedBytes: number;
  /** Segments of its log, the active one included. */
  segmentCount: number;
  /** The log offset its next batch gets. */
  nextLogOffset: number;
  /** Committed offsets held in memory. */
  liveOffsets: number;
  /** Groups with committed offsets in it. */
  groups: number;
  /** Its newest checkpoint, or undefined (a strategy without checkpoints, or none written yet). */
  checkpoint: CheckpointInfo | undefined;
}

/** What `stats()` returns. */
export interface StoreStats {
  /** The store directory, absolute. */
  dir: string;
  /** Offsets-buckets, fixed at creation. */
  bucketCount: number;
  /** The durability of this open. */
  durability: Durability;
  /** The strategy the store runs, as store.json records it: a built-in's name or `module:<name>` (docs/compaction.md). */
  compactionStrategy: string;
  /** One entry per offsets-bucket, in bucket order. */
  buckets: BucketStats[];
  /** Sums over the buckets that are ready. */
  totals: {
    logBytes: number;
    appendedBytes: number;
    segmentCount: number;
    liveOffsets: number;
    groups: number;
  };
}

/** Defaults of the options. */
export const DEFAULTS = {
  bucketCount: 16,
  durability: 'fsync' as Durability,
  segmentBytesMax: LOG_DEFAULTS.segmentBytesMax,
  offsetsRetentionMs: 7 * 24 * 3600 * 1000,
  offsetsRetentionCheckIntervalMs: 60_000,
  commitRecordCountMax: 100_000,
  pendingCommitsMax: LOG_DEFAULTS.pendingAppendsMax,
  recoveryConcurrency: 4,
};

/** The coordinators' defaults in a store: those of src/group, but assignments paced to one a second. */
const STORE_GROUP_DEFAULTS: GroupSettings = {
  ...GROUP_SETTINGS_DEFAULTS,
  assignmentIntervalMs: 1000,
};

/** Options after validation, with defaults applied. */
export interface ResolvedOptions {
  /** Absolute store directory. */
  dir: string;
  /** The requested count, or undefined to take the store's (16 for a new store). */
  bucketCount: number | undefined;
  /** When a commit resolves: after its fdatasync, or after its write. */
  durability: Durability;
  /** Roll size of every log, in bytes (>= 1024). */
  segmentBytesMax: number;
  /** How long after its commit an expirable offset is kept, in ms. */
  offsetsRetentionMs: number;
  /** Pause between two retention passes, in ms. */
  offsetsRetentionCheckIntervalMs: number;
  /** Most offsets per commit or reset. */
  commitRecordCountMax: number;
  /** Most appends queued or in flight per offsets-bucket. */
  pendingCommitsMax: number;
  /** Time and timers. */
  clock: Clock;
  /** The file-system port. */
  fs: FileSystem;
  /** Whether `open` waits for every offsets-bucket to recover. */
  awaitRecovery: boolean;
  /** Whether concurrent rounds of several buckets share one fdatasync of the commit journal. */
  commitJournal: boolean;
  /** Opened to read only: `fs` is an overlay that keeps every change in memory, and no timer fires. */
  readOnly: boolean;
  /** Size from which the commit journal starts a new file. */
  journalFileBytesMax: number;
  /** Bytes of batches in the active segment from which the next one is prepared (default: the log's). */
  prepareAtBytes: number | undefined;
  /** Compaction settings, checked and with defaults. */
  compaction: ResolvedCompaction;
  /** Coordinator settings, checked and with the store's defaults (assignments paced to one a second). */
  group: GroupSettings;
  /** Where recoverable problems are reported. */
  onWarning: (message: string) => void;
}

/** Compaction options after validation; `strategy` stays undefined when not given (the store's own is used). */
export type ResolvedCompaction = Required<Omit<CompactionOptions, 'strategy' | 'onRun'>> & {
  strategy: StrategyRef | undefined;
  onRun: CompactionRunListener | undefined;
};

/** A strategy option as a reference: a built-in, or a module path resolved against the working directory. */
export function resolveStrategyOption(strategy: unknown, name: string): StrategyRef {
  if (isCompactionStrategy(strategy)) return { builtIn: strategy };
  if (typeof strategy === 'string' && isStrategyModulePath(strategy))
    return { moduleUrl: strategyModuleUrl(strategy, process.cwd()) };
  if (typeof strategy !== 'string')
    throw new TypeError(`${name} must be a string, got ${typeName(strategy)}`);
  throw new RangeError(
    `${name} must be 'log-cleaner', 'incremental', 'checkpoint', 'none' or the path of a strategy module ('./my-strategy.js'), got ${String(strategy)}`,
  );
}

function resolveCompaction(options: CompactionOptions | undefined): ResolvedCompaction {
  if (options !== undefined)
    checkOptionsBag(options, COMPACTION_OPTION_NAMES, 'options.compaction');
  const {
    strategy,
    minDirtyRatio: rawMinDirtyRatio,
    workers,
    workerNice,
    workerStarvedMs,
    runTimeoutMs,
    logBytesMax,
    intervalMs,
    deleteRetentionMs,
    background: rawBackground,
    onRun,
  } = options ?? {};
  const ref =
    strategy === undefined
      ? undefined
      : resolveStrategyOption(strategy, 'options.compaction.strategy');
  if (onRun !== undefined && typeof onRun !== 'function')
    throw new TypeError('options.compaction.onRun must be a function');
  const minDirtyRatio = rawMinDirtyRatio === undefined ? 0.5 : rawMinDirtyRatio;
  if (typeof minDirtyRatio !== 'number')
    throw new TypeError(
      `options.compaction.minDirtyRatio must be a number, got ${typeName(minDirtyRatio)}`,
    );
  if (!(minDirtyRatio >= 0 && minDirtyRatio <= 1))
    throw new RangeError(
      `options.compaction.minDirtyRatio must be in [0, 1], got ${minDirtyRatio}`,
    );
  const background = rawBackground === undefined ? true : rawBackground;
  if (typeof background !== 'boolean')
    throw new TypeError(
      `options.compaction.background must be a boolean, got ${typeName(background)}`,
    );
  return {
    strategy: ref,
    onRun,
    background,
    workers: positiveInteger(workers, 'options.compaction.workers', 1, 1, COMPACTION_WORKERS_MAX),
    workerNice:
      workerNice === 'idle' || workerNice === undefined
        ? 'idle'
        : typeof workerNice === 'string'
          ? badWorkerNice(workerNice)
          : positiveInteger(workerNice, 'options.compaction.workerNice', 0, 0, 19),
    workerStarvedMs: positiveInteger(
      workerStarvedMs,
      'options.compaction.workerStarvedMs',
      STARVED_JOB_MS,
      0,
      TIMER_MS_MAX,
    ),
    runTimeoutMs: positiveInteger(
      runTimeoutMs,
      'options.compaction.runTimeoutMs',
      COMPACTION_RUN_TIMEOUT_MS,
      1,
      TIMER_MS_MAX,
    ),
    minDirtyRatio,
    logBytesMax:
      logBytesMax === undefined
        ? Number.POSITIVE_INFINITY
        : positiveInteger(logBytesMax, 'options.compaction.logBytesMax', 0),
    intervalMs: positiveInteger(
      intervalMs,
      'options.compaction.intervalMs',
      30_000,
      1,
      TIMER_MS_MAX,
    ),
    deleteRetentionMs: positiveInteger(
      deleteRetentionMs,
      'options.compaction.deleteRetentionMs',
      24 * 3600 * 1000,
      0,
    ),
  };
}

/**
 * Most compaction worker threads: each is a thread with a heap of its own, and a pool sized past
 * what any machine runs at once only costs memory (a huge count failed after the open resolved,
 * where nothing could catch it).
 */
const COMPACTION_WORKERS_MAX = 64;

function badWorkerNice(value: string): never {
  throw new TypeError(
    `options.compaction.workerNice must be 'idle' or a number, got the string ${JSON.stringify(value.slice(0, 40))}`,
  );
}

/** The methods of the FileSystem port a store calls (file-system.ts). */
const FILE_SYSTEM_METHODS = [
  'open',
  'readFile',
  'readdir',
  'mkdir',
  'rename',
  'unlink',
  'removeTree',
  'syncDir',
  'sizeBytes',
] as const;

/** `options.fs`, refused (TypeError naming what it lacks) unless it has the port's methods. */
function checkedFileSystem(fs: unknown): FileSystem {
  if (typeof fs !== 'object' || fs === null)
    throw new TypeError(
      `options.fs must be a FileSystem object, got ${fs === null ? 'null' : typeof fs}`,
    );
  const missing = FILE_SYSTEM_METHODS.filter(
    (name) => typeof (fs as Record<string, unknown>)[name] !== 'function',
  );
  if (missing.length > 0)
    throw new TypeError(
      `options.fs must be a FileSystem: it has no ${missing.map((m) => `${m}()`).join(', ')}`,
    );
  return fs as FileSystem;
}

/**
 * The store directory `dir` names now, through symbolic links (what exists of it; the rest is made
 * under it): every file of the store is then found under that path, never through the links again.
 * Re-pointing a link (a "current" link switched to another store, as deploy tools do) while the
 * store is open must not send its next segment or store.json into the other store, whose lock
 * another process may hold. Where the links cannot be read, `dir` as given, made absolute.
 */
function storeDirectory(dir: string): string {
  try {
    return realPathOf(dir);
  } catch {
    return path.resolve(dir);
  }
}

/** Most offsets-buckets a store may have: each is a folder, a log and a coordinator of its own. */
export const BUCKET_COUNT_MAX = 1 << 20;

function positiveInteger(
  value: unknown,
  name: string,
  fallback: number,
  min = 1,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number')
    throw new TypeError(`${name} must be a number, got ${typeof value}`);
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${value}`);
  return value;
}

/** `typeof`, with null named as null (an option given as null is not absent: it is refused). */
function typeName(value: unknown): string {
  return value === null ? 'null' : typeof value;
}

/** A boolean option, or `fallback` when it is absent. */
function optionalBoolean(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean')
    throw new TypeError(`${name} must be a boolean, got ${typeof value}`);
  return value;
}

/** The keys of OffsetStoreOptions: any other is refused (a misspelt option is not ignored). */
const STORE_OPTION_NAMES = [
  'dir',
  'bucketCount',
  'durability',
  'segmentBytesMax',
  'offsetsRetentionMs',
  'offsetsRetentionCheckIntervalMs',
  'commitRecordCountMax',
  'pendingCommitsMax',
  'group',
  'compaction',
  'onWarning',
  'clock',
  'fs',
  'awaitRecovery',
  'commitJournal',
  'readOnly',
] as const satisfies readonly (keyof OffsetStoreOptions)[];

/** compaction.runTimeoutMs's default: a run of one bucket still going after 10 minutes is stopped. */
export const COMPACTION_RUN_TIMEOUT_MS = 600_000;

/** The keys of CompactionOptions. */
const COMPACTION_OPTION_NAMES = [
  'strategy',
  'workers',
  'workerNice',
  'workerStarvedMs',
  'runTimeoutMs',
  'minDirtyRatio',
  'logBytesMax',
  'intervalMs',
  'deleteRetentionMs',
  'background',
  'onRun',
] as const satisfies readonly (keyof CompactionOptions)[];

/** Validates options and applies defaults; each option is read once (a getter is not asked twice). */
export function resolveOptions(options: OffsetStoreOptions): ResolvedOptions {
  checkOptionsBag(options, STORE_OPTION_NAMES, 'options');
  const {
    dir,
    bucketCount,
    durability: rawDurability,
    segmentBytesMax,
    offsetsRetentionMs,
    offsetsRetentionCheckIntervalMs,
    commitRecordCountMax,
    pendingCommitsMax,
    group,
    compaction,
    onWarning,
    clock,
    fs,
    awaitRecovery,
    commitJournal,
    readOnly: rawReadOnly,
  } = options;
  if (typeof group === 'object') refuseUnknownOptions(group, GROUP_SETTING_NAMES, 'options.group');
  if (typeof dir !== 'string') throw new TypeError('options.dir must be a non-empty string');
  if (dir.length === 0) throw new RangeError('options.dir must be a non-empty string');
  // No file system takes a NUL in a path; Node's own error would not name the option.
  if (dir.includes('\0'))
    throw new RangeError(
      `options.dir must be a non-empty string without NUL characters, got ${JSON.stringify(dir)}`,
    );
  // A lone surrogate has no UTF-8 encoding: the store would be made under another name (U+FFFD).
  if (!dir.isWellFormed())
    throw new RangeError(
      `options.dir must be well-formed UTF-16 (it holds a lone surrogate), got ${JSON.stringify(dir)}`,
    );
  const durability = rawDurability === undefined ? DEFAULTS.durability : rawDurability;
  if (durability !== 'fsync' && durability !== 'os')
    throw new RangeError(`options.durability must be 'fsync' or 'os', got ${String(durability)}`);
  const warn = warningsTo(onWarning);
  const readOnly = optionalBoolean(rawReadOnly, 'options.readOnly', false);
  const portFs = fs === undefined ? new NodeFileSystem() : checkedFileSystem(fs);
  const storeTime = storeClock(clock === undefined ? new SystemClock() : clock, warn);
  return {
    dir: portFs instanceof NodeFileSystem ? storeDirectory(dir) : path.resolve(dir),
    bucketCount:
      bucketCount === undefined
        ? undefined
        : positiveInteger(bucketCount, 'options.bucketCount', 0, 1, BUCKET_COUNT_MAX),
    durability,
    segmentBytesMax: positiveInteger(
      segmentBytesMax,
      'options.segmentBytesMax',
      DEFAULTS.segmentBytesMax,
      1024,
    ),
    offsetsRetentionMs: positiveInteger(
      offsetsRetentionMs,
      'options.offsetsRetentionMs',
      DEFAULTS.offsetsRetentionMs,
    ),
    offsetsRetentionCheckIntervalMs: positiveInteger(
      offsetsRetentionCheckIntervalMs,
      'options.offsetsRetentionCheckIntervalMs',
      DEFAULTS.offsetsRetentionCheckIntervalMs,
      1,
      TIMER_MS_MAX,
    ),
    commitRecordCountMax: positiveInteger(
      commitRecordCountMax,
      'options.commitRecordCountMax',
      DEFAULTS.commitRecordCountMax,
    ),
    pendingCommitsMax: positiveInteger(
      pendingCommitsMax,
      'options.pendingCommitsMax',
      DEFAULTS.pendingCommitsMax,
    ),
    // Read only: nothing reaches the directory, and nothing happens by itself (a session running
    // out, an offset expiring) that would have to be written.
    clock: readOnly ? withoutTimers(storeTime) : storeTime,
    fs: readOnly ? new OverlayFileSystem(portFs) : portFs,
    awaitRecovery: optionalBoolean(awaitRecovery, 'options.awaitRecovery', true),
    // Read only, the journal of earlier processes is read (and replayed in memory); none is written.
    commitJournal: !readOnly && optionalBoolean(commitJournal, 'options.commitJournal', true),
    readOnly,
    journalFileBytesMax: positiveInteger(
      options[JOURNAL_FILE_BYTES],
      'the journal file size',
      JOURNAL_FILE_BYTES_MAX,
      4096,
    ),
    prepareAtBytes:
      options[PREPARE_AT_BYTES] === undefined
        ? undefined
        : positiveInteger(options[PREPARE_AT_BYTES], 'the segment preparation threshold', 1),
    compaction: resolveCompaction(compaction),
    group: resolveGroupSettings(group, 'options.group', STORE_GROUP_DEFAULTS),
    onWarning: warn,
  };
}

/**
 * The user's onWarning, called so that it cannot throw into the store: a warning is given on paths
 * that must go on (recovery, background work), and a throw there would abandon what they hold. Its
 * throw, or the rejection of the promise it returns (an async function), is a process warning.
 */
export function warningsTo(
  onWarning: ((message: string) => void) | undefined,
): (message: string) => void {
  if (onWarning === undefined)
    return (message) => process.emitWarning(message, 'OffsetStoreWarning');
  if (typeof onWarning !== 'function') throw new TypeError('options.onWarning must be a function');
  return (message) =>
    callUserCallback(onWarning, [message], (how, error) =>
      process.emitWarning(
        `options.onWarning ${how} (${failureMessage(error)}) on: ${message}`,
        'OffsetStoreWarning',
      ),
    );
}

/**
 * `clock` as the store uses it:
 * - read in whole milliseconds: the store persists times as integers (commit timestamps, the
 *   manifest's creation time, when a group became Empty), and a clock with fractions (one built on
 *   `performance.now()`, a ManualClock advanced by half a millisecond) would otherwise write values
 *   the next open refuses;
 * - a time that cannot be persisted (not a number, negative, past 2^53: a clock in nanoseconds) is
 *   refused with INVALID_CONFIG where it is read, so a commit that would record it fails before
 *   anything is written (it was acknowledged, and the next open refused the bucket; NaN made a
 *   fresh commit look expired to retention);
 * - a timer's callback that throws (a broken clock read in it) is a warning, not an uncaught
 *   exception in the service that embeds the store;
 * - a reading that fails right after a good one (a clock that fails now and then) is that good
 *   one again, with a warning: an operation reads the clock before its first change and may read
 *   it again after (a group's records, then its member's session timer; a group's offsets deleted,
 *   then its record), and a refusal between the two would leave half of it done. "Right after":
 *   until the promise callbacks pending at the good reading have run (one turn of microtasks), so a
 *   clock that stays broken refuses again from the next turn on.
 */
function storeClock(clock: Clock, warn: (message: string) => void): Clock {
  checkClock(clock, 'options.clock');
  const elapsed = clock.elapsedMs;
  // The step's last good readings, forgotten once the step is over (the next microtask).
  let stepNowMs: number | undefined;
  let stepElapsedMs: number | undefined;
  let forgetQueued = false;
  const rememberForStep = () => {
    if (forgetQueued) return;
    forgetQueued = true;
    queueMicrotask(() => {
      forgetQueued = false;
      stepNowMs = undefined;
      stepElapsedMs = undefined;
    });
  };
  const orStepReading = (read: () => number, last: number | undefined): number => {
    try {
      return read();
    } catch (error) {
      if (last === undefined) throw error;
      warn(
        `${(error as Error).message}; this operation goes on with the clock's reading of a moment before (${last})`,
      );
      return last;
    }
  };
  return {
    // Intervals (assignment pacing) are measured with it: without it, a wall clock that steps
    // would stretch or cut them (see elapsedMs in src/util/clock.ts).
    ...(elapsed === undefined
      ? {}
      : {
          elapsedMs: () => {
            stepElapsedMs = orStepReading(() => {
              const ms = elapsed.call(clock);
              if (typeof ms !== 'number' || !Number.isFinite(ms))
                throw new OffsetStoreError(
                  'INVALID_CONFIG',
                  `options.clock.elapsedMs() returned ${String(ms)}: the store needs a number of milliseconds`,
                );
              return ms;
            }, stepElapsedMs);
            rememberForStep();
            return stepElapsedMs;
          },
        }),
    nowMs: () => {
      stepNowMs = orStepReading(() => {
        const ms = clock.nowMs();
        if (typeof ms !== 'number' || !(ms >= 0) || ms > Number.MAX_SAFE_INTEGER)
          throw new OffsetStoreError(
            'INVALID_CONFIG',
            `options.clock.nowMs() returned ${String(ms)}: the store needs milliseconds since the epoch, a number from 0 to 2^53-1`,
          );
        return Math.floor(ms);
      }, stepNowMs);
      rememberForStep();
      return stepNowMs;
    },
    setTimer: (delayMs, callback) => {
      const timer: unknown = clock.setTimer(delayMs, () => {
        try {
          callback();
        } catch (error) {
          warn(`a timer of the store failed: ${(error as Error)?.message}`);
        }
      });
      // A timer that cannot be cancelled would fail the store's close (which cancels every timer)
      // before it flushed and released its lock: refused where it is made instead.
      if (
        typeof timer !== 'object' ||
        timer === null ||
        typeof (timer as Timer).cancel !== 'function'
      )
        throw new OffsetStoreError(
          'INVALID_CONFIG',
          `options.clock.setTimer() returned ${typeName(timer)}: the store needs a timer with a cancel() method`,
        );
      return timer as Timer;
    },
  };
}
