/**
 * `offset-store compact`: runs compaction on every offsets-bucket now and prints what it did. On a
 * terminal a spinner shows the buckets done, the elapsed time and the log size as buckets are swapped.
 */
import type { CompactionReport } from '../../index.js';
import {
  COMPACTION_STRATEGIES,
  isCompactionStrategy,
  isStrategyModulePath,
} from '../../compaction/index.js';
import {
  EXIT,
  UsageError,
  integerOption,
  noPositionals,
  stringOption,
  type Command,
} from '../command.js';
import {
  formatBytes,
  formatCount,
  formatDuration,
  formatPercentChange,
  type Output,
} from '../output.js';
import { Progress } from '../progress.js';
import { withAdmin } from './with-admin.js';

const STATS_POLL_MS = 250;

/** The `compact` command. */
export const compact: Command = {
  words: ['compact'],
  positionals: [],
  summary: 'compact every offsets-bucket now; bytes before/after and time',
  description: [
    'Compacts every offsets-bucket now, whatever its dirty ratio, and prints bytes before and after, records',
    'dropped and time per bucket, with the strategy the store records (log-cleaner: rewrites every sealed segment',
    'keeping the latest record per key; incremental: rewrites only segments that hold garbage; checkpoint: writes',
    'the materialized index to LMDB and deletes the log it covers; or a strategy module, docs/compaction.md).',
    '--strategy converts the store to another strategy first (crash-safe) and records it, so later opens use it',
    'too; for a store compacted by a module, --strategy <its path> gives the module to compact with.',
  ].join('\n'),
  options: {
    strategy: {
      type: 'string',
      valueName: '<log-cleaner|incremental|checkpoint|none|./module.js>',
      description: 'convert the store to this strategy first (or give its module)',
    },
    workers: {
      type: 'string',
      valueName: '<n>',
      description: 'worker threads / buckets compacted at once (default 1)',
    },
  },
  examples: [
    'offset-store compact --dir ./data',
    'offset-store compact --dir ./data --strategy checkpoint --json',
  ],
  async run(context) {
    noPositionals(context);
    const requested = stringOption(context, 'strategy');
    if (
      requested !== undefined &&
      !isCompactionStrategy(requested) &&
      !isStrategyModulePath(requested)
    ) {
      throw new UsageError(
        `--strategy must be one of ${COMPACTION_STRATEGIES.join(', ')} or the path of a strategy module, got ${JSON.stringify(requested)}`,
      );
    }
    const workers = integerOption(context, 'workers', { range: [1, 1024] }) ?? 1;
    const { output } = context;
    const report = await withAdmin(
      context,
      async (admin) => {
        const current = (await admin.store.stats()).compactionStrategy;
        if (requested !== undefined) {
          // The store's own module strategy is attached; any other strategy is converted to first.
          await admin.store.convertCompaction(requested);
          const now = (await admin.store.stats()).compactionStrategy;
          if (now !== current && !output.json)
            output.line(`Converted the store from ${current} to ${now}.`);
        }
        const strategy = (await admin.store.stats()).compactionStrategy;
        const progress = new Progress(output);
        const before = (await admin.stats()).totals.logBytes;
        let buckets = '';
        const label = (): string => `compacting with ${strategy}${buckets}`;
        progress.spin(`${label()}  ${formatBytes(before)}`);
        const poll = setInterval(() => {
          admin.stats().then(
            (s) =>
              progress.spin(
                `${label()}  ${formatDuration(progress.elapsedMs)}  log ${formatBytes(before)} -> ${formatBytes(s.totals.logBytes)}`,
              ),
            () => {},
          );
        }, STATS_POLL_MS);
        try {
          return await admin.compact((finished, total) => {
            buckets = `  ${finished}/${total} buckets`;
          });
        } finally {
          clearInterval(poll);
          progress.stop();
        }
      },
      {
        compactionWorkers: workers,
        whenStopped:
          'compaction stopped; the buckets it had finished stay compacted, the others are as they were',
      },
    );
    if (output.json) output.result(report);
    else printReport(output, report);
    return EXIT.OK;
  },
};

function printReport(output: Output, report: CompactionReport): void {
  output.line(
    `Compacted ${report.buckets.length} offsets-buckets with ${report.strategy} in ${formatDuration(report.durationMs)}: ${formatBytes(report.bytesBefore)} -> ${formatBytes(report.bytesAfter)} (${formatPercentChange(report.bytesBefore, report.bytesAfter)}), ${formatCount(report.recordsDropped)} records dropped, ${formatBytes(report.bytesWritten)} written.`,
  );
  const changed = report.buckets.filter(
    (b) =>
      b.bytesBefore !== b.bytesAfter ||
      b.segmentsBefore !== b.segmentsAfter ||
      b.recordsDropped > 0,
  );
  if (changed.length === 0) {
    output.line('Nothing dropped: no sealed segment held a superseded record.');
    return;
  }
  output.line();
  output.table(
    [
      { header: 'BUCKET', align: 'right' },
      { header: 'BEFORE', align: 'right' },
      { header: 'AFTER', align: 'right' },
      { header: 'SEGMENTS', align: 'right' },
      { header: 'RECORDS-READ', align: 'right' },
      { header: 'DROPPED', align: 'right' },
      { header: 'TIME', align: 'right' },
    ],
    changed.map((b) => [
      String(b.bucket),
      formatBytes(b.bytesBefore),
      formatBytes(b.bytesAfter),
      `${b.segmentsBefore} -> ${b.segmentsAfter}`,
      formatCount(b.recordsRead),
      formatCount(b.recordsDropped),
      formatDuration(b.durationMs),
    ]),
  );
}
