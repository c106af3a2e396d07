/**
 * `offset-store backup`: writes a backup of the store in `--dir` into the new directory `--to`, a store
 * that opens like any other; see `OffsetStore.backup` for what it holds and why it is safe.
 */
import * as path from 'node:path';
import { PARTIAL_SUFFIX } from '../../store-backup.js';
import { EXIT, UsageError, noPositionals, stringOption, type Command } from '../command.js';
import { formatBytes, formatDuration } from '../output.js';
import { withAdmin } from './with-admin.js';

/** The `backup` command. */
export const backup: Command = {
  words: ['backup'],
  positionals: [],
  summary: 'copy the store into a new directory that opens as a store (checked as it is written)',
  description: [
    'Writes a backup of the store into the new directory --to: every offset and group snapshot, the checkpoints,',
    'the compaction state and the Kafka server files beside the store, each segment read back and checked. It is',
    'built in <to>.partial and renamed to <to> only once complete and durable. To restore, open (or serve) the',
    'backup directory, or copy it into place while nothing has the store open. A store that a running process',
    'has open is backed up by that process (OffsetStore.backup); this command opens the store itself.',
  ].join('\n'),
  options: {
    to: {
      type: 'string',
      valueName: '<dir>',
      description: 'the backup directory to create (must not exist; missing parents are created)',
    },
  },
  examples: [
    'offset-store backup --dir ./data --to ./backups/2026-12-04',
    'offset-store backup --dir ./data --to /mnt/backup/offsets --json',
  ],
  async run(context) {
    noPositionals(context);
    const to = stringOption(context, 'to');
    if (to === undefined || to.length === 0) throw new UsageError('missing --to <dir>');
    const target = path.resolve(to);
    const report = await withAdmin(context, (admin) => admin.store.backup(to), {
      whenStopped: `the backup was not made; ${target}${PARTIAL_SUFFIX} removed`,
    });
    const { output } = context;
    if (output.json) output.result(report);
    else
      output.line(
        `Backed up ${report.buckets} offsets-buckets (${report.segments} segments, ${formatBytes(report.bytes)}) to ${report.dir} in ${formatDuration(report.durationMs)}`,
      );
    return EXIT.OK;
  },
};
