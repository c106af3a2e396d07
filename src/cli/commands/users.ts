/**
 * `offset-store users add|remove|list`: the SASL users a Kafka server over the store accepts, in
 * `kafka-users.json` in the store directory. A password is read from a prompt that does not echo,
 * or from stdin with --password-stdin, never from an argument; only its salted SCRAM verifiers are
 * stored. A running `offset-store serve` picks changes up on SIGHUP.
 */
import { OffsetStoreError } from '../../errors/index.js';
import { NodeFileSystem } from '../../io/index.js';
import {
  SCRAM_ITERATIONS_MAX,
  SCRAM_ITERATIONS_MIN,
  SCRAM_MECHANISMS,
  UserCredentials,
  userNameProblem,
  type ScramMechanism,
} from '../../kafka/index.js';
import {
  EXIT,
  UsageError,
  integerOption,
  noPositionals,
  requireStore,
  stringListOption,
  type Command,
  type CommandContext,
} from '../command.js';
import { passwordFromStdin, passwordFromTerminal } from '../password-input.js';

function nameArgument(context: CommandContext): string {
  if (context.positionals.length !== 1) throw new UsageError('expected exactly one user name');
  const name = context.positionals[0]!;
  const problem = userNameProblem(name);
  if (problem !== null) throw new UsageError(problem);
  return name;
}

/** The `users add` command. */
export const usersAdd: Command = {
  words: ['users', 'add'],
  positionals: ['<name>'],
  summary: 'add a SASL user (or change its password) for offset-store serve',
  description: [
    'Adds a user that Kafka clients authenticate as with SASL (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN),',
    'or replaces its password. The password is read from a prompt that does not echo it, or from the',
    'first line of stdin with --password-stdin; it is never stored: kafka-users.json keeps salted SCRAM',
    'verifiers only. A running server reads the change on SIGHUP. See docs/security.md.',
  ].join('\n'),
  options: {
    'password-stdin': {
      type: 'boolean',
      description: 'read the password from the first line of stdin',
    },
    iterations: {
      type: 'string',
      valueName: '<n>',
      description: 'PBKDF2 iterations (4096-16384; default 4096, the minimum)',
    },
    mechanism: {
      type: 'string',
      multiple: true,
      valueName: '<SCRAM-SHA-256|SCRAM-SHA-512>',
      description: 'store a verifier for this mechanism only (repeatable; default both)',
    },
  },
  examples: [
    'offset-store users add alice --dir ./offsets',
    'printf \'%s\\n\' "$PW" | offset-store users add alice --dir ./offsets --password-stdin',
  ],
  async run(context) {
    const name = nameArgument(context);
    // Kafka's bounds: a PLAIN login runs them for every attempt.
    const iterations = integerOption(context, 'iterations', {
      range: [SCRAM_ITERATIONS_MIN, SCRAM_ITERATIONS_MAX],
    });
    const mechanisms = stringListOption(context, 'mechanism').map((m) => {
      const upper = m.toUpperCase() as ScramMechanism;
      if (!SCRAM_MECHANISMS.includes(upper))
        throw new UsageError(
          `--mechanism must be one of ${SCRAM_MECHANISMS.join(', ')}, got ${JSON.stringify(m)}`,
        );
      return upper;
    });
    const fs = new NodeFileSystem();
    await requireStore(fs, context.dir);
    const password =
      context.values['password-stdin'] === true
        ? await passwordFromStdin()
        : await passwordFromTerminal(name, process.stdin, {
            write: (text) => context.output.stderr(text),
          });
    const users = await UserCredentials.addUser(fs, context.dir, name, password, {
      ...(iterations === undefined ? {} : { iterations }),
      ...(mechanisms.length === 0 ? {} : { mechanisms }),
    });
    const listing = users.list().find((u) => u.name === name)!;
    if (context.output.json) context.output.result({ user: listing });
    else
      context.output.line(
        `User ${name} saved (${listing.mechanisms.map((m) => m.mechanism).join(', ')}; ${listing.mechanisms[0]!.iterations} iterations).`,
      );
    return EXIT.OK;
  },
};

/** The `users remove` command. */
export const usersRemove: Command = {
  words: ['users', 'remove'],
  positionals: ['<name>'],
  summary: 'remove a SASL user',
  description:
    'Removes a user from kafka-users.json; connections it already has stay open until they close. A running server reads the change on SIGHUP.',
  options: {},
  examples: ['offset-store users remove alice --dir ./offsets'],
  async run(context) {
    const name = nameArgument(context);
    const fs = new NodeFileSystem();
    await requireStore(fs, context.dir);
    const { removed } = await UserCredentials.removeUser(fs, context.dir, name);
    // Exit 1 comes with an error code, like every failure of the command line.
    if (!removed)
      throw new OffsetStoreError('INVALID_REQUEST', `no user ${name} in ${context.dir}`);
    if (context.output.json) context.output.result({ removed });
    else context.output.line(`User ${name} removed.`);
    return EXIT.OK;
  },
};

/** The `users list` command. */
export const usersList: Command = {
  words: ['users', 'list'],
  positionals: [],
  summary: 'list the SASL users (names and mechanisms, never secrets)',
  description:
    'Lists the users of kafka-users.json with the SCRAM mechanisms each has a verifier for.',
  options: {},
  examples: ['offset-store users list --dir ./offsets --json'],
  async run(context) {
    noPositionals(context);
    const fs = new NodeFileSystem();
    await requireStore(fs, context.dir);
    const users = (await UserCredentials.load(fs, context.dir)).list();
    if (context.output.json) context.output.result({ users });
    else if (users.length === 0) context.output.line('No users.');
    else
      context.output.table(
        [{ header: 'USER' }, { header: 'MECHANISMS' }],
        users.map((u) => [
          u.name,
          u.mechanisms.map((m) => `${m.mechanism} (${m.iterations})`).join(', '),
        ]),
      );
    return EXIT.OK;
  },
};
