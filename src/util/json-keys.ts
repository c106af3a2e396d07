/**
 * Finds a key that an object of a JSON text names twice. `JSON.parse` keeps the last value of a
 * repeated key without a word, so `{"1:0": 5, "1:0": 7}` reads as `{"1:0": 7}`: for a document a
 * person wrote (offsets to reset to), the repetition is a mistake to report, not a value to pick.
 *
 * The text must already be valid JSON (`JSON.parse` accepted it): the scan then needs no grammar,
 * only strings (which may hold any bracket or quote, escaped), the nesting of objects and arrays,
 * and which strings are keys (those followed by `:`). Keys are compared decoded, so `"\u0031:0"` and
 * `"1:0"` are the same key. One pass, one Set of keys per open object.
 */

/** A key named twice in one object, and the offset in the text of its second naming. */
export interface DuplicateJsonKey {
  readonly key: string;
  /** The index in the text of the opening quote of the repeated key. */
  readonly index: number;
}

/** The first key repeated within one object of `text` (valid JSON), or null. */
export function findDuplicateJsonKey(text: string): DuplicateJsonKey | null {
  // One entry per open object or array: the keys seen so far in an object, null for an array.
  const open: (Set<string> | null)[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i;
      i = endOfString(text, i);
      const keys = open.at(-1);
      if (keys && nextNonSpace(text, i) === COLON) {
        const raw = text.slice(start, i);
        const key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        if (keys.has(key)) return { key, index: start };
        keys.add(key);
      }
      continue;
    }
    if (c === OPEN_BRACE) open.push(new Set());
    else if (c === OPEN_BRACKET) open.push(null);
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) open.pop();
    i++;
  }
  return null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The index just past the string whose opening quote is at `start`. */
function endOfString(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i += 2;
    else if (c === QUOTE) return i + 1;
    else i++;
  }
  return text.length;
}

/** The code of the first character at or after `i` that is not JSON whitespace (NaN at the end). */
function nextNonSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return c;
    i++;
  }
}
