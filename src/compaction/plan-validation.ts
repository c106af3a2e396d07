/**
 * The engine never trusts a plan: `validatePlan` checks what a strategy returned against the view it
 * was given before anything is read for a rewrite or changed on disk, and `checkOutputs` checks what
 * a rewrite produced (it crossed a thread boundary, next to user code) before it is swapped in. Any
 * violation is INVALID_COMPACTION_PLAN naming the strategy, the bucket and the rule, and nothing
 * changes.
 *
 * The rules, each one what keeps recovery (log-inspection.ts) and the materialized state intact:
 * 1. A plan is null, undefined or a plain object with only the known fields of CompactionPlan.
 * 2. `rewrite` groups name sealed segments by base offset; each group is a run of adjacent segments
 *    (an output covering a gap would break the chain of log offsets); groups are in log order and
 *    share no segment (overlapping outputs would replace a segment twice); the active segment is
 *    never rewritten. Only a strategy that rewrites may ask for it.
 * 3. `checkpoint` and `deleteBelow` need a strategy that declares `checkpoints: true`: deleting
 *    segments is safe only below a checkpoint that covers them, and recovery restores checkpoints
 *    only for such strategies. A numeric `deleteBelow` must be covered by the newest checkpoint
 *    (after this plan's checkpoint, if it writes one: the compactor checks again after writing).
 * 4. `mapFrom` and `tombstonesBelow` are log offsets (`tombstonesBelow` may be Infinity);
 *    `state` is JSON of at most STATE_BYTES_MAX bytes.
 * 5. Outputs: per group, the first starts at the group's first base offset, each next one right after
 *    the one before, the last ends at the group's last batch; every output is a `.cleaned` file of the
 *    bucket's directory, named after its base offset, with bytes in it.
 */
import * as path from 'node:path';
import { OffsetStoreError } from '../errors/index.js';
import { CLEANED_SUFFIX, segmentFileName, type CleanedSegment } from '../log/index.js';
import type { BucketView, JsonValue } from './strategy.js';
import { describeThrown } from './strategy-registry.js';

/** Most bytes of a strategy's state (JSON, UTF-8) per bucket. */
export const STATE_BYTES_MAX = 64 * 1024;

const PLAN_FIELDS = new Set([
  'rewrite',
  'mapFrom',
  'tombstonesBelow',
  'checkpoint',
  'deleteBelow',
  'state',
]);

/** A plan that passed validation, normalized. */
export interface ValidatedPlan {
  /** Rewrite groups, each a run of adjacent sealed segments by base offset, in log order. */
  groups: number[][];
  /** The rewrite's key map starts here (defaulted to the first group's base offset). */
  mapFrom: number;
  /** Tombstones at or above this log offset are kept (Infinity: no bound). */
  tombstonesBelow: number;
  /** Write a checkpoint. */
  checkpoint: boolean;
  /** Delete below this log offset, or below the newest checkpoint. */
  deleteBelow: number | 'checkpoint' | undefined;
  /** The state to store, when the plan gave one (a normalized copy). */
  state: { value: JsonValue } | undefined;
}

/** What the engine knows of the strategy that made a plan. */
export interface PlanAuthor {
  /** Its recorded name, for messages. */
  strategy: string;
  /** It declared `checkpoints: true`. */
  checkpoints: boolean;
  /** It may rewrite (`rewrites` not false). */
  rewrites: boolean;
}

function refuse(author: PlanAuthor, view: BucketView, reason: string): OffsetStoreError {
  return new OffsetStoreError(
    'INVALID_COMPACTION_PLAN',
    `strategy '${author.strategy}' planned for offsets-bucket ${view.bucket}: ${reason}; refused, nothing was changed`,
  );
}

function isLogOffset(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

/**
 * Checks `plan` against `view` (rules 1-4); null when it asks for nothing. Each field of the plan,
 * and each element of its groups, is read once, and what is returned holds only values checked
 * (copies): a plan of getters or Proxies cannot show validation one thing and the rewrite another.
 * A plan whose reading throws (a getter, a Proxy trap) is refused like any other bad plan.
 */
export function validatePlan(
  plan: unknown,
  view: BucketView,
  author: PlanAuthor,
): ValidatedPlan | null {
  try {
    return validatePlanFields(plan, view, author);
  } catch (error) {
    if (error instanceof OffsetStoreError) throw error;
    throw refuse(author, view, `reading the plan threw ${describeThrown(error)}`);
  }
}

/** Most levels of arrays and objects nested in a strategy's state. */
export const STATE_DEPTH_MAX = 64;

/**
 * What in `value` (at `where`, nested `depth` deep) JSON did not keep as it is in `kept` (what
 * `JSON.parse` gave back of its text), or undefined when it kept all of it: a number that is not
 * finite, or -0; undefined, a function, a symbol; an empty slot of an array, or a property of an
 * array besides its elements; a symbol key or a property that is not enumerable; an object that is
 * not a plain object or array (a Date, a Map, a class instance: JSON keeps only what their toJSON or
 * own enumerable fields give); and anything that read otherwise than when JSON read it (a getter, a
 * Proxy). Walks no deeper than STATE_DEPTH_MAX + 1, which the depth check refuses anyway.
 */
function jsonProblem(
  value: unknown,
  kept: unknown,
  where: string,
  depth: number,
): string | undefined {
  const changed = `${where} read otherwise than when it was turned into JSON (a getter or a Proxy?)`;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value === kept ? undefined : changed;
    case 'number':
      if (!Number.isFinite(value)) return `${where} is ${value}, which JSON cannot hold`;
      if (Object.is(value, -0)) return `${where} is -0, which JSON keeps as 0`;
      return value === kept ? undefined : changed;
    case 'undefined':
    case 'function':
    case 'symbol':
    case 'bigint':
      return `${where} is ${typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`}, which JSON cannot hold`;
  }
  if (value === null) return kept === null ? undefined : changed;
  if (depth > STATE_DEPTH_MAX) return undefined;
  if (Array.isArray(value)) {
    if (!Array.isArray(kept) || kept.length !== value.length) return changed;
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) return `${where}[${i}] is an empty slot, which JSON turns into null`;
      const problem = jsonProblem(value[i], kept[i], `${where}[${i}]`, depth + 1);
      if (problem !== undefined) return problem;
    }
    for (const key of Reflect.ownKeys(value))
      if (key !== 'length' && !(typeof key === 'string' && /^(0|[1-9]\d*)$/.test(key)))
        return `${where} has a property ${String(key)} besides its elements, which JSON drops`;
    return undefined;
  }
  const object = value as object;
  if (!isPlainObject(object)) {
    const prototype = Object.getPrototypeOf(object) as object;
    const kind = (prototype.constructor as { name?: unknown } | undefined)?.name;
    return `${where} is ${typeof kind === 'string' && kind !== '' ? `a ${kind}` : 'an object with a prototype'}, not a plain object, array, string, finite number, boolean or null`;
  }
  if (typeof kept !== 'object' || kept === null || Array.isArray(kept)) return changed;
  for (const key of Reflect.ownKeys(object)) {
    if (typeof key === 'symbol') return `${where} has a symbol key, which JSON drops`;
    const at = /^[A-Za-z_$][\w$]*$/.test(key)
      ? `${where}.${key}`
      : `${where}[${JSON.stringify(key)}]`;
    if (!Object.prototype.propertyIsEnumerable.call(object, key))
      return `${at} is not enumerable, which JSON drops`;
    const problem = jsonProblem(
      (object as Record<string, unknown>)[key],
      (kept as Record<string, unknown>)[key],
      at,
      depth + 1,
    );
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * A plain object: its prototype is Object.prototype (of this realm or another: a state built by
 * `vm`), or null.
 */
function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as object | null;
  if (prototype === null || prototype === Object.prototype) return true;
  return (
    Object.getPrototypeOf(prototype) === null &&
    Object.prototype.toString.call(value) === '[object Object]' &&
    (prototype.constructor as { name?: unknown } | undefined)?.name === 'Object'
  );
}

/** How deeply arrays and objects nest in a JSON text (brackets inside strings do not count). */
function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

function validatePlanFields(
  plan: unknown,
  view: BucketView,
  author: PlanAuthor,
): ValidatedPlan | null {
  if (plan === null || plan === undefined) return null;
  if (
    typeof plan !== 'object' ||
    Array.isArray(plan) ||
    Object.getPrototypeOf(plan) !== Object.prototype
  )
    throw refuse(author, view, 'a plan must be a plain object, null or undefined');
  const fields = plan as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((k) => !PLAN_FIELDS.has(k));
  if (unknown.length > 0)
    throw refuse(
      author,
      view,
      `unknown plan field(s) ${unknown.join(', ')} (known: ${[...PLAN_FIELDS].join(', ')})`,
    );
  const groups = validateGroups(fields.rewrite, view, author);
  const { mapFrom, tombstonesBelow, checkpoint, deleteBelow } = fields;
  if (mapFrom !== undefined && !isLogOffset(mapFrom))
    throw refuse(author, view, `mapFrom must be a log offset, got ${String(mapFrom)}`);
  if (
    tombstonesBelow !== undefined &&
    !isLogOffset(tombstonesBelow) &&
    tombstonesBelow !== Number.POSITIVE_INFINITY
  ) {
    throw refuse(
      author,
      view,
      `tombstonesBelow must be a log offset or Infinity, got ${String(tombstonesBelow)}`,
    );
  }
  if (checkpoint !== undefined && typeof checkpoint !== 'boolean')
    throw refuse(author, view, 'checkpoint must be a boolean');
  if (checkpoint === true && !author.checkpoints)
    throw refuse(
      author,
      view,
      'it asks for a checkpoint, but the strategy does not declare checkpoints: true (recovery would not restore it)',
    );
  if (deleteBelow !== undefined)
    validateDeleteBelow(deleteBelow, checkpoint === true, view, author);
  let state: ValidatedPlan['state'];
  const stateField = fields.state;
  if (stateField !== undefined) {
    let text: string | undefined;
    try {
      text = JSON.stringify(stateField);
    } catch (error) {
      throw refuse(author, view, `state is not JSON: ${(error as Error).message}`);
    }
    if (text === undefined) throw refuse(author, view, 'state is not JSON');
    if (Buffer.byteLength(text) > STATE_BYTES_MAX)
      throw refuse(
        author,
        view,
        `state is ${Buffer.byteLength(text)} bytes of JSON, more than ${STATE_BYTES_MAX}`,
      );
    // A worker thread has a deeper stack than the main thread: a state nested deeper than the main
    // thread can copy would make the worker's result undeliverable.
    const depth = jsonDepth(text);
    if (depth > STATE_DEPTH_MAX)
      throw refuse(
        author,
        view,
        `state nests arrays and objects ${depth} levels deep, more than ${STATE_DEPTH_MAX}`,
      );
    // JSON.stringify turns some values into others without a word (NaN into null, a Date into a
    // string, a Map into {}) and drops others (undefined, functions): the next run would be shown a
    // state other than the one kept.
    const kept = JSON.parse(text) as JsonValue;
    let problem: string | undefined;
    try {
      problem = jsonProblem(stateField, kept, 'state', 0);
    } catch (error) {
      throw refuse(author, view, `state is not JSON: ${(error as Error)?.message}`);
    }
    if (problem !== undefined) throw refuse(author, view, problem);
    state = { value: kept };
  }
  return {
    groups,
    mapFrom: (mapFrom as number | undefined) ?? groups[0]?.[0] ?? 0,
    tombstonesBelow: (tombstonesBelow as number | undefined) ?? Number.POSITIVE_INFINITY,
    checkpoint: checkpoint === true,
    deleteBelow: deleteBelow as ValidatedPlan['deleteBelow'],
    state,
  };
}

function validateGroups(rewrite: unknown, view: BucketView, author: PlanAuthor): number[][] {
  if (rewrite === undefined) return [];
  if (!Array.isArray(rewrite))
    throw refuse(
      author,
      view,
      'rewrite must be an array of groups (arrays of segment base offsets)',
    );
  // Lengths read once too: a Proxy whose length reads otherwise the second time would pass the
  // checks with one length and give the groups of another (an empty group, past the order check).
  const count = rewrite.length;
  if (count > 0 && !author.rewrites)
    throw refuse(author, view, 'it asks for a rewrite, but the strategy declares rewrites: false');
  const index = new Map(view.segments.map((s, i) => [s.baseOffset, i]));
  const activeIndex = view.segments.length - 1;
  let previousEnd = -1;
  const groups: number[][] = [];
  for (let g = 0; g < count; g++) {
    const group: unknown = (rewrite as unknown[])[g];
    const length = Array.isArray(group) ? group.length : 0;
    if (!(length > 0))
      throw refuse(
        author,
        view,
        `rewrite group ${g} must be a non-empty array of segment base offsets`,
      );
    // Every element read once, holes included (a hole names no segment).
    const bases: unknown[] = [];
    const positions: number[] = [];
    for (let k = 0; k < length; k++) {
      const base: unknown = (group as unknown[])[k];
      const i = typeof base === 'number' ? index.get(base) : undefined;
      if (i === undefined)
        throw refuse(
          author,
          view,
          `rewrite group ${g} names ${String(base)}, which is not the base offset of a segment of the log`,
        );
      if (i === activeIndex)
        throw refuse(
          author,
          view,
          `rewrite group ${g} names the active segment ${base as number}, which is never compacted`,
        );
      bases.push(base);
      positions.push(i);
    }
    for (let k = 1; k < positions.length; k++) {
      if (positions[k] !== positions[k - 1]! + 1) {
        throw refuse(
          author,
          view,
          `rewrite group ${g} is not a run of adjacent segments (${String(bases[k - 1])} is followed by ${view.segments[positions[k - 1]! + 1]?.baseOffset}, not ${String(bases[k])}): its output would break the chain of log offsets`,
        );
      }
    }
    if (positions[0]! <= previousEnd) {
      throw refuse(
        author,
        view,
        `rewrite group ${g} overlaps or precedes group ${g - 1} (groups must be in log order and share no segment: overlapping outputs)`,
      );
    }
    previousEnd = positions.at(-1)!;
    // The base offsets as validated, from the view: the strategy's array is not read again (a
    // getter or a Proxy could name other segments on the next read than on this one).
    groups.push(positions.map((i) => view.segments[i]!.baseOffset));
  }
  return groups;
}

function validateDeleteBelow(
  deleteBelow: unknown,
  writesCheckpoint: boolean,
  view: BucketView,
  author: PlanAuthor,
): void {
  if (deleteBelow !== 'checkpoint' && !isLogOffset(deleteBelow))
    throw refuse(
      author,
      view,
      `deleteBelow must be a log offset or 'checkpoint', got ${String(deleteBelow)}`,
    );
  if (!author.checkpoints) {
    throw refuse(
      author,
      view,
      `deleting segments below ${String(deleteBelow)} would drop records no checkpoint covers (the strategy does not declare checkpoints: true)`,
    );
  }
  if (deleteBelow === 'checkpoint') {
    if (!writesCheckpoint && view.checkpoint === undefined)
      throw refuse(
        author,
        view,
        "deleteBelow 'checkpoint' without a checkpoint: nothing covers the segments",
      );
    return;
  }
  const covered = writesCheckpoint ? view.logEndOffset : (view.checkpoint?.logOffset ?? -1);
  if ((deleteBelow as number) > covered) {
    throw refuse(
      author,
      view,
      `deleting segments below log offset ${deleteBelow as number} would drop live records no checkpoint covers (the newest ${writesCheckpoint ? 'possible checkpoint is at the log end' : 'checkpoint is at'} ${covered < 0 ? 'none' : covered})`,
    );
  }
}

/**
 * The group of each planned rewrite with what the log says of its segments: base offsets, and the
 * log offset of the last batch of its last segment.
 */
export interface PlannedGroup {
  /** Base offsets of its segments, in order. */
  bases: number[];
  /** Log offset of the last batch of its last segment. */
  lastLogOffset: number;
}

/** Rule 5: each group's outputs chain from its first base offset to its last batch, in `dir`. */
export function checkOutputs(
  dir: string,
  groups: readonly PlannedGroup[],
  outputs: readonly (readonly CleanedSegment[])[],
  author: PlanAuthor,
  view: BucketView,
): void {
  if (outputs.length !== groups.length)
    throw refuse(
      author,
      view,
      `the rewrite returned outputs for ${outputs.length} group(s), not ${groups.length}`,
    );
  for (const [g, group] of groups.entries()) {
    const produced = outputs[g]!;
    let expectedBase = group.bases[0]!;
    for (const o of produced) {
      const where = `output ${segmentFileName(o.baseOffset)} of rewrite group ${g}`;
      if (o.baseOffset !== expectedBase)
        throw refuse(
          author,
          view,
          `${where} starts at ${o.baseOffset}, not ${expectedBase}: outputs must chain without gap or overlap`,
        );
      if (
        path.resolve(o.tempPath) !==
        path.resolve(dir, segmentFileName(o.baseOffset) + CLEANED_SUFFIX)
      )
        throw refuse(
          author,
          view,
          `${where} is not written as ${segmentFileName(o.baseOffset)}${CLEANED_SUFFIX} in ${dir}`,
        );
      if (!(o.sizeBytes > 0) || !(o.lastLogOffset >= o.baseOffset))
        throw refuse(author, view, `${where} holds no batch`);
      expectedBase = o.lastLogOffset + 1;
    }
    if (produced.length === 0 || produced.at(-1)!.lastLogOffset !== group.lastLogOffset) {
      throw refuse(
        author,
        view,
        `the outputs of rewrite group ${g} end at log offset ${produced.at(-1)?.lastLogOffset ?? 'none'}, not at its last batch ${group.lastLogOffset}: the chain of log offsets would break`,
      );
    }
  }
}
