/**
 * The check every options bag of the public API makes of its own shape: a plain object, not null,
 * not an array (an array is an object to `typeof`, and would otherwise be taken as a bag with every
 * option at its default).
 */

/** What `value` is when it is not an options object ('null', 'an array', its typeof), else undefined. */
export function notAnOptionsObject(value: unknown): string | undefined {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? undefined : typeof value;
}
