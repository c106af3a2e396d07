/**
 * The group id: one home for its rules. A group id is a non-empty string of at most 255 UTF-8
 * bytes, and well-formed UTF-16: a lone surrogate has no UTF-8 encoding, so it would be written as
 * U+FFFD and come back from the log as a different id, merged with every other id that differs from
 * it only there. The same holds for every string that reaches the disk (member and instance ids,
 * offset metadata): `checkWellFormed`.
 */
import { OffsetStoreError } from '../errors/index.js';

/** Longest group id, in UTF-8 bytes. */
export const GROUP_ID_BYTES_MAX = 255;

/** The end of the message for a string with a lone surrogate. */
export const NOT_WELL_FORMED =
  'is not well-formed UTF-16: it holds a lone surrogate, which has no UTF-8 encoding';

/** Checks a group id (TypeError for a non-string; INVALID_GROUP_ID for an empty, ill-formed or too long one). */
export function validateGroupId(groupId: unknown): asserts groupId is string {
  if (typeof groupId !== 'string')
    throw new TypeError(`groupId must be a string, got ${typeof groupId}`);
  if (groupId.length === 0) throw new OffsetStoreError('INVALID_GROUP_ID', 'groupId is empty');
  if (!groupId.isWellFormed())
    throw new OffsetStoreError('INVALID_GROUP_ID', `groupId ${NOT_WELL_FORMED}`);
  // At most 3 UTF-8 bytes per UTF-16 code unit: only a long id needs its bytes counted.
  if (groupId.length > GROUP_ID_BYTES_MAX / 3 && Buffer.byteLength(groupId) > GROUP_ID_BYTES_MAX) {
    throw new OffsetStoreError(
      'INVALID_GROUP_ID',
      `groupId of ${Buffer.byteLength(groupId)} UTF-8 bytes exceeds ${GROUP_ID_BYTES_MAX}`,
    );
  }
}

/** INVALID_REQUEST unless `value` is well-formed UTF-16; `field` names it in the message. */
export function checkWellFormed(value: string, field: string): string {
  if (!value.isWellFormed())
    throw new OffsetStoreError('INVALID_REQUEST', `${field} ${NOT_WELL_FORMED}`);
  return value;
}

/**
 * `value` cut to at most `maxUnits` UTF-16 code units, never between the two halves of a surrogate
 * pair (the first half alone would be a lone surrogate: see above).
 */
export function cutWellFormed(value: string, maxUnits: number): string {
  if (value.length <= maxUnits) return value;
  const code = value.charCodeAt(maxUnits - 1);
  return value.slice(0, code >= 0xd800 && code <= 0xdbff ? maxUnits - 1 : maxUnits);
}
