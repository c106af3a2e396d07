/**
 * `offset-store log dump --bucket N`: one line per segment, batch and (with `--records`) record of an
 * offsets-bucket's log, read straight from the segment files (works on a store that is open
 * elsewhere or damaged). With `--json`, one JSON object per line (NDJSON), ending with a summary.
 */
import * as path from 'node:path';
import { dumpLog, type DumpEntry, type DumpRecordEntry } from '../../admin/index.js';
import { EXIT, UsageError, integerOption, noPositionals, type Command } from '../command.js';
import { formatBytes, formatCount, formatTimestamp } from '../output.js';

/** The `log dump` command. */
export const logDump: Command = {
  words: ['log', 'dump'],
  stopsWhenUnread: true,
  positionals: [],
  summary: 'decode the batches (and --records) of an offsets-bucket, one per line',
  description: [
    'Decodes the log of one offsets-bucket from its segment files without opening the store: one line per',
    'segment and batch (log offset, byte position, size, record count, checksum, commit time), and with',
    '--records one line per record (offset commit or group snapshot, tombstones marked). Damage is shown as',
    'a line and the dump goes on with the next segment. With --json: NDJSON, one object per line.',
  ].join('\n'),
  options: {
    bucket: {
      type: 'string',
      valueName: '<n>',
      description: 'the offsets-bucket (required; see `stats`)',
    },
    'from-offset': {
      type: 'string',
      valueName: '<logOffset>',
      description: 'skip batches below this log offset',
    },
    records: { type: 'boolean', description: 'decode every record' },
  },
  examples: [
    'offset-store log dump --dir ./data --bucket 3',
    'offset-store log dump --dir ./data --bucket 3 --from-offset 120 --records',
    'offset-store log dump --dir ./data --bucket 3 --records --json | jq -c .',
  ],
  async run(context) {
    noPositionals(context);
    const bucket = integerOption(context, 'bucket');
    if (bucket === undefined) throw new UsageError('--bucket <n> is required');
    const fromOffset = integerOption(context, 'from-offset') ?? 0;
    const { output } = context;
    const storeDir = path.resolve(context.dir);
    const summary = await dumpLog(
      context.dir,
      bucket,
      { fromOffset, records: context.values.records === true },
      (entry) => {
        if (output.json) output.jsonLine(entry);
        else output.line(formatEntry(entry, storeDir));
      },
    );
    if (output.json) output.jsonLine({ kind: 'summary', ...summary });
    else
      output.line(
        `${formatCount(summary.batchCount)} batches, ${formatCount(summary.recordCount)} records, ${summary.damageCount} damaged place(s) in ${summary.segmentCount} segment(s) of ${path.relative(storeDir, summary.dir)}`,
      );
    return EXIT.OK;
  },
};

function formatEntry(entry: DumpEntry, storeDir: string): string {
  switch (entry.kind) {
    case 'segment':
      return `segment ${path.relative(storeDir, entry.file)} baseOffset=${entry.baseOffset} size=${formatBytes(entry.sizeBytes)}`;
    case 'batch':
      return `batch logOffset=${entry.logOffset} position=${entry.position} size=${entry.sizeBytes} records=${entry.recordCount} checksum=${entry.checksum} time=${formatTimestamp(entry.commitTimestampMs)} coordinatorEpoch=${entry.coordinatorEpoch}`;
    case 'record':
      return `  ${formatRecord(entry)}`;
    case 'damage':
      return `DAMAGE ${path.relative(storeDir, entry.file)} position=${entry.position}: ${entry.reason}`;
  }
}

function formatRecord(r: DumpRecordEntry): string {
  const head = `record ${r.index} group=${JSON.stringify(r.groupId)}`;
  if (r.recordType === 'group-snapshot') {
    if (r.tombstone) return `${head} snapshot TOMBSTONE (group deleted)`;
    const s = r.snapshot as {
      protocol?: unknown;
      generationId?: unknown;
      protocolType?: unknown;
      protocolName?: unknown;
      leaderId?: unknown;
      groupEpoch?: unknown;
      assignmentEpoch?: unknown;
      members?: unknown[];
    } | null;
    const members = Array.isArray(s?.members) ? s.members.length : '?';
    if (s?.protocol === 'classic') {
      return `${head} snapshot classic generation=${String(s.generationId)} protocol=${String(s.protocolType)}/${String(s.protocolName)} leader=${String(s.leaderId)} members=${members}`;
    }
    return `${head} snapshot groupEpoch=${String(s?.groupEpoch)} assignmentEpoch=${String(s?.assignmentEpoch)} members=${members}`;
  }
  const bucket = `table=${r.tableId}${r.partitionId === null ? '' : ` partition=${r.partitionId}`} bucket=${r.bucketId}`;
  if (r.tombstone) return `${head} ${bucket} TOMBSTONE`;
  return `${head} ${bucket} offset=${r.offset} leaderEpoch=${r.leaderEpoch} metadata=${JSON.stringify(r.metadata)}`;
}
