/**
 * The checks every options bag of the public API makes of its own shape: a plain object, not null,
 * not an array (an array is an object to `typeof`, and would otherwise be taken as a bag with every
 * option at its default), holding no key that is not one of its options.
 */
import { editDistance } from './edit-distance.js';

/** What `value` is when it is not an options object ('null', 'an array', its typeof), else undefined. */
export function notAnOptionsObject(value: unknown): string | undefined {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? undefined : typeof value;
}

/** A TypeError naming what `value` is when it is no options object (`${what} must be an object, got an array`). */
export function checkOptionsObject(value: unknown, what: string): asserts value is object {
  const shape = notAnOptionsObject(value);
  if (shape !== undefined) throw new TypeError(`${what} must be an object, got ${shape}`);
}

/**
 * Checks an options bag whole: `checkOptionsObject`, then `refuseUnknownOptions`. `name` prefixes
 * the keys in messages (`options.memberID`); `what` names the bag (default: `name`).
 */
export function checkOptionsBag(
  value: unknown,
  known: readonly string[],
  name: string,
  what: string = name,
): asserts value is object {
  checkOptionsObject(value, what);
  refuseUnknownOptions(value, known, name);
}

/**
 * Refuses an options bag holding a key that is not one of `known` (a TypeError naming it, and the
 * option it most likely misspells): a misspelt option would otherwise be ignored in silence, and a
 * store created with `bucketcount: 64` keeps its default bucket count for good, a commit with
 * `memberID` is not fenced. Inherited enumerable keys count too, since options are read with them
 * (a bag made by `Object.create(defaults)`, or one whose prototype a parsed `__proto__` replaced).
 */
export function refuseUnknownOptions(
  options: object | null | undefined,
  known: readonly string[],
  name: string,
): void {
  if (options === undefined || options === null) return;
  for (const key in options) {
    if (known.includes(key)) continue;
    const near = nearestName(key, known);
    throw new TypeError(
      `${name}.${key} is not an option${near === undefined ? '' : ` (did you mean ${name}.${near}?)`}; the options are ${known.join(', ')}`,
    );
  }
}

/** The name in `names` that `key` most likely misspells: same letters in another case, or at most 2 edits away. */
function nearestName(key: string, names: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const sameLetters = names.find((n) => n.toLowerCase() === lower);
  if (sameLetters !== undefined) return sameLetters;
  let best: string | undefined;
  let bestDistance = 3;
  for (const name of names) {
    const distance = editDistance(lower, name.toLowerCase());
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}
