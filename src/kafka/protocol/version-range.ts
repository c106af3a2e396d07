/**
 * Version ranges as Kafka's message schemas write them: `'3'` (one version), `'2-7'` (inclusive),
 * `'9+'` (from 9 on, with no upper end) and `'none'`. A field exists, is nullable or is tagged in the
 * versions its range names; a message is flexible in the versions of its `flexible` range.
 *
 * An open range (`'9+'`) stays open on purpose: the request header version of an API version this
 * store does not describe (a newer client's ApiVersions v5, say) still follows from it, as it does in
 * Kafka's broker.
 */

/** A version range: `'none'`, `'3'`, `'2-7'` or `'9+'`. */
export type VersionRange = 'none' | `${number}` | `${number}+` | `${number}-${number}`;

/** The bounds of a version range; `max` is `Infinity` for an open range, below `min` for `'none'`. */
export interface VersionBounds {
  readonly min: number;
  readonly max: number;
}

const NONE: VersionBounds = Object.freeze({ min: 0, max: -1 });
const parsed = new Map<string, VersionBounds>();

/** The bounds of `range`; throws a RangeError for text that is not a version range. */
export function versionBounds(range: VersionRange): VersionBounds {
  const known = parsed.get(range);
  if (known !== undefined) return known;
  const bounds = parseRange(range);
  parsed.set(range, bounds);
  return bounds;
}

function parseRange(range: string): VersionBounds {
  if (range === 'none') return NONE;
  const match = /^(\d{1,5})(?:(\+)|-(\d{1,5}))?$/.exec(range);
  if (match === null) throw new RangeError(`not a version range: '${range}'`);
  const min = Number(match[1]);
  const max = match[2] === '+' ? Infinity : match[3] !== undefined ? Number(match[3]) : min;
  if (max < min) throw new RangeError(`empty version range: '${range}' (write 'none')`);
  return Object.freeze({ min, max });
}

/** True when `version` lies in `range`; an absent range (`undefined`) holds no version. */
export function inVersions(range: VersionRange | undefined, version: number): boolean {
  if (range === undefined) return false;
  const { min, max } = versionBounds(range);
  return version >= min && version <= max;
}

/** Every version of a closed range, in order; throws a RangeError for an open one. */
export function versionsOf(range: VersionRange): number[] {
  const { min, max } = versionBounds(range);
  if (max === Infinity)
    throw new RangeError(`cannot list the versions of the open range '${range}'`);
  const versions: number[] = [];
  for (let version = min; version <= max; version++) versions.push(version);
  return versions;
}
