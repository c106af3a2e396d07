/**
 * The shape of a CLI command and the helpers commands share: option declarations (which drive both
 * `node:util` parseArgs and the `--help` text), typed option readers that turn bad input into
 * UsageError (exit code 2), and the exit codes.
 *
 * Every command accepts the global options `--dir <path>`, `--json` and `--help`.
 */
import * as path from 'node:path';
import { NodeFileSystem, readNamedFile } from '../io/index.js';
import { OffsetStoreError } from '../errors/index.js';
import { MANIFEST_FILE, readManifest } from '../log/index.js';
import { BUCKET_ID_MAX } from '../model/index.js';
import { parseBucketOffsets, type BucketOffset, type BucketSelection } from '../admin/index.js';
import { findDuplicateJsonKey } from '../util/index.js';
import type { Output } from './output.js';

/** Exit codes of `offset-store`. */
export const EXIT = {
  OK: 0,
  /** The operation failed; stderr names the error code. */
  FAILED: 1,
  /** Bad command line. */
  USAGE: 2,
  /** `log verify` found torn tails only (the next open repairs them). */
  TORN_TAIL: 3,
  /** A bug: an error that is not an OffsetStoreError. */
  INTERNAL: 70,
  /** Stopped by the user (Ctrl-C at a prompt): 128 + SIGINT, as shells report it. */
  INTERRUPTED: 130,
} as const;

/**
 * The user stopped the command (Ctrl-C at a prompt, or a signal while it had the store open):
 * `error: <message>`, exit code 128 + the signal's number (130 for SIGINT), as shells report it.
 */
export class Interrupted extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.INTERRUPTED,
  ) {
    super(message);
    this.name = 'Interrupted';
  }
}

/** A command-line mistake: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  /** `message` is printed as `error: <message>` with a pointer to the command's `--help`. */
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** One option of a command. */
export interface OptionSpec {
  /** 'string' takes a value (`--dir d`), 'boolean' is a flag. */
  type: 'string' | 'boolean';
  /** A string option that may be given several times (`--member a --member b`). */
  multiple?: boolean;
  /** One-letter alias, e.g. `h` for `--help`. */
  short?: string;
  /** Placeholder shown in help, e.g. `<n>`. */
  valueName?: string;
  /** One line for `--help`. */
  description: string;
}

/** What a command's `run` receives. */
export interface CommandContext {
  /** Positional arguments after the command words. */
  positionals: string[];
  /**
   * Parsed options by name (strings, string arrays for `multiple`, booleans), as the strict parse left
   * them.
   */
  values: Record<string, string | string[] | boolean | undefined>;
  /** `--dir`, resolved by the dispatcher (the command's default when absent). */
  dir: string;
  /** Where the command writes its results (text, or JSON with `--json`). */
  output: Output;
}

/** A CLI command: its words, documentation, options and behaviour. */
export interface Command {
  /** Command words, e.g. `['groups', 'describe']`. */
  words: string[];
  /** One line for the command list in `--help`. */
  summary: string;
  /** Positional arguments, in order, e.g. `['<groupId>']`. */
  positionals: string[];
  /** Text shown under the usage line in `--help`. */
  description: string;
  /** The command's own options (the global ones are added by the dispatcher). */
  options: Record<string, OptionSpec>;
  /** Example command lines shown in `--help`. */
  examples: string[];
  /** Default of `--dir` when absent; undefined = `--dir` is required. */
  defaultDir?: string;
  /**
   * Its output is all it does (a dump): once nobody reads stdout, the process ends at once, with
   * exit 0. Every other command goes on without its output and exits with its own code.
   */
  stopsWhenUnread?: boolean;
  /** Runs the command; returns the exit code. */
  run(context: CommandContext): Promise<number>;
}

/** Options every command accepts. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  dir: { type: 'string', valueName: '<path>', description: 'store directory' },
  json: { type: 'boolean', description: 'machine-readable JSON output on stdout' },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
  version: { type: 'boolean', description: "print offset-store's version" },
};

/** The `--help` text of a command. */
export function commandHelp(command: Command): string {
  const options = { ...command.options, ...GLOBAL_OPTIONS };
  const optionLines = Object.entries(options).map(([name, spec]) => {
    const flag = `${spec.short === undefined ? '    ' : `-${spec.short}, `}--${name}${spec.valueName === undefined ? '' : ` ${spec.valueName}`}`;
    const description =
      name === 'dir' && command.defaultDir !== undefined
        ? `${spec.description} (default ${command.defaultDir})`
        : spec.description;
    return { flag, description };
  });
  const width = Math.max(...optionLines.map((l) => l.flag.length));
  return [
    `Usage: offset-store ${[...command.words, ...command.positionals].join(' ')} ${command.defaultDir === undefined ? '--dir <path>' : '[--dir <path>]'} [options]`,
    '',
    command.description,
    '',
    'Options:',
    ...optionLines.map((l) => `  ${l.flag.padEnd(width)}  ${l.description}`),
    '',
    'Examples:',
    ...command.examples.map((e) => `  ${e}`),
    '',
  ].join('\n');
}

/** A string option's value, or undefined. */
export function stringOption(context: CommandContext, name: string): string | undefined {
  const value = context.values[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The etcd endpoints of `--etcd` (comma-separated http(s)://host:port URLs), undefined when absent;
 * UsageError for a list with none, or one that is not such a URL.
 */
export function etcdEndpointsOption(context: CommandContext): string[] | undefined {
  const etcd = stringOption(context, 'etcd');
  if (etcd === undefined) return undefined;
  const endpoints = etcd
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
  if (
    endpoints.length === 0 ||
    endpoints.some((u) => !/^https?:\/\/[^/]+$/.test(u) || !validPort(u))
  )
    throw new UsageError(
      `--etcd must be http(s)://host:port URLs, comma-separated, got ${JSON.stringify(etcd)}`,
    );
  return endpoints;
}

/** True for a URL that parses, with no port or one from 1 to 65535. */
function validPort(url: string): boolean {
  try {
    return new URL(url).port !== '0';
  } catch {
    return false; // a port past 65535 among others
  }
}

/** The values of a string option given `multiple` times, in order (empty when absent). */
export function stringListOption(context: CommandContext, name: string): string[] {
  const value = context.values[name];
  return Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
}

/**
 * An integer option (`allowNegative` for shifts; `min`: the least it may be; `range`: the least and
 * most it may be, both included); UsageError for anything else, naming the bound when there is one.
 */
export function integerOption(
  context: CommandContext,
  name: string,
  options: { allowNegative?: boolean; min?: number; range?: readonly [number, number] } = {},
): number | undefined {
  const text = stringOption(context, name);
  if (text === undefined) return undefined;
  const [least, most] = options.range ?? [options.min, undefined];
  const pattern = options.allowNegative === true || (least ?? 0) < 0 ? /^-?\d+$/ : /^\d+$/;
  const value = Number(text);
  const wanted =
    most !== undefined
      ? `an integer in [${least}, ${most}]`
      : least !== undefined
        ? `an integer >= ${least}`
        : options.allowNegative === true
          ? 'an integer'
          : 'an integer >= 0';
  if (
    !pattern.test(text) ||
    (least !== undefined && !(value >= least)) ||
    (most !== undefined && !(value <= most))
  )
    throw new UsageError(`--${name} must be ${wanted}, got ${JSON.stringify(text)}`);
  if (!Number.isSafeInteger(value)) {
    throw new UsageError(
      `--${name} must be ${value < 0 ? 'at least -9007199254740991 (-(2^53 - 1))' : 'at most 9007199254740991 (2^53 - 1)'}, got ${JSON.stringify(text)}`,
    );
  }
  return value;
}

/**
 * `--group-id-json`, for the commands that take a `<groupId>`: a group id a command line cannot
 * carry (argv strings end at NUL) or a shell mangles, given as the JSON string `--json` output
 * prints for it.
 */
export const GROUP_ID_JSON_OPTION: Record<string, OptionSpec> = {
  'group-id-json': {
    type: 'string',
    valueName: '<json>',
    description:
      'the group id as a JSON string, as --json output prints it (for ids holding NUL or other control characters)',
  },
};

/** The group id: the one positional argument, or `--group-id-json` in its place. */
export function groupIdArgument(context: CommandContext): string {
  const [groupId, ...rest] = context.positionals;
  const json = stringOption(context, 'group-id-json');
  if (json !== undefined) {
    if (groupId !== undefined) throw new UsageError('give <groupId> or --group-id-json, not both');
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      parsed = undefined;
    }
    if (typeof parsed !== 'string')
      throw new UsageError(
        `--group-id-json: not a JSON string (quoted, e.g. '"team\\u0000a"'), got ${JSON.stringify(json)}`,
      );
    return parsed;
  }
  if (groupId === undefined) throw new UsageError('missing <groupId> (or --group-id-json)');
  if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  return groupId;
}

/** Rejects positional arguments a command does not take. */
export function noPositionals(context: CommandContext): void {
  if (context.positionals.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(context.positionals[0])}`);
}

/** Options selecting buckets: `--table`, `--partition`, `--bucket`. */
export const SELECTION_OPTIONS: Record<string, OptionSpec> = {
  table: { type: 'string', valueName: '<tableId>', description: 'only buckets of this table' },
  partition: {
    type: 'string',
    valueName: '<partitionId>',
    description: 'only this partition (needs --table)',
  },
  bucket: {
    type: 'string',
    valueName: '<bucketId>',
    description: 'only this bucket (needs --table)',
  },
};

/** The bucket selection given by `--table`, `--partition`, `--bucket`. */
export function selectionOption(context: CommandContext): BucketSelection {
  const tableId = integerOption(context, 'table');
  const partitionId = integerOption(context, 'partition');
  const bucketId = integerOption(context, 'bucket');
  if (tableId === undefined && (partitionId !== undefined || bucketId !== undefined))
    throw new UsageError('--partition and --bucket need --table');
  if (bucketId !== undefined && bucketId > BUCKET_ID_MAX)
    throw new UsageError(`--bucket must be at most ${BUCKET_ID_MAX} (an int32), got ${bucketId}`);
  return {
    ...(tableId === undefined ? {} : { tableId }),
    ...(partitionId === undefined ? {} : { partitionId }),
    ...(bucketId === undefined ? {} : { bucketId }),
  };
}

/**
 * Refuses a directory that holds no store, as every command that reads one does (INVALID_CONFIG),
 * and one whose manifest an open would refuse (a later format: INVALID_CONFIG; damaged or edited:
 * CORRUPT_MESSAGE): for the commands that write files beside a store without opening it (users,
 * acls), a typo would otherwise create them anywhere, and a store of a later version would get
 * files it may read otherwise.
 */
export async function requireStore(fs: NodeFileSystem, dir: string): Promise<void> {
  if ((await readManifest(fs, dir)) === null)
    throw new OffsetStoreError(
      'INVALID_CONFIG',
      `no offset store in ${path.resolve(dir)}: ${MANIFEST_FILE} not found; create it first, e.g. with offset-store serve`,
    );
}

/** Most bytes of an offsets document read from a file (a million buckets take ~30 MB). */
const OFFSETS_DOCUMENT_BYTES_MAX = 64 * 1024 * 1024;

/**
 * Reads an offsets document (see src/admin/bucket-spec.ts): inline JSON when `text` starts with `{`
 * or `[`, otherwise the path of a JSON file (a leading `@` is allowed: `@lag.json`).
 */
export async function readOffsetsDocument(
  text: string,
  optionName: string,
  groupId?: string,
): Promise<BucketOffset[]> {
  const trimmed = text.trim();
  const inline = trimmed.startsWith('{') || trimmed.startsWith('[');
  const source = inline ? `--${optionName}` : trimmed.replace(/^@/, '');
  let json: string;
  if (inline) {
    json = trimmed;
  } else {
    let bytes: Buffer | null;
    try {
      bytes = await readNamedFile(source, OFFSETS_DOCUMENT_BYTES_MAX);
    } catch (error) {
      throw new UsageError(`--${optionName}: cannot read ${source}: ${(error as Error).message}`);
    }
    if (bytes === null)
      throw new UsageError(`--${optionName}: cannot read ${source}: no such file`);
    // A byte order mark (what some editors put first in a UTF-8 file) is no part of the JSON.
    json = bytes.toString('utf8').replace(/^\uFEFF/, '');
  }
  let document: unknown;
  try {
    document = JSON.parse(json);
  } catch (error) {
    throw new UsageError(
      `${inline ? `--${optionName}` : `--${optionName}: ${source}`} is not valid JSON: ${(error as Error).message}`,
    );
  }
  // JSON.parse keeps the last of a repeated key: in a document someone wrote, that is a mistake.
  const repeated = findDuplicateJsonKey(json);
  if (repeated !== null) {
    throw new UsageError(
      `${inline ? `--${optionName}` : `--${optionName}: ${source}`} names the key ${JSON.stringify(repeated.key)} twice in one object (again at character ${repeated.index}); say each once`,
    );
  }
  const planned = (document as { groupId?: unknown } | null)?.groupId;
  if (groupId !== undefined && typeof planned === 'string' && planned !== groupId) {
    throw new UsageError(
      `--${optionName}: ${source} is a plan for group ${JSON.stringify(planned)}, not ${JSON.stringify(groupId)}`,
    );
  }
  try {
    return parseBucketOffsets(document, source);
  } catch (error) {
    // A document that does not say what the option needs is bad usage, like one that is not JSON.
    if (error instanceof OffsetStoreError && error.code === 'INVALID_REQUEST')
      throw new UsageError(`--${optionName}: ${error.message.replace(/^INVALID_REQUEST: /, '')}`);
    throw error;
  }
}
