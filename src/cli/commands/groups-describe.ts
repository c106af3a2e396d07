/**
 * `offset-store groups describe <groupId>`: state, epochs (a classic group: generation, protocol,
 * leader), members with their assignment, and one row per bucket the group has committed or
 * assigned; with `--log-end`, log-end offsets and lag.
 */
import type { BucketReport, GroupReport } from '../../admin/index.js';
import { bucketKey, type TableBucket } from '../../model/index.js';
import {
  EXIT,
  GROUP_ID_JSON_OPTION,
  groupIdArgument,
  readOffsetsDocument,
  stringOption,
  type Command,
} from '../command.js';
import {
  cell,
  formatDuration,
  formatTimestamp,
  printable,
  type Column,
  type Output,
} from '../output.js';
import { READ_ONLY_OPTION, withAdmin } from './with-admin.js';

/** The `groups describe` command. */
export const groupsDescribe: Command = {
  words: ['groups', 'describe'],
  positionals: ['<groupId>'],
  summary: 'state, epoch, members, assignment, committed offsets and lag of a group',
  description: [
    'Describes a group: state, group and assignment epochs, members with their assignment, and one row per',
    'bucket the group has committed or a member owns. With --log-end, each row also shows the log-end offset',
    'of the bucket and the lag (log end - committed offset).',
    '',
    '--log-end takes JSON inline or a file path: an object from bucket key to log-end offset, where the key is',
    '<tableId>:<bucketId> or <tableId>:<partitionId>:<bucketId>, e.g. {"1:0": 500, "1:1": 480, "2:7:0": 90};',
    'or an array of {"tableId", "partitionId", "bucketId", "offset"}.',
  ].join('\n'),
  options: {
    ...READ_ONLY_OPTION,
    'log-end': {
      type: 'string',
      valueName: '<json|file>',
      description: 'log-end offsets per bucket, to show lag',
    },
    ...GROUP_ID_JSON_OPTION,
  },
  examples: [
    'offset-store groups describe scanners --dir ./data',
    `offset-store groups describe scanners --dir ./data --log-end '{"1:0": 500, "1:1": 480}'`,
    'offset-store groups describe scanners --dir ./data --log-end log-end.json --json',
  ],
  async run(context) {
    const groupId = groupIdArgument(context);
    const logEndText = stringOption(context, 'log-end');
    const logEnd = logEndText === undefined ? [] : await readOffsetsDocument(logEndText, 'log-end');
    const report = await withAdmin(context, (admin) => admin.describeGroup(groupId, logEnd), {
      readsOnly: true,
      serveHealthyBuckets: true,
    });
    if (context.output.json) context.output.result(report);
    else printReport(context.output, report, logEndText !== undefined);
    return EXIT.OK;
  },
};

function bucketList(buckets: readonly TableBucket[]): string {
  return buckets.length === 0 ? '-' : buckets.map(bucketKey).join(' ');
}

function printReport(output: Output, report: GroupReport, withLag: boolean): void {
  output.line(`Group ${printable(report.groupId)}`);
  output.line(`  state           ${report.state}`);
  const classic = report.classic;
  if (classic === null) {
    output.line(
      `  group epoch     ${report.groupEpoch}   assignment epoch ${report.assignmentEpoch}${report.assignor === null ? '' : `   assignor ${report.assignor}`}`,
    );
  } else {
    output.line(
      `  type            classic (${report.protocolType || 'no protocol type'})   generation ${classic.generationId}${classic.protocolName === null ? '' : `   protocol ${classic.protocolName}`}${classic.leaderId === null ? '' : `   leader ${classic.leaderId}`}`,
    );
  }
  output.line(`  offsets-bucket  ${report.offsetsBucket}`);
  output.line(`  members         ${report.members.length + (classic?.members.length ?? 0)}`);
  if (withLag) output.line(`  total lag       ${cell(report.totalLag)}`);
  output.line();
  if (report.members.length > 0) {
    output.table(
      [
        { header: 'MEMBER-ID' },
        { header: 'INSTANCE-ID' },
        { header: 'EPOCH', align: 'right' },
        { header: 'STATE' },
        { header: 'SESSION', align: 'right' },
        { header: 'TABLES' },
        { header: 'ASSIGNMENT' },
        { header: 'PENDING-REVOCATION' },
      ],
      report.members.map((m) => [
        m.memberId,
        m.instanceId ?? '-',
        String(m.memberEpoch),
        m.state,
        formatDuration(m.sessionTimeoutMs),
        m.subscribedTableIds.join(',') || '-',
        bucketList(m.assignment),
        bucketList(m.pendingRevocation),
      ]),
    );
    output.line();
  }
  if (classic !== null && classic.members.length > 0) {
    output.table(
      [
        { header: 'MEMBER-ID' },
        { header: 'INSTANCE-ID' },
        { header: 'CLIENT-ID' },
        { header: 'HOST' },
        { header: 'SESSION', align: 'right' },
        { header: 'PROTOCOLS' },
        { header: 'ASSIGNMENT', align: 'right' },
      ],
      classic.members.map((m) => [
        m.memberId,
        m.groupInstanceId ?? '-',
        m.clientId || '-',
        m.clientHost || '-',
        formatDuration(m.sessionTimeoutMs),
        m.protocols.join(','),
        `${m.assignmentBytes} bytes`,
      ]),
    );
    output.line();
  }
  if (report.buckets.length === 0) {
    output.line('No committed offsets.');
    return;
  }
  printBuckets(output, report.buckets, withLag);
  const behind = report.buckets.filter((b) => b.lag !== null && b.lag < 0);
  if (behind.length > 0) {
    output.line();
    output.warn(
      `negative lag (marked !) in ${behind.length} bucket(s): the committed offset is past the log end given; the --log-end offsets are stale, or the group committed offsets beyond the log`,
    );
  }
}

function printBuckets(output: Output, buckets: readonly BucketReport[], withLag: boolean): void {
  const withMetadata = buckets.some((b) => b.metadata !== null && b.metadata !== '');
  const columns: Column[] = [
    { header: 'TABLE', align: 'right' },
    { header: 'PARTITION', align: 'right' },
    { header: 'BUCKET', align: 'right' },
    { header: 'COMMITTED', align: 'right' },
    ...(withLag
      ? [
          { header: 'LOG-END', align: 'right' as const },
          { header: 'LAG', align: 'right' as const },
        ]
      : []),
    { header: 'LEADER-EPOCH', align: 'right' },
    { header: 'COMMITTED-AT' },
    { header: 'MEMBER-ID' },
    ...(withMetadata ? [{ header: 'METADATA' }] : []),
  ];
  output.table(
    columns,
    buckets.map((b) => [
      String(b.tableId),
      cell(b.partitionId),
      String(b.bucketId),
      cell(b.committedOffset),
      ...(withLag
        ? [cell(b.logEndOffset), b.lag !== null && b.lag < 0 ? `${b.lag} !` : cell(b.lag)]
        : []),
      b.leaderEpoch === null || b.leaderEpoch < 0 ? '-' : String(b.leaderEpoch),
      formatTimestamp(b.commitTimestampMs),
      b.memberId ?? '-',
      ...(withMetadata ? [b.metadata ?? ''] : []),
    ]),
  );
}
