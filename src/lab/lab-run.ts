/**
 * One lab run: one strategy on one workload, on a fresh store.
 *
 * 1. Open a store with the strategy, background compaction on, its clock a ManualClock the lab moves:
 *    in real time while operations run ('real'), or by the compaction interval after each step
 *    ('step', for tests), and forward by the workload's own clock moves (retention).
 * 2. Per step: run its operations (OPS_CONCURRENCY at a time), timing each commit and fetch; stop the
 *    clock; wait until no compaction run is in flight; sample (lab-sample.ts): disk and live bytes,
 *    write amplification so far, and the time and records to reopen a copy of the store.
 * 3. Latency phases: pairs of an idle phase (the clock stopped: no background compaction) and a
 *    compacting phase (compact() in a loop: compaction as busy as it gets), each with
 *    LATENCY_COMMITTERS committers of 10 offsets, durable; the commit percentiles of the two kinds.
 * 4. Check that the store holds exactly what the operations left (offsets of expired groups may be
 *    gone), then close and delete it. A run that fails the check fails the lab.
 */
import * as path from 'node:path';
import { OffsetStoreError } from '../errors/index.js';
import { NodeFileSystem } from '../io/index.js';
import { ManualClock, OffsetStore, type Durability } from '../index.js';
import { CompactionTracker, type CompactionRunRecord } from './compaction-tracker.js';
import { sampleStore, type LabSample } from './lab-sample.js';
import { LatencyLog, percentiles, type LatencyWindow, type Percentiles } from './latency-log.js';
import type { LabScale, WorkloadDefinition, WorkloadOp } from './workloads/index.js';

const OPS_CONCURRENCY = 64;
const LATENCY_COMMITTERS = 16;
const LATENCY_OFFSETS_PER_COMMIT = 10;
/** The store's clock starts here (a fixed instant: reports are reproducible). */
const CLOCK_START_MS = 1_800_000_000_000;
const REAL_CLOCK_TICK_MS = 20;
/** Pause between two compact() calls of a compacting latency phase. */
const COMPACT_LOOP_PAUSE_MS = 10;

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
}

/** The lab settings at a scale. */
export function labSettings(scale: LabScale): LabSettings {
  const common = { durability: 'fsync' as const, intervalMs: 1000, minDirtyRatio: 0.5, deleteRetentionMs: 60_000, clockMode: 'real' as 'real' | 'step' };
  // Small runs take milliseconds a step: the clock moves one compaction interval per step instead.
  if (scale === 'small') return { ...common, clockMode: 'step', bucketCount: 2, segmentBytesMax: 16 * 1024, reopenEvery: 1, latencyPhasePairs: 1, latencyPhaseMs: 300, latencyWindowMs: 100 };
  if (scale === 'default') return { ...common, bucketCount: 4, segmentBytesMax: 1024 * 1024, reopenEvery: 1, latencyPhasePairs: 3, latencyPhaseMs: 3000, latencyWindowMs: 500 };
  return { ...common, bucketCount: 8, segmentBytesMax: 4 * 1024 * 1024, reopenEvery: 4, latencyPhasePairs: 3, latencyPhaseMs: 5000, latencyWindowMs: 1000 };
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
  workloadLatency: { overlappingCompaction: Percentiles; outsideCompaction: Percentiles; fetch: Percentiles };
  /** Totals of the run. */
  totals: RunTotals;
  /** Warnings the store gave (torn tails in copies are expected: a copy is a crash image). */
  warnings: string[];
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
  /** Scratch directory: the store is created in a folder under it and deleted afterwards. */
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
  const latency = new LatencyLog(startedMs);
  const warnings: string[] = [];
  const storeDir = path.join(options.dir, `${workload.name}-${safeName(options.strategy)}-${process.pid}-${Math.floor(startedMs)}`);
  const storeOptions = {
    dir: storeDir, bucketCount: settings.bucketCount, segmentBytesMax: settings.segmentBytesMax, durability: settings.durability, clock, ...plan.storeOptions,
    onWarning: (message: string) => warnings.push(message),
  };
  const store = await OffsetStore.open({
    ...storeOptions,
    compaction: { strategy: options.strategy, intervalMs: settings.intervalMs, minDirtyRatio: settings.minDirtyRatio, deleteRetentionMs: settings.deleteRetentionMs, onRun: tracker.listener },
  });
  const model: Model = new Map();
  const driver = new ClockDriver(clock, settings);
  const cpuStart = process.cpuUsage();
  const samples: LabSample[] = [];
  try {
    const recorded = (await store.stats()).compactionStrategy;
    for (let i = 0; i < plan.steps; i++) {
      const step = plan.step(i);
      if (step.advanceClockMs !== undefined && step.advanceClockMs > 0) clock.advance(step.advanceClockMs);
      driver.run();
      await runOps(store, step.ops, model, latency, clock);
      driver.stop();
      await settle(tracker);
      const cpu = process.cpuUsage(cpuStart);
      samples.push(await sampleStore(store, {
        step: i, steps: plan.steps, elapsedMs: performance.now() - startedMs, tracker, processCpuMs: (cpu.user + cpu.system) / 1000,
        reopen: i % settings.reopenEvery === settings.reopenEvery - 1 || i === plan.steps - 1
          ? { storeOptions, strategy: options.strategy, nowMs: clock.nowMs() }
          : undefined,
      }));
      options.onProgress?.(`step ${i + 1}/${plan.steps}`);
    }
    const cpu = process.cpuUsage(cpuStart);
    const processCpuMs = (cpu.user + cpu.system) / 1000;
    const workloadEndMs = performance.now() - startedMs;
    const phases = await latencyPhases(store, settings, latency, tracker, options.onProgress);
    await verify(store, model, clock.nowMs(), plan.storeOptions?.offsetsRetentionMs, plan.storeOptions?.offsetsRetentionCheckIntervalMs ?? 60_000);
    const intervals = tracker.runs.map((r): [number, number] => [r.startMs, r.startMs + r.durationMs]);
    const workloadRuns = tracker.runs.filter((r) => r.startMs < workloadEndMs);
    return {
      strategy: options.strategy,
      recorded,
      samples,
      compactions: tracker.runs,
      windows: latency.windows(settings.latencyWindowMs),
      latency: phases,
      workloadLatency: {
        overlappingCompaction: percentiles(latency.commits('workload', { intervals, overlapping: true })),
        outsideCompaction: percentiles(latency.commits('workload', { intervals, overlapping: false })),
        fetch: percentiles(latency.fetches()),
      },
      totals: totals(samples, workloadRuns, processCpuMs, performance.now() - startedMs),
      warnings: [...new Set(warnings.map((w) => w.replace(/\d+/g, 'N')))].slice(0, 20),
    };
  } finally {
    driver.stop();
    await store.close().catch(() => {});
    await new NodeFileSystem().removeTree(storeDir);
  }
}

function safeName(strategy: string): string {
  return path.basename(strategy).replace(/\.[cm]?[jt]s$/, '').replace(/[^A-Za-z0-9_-]/g, '_');
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

/** Waits until the compaction runs the clock started are over (a timer's pass starts its runs a few turns after it fires). */
async function settle(tracker: CompactionTracker): Promise<void> {
  for (let quiet = 0; quiet < 3;) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (tracker.inFlight === 0) {
      quiet++;
    } else {
      quiet = 0;
      await tracker.idle();
    }
  }
}

async function runOps(store: OffsetStore, ops: readonly WorkloadOp[], model: Model, latency: LatencyLog, clock: ManualClock): Promise<void> {
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
        for (const o of op.offsets) group.set(bucketKey(o.tableId, o.bucketId), { offset: o.offset, atMs: clock.nowMs() });
      } else if (op.kind === 'deleteGroup') {
        await store.deleteGroup(op.groupId).catch((error: unknown) => {
          // A group retention already expired is gone: nothing to delete.
          if (!(error instanceof OffsetStoreError && error.code === 'GROUP_ID_NOT_FOUND')) throw error;
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

/** Step 3: idle and compacting phases, alternating. */
async function latencyPhases(store: OffsetStore, settings: LabSettings, latency: LatencyLog, tracker: CompactionTracker, onProgress?: (what: string) => void): Promise<StrategyRun['latency']> {
  const offsets = Array.from({ length: LATENCY_COMMITTERS }, () => Array.from({ length: LATENCY_OFFSETS_PER_COMMIT }, (_, b) => ({ tableId: 99, bucketId: b, offset: 0 })));
  const idle: number[] = [];
  const compacting: number[] = [];
  for (let pair = 0; pair < settings.latencyPhasePairs; pair++) {
    for (const phase of ['idle', 'compacting'] as const) {
      await settle(tracker);
      const endMs = performance.now() + settings.latencyPhaseMs;
      let compactions: Promise<void> = Promise.resolve();
      if (phase === 'compacting') {
        compactions = (async () => {
          while (performance.now() < endMs) {
            await store.compact();
            // A compaction with nothing to do (the control) settles in microtasks: without a pause the
            // loop would keep the event loop busy and measure that instead of the machine's noise.
            await new Promise((resolve) => setTimeout(resolve, COMPACT_LOOP_PAUSE_MS));
          }
        })();
      }
      await Promise.all(offsets.map(async (mine, c) => {
        while (performance.now() < endMs) {
          for (const o of mine) o.offset++;
          const startMs = performance.now();
          await store.commitOffsets(`lab-latency-${c}`, mine);
          const durationMs = performance.now() - startMs;
          latency.commit(startMs, durationMs, phase);
          (phase === 'idle' ? idle : compacting).push(durationMs);
        }
      }));
      await compactions;
      onProgress?.(`latency ${phase} ${pair + 1}/${settings.latencyPhasePairs}`);
    }
  }
  const i = percentiles(idle);
  const c = percentiles(compacting);
  return { idle: i, compacting: c, p99ChangePct: i.p99Ms === 0 ? 0 : (c.p99Ms / i.p99Ms - 1) * 100 };
}

/**
 * Step 4: every offset the operations left is there with its value, but an offset old enough to have
 * expired may be gone; no group is there that the operations did not leave.
 */
async function verify(store: OffsetStore, model: Model, nowMs: number, retentionMs: number | undefined, checkIntervalMs: number): Promise<void> {
  const mayExpire = (atMs: number) => retentionMs !== undefined && atMs + retentionMs <= nowMs + checkIntervalMs;
  const listed = new Set((await store.listGroups()).map((g) => g.groupId).filter((g) => !g.startsWith('lab-latency-')));
  for (const groupId of listed) if (!model.has(groupId)) throw new OffsetStoreError('CORRUPT_MESSAGE', `lab check: the store holds group ${groupId}, which the workload deleted or never wrote`);
  for (const [groupId, group] of model) {
    const stored = new Map((await store.fetchOffsets(groupId)).map((o) => [bucketKey(o!.tableId, o!.bucketId), o!.offset]));
    for (const [key, { offset, atMs }] of group) {
      const got = stored.get(key);
      if (got === offset || (got === undefined && mayExpire(atMs))) continue;
      throw new OffsetStoreError('CORRUPT_MESSAGE', `lab check: group ${groupId}, bucket key ${key}: the store holds ${String(got)}, the workload left ${offset}`);
    }
    if (stored.size > group.size) throw new OffsetStoreError('CORRUPT_MESSAGE', `lab check: group ${groupId} holds ${stored.size} offsets, the workload left ${group.size}`);
  }
}

function totals(samples: readonly LabSample[], runs: readonly CompactionRunRecord[], processCpuMs: number, durationMs: number): RunTotals {
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
    bytesWrittenPerRun: writing.length === 0 ? 0 : written / writing.length,
    writeAmplification: last.committedBytes === 0 ? 0 : written / last.committedBytes,
    finalSpaceAmplification: last.spaceAmplification,
    meanSpaceAmplification: later.length === 0 ? last.spaceAmplification : later.reduce((n, s) => n + s.spaceAmplification, 0) / later.length,
    finalReopenMs: reopened?.reopenMs ?? 0,
    finalRecordsReplayed: reopened?.recordsReplayed ?? 0,
    workerCpuMs: runs.reduce((n, r) => n + (r.workerCpuMs ?? 0), 0),
    processCpuMs,
    peakHeapBytes: Math.max(...samples.map((s) => s.heapBytes)),
    workerHeapBytesMax: Math.max(0, ...runs.map((r) => r.workerHeapBytes ?? 0)),
    durationMs,
    liveOffsets: last.liveOffsets,
  };
}
