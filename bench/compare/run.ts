/**
 * `npm run bench:compare`: offset-store side by side with the stores a user would otherwise pick
 * (lmdb-js, better-sqlite3, classic-level), same workloads, same process run, same disk, same
 * durability (a commit resolves only after a device flush; see verify-durability.ts).
 *
 * Workloads (issue 6), each run on every adapter back to back before the next workload starts:
 *   (a) batched commit of 1000 offsets          (b) 1-10-offset commits from 64 concurrent committers
 *   (c) one-bucket fetch                        (d) 100-bucket fetch
 *   (e) reopen with N live offsets              (f) heap/RSS per live offset (child process each)
 *   (g) mixed 90% commit / 10% fetch over 10k groups with p50/p99/p999
 * lmdb-js runs twice for the write workloads: `transactionSync` (what docs/performance.md compares
 * against; it serializes concurrent committers) and its async `transaction` + `db.flushed` (lmdb-js's
 * own batching, the fair concurrent figure).
 *
 * Output: a terminal table, bench/results/compare-<date>.json and .md (sizes: compare-config.ts).
 * Default scale takes ~2-4 minutes on 2 cores; COMPARE_SCALE=full (1M offsets, 30 s mixed) ~20 min.
 *
 * Expected orders of magnitude are in each workload's header; the disk floor printed first (4 KiB
 * write + fdatasync) bounds every serialized durable commit rate from above.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { AdapterSpec } from './adapter.js';
import { loadAdapterSpecs } from './adapters/index.js';
import { REPO_ROOT, readCompareConfig, type CompareConfig } from './compare-config.js';
import { describeMachine, machineLine } from './machine.js';
import { renderTerminal, writeReportFiles, type Cell, type CompareReport } from './report.js';
import { batchedCommit } from './workloads/batched-commit.js';
import { concurrentCommits } from './workloads/concurrent-commits.js';
import { fetchMany } from './workloads/fetch-many.js';
import { fetchOne } from './workloads/fetch-one.js';
import { memory } from './workloads/memory.js';
import { mixed } from './workloads/mixed.js';
import { recovery } from './workloads/recovery.js';
import { formatValue } from './report.js';
import type { Workload, WorkloadContext } from './workloads/workload.js';

const WORKLOADS: readonly Workload[] = [
  batchedCommit,
  concurrentCommits,
  fetchOne,
  fetchMany,
  recovery,
  memory,
  mixed,
];

async function main(): Promise<void> {
  const config = readCompareConfig();
  const runDir = join(config.dataDir, `run-${process.pid}`);
  mkdirSync(runDir, { recursive: true });
  const log = (line: string): void => {
    process.stdout.write(`${line}\n`);
  };
  try {
    const machine = describeMachine(runDir, config.scale === 'full' ? 3000 : 1000);
    log(`machine: ${machineLine(machine)}`);
    if (machine.fileSystem.startsWith('tmpfs'))
      log(
        'WARNING: the data directory is on tmpfs, where fsync costs nothing: set COMPARE_DIR to a disk.',
      );
    if (machine.loadAverage > machine.cores / 2)
      log(
        `WARNING: load average ${machine.loadAverage} on ${machine.cores} cores: other work is running and will skew the numbers.`,
      );
    const catalog = await loadAdapterSpecs(config.adapterIds);
    for (const u of catalog.unavailable) log(`not run: ${u.id}: ${u.reason}`);
    log(
      `adapters: ${catalog.specs.map((s) => s.id).join(', ')}; workloads: ${config.workloads.join(', ')}; scale ${config.scale}`,
    );

    const runs: Cell[][] = [];
    const workloads = WORKLOADS.filter((w) => config.workloads.includes(w.id));
    for (let run = 1; run <= config.runs; run++) {
      const cells: Cell[] = [];
      for (const workload of workloads) {
        log(
          `\n(${workload.id}) ${workload.title}${config.runs > 1 ? `, run ${run} of ${config.runs}` : ''}`,
        );
        for (const spec of catalog.specs) {
          if (spec.variantOf !== undefined && !workload.runsVariants) continue;
          if (spec.writeOnly === true && workload.runsFloor !== true) continue;
          cells.push(await runCell(workload, spec, config, runDir, log));
        }
      }
      runs.push(cells);
    }
    const cells = mergeRuns(runs);

    const report: CompareReport = {
      createdAt: new Date().toISOString(),
      repoCommit: repoCommit(),
      config,
      machine,
      runs: config.runs,
      unavailable: catalog.unavailable,
      workloads: workloads.map((w) => ({
        id: w.id,
        title: w.title,
        peerRatio: w.peerRatio,
        targets: w.targets,
      })),
      cells,
    };
    log(`\n${renderTerminal(report)}`);
    const files = writeReportFiles(report, join(REPO_ROOT, 'bench', 'results'));
    log(`\nwrote ${files.json}\nwrote ${files.markdown}`);
  } finally {
    rmSync(runDir, { recursive: true, force: true });
  }
}

async function runCell(
  workload: Workload,
  spec: AdapterSpec,
  config: CompareConfig,
  runDir: string,
  log: (line: string) => void,
): Promise<Cell> {
  const probe = spec.create();
  const base = {
    workload: workload.id,
    adapterId: spec.id,
    adapterName: probe.name,
    durability: probe.durability,
  };
  const dirs: string[] = [];
  const context: WorkloadContext = {
    config,
    freshDir: () => {
      const dir = join(runDir, `${workload.id}-${spec.id}-${dirs.length}`);
      mkdirSync(dir, { recursive: true });
      dirs.push(dir);
      return dir;
    },
    log,
  };
  const t0 = performance.now();
  try {
    const result = await workload.run(spec, context);
    const seconds = ((performance.now() - t0) / 1000).toFixed(1);
    log(
      `  ${probe.name.padEnd(26)} ${formatValue(result.headline.value, result.headline.unit).padStart(9)} ${result.headline.label}  (${seconds} s; ${result.notes.join('; ')})`,
    );
    return { ...base, result };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log(`  ${probe.name.padEnd(26)} FAILED: ${message}`);
    return { ...base, error: message };
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * One cell per workload and store from the cells of several runs: the run whose headline is the
 * median (so its details belong together), with every run's headline value kept in `runValues`.
 */
function mergeRuns(runs: readonly Cell[][]): Cell[] {
  const merged: Cell[] = [];
  for (const first of runs[0] ?? []) {
    const same = runs.map((cells) =>
      cells.find((c) => c.workload === first.workload && c.adapterId === first.adapterId),
    );
    const runValues = same.map((c) => c?.result?.headline.value);
    const measured = same
      .filter((c): c is Cell & { result: NonNullable<Cell['result']> } => c?.result !== undefined)
      .sort((a, b) => a.result.headline.value - b.result.headline.value);
    const median = measured[(measured.length - 1) >> 1];
    merged.push(median === undefined ? first : { ...median, runValues });
  }
  return merged;
}

function repoCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    }).trim();
    const dirty =
      execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
      }).trim() !== '';
    return dirty ? `${head} + uncommitted changes` : head;
  } catch {
    return 'unknown';
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
