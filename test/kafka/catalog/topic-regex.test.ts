/**
 * Subscription expressions: whole-name matches that agree with a backtracking engine on every
 * expression of the shared syntax (random expressions and names, fast-check prints the seed of a
 * failure), in time linear in the name whatever the expression (the classic catastrophic
 * expressions finish), refusals that name where and why, and a resolver that follows the catalog.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TopicRegex, TopicRegexResolver } from '../../../src/kafka/catalog/index.js';
import { isOffsetStoreError } from '../../../src/errors/index.js';

/**
 * Expressions over a small alphabet, in the syntax both engines read the same way. Nested at most
 * 4 deep: the reference is a backtracking engine, and deeper nests of repetitions took it up to
 * 30 s on a 7-letter name (the engine under test stays linear, as the next test checks).
 */
const expression: fc.Arbitrary<string> = fc.letrec<{ re: string; atom: string }>((tie) => ({
  atom: fc.oneof(
    { depthSize: 'small', withCrossShrink: true, depthIdentifier: 'expression', maxDepth: 4 },
    fc.constantFrom('a', 'b', '.', '-', '\\.', '\\d', '\\w', '[ab]', '[^a]', '[a-c.]', '[-a]', '9'),
    tie('re').map((r) => `(${r})`),
    tie('re').map((r) => `(?:${r})`),
  ),
  re: fc.oneof(
    { depthSize: 'small', depthIdentifier: 'expression', maxDepth: 4 },
    fc
      .tuple(
        tie('atom'),
        fc.constantFrom('', '', '*', '+', '?', '*?', '{2}', '{1,3}', '{0,}', '{2,}?'),
      )
      .map(([a, q]) => a + q),
    fc.array(tie('atom'), { minLength: 2, maxLength: 4 }).map((parts) => parts.join('')),
    fc.tuple(tie('re'), tie('re')).map(([x, y]) => `${x}|${y}`),
    tie('re').map((r) => `^${r}$`),
  ),
})).re;

const name = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '.', '-', '_', '9'), maxLength: 7 });

describe('TopicRegex', () => {
  it('matches whole names exactly as a backtracking engine does, on random expressions and names', () => {
    fc.assert(
      fc.property(expression, fc.array(name, { minLength: 1, maxLength: 8 }), (source, names) => {
        const ours = TopicRegex.compile(source);
        const reference = new RegExp(`^(?:${source})$`);
        for (const n of names) expect(ours.matches(n), `${source} on ${n}`).toBe(reference.test(n));
      }),
      { numRuns: 1000 },
    );
  });

  it('matches in time linear in the name: catastrophic expressions for a backtracking engine finish', () => {
    const long = 'a'.repeat(249);
    for (const source of [
      '(a+)+b',
      '(a|a)*b',
      '(a*)*b',
      '(a|aa)+b',
      '(.*a){20}b',
      '(a?){30}a{30}b',
    ])
      expect(TopicRegex.compile(source).matches(long), source).toBe(false);
    expect(TopicRegex.compile('(a+)+').matches(long)).toBe(true);
  });

  it('compiles nested repetitions of nothing at once (they compile to nothing)', () => {
    const empty = TopicRegex.compile('(?:(?:(?:(){1000}){1000}){1000}){1000}');
    expect([empty.matches(''), empty.matches('a')]).toEqual([true, false]);
    expect(TopicRegex.compile('x(?:(?:a{0}){1000}){1000}').matches('x')).toBe(true);
  });

  it('reads a one-character range ([a-a], as RE2 does) and refuses only a range out of order', () => {
    const single = TopicRegex.compile('orders-[1-1]');
    expect([single.matches('orders-1'), single.matches('orders-2')]).toEqual([true, false]);
    expect(() => TopicRegex.compile('orders-[2-1]')).toThrow(/a range out of order/);
  });

  it('reads Kafka-style subscriptions', () => {
    const cases: [string, string, boolean][] = [
      ['orders\\..*', 'orders.eu', true],
      ['orders\\..*', 'ordersXeu', false],
      ['^(payments|refunds)-[0-9]+$', 'refunds-12', true],
      ['^(payments|refunds)-[0-9]+$', 'refunds-', false],
      ['(?P<region>eu|us)_clicks', 'us_clicks', true],
      ['(?<region>eu|us)_clicks', 'eu_clicks', true],
      ['\\Aaudit\\z', 'audit', true],
      ['(?i)ORDERS', 'orders', true],
      ['(?i:o)RDERS', 'ORDERS', true],
      ['(?i:o)RDERS', 'orders', false],
      ['(?i)[^o]rders', 'Orders', false],
      ['(?i)(?-i:o)rders', 'ORDERS', false],
      ['[[:alpha:]]+[[:digit:]]', 'abc1', true],
      ['[[:^alpha:]]', 'a', false],
      ['\\Qa.b\\E', 'a.b', true],
      ['\\Qa.b\\E', 'axb', false],
      ['a{01}', 'a', false],
      ['a{01}', 'a{01}', true],
      ['(^)?orders', 'orders', true],
      ['^*x', 'x', true],
      ['a😀?', 'a', true],
      ['\\Qab\\E+', 'abb', true],
      ['\\Qab\\E+', 'abab', false],
      ['\\Qab\\E{2}', 'abb', true],
      ['a\\Q\\E*', 'aa', true],
      ['(?i)[[:^upper:]]', 'a', false],
      ['(?i)[[:^upper:]]', '9', true],
      ['(?i-i)a', 'A', false],
      ['(?P<1a>x)', 'x', true],
      [`(?P<${'n'.repeat(44)}>x)`, 'x', true],
      ['a^b', 'ab', false],
      ['topic{', 'topic{', true],
      ['[\\d_]+', '12_3', true],
      ['.*', '', true],
    ];
    for (const [source, topic, expected] of cases)
      expect(TopicRegex.compile(source).matches(topic), `${source} on ${topic}`).toBe(expected);
  });

  it('refuses what it cannot read, naming where and why (INVALID_REQUEST)', () => {
    const cases: [string, RegExp][] = [
      ['(ab', /at character 0: missing \)/],
      ['ab)', /at character 2: unmatched \)/],
      ['[ab', /missing \]/],
      ['*a', /missing argument to repetition operator/],
      ['(?i)*', /missing argument to repetition operator/],
      ['a**', /a quantifier cannot follow a quantifier/],
      ['(?=a)', /unsupported \(\? group \(lookarounds and backreferences are not RE2\)/],
      ['\\bword', /word boundaries \(\\b\) are not supported/],
      ['\\pL', /Unicode classes are not supported/],
      ['[[:foo:]]', /an unknown class \[:foo:\]/],
      ['[z-a]', /out of order/],
      ['a{1001}', /over 1000/],
      ['x{1000000000000}', /over 1000/],
      ['\\Q\\E*', /missing argument to repetition operator/],
      ['a{3,2}', /max < min/],
      ['abc\\', /trailing \\/],
      ['(a{40}){60}', /more than 2000 instructions/],
      ['a'.repeat(1001), /1001 characters, above the limit of 1000/],
    ];
    for (const [source, reason] of cases) {
      let caught: unknown;
      try {
        TopicRegex.compile(source);
      } catch (error) {
        caught = error;
      }
      expect(isOffsetStoreError(caught, 'INVALID_REQUEST'), source).toBe(true);
      expect((caught as Error).message, source).toMatch(reason);
    }
  });
});

describe('TopicRegexResolver', () => {
  it('gives the sorted table ids of the matching topics, again once the catalog has grown', async () => {
    const topics = [
      { name: 'orders', tableId: 3 },
      { name: 'audit', tableId: 1 },
    ];
    const catalog = {
      get size() {
        return topics.length;
      },
      topics: () => topics,
    };
    const resolver = new TopicRegexResolver(catalog);
    expect(await resolver.tableIds('ord.*|audit')).toEqual([1, 3]);
    expect(await resolver.tableIds('ord.*')).toEqual([3]);
    topics.push({ name: 'orders-eu', tableId: 2 });
    expect(await resolver.tableIds('ord.*')).toEqual([2, 3]);
    await expect(resolver.tableIds('(')).rejects.toThrow(/missing \)/);
  });

  it('refuses an expression too costly to match over the catalog, every time it is asked', async () => {
    const topics = Array.from({ length: 200 }, (_, i) => ({
      name: `${i.toString(2).padStart(8, '0').replace(/0/g, 'a').replace(/1/g, 'b')}-x`,
      tableId: i + 1,
    }));
    const catalog = { size: topics.length, topics: () => topics };
    const resolver = new TopicRegexResolver(catalog, 2_000);
    expect(await resolver.tableIds('a.*')).toHaveLength(128);
    await expect(resolver.tableIds('.*a(a|b){5}.*')).rejects.toThrow(
      /too costly to match against the 200 topics \(over 2000 automaton steps\)/,
    );
    const refusal = await resolver.tableIds('.*a(a|b){5}.*').catch((error: unknown) => error);
    expect(isOffsetStoreError(refusal, 'INVALID_REQUEST')).toBe(true);
  });

  it('matches a costly expression over a large catalog in turns, letting the event loop serve others, and shares one pass among callers', async () => {
    // Long random names over {a, b} make the automaton of .*a(a|b){12} (4096 states) keep
    // growing and being dropped: ~3M steps for one pass over 300 of them.
    let seed = 1;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const topics = Array.from({ length: 300 }, (_, i) => ({
      name: Array.from({ length: 200 }, () => (random() < 0.5 ? 'a' : 'b')).join(''),
      tableId: i + 1,
    }));
    const catalog = { size: topics.length, topics: () => topics };
    const resolver = new TopicRegexResolver(catalog);
    const source = '.*a(a|b){12}';
    let turnsDuring = 0;
    let done = false;
    const tick = (): void => {
      if (done) return;
      turnsDuring++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const [first, second] = await Promise.all([
      resolver.tableIds(source),
      resolver.tableIds(source),
    ]);
    done = true;
    expect(first).toBe(second);
    expect(first.length).toBeGreaterThan(0);
    expect(turnsDuring, 'the event loop turned while the pass ran').toBeGreaterThan(1);
  });

  it('answers from a pass that started after it was asked, however the catalog grows meanwhile (it ran passes until one saw no creation)', async () => {
    // Every pass takes turns, and a topic is created in each turn: no pass ever sees a catalog
    // that did not change while it ran.
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const name = () => Array.from({ length: 200 }, () => (random() < 0.5 ? 'a' : 'b')).join('');
    const topics = Array.from({ length: 300 }, (_, i) => ({ name: name(), tableId: i + 1 }));
    const catalog = {
      get size() {
        return topics.length;
      },
      topics: () => [...topics],
    };
    let creating = true;
    const create = (): void => {
      if (!creating) return;
      topics.push({ name: name(), tableId: topics.length + 1 });
      setImmediate(create);
    };
    setImmediate(create);
    const resolver = new TopicRegexResolver(catalog);
    const asked = topics.length;
    const timedOut = Symbol('timed out');
    const outcome = await Promise.race([
      resolver.tableIds('.*a(a|b){12}'),
      new Promise((resolve) => setTimeout(() => resolve(timedOut), 10_000)),
    ]);
    creating = false;
    expect(outcome).not.toBe(timedOut);
    // Every topic there when it was asked is matched.
    const regex = TopicRegex.compile('.*a(a|b){12}');
    const expected = topics
      .slice(0, asked)
      .filter((t) => regex.matches(t.name))
      .map((t) => t.tableId);
    expect(expected.length).toBeGreaterThan(0);
    expect((outcome as number[]).filter((id) => id <= asked)).toEqual(expected);
  });
});
