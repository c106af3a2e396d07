/**
 * Names and loading of compaction strategies: the built-ins, and a user's module given by path.
 *
 * What the store records in store.json (`compactionStrategy`), and why:
 * - a built-in: its name (`'log-cleaner'`, `'incremental'`, `'checkpoint'`, `'none'`), as before;
 * - a user module: `module:<name>`, or `module:<name>+checkpoints` when it declares checkpoints,
 *   where `<name>` is the name the module declares, not its path (a path moves with deployments; a
 *   name says which strategy shaped the files). Whether checkpoints are used is part of the record
 *   because recovery, `log verify` and conversions must know it without loading any user code.
 *   Opening such a store needs the module again (its path in `compaction.strategy`); without it the
 *   store opens with compaction off.
 *
 * A strategy crosses to a worker thread as a `StrategyRef` (plain data): the worker loads it itself.
 */
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { OffsetStoreError } from '../errors/index.js';
import { checkpointStrategy } from './strategies/checkpoint.js';
import { incrementalStrategy } from './strategies/incremental-cleaner.js';
import { logCleanerStrategy } from './strategies/log-cleaner.js';
import { noneStrategy } from './strategies/none.js';
import type { CompactionStrategyDefinition } from './strategy.js';

/** The built-in compaction strategies. */
export type CompactionStrategy = 'log-cleaner' | 'incremental' | 'checkpoint' | 'none';

/** Every built-in strategy, in the order they are documented. */
export const COMPACTION_STRATEGIES: readonly CompactionStrategy[] = [
  'log-cleaner',
  'incremental',
  'checkpoint',
  'none',
];

const BUILT_INS: Record<CompactionStrategy, CompactionStrategyDefinition> = {
  'log-cleaner': logCleanerStrategy,
  incremental: incrementalStrategy,
  checkpoint: checkpointStrategy,
  none: noneStrategy,
};

/** True when `value` names a built-in compaction strategy. */
export function isCompactionStrategy(value: unknown): value is CompactionStrategy {
  return (COMPACTION_STRATEGIES as readonly unknown[]).includes(value);
}

/** True when `value` reads as a module path (relative, absolute, file: URL, or a .js/.mjs/.cjs/.ts/.mts file). */
export function isStrategyModulePath(value: string): boolean {
  return (
    /^(\.{1,2}[\\/]|\/|file:)/.test(value) ||
    /[\\/]/.test(value) ||
    /\.(m?js|cjs|m?ts)$/.test(value)
  );
}

/** A strategy as plain data, for a worker thread. */
export type StrategyRef = { builtIn: CompactionStrategy } | { moduleUrl: string };

/** The file URL of a strategy module path, resolved against `cwd`. */
export function strategyModuleUrl(modulePath: string, cwd: string): string {
  return modulePath.startsWith('file:')
    ? modulePath
    : pathToFileURL(path.resolve(cwd, modulePath)).href;
}

/** A strategy loaded and checked. */
export interface LoadedStrategy {
  /** How to load it again (in a worker). */
  ref: StrategyRef;
  /** Its definition. */
  definition: CompactionStrategyDefinition;
  /** What the store records: the built-in name or `module:<name>[+checkpoints]`. */
  id: string;
  /** It may write checkpoints (recovery restores them). */
  checkpoints: boolean;
  /** It may rewrite segments (its plan runs where the rewrite runs). */
  rewrites: boolean;
}

const NAME_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
const loaded = new Map<string, Promise<CompactionStrategyDefinition>>();

/**
 * Loads (once per module, per thread) and checks a strategy; INVALID_CONFIG for a module that cannot
 * be one. Once per thread for the life of the thread: the main thread keeps the module it imported
 * first (as Node's import does) whatever store opens it later, while a new worker thread imports the
 * file as it is then, so a module changed on disk is refused on the workers until the process restarts.
 */
export async function loadStrategy(ref: StrategyRef): Promise<LoadedStrategy> {
  const definition = 'builtIn' in ref ? BUILT_INS[ref.builtIn] : await loadModule(ref.moduleUrl);
  const checkpoints = definition.checkpoints === true;
  const id =
    'builtIn' in ref
      ? ref.builtIn
      : `module:${definition.name}${checkpoints ? '+checkpoints' : ''}`;
  return { ref, definition, id, checkpoints, rewrites: definition.rewrites !== false };
}

function loadModule(url: string): Promise<CompactionStrategyDefinition> {
  let promise = loaded.get(url);
  if (promise === undefined) {
    promise = import(url).then(
      (module: { default?: unknown }) => checkDefinition(module.default, url),
      (error: unknown) => {
        throw new OffsetStoreError(
          'INVALID_CONFIG',
          `cannot load the compaction strategy module ${url}: ${(error as Error).message}`,
          { cause: error },
        );
      },
    );
    loaded.set(url, promise);
    promise.catch(() => loaded.delete(url));
  }
  return promise;
}

/**
 * Checks that a module's default export is a CompactionStrategyDefinition, and returns a frozen
 * copy of what was checked: each field is read once (a getter or a Proxy could answer the check one
 * way and the store, recording `name` and `checkpoints` in store.json, another), and `plan` and
 * `due` are called on the module's own object. INVALID_CONFIG naming `where` when it is not one,
 * or when reading it throws.
 */
export function checkDefinition(value: unknown, where: string): CompactionStrategyDefinition {
  const bad = (reason: string) =>
    new OffsetStoreError(
      'INVALID_CONFIG',
      `${where} is not a compaction strategy: ${reason} (see docs/compaction.md)`,
    );
  if (typeof value !== 'object' || value === null)
    throw bad('its default export must be an object with name and plan');
  const d = value as Record<string, unknown>;
  let name: unknown, plan: unknown, due: unknown, checkpoints: unknown, rewrites: unknown;
  try {
    ({ name, plan, due, checkpoints, rewrites } = d);
  } catch (error) {
    throw bad(`reading its fields threw: ${describeThrown(error)}`);
  }
  if (typeof name !== 'string' || !NAME_PATTERN.test(name))
    throw bad(`name must be 1-64 letters, digits, '.', '_' or '-', got ${describeValue(name)}`);
  if (typeof plan !== 'function') throw bad('plan must be a function');
  if (due !== undefined && typeof due !== 'function') throw bad('due must be a function');
  if (checkpoints !== undefined && typeof checkpoints !== 'boolean')
    throw bad('checkpoints must be a boolean');
  if (rewrites !== undefined && typeof rewrites !== 'boolean')
    throw bad('rewrites must be a boolean');
  const planOf = plan as CompactionStrategyDefinition['plan'];
  const dueOf = due as CompactionStrategyDefinition['due'];
  return Object.freeze({
    name,
    ...(checkpoints === undefined ? {} : { checkpoints }),
    ...(rewrites === undefined ? {} : { rewrites }),
    plan: (view, inspector) => planOf.call(value, view, inspector),
    ...(dueOf === undefined ? {} : { due: (view) => dueOf.call(value, view) }),
  } satisfies CompactionStrategyDefinition);
}

/** What user code threw, for a message: its message when it has one that can be read. */
export function describeThrown(error: unknown): string {
  try {
    return error instanceof Error ? String(error.message) : String(error);
  } catch {
    return 'a value that cannot be described';
  }
}

/** A value in a message: JSON where it can be, else its type. */
export function describeValue(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return typeof value;
  }
}

/**
 * What a recorded strategy id says without loading anything: whether it uses checkpoints, and the
 * built-in it names (undefined for a module). Undefined for an id that is neither (damage).
 */
export function recordedStrategy(
  id: string,
): { checkpoints: boolean; builtIn: CompactionStrategy | undefined } | undefined {
  if (isCompactionStrategy(id))
    return { checkpoints: BUILT_INS[id].checkpoints === true, builtIn: id };
  const match = /^module:([A-Za-z0-9._-]{1,64})(\+checkpoints)?$/.exec(id);
  return match === null ? undefined : { checkpoints: match[2] !== undefined, builtIn: undefined };
}
