/** `offset-store stats`: per offsets-bucket log bytes, segments, live offsets, groups, last checkpoint. */
import type { StatsReport } from '../../admin/index.js';
import { EXIT, noPositionals, type Command } from '../command.js';
import { formatBytes, formatCount, formatTimestamp, type Output } from '../output.js';
import { READ_ONLY_OPTION, withAdmin } from './with-admin.js';

/** The `stats` command. */
export const stats: Command = {
  words: ['stats'],
  positionals: [],
  summary: 'per offsets-bucket: log bytes, segments, live offsets, groups, last checkpoint',
  description:
    'Opens the store and prints, per offsets-bucket, the log size and segment count, the next log offset, the live committed offsets, the groups, and the newest checkpoint.',
  options: { ...READ_ONLY_OPTION },
  examples: ['offset-store stats --dir ./data', 'offset-store stats --dir ./data --json'],
  async run(context) {
    noPositionals(context);
    const report = await withAdmin(context, (admin) => admin.stats(), {
      readsOnly: true,
      serveHealthyBuckets: true,
    });
    if (context.output.json) context.output.result(report);
    else printReport(context.output, report);
    // A bucket that failed to recover is shown (STATE failed; stderr says why), and fails the command.
    return report.buckets.some((b) => b.state === 'failed') ? EXIT.FAILED : EXIT.OK;
  },
};

function printReport(output: Output, report: StatsReport): void {
  output.line(
    `Store ${report.dir}: ${report.bucketCount} offsets-buckets, created ${formatTimestamp(report.createdAtMs)}`,
  );
  output.line();
  const t = report.totals;
  output.table(
    [
      { header: 'BUCKET', align: 'right' },
      { header: 'STATE' },
      { header: 'LOG', align: 'right' },
      { header: 'SEGMENTS', align: 'right' },
      { header: 'NEXT-LOG-OFFSET', align: 'right' },
      { header: 'LIVE-OFFSETS', align: 'right' },
      { header: 'GROUPS', align: 'right' },
      { header: 'LAST-CHECKPOINT' },
    ],
    [
      ...report.buckets.map((b) => [
        String(b.bucket),
        b.state,
        formatBytes(b.logBytes),
        String(b.segmentCount),
        String(b.nextLogOffset),
        formatCount(b.liveOffsets),
        String(b.groups),
        b.lastCheckpoint === null
          ? '-'
          : `log offset ${b.lastCheckpoint.logOffset} at ${formatTimestamp(b.lastCheckpoint.createdAtMs)}`,
      ]),
      [
        'total',
        '',
        formatBytes(t.logBytes),
        String(t.segmentCount),
        '',
        formatCount(t.liveOffsets),
        String(t.groups),
        '',
      ],
    ],
  );
}
