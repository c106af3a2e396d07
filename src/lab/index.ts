/**
 * src/lab: the compaction lab: standard seeded workloads at three scales, runs of compaction
 * strategies on them with metrics over time, and the JSON and HTML report. Uses the store through its
 * public API (and its compaction runs through `compaction.onRun`). This file is the folder's door.
 */
export {
  checkLabOptions,
  runLab,
  type LabOptions,
  type LabResult,
  type WorkloadResult,
} from './lab.js';
export { labSettings, type LabSettings, type RunTotals, type StrategyRun } from './lab-run.js';
export { CHART_PACKAGES, loadChartLibraries, type ChartLibrary } from './chart-library.js';
export { workloadCharts, type ChartSpec, type VegaLiteSpec } from './chart-specs.js';
export {
  SUMMARY_COLUMNS,
  renderReport,
  scriptJson,
  failureNotes,
  summaryRows,
  type SummaryRow,
} from './report-html.js';
export { writeLabReport } from './write-report.js';
export {
  WORKLOADS,
  LAB_SCALES,
  type LabScale,
  type WorkloadDefinition,
} from './workloads/index.js';
export type { LabSample } from './lab-sample.js';
