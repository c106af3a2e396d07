/**
 * Everything the CLI writes goes through Output: results to stdout (human text, or JSON with
 * `--json`), warnings and errors to stderr. The formatting helpers keep human output consistent:
 * aligned tables, sizes in B/KiB/MiB/GiB, durations in ms/s/min, UTC timestamps.
 *
 * JSON output is one `JSON.stringify` of a result object per command (NDJSON, one object per line,
 * for streaming commands such as `log dump`), so it stays stable across releases: fields are only
 * ever added. With `--json` stderr holds JSON lines too: `{"warning": ...}` and `{"error": {...}}`.
 *
 * Human output escapes control characters (`printable`): group ids, member ids, metadata and
 * client ids come from clients (over the Kafka server, from anyone who can connect), and written raw
 * they could clear the operator's screen, retitle the terminal or forge table rows. Table cells and
 * names printed inside a line lose newlines too; a line keeps its own.
 */

/** C0 and C1 control characters, DEL, and the bidirectional overrides and isolates. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeControl(char: string): string {
  const code = char.charCodeAt(0);
  return (
    NAMED[char] ??
    (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`)
  );
}

/**
 * `text` with its control characters escaped (`\x1b`, `\n`, `\u202e`): what a terminal shows of a
 * string a client chose, without acting on it. With `keepNewlines`, newlines stay.
 */
export function printable(text: string, keepNewlines = false): string {
  return text.replace(CONTROL, (char) =>
    keepNewlines && char === '\n' ? char : escapeControl(char),
  );
}

/** Where output goes; `process.stdout`/`process.stderr` in production, buffers in tests. */
export interface OutputStreams {
  /** Results (text or JSON). */
  stdout: { write(text: string): unknown; isTTY?: boolean };
  /** Warnings, errors and progress. */
  stderr: { write(text: string): unknown; isTTY?: boolean };
}

/** One column of a table: its header and how its cells align. */
export interface Column {
  /** The header text. */
  header: string;
  /** How cells align; default left. */
  align?: 'left' | 'right';
}

/** The CLI's writer; see the module header. */
export class Output {
  /** True with `--json`: results are JSON, not text. */
  readonly json: boolean;
  readonly #streams: OutputStreams;

  /** Writes to `streams`; with `json`, results go out as JSON. */
  constructor(streams: OutputStreams, json: boolean) {
    this.#streams = streams;
    this.json = json;
  }

  /** True when stderr is a terminal (progress display is then worth drawing). */
  get interactive(): boolean {
    return this.#streams.stderr.isTTY === true;
  }

  /** Writes a line of human output to stdout. */
  line(text = ''): void {
    this.#streams.stdout.write(`${printable(text, true)}\n`);
  }

  /** Writes a JSON value as one line to stdout. */
  jsonLine(value: unknown): void {
    this.#streams.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** Writes a JSON result, pretty-printed, to stdout. */
  result(value: unknown): void {
    this.#streams.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** Writes an aligned table to stdout. */
  table(columns: readonly Column[], rows: readonly (readonly string[])[]): void {
    for (const text of renderTable(columns, rows)) this.line(text);
  }

  /** Writes a warning to stderr: `warning: <text>`, or with `--json` the line `{"warning": text}`. */
  warn(text: string): void {
    this.#streams.stderr.write(
      this.json ? `${JSON.stringify({ warning: text })}\n` : `warning: ${printable(text, true)}\n`,
    );
  }

  /** Writes raw text to stderr (errors, progress). */
  stderr(text: string): void {
    this.#streams.stderr.write(text);
  }
}

/** Renders a table as lines: headers, then rows, columns separated by two spaces, no trailing blanks. */
export function renderTable(
  columns: readonly Column[],
  rows: readonly (readonly string[])[],
): string[] {
  rows = rows.map((r) => r.map((cell) => printable(cell)));
  const widths = columns.map((c, i) =>
    Math.max(c.header.length, ...rows.map((r) => (r[i] ?? '').length)),
  );
  const render = (cells: readonly string[]): string =>
    columns
      .map((c, i) => {
        const cell = cells[i] ?? '';
        return c.align === 'right' ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!);
      })
      .join('  ')
      .trimEnd();
  return [render(columns.map((c) => c.header)), ...rows.map(render)];
}

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'];

/** A byte count for humans: `512 B`, `1.5 KiB`, `12.3 MiB`. */
export function formatBytes(bytes: number): string {
  if (Math.abs(bytes) < 1024) return `${bytes} B`;
  const shown = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1));
  let value = bytes / 1024;
  let unit = 0;
  // On what is shown: 1023.96 KiB shows as 1.0 MiB, not 1024 KiB.
  while (Math.abs(Number(shown(value))) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${shown(value)} ${UNITS[unit]}`;
}

/** A duration for humans: `0.42 ms`, `850 ms`, `1.24 s`, `45 s`, `2 min 03 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  // Each unit takes what rounds below its next one: 999.6 ms is 1.00 s, 59.999 s is 1 min 00 s.
  if (Math.round(ms) < 1000) return `${Math.round(ms)} ms`;
  if (ms < 59_995)
    return Number.isInteger(ms / 1000) ? `${ms / 1000} s` : `${(ms / 1000).toFixed(2)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, '0')} s`;
}

/** A count with thousands separators: `12,345`. */
export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** A wall-clock time in UTC to the second: `2024-05-01 12:00:03Z`; `-` for null. */
export function formatTimestamp(ms: number | null): string {
  if (ms === null) return '-';
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** A nullable number as a table cell (`-` for null). */
export function cell(value: number | string | null): string {
  return value === null ? '-' : String(value);
}

/** A change as a percentage of `before`: `-90.1%`. */
export function formatPercentChange(before: number, after: number): string {
  if (before === 0) return '0%';
  const change = ((after - before) / before) * 100;
  return `${change > 0 ? '+' : ''}${change.toFixed(1)}%`;
}
