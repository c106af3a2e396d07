/**
 * The dispatcher: finds the command named by the leading words of the command line, parses its
 * options strictly with `node:util` parseArgs, runs it, and turns every failure into a message on
 * stderr and an exit code:
 * - OffsetStoreError: `error: <CODE>: <message> (errno N)`, exit 1;
 * - UsageError or a parseArgs error: the message and a pointer to `--help`, exit 2;
 * - Interrupted (Ctrl-C at a prompt, or a signal while a command had the store open): the message,
 *   exit 128 + the signal's number (130 for SIGINT);
 * - anything else is a bug: the stack, exit 70.
 * With `--json` each is a JSON object on stderr instead (writeJsonError).
 *
 * Parsing is two-phase because options may come before the command words
 * (`offset-store --dir d groups list`): a lenient pass that knows every command's string options
 * finds the words, then a strict pass with the chosen command's options.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { NodeFileSystem } from '../io/index.js';
import { editDistance } from '../util/index.js';
import { OffsetStoreError } from '../index.js';
import { systemErrorCode } from '../open-failure.js';
import { COMMANDS } from './commands/index.js';
import { DemoFailure } from './demo/demo-scenario.js';
import {
  EXIT,
  GLOBAL_OPTIONS,
  Interrupted,
  UsageError,
  commandHelp,
  type Command,
  type CommandContext,
  type OptionSpec,
} from './command.js';
import { Output, printable, type OutputStreams } from './output.js';

type ParseOptions = NonNullable<ParseArgsConfig['options']>;

function parseOptions(specs: Record<string, OptionSpec>): ParseOptions {
  const options: ParseOptions = {};
  for (const [name, spec] of Object.entries(specs)) {
    options[name] = {
      type: spec.type,
      ...(spec.short === undefined ? {} : { short: spec.short }),
      ...(spec.multiple === true ? { multiple: true } : {}),
    };
  }
  return options;
}

/**
 * Every option of every command, for the lenient pass. An option name has one type across all
 * commands (checked by the tests), so the lenient pass consumes the same values as the strict one.
 */
export const ALL_OPTIONS: Record<string, OptionSpec> = Object.assign(
  {},
  ...COMMANDS.map((c) => c.options),
  GLOBAL_OPTIONS,
);

/**
 * An option that takes one value, given twice (`--to-offset 5 --to-offset 7`, `--dir a --dir b`), is
 * a mistake to point out, not a choice to make silently for a command that may reset or delete.
 */
function refuseRepeatedOptions(
  tokens: readonly { kind: string; name?: string; value?: string | undefined }[],
  specs: Record<string, OptionSpec>,
): void {
  const seen = new Map<string, string | undefined>();
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === undefined) continue;
    const spec = specs[token.name];
    if (spec === undefined || spec.type !== 'string' || spec.multiple === true) continue;
    if (seen.has(token.name))
      throw new UsageError(
        `--${token.name} is given twice (${JSON.stringify(seen.get(token.name))} and ${JSON.stringify(token.value)}): give it once`,
      );
    seen.set(token.name, token.value);
  }
}

/**
 * Joins `--name -5` into `--name=-5` for string options, so negative numbers (`--shift-by -10`)
 * need no `=`; parseArgs would otherwise take `-5` for an option.
 */
function joinNegativeValues(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    const next = argv[i + 1];
    if (
      token.startsWith('--') &&
      ALL_OPTIONS[token.slice(2)]?.type === 'string' &&
      next !== undefined &&
      /^-\d+$/.test(next)
    ) {
      out.push(`${token}=${next}`);
      i++;
    } else {
      out.push(token);
    }
  }
  return out;
}

/** Whether the command being run stops once nobody reads its stdout (see Command.stopsWhenUnread). */
export let stopsWhenUnread = false;

function findCommand(words: readonly string[]): Command | undefined {
  return [...COMMANDS]
    .sort((a, b) => b.words.length - a.words.length)
    .find((c) => c.words.every((w, i) => words[i] === w));
}

/** The top-level help, or the help of a command family (`groups`, `offsets`, `log`). */
function overviewHelp(prefix: readonly string[] = []): string {
  const commands = COMMANDS.filter((c) => prefix.every((w, i) => c.words[i] === w));
  const rows = commands.map((c) => [[...c.words, ...c.positionals].join(' '), c.summary] as const);
  const width = Math.max(...rows.map(([usage]) => usage.length));
  return [
    `Usage: offset-store ${prefix.length > 0 ? `${prefix.join(' ')} ` : ''}<command> --dir <path> [options]`,
    '',
    'Operate, inspect and verify an offset-store directory.',
    '',
    'Commands:',
    ...rows.map(([usage, summary]) => `  ${usage.padEnd(width)}  ${summary}`),
    '',
    'Every command takes --dir <path>, --json and --help.',
    'Exit codes: 0 ok, 1 failed (the error code is printed), 2 bad usage, 3 log verify found torn tails only.',
    '',
  ].join('\n');
}

/** Runs the CLI on `argv` (without node and script); returns the exit code. Never throws. */
export async function runCli(argv: readonly string[], streams: OutputStreams): Promise<number> {
  const args = joinNegativeValues(argv);
  const lenient = parseArgs({
    args,
    options: parseOptions(ALL_OPTIONS),
    strict: false,
    allowPositionals: true,
  });
  let output = new Output(streams, lenient.values.json === true);
  let words = lenient.positionals;
  if (lenient.values.version === true) {
    streams.stdout.write(`${await packageVersion()}\n`);
    return EXIT.OK;
  }
  const asksHelp = lenient.values.help === true || words[0] === 'help';
  if (words[0] === 'help') words = words.slice(1);
  const command = findCommand(words);
  stopsWhenUnread = command?.stopsWhenUnread === true;
  if (command === undefined) {
    const known = words.length > 0 && COMMANDS.some((c) => c.words[0] === words[0]);
    const prefix = known ? words.slice(0, 1) : [];
    if (asksHelp && (words.length === 0 || (known && words.length === 1))) {
      streams.stdout.write(overviewHelp(prefix));
      return EXIT.OK;
    }
    const message =
      words.length === 0
        ? 'no command given'
        : `unknown command ${JSON.stringify(words.join(' '))}`;
    if (output.json)
      writeJsonError(streams, {
        code: 'USAGE',
        message,
        help: `offset-store ${prefix.length > 0 ? `${prefix.join(' ')} ` : ''}--help`,
      });
    else streams.stderr.write(`error: ${printable(message, true)}\n\n${overviewHelp(prefix)}`);
    return EXIT.USAGE;
  }
  if (asksHelp) {
    streams.stdout.write(commandHelp(command));
    return EXIT.OK;
  }
  try {
    const specs = { ...command.options, ...GLOBAL_OPTIONS };
    const strict = parseArgs({
      args,
      options: parseOptions(specs),
      strict: true,
      allowPositionals: true,
      tokens: true,
    });
    output = new Output(streams, strict.values.json === true);
    refuseRepeatedOptions(strict.tokens, specs);
    const dir = (strict.values.dir as string | undefined) ?? command.defaultDir;
    if (dir === undefined || dir === '') throw new UsageError('--dir <path> is required');
    return await command.run({
      positionals: strict.positionals.slice(command.words.length),
      values: strict.values as CommandContext['values'],
      dir,
      output,
    });
  } catch (error) {
    return reportFailure(error, command, output, streams);
  }
}

function reportFailure(
  error: unknown,
  command: Command,
  output: Output,
  streams: OutputStreams,
): number {
  if (error instanceof UsageError || isParseArgsError(error)) {
    const unknown = /^Unknown option '(--?[^']+)'/.exec((error as Error).message)?.[1];
    const suggestion =
      unknown === undefined
        ? undefined
        : closestOption(
            unknown.replace(/^-+/, ''),
            Object.keys({ ...command.options, ...GLOBAL_OPTIONS }),
          );
    const hint = suggestion === undefined ? '' : ` Did you mean --${suggestion}?`;
    const message = unknown === undefined ? (error as Error).message : `unknown option ${unknown}.`;
    const help = `offset-store ${command.words.join(' ')} --help`;
    if (output.json) writeJsonError(streams, { code: 'USAGE', message: `${message}${hint}`, help });
    else
      streams.stderr.write(`error: ${printable(message, true)}${hint}\nRun '${help}' for usage.\n`);
    return EXIT.USAGE;
  }
  if (error instanceof Interrupted) {
    if (output.json) writeJsonError(streams, { code: 'INTERRUPTED', message: error.message });
    else streams.stderr.write(`error: ${printable(error.message, true)}\n`);
    return error.exitCode;
  }
  // A file system's refusal on a path the command was given (EACCES, EROFS, ENOTDIR, ENOSPC) is the
  // operator's to fix, not a bug of this program: LOG_STORAGE_ERROR naming the path, exit 1.
  if (systemErrorCode(error) !== undefined)
    error = new OffsetStoreError('LOG_STORAGE_ERROR', (error as Error).message, { cause: error });
  if (error instanceof OffsetStoreError) {
    if (output.json) {
      const { code, errno, retriable, message } = error;
      writeJsonError(streams, { code, errno, retriable, message });
    } else {
      streams.stderr.write(
        `error: ${printable(error.message, true)} (errno ${error.errno}${error.retriable ? ', retriable' : ''})\n`,
      );
    }
    return EXIT.FAILED;
  }
  if (error instanceof DemoFailure) {
    if (output.json) writeJsonError(streams, { code: 'DEMO_FAILED', message: error.message });
    else streams.stderr.write(`error: ${printable(error.message, true)}\n`);
    return EXIT.FAILED;
  }
  const internal = error instanceof Error ? (error.stack ?? error.message) : String(error);
  if (output.json) writeJsonError(streams, { code: 'INTERNAL', message: internal });
  else streams.stderr.write(`internal error: ${printable(internal, true)}\n`);
  return EXIT.INTERNAL;
}

/**
 * With `--json`, every failure is one line on stderr, `{"error": {code, message, ...}}`: an
 * OffsetStoreError's code (with its errno and retriable), or USAGE (with the command's help to run),
 * INTERRUPTED, DEMO_FAILED, INTERNAL (a bug; the message is the stack).
 */
function writeJsonError(
  streams: OutputStreams,
  error: { code: string; message: string; [detail: string]: unknown },
): void {
  streams.stderr.write(`${JSON.stringify({ error })}\n`);
}

/** The option name nearest to `name` (at most 2 edits away, or a prefix of it), if any. */
function closestOption(name: string, options: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const option of options) {
    const distance = option.startsWith(name) ? 1 : editDistance(name, option);
    if (distance < bestDistance) {
      best = option;
      bestDistance = distance;
    }
  }
  return best;
}

/** The package's version, from the package.json two folders up (the same from src/cli and dist/cli). */
async function packageVersion(): Promise<string> {
  const bytes = await new NodeFileSystem().readFile(
    fileURLToPath(new URL('../../package.json', import.meta.url)),
  );
  return (JSON.parse(bytes?.toString('utf8') ?? '{}') as { version?: string }).version ?? 'unknown';
}

function isParseArgsError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}
