/**
 * `offset-store log verify`: checks every batch of every segment of every offsets-bucket without
 * opening (and so without repairing) the store, and reports corrupt and torn places with file and
 * byte position. Exit 0 when clean, 3 when only torn tails were found (the next open truncates
 * them), 1 with CORRUPT_MESSAGE when anything is corrupt.
 */
import * as path from 'node:path';
import { STORE_WIDE_BUCKET, verifyLog, type VerifyReport } from '../../admin/index.js';
import { INTENT_FILE } from '../../log/index.js';
import { EXIT, noPositionals, type Command } from '../command.js';
import { cell, formatBytes, formatCount, formatDuration, type Output } from '../output.js';
import { Progress } from '../progress.js';

/** The `log verify` command. */
export const logVerify: Command = {
  words: ['log', 'verify'],
  positionals: [],
  summary: 'check every checksum of every segment; report corrupt and torn places',
  description: [
    'Reads every segment file of every offsets-bucket and checks each batch (length, magic, checksum, log',
    'offset order) and each record. Nothing is modified: the store is not opened, so a torn tail is reported',
    'rather than truncated. Damage at the end of the last segment of a bucket with nothing valid after it is',
    'a torn tail (an interrupted append; the next open truncates it); anything else is corrupt (the next open',
    'refuses the bucket with CORRUPT_MESSAGE).',
    '',
    'Exit code: 0 clean, 3 torn tails only, 1 corrupt (CORRUPT_MESSAGE printed).',
  ].join('\n'),
  options: {},
  examples: ['offset-store log verify --dir ./data', 'offset-store log verify --dir ./data --json'],
  async run(context) {
    noPositionals(context);
    const { output } = context;
    const progress = new Progress(output);
    let report: VerifyReport;
    let checked = 0;
    try {
      report = await verifyLog(context.dir, {
        onBucketChecked: (_bucket, total) =>
          progress.bar(++checked, total, 'offsets-buckets checked'),
      });
    } finally {
      progress.stop();
    }
    if (output.json) output.result(report);
    else printReport(output, report);
    if (report.corruptCount > 0) {
      if (!output.json)
        output.stderr(
          `error: CORRUPT_MESSAGE: ${report.corruptCount} corrupt place(s) in ${report.dir}\n`,
        );
      else
        output.stderr(
          `${JSON.stringify({ error: { code: 'CORRUPT_MESSAGE', errno: 2, retriable: false, message: `CORRUPT_MESSAGE: ${report.corruptCount} corrupt place(s) in ${report.dir}` } })}\n`,
        );
      return EXIT.FAILED;
    }
    return report.tornTailCount > 0 ? EXIT.TORN_TAIL : EXIT.OK;
  },
};

function printReport(output: Output, report: VerifyReport): void {
  const t = report.totals;
  output.line(
    `Checked ${report.bucketCount} offsets-buckets of ${report.dir}: ${formatCount(t.segmentCount)} segments, ${formatBytes(t.sizeBytes)}, ${formatCount(t.batchCount)} batches, ${formatCount(t.recordCount)} records in ${formatDuration(report.durationMs)}.`,
  );
  if (report.journal.files > 0)
    output.line(
      `Commit journal: ${report.journal.files} file(s), ${formatCount(report.journal.rounds)} rounds, ${formatCount(report.journal.batches)} batches (left by a crash or an open store); the next open writes into the logs what they lack of it.`,
    );
  const refused = report.journal.refusedFrom;
  if (refused !== undefined)
    output.line(
      `Refused commit-journal rounds that could not be erased are recorded: ${refused.file} is read as ending at byte ${refused.position}; the next open drops what follows and deletes the record.`,
    );
  if (report.openByPid !== null)
    output.warn(
      `the store is open by live process ${report.openByPid}: a torn tail may be an append in progress`,
    );
  output.line();
  output.table(
    [
      { header: 'BUCKET', align: 'right' },
      { header: 'SEGMENTS', align: 'right' },
      { header: 'SIZE', align: 'right' },
      { header: 'BATCHES', align: 'right' },
      { header: 'RECORDS', align: 'right' },
      { header: 'LOG-OFFSETS' },
      { header: 'STATUS' },
    ],
    report.buckets.map((b) => [
      String(b.bucket),
      String(b.segments.length),
      formatBytes(b.sizeBytes),
      formatCount(b.batchCount),
      formatCount(b.recordCount),
      b.firstLogOffset === null ? '-' : `${b.firstLogOffset}..${cell(b.lastLogOffset)}`,
      `${b.status}${swapNote(b)}${staleNote(b)}`,
    ]),
  );
  output.line();
  if (report.problems.length === 0) {
    output.line('OK: every batch and record is valid.');
    return;
  }
  output.table(
    [
      { header: 'KIND' },
      { header: 'FILE' },
      { header: 'POSITION', align: 'right' },
      { header: 'BYTES-AFTER', align: 'right' },
      { header: 'REASON' },
    ],
    report.problems.map((p) => [
      p.kind,
      path.relative(report.dir, p.file),
      String(p.position),
      String(p.bytesAfter),
      p.reason,
    ]),
  );
  output.line();
  if (report.corruptCount > 0)
    output.line(
      `CORRUPT: ${report.corruptCount} corrupt place(s); opening the store will fail ${
        report.problems.some((p) => p.kind === 'corrupt' && p.bucket === STORE_WIDE_BUCKET)
          ? 'for the whole store'
          : 'for the affected offsets-buckets'
      } (CORRUPT_MESSAGE, or the error a reason names).`,
    );
  if (report.tornTailCount > 0)
    output.line(
      `TORN TAIL: ${report.tornTailCount} torn tail(s); the next open repairs them: it cuts off what was never acknowledged, and writes again from the commit journal what the journal holds (no acknowledged write is lost).`,
    );
}

/** What the next open does with stale segments below where recovery starts. */
function staleNote(bucket: { staleSegments: string[] }): string {
  const n = bucket.staleSegments.length;
  if (n === 0) return '';
  return ` (${n} stale segment(s) below its checkpoint that do not chain with the rest: ${bucket.staleSegments.join(', ')}; the next open removes them)`;
}

/**
 * What the next open does with a compaction's leftovers: a committed swap (its intent file) is
 * completed, unless the bucket is refused; files of a swap that never committed are removed.
 */
function swapNote(bucket: { status: string; swapLeftovers: string[] }): string {
  if (bucket.swapLeftovers.length === 0) return '';
  if (!bucket.swapLeftovers.includes(INTENT_FILE))
    return ' (leftovers of a compaction that never committed; the next open removes them)';
  return bucket.status === 'corrupt'
    ? ' (interrupted compaction swap)'
    : ' (interrupted compaction swap; completed on next open)';
}
