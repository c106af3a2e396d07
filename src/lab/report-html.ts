/**
 * The lab's report: one self-contained HTML file (the charting library inlined, the data and chart
 * specifications inlined, nothing fetched: it opens from a file, offline) and the terminal summary.
 *
 * The page renders every chart with vega-embed as SVG once loaded; each chart's element gets
 * `data-rendered="true"`, and the body `data-charts-rendered` / `data-charts-total`, so a browser
 * test can tell that all rendered; a chart that fails says so in place and on the console. Tables
 * (the summary per workload) are plain HTML, readable without scripts. Without the charting
 * packages (optional: chart-library.ts) the page is the tables alone, with a note on the charts.
 *
 * Script content is escaped for the HTML parser: `<` in JSON becomes `\u003c`, and the libraries are
 * checked to hold no `</script` or `<!--`.
 */
import { OffsetStoreError } from '../errors/index.js';
import { CHART_PACKAGES, type ChartLibrary } from './chart-library.js';
import { workloadCharts, type ChartSpec } from './chart-specs.js';
import { PAGE_LOADER } from './page-loader.js';
import type { LabResult, WorkloadResult } from './lab.js';
import type { RunTotals } from './lab-run.js';

/** One row of the summary table of a workload: strategy label and formatted cells. */
export interface SummaryRow {
  /** The strategy as recorded. */
  strategy: string;
  /** Formatted cells, in SUMMARY_COLUMNS order. */
  cells: string[];
}

/** Columns of the summary table (HTML report and terminal). */
export const SUMMARY_COLUMNS = [
  'strategy',
  'space amp (end)',
  'space amp (mean)',
  'write amp',
  'written / run',
  'runs',
  'failed runs',
  'reopen',
  'replayed',
  'commit p99 idle -> compacting',
  'worker CPU',
];

function mib(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${(bytes / 1024 / 1024).toFixed(1)} MiB`
    : `${(bytes / 1024).toFixed(1)} KiB`;
}

function ms(value: number): string {
  return value >= 1000
    ? `${(value / 1000).toFixed(2)} s`
    : `${value.toFixed(value < 10 ? 2 : 1)} ms`;
}

/** The summary rows of a workload. */
export function summaryRows(workload: WorkloadResult): SummaryRow[] {
  // As recorded (`module:<name>` for a module); two runs recorded alike also name their paths.
  const recorded = workload.runs.map((run) => run.recorded);
  const labels = workload.runs.map((run, r) =>
    recorded.indexOf(run.recorded) === recorded.lastIndexOf(run.recorded)
      ? run.recorded
      : `${run.recorded} (${run.strategy})`,
  );
  return workload.runs.map((run, r) => {
    const t = run.totals;
    const l = run.latency;
    const change = `${l.p99ChangePct >= 0 ? '+' : ''}${l.p99ChangePct.toFixed(1)}%`;
    return {
      strategy: labels[r]!,
      cells: [
        labels[r]!,
        `${t.finalSpaceAmplification.toFixed(2)}x`,
        `${t.meanSpaceAmplification.toFixed(2)}x`,
        t.writeAmplification.toFixed(2),
        mib(t.bytesWrittenPerRun),
        String(t.writingRuns),
        String(t.failedRuns),
        ms(t.finalReopenMs),
        t.finalRecordsReplayed.toLocaleString('en-US'),
        `${ms(l.idle.p99Ms)} -> ${ms(l.compacting.p99Ms)} (${change})`,
        workerCpu(t),
      ],
    };
  });
}

/**
 * The worker CPU cell: the workers' CPU time; "main thread" for a strategy whose runs all ran on the
 * main thread (their CPU is the process's, not a worker's 0 ms); "-" with no run at all.
 */
function workerCpu(t: RunTotals): string {
  if (t.workerRuns !== 0) return ms(t.workerCpuMs);
  return t.compactionRuns > 0 ? 'main thread' : '-';
}

/**
 * A warning for each strategy whose compaction runs failed (under the summary, in the report and the
 * terminal): its figures leave out what those runs would have done, so they are not its cost.
 * `rows` are the workload's summary rows, whose labels name the strategies.
 */
export function failureNotes(workload: WorkloadResult, rows: readonly SummaryRow[]): string[] {
  return workload.runs.flatMap((run, r) =>
    run.totals.failedRuns === 0
      ? []
      : [
          `${rows[r]!.strategy}: ${run.totals.failedRuns} compaction run(s) failed, so its figures are not its whole cost; ${run.failures.length === 1 ? 'the failure' : 'the failures'}: ${run.failures.join('; ')}`,
        ],
  );
}

function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** JSON safe inside a <script> element. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function inlineLibrary(library: ChartLibrary): string {
  if (/<\/script|<!--/i.test(library.code))
    throw new OffsetStoreError(
      'INVALID_CONFIG',
      `${library.name} ${library.version} holds text that would end an inline script; it cannot be inlined`,
    );
  return `<script data-library="${escapeHtml(library.name)}@${escapeHtml(library.version)}">${library.code}</script>`;
}

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; color: #222; }
h1 { margin-bottom: 0.2rem; } h2 { margin-top: 2.5rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
table { border-collapse: collapse; margin: 0.6rem 0; font-size: 13px; } th, td { padding: 0.2rem 0.6rem; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child { text-align: left; } .meta { color: #555; } .params td, .params th { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 1.2rem; } figure { margin: 0; } figcaption { font-weight: 600; margin-bottom: 0.3rem; max-width: 920px; }
.chart[data-failed] { color: #b00; } .no-charts { color: #8a5a00; }
`;

/**
 * With scripts off the charts cannot be drawn: their captions are hidden (they used to stand over
 * empty space) and a note says why, so that the page reads as its tables.
 */
const NO_SCRIPT_STYLE = '<noscript><style>.charts { display: none; }</style></noscript>';
const NO_SCRIPT_NOTE =
  '<noscript><p class="no-charts">No charts: they are drawn by this page\'s scripts, and scripts are off. Allow them to see the charts; the tables below, and lab-result.json beside this page, hold every figure.</p></noscript>';

/**
 * The report's HTML (see the module comment). `libraries` null: the charting packages are not
 * installed, so the page has the tables and a note on how to get the charts, and no scripts.
 */
export function renderReport(result: LabResult, libraries: readonly ChartLibrary[] | null): string {
  const charts: ChartSpec[] = [];
  const sections = result.workloads.map((workload, index) => {
    const specs = workloadCharts(workload, index);
    charts.push(...specs);
    const params = Object.entries(workload.parameters)
      .map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(String(v))}</td></tr>`)
      .join('');
    const summary = summaryRows(workload);
    const rows = summary
      .map((r) => `<tr>${r.cells.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`)
      .join('');
    const figures = (libraries === null ? [] : specs)
      .map(
        (c) =>
          `<figure><figcaption>${escapeHtml(c.title)}</figcaption><div class="chart" id="${c.id}"></div></figure>`,
      )
      .join('\n');
    return `<section id="workload-${escapeHtml(workload.name)}">
<h2>${escapeHtml(workload.name)}</h2>
<p>${escapeHtml(workload.description)}.</p>
<table class="params"><tbody>${params}</tbody></table>
<table class="summary"><thead><tr>${SUMMARY_COLUMNS.map((c) => `<th>${escapeHtml(c)}</th>`).join('')}</tr></thead><tbody>${rows}</tbody></table>
${failureNotes(workload, summary)
  .map((note) => `<p class="failures">${escapeHtml(note)}</p>`)
  .join('')}
<div class="charts">
${figures}
</div>
</section>`;
  });
  const s = result.settings;
  const m = result.machine;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>offset-store compaction lab (${escapeHtml(result.scale)})</title>
<style>${STYLE}</style>
${libraries === null ? '' : NO_SCRIPT_STYLE}
${(libraries ?? []).map(inlineLibrary).join('\n')}
</head>
<body>
<h1>offset-store compaction lab</h1>
<p class="meta">Scale <b>${escapeHtml(result.scale)}</b>, seed ${result.seed}, ${escapeHtml(result.createdAt)}. ${escapeHtml(m.cpuModel)}, ${m.cpus} CPUs, Node ${escapeHtml(m.node)}, ${escapeHtml(m.platform)}.
Stores of ${s.bucketCount} offsets-buckets, segments of ${mib(s.segmentBytesMax)}, durability ${escapeHtml(s.durability)}; background compaction every ${s.intervalMs} ms of store time, minDirtyRatio ${s.minDirtyRatio}, deleteRetentionMs ${s.deleteRetentionMs}.
Latency phases: ${s.latencyPhasePairs} x (idle, compacting) of ${s.latencyPhaseMs} ms, 16 committers of 10 offsets. 'none' is the control: no compaction; its latency change is the machine's noise.
${
  libraries === null
    ? `</p>\n<p class="no-charts">No charts: the optional packages they are drawn with were not installed where this report was written. Install them (<code>npm i ${CHART_PACKAGES}</code>) and run the lab again for a report with charts; lab-result.json beside this page holds every figure.</p>`
    : `Charting: ${libraries.map((l) => `${escapeHtml(l.name)} ${escapeHtml(l.version)}`).join(', ')} (inlined).</p>`
}
${libraries === null ? '' : NO_SCRIPT_NOTE}
<p class="meta">Space amplification = every byte of the store directory but the commit journal's (a copy of recent commits, whatever the strategy) / the live offsets encoded as one batch per group. Write amplification = bytes compaction wrote (rewritten segments, checkpoint pages) / bytes the workload's commits appended. Reopen = opening a copy of the store taken after the step (a crash image) until it answers.</p>
${sections.join('\n')}
${
  libraries === null
    ? ''
    : `<script type="application/json" id="lab-charts">${scriptJson(charts.map((c) => ({ id: c.id, spec: c.spec })))}</script>
<script>${PAGE_LOADER}</script>`
}
</body>
</html>
`;
}
