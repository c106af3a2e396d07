/**
 * Segment file names: the 20-digit zero-padded log offset of the segment's first batch, plus `.log`,
 * so that lexical order is log order.
 */

/** Suffix of a live segment file. */
export const SEGMENT_SUFFIX = '.log';

/** File name of the segment whose base log offset is `baseOffset`. */
export function segmentFileName(baseOffset: number): string {
  return `${String(baseOffset).padStart(20, '0')}${SEGMENT_SUFFIX}`;
}

/** The base log offset named by a segment file name, or undefined if it is not one. */
export function parseSegmentFileName(name: string): number | undefined {
  if (!/^\d{20}\.log$/.test(name)) return undefined;
  const baseOffset = Number(name.slice(0, 20));
  return Number.isSafeInteger(baseOffset) ? baseOffset : undefined;
}
