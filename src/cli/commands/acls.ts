/**
 * `offset-store acls add|remove|list`: the ACLs a Kafka server over the store enforces when started
 * with --authorizer, in `kafka-acls.json` in the store directory. The flags are those of Kafka's
 * kafka-acls.sh: --allow-principal / --deny-principal, --operation, --group / --topic,
 * --resource-pattern-type literal|prefixed, --allow-host / --deny-host. Every combination of the
 * principals, operations and resources given is one ACL. A running `offset-store serve` picks
 * changes up on SIGHUP.
 */
import { OffsetStoreError } from '../../errors/index.js';
import { NodeFileSystem } from '../../io/index.js';
import {
  ACL_OPERATIONS,
  AclSet,
  aclProblem,
  type AclBinding,
  type AclOperation,
  type AclPatternType,
} from '../../kafka/index.js';
import {
  EXIT,
  UsageError,
  noPositionals,
  requireStore,
  stringListOption,
  stringOption,
  type Command,
  type CommandContext,
  type OptionSpec,
} from '../command.js';

const ACL_OPTIONS: Record<string, OptionSpec> = {
  'allow-principal': {
    type: 'string',
    multiple: true,
    valueName: '<User:name>',
    description: 'principal the ACL allows (repeatable; User:* for everyone)',
  },
  'deny-principal': {
    type: 'string',
    multiple: true,
    valueName: '<User:name>',
    description: 'principal the ACL denies (repeatable)',
  },
  'allow-host': {
    type: 'string',
    valueName: '<ip|*>',
    description: 'host the allow ACLs apply to (default *)',
  },
  'deny-host': {
    type: 'string',
    valueName: '<ip|*>',
    description: 'host the deny ACLs apply to (default *)',
  },
  operation: {
    type: 'string',
    multiple: true,
    valueName: '<Read|Describe|Delete|All>',
    description: 'operation (repeatable)',
  },
  group: {
    type: 'string',
    multiple: true,
    valueName: '<name>',
    description: 'group resource (repeatable; * for every group)',
  },
  topic: {
    type: 'string',
    multiple: true,
    valueName: '<name>',
    description: 'topic resource (repeatable; * for every topic)',
  },
  'resource-pattern-type': {
    type: 'string',
    valueName: '<literal|prefixed>',
    description: 'how --group and --topic names match (default literal)',
  },
};

function operationOf(text: string): AclOperation {
  const found = ACL_OPERATIONS.find((o) => o.toLowerCase() === text.toLowerCase());
  if (found === undefined)
    throw new UsageError(
      `--operation must be one of ${ACL_OPERATIONS.join(', ')}, got ${JSON.stringify(text)}`,
    );
  return found;
}

function principalOf(text: string): string {
  if (!/^User:.+$/.test(text))
    throw new UsageError(`a principal is User:<name> (or User:*), got ${JSON.stringify(text)}`);
  return text;
}

/** Every ACL the flags name. */
/** The ACLs the flags name; `removing` accepts a host as an earlier version stored it (a name). */
function aclsOf(context: CommandContext, removing = false): AclBinding[] {
  const patternText = (stringOption(context, 'resource-pattern-type') ?? 'literal').toLowerCase();
  if (patternText !== 'literal' && patternText !== 'prefixed')
    throw new UsageError(
      `--resource-pattern-type must be literal or prefixed, got ${JSON.stringify(patternText)}`,
    );
  const patternType = patternText.toUpperCase() as AclPatternType;
  const permissions = [
    ...stringListOption(context, 'allow-principal').map((p) => ({
      principal: principalOf(p),
      permission: 'ALLOW' as const,
      host: stringOption(context, 'allow-host') ?? '*',
    })),
    ...stringListOption(context, 'deny-principal').map((p) => ({
      principal: principalOf(p),
      permission: 'DENY' as const,
      host: stringOption(context, 'deny-host') ?? '*',
    })),
  ];
  const operations = stringListOption(context, 'operation').map(operationOf);
  const resources = [
    ...stringListOption(context, 'group').map((name) => ({ resourceType: 'Group' as const, name })),
    ...stringListOption(context, 'topic').map((name) => ({ resourceType: 'Topic' as const, name })),
  ];
  if (permissions.length === 0) throw new UsageError('give --allow-principal or --deny-principal');
  // A host meant to narrow an ACL must not be dropped, leaving the ACL for every host (Kafka's
  // kafka-acls.sh refuses the same).
  for (const kind of ['allow', 'deny'] as const)
    if (
      stringOption(context, `${kind}-host`) !== undefined &&
      stringListOption(context, `${kind}-principal`).length === 0
    )
      throw new UsageError(
        `--${kind}-host applies to the ACLs of --${kind}-principal, and none is given`,
      );
  if (operations.length === 0) throw new UsageError('give --operation');
  if (resources.length === 0) throw new UsageError('give --group or --topic');
  const acls: AclBinding[] = [];
  for (const p of permissions)
    for (const operation of operations)
      for (const r of resources) acls.push({ ...p, operation, ...r, patternType });
  for (const acl of acls) {
    const problem = aclProblem(acl, removing);
    if (problem !== null) throw new UsageError(problem);
  }
  return acls;
}

function describe(acl: AclBinding): string[] {
  return [
    acl.principal,
    acl.permission,
    acl.operation,
    `${acl.resourceType}:${acl.name}`,
    acl.patternType,
    acl.host,
  ];
}

const COLUMNS = [
  { header: 'PRINCIPAL' },
  { header: 'PERMISSION' },
  { header: 'OPERATION' },
  { header: 'RESOURCE' },
  { header: 'PATTERN' },
  { header: 'HOST' },
];

/** The `acls add` command. */
export const aclsAdd: Command = {
  words: ['acls', 'add'],
  positionals: [],
  summary: 'add ACLs (Kafka kafka-acls.sh flags) for offset-store serve --authorizer',
  description:
    'Adds one ACL per principal, operation and resource given to kafka-acls.json. A running server reads the change on SIGHUP. See docs/security.md.',
  options: ACL_OPTIONS,
  examples: [
    'offset-store acls add --dir ./offsets --allow-principal User:alice --operation Read --group team- --resource-pattern-type prefixed',
    "offset-store acls add --dir ./offsets --allow-principal 'User:*' --operation Describe --topic '*'",
  ],
  async run(context) {
    noPositionals(context);
    const acls = aclsOf(context);
    const fs = new NodeFileSystem();
    await requireStore(fs, context.dir);
    await AclSet.add(fs, context.dir, acls);
    if (context.output.json) context.output.result({ added: acls });
    else context.output.table(COLUMNS, acls.map(describe));
    return EXIT.OK;
  },
};

/** The `acls remove` command. */
export const aclsRemove: Command = {
  words: ['acls', 'remove'],
  positionals: [],
  summary: 'remove ACLs',
  description:
    'Removes the ACLs the flags name (exactly: principal, permission, host, operation, resource and pattern type). A running server reads the change on SIGHUP.',
  options: ACL_OPTIONS,
  examples: [
    'offset-store acls remove --dir ./offsets --allow-principal User:alice --operation Read --group team- --resource-pattern-type prefixed',
  ],
  async run(context) {
    noPositionals(context);
    const acls = aclsOf(context, true);
    const fs = new NodeFileSystem();
    await requireStore(fs, context.dir);
    const { count } = await AclSet.remove(fs, context.dir, acls);
    // Exit 1 comes with an error code, like every failure of the command line.
    if (count === 0)
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `no ACL in ${context.dir} matches: nothing removed (offset-store acls list shows them)`,
      );
    if (context.output.json) context.output.result({ removed: count });
    else context.output.line(`${count} ${count === 1 ? 'ACL' : 'ACLs'} removed.`);
    return EXIT.OK;
  },
};

/** The `acls list` command. */
export const aclsList: Command = {
  words: ['acls', 'list'],
  positionals: [],
  summary: 'list the ACLs',
  description:
    'Lists the ACLs of kafka-acls.json, optionally only those on the given --group or --topic names.',
  options: { group: ACL_OPTIONS.group!, topic: ACL_OPTIONS.topic! },
  examples: [
    'offset-store acls list --dir ./offsets',
    'offset-store acls list --dir ./offsets --group team-a --json',
  ],
  async run(context) {
    noPositionals(context);
    const fs = new NodeFileSystem();
    await requireStore(fs, context.dir);
    const groups = stringListOption(context, 'group');
    const topics = stringListOption(context, 'topic');
    const acls = (await AclSet.load(fs, context.dir)).acls.filter(
      (a) =>
        (groups.length === 0 && topics.length === 0) ||
        (a.resourceType === 'Group' && groups.includes(a.name)) ||
        (a.resourceType === 'Topic' && topics.includes(a.name)),
    );
    if (context.output.json) context.output.result({ acls });
    else if (acls.length === 0) context.output.line('No ACLs.');
    else context.output.table(COLUMNS, acls.map(describe));
    return EXIT.OK;
  },
};
