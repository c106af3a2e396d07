/**
 * One simulation: the real OffsetStore on a simulated disk and clock, driven by a seeded workload
 * and checked against the reference model after every fetch and every recovery.
 *
 * Loop (one iteration per operation index):
 * 1. The seed picks an action by the config's weights: start a workload call (commit, fetch, reset,
 *    delete, a member joining, leaving, going silent, committing), run a compaction, let time pass,
 *    or end the process (crash, power loss, clean restart).
 * 2. Between actions the scheduler runs I/O completions and timers in virtual-time order; every
 *    settled call updates the model (sim-model.ts), and every answer is checked against it.
 * 3. After a crash or power loss a new process (new file-system view and clock over the same disk)
 *    reopens the store; the whole state is then fetched and checked, and every group must describe
 *    (its members come back as the last snapshot had them, a rebalance in flight included).
 * A violation stops the run with the operation index and the trace; damage the store reports
 * (CORRUPT_MESSAGE, LOG_STORAGE_ERROR) ends it as "detected" when a fault was injected that explains
 * it, and is a violation when none was.
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  isOffsetStoreError,
  OffsetStore,
  type CommittedOffset,
  type CompactionStrategy,
  type OffsetCommit,
  type OffsetStoreOptions,
} from '../src/index.js';
import { loadChecksum } from '../src/codec/index.js';
import { forgetCheckpointProcessState } from '../src/kv/index.js';
import {
  forgetHeldDirectories,
  forgetJournalProcessState,
  forgetLogProcessState,
} from '../src/log/index.js';
import { observeExternalWork } from '../src/util/index.js';
import { JOURNAL_FILE_BYTES, PREPARE_AT_BYTES, READ_ONLY_PAUSE } from '../src/store-options.js';
import { forgetStoreProcessState } from '../src/store.js';
import {
  configFor,
  type ActionWeights,
  type FaultProfileName,
  type SimConfig,
} from './sim-config.js';
import { SECTOR_BYTES, SimDisk } from './sim-disk.js';
import { NO_FAULTS, SimFileSystem, isNativePath } from './sim-file-system.js';
import { dumpLog } from '../src/admin/index.js';
import { SimMembers } from './sim-members.js';
import { ModelViolation, OffsetsModel, keyOf, type CopyWindow, type Write } from './sim-model.js';
import { SimRandom } from './sim-random.js';
import { SimClock, SimScheduler } from './sim-scheduler.js';

/**
 * Opens retried after failures that injected transient faults explain (an EIO on a read, say). An
 * open of a store of many small segments makes hundreds of I/O calls, so at a swarm's higher fault
 * rates several in a row can fail; each is a correct refusal, and the store must open eventually.
 */
const OPEN_ATTEMPTS = 16;

/** The store clock's time when a simulation begins. */
export const SIM_EPOCH_MS = 1_700_000_000_000;
const TRACE_LINES = 60;

/** The outcome of a call whose process died before it settled (see `settle`). */
const PROCESS_DIED = new Error('the process died before the call settled');

/** How to run a simulation. */
export interface SimOptions {
  seed: number;
  /** Workload actions to run; default 2000. */
  ops?: number;
  /** Fault profile; default 'crash' (crashes and power losses, no injected I/O errors). */
  faults?: FaultProfileName;
  /** Vary the workload mix and fault rates per seed. */
  swarm?: boolean;
  /** Print each action as it happens. */
  verbose?: boolean;
  /**
   * Chance that a process opens the store in durability 'os' (default: drawn from the seed, 0 in
   * three runs of five). The regression seeds run with 0 unless they say otherwise.
   */
  osShare?: number;
  /**
   * Chance that a process opens with `awaitRecovery: false` (default: drawn from the seed, 0 in two
   * runs of three). The regression seeds run with 0 unless they say otherwise.
   */
  lazyOpenShare?: number;
  /**
   * Chance per action that a read-only view of the store is opened beside the live process and
   * checked (default: drawn from the seed, 0 in two runs of four). The regression seeds run with 0
   * unless they say otherwise.
   */
  viewChance?: number;
  /**
   * Chance that a process's file system makes fdatasyncs on the calling thread when asked
   * (default: drawn from the seed, 0 in one run of three). The regression seeds run with 0 unless
   * they say otherwise.
   */
  syncNowShare?: number;
}

/** What a simulation did and found. */
export interface SimResult {
  seed: number;
  ok: boolean;
  /** 'violation' (a bug), 'detected' (damage injected and reported), 'completed'. */
  outcome: 'completed' | 'detected' | 'violation';
  ops: number;
  crashes: number;
  powerLosses: number;
  restarts: number;
  /** Read-only views opened beside the live process and checked. */
  viewsChecked: number;
  steps: number;
  virtualMs: number;
  wallMs: number;
  /** sha256 of the simulated disk at the end: equal for runs of the same seed. */
  digest: string;
  message?: string;
  opIndex?: number;
  trace: string[];
  /** On a violation about one key: its every record in the logs at the end. */
  history: string[];
  config: SimConfig;
}

/** A backup started by the workload, and what it may hold. */
interface PendingBackup {
  readonly label: string;
  readonly to: string;
  readonly window: CopyWindow;
  /** Its process ended before it settled: the backup directory may or may not exist. */
  cutShort: boolean;
}

const names = (weights: ActionWeights) => Object.keys(weights) as (keyof ActionWeights)[];

class Simulation {
  readonly seed: number;
  readonly random: SimRandom;
  readonly workload: SimRandom;
  readonly config: SimConfig;
  readonly disk = new SimDisk();
  readonly scheduler = new SimScheduler();
  readonly model: OffsetsModel;
  readonly members: SimMembers;
  readonly realRoot: string;
  readonly dir: string;
  readonly trace: string[] = [];
  readonly verbose: boolean;
  fs!: SimFileSystem;
  clock!: SimClock;
  store: OffsetStore | undefined;
  incarnation = 0;
  /** The running process opened the store in durability 'os'. */
  unsynced = false;
  /**
   * A process opened in durability 'os' since everything was last known durable: a power loss may
   * take what it acknowledged (see OffsetsModel.powerLoss).
   */
  unsyncedSinceDurable = false;
  /**
   * The running process opened with `awaitRecovery: false` and its recovery check is still to come:
   * how `store.ready()` settled once it has (undefined while buckets recover).
   */
  recovering: { settled?: { ok: true } | { ok: false; error: unknown } } | undefined;
  inFlight = 0;
  nextOffset = 1;
  opIndex = 0;
  crashes = 0;
  powerLosses = 0;
  restarts = 0;
  violation: string | undefined;
  violationKey: string | undefined;
  history: string[] = [];
  detected: string | undefined;
  /** Decides when backups start: a stream of its own (see SimConfig.backupChance). */
  readonly backupRandom: SimRandom;
  /** Decides when read-only views are opened: a stream of its own (see SimConfig.viewChance). */
  readonly viewRandom: SimRandom;
  viewsOpened = 0;
  viewsChecked = 0;
  backupsStarted = 0;
  /** The backup running in this process, if any. */
  backupRunning: PendingBackup | undefined;
  /** Backups to open and check: finished, or cut short by the end of their process. */
  readonly backupsToCheck: PendingBackup[] = [];

  constructor(options: SimOptions) {
    this.seed = options.seed >>> 0;
    this.random = new SimRandom(this.seed);
    this.workload = this.random.fork('workload');
    this.backupRandom = this.random.fork('backups');
    this.viewRandom = this.random.fork('views');
    this.lingerRandom = this.random.fork('linger');
    const config = configFor(
      this.random.fork('config'),
      options.faults ?? 'crash',
      options.swarm === true,
    );
    this.config = {
      ...config,
      osShare: options.osShare ?? config.osShare,
      lazyOpenShare: options.lazyOpenShare ?? config.lazyOpenShare,
      viewChance: options.viewChance ?? config.viewChance,
      syncNowShare: options.syncNowShare ?? config.syncNowShare,
    };
    this.model = new OffsetsModel();
    this.scheduler.afterStep = () => this.members.sample(this.nowMs());
    this.members = new SimMembers(this.config, this.random.fork('members'));
    this.verbose = options.verbose === true;
    this.realRoot = mkdtempSync(path.join(tmpdir(), 'offset-store-sim-'));
    this.dir = path.join(this.realRoot, 'store');
    // The directory the store is created in exists, durably, before the store does.
    this.disk.mkdirp(this.realRoot);
    for (let p = this.realRoot; ; p = path.dirname(p)) {
      this.disk.syncDir(p);
      if (p === '/') break;
    }
  }

  log(line: string): void {
    const entry = `#${this.opIndex} t=${(this.scheduler.nowUs / 1e6).toFixed(3)}s p${this.incarnation}${process.env.SIM_TRACE_FILE !== undefined ? ` e${this.scheduler.steps}/${this.scheduler.scheduledCount}/${this.scheduler.nowUs}` : ''} ${line}`;
    this.trace.push(entry);
    if (process.env.SIM_TRACE_FILE !== undefined)
      appendFileSync(process.env.SIM_TRACE_FILE, `${entry}\n`);
    if (this.trace.length > TRACE_LINES * 4) this.trace.splice(0, this.trace.length - TRACE_LINES);
    if (this.verbose) console.log(entry);
  }

  nowMs(): number {
    return SIM_EPOCH_MS + Math.floor(this.scheduler.nowUs / 1000);
  }

  fail(message: string): void {
    this.violation ??= message;
    this.log(`VIOLATION ${message}`);
  }

  /**
   * After a close (successful or not) or a failed open, the store holds no file: every path that fails
   * part-way closes what it opened, or a long-lived process on a flaky disk runs out of descriptors.
   */
  checkNoOpenFiles(after: string): void {
    const open = this.fs.openFiles();
    if (open.length > 0) this.fail(`after ${after}, files still open: ${open.join(', ')}`);
  }

  /** Whether an I/O error was injected (in this process or an earlier one). */
  ioFaultInjected(): boolean {
    return this.fs.injected.length > 0 || this.injectedBefore > 0;
  }

  /** Whether damage at rest was injected: what may make the store refuse to open for good. */
  restFaultInjected(): boolean {
    return this.disk.rotted.length > 0 || this.disk.latentSectors.length > 0;
  }

  injectedBefore = 0;
  /** deleteGroup calls in flight, whose place in the order is not fixed (see Write.floating). */
  readonly floatingDeletes = new Set<{
    groupId: string;
    keys: string[];
    writes: Write[];
    like: Write;
  }>();
  /** A storage error fail-stopped a log: the process is to be restarted, as an operator would. */
  restartWanted = false;
  /** Actions the process still runs before the restart `restartWanted` asks for. */
  lingerActions: number | undefined;
  readonly lingerRandom: SimRandom;

  /**
   * Classifies a storage error: after an injected I/O error, LOG_STORAGE_ERROR is expected (the log
   * fail-stops) and the process is restarted; damage reported after damage at rest was injected ends
   * the run as detected; anything else is a violation.
   */
  storageError(context: string, error: unknown): void {
    const code = isOffsetStoreError(error) ? error.code : undefined;
    if ((code === 'CORRUPT_MESSAGE' || code === 'LOG_STORAGE_ERROR') && this.restFaultInjected()) {
      this.detected ??= `${context}: ${(error as Error).message}`;
      this.log(`detected ${context}: ${(error as Error).message}`);
    } else if (code === 'LOG_STORAGE_ERROR' && this.ioFaultInjected()) {
      this.log(`${context}: ${(error as Error).message} (restarting)`);
      this.restartWanted = true;
    } else {
      this.fail(`${context}: ${(error as Error).stack ?? String(error)}`);
    }
  }

  /**
   * A torn write recovery truncated, in the stretch where damage was injected at rest: the last
   * write round of a log, acknowledged and then damaged on the disk, which after a crash no one can
   * tell from a round the crash tore (nothing durable says it was acknowledged: no later batch, no
   * end recorded since). The acknowledged commits in it are lost to the disk's fault without a
   * report; the run ends there, as one whose damage was detected does.
   */
  noteTornTail(warning: string): void {
    const torn = /torn write at the end of (\S+) \(byte (\d+):/.exec(warning);
    if (torn === null) return;
    const [, file, byte] = torn;
    const hit = this.disk.rotted.find(
      (r) => r.path === file && r.position + SECTOR_BYTES > Number(byte),
    );
    if (hit === undefined) return;
    this.detected ??= `damage injected at rest at byte ${hit.position} of ${file}, in its last write round, read after a crash as a torn write at byte ${byte} (undetectable there)`;
    this.log(`detected: ${this.detected}`);
  }

  /** Faults at rest, each with its probability per action: rot, latent sectors, lost sectors, lost files. */
  injectAtRest(): void {
    const eligible = (p: string) => !isNativePath(p) && !p.endsWith('/LOCK');
    const rates = this.config.faults;
    const w = this.workload;
    if (this.disk.rotted.length === 0 && w.chance(rates.rot)) {
      const record = this.disk.rot(w, eligible);
      if (record !== undefined) this.log(`bit rot at byte ${record.position} of ${record.path}`);
    }
    if (w.chance(rates.latent)) {
      const record = this.disk.latentSector(w, eligible);
      if (record !== undefined)
        this.log(`latent sector error at byte ${record.position} of ${record.path}`);
    }
    if (w.chance(rates.lostSector)) {
      const record = this.disk.loseSector(w, eligible);
      if (record !== undefined)
        this.log(`lost sector (reads as zeros) at byte ${record.position} of ${record.path}`);
    }
    if (w.chance(rates.lostFile)) {
      // Segments, and the next segment a log prepares ahead (a temp file someone may clean up).
      const record = this.disk.loseFile(
        w,
        (p) => eligible(p) && (p.endsWith('.log') || p.endsWith('/next-segment.tmp')),
      );
      if (record !== undefined) this.log(`file lost: ${record.path}`);
    }
  }

  /**
   * Drives the scheduler until `promise` settles, or until the process doing its I/O (`fs`) dies, in
   * which case the outcome is PROCESS_DIED.
   */
  async settle<T>(
    promise: Promise<T>,
    what: string,
    fs: SimFileSystem = this.fs,
  ): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
    let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    promise.then(
      (value) => {
        outcome = { ok: true, value };
      },
      (error: unknown) => {
        outcome = { ok: false, error };
      },
    );
    await this.scheduler.quiesce();
    while (outcome === undefined) {
      if (fs.dead) return { ok: false, error: PROCESS_DIED };
      if (!(await this.scheduler.step())) {
        this.fail(
          `${what} never completes: nothing left to happen (a lost wake-up or an unawaited I/O)`,
        );
        return { ok: false, error: new Error('deadlock') };
      }
    }
    return outcome;
  }

  // ---- processes -----------------------------------------------------------------------------

  async open(): Promise<boolean> {
    for (let attempt = 0; attempt < OPEN_ATTEMPTS; attempt++) {
      this.incarnation++;
      forgetHeldDirectories();
      forgetStoreProcessState();
      forgetLogProcessState();
      forgetJournalProcessState();
      await forgetCheckpointProcessState();
      this.fs = new SimFileSystem(
        this.disk,
        this.scheduler,
        this.random.fork(`fs-${this.incarnation}`),
        this.config.faults.io,
        // Only where every process commits in 'fsync' (see SimFileSystem).
        this.config.osShare === 0,
        this.random.fork(`sync-now-${this.incarnation}`).chance(this.config.syncNowShare),
      );
      this.clock = new SimClock(this.scheduler, SIM_EPOCH_MS);
      const c = this.config;
      this.unsynced = this.random.fork(`durability-${this.incarnation}`).chance(c.osShare);
      this.model.unsynced = this.unsynced;
      const lazy = this.random.fork(`lazy-${this.incarnation}`).chance(c.lazyOpenShare);
      this.recovering = undefined;
      const opened = await this.settle(
        OffsetStore.open({
          ...this.storeOptions(this.dir, this.fs),
          durability: this.unsynced ? 'os' : 'fsync',
          awaitRecovery: !lazy,
          bucketCount: c.bucketCount,
          // The strategy is chosen when the store is created; later opens use the one it records,
          // which convertCompaction may have changed.
          compaction: {
            strategy: this.incarnation === 1 ? c.strategy : undefined,
            intervalMs: c.compactionIntervalMs,
            minDirtyRatio: c.minDirtyRatio,
            deleteRetentionMs: c.deleteRetentionMs,
          },
          group: {
            sessionTimeoutMs: c.sessionTimeoutMs,
            heartbeatIntervalMs: c.heartbeatIntervalMs,
            assignmentIntervalMs: c.assignmentIntervalMs,
          },
          onWarning: (message) => {
            this.log(`warning: ${message}`);
            this.noteTornTail(message);
          },
        }),
        'OffsetStore.open',
      );
      if (this.violation !== undefined) return false;
      if (opened.ok) {
        this.store = opened.value;
        this.store.setTableLayout(1, { bucketCount: c.tableBuckets[0] });
        this.store.setTableLayout(2, { bucketCount: c.tableBuckets[1] });
        this.members.reopened(this);
        this.log(
          `opened (${this.fs.operationCount} I/O operations${this.unsynced ? ", durability 'os'" : ''}${lazy ? ', buckets still recovering' : ''})`,
        );
        if (this.detected !== undefined) return false;
        if (this.unsynced) this.unsyncedSinceDurable = true;
        if (lazy) {
          // The workload goes on while buckets recover (calls on them are refused with
          // COORDINATOR_LOAD_IN_PROGRESS); the recovery check runs once store.ready() settles.
          const recovering: NonNullable<Simulation['recovering']> = {};
          this.recovering = recovering;
          this.store.ready().then(
            () => (recovering.settled = { ok: true }),
            (error: unknown) => (recovering.settled = { ok: false, error }),
          );
          return true;
        }
        await this.recovered(false);
        return this.violation === undefined && this.detected === undefined;
      }
      const error = opened.error;
      this.log(`open failed: ${(error as Error).message}`);
      if (error !== PROCESS_DIED) this.checkNoOpenFiles('a failed open');
      // A process that died at a failed fdatasync is a crash, whatever else was injected.
      const transient =
        error === PROCESS_DIED || (this.fs.injected.length > 0 && !this.restFaultInjected());
      this.injectedBefore += this.fs.injected.length;
      this.fs.kill();
      this.clock.stop();
      if (!transient) {
        this.storageError('open', error);
        if (this.violation === undefined && this.detected === undefined)
          this.fail(`open failed and the simulation cannot go on: ${(error as Error).message}`);
        return false;
      }
    }
    this.storageError(
      `open (${OPEN_ATTEMPTS} attempts)`,
      new Error(
        `open failed ${OPEN_ATTEMPTS} times in a row, each time on injected transient faults`,
      ),
    );
    return false;
  }

  /**
   * Every bucket has recovered: fetches every group and checks it, then marks what is durable: the
   * store made what it recovered durable before it served it, and every key's value is settled, so
   * a power loss from now on can take only what this process acknowledges. `lazy`: the process
   * opened with `awaitRecovery: false` and may have acknowledged writes (or expired offsets) since;
   * in durability 'os' only the keys that have not moved are known durable then.
   */
  async recovered(lazy: boolean): Promise<void> {
    if (!(await this.checkAll('after recovery'))) return;
    if (lazy && this.unsynced) {
      this.model.markDurable(true);
      return;
    }
    this.model.markDurable();
    this.unsyncedSinceDurable = this.unsynced;
  }

  /** A lazily opened process's store.ready() settled: the recovery check, or the failed recovery. */
  async afterLazyRecovery(): Promise<void> {
    const settled = this.recovering?.settled;
    if (settled === undefined) return;
    this.recovering = undefined;
    if (settled.ok) {
      this.log('every bucket recovered');
      await this.recovered(true);
      return;
    }
    // As a failed open: a failure injected faults explain restarts the process; else it is reported.
    const error = settled.error;
    this.log(`recovery failed: ${(error as Error).message}`);
    if (this.fs.injected.length > 0 && !this.restFaultInjected()) this.restartWanted = true;
    else this.storageError('recovery (awaitRecovery: false)', error);
  }

  /** Ends the process: a crash (page cache kept) or a power loss (only what is durable, and what the seed keeps). */
  async endProcess(kind: 'crash' | 'powerLoss' | 'restart'): Promise<boolean> {
    if (kind === 'restart') {
      this.restarts++;
      this.log('clean close');
      const closed = await this.settle(this.store!.close(), 'close');
      if (closed.ok || closed.error !== PROCESS_DIED) {
        if (!closed.ok && this.violation === undefined) this.storageError('close', closed.error);
        this.checkNoOpenFiles('close');
      }
      if (this.violation !== undefined || this.detected !== undefined) return false;
    } else {
      if (kind === 'crash') this.crashes++;
      else this.powerLosses++;
      this.log(kind === 'crash' ? 'process crash' : 'power loss');
    }
    this.injectedBefore += this.fs.injected.length;
    this.fs.kill();
    this.clock.stop();
    if (this.backupRunning !== undefined) {
      this.model.closeWindow(this.backupRunning.window);
      this.backupRunning.cutShort = true;
      this.backupsToCheck.push(this.backupRunning);
      this.backupRunning = undefined;
    }
    this.store = undefined;
    this.inFlight = 0;
    this.floatingDeletes.clear();
    this.model.crash();
    this.members.crashed();
    if (kind === 'powerLoss') {
      this.disk.powerLoss(this.random.fork(`power-${this.powerLosses}`));
      if (this.unsyncedSinceDurable) {
        this.model.powerLoss();
        this.members.rolledBack();
      }
    }
    // The next process starts a little later.
    await this.scheduler.advance(this.workload.int(1, 2000) * 1000);
    return this.open();
  }

  // ---- checks --------------------------------------------------------------------------------

  /**
   * Fetches every group's offsets and checks them all; checks the groups' states. True when every
   * key was fetched and passed (the model then knows each key's value).
   */
  async checkAll(when: string): Promise<boolean> {
    const store = this.store!;
    for (const groupId of [...this.config.adminGroups, ...this.config.memberGroups]) {
      let rows: CommittedOffset[];
      try {
        rows = store.fetchOffsetsSync(groupId) as CommittedOffset[];
      } catch (error) {
        this.storageError(`fetch of ${groupId} ${when}`, error);
        return false;
      }
      this.checkRows(groupId, rows, null, when);
      if (this.violation !== undefined) return false;
    }
    for (const groupId of this.config.memberGroups) {
      const described = await this.settle(store.describeGroup(groupId), 'describeGroup');
      if (!described.ok && described.error === PROCESS_DIED) return true;
      if (!described.ok) {
        if (isOffsetStoreError(described.error, 'GROUP_ID_NOT_FOUND')) continue;
        this.storageError(`describeGroup(${groupId}) ${when}`, described.error);
        return false;
      }
    }
    return true;
  }

  /** Checks fetched rows of a group: `asked` the keys requested (null = every key of the group). */
  checkRows(
    groupId: string,
    rows: readonly (CommittedOffset | null)[],
    asked: readonly string[] | null,
    when: string,
  ): void {
    const nowMs = this.nowMs();
    const mayExpire = (key: string) => this.mayExpire(groupId, key, nowMs);
    try {
      if (asked !== null) {
        asked.forEach((key, i) =>
          this.model.observe(key, rows[i]?.offset ?? null, nowMs, mayExpire(key)),
        );
        return;
      }
      const seen = new Set<string>();
      for (const row of rows) {
        if (row === null) continue;
        const key = keyOf(groupId, row.tableId, row.partitionId, row.bucketId);
        seen.add(key);
        this.model.observe(key, row.offset, nowMs, mayExpire(key));
      }
      for (const key of this.model.keysOf(groupId))
        if (!seen.has(key)) this.model.observe(key, null, nowMs, mayExpire(key));
    } catch (error) {
      if (!(error instanceof ModelViolation)) throw error;
      this.fail(`${when}: ${error.message}`);
      this.violationKey = error.key;
    }
  }

  /**
   * Whether write `w` of `key` may have expired by `nowMs`. Offsets expire in a group without members,
   * and in any group for tables no member subscribes to: a value may be gone if, once past
   * retention, its table was without a certain subscriber.
   */
  mayExpire(groupId: string, key: string, nowMs: number): (w: Write) => boolean {
    const tableId = Number(key.slice(key.indexOf('|') + 1).split(':')[0]);
    return (w: Write) =>
      nowMs - w.issuedMs >= this.config.retentionMs &&
      this.members.unsubscribedSinceMs(
        groupId,
        tableId,
        w.issuedMs + this.config.retentionMs,
        nowMs,
      );
  }

  /** Every record of `key` in the logs on the disk now, in log order: what to read first on a violation. */
  async keyHistory(key: string): Promise<string[]> {
    const groupId = key.slice(0, key.indexOf('|'));
    const [tableId, partition, bucketId] = key.slice(key.indexOf('|') + 1).split(':');
    const fs = new SimFileSystem(this.disk, this.scheduler, this.random.fork('history'), NO_FAULTS);
    const lines: string[] = [];
    for (let bucket = 0; bucket < this.config.bucketCount; bucket++) {
      let segment = '';
      const dumped = await this.settle(
        dumpLog(this.dir, bucket, { fs, records: true }, (entry) => {
          if (entry.kind === 'segment') segment = path.basename(entry.file);
          if (entry.kind === 'damage')
            lines.push(`bucket ${bucket} ${segment}: damage ${entry.reason}`);
          if (entry.kind !== 'record' || entry.groupId !== groupId) return;
          if (entry.recordType === 'group-snapshot') return;
          if (
            entry.tableId !== Number(tableId) ||
            entry.bucketId !== Number(bucketId) ||
            (entry.partitionId ?? '') !== (partition === '' ? '' : Number(partition))
          )
            return;
          lines.push(
            `bucket ${bucket} ${segment} log offset ${entry.logOffset}: ${entry.tombstone ? 'tombstone' : entry.offset} (committed at ${entry.commitTimestampMs})`,
          );
        }),
        'dumpLog',
        fs,
      );
      if (!dumped.ok)
        lines.push(`bucket ${bucket}: dump failed: ${(dumped.error as Error).message}`);
    }
    return lines;
  }

  // ---- workload ------------------------------------------------------------------------------

  /** Starts a call; its settlement is handled by `onSettled`, checked against the model. */
  track<T>(
    what: string,
    call: () => Promise<T>,
    onSettled: (outcome: { ok: true; value: T } | { ok: false; error: unknown }) => void,
  ): void {
    const store = this.store;
    const incarnation = this.incarnation;
    this.inFlight++;
    let promise: Promise<T>;
    try {
      promise = call();
    } catch (error) {
      promise = Promise.reject(error);
    }
    promise.then(
      (value) => {
        if (this.store !== store || this.incarnation !== incarnation) return;
        this.inFlight--;
        if (!what.startsWith('heartbeat')) this.log(`${what} done`);
        onSettled({ ok: true, value });
      },
      (error: unknown) => {
        if (this.store !== store || this.incarnation !== incarnation) return;
        this.inFlight--;
        this.log(`${what} rejected: ${(error as Error).message}`);
        onSettled({ ok: false, error });
      },
    );
  }

  /** A commit (or reset) of `offsets` to `groupId`, with the model's writes. */
  commit(
    kind: 'commit' | 'reset',
    groupId: string,
    offsets: OffsetCommit[],
    member?: { memberId: string; memberEpoch: number; zombie: boolean },
  ): void {
    const store = this.store!;
    const keys = offsets.map((o) => keyOf(groupId, o.tableId, o.partitionId ?? null, o.bucketId));
    this.coverByFloatingDeletes(groupId, keys);
    const issuedMs = this.nowMs();
    const writes = this.model.issue(
      keys.map((key, i) => [key, offsets[i]!.offset]),
      issuedMs,
      kind,
    );
    const what = `${kind} ${groupId} ${offsets.length} offsets${member === undefined ? '' : ` as ${member.memberId}@${member.memberEpoch}${member.zombie ? ' (silent)' : ''}`} [${writes[0]!.seq}..]`;
    this.log(what);
    this.track(
      what,
      () =>
        kind === 'reset'
          ? store.resetOffsets(groupId, offsets)
          : store.commitOffsets(
              groupId,
              offsets,
              member === undefined
                ? undefined
                : { memberId: member.memberId, memberEpoch: member.memberEpoch },
            ),
      (outcome) => {
        if (outcome.ok) {
          this.model.acknowledge(keys, writes);
          if (member !== undefined) {
            const fenced = this.members.fencedAt(
              member.memberId,
              member.memberEpoch,
              issuedMs,
              this.incarnation,
            );
            if (fenced !== undefined)
              this.fail(
                `commit of ${member.memberId}@${member.memberEpoch} issued at ${issuedMs} accepted, but ${fenced}`,
              );
          }
        } else {
          this.rejected(what, keys, writes, outcome.error);
        }
      },
    );
  }

  /** A rejected write: never to be seen, unless the store could not take it back. */
  rejected(what: string, keys: string[], writes: Write[], error: unknown): void {
    const message = (error as Error).message;
    if (isOffsetStoreError(error) && error.code === 'LOG_STORAGE_ERROR') {
      // A bucket that failed to load on damage at rest (a latent sector's EIO) refuses every write:
      // that damage is detected, as when an open fails on it.
      if (!this.ioFaultInjected() && this.restFaultInjected() && /failed to load/.test(message)) {
        this.storageError(what, error);
        this.model.reject(keys, writes);
        return;
      }
      // A log that found one of its segment files lost from under it (damage at rest) fail-stops:
      // detected, when that file is one the disk lost.
      const gone = /segment file (\S+) is gone from its folder/.exec(message);
      if (
        gone !== null
          ? this.disk.rotted.some((r) => r.path === gone[1])
          : /ENOENT/.test(message) && this.disk.rotted.some((r) => message.includes(r.path))
      ) {
        this.storageError(what, error);
        this.model.reject(keys, writes);
        return;
      }
      // The write may have reached the log before its fdatasync failed; the log cut it back, or
      // recorded it as rejected. If it could do neither, it says so, naming the repair to make by
      // hand before reopening (the log: "truncate F to N bytes before reopening it"; the journal:
      // "fill that file with zeros from byte N before reopening the store"): only this process
      // knows, and the simulated operator reopens without the repair, so the write may come back.
      if (!this.ioFaultInjected())
        this.fail(`${what}: LOG_STORAGE_ERROR with no fault injected: ${message}`);
      this.restartWanted = true;
      if (
        /before reopening (it|the store)|could neither|truncate by hand|cannot be cut/i.test(
          message,
        )
      ) {
        for (const w of writes) w.state = 'unknown';
        return;
      }
    } else if (!isOffsetStoreError(error)) {
      this.fail(
        `${what} rejected with a non-OffsetStoreError: ${(error as Error).stack ?? message}`,
      );
      return;
    }
    this.model.reject(keys, writes);
  }

  offsetsFor(count: number, tables: readonly number[], dense: boolean): OffsetCommit[] {
    const w = this.workload;
    const used = new Set<string>();
    const offsets: OffsetCommit[] = [];
    const first = w.int(0, 50);
    for (let i = 0; offsets.length < count && i < count * 4; i++) {
      const tableId = dense ? 3 : w.pick(tables);
      const bucketId = dense
        ? first + i
        : w.int(
            0,
            tableId === 1
              ? this.config.tableBuckets[0] * 2
              : tableId === 2
                ? this.config.tableBuckets[1] * 2
                : 4000,
          );
      const k = `${tableId}:${bucketId}`;
      if (used.has(k)) continue;
      used.add(k);
      offsets.push({
        tableId,
        bucketId,
        offset: this.nextOffset++,
        leaderEpoch: w.chance(0.3) ? w.int(0, 9) : undefined,
        metadata: w.chance(0.1) ? `m${this.nextOffset}` : undefined,
      });
    }
    return offsets;
  }

  fetch(): void {
    const w = this.workload;
    const store = this.store!;
    const groupId = w.pick([...this.config.adminGroups, ...this.config.memberGroups]);
    const requireStable = w.chance(0.2);
    const whole = w.chance(0.3);
    const asked = whole
      ? null
      : this.offsetsFor(w.int(1, 8), [1, 2, 3], false).map((o) => ({
          tableId: o.tableId,
          bucketId: o.bucketId,
        }));
    const keys = asked?.map((b) => keyOf(groupId, b.tableId, null, b.bucketId)) ?? null;
    let rows: (CommittedOffset | null)[];
    try {
      rows =
        asked === null
          ? store.fetchOffsetsSync(groupId, undefined, { requireStable })
          : store.fetchOffsetsSync(groupId, asked, { requireStable });
    } catch (error) {
      if (isOffsetStoreError(error, 'UNSTABLE_OFFSET_COMMIT') && requireStable) return;
      if (
        isOffsetStoreError(error, 'COORDINATOR_LOAD_IN_PROGRESS') &&
        this.recovering !== undefined
      )
        return;
      this.storageError(`fetch of ${groupId}`, error);
      return;
    }
    this.checkRows(
      groupId,
      rows,
      keys,
      `fetch of ${groupId}${requireStable ? ' (requireStable)' : ''}`,
    );
  }

  deleteOffsets(): void {
    const w = this.workload;
    const store = this.store!;
    const groupId = w.pick([...this.config.adminGroups, ...this.config.memberGroups]);
    const known = this.model.keysOf(groupId);
    if (known.length === 0) return;
    const keys = [...new Set(Array.from({ length: w.int(1, 5) }, () => w.pick(known)))];
    const buckets = keys.map((key) => {
      const [tableId, , bucketId] = key.slice(key.indexOf('|') + 1).split(':');
      return { tableId: Number(tableId), bucketId: Number(bucketId) };
    });
    const writes = this.model.issue(
      keys.map((key) => [key, null]),
      this.nowMs(),
      'delete',
    );
    const what = `deleteOffsets ${groupId} ${keys.length} keys [${writes[0]!.seq}..]`;
    this.log(what);
    this.track(
      what,
      () => store.deleteOffsets(groupId, buckets),
      (outcome) => {
        if (outcome.ok) this.model.acknowledge(keys, writes);
        else this.rejected(what, keys, writes, outcome.error);
      },
    );
  }

  deleteGroup(): void {
    const store = this.store!;
    const groupId = this.workload.pick([...this.config.adminGroups, ...this.config.memberGroups]);
    const keys = this.model.keysOf(groupId);
    const writes = this.model.issue(
      keys.map((key) => [key, null]),
      this.nowMs(),
      'deleteGroup',
      true,
    );
    const pending = {
      groupId,
      keys,
      writes,
      like: writes[0] ?? this.model.template(null, this.nowMs(), 'deleteGroup', true),
    };
    this.floatingDeletes.add(pending);
    const what = `deleteGroup ${groupId} (${keys.length} known keys)`;
    this.log(what);
    this.track(
      what,
      () => store.deleteGroup(groupId),
      (outcome) => {
        this.floatingDeletes.delete(pending);
        if (outcome.ok) this.model.acknowledge(pending.keys, pending.writes);
        else this.rejected(what, pending.keys, pending.writes, outcome.error);
      },
    );
  }

  /** A write of `keys` of `groupId` is being issued: deletes of the group in flight may cover them too. */
  coverByFloatingDeletes(groupId: string, keys: readonly string[]): void {
    for (const pending of this.floatingDeletes) {
      if (pending.groupId !== groupId) continue;
      for (const key of keys) {
        if (pending.keys.includes(key)) continue;
        pending.keys.push(key);
        pending.writes.push(this.model.extend(pending.like, key));
      }
    }
  }

  compact(): void {
    const store = this.store!;
    this.log('compact');
    this.track(
      'compact',
      () => store.compact(),
      (outcome) => {
        if (!outcome.ok && !isOffsetStoreError(outcome.error, 'STORE_CLOSED'))
          this.storageError('compact', outcome.error);
      },
    );
  }

  convert(): void {
    const store = this.store!;
    const strategy = this.workload.pick<CompactionStrategy>([
      'log-cleaner',
      'incremental',
      'checkpoint',
      'none',
    ]);
    this.log(`convertCompaction ${strategy}`);
    this.track(
      `convertCompaction ${strategy}`,
      () => store.convertCompaction(strategy),
      (outcome) => {
        if (!outcome.ok && !isOffsetStoreError(outcome.error, 'STORE_CLOSED'))
          this.storageError(`convertCompaction ${strategy}`, outcome.error);
      },
    );
  }

  /**
   * Starts a backup to a new directory beside the store's; once it settles (or its process ends), the
   * backup is opened and every key checked against what the model allowed during it.
   */
  backup(): void {
    const store = this.store!;
    const label = `backup ${++this.backupsStarted}`;
    const to = path.join(this.realRoot, `backup-${this.backupsStarted}`);
    const running: PendingBackup = {
      label,
      to,
      window: this.model.openWindow('backup'),
      cutShort: false,
    };
    this.backupRunning = running;
    this.log(`${label} to ${to}`);
    this.track(
      label,
      () => store.backup(to),
      (outcome) => {
        this.model.closeWindow(running.window);
        this.backupRunning = undefined;
        if (outcome.ok) this.backupsToCheck.push(running);
        else if (!isOffsetStoreError(outcome.error, 'STORE_CLOSED'))
          this.storageError(label, outcome.error);
      },
    );
  }

  /**
   * Options every open of the run's stores shares (its process's, a backup's, a read-only view's):
   * `dir` on `fs`, the run's clock, sizes and retention.
   */
  storeOptions(dir: string, fs: SimFileSystem): OffsetStoreOptions {
    const c = this.config;
    return {
      dir,
      fs,
      clock: this.clock,
      segmentBytesMax: c.segmentBytesMax,
      [JOURNAL_FILE_BYTES]: c.journalFileBytesMax,
      [PREPARE_AT_BYTES]: c.prepareAtBytes,
      offsetsRetentionMs: c.retentionMs,
      offsetsRetentionCheckIntervalMs: c.retentionCheckMs,
    };
  }

  /** Closes a copy, then checks it left no file open. */
  async closeCopy(copy: OffsetStore, fs: SimFileSystem, label: string): Promise<void> {
    const closed = await this.settle(copy.close(), `close of ${label}`, fs);
    if (!closed.ok && this.violation === undefined)
      this.storageError(`close of ${label}`, closed.error);
    if (fs.openFiles().length > 0)
      this.fail(`after the close of ${label}, files still open: ${fs.openFiles().join(', ')}`);
  }

  /**
   * Checks every key of every group in `copy` (a backup, a read-only view) against what `window`
   * allowed while it was made.
   */
  checkCopy(copy: OffsetStore, window: CopyWindow, label: string): void {
    const nowMs = this.nowMs();
    for (const groupId of [...this.config.adminGroups, ...this.config.memberGroups]) {
      if (this.violation !== undefined) break;
      try {
        const rows = copy.fetchOffsetsSync(groupId) as CommittedOffset[];
        const seen = new Set<string>();
        for (const row of rows) {
          const key = keyOf(groupId, row.tableId, row.partitionId, row.bucketId);
          seen.add(key);
          window.check(key, row.offset, this.mayExpire(groupId, key, nowMs));
        }
        for (const key of window.keysOf(groupId))
          if (!seen.has(key)) window.check(key, null, this.mayExpire(groupId, key, nowMs));
      } catch (error) {
        if (!(error instanceof ModelViolation)) {
          this.storageError(`fetch of ${groupId} from ${label}`, error);
          break;
        }
        this.fail(`${label}: ${error.message}`);
        this.violationKey = error.key;
      }
    }
  }

  /** Opens each backup waiting to be checked, checks every key of every group, then deletes it. */
  async checkBackups(): Promise<void> {
    while (this.backupsToCheck.length > 0 && this.violation === undefined) {
      const { label, to, window, cutShort } = this.backupsToCheck.shift()!;
      if (this.disk.lookup(to) === undefined) {
        if (!cutShort) this.fail(`${label} succeeded, but ${to} does not exist`);
        else this.log(`${label} was cut short: ${to} does not exist`);
        continue;
      }
      const fs = new SimFileSystem(
        this.disk,
        this.scheduler,
        this.random.fork(`check-${label}`),
        NO_FAULTS,
      );
      const warnings: string[] = [];
      const opened = await this.settle(
        OffsetStore.open({
          ...this.storeOptions(to, fs),
          compaction: { background: false },
          onWarning: (message) => warnings.push(message),
        }),
        `open of ${label}`,
        fs,
      );
      if (!opened.ok) {
        this.storageError(`open of ${label} (${to})`, opened.error);
        return;
      }
      const copy = opened.value;
      if (warnings.length > 0 && !this.restFaultInjected())
        this.fail(`${label}: a backup opened with warnings: ${warnings.join('; ')}`);
      this.checkCopy(copy, window, label);
      await this.closeCopy(copy, fs, label);
      await this.settle(fs.removeTree(to), `removing ${label}`, fs);
      this.log(`${label} checked${cutShort ? ' (cut short by its process end, complete)' : ''}`);
    }
  }

  /**
   * Opens a read-only view of the store beside the live process (which goes on with its calls in
   * flight while the view reads), checks every key of every group against what the model allowed
   * while the view opened, then closes it. The view's own I/O has no faults: it reads what the
   * live process and the disk's faults at rest left.
   */
  async view(): Promise<void> {
    const label = `read-only view ${++this.viewsOpened}`;
    const window = this.model.openWindow('read-only view');
    const fs = new SimFileSystem(this.disk, this.scheduler, this.random.fork(label), NO_FAULTS);
    this.log(`${label} opens`);
    const opened = await this.settle(
      OffsetStore.open({
        ...this.storeOptions(this.dir, fs),
        readOnly: true,
        [READ_ONLY_PAUSE]: (ms) => new Promise<void>((resolve) => this.clock.setTimer(ms, resolve)),
        onWarning: () => {},
      }),
      `open of ${label}`,
      fs,
    );
    this.model.closeWindow(window);
    if (!opened.ok) {
      const error = opened.error;
      if (isOffsetStoreError(error, 'STORE_LOCKED') && this.recovering !== undefined) {
        // Refused while this process's own buckets recover (awaitRecovery: false).
        this.log(`${label} refused: the live process's buckets are still recovering`);
        return;
      }
      // Damage at rest, or a store whose recovery a fault left to the next open, may be refused;
      // anything else is a failure of the view.
      if (this.restFaultInjected() || this.ioFaultInjected()) {
        this.log(`${label} refused: ${(error as Error).message}`);
      } else this.storageError(`open of ${label}`, error);
      if (fs.openFiles().length > 0)
        this.fail(
          `after the failed open of ${label}, files still open: ${fs.openFiles().join(', ')}`,
        );
      return;
    }
    const view = opened.value;
    this.checkCopy(view, window, label);
    await this.closeCopy(view, fs, label);
    this.viewsChecked++;
    this.log(`${label} checked`);
  }

  /** One workload action, chosen by the weights. */
  async act(): Promise<boolean> {
    const w = this.workload;
    if (
      this.store !== undefined &&
      this.config.viewChance > 0 &&
      this.viewRandom.chance(this.config.viewChance)
    ) {
      await this.view();
      if (this.violation !== undefined || this.detected !== undefined) return false;
    }
    if (
      this.store !== undefined &&
      this.backupRunning === undefined &&
      this.config.backupChance > 0 &&
      this.backupRandom.chance(this.config.backupChance)
    )
      this.backup();
    const weights = { ...this.config.weights };
    if (this.inFlight >= this.config.maxInFlight) {
      for (const key of names(weights))
        if (!['advanceTime', 'crash', 'powerLoss', 'restart', 'fetch'].includes(key))
          weights[key] = 0;
    }
    const action = names(weights)[w.weighted(names(weights).map((k) => weights[k]))]!;
    switch (action) {
      case 'commit':
        this.commit(
          'commit',
          w.pick(this.config.adminGroups),
          this.offsetsFor(w.int(1, 10), [1, 2, 3], false),
        );
        break;
      case 'bigCommit':
        this.commit(
          'commit',
          w.pick(this.config.adminGroups),
          this.offsetsFor(w.chance(0.1) ? w.int(2000, 10_000) : w.int(100, 1000), [3], true),
        );
        break;
      case 'reset':
        this.commit(
          'reset',
          w.pick(this.config.adminGroups),
          this.offsetsFor(w.int(1, 6), [1, 2, 3], false),
        );
        break;
      case 'fetch':
        this.fetch();
        break;
      case 'deleteOffsets':
        this.deleteOffsets();
        break;
      case 'deleteGroup':
        this.deleteGroup();
        break;
      case 'join':
      case 'leave':
      case 'silence':
      case 'memberCommit':
      case 'zombieCommit':
        this.members.act(action, this);
        break;
      case 'compact':
        this.compact();
        break;
      case 'convert':
        this.convert();
        break;
      case 'advanceTime':
        await this.scheduler.advance(
          w.chance(0.8) ? w.int(1, 3000) * 1000 : w.int(3, 400) * 1_000_000,
        );
        break;
      case 'crash':
      case 'powerLoss':
      case 'restart':
        return this.endProcess(action);
    }
    return true;
  }

  async run(ops: number): Promise<void> {
    await loadChecksum();
    const previous = observeExternalWork((work) => this.scheduler.deterministic(work));
    try {
      if (!(await this.open())) return;
      for (this.opIndex = 0; this.opIndex < ops; this.opIndex++) {
        // Let some I/O complete between actions, as much as the seed says.
        for (let n = this.workload.int(0, 6); n > 0 && this.scheduler.pending; n--)
          await this.scheduler.step();
        if (this.violation !== undefined || this.detected !== undefined) return;
        await this.afterLazyRecovery();
        if (this.violation !== undefined || this.detected !== undefined) return;
        if (this.fs.dead) this.log(this.fs.injected.at(-1) ?? 'the process died');
        // After a storage error the process goes on for a few actions before its restart, half
        // the time: what a failed process still serves (its fetches, its refusals) is checked too.
        if (this.restartWanted)
          this.lingerActions =
            (this.lingerActions ??
              (this.lingerRandom.chance(0.5) ? this.lingerRandom.int(1, 8) : 0)) - 1;
        if (this.fs.dead || (this.restartWanted && this.lingerActions! < 0)) {
          this.restartWanted = false;
          this.lingerActions = undefined;
          if (!(await this.endProcess('crash'))) return;
          continue;
        }
        if (!(await this.act())) return;
        if (this.violation !== undefined || this.detected !== undefined) return;
        await this.scheduler.quiesce();
        await this.checkBackups();
        if (this.violation !== undefined || this.detected !== undefined) return;
        this.injectAtRest();
      }
      // The end: every call settles, then a clean close and a last recovery check.
      this.opIndex = ops;
      while (
        this.inFlight > 0 &&
        this.scheduler.pending &&
        this.violation === undefined &&
        !this.fs.dead
      )
        await this.scheduler.step();
      if (this.violation === undefined && this.detected === undefined)
        await this.endProcess(this.fs.dead ? 'crash' : 'restart');
      if (this.violation === undefined && this.detected === undefined) await this.checkBackups();
      if (this.violation === undefined && this.detected === undefined && this.store !== undefined) {
        const closed = await this.settle(this.store.close(), 'final close');
        if (!closed.ok && closed.error === PROCESS_DIED) return;
        if (!closed.ok && this.violation === undefined)
          this.storageError('final close', closed.error);
        this.checkNoOpenFiles('final close');
      }
    } catch (error) {
      this.fail(`the simulator itself failed: ${(error as Error).stack ?? String(error)}`);
    } finally {
      if (this.violationKey !== undefined) {
        this.history = await this.keyHistory(this.violationKey).catch((error: unknown) => [
          `history unavailable: ${(error as Error).message}`,
        ]);
      }
      // A run that ends on a violation or on detected damage abandons its last process: what that
      // process held in this real one (its store's directory lock, the logs' state) is let go.
      this.fs.kill();
      forgetHeldDirectories();
      forgetStoreProcessState();
      forgetLogProcessState();
      forgetJournalProcessState();
      await forgetCheckpointProcessState();
      observeExternalWork(previous);
      rmSync(this.realRoot, { recursive: true, force: true });
    }
  }
}

/** Runs one simulation to its end. */
export async function simulate(options: SimOptions): Promise<SimResult> {
  const started = performance.now();
  const sim = new Simulation(options);
  await sim.run(options.ops ?? 2000);
  const outcome =
    sim.violation !== undefined
      ? 'violation'
      : sim.detected !== undefined
        ? 'detected'
        : 'completed';
  return {
    seed: sim.seed,
    ok: outcome !== 'violation',
    outcome,
    ops: sim.opIndex,
    crashes: sim.crashes,
    powerLosses: sim.powerLosses,
    restarts: sim.restarts,
    viewsChecked: sim.viewsChecked,
    steps: sim.scheduler.steps,
    virtualMs: Math.round(sim.scheduler.nowUs / 1000),
    wallMs: Math.round(performance.now() - started),
    digest: sim.disk.digest(sim.dir),
    message: sim.violation ?? sim.detected,
    opIndex: sim.violation !== undefined || sim.detected !== undefined ? sim.opIndex : undefined,
    trace: sim.trace.slice(-TRACE_LINES),
    history: sim.history,
    config: sim.config,
  };
}

export type { Simulation };
