/** `offset-store offsets delete <groupId>`: deletes committed offsets of some (or all) buckets. */
import {
  EXIT,
  SELECTION_OPTIONS,
  UsageError,
  GROUP_ID_JSON_OPTION,
  groupIdArgument,
  selectionOption,
  type Command,
} from '../command.js';
import { cell, printable } from '../output.js';
import { withAdmin } from './with-admin.js';

/** The `offsets delete` command. */
export const offsetsDelete: Command = {
  words: ['offsets', 'delete'],
  positionals: ['<groupId>'],
  summary: 'delete committed offsets of selected buckets (--table ... or --all)',
  description: [
    'Deletes the committed offsets of the buckets --table/--partition/--bucket select, or of every bucket with',
    '--all (one is required). Refused with GROUP_SUBSCRIBED_TO_BUCKET for a bucket assigned to a member.',
  ].join('\n'),
  options: {
    ...SELECTION_OPTIONS,
    all: { type: 'boolean', description: 'every committed bucket of the group' },
    ...GROUP_ID_JSON_OPTION,
  },
  examples: [
    'offset-store offsets delete scanners --dir ./data --table 1 --bucket 3',
    'offset-store offsets delete scanners --dir ./data --table 2',
    'offset-store offsets delete scanners --dir ./data --all',
  ],
  async run(context) {
    const groupId = groupIdArgument(context);
    const selection = selectionOption(context);
    const all = context.values.all === true;
    if (all === (selection.tableId !== undefined))
      throw new UsageError('give either --table (with optional --partition/--bucket) or --all');
    const result = await withAdmin(context, (admin) => admin.deleteOffsets(groupId, selection));
    const { output } = context;
    if (output.json) {
      output.result(result);
    } else if (result.deleted.length === 0) {
      output.line(
        `Nothing to delete: group ${printable(groupId)} has no committed offset in ${result.selection}.`,
      );
    } else {
      output.line(
        `Deleted the committed offsets of ${result.deleted.length} bucket${result.deleted.length === 1 ? '' : 's'} of group ${printable(groupId)} (${result.selection}).`,
      );
      output.table(
        [
          { header: 'TABLE', align: 'right' },
          { header: 'PARTITION', align: 'right' },
          { header: 'BUCKET', align: 'right' },
        ],
        result.deleted.map((b) => [String(b.tableId), cell(b.partitionId), String(b.bucketId)]),
      );
    }
    return EXIT.OK;
  },
};
