/**
 * `npm run sim -- [--seed N | --seeds K | --minutes M] [--ops M] [--faults profile] [--swarm]
 * [--os-share P] [--lazy-open-share P] [--view-chance P] [--sync-now-share P] [--regression]
 * [--verbose]`: runs simulations (sim/simulator.ts) and reports each seed's outcome.
 *
 * - `--seed N` runs one seed (replays it exactly; `--verbose` prints every action).
 * - `--seeds K` runs K seeds drawn from `--from` (default: the current time, printed), `--minutes M`
 *   runs seeds until M minutes have passed.
 * - `--os-share P` opens each process in durability 'os' with chance P (default: drawn from the
 *   seed, 0 in three runs of five); `--lazy-open-share P` with `awaitRecovery: false` (0 in two of
 *   three); `--view-chance P` opens a read-only view beside the live process before an action
 *   with chance P (0 in two of four); `--sync-now-share P` lets each process's file system make
 *   fdatasyncs on the calling thread when the store asks (`datasyncNow`) with chance P (0 in one
 *   of three).
 * - `--regression` runs every seed in sim/regression-seeds.json, each with the options it was found
 *   with.
 * - `--ci` runs the regression seeds, then SIM_SEEDS (default 25) random seeds in swarm mode with
 *   every fault (`--faults all --swarm`, 1000 operations each), from SIM_FROM (default: the time).
 * On a violation it prints the seed, the operation index, the message and the last actions, and exits
 * 1; the seed replays it with `npm run sim -- --seed N` and the same options. A seed still running
 * after SIM_SEED_TIMEOUT_S seconds (default 600) is reported as hung, with its replay, and exits 1.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FAULT_PROFILES, type FaultProfileName } from './sim-config.js';
import { simulate, type SimOptions, type SimResult } from './simulator.js';

interface RegressionSeed extends SimOptions {
  found: string;
}

function parseArgs(argv: string[]): Map<string, string | true> {
  const args = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new RangeError(`unexpected argument ${arg}`);
    const next = argv[i + 1];
    if (next !== undefined && !next.startsWith('--')) {
      args.set(arg.slice(2), next);
      i++;
    } else {
      args.set(arg.slice(2), true);
    }
  }
  return args;
}

function number(args: Map<string, string | true>, name: string, fallback: number): number {
  const value = args.get(name);
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new RangeError(`--${name} needs a non-negative integer, got ${String(value)}`);
  return n;
}

function describe(options: SimOptions): string {
  return `--seed ${options.seed} --ops ${options.ops} --faults ${options.faults}${options.swarm ? ' --swarm' : ''}${options.osShare !== undefined ? ` --os-share ${options.osShare}` : ''}${options.lazyOpenShare !== undefined ? ` --lazy-open-share ${options.lazyOpenShare}` : ''}${options.viewChance !== undefined ? ` --view-chance ${options.viewChance}` : ''}${options.syncNowShare !== undefined ? ` --sync-now-share ${options.syncNowShare}` : ''}`;
}

function report(result: SimResult, options: SimOptions): void {
  const rate = result.wallMs > 0 ? Math.round((result.ops / result.wallMs) * 1000) : 0;
  const line = `seed ${result.seed}: ${result.outcome} after ${result.ops} ops, ${result.crashes} crashes, ${result.powerLosses} power losses, ${result.restarts} restarts, ${result.steps} events, ${(result.virtualMs / 1000).toFixed(0)} s simulated in ${(result.wallMs / 1000).toFixed(1)} s (${rate} ops/s)`;
  console.log(line);
  if (result.outcome === 'detected') console.log(`  detected: ${result.message}`);
  if (!result.ok) {
    console.log(
      `\nVIOLATION at operation ${result.opIndex} of seed ${result.seed}:\n  ${result.message}\n\nconfig: ${JSON.stringify({ ...result.config, weights: undefined })}\n\nlast actions:`,
    );
    for (const entry of result.trace) console.log(`  ${entry}`);
    if (result.history.length > 0) {
      console.log('\nthe key in the logs now:');
      for (const line of result.history) console.log(`  ${line}`);
    }
    console.log(`\nreplay: npm run sim -- ${describe(options)} --verbose`);
  }
}

export async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (args.has('ci')) {
    args.set('regression', true);
    args.set('seeds', process.env.SIM_SEEDS ?? '25');
    if (process.env.SIM_FROM !== undefined) args.set('from', process.env.SIM_FROM);
    args.set('swarm', true);
    if (!args.has('faults')) args.set('faults', 'all');
    if (!args.has('ops')) args.set('ops', '1000');
    args.set('keep-going', true);
  }
  const faults = (args.get('faults') ?? 'crash') as FaultProfileName;
  if (!(faults in FAULT_PROFILES))
    throw new RangeError(`--faults must be one of ${Object.keys(FAULT_PROFILES).join(', ')}`);
  const ops = number(args, 'ops', 2000);
  const swarm = args.has('swarm');
  const verbose = args.has('verbose');
  const share = (name: string): number | undefined => {
    const arg = args.get(name);
    const value = arg === undefined ? undefined : Number(arg);
    if (value !== undefined && !(value >= 0 && value <= 1))
      throw new RangeError(`--${name} must be a number from 0 to 1, got ${String(arg)}`);
    return value;
  };
  const osShare = share('os-share');
  const lazyOpenShare = share('lazy-open-share');
  const viewChance = share('view-chance');
  const syncNowShare = share('sync-now-share');
  // What the command line asks of every run it names (a regression seed has its own).
  const asked = { ops, faults, swarm, verbose, osShare, lazyOpenShare, viewChance, syncNowShare };
  const runs: SimOptions[] = [];
  if (args.has('regression')) {
    const file = path.join(path.dirname(fileURLToPath(import.meta.url)), 'regression-seeds.json');
    for (const entry of JSON.parse(readFileSync(file, 'utf8')) as RegressionSeed[])
      runs.push({
        seed: entry.seed,
        ops: entry.ops,
        faults: entry.faults,
        swarm: entry.swarm,
        osShare: entry.osShare ?? 0,
        lazyOpenShare: entry.lazyOpenShare ?? 0,
        viewChance: entry.viewChance ?? 0,
        syncNowShare: entry.syncNowShare ?? 0,
      });
  } else if (args.has('seed')) {
    runs.push({ seed: number(args, 'seed', 0), ...asked });
  }
  const minutes = number(args, 'minutes', 0);
  const count = number(args, 'seeds', runs.length === 0 && minutes === 0 ? 1 : 0);
  const from = number(args, 'from', Date.now() % 2 ** 31);
  if (count > 0 || minutes > 0) console.log(`random seeds from ${from} (replay any with --seed N)`);
  const deadline = performance.now() + minutes * 60_000;
  let failures = 0;
  let totalOps = 0;
  let totalCrashes = 0;
  let totalMs = 0;
  let seeds = 0;
  // A seed that never finishes (a hang: a promise nobody settles) is a failure too, reported with
  // its seed rather than left to the CI's time limit. The watchdog keeps the process alive: a
  // simulation waiting on nothing would otherwise end it with no report, and exit code 0.
  const seedTimeoutS = Number(process.env.SIM_SEED_TIMEOUT_S ?? 600);
  if (!(seedTimeoutS > 0))
    throw new RangeError(
      `SIM_SEED_TIMEOUT_S must be a positive number of seconds, got ${seedTimeoutS}`,
    );
  const runOne = async (options: SimOptions) => {
    const watchdog = setTimeout(() => {
      console.log(
        `\nHUNG: seed ${options.seed} has not finished after ${seedTimeoutS} s (SIM_SEED_TIMEOUT_S)\n\nreplay: npm run sim -- ${describe(options)} --verbose`,
      );
      process.exit(1);
    }, seedTimeoutS * 1000);
    const result = await simulate(options).finally(() => clearTimeout(watchdog));
    report(result, options);
    seeds++;
    totalOps += result.ops;
    totalCrashes += result.crashes + result.powerLosses + result.restarts;
    totalMs += result.wallMs;
    if (!result.ok) failures++;
  };
  for (const options of runs) await runOne(options);
  for (let i = 0; i < count || (minutes > 0 && performance.now() < deadline); i++) {
    await runOne({ seed: (from + i) >>> 0, ...asked });
    if (failures > 0 && !args.has('keep-going')) break;
  }
  console.log(
    `\n${seeds} seeds, ${failures} failed; ${totalOps} ops and ${totalCrashes} process ends in ${(totalMs / 1000).toFixed(1)} s (${Math.round(totalOps / (totalMs / 1000))} ops/s, ${(totalCrashes / (totalMs / 1000)).toFixed(1)} process ends/s)`,
  );
  return failures === 0 ? 0 : 1;
}

if (
  process.argv[1] !== undefined &&
  fileURLToPath(import.meta.url) === path.resolve(process.argv[1])
) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 2;
    },
  );
}
