/** `offset-store groups delete <groupId>`: deletes a group without members and all its offsets. */
import { printable } from '../output.js';
import { EXIT, GROUP_ID_JSON_OPTION, groupIdArgument, type Command } from '../command.js';
import { withAdmin } from './with-admin.js';

/** The `groups delete` command. */
export const groupsDelete: Command = {
  words: ['groups', 'delete'],
  positionals: ['<groupId>'],
  summary: 'delete a group without members and all its committed offsets',
  description: [
    'Deletes a group and every committed offset of it (tombstones through the log); it disappears from',
    '`groups list`. Refused with NON_EMPTY_GROUP while the group has members, GROUP_ID_NOT_FOUND if unknown.',
  ].join('\n'),
  options: { ...GROUP_ID_JSON_OPTION },
  examples: ['offset-store groups delete old-scanners --dir ./data'],
  async run(context) {
    const groupId = groupIdArgument(context);
    const result = await withAdmin(context, (admin) => admin.deleteGroup(groupId));
    if (context.output.json) context.output.result(result);
    else
      context.output.line(
        `Deleted group ${printable(result.groupId)} (${result.offsetsDeleted} committed offset${result.offsetsDeleted === 1 ? '' : 's'}).`,
      );
    return EXIT.OK;
  },
};
