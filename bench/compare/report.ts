/**
 * Turns the cells of a run (one per workload and adapter) into the three outputs: a terminal table,
 * `bench/results/compare-<date>.json` (everything, for tooling) and `compare-<date>.md` (the table for
 * the README). Every row names the store's durability mode. The last column is offset-store's
 * advantage over the peer on the workload's headline: offset-store/peer for throughputs,
 * peer/offset-store for times and bytes, so > 1 always means offset-store is better.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SUBJECT_ID } from './adapter.js';
import type { UnavailableAdapter } from './adapters/index.js';
import type { CompareConfig, WorkloadId } from './compare-config.js';
import { machineLine, type MachineDescription } from './machine.js';
import type { Metric, Target, WorkloadResult } from './workloads/workload.js';

/**
 * The outcome of one workload on one adapter. Over several runs, `result` is the run with the median
 * headline and `runValues` holds every run's headline value, in run order (undefined where a run failed).
 */
export interface Cell {
  workload: WorkloadId;
  adapterId: string;
  adapterName: string;
  durability: string;
  result?: WorkloadResult;
  runValues?: (number | undefined)[];
  error?: string;
}

/** A workload as described in the report. */
export interface WorkloadInfo {
  id: WorkloadId;
  title: string;
  /** False where a ratio would mislead (memory: the peers keep almost nothing on the heap). */
  peerRatio: boolean;
  targets: Target[];
}

/** Everything a run produced. */
export interface CompareReport {
  createdAt: string;
  repoCommit: string;
  config: CompareConfig;
  machine: MachineDescription;
  /** How many times every workload ran on every store (the figures are medians, with ranges). */
  runs: number;
  unavailable: UnavailableAdapter[];
  workloads: WorkloadInfo[];
  cells: Cell[];
}

/** offset-store's advantage over a peer on one workload's headline (> 1 = offset-store better). */
export function advantage(subject: Metric, peer: Metric): number | undefined {
  if (!(subject.value > 0 && peer.value > 0)) return undefined;
  return subject.better === 'higher' ? subject.value / peer.value : peer.value / subject.value;
}

/** Human form of an advantage ratio: two decimals, or two significant digits below 0.1. */
export function formatRatio(ratio: number): string {
  return `${ratio >= 0.1 ? ratio.toFixed(2) : ratio.toPrecision(2)}x`;
}

/** Median, minimum and maximum of some numbers. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  count: number;
}

/** The spread of `values` (undefined when there are none). */
export function spreadOf(values: readonly number[]): Spread | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted.at(-1)!, count: sorted.length };
}

/**
 * offset-store's advantage over a peer, run by run (paired by run index): median and range. With one
 * run, the single ratio.
 */
export function advantageSpread(
  subject: Cell | undefined,
  peer: Cell | undefined,
): Spread | undefined {
  if (subject?.result === undefined || peer?.result === undefined) return undefined;
  const s = subject.runValues ?? [subject.result.headline.value];
  const p = peer.runValues ?? [peer.result.headline.value];
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(s.length, p.length); i++) {
    const sv = s[i];
    const pv = p[i];
    if (sv === undefined || pv === undefined) continue;
    const ratio = advantage(
      { ...subject.result.headline, value: sv },
      { ...peer.result.headline, value: pv },
    );
    if (ratio !== undefined) ratios.push(ratio);
  }
  return spreadOf(ratios);
}

/** `2.36x`, or `2.36x (2.10-2.60x)` over several runs. */
export function formatRatioSpread(spread: Spread): string {
  return spread.count <= 1 || spread.min === spread.max
    ? formatRatio(spread.median)
    : `${formatRatio(spread.median)} (${formatRatio(spread.min).slice(0, -1)}-${formatRatio(spread.max)})`;
}

/** A cell's headline: the median, with the range over several runs. */
function headlineText(cell: Cell): string {
  const headline = cell.result!.headline;
  const spread = spreadOf((cell.runValues ?? []).filter((v): v is number => v !== undefined));
  const range =
    spread === undefined || spread.count <= 1
      ? ''
      : ` (${formatValue(spread.min, headline.unit)}-${formatValue(spread.max, headline.unit)})`;
  return `${formatValue(headline.value, headline.unit)} ${headline.label}${range}`;
}

/** Human form of a metric value. */
export function formatValue(value: number, unit: Metric['unit']): string {
  switch (unit) {
    case 'ops/s':
      // The label carries the "/s" ("offsets/s").
      return value >= 1e6
        ? `${(value / 1e6).toFixed(2)}M`
        : value >= 1e3
          ? `${(value / 1e3).toFixed(1)}k`
          : value.toFixed(0);
    case 'ns':
      return value >= 1e9
        ? `${(value / 1e9).toFixed(2)} s`
        : value >= 1e6
          ? `${(value / 1e6).toFixed(2)} ms`
          : value >= 1e3
            ? `${(value / 1e3).toFixed(1)} µs`
            : `${value.toFixed(0)} ns`;
    case 'ms':
      return value >= 1e3
        ? `${(value / 1e3).toFixed(2)} s`
        : `${value.toFixed(value >= 100 ? 0 : 1)} ms`;
    case 'B':
      return `${value.toFixed(Math.abs(value) >= 100 ? 0 : 1)} B`;
    case 'x':
      return `${value.toFixed(2)}x`;
  }
}

interface Row {
  workload: string;
  store: string;
  durability: string;
  result: string;
  details: string;
  versus: string;
}

/** Rows of the comparison table, workload by workload, offset-store first. */
export function tableRows(report: CompareReport): Row[] {
  const rows: Row[] = [];
  for (const workload of report.workloads) {
    const cells = report.cells.filter((c) => c.workload === workload.id);
    const subject = cells.find((c) => c.adapterId === SUBJECT_ID);
    for (const cell of cells) {
      rows.push({
        workload: `(${workload.id}) ${workload.title}`,
        store: cell.adapterName,
        durability: cell.durability,
        result:
          cell.result === undefined ? `error: ${cell.error ?? 'no result'}` : headlineText(cell),
        details:
          cell.result === undefined
            ? ''
            : cell.result.details
                .map((m) => `${m.label} ${formatValue(m.value, m.unit)}`)
                .join(' · '),
        versus: versus(workload, subject, cell, report.config),
      });
    }
    if (subject === undefined && report.unavailable.some((u) => u.id === SUBJECT_ID)) {
      rows.push({
        workload: `(${workload.id}) ${workload.title}`,
        store: 'offset-store',
        durability: "durability 'fsync'",
        result: 'not run',
        details: report.unavailable.find((u) => u.id === SUBJECT_ID)?.reason ?? '',
        versus: '',
      });
    }
  }
  return rows;
}

/** The targets of `workload` and whether offset-store met them (on the median over the runs). */
export function targetVerdict(workload: WorkloadInfo, report: CompareReport): string {
  const cell = (adapterId: string): Cell | undefined =>
    report.cells.find((c) => c.workload === workload.id && c.adapterId === adapterId);
  const subject = cell(SUBJECT_ID);
  return workload.targets
    .map((target) => {
      if (subject?.result === undefined) return `${target.text}: not measured`;
      if (target.kind === 'absolute') {
        if (target.onlyAtScale !== undefined && target.onlyAtScale !== report.config.scale)
          return `${target.text}: checked at COMPARE_SCALE=${target.onlyAtScale}`;
        return `${target.text}: ${subject.result.headline.value <= target.max ? 'met' : 'NOT met'}`;
      }
      const spread = advantageSpread(subject, cell(target.peerId));
      return spread === undefined
        ? `${target.text}: not measured`
        : `${target.text}: ${formatRatioSpread(spread)}, ${spread.median >= target.factor ? 'met' : 'NOT met'}`;
    })
    .join('; ');
}

function versus(
  workload: WorkloadInfo,
  subject: Cell | undefined,
  cell: Cell,
  config: CompareConfig,
): string {
  if (cell.adapterId === SUBJECT_ID) {
    const absolute = workload.targets.find(
      (t): t is Extract<Target, { kind: 'absolute' }> => t.kind === 'absolute',
    );
    if (absolute === undefined || cell.result === undefined) return '—';
    if (absolute.onlyAtScale !== undefined && absolute.onlyAtScale !== config.scale)
      return `target ${absolute.text} (checked at COMPARE_SCALE=${absolute.onlyAtScale})`;
    return `target ${absolute.text}: ${cell.result.headline.value <= absolute.max ? 'met' : 'NOT met'}`;
  }
  if (!workload.peerRatio) return '';
  const spread = advantageSpread(subject, cell);
  if (spread === undefined)
    return subject?.result === undefined || cell.result === undefined ? '' : 'n/a';
  const text = formatRatioSpread(spread);
  const target = workload.targets.find((t) => t.kind === 'vs-peer' && t.peerId === cell.adapterId);
  if (target?.kind === 'vs-peer')
    return `${text} (target ${target.factor}x: ${spread.median >= target.factor ? 'met' : 'NOT met'})`;
  return text;
}

/** The terminal rendering: one block per workload, aligned columns. */
export function renderTerminal(report: CompareReport): string {
  const lines: string[] = [];
  lines.push(`machine: ${machineLine(report.machine)}`);
  lines.push(
    `scale: ${report.config.scale}; seed ${report.config.seed}; ${report.runs} run(s): medians, ranges in parentheses; repo ${report.repoCommit}`,
  );
  for (const u of report.unavailable) lines.push(`not run: ${u.id}: ${u.reason}`);
  const rows = tableRows(report);
  const headers: Row = {
    workload: '',
    store: 'store',
    durability: 'durability',
    result: 'result',
    details: 'details',
    versus: 'offset-store vs peer (>1 = offset-store better)',
  };
  const keys = ['store', 'durability', 'result', 'versus'] as const;
  const widths = Object.fromEntries(
    keys.map((k) => [k, Math.max(headers[k].length, ...rows.map((r) => r[k].length))]),
  ) as Record<(typeof keys)[number], number>;
  let current = '';
  for (const row of rows) {
    if (row.workload !== current) {
      current = row.workload;
      const workload = report.workloads.find((w) => current.startsWith(`(${w.id})`));
      lines.push(
        '',
        `${current}${workload === undefined || workload.targets.length === 0 ? '' : `   [targets: ${workload.targets.map((t) => t.text).join('; ')}]`}`,
      );
      lines.push(`  ${keys.map((k) => headers[k].padEnd(widths[k])).join('  ')}`.trimEnd());
    }
    lines.push(`  ${keys.map((k) => row[k].padEnd(widths[k])).join('  ')}`.trimEnd());
    if (row.details !== '') lines.push(`  ${''.padEnd(widths.store)}  ${row.details}`);
  }
  const summary = summaryTable(report);
  const summaryWidths = summary[0]!.map((_, c) =>
    Math.max(...summary.map((row) => row[c]!.length)),
  );
  lines.push(
    '',
    'summary (in parentheses: offset-store advantage over the peer, > 1 = offset-store better)',
  );
  for (const row of summary)
    lines.push(`  ${row.map((cell, c) => cell.padEnd(summaryWidths[c]!)).join('  ')}`.trimEnd());
  return lines.join('\n');
}

/**
 * One row per workload, one column per store: the headline, with offset-store's advantage in
 * parentheses for peers, and the targets' verdicts last. Compact enough for the README.
 */
export function summaryTable(report: CompareReport): string[][] {
  const stores: { id: string; name: string }[] = [];
  for (const cell of report.cells)
    if (!stores.some((s) => s.id === cell.adapterId))
      stores.push({ id: cell.adapterId, name: cell.adapterName });
  const header = ['workload', ...stores.map((s) => s.name), 'targets'];
  const body = report.workloads.map((workload) => {
    const subject = report.cells.find(
      (c) => c.workload === workload.id && c.adapterId === SUBJECT_ID,
    );
    const cells = stores.map((store) => {
      const cell = report.cells.find((c) => c.workload === workload.id && c.adapterId === store.id);
      if (cell === undefined) return '';
      if (cell.result === undefined) return 'error';
      const value = headlineText(cell);
      if (store.id === SUBJECT_ID || !workload.peerRatio) return value;
      const spread = advantageSpread(subject, cell);
      return spread === undefined
        ? value
        : `${value} [${store.id === 'floor' ? 'fraction of the floor: ' : ''}${formatRatioSpread(spread)}]`;
    });
    return [`(${workload.id}) ${workload.title}`, ...cells, targetVerdict(workload, report)];
  });
  return [header, ...body];
}

/** The markdown rendering, ready to paste into the README. */
export function renderMarkdown(report: CompareReport): string {
  const escape = (s: string): string => s.replaceAll('|', '\\|');
  const lines: string[] = [];
  lines.push(
    `### offset-store vs lmdb-js, better-sqlite3, classic-level (${report.createdAt.slice(0, 10)})`,
    '',
  );
  lines.push(`Machine: ${machineLine(report.machine)}.`, '');
  lines.push(
    `${report.runs} run(s) of every workload on every store: each figure is the median, with the range over the runs in parentheses. `,
  );
  lines.push(
    `Scale \`${report.config.scale}\` (live offsets ${report.config.liveOffsets}, memory probe ${report.config.memoryOffsets}, ` +
      `mixed run ${report.config.mixedSeconds} s), seed ${report.config.seed}, repo ${report.repoCommit}. ` +
      'Every store is durable per commit (one device flush per commit, or per group of concurrent commits); ' +
      'the flushes were checked with strace by `bench/compare/verify-durability.ts`. ' +
      'Absolute numbers vary by disk: compare the ratios, and the disk floor above.',
    '',
  );
  for (const u of report.unavailable) lines.push(`Not run: \`${u.id}\`: ${escape(u.reason)}`, '');
  const summary = summaryTable(report);
  lines.push(
    "In brackets: offset-store's advantage over the peer (> 1 = offset-store better: offset-store/peer for rates, peer/offset-store for times and bytes), median and range of the per-run ratios; against the floor, the fraction of it offset-store reaches.",
    '',
  );
  lines.push(
    `| ${summary[0]!.map(escape).join(' | ')} |`,
    `|${summary[0]!.map(() => '---').join('|')}|`,
  );
  for (const row of summary.slice(1)) lines.push(`| ${row.map(escape).join(' | ')} |`);
  lines.push('', '#### Every row with its durability mode', '');
  lines.push(
    '| Workload | Store | Durability | Result | Details | offset-store vs peer (>1 = better) |',
  );
  lines.push('|---|---|---|---|---|---|');
  for (const row of tableRows(report)) {
    lines.push(
      `| ${escape(row.workload)} | ${escape(row.store)} | ${escape(row.durability)} | ${escape(row.result)} | ${escape(row.details)} | ${escape(row.versus)} |`,
    );
  }
  const targets = report.workloads
    .filter((w) => w.targets.length > 0)
    .map((w) => `(${w.id}) ${w.targets.map((t) => t.text).join(', ')}`);
  if (targets.length > 0) lines.push('', `Targets: ${targets.join('; ')}.`);
  return `${lines.join('\n')}\n`;
}

/** Writes the JSON and markdown files; returns their paths. */
export function writeReportFiles(
  report: CompareReport,
  resultsDir: string,
): { json: string; markdown: string } {
  mkdirSync(resultsDir, { recursive: true });
  const stamp = report.createdAt.slice(0, 16).replace(':', '').replace('T', '-');
  const json = join(resultsDir, `compare-${stamp}.json`);
  const markdown = join(resultsDir, `compare-${stamp}.md`);
  writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(markdown, renderMarkdown(report));
  return { json, markdown };
}
