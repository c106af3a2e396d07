/**
 * Printing for the benches: a banner naming the machine and scale, aligned text tables, markdown
 * tables (for the README), and number formats that keep units visible.
 */
import * as os from 'node:os';
import { benchScale } from './scale.js';

/** One column of a table. */
export interface Column<R> {
  header: string;
  value: (row: R) => string;
  /** Default: right for everything but the first column. */
  align?: 'left' | 'right';
}

/** Prints which bench runs, where, and at which scale. */
export function printBanner(title: string, notes: readonly string[] = []): void {
  const cpus = os.cpus();
  console.log(`\n## ${title}`);
  console.log(
    `node ${process.version}, ${cpus.length} x ${cpus[0]?.model.trim() ?? 'unknown cpu'}, tmpdir ${os.tmpdir()}, BENCH_SCALE=${benchScale()}`,
  );
  for (const note of notes) console.log(note);
}

function aligned<R>(columns: readonly Column<R>[], rows: readonly R[]): string[] {
  const cells = rows.map((row) => columns.map((c) => c.value(row)));
  const widths = columns.map((c, i) =>
    Math.max(c.header.length, ...cells.map((r) => r[i]!.length)),
  );
  const pad = (text: string, i: number) => {
    const left = (columns[i]!.align ?? (i === 0 ? 'left' : 'right')) === 'left';
    return left ? text.padEnd(widths[i]!) : text.padStart(widths[i]!);
  };
  const lines = [
    columns.map((c, i) => pad(c.header, i)).join('  '),
    widths.map((w) => '-'.repeat(w)).join('  '),
  ];
  for (const row of cells) lines.push(row.map(pad).join('  '));
  return lines;
}

/** Prints an aligned text table under a title. */
export function printTable<R>(
  title: string,
  columns: readonly Column<R>[],
  rows: readonly R[],
): void {
  console.log(`\n${title}`);
  for (const line of aligned(columns, rows)) console.log(line);
}

/** A GitHub markdown table. */
export function markdownTable<R>(columns: readonly Column<R>[], rows: readonly R[]): string {
  const escape = (text: string) => text.replaceAll('|', '\\|');
  const lines = [
    `| ${columns.map((c) => escape(c.header)).join(' | ')} |`,
    `|${columns.map((c, i) => ((c.align ?? (i === 0 ? 'left' : 'right')) === 'left' ? ' --- ' : ' ---: ')).join('|')}|`,
  ];
  for (const row of rows) lines.push(`| ${columns.map((c) => escape(c.value(row))).join(' | ')} |`);
  return lines.join('\n');
}

/** Three significant digits with a k/M/G suffix: 1234567 -> "1.23M". */
export function formatCount(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs < 1000 && Number.isInteger(value)) return String(value);
  const [scaled, suffix] =
    abs >= 1e9
      ? [value / 1e9, 'G']
      : abs >= 1e6
        ? [value / 1e6, 'M']
        : abs >= 1e3
          ? [value / 1e3, 'k']
          : [value, ''];
  return `${significant(scaled)}${suffix}`;
}

/** Milliseconds with a precision that suits the size. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 1) return `${significant(ms)} ms`;
  if (ms >= 0.001) return `${significant(ms * 1000)} us`;
  return `${significant(ms * 1e6)} ns`;
}

/** Nanoseconds, for per-operation costs. */
export function formatNs(ns: number): string {
  return ns >= 1000 ? `${significant(ns / 1000)} us` : `${significant(ns)} ns`;
}

/** Bytes in binary units. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return String(bytes);
  const abs = Math.abs(bytes);
  if (abs >= 1024 ** 3) return `${significant(bytes / 1024 ** 3)} GiB`;
  if (abs >= 1024 ** 2) return `${significant(bytes / 1024 ** 2)} MiB`;
  if (abs >= 1024) return `${significant(bytes / 1024)} KiB`;
  return `${Math.round(bytes)} B`;
}

/** A ratio as "3.21x". */
export function formatRatio(value: number): string {
  if (!Number.isFinite(value)) return '-';
  return `${value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2)}x`;
}

/** A signed percentage change: +12.3%. */
export function formatChange(fraction: number): string {
  if (!Number.isFinite(fraction)) return '-';
  return `${fraction >= 0 ? '+' : ''}${(fraction * 100).toFixed(1)}%`;
}

/** "met" / "NOT met" for a target line. */
export function verdict(met: boolean): string {
  return met ? 'met' : 'NOT met';
}

function significant(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}
