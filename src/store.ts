/**
 * OffsetStore, the composition root and the public edge. It takes the lock, reads (or creates) the
 * manifest, loads one OffsetsBucket per offsets-bucket (src/shard: each owns its log, offsets table
 * and group coordinator, and holds the rules of requests on its groups), runs compaction and
 * retention over them, and routes each request to its group's bucket (`bucketFor`) after validating
 * it completely: nothing reaches a bucket, let alone the disk, unless the whole request is valid.
 *
 * Lifecycle: the constructor does no I/O; `open()` recovers every offsets-bucket (a few at a time);
 * `close()` stops timers, scanners and workers, unloads every bucket (flushing its log), records
 * where each log ended and releases the lock. After close every call rejects with STORE_CLOSED.
 */
import * as path from 'node:path';
import { loadChecksum, xxh32, type OffsetRecordSpec } from './codec/index.js';
import { OffsetStoreError, isOffsetStoreError } from './errors/index.js';
import {
  CommitJournal,
  DirectoryLock,
  FORMAT_VERSION,
  deleteJournalFiles,
  readJournalForRecovery,
  LOG_DEFAULTS,
  Log,
  MANIFEST_FILE,
  enclosingStoreDir,
  ManifestFile,
  bucketDirPath,
  liveLockHolder,
  missingBucketDirs,
  type BucketLogRecord,
} from './log/index.js';
import {
  CompactionWorkerPool,
  Compactor,
  InProcessRunner,
  loadStrategy,
  recordedStrategy,
  type CompactionReport,
  type CompactionStrategy,
  type LoadedStrategy,
  type CompactionRunListener,
} from './compaction/index.js';
import { HeldPaths, NodeFileSystem, OverlayFileSystem, type FileSystem } from './io/index.js';
import { validateGroupId, type BucketRef } from './model/index.js';
import {
  SEAL_FILE,
  ScannerOffsets,
  checkCommitCount,
  fetchFromGroup,
  normalizeBuckets,
  normalizeCommitOptions,
  normalizeOffsetCommits,
  type GroupOffsets,
  type OffsetsTable,
  type OffsetsTableRecovery,
  type ScannerOptions,
} from './kv/index.js';
import {
  type SubscriptionRefresh,
  GroupMember,
  normalizeTableLayout,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type MemberOptions,
  type RemoveMembersRequest,
  type RemovedMember,
  type TableLayout,
  type TableLayoutInput,
} from './group/index.js';
import { ClassicGroups } from './classic-groups.js';
import { OffsetsBucket, type OffsetsBucketOptions } from './shard/index.js';
import {
  callUserCallback,
  checkOptionsBag,
  failureMessage,
  Serial,
  settleAtMost,
  type Timer,
} from './util/index.js';
import { notADirectory, openFailure } from './open-failure.js';
import {
  resolveBackupTarget,
  writeBackup,
  type BackupBucket,
  type BackupReport,
} from './store-backup.js';
import {
  DEFAULTS,
  resolveOptions,
  resolveStrategyOption,
  type BucketStats,
  READ_ONLY_PAUSE,
  type CommitOptions,
  type CommittedOffset,
  type CompactOptions,
  type DeleteOffsetsOptions,
  type FetchOptions,
  type GroupDescription,
  type GroupListing,
  type GroupType,
  type OffsetCommit,
  type OffsetStoreOptions,
  type ResolvedOptions,
  type StoreStats,
} from './store-options.js';

const BUCKET_CACHE_SIZE_MAX = 65_536;

/** Sets `key` in a cache bounded to BUCKET_CACHE_SIZE_MAX entries, emptying it first when full. */
function setBounded<V>(cache: Map<string, V>, key: string, value: V): void {
  if (cache.size >= BUCKET_CACHE_SIZE_MAX) cache.clear();
  cache.set(key, value);
}

/** An offsets-bucket as the store tracks it. */
interface BucketSlot {
  readonly index: number;
  readonly dir: string;
  /** What the manifest recorded of its log when the store was opened. */
  readonly record: BucketLogRecord;
  /** The loaded bucket; undefined while it recovers, or when it failed to (`loadError`). */
  bucket: OffsetsBucket | undefined;
  loadError: unknown;
  /** Hosted mode: this node does not own the bucket now (its calls get NOT_COORDINATOR). */
  notOwned: boolean;
}

/** The embedded, durable consumer-offset store. */
/**
 * Key of the store's commit of offsets already in their normalized form, for the Kafka front end
 * (not exported from the package): a 100-partition OffsetCommit through the wire otherwise builds
 * one object per partition for `commitOffsets` and the store one more per partition from it.
 * The caller vouches for what `normalizeOffsetCommits` checks: safe integer offsets, valid buckets
 * (partitionId null), leader epochs in [-1, 2^31-1], well-formed metadata of at most 4096 UTF-8
 * bytes, no bucket twice; the count and everything else are checked here as `commitOffsets` does.
 */
export const COMMIT_NORMALIZED: unique symbol = Symbol('offset-store: commit normalized offsets');

/**
 * Key of the store's answer to whether a consumer (KIP-848) group holds a member, for the Kafka
 * front end (not exported from the package): synchronous, from memory; true while the group's
 * offsets-bucket cannot answer (recovering, closing, not owned), so that nothing is taken for gone
 * that may not be.
 */
export const HOLDS_CONSUMER_MEMBER: unique symbol = Symbol('offset-store: holds consumer member');

/**
 * Key of the store's refresh of several consumer-group members' subscribed tables in one epoch bump
 * (GroupCoordinator.refreshSubscriptions), for the Kafka front end (not exported from the package):
 * a topic created after members subscribed to its name reaches all of them at once.
 */
export const REFRESH_SUBSCRIPTIONS: unique symbol = Symbol('offset-store: refresh subscriptions');

/** Offsets-buckets that write their last checkpoint at once when the store closes. */
const CLOSING_CHECKPOINTS_AT_ONCE = 8;

/**
 * Key of the store's check that its directory's path still leads to the directory it opened (for the
 * Kafka front end, not exported from the package): awaited before a file beside the store's own is
 * written by name (the topic catalog). Rejects with LOG_STORAGE_ERROR once the directory was renamed
 * or replaced under the process.
 */
export const CHECK_DIRECTORY: unique symbol = Symbol('offset-store: check directory');

/**
 * How long a backup waits for the compaction runs in flight to finish (on the store's clock) before
 * it abandons them, as a close does: a strategy whose plan never settles must not hold backups, and
 * the conversions queued behind them, forever.
 */
export const BACKUP_COMPACTION_WAIT_MS = 60_000;

/**
 * Directories of the stores this process has open to read only: an open of one of them for writing
 * in this process is refused while they are open (LMDB keeps one environment per file in a process,
 * and theirs is read-only).
 */
const readOnlyStores = new HeldPaths();

/**
 * Directories of the stores this process is opening to write whose offsets-buckets are still
 * recovering (an open with `awaitRecovery: false` goes on recovering after it resolved): an open of
 * one of them to read only in this process is refused until they have recovered, since a reader's
 * checkpoint environment opened first would leave the recovering bucket's refused (see
 * readOnlyStores).
 */
const recoveringStores = new HeldPaths();

/**
 * Forgets the stores this process holds open to read only or is recovering, as a restarted process
 * would have: for a simulator that abandons a store (a simulated crash) and reopens it in the same
 * process.
 */
export function forgetStoreProcessState(): void {
  readOnlyStores.clear();
  recoveringStores.clear();
}

/** Opens of a store to read only, while a live process has it open, before damage is believed. */
const READ_ONLY_ATTEMPTS = 8;
/** Pause between them, ms. */
const READ_ONLY_RETRY_PAUSE_MS = 25;

export class OffsetStore {
  readonly #options: ResolvedOptions;
  readonly #slots: BucketSlot[] = [];
  readonly #scanners = new Set<ScannerOffsets>();
  readonly #members = new Set<GroupMember>();
  /** Table layouts from setTableLayout, applied to every coordinator (also ones still loading). */
  readonly #layouts = new Map<number, TableLayout>();
  /** groupId -> offsets-bucket; bounded, cleared when full (hashing is cheap, just not free). */
  readonly #bucketCache = new Map<string, number>();
  /**
   * groupId -> its offsets table, for groups fetched recently; bounded like #bucketCache. A hit saves
   * the bucket lookup and the bucket's own group lookup (each a hash-table probe that misses the CPU
   * cache when groups are many); a table its bucket dropped is `detached` and looked up again.
   */
  readonly #fetchCache = new Map<string, GroupOffsets>();
  #lock: DirectoryLock | undefined;
  #manifest: ManifestFile | undefined;
  /** The commit journal (durability 'fsync', files of its own), and what it held at open, until replayed. */
  #journal: CommitJournal | undefined;
  #journalRead: { batches: Map<number, Buffer[]>; files: string[] } | undefined;
  /** The compaction strategy the store runs, as its manifest records it. */
  #recorded = 'log-cleaner';
  /**
   * A conversion failed writing the manifest, and writing the old record again failed too: the disk
   * may hold either strategy, so compaction stays off until a conversion completes (or a reopen).
   */
  #manifestUncertain = false;
  /** That strategy, loaded; undefined for a module strategy whose module was not given (compaction off). */
  #strategy: LoadedStrategy | undefined;
  #bucketCount = 0;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** Whether the store said once that its strategy module was not given. */
  #moduleMissingWarned = false;
  #recovery: Promise<void> = Promise.resolve();
  /**
   * Without awaitRecovery: the log ends recorded as lower bounds once recovery is over (a manifest
   * write begun then, which close waits for; never rejects).
   */
  #endsRaised: Promise<void> = Promise.resolve();
  #retentionTimer: Timer | undefined;
  #retentionRun: Promise<void> | undefined;
  /** convertCompaction calls, one at a time; close waits for them. */
  readonly #conversions = new Serial();
  #compactor: Compactor | undefined;
  /**
   * The classic (JoinGroup/SyncGroup) group protocol, for front ends that speak it on behalf of
   * Kafka clients: `store.classic.joinGroup(groupId, request)` and so on (see ClassicGroups).
   */
  readonly classic: ClassicGroups = new ClassicGroups((groupId) => {
    this.#checkWritable('classic group protocol');
    validateGroupId(groupId);
    return this.#bucket(groupId);
  });

  private constructor(options: ResolvedOptions) {
    this.#options = options;
  }

  /** Opens (creating if needed) the store in `options.dir` and recovers it. */
  static async open(options: OffsetStoreOptions): Promise<OffsetStore> {
    const resolved = resolveOptions(options);
    if (!resolved.readOnly) {
      OffsetStore.#refuseWhileReadOnly(resolved.dir);
      const store = new OffsetStore(resolved);
      // Held from here, before anything is awaited, as a read-only open holds its own: a read-only
      // open started meanwhile in this process is refused, not this one (called first) because of
      // a reader's hold taken while this one awaited its first steps. Released once recovered.
      store.#releaseRecovering = recoveringStores.hold(resolved.dir);
      try {
        await store.#open();
      } catch (error) {
        store.#releaseRecovering();
        throw error;
      }
      return store;
    }
    // Read only, the store may be open in a live process that compacts and appends while it is
    // read: a segment swapped away or a batch half appended reads as damage. Such a read is made
    // again, from a fresh overlay; damage that stays, or is found with no live owner, is reported.
    if (recoveringStores.held(resolved.dir))
      throw new OffsetStoreError(
        'STORE_LOCKED',
        `${resolved.dir}: this process is opening the store to write and its offsets-buckets are still recovering; read it through that store, or open it to read only once its ready() has resolved`,
      );
    // Held from here, before anything is awaited: an open to write started meanwhile in this process
    // is refused, instead of slipping past a hold taken only once this open has finished.
    const releaseReader = readOnlyStores.hold(resolved.dir);
    try {
      return await OffsetStore.#openReadOnly(options, resolved, releaseReader);
    } catch (error) {
      releaseReader();
      throw error;
    }
  }

  /** STORE_LOCKED while this process has the store in `dir` open to read only, or is opening it so. */
  static #refuseWhileReadOnly(dir: string): void {
    if (readOnlyStores.held(dir))
      throw new OffsetStoreError(
        'STORE_LOCKED',
        `${dir}: this process has the store open to read only, or is opening it so; close that store (or let its open finish) before opening it to write (LMDB keeps one environment per file in a process)`,
      );
  }

  /** The attempts of a read-only open (see open); the store returned keeps `releaseReader`. */
  static async #openReadOnly(
    options: OffsetStoreOptions,
    resolved: ResolvedOptions,
    releaseReader: () => void,
  ): Promise<OffsetStore> {
    // Files read one after another can also mix two states without any damage (a segment read
    // before a compaction swapped it, one after): the overlay tells whether every file it read is
    // still in place once the view is read, and a view read across a change is read again.
    for (let attempt = 1; ; attempt++) {
      const store = new OffsetStore(attempt === 1 ? resolved : resolveOptions(options));
      let changed: string | undefined;
      try {
        await store.#open();
        const overlay = store.#options.fs;
        // Two files a live writer replaces are not state the view serves. store.json is rewritten
        // whenever a log rolls (the log ends it records only rise): what the view read of it stays
        // a true lower bound of the logs it read. A checkpoint's seal is written anew after every
        // checkpoint; it only checks data.mdb before LMDB maps it (a seal of another transaction
        // leaves the check to the page checks), and the view reads the checkpoint through LMDB's
        // own read transaction, whose pages the writer keeps while the view reads them.
        changed =
          overlay instanceof OverlayFileSystem
            ? await overlay.changedBelow(
                (p) => path.basename(p) === MANIFEST_FILE || path.basename(p) === SEAL_FILE,
              )
            : undefined;
        if (changed === undefined) {
          store.#releaseReader = releaseReader;
          return store;
        }
      } catch (error) {
        if (!isOffsetStoreError(error, 'CORRUPT_MESSAGE')) throw error;
        const holder = await liveLockHolder(resolved.fs, resolved.dir).catch(() => null);
        if (holder === null) throw error;
        // A file listed and then gone: beside a live writer, its compaction or checkpoint removed
        // it, a change like a file replaced, not damage.
        if ((error.cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT')
          changed = `a file removed (${error.message})`;
        else if (attempt >= READ_ONLY_ATTEMPTS)
          throw new OffsetStoreError(
            'CORRUPT_MESSAGE',
            `${error.message} (read ${attempt} times while live process ${holder} had the store open, and found damage each time)`,
            { cause: error },
          );
      }
      if (changed !== undefined) {
        await store.close();
        if (attempt >= READ_ONLY_ATTEMPTS)
          throw new OffsetStoreError(
            'STORE_LOCKED',
            `${resolved.dir}: read ${attempt} times, and each time a file of the store was replaced or removed while it was read (last ${changed}), as a live process's compaction does; try again`,
          );
      }
      const pause = options[READ_ONLY_PAUSE];
      if (pause !== undefined) await pause(READ_ONLY_RETRY_PAUSE_MS);
      else await new Promise((resolve) => setTimeout(resolve, READ_ONLY_RETRY_PAUSE_MS));
    }
  }

  /**
   * Opens a store whose offsets-buckets are hosted: none is loaded from `options.dir` (which keeps
   * only the lock, the manifest and companions' files such as the Kafka topic catalog); a cluster
   * node hands each bucket it comes to own to `hostBucket`, over a log replicated elsewhere, and
   * takes it back with `unhostBucket`. A call on a group whose bucket is not hosted here is
   * NOT_COORDINATOR (retriable: find the coordinator again). No compaction runs: the host
   * checkpoints its buckets itself.
   */
  static async openHosted(options: OffsetStoreOptions): Promise<OffsetStore> {
    const store = new OffsetStore(
      resolveOptions({ ...options, compaction: { ...options.compaction, strategy: 'none' } }),
    );
    store.#hosted = true;
    await store.#open();
    return store;
  }

  /**
   * Before a file is created or replaced in the store's directory: refuses when the directory was
   * renamed or replaced under the process (DirectoryLock.check); nothing to check without a lock.
   */
  readonly #checkDirectory = async (): Promise<void> => {
    await this.#lock?.check();
  };

  /** True for a store opened with `openHosted`. */
  #hosted = false;
  /** A store open to read only: releases its hold in readOnlyStores once it has closed. */
  #releaseReader: (() => void) | undefined;
  /** A store open to write: releases its hold in recoveringStores once its buckets have recovered (or failed to). */
  #releaseRecovering: (() => void) | undefined;
  /** Hosted mode: false while the host may not serve (its lease is not confirmed); every call is then NOT_COORDINATOR. */
  #servingGuard: (() => boolean) | undefined;

  /**
   * Hosted mode: `guard` is asked before every call reaches a bucket; while it returns false every
   * call is NOT_COORDINATOR (a node whose lease may have expired must not answer, even from memory).
   */
  setServingGuard(guard: () => boolean): void {
    if (!this.#hosted) throw new RangeError('only a hosting store has a serving guard');
    this.#servingGuard = guard;
  }

  /**
   * Hosted mode: serves offsets-bucket `index` from `table` (recovered by the caller, through its
   * log port): the group coordinator is restored from the table's group snapshots (each group as
   * its last snapshot had it) before the first request reaches it.
   */
  async hostBucket(
    index: number,
    table: OffsetsTable,
    report: OffsetsTableRecovery,
  ): Promise<void> {
    this.#checkOpen();
    const slot = this.#slots[index];
    if (!this.#hosted || slot === undefined || slot.bucket !== undefined)
      throw new RangeError(`offsets-bucket ${index} cannot be hosted here`);
    const bucket = await OffsetsBucket.fromTable(this.#bucketSettings(index), table, report);
    if (this.#closed) {
      await bucket.unload();
      throw new OffsetStoreError('STORE_CLOSED', `store ${this.#options.dir} is closed`);
    }
    this.#fetchCache.clear();
    slot.bucket = bucket;
    slot.notOwned = false;
  }

  /**
   * Hosted mode: stops serving offsets-bucket `index` at once (every later call on its groups is
   * NOT_COORDINATOR), then unloads it: its timers stop, the group calls parked or queued on it (a
   * JoinGroup waiting for the others, a SyncGroup for its leader) fail with NOT_COORDINATOR, as
   * Kafka answers them when a group moves away (COORDINATOR_NOT_AVAILABLE would make clients such
   * as kafkajs give the join up, not look for the new coordinator), and its log settles what is in
   * flight.
   */
  async unhostBucket(index: number): Promise<void> {
    const slot = this.#slots[index];
    if (!this.#hosted || slot === undefined)
      throw new RangeError(`offsets-bucket ${index} is not hosted here`);
    const bucket = slot.bucket;
    slot.bucket = undefined;
    slot.notOwned = true;
    this.#fetchCache.clear();
    await bucket?.unload(
      undefined,
      new OffsetStoreError(
        'NOT_COORDINATOR',
        `offsets-bucket ${index} is no longer served by this node: find its coordinator again`,
      ),
    );
  }

  /** Hosted mode: the offsets-buckets served here now. */
  hostedBuckets(): number[] {
    return this.#slots.filter((s) => s.bucket !== undefined).map((s) => s.index);
  }

  async #open(): Promise<void> {
    const { fs, dir, clock } = this.#options;
    await loadChecksum();
    // A strategy module that cannot be one fails the open before anything touches the directory.
    const requested =
      this.#options.compaction.strategy === undefined
        ? undefined
        : await loadStrategy(this.#options.compaction.strategy);
    if (requested !== undefined && !this.#options.readOnly) this.#checkLoadsOnWorkers(requested);
    if (this.#options.readOnly) {
      // Nothing to lock (nothing is written) and nothing to create: the store must be there.
      if ((await fs.sizeBytes(path.join(dir, MANIFEST_FILE)).catch(() => null)) === null) {
        // As a real open tells them apart (in the overlay, so nothing is made): bucket folders
        // holding data without a manifest are damage; anything else is no store.
        await ManifestFile.openOrCreate(fs, dir, {
          bucketCount: this.#options.bucketCount ?? DEFAULTS.bucketCount,
          compactionStrategy: 'log-cleaner',
          nowMs: clock.nowMs(),
        }).catch((error: unknown) => {
          if (isOffsetStoreError(error, 'CORRUPT_MESSAGE')) throw error;
        });
        throw new OffsetStoreError(
          'INVALID_CONFIG',
          `${dir} holds no store (no ${MANIFEST_FILE}): a store opened to read only is not created`,
        );
      }
    } else {
      OffsetStore.#refuseWhileReadOnly(dir);
      try {
        // A new store inside another's folders would land among its files (see enclosingStoreDir).
        if ((await fs.sizeBytes(path.join(dir, MANIFEST_FILE)).catch(() => null)) === null) {
          const outer = await enclosingStoreDir(fs, dir);
          if (outer !== undefined)
            throw new OffsetStoreError(
              'INVALID_CONFIG',
              `${dir} is inside the store in ${outer}: a store is never created within another (its files would land among that store's own); name a directory of its own`,
            );
        }
        await fs.mkdir(dir).catch((error: unknown) => {
          throw notADirectory(error, dir) ?? openFailure(error, `cannot create ${dir}`);
        });
        this.#lock = await DirectoryLock.acquire(fs, dir).catch((error: unknown) => {
          throw openFailure(error, `cannot lock ${dir}`);
        });
      } catch (error) {
        this.#releaseRecovering?.();
        throw error;
      }
    }
    try {
      this.#manifest = await ManifestFile.openOrCreate(fs, dir, {
        bucketCount: this.#options.bucketCount ?? DEFAULTS.bucketCount,
        compactionStrategy: requested?.id ?? 'log-cleaner',
        nowMs: clock.nowMs(),
      });
      this.#manifest.checkDirectory = this.#checkDirectory;
      const manifest = this.#manifest.manifest;
      if (
        this.#options.bucketCount !== undefined &&
        this.#options.bucketCount !== manifest.bucketCount
      ) {
        throw new OffsetStoreError(
          'INVALID_CONFIG',
          `bucketCount ${this.#options.bucketCount} contradicts the store in ${dir}, created with bucketCount ${manifest.bucketCount}`,
        );
      }
      const recorded = storedStrategy(this.#manifest.path, manifest.compactionStrategy);
      if (this.#hosted && recorded.id !== 'none')
        throw new OffsetStoreError(
          'INVALID_CONFIG',
          `${dir} holds a store of its own (compacted by '${recorded.id}'), not a cluster node's: a node keeps its offsets in etcd, and needs a directory of its own`,
        );
      if (requested !== undefined && requested.id !== recorded.id) {
        const asked =
          'builtIn' in requested.ref
            ? requested.id
            : `${requested.ref.moduleUrl} (${requested.id})`;
        throw new OffsetStoreError(
          'INVALID_CONFIG',
          `compaction.strategy ${asked} contradicts the store in ${dir}, which uses '${recorded.id}': omit the option to use the store's, or convert the store (store.convertCompaction, or offset-store compact --strategy)`,
        );
      }
      // Before anything else is written into a store an earlier build wrote.
      const from = this.#options.readOnly ? undefined : await this.#manifest.upgradeFormat();
      if (from !== undefined)
        this.#options.onWarning(
          `${this.#manifest.path}: raised from format version ${from} to ${FORMAT_VERSION}; builds that wrote version ${from} refuse it from now on (they would misread a commit journal or a group mid-rebalance)`,
        );
      this.#recorded = recorded.id;
      this.#strategy =
        requested ??
        (recorded.builtIn === undefined
          ? undefined
          : await loadStrategy({ builtIn: recorded.builtIn }));
      this.#bucketCount = manifest.bucketCount;
      const missing = new Set(await missingBucketDirs(fs, dir, manifest.bucketCount));
      for (let i = 0; i < manifest.bucketCount; i++) {
        const bucketDir = bucketDirPath(dir, manifest.bucketCount, i);
        this.#slots.push({
          index: i,
          dir: bucketDir,
          record: manifest.buckets[i]!,
          bucket: undefined,
          notOwned: this.#hosted,
          loadError:
            missing.has(i) && !this.#hosted
              ? new OffsetStoreError(
                  'CORRUPT_MESSAGE',
                  `${bucketDir} is missing: the folder of offsets-bucket ${i} does not exist`,
                )
              : undefined,
        });
      }
      if (!this.#hosted) {
        // Read whatever this open's options: a journal left by a crash holds acknowledged commits.
        const contents = await readJournalForRecovery(
          fs,
          dir,
          manifest.bucketCount,
          LOG_DEFAULTS.batchBytesMax,
        );
        if (contents.files.length > 0) this.#journalRead = contents;
        // Like a log's torn tail: what a crash cut short was never acknowledged, but say so. Read
        // only, nothing is dropped from the file, and the round may be a live writer's in progress.
        for (const torn of contents.tornRounds)
          this.#options.onWarning(
            this.#options.readOnly
              ? `${torn.file} at byte ${torn.position}: a commit-journal round cut short (${torn.reason}) is not read (opened to read only: nothing is dropped; in a store a live process writes, a round in progress reads so)`
              : `${torn.file} at byte ${torn.position}: a commit-journal round cut short by a crash (${torn.reason}) was dropped; it had not been acknowledged`,
          );
        if (this.#options.durability === 'fsync' && this.#options.commitJournal)
          this.#journal = CommitJournal.after(
            contents,
            fs,
            dir,
            (index) => this.#syncBucketLog(index),
            this.#options.onWarning,
            this.#options.journalFileBytesMax,
          );
        if (this.#journal !== undefined) this.#journal.checkDirectory = this.#checkDirectory;
      }
      // Before anything is written, the recorded log ends become lower bounds (the logs may grow from
      // then on): each bucket's before it first writes (#beforeFirstWrite), and every loaded
      // bucket's once recovery is over (#raiseLogEnds). A bucket that refuses to open keeps exact
      // the end its log still has, so that the next open refuses it again.
      if (this.#hosted) {
        this.#recovery = Promise.resolve();
      } else if (this.#options.awaitRecovery || this.#options.readOnly) {
        // (Read only, the view is whole when open resolves: a read of a live store that meets its
        // owner's changes is made again by OffsetStore.open, which sees only what #open throws.)
        this.#recovery = this.#startRecovery();
        await this.#recovery;
        await this.#raiseLogEnds();
      } else {
        this.#recovery = this.#startRecovery();
        this.#endsRaised = this.#recovery
          .catch(() => {})
          .then(() => this.#raiseLogEnds())
          .catch((error: unknown) =>
            this.#options.onWarning(
              `recording the log ends in ${this.#manifest?.path} failed: ${(error as Error).message}`,
            ),
          );
      }
      // Inside the try: a clock whose setTimer throws fails the open, which then closes what it opened.
      this.#armRetention();
    } catch (error) {
      await this.#abandonOpen();
      throw openFailure(error, `cannot open the store in ${dir}`);
    }
    this.#recovery.then(
      () => {
        if (!this.#closed && !this.#hosted) this.#startCompaction();
      },
      () => {},
    );
  }

  /**
   * After a failed open: closes what it opened, then releases the lock. A failure of either is a
   * warning, not an error: the caller needs the error that failed the open, not one that followed.
   */
  async #abandonOpen(): Promise<void> {
    const steps: [string, () => Promise<void>][] = [
      ['closing its offsets-buckets', () => this.#unloadBuckets()],
      // Kept: what the buckets that did not load have in it is replayed by the next open.
      ['closing its commit journal', async () => this.#journal?.close(false)],
      // (A store open to read only took none.)
      ['releasing the lock', async () => this.#lock?.release()],
    ];
    for (const [what, step] of steps) {
      try {
        await step();
      } catch (error) {
        this.#options.onWarning(
          `${this.#options.dir}: after the failed open, ${what} failed too: ${(error as Error).message}`,
        );
      }
    }
    this.#releaseRecovering?.();
  }

  /**
   * Recovers every offsets-bucket, then retires the commit journal read at open; the hold in
   * recoveringStores is released once it settles, either way.
   */
  #startRecovery(): Promise<void> {
    const recovery = this.#recoverAll().then(() => this.#retireJournalRead());
    const recovered = () => this.#releaseRecovering?.();
    recovery.then(recovered, recovered);
    return recovery;
  }

  #startCompaction(): void {
    if (this.#options.readOnly) return;
    const { compaction, clock, segmentBytesMax, fs } = this.#options;
    const strategy = this.#strategy;
    if (strategy === undefined && compaction.background && !this.#moduleMissingWarned) {
      this.#moduleMissingWarned = true;
      this.#options.onWarning(
        `the store in ${this.#options.dir} is compacted by the strategy module '${this.#recorded}', which this open was not given (compaction.strategy, or --strategy on the command line): its log is not compacted, and grows, until it is`,
      );
    }
    const runner =
      strategy === undefined || !strategy.rewrites
        ? undefined
        : this.#jobsOnWorkers(strategy)
          ? new CompactionWorkerPool({
              workers: compaction.workers,
              idleTimeoutMs: 10_000,
              nice: compaction.workerNice,
              starvedJobMs: compaction.workerStarvedMs,
              onWorkerError: (error) =>
                this.#options.onWarning(
                  `a compaction worker thread failed: ${(error as Error)?.message}`,
                ),
            })
          : new InProcessRunner(fs);
    this.#compactor = new Compactor(
      {
        strategy,
        recordedStrategy: this.#recorded,
        clock,
        runner,
        workers: compaction.workers,
        runTimeoutMs: compaction.runTimeoutMs,
        intervalMs: compaction.intervalMs,
        minDirtyRatio: compaction.minDirtyRatio,
        logBytesMax: compaction.logBytesMax,
        deleteRetentionMs: compaction.deleteRetentionMs,
        segmentBytesMax,
        batchBytesMax: LOG_DEFAULTS.batchBytesMax,
        onRun: heardSafely(compaction.onRun, (message) => this.#options.onWarning(message)),
        onError: (error, bucket) =>
          this.#options.onWarning(
            `compaction of offsets-bucket ${bucket} failed: ${(error as Error).message}`,
          ),
      },
      this.#slots.map((slot) =>
        slot.bucket!.compactionTarget(() => this.#manifest!.manifest.buckets[slot.index]!.logStart),
      ),
    );
    if (compaction.background) this.#compactor.start();
  }

  /** Runs compaction on every offsets-bucket now (whatever its dirty ratio) and reports what it did. */
  async compact(options?: CompactOptions): Promise<CompactionReport> {
    this.#checkWritable('compact');
    if (this.#hosted)
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        'a hosting store does not compact: its host checkpoints each bucket',
      );
    if (options !== undefined) checkOptionsBag(options, ['onBucketCompacted'], 'options');
    const onBucketCompacted = options?.onBucketCompacted;
    if (onBucketCompacted !== undefined && typeof onBucketCompacted !== 'function')
      throw new TypeError('onBucketCompacted must be a function');
    await this.#recovery;
    for (;;) {
      // A conversion closes the compactor and starts another once it is done: a compaction asked
      // for meanwhile runs on that one, not cut short as if the store were closing.
      await this.#conversions.settled();
      this.#checkOpen(); // closed meanwhile: there is no compactor to ask
      if (this.#manifestUncertain)
        throw new OffsetStoreError(
          'LOG_STORAGE_ERROR',
          `compaction of the store in ${this.#options.dir} is off: a conversion failed writing store.json, and so did writing the strategy '${this.#recorded}' back, so the file may record either; convert again (to either strategy) or reopen the store`,
        );
      const compactor = this.#compactor!;
      try {
        return await compactor.compactNow(onBucketCompacted);
      } catch (error) {
        const cutShort = isOffsetStoreError(error) && error.code === 'STORE_CLOSED';
        if (!cutShort || this.#closing !== undefined || this.#closed) throw error;
        await this.#conversions.settled();
        if (this.#compactor === compactor) throw error; // not replaced: no conversion cut it short
      }
    }
  }

  /**
   * Converts the store to another compaction strategy (a built-in's name, or a strategy module's
   * path), crash-safely, and records it in the store. What happens depends on whether each strategy
   * keeps checkpoints:
   * - neither does (e.g. 'log-cleaner', 'incremental', 'none', a module without checkpoints): only the
   *   record changes (all keep the whole state in the log);
   * - to one that does: each offsets-bucket writes a checkpoint first (an old checkpoint environment
   *   is removed, since a log cleaner may have dropped tombstones it would need), then the store
   *   records the strategy; the log is freed below the checkpoints by later compactions;
   * - from one that does: each offsets-bucket writes its whole state back into its log as ordinary
   *   batches from log offset X, then the store records the strategy and X as the log start (recovery
   *   replays from there), then the log below X and the checkpoints are deleted;
   * - both do: only the record changes.
   * A crash at any step leaves the store usable with the old strategy or the new one. Background
   * compaction pauses meanwhile. Every offsets-bucket must have recovered. RangeError for a name that
   * is neither a built-in nor a path; INVALID_CONFIG for a module that is not a strategy.
   */
  convertCompaction(strategy: CompactionStrategy | string): Promise<void> {
    // One conversion at a time, and close waits for the one in flight: a close's last checkpoint
    // racing a conversion's image or checkpoint removal could free log the other still needs.
    return this.#conversions.run(() => this.#convertCompaction(strategy));
  }

  /**
   * Whether `strategy`'s compaction jobs run on worker threads: those of a strategy that rewrites
   * segments, on the NodeFileSystem. Otherwise they run on this thread (a strategy that declares
   * rewrites: false plans here and only checkpoints; another file system is not reachable from a
   * worker).
   */
  #jobsOnWorkers(strategy: LoadedStrategy): boolean {
    return strategy.rewrites && this.#options.fs instanceof NodeFileSystem;
  }

  /**
   * INVALID_CONFIG for a TypeScript strategy module whose jobs run on worker threads: this thread
   * may load it through a loader the process was started with, but a worker thread of Node 20 does
   * not run the process's `--import` loaders, and every job would fail to load it.
   */
  #checkLoadsOnWorkers(strategy: LoadedStrategy): void {
    const { ref } = strategy;
    if (!('moduleUrl' in ref) || !this.#jobsOnWorkers(strategy)) return;
    if (/\.[cm]?ts$/.test(new URL(ref.moduleUrl).pathname))
      throw new OffsetStoreError(
        'INVALID_CONFIG',
        `the compaction strategy module ${ref.moduleUrl} is TypeScript: compaction jobs run on worker threads, which cannot load it; compile it to .js or .mjs`,
      );
  }

  async #convertCompaction(strategy: CompactionStrategy | string): Promise<void> {
    this.#checkWritable('convertCompaction');
    if (this.#hosted)
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        'a hosting store does not compact: its host checkpoints each bucket',
      );
    const loaded = await loadStrategy(resolveStrategyOption(strategy, 'strategy'));
    this.#checkLoadsOnWorkers(loaded);
    // (STORE_CLOSED when a close stopped buckets from loading: see #recoverAll.)
    await this.#recovery;
    if (loaded.id === this.#recorded) {
      if (this.#manifestUncertain) {
        // After a failed conversion whose record may have reached the disk: this one's is written.
        await this.#manifest!.update(() => {});
        this.#manifestUncertain = false;
        if (!this.#closed && this.#strategy !== undefined) this.#startCompaction();
      }
      // The store's own strategy: a store opened without its module gets it now, and compacts again.
      if (this.#strategy === undefined) {
        await this.#compactor?.close();
        this.#strategy = loaded;
        if (!this.#closed) this.#startCompaction();
      }
      return;
    }
    const { clock } = this.#options;
    const tables = this.#slots.map((slot) => slot.bucket!.table);
    const fromCheckpoints = recordedStrategy(this.#recorded)!.checkpoints;
    await this.#compactor?.close();
    // Once the manifest records the new strategy, the conversion is done: the store uses it from then
    // on, even if freeing what the old one needed fails (compacting by the old one could free what
    // the new one's log start needs).
    const recorded = () => {
      this.#recorded = loaded.id;
      this.#strategy = loaded;
      this.#manifestUncertain = false;
    };
    try {
      if (loaded.checkpoints && !fromCheckpoints) {
        await Promise.all(tables.map((table) => table.enableCheckpoints(clock.nowMs())));
        await this.#manifest!.update((m) => {
          m.compactionStrategy = loaded.id;
        });
        recorded();
      } else if (fromCheckpoints && !loaded.checkpoints) {
        const starts = await Promise.all(tables.map((table) => table.writeImage(clock.nowMs())));
        await this.#manifest!.update((m) => {
          m.compactionStrategy = loaded.id;
          starts.forEach((logStart, i) => {
            m.buckets[i]!.logStart = logStart;
          });
        });
        recorded();
        await Promise.all(tables.map((table, i) => table.dropCheckpoints(starts[i]!)));
      } else {
        await this.#manifest!.update((m) => {
          m.compactionStrategy = loaded.id;
        });
        recorded();
      }
    } catch (error) {
      if (this.#recorded !== loaded.id) {
        // A manifest write that failed after its rename (the folder's sync failed) may have left the
        // new strategy on the disk while this process keeps the old one; compacting by the old one
        // could then free what the new one's recovery needs (the log from its log start, or the
        // tombstones its checkpoint would replay). The old record is written again first, and
        // compaction resumes only once that is durable.
        this.#manifestUncertain = !(await this.#manifest!.update(() => {}).then(
          () => true,
          () => false,
        ));
        throw openFailure(
          error,
          `converting the store in ${this.#options.dir} to '${loaded.id}' failed (it keeps '${this.#recorded}'; a later conversion completes it${this.#manifestUncertain ? `; its store.json may hold either strategy, so compaction stays off until a conversion completes or the store is reopened` : ''})`,
        );
      }
      throw new OffsetStoreError(
        isOffsetStoreError(error) ? error.code : 'LOG_STORAGE_ERROR',
        `converting the store in ${this.#options.dir} to '${loaded.id}': the store now uses '${loaded.id}', but freeing what the old strategy kept failed (the log below the new log start, the checkpoints: they take space, nothing reads them): ${(error as Error).message}`,
        { cause: error },
      );
    } finally {
      if (!this.#closed && !this.#manifestUncertain) this.#startCompaction();
    }
  }

  /**
   * Writes a backup of the store, while it runs, into the new directory `to`: every offset and group
   * snapshot acknowledged before the call (and perhaps some committed during it), as a store that
   * `OffsetStore.open` opens like any other (with the same strategy module, for a module strategy).
   * Commits and fetches go on meanwhile; compaction pauses (runs in flight finish first, none starts
   * until the backup is done, the interval keeps counting). The backup is built in
   * `<to>.partial` and renamed to `<to>` once complete and durable, so `to` never holds half a
   * backup, even after a crash. Every segment copied is read back and checked.
   *
   * INVALID_REQUEST when `to` exists, is inside the store (or holds it), or is not a path;
   * CORRUPT_MESSAGE when a segment of the store is damaged (nothing is written); STORE_CLOSED when the
   * store closes first; LOG_STORAGE_ERROR for a failed read or write, or a bucket that did not
   * recover. A failed backup leaves nothing behind.
   */
  backup(to: string): Promise<BackupReport> {
    let target: string;
    try {
      this.#checkWritable('backup');
      target = resolveBackupTarget(this.#options.dir, to);
      if (this.#hosted)
        throw new OffsetStoreError(
          'INVALID_REQUEST',
          'a hosting store is not backed up here: its buckets live in the cluster (see the cluster documentation)',
        );
    } catch (error) {
      return Promise.reject(error);
    }
    // With conversions, one at a time: each pauses compaction, and close waits for both.
    return this.#conversions.run(async () => {
      this.#checkOpen();
      // A bucket that did not recover is refused below, with its own error.
      await this.#recovery.catch(() => {});
      this.#checkOpen();
      const buckets: BackupBucket[] = this.#slots.map((slot) => {
        const log = slot.bucket?.table.segmentLog;
        if (log === undefined) {
          const cause = slot.loadError;
          throw new OffsetStoreError(
            isOffsetStoreError(cause) ? cause.code : 'LOG_STORAGE_ERROR',
            `cannot back up the store in ${this.#options.dir}: offsets-bucket ${slot.index} did not recover: ${(cause as Error | undefined)?.message ?? String(cause)}`,
            { cause },
          );
        }
        return { index: slot.index, dir: slot.dir, log };
      });
      const compactor = this.#compactor;
      // Past the wait, the runs still in flight are abandoned as a close abandons them, and
      // compaction starts afresh after the backup (its interval counting from then).
      const paused = (await compactor?.pause(BACKUP_COMPACTION_WAIT_MS)) ?? true;
      if (!paused) await compactor!.close();
      try {
        return await writeBackup(
          {
            fs: this.#options.fs,
            dir: this.#options.dir,
            batchBytesMax: LOG_DEFAULTS.batchBytesMax,
            manifest: () => this.#manifest!.manifest,
            buckets,
            checkOpen: () => this.#checkOpen(),
          },
          target,
        );
      } finally {
        if (paused) compactor?.resume();
        else if (!this.#closed) this.#startCompaction();
      }
    });
  }

  /** What offsets-bucket `index` is given to serve, whether it recovers here or is hosted. */
  #bucketSettings(
    index: number,
  ): Pick<
    OffsetsBucketOptions,
    'index' | 'clock' | 'group' | 'layouts' | 'onWarning' | 'onGroupDropped' | 'bucketOf'
  > {
    return {
      index,
      clock: this.#options.clock,
      group: this.#options.group,
      layouts: this.#layouts,
      onWarning: this.#options.onWarning,
      onGroupDropped: (groupId) => this.#fetchCache.delete(groupId),
      bucketOf: (groupId) => this.#bucketOfGroup(groupId),
    };
  }

  async #recoverAll(): Promise<void> {
    await settleAtMost(this.#slots, DEFAULTS.recoveryConcurrency, async (slot) => {
      if (this.#closed || slot.loadError !== undefined) return;
      try {
        const bucket = await OffsetsBucket.load({
          ...this.#bucketSettings(slot.index),
          log: this.#logOptions(slot.dir, slot.index),
          useCheckpoints: recordedStrategy(this.#recorded)!.checkpoints,
          readOnly: this.#options.readOnly,
          record: slot.record,
        });
        try {
          // Recorded before the bucket serves, whatever becomes of the others: what recovery
          // found is durable now, and a later open must not take its last batches for a torn tail.
          await this.#raiseLogEnd(slot.index, bucket.logEnd().logOffset);
        } catch (error) {
          // Not installed, so nothing else would close it: its timers would write through a
          // log nothing owns any more.
          await bucket.unload().catch(() => {});
          throw error;
        }
        // Layouts set while it was being recorded reached only the installed buckets: the
        // coordinator takes the current ones (an unchanged layout changes nothing).
        for (const [tableId, layout] of this.#layouts)
          bucket.coordinator.setTableLayout(tableId, layout);
        slot.bucket = bucket;
      } catch (error) {
        // Recorded, not thrown: the other buckets go on recovering (and serving, without awaitRecovery).
        slot.loadError = error;
      }
    });
    const failed = this.#slots.find((slot) => slot.loadError !== undefined);
    if (failed !== undefined)
      throw openFailure(
        failed.loadError,
        `offsets-bucket ${failed.index} of ${this.#options.dir} failed to open`,
        this.#slots.length,
      );
    // Close began while buckets recovered (awaitRecovery: false) and stopped those not loading yet.
    this.#checkAllLoaded();
  }

  /**
   * Every offsets-bucket has recovered, so each log holds durably what the journal files read at
   * open held for it (Log.open wrote it and fdatasynced): they are deleted.
   */
  async #retireJournalRead(): Promise<void> {
    const read = this.#journalRead;
    // Called only once #recoverAll succeeded, every bucket loaded: a close begun while buckets
    // recovered (awaitRecovery: false) makes it fail, and the buckets it stopped from loading
    // never replayed what the journal holds for them, which the next open needs.
    if (read === undefined) return;
    this.#journalRead = undefined;
    try {
      await this.#checkDirectory();
      await deleteJournalFiles(this.#options.fs, this.#options.dir, read.files);
    } catch (error) {
      // Every bucket serves, and every log holds what those files held: what is left of them is
      // replayed again by the next open, which changes nothing (a log skips the batches it holds).
      this.#options.onWarning(
        `deleting the commit-journal files read at open (${read.files.join(', ')}) failed; the next open reads them again: ${(error as Error).message}`,
      );
    }
  }

  /** The journal retires a file: offsets-bucket `index`'s log makes everything it wrote durable in itself. */
  async #syncBucketLog(index: number): Promise<void> {
    const log = this.#slots[index]?.bucket?.table.log;
    // Not loaded (any more): a bucket unloads only by closing its log, which fdatasyncs it.
    if (log instanceof Log) await log.syncAcknowledged();
  }

  #logOptions(dir: string, index: number) {
    return {
      journal:
        this.#journal === undefined && this.#journalRead === undefined
          ? undefined
          : { port: this.#journal, bucket: index, replay: this.#journalRead?.batches.get(index) },
      // In either durability (in 'os' the log makes a segment's first run durable for it).
      onSegmentStarted: (logEnd: number) => this.#raiseLogEnd(index, logEnd),
      beforeFirstWrite: () => this.#beforeFirstWrite(index),
      checkDirectory: this.#checkDirectory,
      fs: this.#options.fs,
      dir,
      readOnly: this.#options.readOnly,
      durability: this.#options.durability,
      segmentBytesMax: this.#options.segmentBytesMax,
      prepareAtBytes: this.#options.prepareAtBytes,
      batchBytesMax: LOG_DEFAULTS.batchBytesMax,
      pendingAppendsMax: this.#options.pendingCommitsMax,
      flushBytesMax: LOG_DEFAULTS.flushBytesMax,
    };
  }

  /**
   * Resolves once every offsets-bucket has recovered (rejects if one failed to); after close rejects
   * with STORE_CLOSED, as every other call does: a closed store is not ready for anything.
   */
  async ready(): Promise<void> {
    this.#checkOpen();
    return this.#recovery;
  }

  /** True for a store opened with `readOnly: true` (every call that writes is STORE_READ_ONLY). */
  get readOnly(): boolean {
    return this.#options.readOnly;
  }

  /** The store directory, absolute. */
  get dir(): string {
    return this.#options.dir;
  }

  /**
   * The file-system port the store reads and writes through. Companions that keep files of their own
   * in the store directory (the Kafka topic catalog) go through it too, so an injected port sees every
   * file; the directory lock the store holds covers them.
   */
  get fileSystem(): FileSystem {
    return this.#options.fs;
  }

  /** Number of offsets-buckets, fixed at creation. */
  get bucketCount(): number {
    return this.#bucketCount;
  }

  /** The offsets-bucket a group lives in: xxh32(utf8(groupId)) % bucketCount. */
  bucketFor(groupId: string): number {
    const cached = this.#bucketCache.get(groupId);
    if (cached !== undefined) return cached;
    validateGroupId(groupId);
    const bucket = this.#bucketOfGroup(groupId);
    setBounded(this.#bucketCache, groupId, bucket);
    return bucket;
  }

  #bucketOfGroup(groupId: string): number {
    return xxh32(Buffer.from(groupId, 'utf8')) % this.#bucketCount;
  }

  /** Recovery reports per offsets-bucket (undefined while loading): copies, the caller's to change. */
  recoveryReports(): (OffsetsTableRecovery | undefined)[] {
    return this.#slots.map((s) => {
      const report = s.bucket?.report;
      return report === undefined ? undefined : structuredClone(report);
    });
  }

  #checkOpen(): void {
    if (this.#closed)
      throw new OffsetStoreError('STORE_CLOSED', `store ${this.#options.dir} is closed`);
  }

  /**
   * After recovery: a close begun while buckets recovered (awaitRecovery: false) stops those still
   * waiting to load from loading, and what needs every bucket cannot go on (STORE_CLOSED). A call
   * made before close whose buckets all loaded goes on (close waits for it where it says so).
   */
  #checkAllLoaded(): void {
    if (this.#slots.some((slot) => slot.bucket === undefined))
      throw new OffsetStoreError(
        'STORE_CLOSED',
        `store ${this.#options.dir} was closed before every offsets-bucket had recovered`,
      );
  }

  /** For every call that writes: STORE_READ_ONLY in a store open to read only, then as #checkOpen. */
  #checkWritable(what: string): void {
    if (this.#options.readOnly)
      throw new OffsetStoreError(
        'STORE_READ_ONLY',
        `${what}: the store in ${this.#options.dir} is open to read only (options.readOnly): nothing is written`,
      );
    this.#checkOpen();
  }

  /**
   * For what close must stop (scanners, members): refused from the moment close begins, since close
   * stops only those it finds when it begins (calls in flight are let finish: a commit still lands).
   */
  #checkNotClosing(): void {
    if (this.#closing !== undefined)
      throw new OffsetStoreError(
        'STORE_CLOSED',
        `store ${this.#options.dir} is ${this.#closed ? 'closed' : 'closing'}`,
      );
  }

  /** The loaded offsets-bucket of a group (COORDINATOR_LOAD_IN_PROGRESS while it recovers; its load error if that failed). */
  #bucket(groupId: string): OffsetsBucket {
    return this.#loaded(this.#slots[this.bucketFor(groupId)]!);
  }

  /** The slot's loaded offsets-bucket, or the error of a bucket recovering (retriable) or failed (not). */
  #loaded(slot: BucketSlot): OffsetsBucket {
    if (slot.bucket !== undefined) {
      if (this.#servingGuard !== undefined && !this.#servingGuard()) {
        throw new OffsetStoreError(
          'NOT_COORDINATOR',
          `offsets-bucket ${slot.index}: this node's lease is not confirmed, so it serves nothing: find the coordinator again`,
        );
      }
      return slot.bucket;
    }
    if (slot.notOwned)
      throw new OffsetStoreError(
        'NOT_COORDINATOR',
        `offsets-bucket ${slot.index} is not served by this node: find its coordinator again`,
      );
    if (slot.loadError !== undefined) {
      // Not retriable: the bucket will not load until its files are repaired (e.g. CORRUPT_MESSAGE).
      const { code } =
        slot.loadError instanceof OffsetStoreError
          ? slot.loadError
          : { code: 'LOG_STORAGE_ERROR' as const };
      throw new OffsetStoreError(
        code,
        `offsets-bucket ${slot.index} failed to load: ${(slot.loadError as Error).message}`,
        { cause: slot.loadError },
      );
    }
    throw new OffsetStoreError(
      'COORDINATOR_LOAD_IN_PROGRESS',
      `offsets-bucket ${slot.index} is still recovering`,
    );
  }

  /**
   * OffsetCommit: commits `offsets` of one group atomically (one batch); resolves once durable.
   * Nothing is written when any part of the request is invalid.
   */
  commitOffsets(groupId: string, offsets: OffsetCommit[], options?: CommitOptions): Promise<void> {
    return this.#commit(groupId, options, offsets, false);
  }

  /** Whether the consumer group holds that member (see HOLDS_CONSUMER_MEMBER). */
  [HOLDS_CONSUMER_MEMBER](groupId: string, memberId: string): boolean {
    try {
      this.#checkOpen();
      // Hosted mode: a bucket this node gave up is another node's now, for good as far as this
      // node knows; its members are not held here (their notes must not fill the directory of
      // this node for ever and refuse the members of the groups it still serves). A bucket that
      // comes back is restored from etcd, and its members send their subscriptions again.
      if (this.#hosted && this.#slots[this.bucketFor(groupId)]?.notOwned === true) return false;
      return this.#bucket(groupId).groupsForReads().holdsConsumerMember(groupId, memberId);
    } catch {
      return true;
    }
  }

  /** The directory check of CHECK_DIRECTORY. */
  [CHECK_DIRECTORY](): Promise<void> {
    return this.#checkDirectory();
  }

  /** `commitOffsets` of offsets the caller has normalized itself (see COMMIT_NORMALIZED). */
  [COMMIT_NORMALIZED](
    groupId: string,
    specs: OffsetRecordSpec[],
    options?: CommitOptions,
  ): Promise<void> {
    return this.#commit(groupId, options, specs, true);
  }

  /**
   * A commit of `offsets` (checked and normalized here, in commitOffsets' order), or of specs the
   * caller normalized itself (`normalized`: only their count is checked). Not async: a suspended
   * async function would keep the caller's objects alive until the commit is durable; only the
   * normalized specs need to live that long. (No closure per call either: this is every commit.)
   */
  #commit(
    groupId: string,
    options: CommitOptions | undefined,
    offsets: unknown,
    normalized: boolean,
    forScanner = false,
  ): Promise<void> {
    try {
      // Refused from the moment close is called, except a scanner's: close commits what they moved.
      if (!forScanner) this.#checkNotClosing();
      this.#checkWritable('commit');
      validateGroupId(groupId);
      const max = this.#options.commitRecordCountMax;
      let specs: OffsetRecordSpec[];
      if (normalized) {
        specs = offsets as OffsetRecordSpec[];
        checkCommitCount(specs.length, max);
      } else specs = normalizeOffsetCommits(offsets, max);
      const member = normalizeCommitOptions(options);
      return this.#bucket(groupId).commit(groupId, specs, member);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * OffsetFetch: one result per requested bucket (null where nothing is committed); without
   * `buckets`, every committed offset of the group. The answer comes from memory; this returns it as
   * a promise (see `fetchOffsetsSync` for the same answer without one).
   */
  fetchOffsets(
    groupId: string,
    buckets?: BucketRef[],
    options?: FetchOptions,
  ): Promise<(CommittedOffset | null)[]> {
    // Not async: the hot path saves the extra promise and microtask of an async function.
    try {
      return Promise.resolve(this.fetchOffsetsSync(groupId, buckets, options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * `fetchOffsets`, answered synchronously: the committed offsets are in memory, so a caller on a hot
   * path need not pay for a promise. Throws what `fetchOffsets` rejects with (COORDINATOR_LOAD_IN_PROGRESS
   * while the group's offsets-bucket recovers, UNSTABLE_OFFSET_COMMIT with `requireStable`, ...).
   */
  fetchOffsetsSync(
    groupId: string,
    buckets?: BucketRef[],
    options?: FetchOptions,
  ): (CommittedOffset | null)[] {
    this.#checkOpen();
    const requireStable = options === undefined ? false : requiresStable(options);
    const member = options?.member;
    if (!requireStable && member === undefined && Array.isArray(buckets) && !this.#hosted) {
      // Only strings that passed validateGroupId below are keys of the cache (a hosting store has
      // none: each fetch must ask whether this node still owns the bucket).
      const cached = this.#fetchCache.get(groupId);
      if (cached !== undefined) {
        if (!cached.detached) return fetchFromGroup(groupId, cached, buckets);
        this.#fetchCache.delete(groupId); // do not keep a dropped table alive
      }
    }
    validateGroupId(groupId);
    const bucket = this.#bucket(groupId);
    if (buckets !== undefined && !Array.isArray(buckets))
      throw new TypeError('buckets must be an array');
    if (member !== undefined) {
      // Each field read once: the identity checked is the identity the coordinator sees.
      const memberId: unknown = member === null ? undefined : member.memberId;
      const memberEpoch: unknown = member === null ? undefined : member.memberEpoch;
      if (
        member === null ||
        typeof member !== 'object' ||
        typeof memberId !== 'string' ||
        !Number.isSafeInteger(memberEpoch)
      )
        throw new OffsetStoreError(
          'INVALID_REQUEST',
          'options.member must be { memberId: string, memberEpoch: integer }',
        );
      bucket.groupsForReads().validateMemberFetch(groupId, memberId, memberEpoch as number);
    }
    if (buckets === undefined || requireStable)
      return bucket.fetch(groupId, buckets, requireStable);
    const group = bucket.group(groupId);
    if (group !== undefined) setBounded(this.#fetchCache, groupId, group);
    return fetchFromGroup(groupId, group, buckets);
  }

  /**
   * The protocol of the group of that id: `'consumer'` or `'classic'` while its coordinator holds
   * state for it (members, or an Empty group it still keeps), null otherwise (no group, or offsets
   * only). Synchronous, from memory: a wire front end uses it to read a commit's generation field
   * as a consumer-protocol member epoch or a classic generation (Kafka's OffsetCommit v9 carries
   * either). Throws like `fetchOffsetsSync` (STORE_CLOSED, INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS).
   */
  groupType(groupId: string): GroupType | null {
    this.#checkOpen();
    validateGroupId(groupId);
    return this.#bucket(groupId).groupsForReads().groupType(groupId);
  }

  /** Every group with committed offsets or members. */
  async listGroups(): Promise<GroupListing[]> {
    this.#checkOpen();
    // A hosting node whose lease is not confirmed serves nothing, but a broker-wide listing is not
    // a group's coordinator call: NOT_COORDINATOR would make Kafka's admin (listConsumerGroups)
    // fail the node instead of asking again. COORDINATOR_NOT_AVAILABLE is retried.
    if (this.#hosted && this.#servingGuard !== undefined && !this.#servingGuard())
      throw new OffsetStoreError(
        'COORDINATOR_NOT_AVAILABLE',
        "this node's lease is not confirmed, so it lists no group now: ask again shortly",
      );
    const listings: GroupListing[] = [];
    for (const slot of this.#slots) {
      // A partial listing would hide groups: every bucket must be loaded (retriable while one recovers).
      // A hosting node lists the groups it coordinates, as each Kafka broker does.
      if (slot.notOwned) continue;
      for (const { groupId, state, groupType, protocolType } of this.#loaded(slot).listGroups()) {
        listings.push({
          groupId,
          state: state ?? 'Empty',
          offsetsBucket: slot.index,
          groupType,
          protocolType,
        });
      }
    }
    return listings.sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0));
  }

  /** State and committed offsets of a group; GROUP_ID_NOT_FOUND if it has neither offsets nor members. */
  async describeGroup(groupId: string): Promise<GroupDescription> {
    this.#checkOpen();
    validateGroupId(groupId);
    const { membership, classic, offsets } = this.#bucket(groupId).describe(groupId);
    return {
      groupId,
      offsetsBucket: this.bucketFor(groupId),
      state: membership?.state ?? classic?.state ?? 'Empty',
      groupType: membership !== null ? 'consumer' : 'classic',
      protocolType: membership !== null ? 'consumer' : (classic?.protocolType ?? ''),
      groupEpoch: membership?.groupEpoch ?? 0,
      assignmentEpoch: membership?.assignmentEpoch ?? 0,
      assignor: membership === null || membership.members.length === 0 ? null : membership.assignor,
      members: membership?.members ?? [],
      classic,
      offsets,
    };
  }

  /** Overwrites committed offsets of a group that has no members (NON_EMPTY_GROUP otherwise). */
  async resetOffsets(groupId: string, offsets: OffsetCommit[]): Promise<void> {
    this.#checkWritable('resetOffsets');
    validateGroupId(groupId);
    const specs = normalizeOffsetCommits(offsets, this.#options.commitRecordCountMax);
    await this.#bucket(groupId).reset(groupId, specs);
  }

  /** Deletes committed offsets of some buckets (tombstones); refuses buckets assigned to a member. */
  async deleteOffsets(
    groupId: string,
    buckets: BucketRef[],
    options?: DeleteOffsetsOptions,
  ): Promise<void> {
    this.#checkWritable('deleteOffsets');
    validateGroupId(groupId);
    const refs = normalizeBuckets(buckets, 'buckets', true);
    if (options !== undefined) checkOptionsBag(options, ['classicSubscriptions'], 'options');
    const classicSubscriptions = options?.classicSubscriptions;
    if (classicSubscriptions !== undefined && typeof classicSubscriptions !== 'function')
      throw new TypeError('options.classicSubscriptions must be a function');
    await this.#bucket(groupId).deleteOffsets(groupId, refs, classicSubscriptions);
  }

  /** Deletes a group without members: all its offsets; it disappears from listGroups. */
  async deleteGroup(groupId: string): Promise<void> {
    this.#checkWritable('deleteGroup');
    validateGroupId(groupId);
    await this.#bucket(groupId).deleteGroup(groupId);
  }

  /**
   * Removes members from a group, as Kafka's Admin `removeMembersFromConsumerGroup`: every member
   * (`{ all: true }`), or those named by `memberIds` or by static `instanceIds`. Each leaves as with
   * `leave()` (memberEpoch -1): its buckets go to the other members, a static member's instance id is
   * released. For members that will not come back, such as those of a process that exited without
   * `leave()`: restored from the group's snapshot, they keep the group non-empty (resetOffsets and
   * deleteGroup refuse it) until their session times out. Resolves with the removed members, sorted by
   * id, once the change is durable. GROUP_ID_NOT_FOUND for a group with neither committed offsets nor
   * members; UNKNOWN_MEMBER_ID, with nothing removed, for an id not in the group.
   */
  async removeMembers(groupId: string, request: RemoveMembersRequest): Promise<RemovedMember[]> {
    this.#checkWritable('removeMembers');
    validateGroupId(groupId);
    return this.#bucket(groupId).removeMembers(groupId, request);
  }

  /**
   * The group-membership protocol (docs/group-protocol.md): join (memberEpoch 0), heartbeat, leave (-1)
   * or static temporary leave (-2). The response carries the member's assignment when it changed.
   */
  async heartbeat(groupId: string, request: HeartbeatRequest): Promise<HeartbeatResponse> {
    this.#checkWritable('heartbeat');
    validateGroupId(groupId);
    return this.#bucket(groupId).heartbeat(groupId, request);
  }

  /** See REFRESH_SUBSCRIPTIONS. */
  async [REFRESH_SUBSCRIPTIONS](
    groupId: string,
    updates: ReadonlyMap<string, SubscriptionRefresh>,
  ): Promise<void> {
    this.#checkWritable('heartbeat');
    validateGroupId(groupId);
    return this.#bucket(groupId).refreshSubscriptions(groupId, updates);
  }

  /**
   * Registers the layout of a user table (bucket count, partitions), which the assignors distribute.
   * Not persisted: the embedding service supplies it after every open. A change rebalances the
   * groups subscribed to the table.
   */
  setTableLayout(tableId: number, layout: TableLayoutInput): void {
    this.#checkWritable('setTableLayout');
    // Read once: every coordinator, and those still loading later, get the same checked copy.
    const normalized = normalizeTableLayout(tableId, layout);
    // Checked against every loaded group first, so that a refusal changes nothing anywhere.
    for (const slot of this.#slots) slot.bucket?.coordinator.checkTableLayout(tableId, normalized);
    for (const slot of this.#slots) slot.bucket?.coordinator.setTableLayout(tableId, normalized);
    this.#layouts.set(tableId, normalized);
  }

  /**
   * Joins a group as a member that runs its own heartbeat loop and gets buckets assigned; see
   * GroupMember. `leave()` it when done; `close()` stops every member still running.
   */
  async joinGroup(groupId: string, options: MemberOptions): Promise<GroupMember> {
    this.#checkWritable('joinGroup');
    this.#checkNotClosing();
    validateGroupId(groupId);
    const member = await GroupMember.join(
      {
        heartbeat: (g, request) => this.heartbeat(g, request),
        commit: (g, offsets, commitOptions) =>
          this.commitOffsets(g, offsets as OffsetCommit[], commitOptions),
        stopped: (stopped) => this.#members.delete(stopped),
        clock: this.#options.clock,
      },
      groupId,
      options,
    );
    // Close began while it joined, and stops only the members it knows of: this one is stopped
    // here, as close stops every member. It joined (its snapshot is durable), so it is returned,
    // not refused: a refusal would leave a member in the group that its caller never heard of.
    if (this.#closing !== undefined) member.stop();
    else this.#members.add(member);
    return member;
  }

  /** A manual-assignment helper for a scanner of `groupId` (no rebalance). */
  scanner(groupId: string, options?: ScannerOptions): ScannerOffsets {
    this.#checkWritable('scanner');
    this.#checkNotClosing();
    validateGroupId(groupId);
    const scanner = new ScannerOffsets(
      groupId,
      {
        commitOffsets: (g, offsets) => this.#commit(g, undefined, offsets, false, true),
        fetchOffsets: (g, buckets) => this.fetchOffsets(g, buckets),
        closed: (closed) => this.#scanners.delete(closed),
        warn: (message) => this.#options.onWarning(message),
        retentionMs: this.#options.offsetsRetentionMs,
      },
      this.#options.clock,
      options,
    );
    this.#scanners.add(scanner);
    return scanner;
  }

  /**
   * The highest table id of any offset committed in the store (0 when none), once every
   * offsets-bucket has recovered; if one failed to, it rejects with that bucket's error rather
   * than answer too low. A catalog naming tables
   * (the Kafka server's topics) that was lost or restored from an older copy gives new tables ids
   * above it, so that no new table inherits another's committed offsets.
   */
  async highestTableId(): Promise<number> {
    this.#checkOpen();
    await this.#recovery.catch(() => {});
    // (A hosting store loads only the buckets its host hands it.)
    if (!this.#hosted && !this.#slots.some((slot) => slot.loadError !== undefined))
      this.#checkAllLoaded();
    const failed = this.#slots.find((slot) => slot.loadError !== undefined);
    if (failed !== undefined) {
      const cause = failed.loadError as Error;
      throw new OffsetStoreError(
        isOffsetStoreError(cause) ? cause.code : 'LOG_STORAGE_ERROR',
        `cannot tell the highest table id in use: offsets-bucket ${failed.index} of ${this.#options.dir} failed to open, and the offsets it holds may be of any table: ${cause?.message}`,
        { cause },
      );
    }
    let highest = 0;
    for (const slot of this.#slots) {
      if (slot.bucket === undefined) continue;
      for (const [, offsets] of slot.bucket.table.state.groupTables())
        for (let i = 0; i < offsets.size; i++) highest = Math.max(highest, offsets.tableIdAt(i));
    }
    return highest;
  }

  /** Figures per offsets-bucket. */
  async stats(): Promise<StoreStats> {
    this.#checkOpen();
    const buckets = this.#slots.map((slot): BucketStats => {
      const bucket = slot.bucket;
      if (bucket === undefined) {
        if (slot.notOwned)
          return {
            bucket: slot.index,
            state: 'not-owned',
            logBytes: 0,
            appendedBytes: 0,
            segmentCount: 0,
            nextLogOffset: 0,
            liveOffsets: 0,
            groups: 0,
            checkpoint: undefined,
          };
        return {
          bucket: slot.index,
          state: slot.loadError === undefined ? 'loading' : 'failed',
          logBytes: 0,
          appendedBytes: 0,
          segmentCount: 0,
          nextLogOffset: 0,
          liveOffsets: 0,
          groups: 0,
          checkpoint: undefined,
        };
      }
      return {
        bucket: slot.index,
        state: bucket.table.log.failed ? 'stopped' : 'ready',
        ...bucket.figures(),
        checkpoint: bucket.table.latestCheckpoint(),
      };
    });
    const totals = { logBytes: 0, appendedBytes: 0, segmentCount: 0, liveOffsets: 0, groups: 0 };
    for (const b of buckets) {
      totals.logBytes += b.logBytes;
      totals.appendedBytes += b.appendedBytes;
      totals.segmentCount += b.segmentCount;
      totals.liveOffsets += b.liveOffsets;
      totals.groups += b.groups;
    }
    return {
      dir: this.#options.dir,
      bucketCount: this.#bucketCount,
      durability: this.#options.durability,
      compactionStrategy: this.#recorded,
      buckets,
      totals,
    };
  }

  #armRetention(): void {
    if (this.#closed) return;
    this.#retentionTimer = this.#options.clock.setTimer(
      this.#options.offsetsRetentionCheckIntervalMs,
      () => {
        this.#retentionRun = this.#expireOffsets()
          .catch((error: unknown) =>
            this.#options.onWarning(`offsets retention: ${(error as Error).message}`),
          )
          .then(() => this.#checkSegmentsPresent())
          .finally(() => {
            this.#retentionRun = undefined;
            this.#armRetention();
          });
      },
    );
  }

  /** One retention pass over every recovered offsets-bucket (OffsetsBucket.expire). */
  async #expireOffsets(): Promise<void> {
    const nowMs = this.#options.clock.nowMs();
    await Promise.allSettled(
      this.#slots.map((slot) => slot.bucket?.expire(this.#options.offsetsRetentionMs, nowMs)),
    );
  }

  /**
   * With each retention pass: every loaded log checks that its segment files are still in its folder
   * (Log.checkSegmentsPresent), so that one removed under a quiet log stops it within an interval,
   * not only at its next roll or compaction. A log it stops is named in a warning. The commit journal
   * checks its file too (CommitJournal.checkFilePresent): one removed is replaced by a new one.
   */
  async #checkSegmentsPresent(): Promise<void> {
    await this.#checkManifestPresent().catch(() => {});
    await this.#journal?.checkFilePresent().catch(() => {});
    await Promise.all(
      this.#slots.map(async (slot) => {
        const log = slot.bucket?.table.log;
        if (!(log instanceof Log) || log.failed) return;
        const failure = await log.checkSegmentsPresent().catch(() => undefined);
        if (failure !== undefined && !this.#closed)
          this.#options.onWarning(`offsets-bucket ${slot.index} stopped: ${failure.message}`);
      }),
    );
  }

  /**
   * With each retention pass: a `store.json` removed while the store runs is written again from
   * memory, with a warning. Left missing, a crash would leave a store no open accepts ("missing,
   * but ... a store was here") until someone restores the file.
   */
  async #checkManifestPresent(): Promise<void> {
    const manifest = this.#manifest;
    if (manifest === undefined || this.#hosted || this.#options.readOnly || this.#closed) return;
    if ((await this.#options.fs.sizeBytes(manifest.path)) !== null) return;
    this.#options.onWarning(
      `${manifest.path} was removed while the store ran: written again from what the store holds`,
    );
    await manifest.update(() => {});
  }

  /** Closes scanners (committing what moved), stops timers, flushes every log, releases the lock. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    try {
      await this.#closeAll();
    } finally {
      // Once its checkpoint environments are closed: a writable open may follow.
      this.#releaseReader?.();
    }
  }

  async #closeAll(): Promise<void> {
    const scannerResults = await Promise.allSettled([...this.#scanners].map((s) => s.close()));
    for (const member of [...this.#members]) member.stop();
    this.#closed = true;
    for (const slot of this.#slots) slot.bucket?.stopTimers();
    this.#retentionTimer?.cancel();
    await this.#retentionRun;
    await this.#compactor?.close();
    await this.#conversions.settled();
    await this.#recovery.catch(() => {});
    // Its manifest write would otherwise still run once close has failed and released the lock.
    await this.#endsRaised;
    let failure: unknown;
    let logsClosed = false;
    try {
      await this.#unloadBuckets(this.#lastCheckpointTime());
      await this.#recordLogEnds();
      // Every log closed cleanly (each fdatasynced what it wrote) and no journal file read at open
      // still waits for a bucket that did not recover: the journal holds nothing needed any more.
      logsClosed =
        this.#journalRead === undefined &&
        this.#slots.every((slot) => slot.bucket !== undefined && slot.bucket.logEnd().exact);
    } catch (error) {
      failure = openFailure(error, `closing the store in ${this.#options.dir} failed`);
    }
    try {
      await this.#journal?.close(logsClosed);
    } catch (error) {
      failure ??= openFailure(error, `closing the commit journal of ${this.#options.dir} failed`);
    }
    try {
      await this.#lock?.release();
    } catch (error) {
      // Everything else is closed; a LOCK file left behind is stale, and the next open takes it over.
      failure ??= openFailure(
        error,
        `closing the store in ${this.#options.dir}: its LOCK file could not be removed (the next open takes the stale lock over)`,
      );
    }
    if (failure !== undefined) throw failure;
    const failed = scannerResults.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  /**
   * Records each recovered log's end as a lower bound of where it ends (recovery made what it holds
   * durable), and every recorded end as a lower bound: a later open that finds a log ending below it
   * knows segments were lost, even after a crash. The end recorded is where the log is durable now:
   * a loaded bucket may have written since it recovered (its coordinator's timers, or commits while
   * other buckets recover), and in durability 'os' a power loss may lawfully take that.
   */
  async #raiseLogEnds(): Promise<void> {
    // Only loaded buckets: one that failed to load (or that close stopped from loading) keeps its
    // record as it was, exact or not, for the next open to hold its log to.
    const ends = this.#slots.map((slot) => slot.bucket?.table.log.durableEnd);
    const raised = (b: BucketLogRecord, i: number) =>
      ends[i] !== undefined && (b.endExact || ends[i] > b.logEnd);
    if (!this.#manifest!.manifest.buckets.some(raised)) return;
    await this.#manifest!.update((m) => {
      m.buckets.forEach((b, i) => {
        if (ends[i] === undefined) return;
        b.endExact = false;
        b.logEnd = Math.max(b.logEnd, ends[i]);
      });
    });
  }

  /**
   * Bucket `index`'s log is about to write for the first time since the store opened: if its end is
   * still recorded as exact (awaiting recovery, the ends become lower bounds only once every bucket
   * has loaded, and a loaded bucket's coordinator timers may write snapshots before that), it becomes
   * a lower bound first. Otherwise a failed open would leave an exact end below what the log holds,
   * and the next open would refuse the healthy bucket as having lost batches.
   */
  async #beforeFirstWrite(index: number): Promise<void> {
    if (this.#manifest === undefined || !this.#manifest.manifest.buckets[index]!.endExact) return;
    await this.#manifest.update((m) => {
      m.buckets[index]!.endExact = false;
    });
  }

  /**
   * Bucket `index`'s log started a new segment, or was recovered, and holds batches up to `logEnd - 1`
   * durably: that is recorded
   * as a lower bound of where it ends. A failure is a warning (the bound stays lower; nothing is lost).
   */
  async #raiseLogEnd(index: number, logEnd: number): Promise<void> {
    if (this.#manifest === undefined || this.#manifest.manifest.buckets[index]!.logEnd >= logEnd)
      return;
    await this.#manifest
      .update((m) => {
        const b = m.buckets[index]!;
        if (b.logEnd < logEnd && !b.endExact) b.logEnd = logEnd;
      })
      .catch((error: unknown) =>
        this.#options.onWarning(
          `recording the log end of offsets-bucket ${index} in ${this.#manifest!.path} failed: ${(error as Error).message}`,
        ),
      );
  }

  /**
   * Records in the manifest where each log closed: exactly, for a log closed cleanly (the next open
   * refuses a log that ends anywhere else), as a lower bound for one a storage failure stopped.
   */
  async #recordLogEnds(): Promise<void> {
    if (this.#hosted) return; // hosted logs are not in this directory
    await this.#manifest?.update((m) => {
      for (const slot of this.#slots) {
        const end = slot.bucket?.logEnd();
        if (end === undefined) continue;
        m.buckets[slot.index] = {
          logStart: m.buckets[slot.index]!.logStart,
          logEnd: end.logOffset,
          endExact: end.exact,
        };
      }
    });
  }

  /**
   * When a clean close's last checkpoints are taken (strategies that keep them), or undefined: also
   * when the clock cannot say (a warning), so that the buckets are still unloaded and their logs closed.
   */
  #lastCheckpointTime(): number | undefined {
    if (this.#options.readOnly || !recordedStrategy(this.#recorded)!.checkpoints) return undefined;
    try {
      return this.#options.clock.nowMs();
    } catch (error) {
      this.#options.onWarning(
        `closing ${this.#options.dir} without last checkpoints: ${(error as Error).message}`,
      );
      return undefined;
    }
  }

  /** Unloads every loaded offsets-bucket; with `checkpointAtMs`, each writes a last checkpoint first. */
  async #unloadBuckets(checkpointAtMs?: number): Promise<void> {
    const buckets = this.#slots.map((s) => s.bucket);
    // Each last checkpoint reads its environment's file again through a descriptor of its own: all
    // at once, a store that opened at its open-file limit would fail its close.
    const atOnce = checkpointAtMs === undefined ? buckets.length : CLOSING_CHECKPOINTS_AT_ONCE;
    const results = await settleAtMost(buckets, atOnce, async (bucket) =>
      bucket?.unload(checkpointAtMs),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }
}

/** The compaction strategy a manifest records, checked: a built-in's name or `module:<name>[+checkpoints]`. */
function storedStrategy(
  manifestPath: string,
  value: string,
): { id: string; builtIn: CompactionStrategy | undefined } {
  const recorded = recordedStrategy(value);
  if (recorded !== undefined) return { id: value, builtIn: recorded.builtIn };
  throw new OffsetStoreError(
    'CORRUPT_MESSAGE',
    `${manifestPath}: unknown compactionStrategy ${JSON.stringify(value)}`,
  );
}

/** FetchOptions' requireStable, checked: a bag that is not an object, or a value not a boolean, is a TypeError. */
function requiresStable(options: FetchOptions): boolean {
  checkOptionsBag(options, ['requireStable', 'member'], 'options');
  const requireStable: unknown = options.requireStable;
  if (requireStable !== undefined && typeof requireStable !== 'boolean')
    throw new TypeError(`options.requireStable must be a boolean, got ${typeof requireStable}`);
  return requireStable === true;
}

/**
 * `compaction.onRun`, made harmless: it only hears of runs, so a listener that throws changes no
 * run (it used to fail the run as LOG_STORAGE_ERROR, "what it had not finished changed nothing",
 * after the compaction had been applied, or every run when it threw on 'started'); its error
 * becomes a warning.
 */
function heardSafely(
  listener: CompactionRunListener | undefined,
  warn: (message: string) => void,
): CompactionRunListener | undefined {
  if (listener === undefined) return undefined;
  return (event) =>
    callUserCallback(listener, [event], (how, error) =>
      warn(
        `compaction.onRun ${how} on a '${event.kind}' event (the run goes on as if it had not): ${failureMessage(error)}`,
      ),
    );
}
