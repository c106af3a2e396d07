/**
 * `offset-store lab`: runs compaction strategies (built-ins and strategy modules) side by side on the
 * lab's standard workloads, writes lab-result.json and a self-contained lab-report.html with charts to
 * --out, and prints a summary table per workload. A progress bar runs on a terminal.
 */
import * as path from 'node:path';
import { OffsetStoreError } from '../../errors/index.js';
import { NodeFileSystem } from '../../io/index.js';
import {
  CHART_PACKAGES,
  LAB_SCALES,
  loadChartLibraries,
  SUMMARY_COLUMNS,
  WORKLOADS,
  checkLabOptions,
  runLab,
  failureNotes,
  summaryRows,
  writeLabReport,
  type LabScale,
} from '../../lab/index.js';
import {
  EXIT,
  UsageError,
  integerOption,
  noPositionals,
  stringOption,
  type Command,
} from '../command.js';
import { writeDurably } from '../../log/index.js';
import { notADirectory } from '../../open-failure.js';
import { TIMER_MS_MAX } from '../../util/index.js';
import { formatDuration } from '../output.js';
import { Progress } from '../progress.js';
import { stopOnSignal } from '../stop-on-signal.js';

/** The `lab` command. */
export const lab: Command = {
  words: ['lab'],
  positionals: [],
  summary:
    'compare compaction strategies on standard workloads; JSON and an HTML report with charts',
  description: [
    'Runs each strategy (built-in names, or paths of strategy modules: docs/compaction.md) on the chosen workloads,',
    'each on a fresh store under --dir (deleted after its run), with the same seeded operations, and measures over',
    'time: space and write amplification, bytes written per compaction run, time and records to reopen, commit',
    'latency idle against compacting, worker CPU and heap. The control (no compaction) always runs too.',
    `Workloads: ${WORKLOADS.map((w) => w.name).join(', ')}, or all. Scales: small (seconds per workload and strategy), default (about`,
    '100k live offsets; minutes per strategy), full (1M live offsets and more).',
    'Writes <out>/lab-result.json and <out>/lab-report.html (open it in a browser; it works offline).',
  ].join('\n'),
  defaultDir: '.offset-store-lab',
  options: {
    strategies: {
      type: 'string',
      valueName: '<a,b,...>',
      description: 'strategies to compare (default log-cleaner,incremental,checkpoint)',
    },
    workload: {
      type: 'string',
      valueName: '<name[,name]|all>',
      description: 'workloads (default hot-overwrite)',
    },
    scale: {
      type: 'string',
      valueName: '<small|default|full>',
      description: 'size of every workload (default default)',
    },
    out: {
      type: 'string',
      valueName: '<dir>',
      description: 'where the JSON and HTML go (default lab-results)',
    },
    seed: { type: 'string', valueName: '<n>', description: 'seed of the workloads (default 1)' },
    'compaction-wait-ms': {
      type: 'string',
      valueName: '<ms>',
      description:
        'longest wait for compaction runs in flight to end; a strategy whose runs outlast it fails the lab (default 30000 at small scale, 120000 default, 600000 full)',
    },
  },
  examples: [
    'offset-store lab --strategies log-cleaner,incremental,checkpoint,./mine.js --workload hot-overwrite --scale default --out lab/',
    'offset-store lab --workload all --scale small --out /tmp/lab',
  ],
  async run(context) {
    noPositionals(context);
    const strategies = (stringOption(context, 'strategies') ?? 'log-cleaner,incremental,checkpoint')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    const workloads = (stringOption(context, 'workload') ?? 'hot-overwrite')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    const scale = stringOption(context, 'scale') ?? 'default';
    if (!(LAB_SCALES as readonly string[]).includes(scale))
      throw new UsageError(
        `--scale must be one of ${LAB_SCALES.join(', ')}, got ${JSON.stringify(scale)}`,
      );
    const seed = integerOption(context, 'seed') ?? 1;
    const out = stringOption(context, 'out') ?? 'lab-results';
    // At most a timer's longest delay (2^31 - 1 ms, about 24.8 days).
    const compactionWaitMs = integerOption(context, 'compaction-wait-ms', {
      range: [1, TIMER_MS_MAX],
    });
    const options = { strategies, workloads, scale: scale as LabScale, seed, dir: context.dir };
    try {
      checkLabOptions(options);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    await checkScratchDir(context.dir);
    await checkOutDir(out);
    const { output } = context;
    // Said before the run, which can take minutes, so that the packages can be installed first.
    const libraries = await loadChartLibraries();
    if (libraries === null)
      output.warn(
        `the report will have no charts: the optional packages they are drawn with are not installed (npm i ${CHART_PACKAGES}); its tables and lab-result.json hold every figure`,
      );
    const progress = new Progress(output);
    let result;
    try {
      result = await stopOnSignal(
        runLab({
          ...options,
          ...(compactionWaitMs === undefined ? {} : { settings: { compactionWaitMs } }),
          onProgress: (done, total, what) => progress.bar(done, total, what),
        }),
        `the lab did not finish and wrote no report; the next lab in ${context.dir} removes the store of the run it stopped`,
      );
    } finally {
      progress.stop();
    }
    const written = await writeLabReport(result, out, libraries);
    if (output.json) {
      output.result({
        ...written,
        workloads: result.workloads.map((w) => ({
          name: w.name,
          runs: w.runs.map((r) => ({
            strategy: r.recorded,
            totals: r.totals,
            latency: r.latency,
            failures: r.failures,
          })),
        })),
      });
      return EXIT.OK;
    }
    for (const workload of result.workloads) {
      output.line(`${workload.name} (${result.scale}): ${workload.description}`);
      const rows = summaryRows(workload);
      output.table(
        SUMMARY_COLUMNS.map((header, i) => ({
          header: header.toUpperCase(),
          align: i === 0 ? ('left' as const) : ('right' as const),
        })),
        rows.map((r) => r.cells),
      );
      for (const note of failureNotes(workload, rows)) output.line(`warning: ${note}`);
      output.line();
    }
    output.line(
      `Lab done in ${formatDuration(progress.elapsedMs)}: ${written.html} (${written.charts ? 'charts' : 'tables; no charts'}) and ${written.json}.`,
    );
    return EXIT.OK;
  },
};

/**
 * Checks that --dir is a folder or can become one (nothing is made yet): a file there used to fail
 * once --out was made, as LOG_STORAGE_ERROR `EEXIST ... mkdir`, naming neither the option nor the
 * problem.
 */
async function checkScratchDir(dir: string): Promise<void> {
  try {
    await new NodeFileSystem().readdir(dir);
  } catch (error) {
    throw notADirectory(error, `--dir ${dir}`) ?? error;
  }
}

/**
 * Makes `out` and checks a file can be written there, before a run that may take hours: a report
 * that cannot be written is known at once, not after the run (whose results it would lose).
 */
async function checkOutDir(out: string): Promise<void> {
  const fs = new NodeFileSystem();
  const probe = path.join(out, '.write-check');
  try {
    await fs.mkdir(out);
    await writeDurably(fs, probe, Buffer.alloc(0));
    await fs.unlink(probe);
  } catch (error) {
    throw new OffsetStoreError(
      'INVALID_CONFIG',
      `--out ${out} cannot hold the report: ${(error as Error).message}`,
      { cause: error },
    );
  }
}
