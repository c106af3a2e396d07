/**
 * `offset-store offsets reset <groupId>`: plans a reset of committed offsets and, only with
 * `--execute`, writes it (one atomic commit), like `kafka-consumer-groups.sh --reset-offsets`.
 * The default is a dry run that writes nothing. The group must have no members to execute.
 */
import type { ResetPlan, ResetTarget } from '../../admin/index.js';
import {
  EXIT,
  SELECTION_OPTIONS,
  UsageError,
  GROUP_ID_JSON_OPTION,
  groupIdArgument,
  integerOption,
  readOffsetsDocument,
  selectionOption,
  stringOption,
  type Command,
  type CommandContext,
} from '../command.js';
import { cell, printable, type Output } from '../output.js';
import { withAdmin } from './with-admin.js';

/** The `offsets reset` command. */
export const offsetsReset: Command = {
  words: ['offsets', 'reset'],
  positionals: ['<groupId>'],
  summary: 'plan (default) or --execute a reset of committed offsets',
  description: [
    'Resets committed offsets of a group. Without --execute this is a dry run: it prints the plan (current and',
    'new offset per bucket) and writes nothing. With --execute the plan is committed atomically; the group must',
    'have no members (NON_EMPTY_GROUP otherwise).',
    '',
    'Exactly one of:',
    '  --to-offset <n>     every selected bucket to offset n',
    '  --shift-by <n>      every selected committed offset by n (negative moves back; clamped at 0; a bucket committed at -1 or -2, a sentinel, is refused)',
    '  --from-file <file>  the offsets a JSON file names: {"<tableId>:<bucketId>": offset, ...} or an array of',
    '                      {"tableId", "partitionId", "bucketId", "offset"} (the --json output of a dry run works)',
    'Buckets: the committed buckets --table/--partition/--bucket select (default all committed ones); --to-offset',
    'with --table and --bucket also sets a bucket that has no committed offset yet.',
  ].join('\n'),
  options: {
    'to-offset': { type: 'string', valueName: '<n>', description: 'reset to this offset' },
    'shift-by': {
      type: 'string',
      valueName: '<n>',
      description: 'shift committed offsets by n (may be negative)',
    },
    'from-file': {
      type: 'string',
      valueName: '<plan.json>',
      description: 'reset to the offsets in a JSON file',
    },
    ...SELECTION_OPTIONS,
    'dry-run': { type: 'boolean', description: 'only show the plan (the default)' },
    execute: { type: 'boolean', description: 'write the plan' },
    ...GROUP_ID_JSON_OPTION,
  },
  examples: [
    'offset-store offsets reset scanners --dir ./data --to-offset 0',
    'offset-store offsets reset scanners --dir ./data --shift-by -100 --table 1 --execute',
    'offset-store offsets reset scanners --dir ./data --to-offset 42 --table 1 --bucket 3 --execute',
    'offset-store offsets reset scanners --dir ./data --from-file plan.json --execute',
  ],
  async run(context) {
    const groupId = groupIdArgument(context);
    if (context.values['dry-run'] === true && context.values.execute === true)
      throw new UsageError('--dry-run and --execute exclude each other');
    const target = await resetTarget(context, groupId);
    const request = { target, selection: selectionOption(context) };
    const execute = context.values.execute === true;
    // A plan writes nothing: it is made from a read-only view when another process has the store.
    const plan = await withAdmin(
      context,
      (admin) =>
        execute ? admin.executeReset(groupId, request) : admin.planReset(groupId, request),
      { readsOnly: !execute },
    );
    if (context.output.json) context.output.result(plan);
    else printPlan(context.output, plan);
    return EXIT.OK;
  },
};

async function resetTarget(context: CommandContext, groupId: string): Promise<ResetTarget> {
  const toOffset = integerOption(context, 'to-offset');
  const shiftBy = integerOption(context, 'shift-by', { allowNegative: true });
  const fromFile = stringOption(context, 'from-file');
  const given = [toOffset, shiftBy, fromFile].filter((v) => v !== undefined).length;
  if (given !== 1)
    throw new UsageError(
      'give exactly one of --to-offset <n>, --shift-by <n>, --from-file <plan.json>',
    );
  if (toOffset !== undefined) return { kind: 'to-offset', offset: toOffset };
  if (shiftBy !== undefined) return { kind: 'shift-by', delta: shiftBy };
  return {
    kind: 'from-file',
    source: fromFile!,
    offsets: await readOffsetsDocument(fromFile!, 'from-file', groupId),
  };
}

function printPlan(output: Output, plan: ResetPlan): void {
  const buckets = `${plan.rows.length} bucket${plan.rows.length === 1 ? '' : 's'}`;
  if (plan.rows.length === 0) {
    output.line(
      `Nothing to reset: group ${printable(plan.groupId)} has no committed offset in ${plan.selection}.`,
    );
    return;
  }
  output.line(
    plan.executed
      ? `Reset group ${printable(plan.groupId)} ${plan.target} (${plan.selection}): ${buckets} committed.`
      : `Dry run: reset group ${printable(plan.groupId)} ${plan.target} (${plan.selection}), ${buckets}. Nothing was written; add --execute to apply.`,
  );
  output.line();
  output.table(
    [
      { header: 'TABLE', align: 'right' },
      { header: 'PARTITION', align: 'right' },
      { header: 'BUCKET', align: 'right' },
      { header: plan.executed ? 'PREVIOUS' : 'CURRENT', align: 'right' },
      { header: 'NEW', align: 'right' },
      { header: 'CHANGE', align: 'right' },
    ],
    plan.rows.map((r) => [
      String(r.tableId),
      cell(r.partitionId),
      String(r.bucketId),
      cell(r.currentOffset),
      `${r.newOffset}${r.clamped ? ' (clamped)' : ''}`,
      r.currentOffset === null
        ? 'new'
        : `${r.newOffset - r.currentOffset >= 0 ? '+' : ''}${r.newOffset - r.currentOffset}`,
    ]),
  );
  if (!plan.executed && plan.memberCount > 0) {
    output.line();
    output.warn(
      `group ${printable(plan.groupId)} has ${plan.memberCount} member(s): --execute is refused with NON_EMPTY_GROUP until they leave`,
    );
  }
}
