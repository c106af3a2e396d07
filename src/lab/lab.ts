/**
 * The compaction lab: runs each strategy on each chosen workload, on fresh stores with the same
 * settings and the same seeded operations, one after another (never two at once: they would share
 * the disk and the cores), and gathers the results (lab-run.ts) into one JSON-safe LabResult that
 * report-html.ts turns into charts.
 *
 * A control always runs beside the strategies asked for: 'none' (no compaction), whose space
 * amplification is the log without compaction and whose latency phases measure the machine's noise
 * (its compacting phases call compact(), which does nothing).
 */
import * as os from 'node:os';
import {
  isCompactionStrategy,
  isStrategyModulePath,
  loadStrategy,
  strategyModuleUrl,
} from '../compaction/index.js';
import { NodeFileSystem } from '../io/index.js';
import {
  labSettings,
  removeAbandonedRuns,
  runStrategy,
  type LabSettings,
  type StrategyRun,
} from './lab-run.js';
import { WORKLOADS, type LabScale } from './workloads/index.js';

/** The lab's result: JSON-safe, written as lab-result.json next to the HTML report. */
export interface LabResult {
  /** 1. */
  formatVersion: number;
  /** When the lab ran (ISO 8601). */
  createdAt: string;
  /** The scale of every workload. */
  scale: LabScale;
  /** The seed of every workload. */
  seed: number;
  /** Where it ran. */
  machine: {
    cpuModel: string;
    cpus: number;
    node: string;
    platform: string;
    totalMemoryBytes: number;
  };
  /** Store and run settings. */
  settings: LabSettings;
  /** One entry per workload, in the order asked. */
  workloads: WorkloadResult[];
}

/** One workload's runs. */
export interface WorkloadResult {
  /** Its name. */
  name: string;
  /** What it does. */
  description: string;
  /** Its sizes at this scale. */
  parameters: Record<string, number | string>;
  /** One run per strategy, the control last. */
  runs: StrategyRun[];
}

/** What to run. */
export interface LabOptions {
  /** Strategies: built-in names or module paths. */
  strategies: string[];
  /** Workload names, or ['all']. */
  workloads: string[];
  /** Scale of every workload. */
  scale: LabScale;
  /** Seed of every workload. */
  seed: number;
  /** Scratch directory for the stores (created; each store is deleted after its run). */
  dir: string;
  /** Settings to change from the scale's (tests use clockMode 'step' and durability 'os'). */
  settings?: Partial<LabSettings>;
  /** Add the 'none' control (default true). */
  control?: boolean;
  /** Hears of progress: units done, units in all, what is running. */
  onProgress?: (done: number, total: number, what: string) => void;
}

/** Checks the options; RangeError for an unknown workload or strategy name. */
export function checkLabOptions(options: LabOptions): {
  workloads: (typeof WORKLOADS)[number][];
  strategies: string[];
} {
  const names = options.workloads.includes('all')
    ? WORKLOADS.map((w) => w.name)
    : options.workloads;
  const workloads = names.map((name) => {
    const found = WORKLOADS.find((w) => w.name === name);
    if (found === undefined)
      throw new RangeError(
        `unknown workload ${JSON.stringify(name)}; known: ${WORKLOADS.map((w) => w.name).join(', ')}, all`,
      );
    return found;
  });
  if (workloads.length === 0) throw new RangeError('no workload given');
  // The workloads' generator takes 32 bits: a larger seed would repeat a smaller one's operations
  // under another name in the report.
  if (!(Number.isInteger(options.seed) && options.seed >= 0 && options.seed <= 0xffffffff))
    throw new RangeError(
      `the seed must be an integer in [0, 4294967295] (32 bits), got ${String(options.seed)}`,
    );
  for (const s of options.strategies) {
    if (!isCompactionStrategy(s) && !isStrategyModulePath(s))
      throw new RangeError(
        `unknown strategy ${JSON.stringify(s)}: a built-in name or a module path ('./my-strategy.js')`,
      );
  }
  // One run per strategy: a module named by two spellings of its path runs once.
  const seen = new Set<string>();
  const strategies = options.strategies.filter((s) => {
    const key = isCompactionStrategy(s) ? s : strategyModuleUrl(s, process.cwd());
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  if (strategies.length === 0) throw new RangeError('no strategy given');
  if (options.control !== false && !strategies.includes('none')) strategies.push('none');
  return { workloads, strategies };
}

/**
 * Loads every strategy module named, before anything runs: a path that does not exist or is not a
 * strategy is INVALID_CONFIG at once, not after the runs before its turn (minutes to hours of them).
 */
async function loadStrategyModules(strategies: readonly string[]): Promise<void> {
  for (const s of strategies)
    if (!isCompactionStrategy(s))
      await loadStrategy({ moduleUrl: strategyModuleUrl(s, process.cwd()) });
}

/** Runs the lab (see the module comment). */
export async function runLab(options: LabOptions): Promise<LabResult> {
  const { workloads, strategies } = checkLabOptions(options);
  await loadStrategyModules(strategies);
  const settings: LabSettings = { ...labSettings(options.scale), ...options.settings };
  await new NodeFileSystem().mkdir(options.dir);
  await removeAbandonedRuns(options.dir);
  const total = workloads.reduce(
    (n, w) =>
      n +
      strategies.length *
        (w.create(options.scale, options.seed).steps + 2 * settings.latencyPhasePairs),
    0,
  );
  let done = 0;
  const result: LabResult = {
    formatVersion: 1,
    createdAt: new Date().toISOString(),
    scale: options.scale,
    seed: options.seed,
    machine: {
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      cpus: os.cpus().length,
      node: process.version,
      platform: `${process.platform} ${os.release()}`,
      totalMemoryBytes: os.totalmem(),
    },
    settings,
    workloads: [],
  };
  for (const workload of workloads) {
    const entry: WorkloadResult = {
      name: workload.name,
      description: workload.description,
      parameters: workload.create(options.scale, options.seed).parameters,
      runs: [],
    };
    for (const strategy of strategies) {
      options.onProgress?.(done, total, `${workload.name} / ${strategy}`);
      entry.runs.push(
        await runStrategy({
          dir: options.dir,
          strategy,
          workload,
          scale: options.scale,
          seed: options.seed,
          settings,
          onProgress: (what) =>
            options.onProgress?.(++done, total, `${workload.name} / ${strategy}: ${what}`),
        }),
      );
    }
    result.workloads.push(entry);
  }
  return result;
}
