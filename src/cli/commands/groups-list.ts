/** `offset-store groups list`: every group with committed offsets or members. */
import { EXIT, noPositionals, type Command } from '../command.js';
import { READ_ONLY_OPTION, withAdmin } from './with-admin.js';

/** The `groups list` command. */
export const groupsList: Command = {
  words: ['groups', 'list'],
  positionals: [],
  summary: 'list the groups (state, offsets-bucket)',
  description:
    'Lists every group that has committed offsets or members, with its state, its type (consumer or classic, with the protocol type) and the offsets-bucket it lives in.',
  options: { ...READ_ONLY_OPTION },
  examples: [
    'offset-store groups list --dir ./data',
    'offset-store groups list --dir ./data --json',
    'offset-store groups list --dir ./data --read-only',
  ],
  async run(context) {
    noPositionals(context);
    const groups = await withAdmin(context, (admin) => admin.listGroups(), { readsOnly: true });
    const { output } = context;
    if (output.json) {
      output.result({ groups });
    } else if (groups.length === 0) {
      output.line('No groups.');
    } else {
      output.table(
        [
          { header: 'GROUP' },
          { header: 'STATE' },
          { header: 'TYPE' },
          { header: 'OFFSETS-BUCKET', align: 'right' },
        ],
        groups.map((g) => [
          g.groupId,
          g.state,
          g.groupType === 'classic' && g.protocolType !== ''
            ? `classic (${g.protocolType})`
            : g.groupType,
          String(g.offsetsBucket),
        ]),
      );
    }
    return EXIT.OK;
  },
};
