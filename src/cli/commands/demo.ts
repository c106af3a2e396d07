/**
 * `offset-store demo` (the default of `npm start`): runs the demo scenario (src/cli/demo) in a fresh
 * store and prints its timeline, the at-least-once verification and a summary table. Exit 0 only
 * when the verification holds.
 */
import {
  DEMO_DEFAULTS,
  DEMO_SEGMENT_BYTES,
  runDemo,
  type DemoEvent,
  type DemoResult,
} from '../demo/demo-scenario.js';
import {
  EXIT,
  UsageError,
  integerOption,
  noPositionals,
  type Command,
  type CommandContext,
} from '../command.js';
import {
  formatBytes,
  formatCount,
  formatDuration,
  formatPercentChange,
  type Output,
} from '../output.js';
import { stopOnSignal } from '../stop-on-signal.js';

/** The `demo` command. */
export const demo: Command = {
  words: ['demo'],
  positionals: [],
  defaultDir: './data',
  summary: 'run a scanner group, kill a member, verify nothing was skipped',
  description: [
    'Creates a fresh store in --dir, which must be empty, missing, or an old demo store: the demo writes a',
    'DEMO marker file into every store it creates and replaces only a directory holding one (anything else,',
    'such as a store of your own, is refused and left untouched). It runs a group of scanners over a synthetic',
    'table (each bucket a sequence of records they consume and commit), kills one scanner mid-way (it stops',
    'heartbeating without leaving), and shows the rebalance moving its buckets to the survivors after the',
    'session timeout, which resume from its last committed offsets. It then verifies that every record of',
    'every bucket was consumed (duplicates after the kill are allowed: at-least-once) and prints commits/s,',
    'fetch latency, records written and a compaction result.',
  ].join('\n'),
  options: {
    members: {
      type: 'string',
      valueName: '<n>',
      description: `scanners in the group (default ${DEMO_DEFAULTS.memberCount}, at least 2)`,
    },
    buckets: {
      type: 'string',
      valueName: '<n>',
      description: `buckets of the synthetic table (default ${DEMO_DEFAULTS.bucketCount})`,
    },
    'records-per-bucket': {
      type: 'string',
      valueName: '<n>',
      description: `records in each bucket (default ${DEMO_DEFAULTS.recordsPerBucket})`,
    },
    'session-timeout-ms': {
      type: 'string',
      valueName: '<ms>',
      description: `session timeout of the scanners (default ${DEMO_DEFAULTS.sessionTimeoutMs})`,
    },
  },
  examples: [
    'npm start',
    'offset-store demo --dir /tmp/offset-demo',
    'offset-store demo --members 6 --buckets 24 --json',
  ],
  async run(context) {
    noPositionals(context);
    const options = demoOptions(context);
    const { output } = context;
    if (!output.json) {
      output.line(`offset-store demo in ${options.dir}`);
      output.line(
        `  table 1: ${options.bucketCount} buckets x ${formatCount(options.recordsPerBucket)} records; group demo-scanners: ${options.memberCount} scanners, session timeout ${formatDuration(options.sessionTimeoutMs)}, heartbeat every ${formatDuration(options.heartbeatIntervalMs)}, commit every 100 ms`,
      );
      output.line();
    }
    let interrupted = false;
    const result = await stopOnSignal(
      runDemo(options, (event) => {
        if (!output.json && !interrupted) output.line(formatEvent(event));
      }),
      `the demo did not finish; ${options.dir} holds its partial store, which the next demo replaces`,
    ).catch((error: unknown) => {
      interrupted = true;
      throw error;
    });
    if (output.json) output.result(result);
    else printResult(output, result);
    if (!result.verification.ok) {
      output.stderr('error: DEMO_VERIFICATION_FAILED: see the verification above\n');
      return EXIT.FAILED;
    }
    return EXIT.OK;
  },
};

function demoOptions(context: CommandContext) {
  return {
    dir: context.dir,
    memberCount: integerOption(context, 'members', { range: [2, 64] }) ?? DEMO_DEFAULTS.memberCount,
    bucketCount:
      integerOption(context, 'buckets', { range: [1, 1024] }) ?? DEMO_DEFAULTS.bucketCount,
    recordsPerBucket:
      integerOption(context, 'records-per-bucket', { range: [100, 1_000_000] }) ??
      DEMO_DEFAULTS.recordsPerBucket,
    sessionTimeoutMs:
      integerOption(context, 'session-timeout-ms', { range: [500, 30_000] }) ??
      DEMO_DEFAULTS.sessionTimeoutMs,
    heartbeatIntervalMs: DEMO_DEFAULTS.heartbeatIntervalMs,
  };
}

function list(values: readonly number[]): string {
  return values.join(' ');
}

function formatEvent(event: DemoEvent): string {
  const time = `[${(event.atMs / 1000).toFixed(2).padStart(6)} s]`;
  switch (event.type) {
    case 'joined':
      return `${time} ${event.scanner} joined as member ${event.memberId}`;
    case 'assigned':
      return `${time} ${event.scanner} assigned buckets [${list(event.buckets.map((b) => b.bucketId))}], resuming at [${list(event.buckets.map((b) => b.resumeOffset))}]`;
    case 'revoked':
      return `${time} ${event.scanner} released buckets [${list(event.buckets.map((b) => b.bucketId))}] after committing [${list(event.buckets.map((b) => b.committedOffset))}]`;
    case 'lost':
      return `${time} ${event.scanner} was fenced and lost buckets [${list(event.bucketIds)}]`;
    case 'stable':
      return `${time} group Stable at epoch ${event.groupEpoch}: ${Object.entries(event.owners)
        .map(([name, ids]) => `${name} [${list(ids)}]`)
        .join(', ')}`;
    case 'killed':
      return `${time} KILL ${event.scanner}: stops heartbeating without leaving. Its buckets [${list(event.positions.map((p) => p.bucketId))}] were read to [${list(event.positions.map((p) => p.next))}], last committed [${list(event.positions.map((p) => p.committed))}]`;
    case 'resumed':
      return `${time} ${event.scanner} resumes bucket ${event.bucketId} at ${event.resumeOffset} ${event.resumeOffset === event.killedCommitted ? '=' : '!='} the killed scanner's last commit (${event.killedRead - event.killedCommitted} records will be read again)`;
    case 'completed':
      return `${time} every bucket consumed and committed to its end (group epoch ${event.groupEpoch})`;
    case 'left':
      return `${time} the survivors left the group`;
  }
}

function printResult(output: Output, r: DemoResult): void {
  const v = r.verification;
  output.line();
  output.line('Verification');
  output.line(
    `  ${v.skipped.length === 0 ? 'OK  ' : 'FAIL'} nothing skipped: ${formatCount(r.bucketCount * r.recordsPerBucket)} records in ${r.bucketCount} buckets, each consumed at least once${v.skipped.length === 0 ? '' : `; skipped: ${v.skipped.map((s) => `bucket ${s.bucketId} [${s.from}, ${s.to})`).join(', ')}`}`,
  );
  output.line(
    `  ${v.resumedAtLastCommit === v.movedBuckets ? 'OK  ' : 'FAIL'} ${v.resumedAtLastCommit}/${v.movedBuckets} buckets of the killed scanner resumed exactly at its last committed offset (moved after ${r.killed.rebalanceMs === null ? '-' : formatDuration(r.killed.rebalanceMs)}, session timeout ${formatDuration(r.sessionTimeoutMs)})`,
  );
  output.line(
    `  ${v.finalOffsetsAtEnd ? 'OK  ' : 'FAIL'} every committed offset is at the end of its bucket (${formatCount(r.recordsPerBucket)})`,
  );
  output.line(
    `  INFO ${formatCount(v.duplicates)} duplicate reads (at-least-once): ${v.unexplainedDuplicates === 0 ? 'all of them records the killed scanner had read but not yet committed' : `${formatCount(v.unexplainedDuplicates)} outside the killed scanner's uncommitted ranges`}`,
  );
  output.line();
  const m = r.metrics;
  const c = r.compaction;
  const errors = Object.entries(m.commitErrors)
    .map(([code, n]) => `${n} ${code}`)
    .join(', ');
  output.table(
    [{ header: 'SUMMARY' }, { header: 'VALUE' }],
    [
      [
        'scanner commits',
        `${formatCount(m.commits)} in ${formatDuration(m.runMs)} = ${m.commitsPerSecond.toFixed(0)} commits/s (every 100 ms per scanner)${errors === '' ? '' : `; refused during rebalances: ${errors}`}`,
      ],
      [
        'durable commits/s',
        `${formatCount(Math.round(m.burstCommitsPerSecond))} commits/s from ${m.burstCommitters} concurrent committers for 1 s after a warm-up (fsync, group commit; the demo's ${formatBytes(DEMO_SEGMENT_BYTES)} segments roll every few rounds, at several fdatasyncs each)`,
      ],
      [
        'fetch latency (1 bucket)',
        `p50 ${m.fetchP50Us.toFixed(1)} us, p99 ${m.fetchP99Us.toFixed(1)} us`,
      ],
      [
        'records written',
        `${formatCount(m.offsetRecordsCommitted)} offset records in ${formatCount(m.logBatches)} batches, ${formatBytes(m.logBytesBeforeCompaction)} of log`,
      ],
      [
        `compaction (${c.strategy})`,
        `${formatBytes(c.bytesBefore)} -> ${formatBytes(c.bytesAfter)} (${formatPercentChange(c.bytesBefore, c.bytesAfter)}), ${formatCount(c.recordsDropped)} records dropped, ${formatDuration(c.durationMs)}`,
      ],
      ['demo time', formatDuration(r.durationMs)],
    ],
  );
  output.line();
  // Through npm (`npm start` in a checkout) the command is not on the PATH: npx finds it.
  const command =
    process.env.npm_lifecycle_event === undefined ? 'offset-store' : 'npx offset-store';
  output.line(
    `Look around: ${command} groups describe ${r.groupId} --dir ${r.dir}  (also: groups list, stats, log verify, log dump --bucket N --records)`,
  );
}
