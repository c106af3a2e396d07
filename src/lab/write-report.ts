/** Writes a lab result to a folder: `lab-result.json` and `lab-report.html`, each durably. */
import * as path from 'node:path';
import { NodeFileSystem } from '../io/index.js';
import { writeDurably } from '../log/index.js';
import { loadChartLibraries, type ChartLibrary } from './chart-library.js';
import type { LabResult } from './lab.js';
import { renderReport } from './report-html.js';

/**
 * Writes the JSON result and the HTML report into `outDir` (created); returns their paths and
 * whether the report has its charts (`libraries`: loadChartLibraries's, read here when not given).
 */
export async function writeLabReport(
  result: LabResult,
  outDir: string,
  libraries?: ChartLibrary[] | null,
): Promise<{ json: string; html: string; charts: boolean }> {
  const charting = libraries === undefined ? await loadChartLibraries() : libraries;
  const fs = new NodeFileSystem();
  await fs.mkdir(outDir);
  const json = path.join(outDir, 'lab-result.json');
  const html = path.join(outDir, 'lab-report.html');
  await writeDurably(fs, json, Buffer.from(`${JSON.stringify(result, null, 1)}\n`, 'utf8'));
  await writeDurably(fs, html, Buffer.from(renderReport(result, charting), 'utf8'));
  return { json, html, charts: charting !== null };
}
