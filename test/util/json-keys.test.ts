import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { findDuplicateJsonKey } from '../../src/util/index.js';

describe('findDuplicateJsonKey', () => {
  it('finds a key repeated in one object, compared decoded, at any depth', () => {
    expect(findDuplicateJsonKey('{"1:0": 5, "1:0": 7}')).toEqual({ key: '1:0', index: 11 });
    expect(findDuplicateJsonKey('{"a":1,"\\u0061":2}')?.key).toBe('a');
    expect(findDuplicateJsonKey('[{"rows":[{"x":1},{"x":2,"y":[1,{"z":0,"z" :1}]}]}]')?.key).toBe(
      'z',
    );
  });

  it('lets the same key appear in different objects, and strings that only look like keys', () => {
    expect(findDuplicateJsonKey('[{"a":1},{"a":2}]')).toBeNull();
    expect(findDuplicateJsonKey('{"a":{"a":1},"b":"a"}')).toBeNull();
    expect(findDuplicateJsonKey('{"a":"\\"a\\":1,{","b":["a","a"]}')).toBeNull();
    expect(findDuplicateJsonKey('{"}":1,"{":2,"]":3}')).toBeNull();
    expect(findDuplicateJsonKey('"a"')).toBeNull();
  });

  it('agrees with JSON.parse on whether any object lost a key', () => {
    const countKeys = (value: unknown): number =>
      value === null || typeof value !== 'object'
        ? 0
        : Array.isArray(value)
          ? value.reduce<number>((n, v) => n + countKeys(v), 0)
          : Object.entries(value).reduce((n, [, v]) => n + 1 + countKeys(v), 0);
    // Objects written as entry lists, so a key may repeat; keys from a small alphabet, so they do.
    const key = fc.constantFrom('a', 'b', '"', '\\', 'é', '{', ':', '\u2028');
    const json: fc.Memo<string> = fc.memo((n) =>
      n <= 1
        ? fc.oneof(
            fc.integer().map(String),
            key.map((k) => JSON.stringify(k)),
          )
        : fc.oneof(
            fc
              .array(fc.tuple(key, json(n - 1)), { maxLength: 4 })
              .map((es) => `{${es.map(([k, v]) => `${JSON.stringify(k)} : ${v}`).join(',')}}`),
            fc.array(json(n - 1), { maxLength: 4 }).map((vs) => `[ ${vs.join(', ')} ]`),
          ),
    );
    fc.assert(
      fc.property(json(4), (text) => {
        const entries = (text.match(/" :/g) ?? []).length;
        expect(findDuplicateJsonKey(text) === null).toBe(countKeys(JSON.parse(text)) === entries);
      }),
    );
  });
});
