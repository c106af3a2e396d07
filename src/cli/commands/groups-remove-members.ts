/**
 * `offset-store groups remove-members <groupId>`: removes members from a group (Kafka's
 * `removeMembersFromConsumerGroup`), typically the ones a process left behind when it exited without
 * leaving, which otherwise keep the group non-empty until their session times out in a process that
 * stays open — one a short admin command never is.
 */
import {
  EXIT,
  UsageError,
  GROUP_ID_JSON_OPTION,
  groupIdArgument,
  stringListOption,
  type Command,
} from '../command.js';
import { cell, printable } from '../output.js';
import { withAdmin } from './with-admin.js';

/** The `groups remove-members` command. */
export const groupsRemoveMembers: Command = {
  words: ['groups', 'remove-members'],
  positionals: ['<groupId>'],
  summary: 'remove members (--all, --member or --instance), e.g. ones a process left behind',
  description: [
    'Removes members from a group, each as if it had left: its buckets go to the other members, and a static',
    "member's instance id is released. Members of a process that exited without leaving are restored from the",
    "group's snapshot on every open and keep the group non-empty, so `offsets reset --execute` and `groups delete`",
    'refuse it (NON_EMPTY_GROUP) until they are removed. Choose exactly one of --all, --member (repeatable) or',
    '--instance (repeatable). An id not in the group is refused with UNKNOWN_MEMBER_ID and nothing is removed.',
  ].join('\n'),
  options: {
    all: { type: 'boolean', description: 'every member of the group, static members included' },
    member: {
      type: 'string',
      multiple: true,
      valueName: '<memberId>',
      description: 'the member with this id (repeatable)',
    },
    instance: {
      type: 'string',
      multiple: true,
      valueName: '<instanceId>',
      description: 'the static member with this instance id (repeatable)',
    },
    ...GROUP_ID_JSON_OPTION,
  },
  examples: [
    'offset-store groups remove-members scanners --dir ./data --all',
    'offset-store groups remove-members scanners --dir ./data --member 4f1c0d2e-9a7b-4c1e-8d3f-2b6a5e9c7d10',
    'offset-store groups remove-members scanners --dir ./data --instance host-a --instance host-b --json',
  ],
  async run(context) {
    const groupId = groupIdArgument(context);
    const all = context.values.all === true;
    const memberIds = stringListOption(context, 'member');
    const instanceIds = stringListOption(context, 'instance');
    if ([all, memberIds.length > 0, instanceIds.length > 0].filter(Boolean).length !== 1) {
      throw new UsageError(
        'give exactly one of --all, --member <memberId>... or --instance <instanceId>...',
      );
    }
    const request = all ? { all: true } : memberIds.length > 0 ? { memberIds } : { instanceIds };
    const result = await withAdmin(context, (admin) => admin.removeMembers(groupId, request));
    const { output } = context;
    if (output.json) {
      output.result(result);
    } else if (result.removed.length === 0) {
      output.line(`Group ${printable(groupId)} has no members: nothing removed.`);
    } else {
      const count = `${result.removed.length} member${result.removed.length === 1 ? '' : 's'}`;
      const left =
        result.memberCount === 0
          ? 'it is now Empty'
          : `${result.memberCount} member${result.memberCount === 1 ? '' : 's'} left, state ${result.state}`;
      output.line(`Removed ${count} from group ${printable(groupId)}; ${left}.`);
      output.line();
      output.table(
        [{ header: 'MEMBER-ID' }, { header: 'INSTANCE-ID' }],
        result.removed.map((m) => [m.memberId, cell(m.instanceId)]),
      );
    }
    return EXIT.OK;
  },
};
