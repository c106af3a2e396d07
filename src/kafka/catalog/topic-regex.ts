/**
 * Regular expressions of KIP-848 subscriptions (`SubscribedTopicRegex`), matched in linear time.
 *
 * A member may subscribe by a regular expression; its topics are every topic of the catalog whose
 * whole name the expression matches (Kafka's coordinator uses RE2/J's `matches()`, a full match).
 * The expression comes from the network, so it is never given to a backtracking engine (JavaScript's
 * RegExp takes exponential time on `(a+)+b` against a long run of `a`): it is parsed here and
 * compiled to a Thompson NFA, run as the DFA whose states are the NFA's sets of live instructions,
 * built lazily as names need them (at most DFA_STATES_MAX kept; past it they are built again), so a
 * character costs one table lookup once its state is built, and building a state at most two passes
 * over the program: whatever the expression, a match costs at most (name length + 1) x (program
 * size) steps, and the resolver bounds what one pass over the catalog may cost in all.
 *
 * Syntax (RE2's, for the characters topic names can hold, `[a-zA-Z0-9._-]`): literals, `.`,
 * classes `[...]` with ranges, `^` negation and `[:alpha:]`-style ASCII classes, the escapes
 * `\d \D \w \W \s \S` (also inside classes), `\Q...\E` and `\` before any punctuation, groups
 * `(...)`, `(?:...)`, `(?P<name>...)`, `(?<name>...)`, flags `(?i)`, `(?i:...)`, `(?-i)` (`m`, `s`
 * and `U` are read and change nothing for a whole name without newlines), alternation `|`, the
 * quantifiers `* + ? {n} {n,} {n,m}` (each also lazy with a trailing `?`, which does not change
 * whether a whole name matches; counts as RE2 reads them, so `{01}` is literal text), and the
 * anchors `^ $ \A \z` (a full match implies them; they still fail where they cannot hold, as in
 * `a^b`). Refused, with the position and the reason: word boundaries `\b \B` and Unicode classes
 * `\p` (RE2 has them; topic names are ASCII, and a class does the work), what RE2 does not have
 * (lookarounds, backreferences), an expression over PATTERN_CHARS_MAX characters, and one whose
 * program would exceed PROGRAM_MAX instructions (counted from the parse tree before anything is
 * emitted: a counted repetition is expanded, so `(a{40}){60}` is too large, while a repetition of
 * nothing, `(){1000}`, is nothing).
 *
 * Program: instructions in an array; `char` consumes one character of its set (a 128-entry table:
 * topic names are ASCII, so any other character never matches), `split` continues at both targets,
 * `jump` at its target, `begin`/`end` hold only at the first/last position, `match` accepts.
 */
import { OffsetStoreError } from '../../errors/index.js';
import { nextTurn } from '../../util/index.js';

/** Longest expression accepted. */
export const PATTERN_CHARS_MAX = 1000;
/** Most instructions a compiled expression may have. */
export const PROGRAM_MAX = 2000;
/** Repetition counts accepted in `{n,m}` (RE2's limit). */
const REPEAT_MAX = 1000;

type CharSet = Uint8Array;

type Node =
  | { readonly kind: 'set'; readonly set: CharSet }
  | { readonly kind: 'begin' }
  | { readonly kind: 'end' }
  | { readonly kind: 'concat'; readonly parts: readonly Node[] }
  | { readonly kind: 'alt'; readonly options: readonly Node[] }
  | { readonly kind: 'repeat'; readonly node: Node; readonly min: number; readonly max: number };

type Instruction =
  | { op: 'char'; set: CharSet }
  | { op: 'split'; x: number; y: number }
  | { op: 'jump'; x: number }
  | { op: 'begin' }
  | { op: 'end' }
  | { op: 'match' };

/** The reason an expression is refused, with where. */
export class TopicRegexError extends OffsetStoreError {
  constructor(message: string) {
    super('INVALID_REQUEST', message);
    this.name = 'TopicRegexError';
  }
}

const emptySet = (): CharSet => new Uint8Array(128);

function rangeSet(ranges: readonly (readonly [string, string])[]): CharSet {
  const set = emptySet();
  for (const [from, to] of ranges)
    for (let c = from.charCodeAt(0); c <= to.charCodeAt(0); c++) set[c] = 1;
  return set;
}

/** Adds every character of `members` to `set`. */
function addAll(set: CharSet, members: CharSet): void {
  for (let c = 0; c < 128; c++) if (members[c] === 1) set[c] = 1;
}

function negated(set: CharSet): CharSet {
  const out = emptySet();
  for (let c = 0; c < 128; c++) out[c] = set[c] === 1 ? 0 : 1;
  return out;
}

/** `set` with both cases of every letter in it (the `i` flag). */
function caseFolded(set: CharSet): CharSet {
  const out = set.slice();
  for (let c = 65; c <= 90; c++) if (set[c] === 1 || set[c + 32] === 1) out[c] = out[c + 32] = 1;
  return out;
}

const DIGIT = rangeSet([['0', '9']]);
const WORD = rangeSet([
  ['0', '9'],
  ['A', 'Z'],
  ['a', 'z'],
  ['_', '_'],
]);
const SPACE = rangeSet([
  ['\t', '\n'],
  ['\f', '\r'],
  [' ', ' '],
]);
/** `.`: any character but a newline (RE2's default; names hold no newline, so `(?s)` changes nothing). */
const ANY = negated(rangeSet([['\n', '\n']]));

/** RE2's ASCII classes `[[:name:]]`. */
const POSIX_CLASSES: Readonly<Record<string, CharSet>> = {
  alnum: rangeSet([
    ['0', '9'],
    ['A', 'Z'],
    ['a', 'z'],
  ]),
  alpha: rangeSet([
    ['A', 'Z'],
    ['a', 'z'],
  ]),
  ascii: rangeSet([['\u0000', '\u007f']]),
  blank: rangeSet([
    ['\t', '\t'],
    [' ', ' '],
  ]),
  cntrl: rangeSet([
    ['\u0000', '\u001f'],
    ['\u007f', '\u007f'],
  ]),
  digit: DIGIT,
  graph: rangeSet([['!', '~']]),
  lower: rangeSet([['a', 'z']]),
  print: rangeSet([[' ', '~']]),
  punct: rangeSet([
    ['!', '/'],
    [':', '@'],
    ['[', '`'],
    ['{', '~'],
  ]),
  space: rangeSet([
    ['\t', '\r'],
    [' ', ' '],
  ]),
  upper: rangeSet([['A', 'Z']]),
  word: WORD,
  xdigit: rangeSet([
    ['0', '9'],
    ['A', 'F'],
    ['a', 'f'],
  ]),
};

/** The set of one character (shared: a literal costs no table of its own). */
const SINGLE = Array.from({ length: 128 }, (_, c) => {
  const set = emptySet();
  set[c] = 1;
  return set;
});
const NOTHING = emptySet();

function charSet(code: number): CharSet {
  return code < 128 ? SINGLE[code]! : NOTHING;
}

/** A count `{n}`, `{n,}` or `{n,m}` as RE2 reads one (no leading zeros; else `{` is a literal). */
const COUNT = /^\{(0|[1-9][0-9]*)(,(0|[1-9][0-9]*)?)?\}/;

/** A recursive-descent parser of the syntax above. */
class Parser {
  readonly #source: string;
  #at = 0;
  /** The `i` flag, as set for the rest of the group being parsed. */
  #foldCase = false;

  constructor(source: string) {
    this.#source = source;
  }

  parse(): Node {
    const node = this.#alternation();
    if (this.#at < this.#source.length) throw this.#error('unmatched )');
    return node;
  }

  #error(reason: string, at = this.#at): TopicRegexError {
    return new TopicRegexError(
      `invalid regular expression ${JSON.stringify(this.#source.slice(0, 200))} at character ${at}: ${reason}`,
    );
  }

  #peek(): string | undefined {
    return this.#source[this.#at];
  }

  #alternation(): Node {
    const options = [this.#concatenation()];
    while (this.#peek() === '|') {
      this.#at++;
      options.push(this.#concatenation());
    }
    return options.length === 1 ? options[0]! : { kind: 'alt', options };
  }

  #concatenation(): Node {
    const parts: Node[] = [];
    for (let c = this.#peek(); c !== undefined && c !== '|' && c !== ')'; c = this.#peek()) {
      if (c === '\\' && this.#source[this.#at + 1] === 'Q') {
        // \Q...\E: each character a literal of its own, so a quantifier after it takes the last
        // one (or, after an empty run, what came before it), as in RE2.
        parts.push(...this.#quoted());
        if (this.#quantifierAhead()) {
          const last = parts.pop();
          if (last === undefined) throw this.#error('missing argument to repetition operator');
          parts.push(this.#quantify(last));
        }
        continue;
      }
      const atom = this.#atom();
      if (atom === null) {
        if (this.#quantifierAhead())
          throw this.#error('missing argument to repetition operator', this.#at);
        continue;
      }
      parts.push(this.#quantifierAhead() ? this.#quantify(atom) : atom);
    }
    return parts.length === 1 ? parts[0]! : { kind: 'concat', parts };
  }

  #quantifierAhead(): boolean {
    const c = this.#peek();
    return c === '*' || c === '+' || c === '?' || (c === '{' && this.#countAhead());
  }

  /** `node` under the quantifier at the current position. */
  #quantify(node: Node): Node {
    const c = this.#peek();
    let min: number;
    let max: number;
    if (c === '*') [min, max] = [0, Infinity];
    else if (c === '+') [min, max] = [1, Infinity];
    else if (c === '?') [min, max] = [0, 1];
    else [min, max] = this.#count();
    if (c !== '{') this.#at++;
    // A lazy quantifier matches the same whole names; a second quantifier is refused, as by RE2.
    if (this.#peek() === '?') this.#at++;
    if (this.#quantifierAhead())
      throw this.#error('a quantifier cannot follow a quantifier', this.#at);
    return { kind: 'repeat', node, min, max };
  }

  /** After `\Q`: the characters up to `\E` (or the end), each as a literal. */
  #quoted(): Node[] {
    this.#at += 2;
    const end = this.#source.indexOf('\\E', this.#at);
    const quoted = this.#source.slice(this.#at, end < 0 ? undefined : end);
    this.#at = end < 0 ? this.#source.length : end + 2;
    return [...quoted].map((ch) => ({
      kind: 'set' as const,
      set: this.#fold(charSet(ch.codePointAt(0)!)),
    }));
  }

  #countAhead(): boolean {
    return COUNT.test(this.#source.slice(this.#at, this.#at + 48));
  }

  #count(): [number, number] {
    const match = COUNT.exec(this.#source.slice(this.#at, this.#at + 48))!;
    const min = Number(match[1]);
    const max = match[2] === undefined ? min : match[3] === undefined ? Infinity : Number(match[3]);
    if (min > REPEAT_MAX || (max !== Infinity && max > REPEAT_MAX))
      throw this.#error(`a repetition count over ${REPEAT_MAX}`);
    if (max < min) throw this.#error(`the repetition {${min},${max}} has max < min`);
    this.#at += match[0].length;
    return [min, max];
  }

  /** One atom; null for a flag group that only sets flags. */
  #atom(): Node | null {
    const c = this.#peek()!;
    if (c === '(') return this.#group();
    if (c === '[') return { kind: 'set', set: this.#fold(this.#class()) };
    if (c === '*' || c === '+' || c === '?')
      throw this.#error('missing argument to repetition operator');
    if (c === '.') {
      this.#at++;
      return { kind: 'set', set: ANY };
    }
    if (c === '^' || c === '$') {
      this.#at++;
      return { kind: c === '^' ? 'begin' : 'end' };
    }
    if (c === '\\') {
      this.#at++;
      const escaped = this.#escape(false);
      if (escaped === 'begin' || escaped === 'end') return { kind: escaped };
      return {
        kind: 'set',
        set: this.#fold(typeof escaped === 'number' ? charSet(escaped) : escaped),
      };
    }
    // One code point (a character outside the BMP is two UTF-16 units; it never matches a name).
    const code = this.#source.codePointAt(this.#at)!;
    this.#at += code > 0xffff ? 2 : 1;
    return { kind: 'set', set: this.#fold(charSet(code)) };
  }

  #fold(set: CharSet): CharSet {
    return this.#foldCase ? caseFolded(set) : set;
  }

  #group(): Node | null {
    const start = this.#at;
    this.#at++;
    const outerFoldCase = this.#foldCase;
    if (this.#peek() === '?') {
      const rest = this.#source.slice(this.#at);
      const named = /^\?P?<[A-Za-z0-9_]+>/.exec(rest);
      const flags = /^\?([imsU]*)(-([imsU]*))?([:)])/.exec(rest);
      if (named !== null) this.#at += named[0].length;
      else if (flags !== null && (flags[1] !== '' || flags[2] !== undefined || flags[4] === ':')) {
        if (flags[2] !== undefined && flags[3] === '')
          throw this.#error('a flag group with nothing after -', start);
        this.#at += flags[0].length;
        // m, s and U change nothing for a whole-name match of a name without newlines.
        // Applied in order, as RE2 does: (?i-i) ends with i off.
        if (flags[1]!.includes('i')) this.#foldCase = true;
        if ((flags[3] ?? '').includes('i')) this.#foldCase = false;
        // (?flags): for the rest of the enclosing group (its #group restores the outer flags).
        if (flags[4] === ')') return null;
      } else
        throw this.#error(
          'an unsupported (? group (lookarounds and backreferences are not RE2)',
          start,
        );
    }
    const inner = this.#alternation();
    if (this.#peek() !== ')') throw this.#error('missing )', start);
    this.#at++;
    this.#foldCase = outerFoldCase;
    return inner;
  }

  /** After a `\`: a class, an anchor, or one character (its code). */
  #escape(inClass: boolean): CharSet | number | 'begin' | 'end' {
    const c = this.#peek();
    if (c === undefined) throw this.#error('trailing \\');
    this.#at++;
    switch (c) {
      case 'd':
        return DIGIT;
      case 'D':
        return negated(DIGIT);
      case 'w':
        return WORD;
      case 'W':
        return negated(WORD);
      case 's':
        return SPACE;
      case 'S':
        return negated(SPACE);
      case 't':
        return 9;
      case 'n':
        return 10;
      case 'r':
        return 13;
      case 'f':
        return 12;
      case 'v':
        return 11;
      case 'a':
        return 7;
    }
    if (!inClass && c === 'A') return 'begin';
    if (!inClass && c === 'z') return 'end';
    if (c === 'Q') throw this.#error('\\Q inside a class is not supported', this.#at - 2);
    if (/[!-/:-@[-`{-~]/.test(c)) return c.charCodeAt(0);
    if (c === 'b' || c === 'B')
      throw this.#error(`word boundaries (\\${c}) are not supported`, this.#at - 2);
    if (c === 'p' || c === 'P')
      throw this.#error(
        'Unicode classes are not supported (topic names are ASCII: use [A-Za-z] and the like)',
        this.#at - 2,
      );
    throw this.#error(`the escape \\${c} is not supported`, this.#at - 2);
  }

  #class(): CharSet {
    const start = this.#at;
    this.#at++;
    let negate = false;
    if (this.#peek() === '^') {
      negate = true;
      this.#at++;
    }
    const set = emptySet();
    let first = true;
    for (;;) {
      const c = this.#peek();
      if (c === undefined) throw this.#error('missing ]', start);
      if (c === ']' && !first) break;
      first = false;
      const posix =
        c === '[' && this.#source[this.#at + 1] === ':'
          ? /^\[:(\^?)([a-z]+):\]/.exec(this.#source.slice(this.#at, this.#at + 16))
          : null;
      if (posix !== null) {
        const named = POSIX_CLASSES[posix[2]!];
        if (named === undefined) throw this.#error(`an unknown class [:${posix[2]}:]`);
        // Folded before it is negated, as RE2 does: (?i)[[:^upper:]] takes no letter.
        const members = posix[1] === '^' ? negated(this.#fold(named)) : named;
        addAll(set, members);
        this.#at += posix[0].length;
        continue;
      }
      const low = this.#classChar();
      if (typeof low !== 'number') {
        addAll(set, low);
        continue;
      }
      if (
        this.#peek() === '-' &&
        this.#source[this.#at + 1] !== ']' &&
        this.#at + 1 < this.#source.length
      ) {
        this.#at++;
        const high = this.#classChar();
        if (typeof high !== 'number') throw this.#error('a range cannot end in a class');
        if (high < low) throw this.#error('a range out of order');
        for (let i = low; i <= Math.min(high, 127); i++) set[i] = 1;
      } else if (low < 128) set[low] = 1;
    }
    this.#at++;
    // The `i` flag folds before negation: [^a] under (?i) excludes A too, as in RE2.
    const folded = this.#fold(set);
    return negate ? negated(folded) : folded;
  }

  /** One character of a class (its code) or an escaped class. */
  #classChar(): number | CharSet {
    const code = this.#source.codePointAt(this.#at)!;
    if (code !== 0x5c) {
      this.#at += code > 0xffff ? 2 : 1;
      return code;
    }
    this.#at++;
    const escaped = this.#escape(true);
    if (escaped === 'begin' || escaped === 'end') throw this.#error('an anchor in a class');
    return escaped;
  }
}

/** Instructions `node` compiles to, saturating past PROGRAM_MAX (memoized: repeats nest). */
function sizeOf(node: Node, memo: Map<Node, number>): number {
  const known = memo.get(node);
  if (known !== undefined) return known;
  const cap = (n: number) => Math.min(n, PROGRAM_MAX + 1);
  let size: number;
  switch (node.kind) {
    case 'set':
    case 'begin':
    case 'end':
      size = 1;
      break;
    case 'concat':
      size = cap(node.parts.reduce((sum, part) => sum + sizeOf(part, memo), 0));
      break;
    case 'alt':
      size = cap(
        node.options.reduce((sum, option) => sum + sizeOf(option, memo), 0) +
          2 * (node.options.length - 1),
      );
      break;
    case 'repeat': {
      const body = sizeOf(node.node, memo);
      size =
        body === 0
          ? 0
          : cap(
              node.min * body +
                (node.max === Infinity ? body + 2 : (node.max - node.min) * (body + 1)),
            );
      break;
    }
  }
  memo.set(node, size);
  return size;
}

/**
 * Compiles a node to instructions appended to `program` (its size checked before with `sizes`,
 * the memo of that sizeOf).
 */
function emit(node: Node, program: Instruction[], sizes: Map<Node, number>): void {
  switch (node.kind) {
    case 'set':
      program.push({ op: 'char', set: node.set });
      return;
    case 'begin':
    case 'end':
      program.push({ op: node.kind });
      return;
    case 'concat':
      for (const part of node.parts) emit(part, program, sizes);
      return;
    case 'alt': {
      // split L1, next; L1: option; jump end; next: split ... ; last option; end:
      const jumps: { op: 'jump'; x: number }[] = [];
      node.options.forEach((option, i) => {
        if (i < node.options.length - 1) {
          const split = { op: 'split' as const, x: program.length + 1, y: 0 };
          program.push(split);
          emit(option, program, sizes);
          const jump = { op: 'jump' as const, x: 0 };
          program.push(jump);
          jumps.push(jump);
          split.y = program.length;
        } else emit(option, program, sizes);
      });
      for (const jump of jumps) jump.x = program.length;
      return;
    }
    case 'repeat': {
      // A body that compiles to nothing repeats to nothing (`(){1000}`).
      if (sizeOf(node.node, sizes) === 0) return;
      for (let i = 0; i < node.min; i++) emit(node.node, program, sizes);
      if (node.max === Infinity) {
        // L: split body, out; body; jump L; out:
        const split = { op: 'split' as const, x: program.length + 1, y: 0 };
        const loop = program.length;
        program.push(split);
        emit(node.node, program, sizes);
        program.push({ op: 'jump', x: loop });
        split.y = program.length;
        return;
      }
      // (body(body(...)?)?)? for the optional copies.
      const splits: { op: 'split'; x: number; y: number }[] = [];
      for (let i = node.min; i < node.max; i++) {
        const split = { op: 'split' as const, x: program.length + 1, y: 0 };
        program.push(split);
        splits.push(split);
        emit(node.node, program, sizes);
      }
      for (const split of splits) split.y = program.length;
      return;
    }
  }
}

/**
 * A state of the automaton built lazily from the program (a DFA state): the consuming instructions
 * (and `match`) live at one position, and where each character leads, filled in as names need it.
 */
interface DfaState {
  /** Consuming instructions and `match`, reached at a position that is not the name's end. */
  readonly live: readonly number[];
  /** Whether the name is matched if it ends here. */
  readonly acceptsAtEnd: boolean;
  /** By character code: the state after it, undefined until computed. */
  readonly next: (DfaState | undefined)[];
}

/** Most DFA states kept per expression; past it they are dropped and built again as needed. */
const DFA_STATES_MAX = 4096;

/** A compiled subscription expression. */
export class TopicRegex {
  readonly source: string;
  readonly #program: readonly Instruction[];
  /** Per instruction: the closure it was last reached in (a generation mark). */
  readonly #seen: Uint32Array;
  #generation = 0;
  #states = new Map<string, DfaState>();
  #start: DfaState | undefined;
  /** Instructions visited building states: the work matching has cost so far. */
  #steps = 0;

  private constructor(source: string, program: Instruction[]) {
    this.source = source;
    this.#program = program;
    this.#seen = new Uint32Array(program.length);
  }

  /** Compiles `source`; throws TopicRegexError (INVALID_REQUEST) naming where and why it is refused. */
  static compile(source: string): TopicRegex {
    if (source.length > PATTERN_CHARS_MAX)
      throw new TopicRegexError(
        `invalid regular expression: ${source.length} characters, above the limit of ${PATTERN_CHARS_MAX}`,
      );
    const node = new Parser(source).parse();
    const sizes = new Map<Node, number>();
    if (sizeOf(node, sizes) > PROGRAM_MAX)
      throw new TopicRegexError(
        `invalid regular expression ${JSON.stringify(source.slice(0, 100))}: it compiles to more than ${PROGRAM_MAX} instructions`,
      );
    const program: Instruction[] = [];
    emit(node, program, sizes);
    program.push({ op: 'match' });
    return new TopicRegex(source, program);
  }

  /** Forgets the automaton's states (its memory); they are built again as names need them. */
  dropStates(): void {
    this.#states = new Map();
    this.#start = undefined;
  }

  /**
   * Instructions visited so far building automaton states: what matching has cost, beyond one
   * table lookup per character (a caller bounds its work with it).
   */
  get steps(): number {
    return this.#steps;
  }

  /** Whether the expression matches the whole of `name`. */
  matches(name: string): boolean {
    let state = (this.#start ??= this.#state([0], true));
    for (let i = 0; i < name.length; i++) {
      const code = name.charCodeAt(i);
      if (code >= 128) return false;
      let next = state.next[code];
      if (next === undefined) {
        this.#steps += state.live.length;
        const seeds: number[] = [];
        for (const pc of state.live) {
          const instruction = this.#program[pc]!;
          if (instruction.op === 'char' && instruction.set[code] === 1) seeds.push(pc + 1);
        }
        next = this.#state(seeds, false);
        state.next[code] = next;
      }
      if (next.live.length === 0 && !next.acceptsAtEnd) return false;
      state = next;
    }
    return state.acceptsAtEnd;
  }

  /** The state reached from `seeds` (instructions before their closure), built once. */
  #state(seeds: readonly number[], atStart: boolean): DfaState {
    const key = `${atStart ? 's' : ''}${seeds.join(',')}`;
    this.#steps += seeds.length;
    const known = this.#states.get(key);
    if (known !== undefined) return known;
    // Past the bound every state goes (the start one too): those built from here start a new set.
    if (this.#states.size >= DFA_STATES_MAX) this.dropStates();
    const live = this.#closure(seeds, atStart, false);
    const atEnd = this.#closure(seeds, atStart, true);
    const state: DfaState = {
      live,
      acceptsAtEnd: atEnd.some((pc) => this.#program[pc]!.op === 'match'),
      next: new Array<DfaState | undefined>(128),
    };
    this.#states.set(key, state);
    return state;
  }

  /**
   * The consuming instructions and `match` that `seeds` reach without consuming a character, at the
   * name's start or not, at its end or not; sorted, each once.
   */
  #closure(seeds: readonly number[], atStart: boolean, atEnd: boolean): number[] {
    if (++this.#generation === 0xffffffff) {
      this.#seen.fill(0);
      this.#generation = 1;
    }
    const generation = this.#generation;
    const list: number[] = [];
    const stack = [...seeds].reverse();
    while (stack.length > 0) {
      const p = stack.pop()!;
      if (this.#seen[p] === generation) continue;
      this.#seen[p] = generation;
      this.#steps++;
      const instruction = this.#program[p]!;
      switch (instruction.op) {
        case 'jump':
          stack.push(instruction.x);
          break;
        case 'split':
          stack.push(instruction.y, instruction.x);
          break;
        case 'begin':
          if (atStart) stack.push(p + 1);
          break;
        case 'end':
          if (atEnd) stack.push(p + 1);
          break;
        default:
          list.push(p);
      }
    }
    return list.sort((a, b) => a - b);
  }
}

/** Expressions whose compiled form and matches are kept (the oldest used is dropped past it). */
const RESOLVED_MAX = 128;
/**
 * Most automaton steps (instructions visited building states and transitions) one pass over the
 * catalog may take: about 1 s of the event loop here at worst. Typical expressions take a few
 * steps per topic; one whose automaton keeps growing over many long distinct names is refused
 * rather than let hold up the server longer.
 */
export const RESOLUTION_STEPS_MAX = 10_000_000;
/**
 * Automaton steps a pass takes before it lets the event loop serve others (~20 ms here): a costly
 * expression, sent afresh by a client with every heartbeat, costs that client's answers their time,
 * not every other connection's.
 */
const STEPS_PER_TURN = 200_000;

interface Resolved {
  readonly regex: TopicRegex;
  catalogSize: number;
  /** The matches, or why the expression is refused over this catalog. */
  outcome: readonly number[] | TopicRegexError;
  /** The pass under way, if any (one at a time per expression: the automaton is shared). */
  pending: Promise<void> | undefined;
}

/**
 * The table ids of the catalog topics an expression matches, kept per expression until the catalog
 * changes size (topics are created, never removed or renamed, so a size seen before is the same
 * set of topics). Heartbeats of the members of one group send the same expression again and again;
 * it is compiled once and run over the catalog once per change of the catalog.
 */
export class TopicRegexResolver {
  readonly #catalog: {
    readonly size: number;
    topics(): readonly { name: string; tableId: number }[];
  };
  readonly #resolved = new Map<string, Resolved>();
  readonly #stepsMax: number;

  /** `stepsMax`: most automaton steps one pass over the catalog may take (RESOLUTION_STEPS_MAX). */
  constructor(
    catalog: { readonly size: number; topics(): readonly { name: string; tableId: number }[] },
    stepsMax = RESOLUTION_STEPS_MAX,
  ) {
    this.#catalog = catalog;
    this.#stepsMax = stepsMax;
  }

  /**
   * The table ids matched by `source`, sorted; rejects with a TopicRegexError for an expression
   * refused. A pass over the catalog goes in turns (STEPS_PER_TURN); callers asking for the same
   * expression meanwhile share it.
   */
  async tableIds(source: string): Promise<readonly number[]> {
    let entry = this.#resolved.get(source);
    if (entry !== undefined) {
      this.#resolved.delete(source);
      this.#resolved.set(source, entry);
    } else {
      entry = {
        regex: TopicRegex.compile(source),
        catalogSize: -1,
        outcome: [],
        pending: undefined,
      };
      if (this.#resolved.size >= RESOLVED_MAX)
        this.#resolved.delete(this.#resolved.keys().next().value!);
      this.#resolved.set(source, entry);
    }
    const resolved = entry;
    // A pass that started once this was asked will do (topics are only ever added): waiting for one
    // that saw no creation while it ran could wait for ever while clients keep creating topics.
    const asked = this.#catalog.size;
    while (resolved.catalogSize < asked) {
      if (resolved.pending === undefined) {
        const size = this.#catalog.size;
        resolved.pending = this.#match(resolved.regex)
          .then((outcome) => {
            resolved.outcome = outcome;
            resolved.catalogSize = size;
          })
          .finally(() => {
            resolved.pending = undefined;
          });
      }
      await resolved.pending;
    }
    if (resolved.outcome instanceof TopicRegexError) throw resolved.outcome;
    return resolved.outcome;
  }

  /** One pass over the catalog; the automaton's states are dropped after it (only ids are kept). */
  async #match(regex: TopicRegex): Promise<number[] | TopicRegexError> {
    const ids: number[] = [];
    const stepsBefore = regex.steps;
    let turnAtSteps = stepsBefore + STEPS_PER_TURN;
    const topics = this.#catalog.topics();
    try {
      for (const topic of topics) {
        if (regex.matches(topic.name)) ids.push(topic.tableId);
        if (regex.steps - stepsBefore > this.#stepsMax)
          return new TopicRegexError(
            `regular expression ${JSON.stringify(regex.source.slice(0, 100))} is too costly to match against the ${topics.length} topics (over ${this.#stepsMax} automaton steps)`,
          );
        if (regex.steps >= turnAtSteps) {
          // States are dropped before each turn: passes of other expressions run between turns,
          // and only the running one holds an automaton (they add up otherwise: ~30 MB each).
          regex.dropStates();
          await nextTurn();
          turnAtSteps = regex.steps + STEPS_PER_TURN;
        }
      }
    } finally {
      regex.dropStates();
    }
    return ids.sort((a, b) => a - b);
  }
}
