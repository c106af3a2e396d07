/**
 * One lab run: one strategy on one workload, on a fresh store.
 *
 * 1. Make the run's folder under the lab's directory, marked as the lab's (RUN_MARKER), and open a
 *    store in it with the strategy, background compaction on, its clock a ManualClock the lab moves:
 *    in real time while operations run ('real'), or by the compaction interval after each step
 *    ('step', for tests), and forward by the workload's own clock moves (retention).
 * 2. Per step: run its operations (OPS_CONCURRENCY at a time), timing each commit and fetch; stop the
 *    clock; wait until no compaction run is in flight; sample (lab-sample.ts): disk and live bytes,
 *    write amplification so far, and the time and records to reopen a copy of the store.
 * 3. Check that the store holds exactly what the operations left (offsets of expired groups may be
 *    gone), and close it. A run that fails the check fails the lab.
 * 4. Latency phases, as docs/performance.md measures the compaction target: pairs of an idle phase
 *    (the store reopened with background compaction off) and a compacting phase (reopened with the
 *    store's own scheduler every LATENCY_INTERVAL_MS and minDirtyRatio 0: every bucket compacted as
 *    soon as a segment is sealed, the busiest background compaction there is), each after an
 *    untimed compact() that catches up, each with LATENCY_COMMITTERS committers of 10 offsets,
 *    durable; the commit percentiles of the two kinds. Then the run's folder is deleted.
 *
 * Every wait for compaction (after a step, the compact() before a phase) lasts at most
 * compactionWaitMs: runs still in flight then (a plan that never settles, or a run far slower than
 * any should be) fail the run with INVALID_COMPACTION_PLAN naming the strategy; closing the store
 * abandons them, and the run's folder is deleted.
 *
 * The lab removes only folders it made: a run's folder holds RUN_MARKER from its making, and a later
 * lab removes a folder of a run whose process is gone (removeAbandonedRuns) only when it holds it.
 */
import * as path from 'node:path';
import { OffsetStoreError } from '../errors/index.js';
import { NodeFileSystem } from '../io/index.js';
import { OffsetStore } from '../store.js';
import { ManualClock, TIMER_MS_MAX } from '../util/index.js';
import type { Durability } from '../log/index.js';
import { CompactionTracker, type CompactionRunRecord } from './compaction-tracker.js';
import { sampleStore, type LabSample } from './lab-sample.js';
import { LatencyLog, percentiles, type LatencyWindow, type Percentiles } from './latency-log.js';
import {
  WORKLOADS,
  type LabScale,
  type WorkloadDefinition,
  type WorkloadOp,
} from './workloads/index.js';

const OPS_CONCURRENCY = 64;
const LATENCY_COMMITTERS = 16;
const LATENCY_OFFSETS_PER_COMMIT = 10;
/** The store's clock starts here (a fixed instant: reports are reproducible). */
const CLOCK_START_MS = 1_800_000_000_000;
const REAL_CLOCK_TICK_MS = 20;
/** Background compaction pace in the compacting latency phases (store clock ms). */
const LATENCY_INTERVAL_MS = 100;
/** The file that marks a folder as a lab run's (written when the lab makes it), with its process. */
const RUN_MARKER = 'lab-run.json';
/** What RUN_MARKER says besides the pid. */
const RUN_MARKER_KIND = 'offset-store lab run';

/** Store and run settings of the lab, the same for every strategy of a lab. */
export interface LabSettings {
  /** Offsets-buckets of each store. */
  bucketCount: number;
  /** Segment roll size: small enough that compaction has sealed segments to work on. */
  segmentBytesMax: number;
  /** Durability of commits. */
  durability: Durability;
  /** Background compaction pace (store clock ms). */
  intervalMs: number;
  /** compaction.minDirtyRatio. */
  minDirtyRatio: number;
  /** compaction.deleteRetentionMs. */
  deleteRetentionMs: number;
  /** Reopen a copy of the store at every Nth sample (and at the last). */
  reopenEvery: number;
  /** Pairs of (idle, compacting) latency phases. */
  latencyPhasePairs: number;
  /** Length of each latency phase, ms. */
  latencyPhaseMs: number;
  /** Width of a window of the latency timeline, ms. */
  latencyWindowMs: number;
  /** How the store's clock moves: in real time, or one interval per step (tests). */
  clockMode: 'real' | 'step';
  /**
   * Longest wait, ms, for the compaction runs in flight to end (after each step, around each latency
   * phase); runs still in flight then fail the run.
   */
  compactionWaitMs: number;
}

/** The lab settings at a scale. */
export function labSettings(scale: LabScale): LabSettings {
  const common = {
    durability: 'fsync' as const,
    intervalMs: 1000,
    minDirtyRatio: 0.5,
    deleteRetentionMs: 60_000,
    clockMode: 'real' as 'real' | 'step',
  };
  // Small runs take milliseconds a step: the clock moves one compaction interval per step instead.
  // Segments hold a tenth of a bucket's live records or so: a clean section of a few segments only
  // would leave an incremental strategy nothing to skip.
  if (scale === 'small')
    return {
      ...common,
      clockMode: 'step',
      bucketCount: 2,
      segmentBytesMax: 4 * 1024,
      reopenEvery: 1,
      latencyPhasePairs: 1,
      latencyPhaseMs: 300,
      latencyWindowMs: 100,
      compactionWaitMs: 30_000,
    };
  if (scale === 'default')
    return {
      ...common,
      bucketCount: 4,
      segmentBytesMax: 128 * 1024,
      reopenEvery: 1,
      latencyPhasePairs: 8,
      latencyPhaseMs: 1500,
      latencyWindowMs: 500,
      compactionWaitMs: 120_000,
    };
  return {
    ...common,
    bucketCount: 8,
    segmentBytesMax: 512 * 1024,
    reopenEvery: 4,
    latencyPhasePairs: 8,
    latencyPhaseMs: 3000,
    latencyWindowMs: 1000,
    compactionWaitMs: 600_000,
  };
}

/** What one strategy did on one workload. */
export interface StrategyRun {
  /** The strategy as given (a built-in name or a module path). */
  strategy: string;
  /** What the store recorded (a built-in name or `module:<name>`). */
  recorded: string;
  /** One sample per step. */
  samples: LabSample[];
  /** Every compaction run of one offsets-bucket, in order of finishing. */
  compactions: CompactionRunRecord[];
  /** The commit latency timeline. */
  windows: LatencyWindow[];
  /** Commit latency in the idle and the compacting latency phases, and p99's change. */
  latency: { idle: Percentiles; compacting: Percentiles; p99ChangePct: number };
  /** Commit latency during the workload, split by whether a compaction run overlapped the commit. */
  workloadLatency: {
    overlappingCompaction: Percentiles;
    outsideCompaction: Percentiles;
    fetch: Percentiles;
  };
  /** Totals of the run. */
  totals: RunTotals;
  /**
   * Warnings the store gave (torn tails in copies are expected: a copy is a crash image): the first
   * of each kind, as given, with how many more there were (firstOfEachKind), at most 20.
   */
  warnings: string[];
  /** Why compaction runs failed, the same way. */
  failures: string[];
}

/** Totals of one run. */
export interface RunTotals {
  /** Bytes the workload's commits appended. */
  committedBytes: number;
  /** Bytes compaction wrote. */
  compactionBytesWritten: number;
  /** Compaction runs of one bucket that did something or were asked for. */
  compactionRuns: number;
  /** Runs that rewrote or wrote anything. */
  writingRuns: number;
  /** Runs that failed (the strategy threw, or its plan was refused): figures of a strategy with any are not its whole cost. */
  failedRuns: number;
  /** Mean bytes written per writing run. */
  bytesWrittenPerRun: number;
  /** compactionBytesWritten / committedBytes. */
  writeAmplification: number;
  /** Space amplification at the last sample. */
  finalSpaceAmplification: number;
  /** Mean space amplification over the samples after the first. */
  meanSpaceAmplification: number;
  /** Time to reopen a copy at the last sample, ms. */
  finalReopenMs: number;
  /** Records replayed by that reopen. */
  finalRecordsReplayed: number;
  /** Worker CPU of all compaction runs, ms. */
  workerCpuMs: number;
  /**
   * Compaction runs that ran on a worker (and so have a worker CPU time): none for a strategy that
   * plans on the main thread, such as 'checkpoint', whose work is in processCpuMs. Absent in
   * results written before it was recorded.
   */
  workerRuns?: number;
  /** The process's CPU over the workload (all threads), ms. */
  processCpuMs: number;
  /** Most heap (used + external) of the main thread at a sample, bytes. */
  peakHeapBytes: number;
  /** Most heap of a compaction worker at the end of a run, bytes. */
  workerHeapBytesMax: number;
  /** Wall time of the run, ms. */
  durationMs: number;
  /** Live offsets at the end of the workload. */
  liveOffsets: number;
}

/** How to run one strategy on one workload. */
export interface LabRunOptions {
  /** Scratch directory: the run's folder (its store) is made under it and deleted afterwards. */
  dir: string;
  /** A built-in strategy's name or a strategy module's path. */
  strategy: string;
  /** The workload. */
  workload: WorkloadDefinition;
  /** Its scale. */
  scale: LabScale;
  /** Its seed. */
  seed: number;
  /** Store and run settings. */
  settings: LabSettings;
  /** Hears of each step done, and of the latency phases. */
  onProgress?: (what: string) => void;
}

/** The model: what the operations left, per group and bucket key, with the commit's clock time. */
type Model = Map<string, Map<number, { offset: number; atMs: number }>>;
const bucketKey = (tableId: number, bucketId: number) => tableId * 10_000_000 + bucketId;

/** Runs one strategy on one workload (see the module comment). */
export async function runStrategy(options: LabRunOptions): Promise<StrategyRun> {
  const { settings, workload } = options;
  const plan = workload.create(options.scale, options.seed);
  const startedMs = performance.now();
  const clock = new ManualClock(CLOCK_START_MS);
  const tracker = new CompactionTracker(performance.timeOrigin + startedMs);
  const settle = (work?: Promise<unknown>) =>
    settleWithin(
      tracker,
      settings.compactionWaitMs,
      `${options.strategy} on ${workload.name}`,
      work,
    );
  const latency = new LatencyLog(startedMs);
  const warnings: string[] = [];
  const runDir = path.join(
    options.dir,
    `${workload.name}-${safeName(options.strategy)}-${process.pid}-${Math.floor(startedMs)}`,
  );
  await createRunFolder(runDir, process.pid);
  const storeDir = path.join(runDir, 'store');
  const storeOptions = {
    dir: storeDir,
    bucketCount: settings.bucketCount,
    segmentBytesMax: settings.segmentBytesMax,
    durability: settings.durability,
    clock,
    ...plan.storeOptions,
    onWarning: (message: string) => warnings.push(message),
  };
  const compaction = {
    strategy: options.strategy,
    deleteRetentionMs: settings.deleteRetentionMs,
    onRun: tracker.listener,
  };
  let store: OffsetStore;
  try {
    store = await OffsetStore.open({
      ...storeOptions,
      compaction: {
        ...compaction,
        intervalMs: settings.intervalMs,
        minDirtyRatio: settings.minDirtyRatio,
      },
    });
  } catch (error) {
    await new NodeFileSystem().removeTree(runDir);
    throw error;
  }
  const model: Model = new Map();
  const driver = new ClockDriver(clock, settings);
  const cpuStart = process.cpuUsage();
  const samples: LabSample[] = [];
  try {
    const recorded = (await store.stats()).compactionStrategy;
    for (let i = 0; i < plan.steps; i++) {
      const step = plan.step(i);
      if (step.advanceClockMs !== undefined && step.advanceClockMs > 0)
        clock.advance(step.advanceClockMs);
      driver.run();
      await runOps(store, step.ops, model, latency, clock);
      driver.stop();
      await settle();
      const cpu = process.cpuUsage(cpuStart);
      samples.push(
        await sampleStore(store, {
          step: i,
          steps: plan.steps,
          elapsedMs: performance.now() - startedMs,
          tracker,
          processCpuMs: (cpu.user + cpu.system) / 1000,
          reopen:
            i % settings.reopenEvery === settings.reopenEvery - 1 || i === plan.steps - 1
              ? { storeOptions, strategy: options.strategy, nowMs: clock.nowMs() }
              : undefined,
        }),
      );
      options.onProgress?.(`step ${i + 1}/${plan.steps}`);
    }
    const cpu = process.cpuUsage(cpuStart);
    const processCpuMs = (cpu.user + cpu.system) / 1000;
    const workloadEndMs = performance.now() - startedMs;
    await verify(
      store,
      model,
      clock.nowMs(),
      plan.storeOptions?.offsetsRetentionMs,
      plan.storeOptions?.offsetsRetentionCheckIntervalMs ?? 60_000,
    );
    await store.close();
    const phases = await latencyPhases(
      (phase) => {
        const background =
          phase === 'idle'
            ? { background: false }
            : { intervalMs: LATENCY_INTERVAL_MS, minDirtyRatio: 0 };
        return OffsetStore.open({
          ...storeOptions,
          compaction: { ...compaction, ...background },
        }).then((opened) => (store = opened));
      },
      settings,
      latency,
      settle,
      tracker,
      driver,
      options.onProgress,
    );
    const intervals = tracker.runs.map((r): [number, number] => [
      r.startMs,
      r.startMs + r.durationMs,
    ]);
    const workloadRuns = tracker.runs.filter((r) => r.startMs < workloadEndMs);
    return {
      strategy: options.strategy,
      recorded,
      samples,
      compactions: tracker.runs,
      windows: latency.windows(settings.latencyWindowMs),
      latency: phases,
      workloadLatency: {
        overlappingCompaction: percentiles(
          latency.commits('workload', { intervals, overlapping: true }),
        ),
        outsideCompaction: percentiles(
          latency.commits('workload', { intervals, overlapping: false }),
        ),
        fetch: percentiles(latency.fetches()),
      },
      totals: totals(
        samples,
        workloadRuns,
        tracker.failures.length,
        processCpuMs,
        performance.now() - startedMs,
      ),
      warnings: firstOfEachKind(warnings, 20),
      failures: firstOfEachKind(tracker.failures, 20),
    };
  } finally {
    driver.stop();
    // Abandons a run still in flight (a plan that never settles): its store goes, whatever it holds.
    await store.close().catch(() => {});
    await new NodeFileSystem().removeTree(runDir);
  }
}

/**
 * Makes a run's folder and marks it as the lab's: RUN_MARKER, naming the lab process `pid`, before
 * anything else goes in. A marker already there (a folder made by another run) is EEXIST.
 */
export async function createRunFolder(runDir: string, pid: number): Promise<void> {
  const fs = new NodeFileSystem();
  await fs.mkdir(runDir);
  const handle = await fs.open(path.join(runDir, RUN_MARKER), 'wx');
  try {
    await handle.writev([Buffer.from(JSON.stringify({ kind: RUN_MARKER_KIND, pid }) + '\n')], 0);
  } finally {
    await handle.close();
  }
}

/** The pid a run folder's marker names; undefined for a folder without a valid one (not the lab's). */
async function runFolderPid(fs: NodeFileSystem, runDir: string): Promise<number | undefined> {
  let bytes: Buffer | null;
  try {
    bytes = await fs.readFile(path.join(runDir, RUN_MARKER));
  } catch {
    return undefined; // not a folder, or a marker that is not a regular file
  }
  if (bytes === null || bytes.length > 1024) return undefined;
  try {
    const marker = JSON.parse(bytes.toString('utf8')) as { kind?: unknown; pid?: unknown };
    return marker.kind === RUN_MARKER_KIND && Number.isSafeInteger(marker.pid)
      ? (marker.pid as number)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The first message of each kind (the same text but for its numbers: a bucket, a duration), as it
 * was, with how many more of its kind there were; at most `limit` kinds, in order of first
 * appearance.
 */
export function firstOfEachKind(messages: readonly string[], limit: number): string[] {
  const kinds = new Map<string, { first: string; count: number }>();
  for (const message of messages) {
    const kind = message.replace(/\d+/g, 'N');
    const seen = kinds.get(kind);
    if (seen === undefined) kinds.set(kind, { first: message, count: 1 });
    else seen.count++;
  }
  return [...kinds.values()]
    .slice(0, limit)
    .map(({ first, count }) => (count === 1 ? first : `${first} (and ${count - 1} more like it)`));
}

/**
 * Removes the folders of runs whose lab process is gone (interrupted: Ctrl-C, a kill), which remove
 * their own folder only when they end: `<workload>-<strategy>-<pid>-<ms>` folders (the name
 * runStrategy gives its folder, above) holding the lab's RUN_MARKER for that pid, of a process that no
 * longer exists. A folder of a live process, of any other name, or without the marker (the lab did
 * not make it, whatever its name) is left alone.
 */
export async function removeAbandonedRuns(dir: string): Promise<void> {
  const fs = new NodeFileSystem();
  for (const name of await fs.readdir(dir)) {
    const workload = WORKLOADS.find((w) => name.startsWith(`${w.name}-`));
    const match =
      workload === undefined
        ? null
        : /^[A-Za-z0-9_-]+-(\d+)-(\d+)$/.exec(name.slice(workload.name.length + 1));
    if (match === null) continue;
    const pid = Number(match[1]);
    if (pid === process.pid || processAlive(pid)) continue;
    if ((await runFolderPid(fs, path.join(dir, name))) !== pid) continue;
    await fs.removeTree(path.join(dir, name));
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function safeName(strategy: string): string {
  return path
    .basename(strategy)
    .replace(/\.[cm]?[jt]s$/, '')
    .replace(/[^A-Za-z0-9_-]/g, '_');
}

/** Moves the ManualClock in real time while operations run ('real'), or by one interval per step ('step'). */
class ClockDriver {
  readonly #clock: ManualClock;
  readonly #settings: LabSettings;
  #timer: NodeJS.Timeout | undefined;
  #lastMs = 0;

  constructor(clock: ManualClock, settings: LabSettings) {
    this.#clock = clock;
    this.#settings = settings;
  }

  run(): void {
    if (this.#settings.clockMode === 'step') return;
    this.#lastMs = performance.now();
    this.#timer = setInterval(() => {
      const nowMs = performance.now();
      this.#clock.advance(nowMs - this.#lastMs);
      this.#lastMs = nowMs;
    }, REAL_CLOCK_TICK_MS);
  }

  stop(): void {
    if (this.#settings.clockMode === 'step') {
      if (this.#timer === undefined) this.#clock.advance(this.#settings.intervalMs);
      return;
    }
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * Waits for `work` (a compact()), if given, and until the compaction runs the clock started are over
 * (a timer's pass starts its runs a few turns after it fires), in all at most `waitMs`:
 * INVALID_COMPACTION_PLAN naming the strategy (`what`: the strategy on the workload) when compaction
 * is still running then.
 */
async function settleWithin(
  tracker: CompactionTracker,
  waitMs: number,
  what: string,
  work?: Promise<unknown>,
): Promise<void> {
  const deadlineMs = performance.now() + waitMs;
  const inTime = async (waited: Promise<unknown>): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([
      waited.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(
          () => resolve(true),
          Math.min(TIMER_MS_MAX, Math.max(0, deadlineMs - performance.now())),
        );
      }),
    ]).finally(() => clearTimeout(timer));
    if (late)
      throw new OffsetStoreError(
        'INVALID_COMPACTION_PLAN',
        `lab: strategy ${what}: ${tracker.inFlight} compaction run(s) still in flight after ${waitMs} ms (a plan that never settles, or a run slower than the lab's compaction wait allows); the run was stopped and its store removed`,
      );
  };
  if (work !== undefined) await inTime(work);
  for (let quiet = 0; quiet < 3;) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (tracker.inFlight === 0) {
      quiet++;
    } else {
      quiet = 0;
      await inTime(tracker.idle());
    }
  }
}

async function runOps(
  store: OffsetStore,
  ops: readonly WorkloadOp[],
  model: Model,
  latency: LatencyLog,
  clock: ManualClock,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ops.length) {
      const op = ops[next++]!;
      const startMs = performance.now();
      if (op.kind === 'commit') {
        await store.commitOffsets(op.groupId, op.offsets);
        latency.commit(startMs, performance.now() - startMs, 'workload');
        let group = model.get(op.groupId);
        if (group === undefined) model.set(op.groupId, (group = new Map()));
        for (const o of op.offsets)
          group.set(bucketKey(o.tableId, o.bucketId), { offset: o.offset, atMs: clock.nowMs() });
      } else if (op.kind === 'deleteGroup') {
        await store.deleteGroup(op.groupId).catch((error: unknown) => {
          // A group retention already expired is gone: nothing to delete.
          if (!(error instanceof OffsetStoreError && error.code === 'GROUP_ID_NOT_FOUND'))
            throw error;
        });
        model.delete(op.groupId);
      } else {
        await store.fetchOffsets(op.groupId, op.buckets);
        latency.fetch(performance.now() - startMs);
      }
    }
  };
  await Promise.all(Array.from({ length: OPS_CONCURRENCY }, worker));
}

/** Step 4: idle and compacting phases, alternating, each on the store reopened by `open`. */
async function latencyPhases(
  open: (phase: 'idle' | 'compacting') => Promise<OffsetStore>,
  settings: LabSettings,
  latency: LatencyLog,
  settle: (work?: Promise<unknown>) => Promise<void>,
  tracker: CompactionTracker,
  driver: ClockDriver,
  onProgress?: (what: string) => void,
): Promise<StrategyRun['latency']> {
  const offsets = Array.from({ length: LATENCY_COMMITTERS }, () =>
    Array.from({ length: LATENCY_OFFSETS_PER_COMMIT }, (_, b) => ({
      tableId: 99,
      bucketId: b,
      offset: 0,
    })),
  );
  const idle: number[] = [];
  const compacting: number[] = [];
  for (let pair = 0; pair < settings.latencyPhasePairs; pair++) {
    for (const phase of ['idle', 'compacting'] as const) {
      const store = await open(phase);
      try {
        // Untimed: starts the worker thread and catches up, so that a phase measures steady state.
        // A run that fails is counted (failed runs) and said under the summary, as in the
        // background: the phase goes on.
        const failuresBefore = tracker.failures.length;
        await settle(
          store.compact().catch((error: unknown) => {
            if (tracker.failures.length === failuresBefore) throw error;
          }),
        );
        if (phase === 'compacting') driver.run();
        const endMs = performance.now() + settings.latencyPhaseMs;
        await Promise.all(
          offsets.map(async (mine, c) => {
            while (performance.now() < endMs) {
              for (const o of mine) o.offset++;
              const startMs = performance.now();
              await store.commitOffsets(`lab-latency-${c}`, mine);
              const durationMs = performance.now() - startMs;
              latency.commit(startMs, durationMs, phase);
              (phase === 'idle' ? idle : compacting).push(durationMs);
            }
          }),
        );
        driver.stop();
        await settle();
      } finally {
        await store.close();
      }
      onProgress?.(`latency ${phase} ${pair + 1}/${settings.latencyPhasePairs}`);
    }
  }
  const i = percentiles(idle);
  const c = percentiles(compacting);
  return {
    idle: i,
    compacting: c,
    p99ChangePct: i.p99Ms === 0 ? 0 : (c.p99Ms / i.p99Ms - 1) * 100,
  };
}

/**
 * Step 3: every offset the operations left is there with its value, but an offset old enough to have
 * expired may be gone; no group is there that the operations did not leave.
 */
async function verify(
  store: OffsetStore,
  model: Model,
  nowMs: number,
  retentionMs: number | undefined,
  checkIntervalMs: number,
): Promise<void> {
  const mayExpire = (atMs: number) =>
    retentionMs !== undefined && atMs + retentionMs <= nowMs + checkIntervalMs;
  const listed = new Set(
    (await store.listGroups()).map((g) => g.groupId).filter((g) => !g.startsWith('lab-latency-')),
  );
  for (const groupId of listed)
    if (!model.has(groupId))
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `lab check: the store holds group ${groupId}, which the workload deleted or never wrote`,
      );
  for (const [groupId, group] of model) {
    const stored = new Map(
      (await store.fetchOffsets(groupId)).map((o) => [
        bucketKey(o!.tableId, o!.bucketId),
        o!.offset,
      ]),
    );
    for (const [key, { offset, atMs }] of group) {
      const got = stored.get(key);
      if (got === offset || (got === undefined && mayExpire(atMs))) continue;
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `lab check: group ${groupId}, bucket key ${key}: the store holds ${String(got)}, the workload left ${offset}`,
      );
    }
    if (stored.size > group.size)
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `lab check: group ${groupId} holds ${stored.size} offsets, the workload left ${group.size}`,
      );
  }
}

function totals(
  samples: readonly LabSample[],
  runs: readonly CompactionRunRecord[],
  failedRuns: number,
  processCpuMs: number,
  durationMs: number,
): RunTotals {
  const last = samples.at(-1)!;
  const writing = runs.filter((r) => r.bytesWritten > 0);
  const written = runs.reduce((n, r) => n + r.bytesWritten, 0);
  const later = samples.slice(1);
  const reopened = [...samples].reverse().find((s) => s.reopenMs !== undefined);
  return {
    committedBytes: last.committedBytes,
    compactionBytesWritten: written,
    compactionRuns: runs.length,
    writingRuns: writing.length,
    failedRuns,
    bytesWrittenPerRun: writing.length === 0 ? 0 : written / writing.length,
    writeAmplification: last.committedBytes === 0 ? 0 : written / last.committedBytes,
    finalSpaceAmplification: last.spaceAmplification,
    meanSpaceAmplification:
      later.length === 0
        ? last.spaceAmplification
        : later.reduce((n, s) => n + s.spaceAmplification, 0) / later.length,
    finalReopenMs: reopened?.reopenMs ?? 0,
    finalRecordsReplayed: reopened?.recordsReplayed ?? 0,
    workerCpuMs: runs.reduce((n, r) => n + (r.workerCpuMs ?? 0), 0),
    workerRuns: runs.filter((r) => r.workerCpuMs !== undefined).length,
    processCpuMs,
    peakHeapBytes: Math.max(...samples.map((s) => s.heapBytes)),
    workerHeapBytesMax: Math.max(0, ...runs.map((r) => r.workerHeapBytes ?? 0)),
    durationMs,
    liveOffsets: last.liveOffsets,
  };
}
