/// <reference lib="dom" />
/**
 * The lab's HTML report in a real browser (Debian's chromium, headless, driven over the DevTools
 * protocol by puppeteer-core): the committed default-scale report and a freshly written small one
 * load from a file with no console error, warning or page error, and every chart renders an SVG with
 * marks in it; a chart whose spec is broken says so on the page and on the console. Screenshots go
 * to the temporary folder, named in the test output, for a look.
 * CHROMIUM_PATH overrides the browser's path (default: chromium on the PATH).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadChartLibraries, renderReport, runLab, writeLabReport } from '../../src/lab/index.js';
import { syntheticResult } from '../lab/lab-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
let browser: Browser;

function chromiumPath(): string {
  if (process.env.CHROMIUM_PATH !== undefined) return process.env.CHROMIUM_PATH;
  return execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], {
    encoding: 'utf8',
  }).trim();
}

beforeAll(async () => {
  browser = await puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
});

afterAll(async () => {
  await browser?.close();
});

interface Rendered {
  messages: string[];
  total: number;
  rendered: number;
  charts: {
    id: string;
    width: number;
    height: number;
    marks: number;
    failed: boolean;
    text: string;
  }[];
}

/** Opens `file` and waits for the loader to finish; every console message of type error or warning is kept. */
async function render(file: string, screenshot: string): Promise<Rendered> {
  const page = await browser.newPage();
  const messages: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warn') messages.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => messages.push(`pageerror: ${(e as Error).message}`));
  page.on('requestfailed', (r) => messages.push(`requestfailed: ${r.url()}`));
  await page.setViewport({ width: 1200, height: 1000 });
  await page.goto(`file://${file}`, { waitUntil: 'load' });
  await page.waitForFunction(() => document.body.dataset.chartsRendered !== undefined, {
    timeout: 90_000,
  });
  const result = await page.evaluate(() => ({
    total: Number(document.body.dataset.chartsTotal),
    rendered: Number(document.body.dataset.chartsRendered),
    charts: Array.from(document.querySelectorAll<HTMLElement>('.chart')).map((el) => {
      const svg = el.querySelector('svg');
      const box = svg?.getBoundingClientRect();
      return {
        id: el.id,
        width: box?.width ?? 0,
        height: box?.height ?? 0,
        failed: el.dataset.failed === 'true',
        text: el.textContent?.slice(0, 200) ?? '',
        marks:
          svg?.querySelectorAll(
            'g.mark-line path, g.mark-symbol path, g.mark-rect path, g.mark-area path',
          ).length ?? 0,
      };
    }),
  }));
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`screenshot of ${path.basename(file)}: ${screenshot}`);
  await page.close();
  return { messages, ...result };
}

function expectAllRendered(r: Rendered): void {
  expect(r.messages).toEqual([]);
  expect(r.total).toBeGreaterThan(0);
  expect(r.rendered).toBe(r.total);
  expect(r.charts).toHaveLength(r.total);
  for (const chart of r.charts) {
    expect(chart.failed, `${chart.id}: ${chart.text}`).toBe(false);
    expect(chart.width, chart.id).toBeGreaterThan(100);
    expect(chart.height, chart.id).toBeGreaterThan(50);
    expect(chart.marks, `${chart.id} draws marks`).toBeGreaterThan(0);
  }
}

describe('the lab report in a browser', () => {
  it('renders the committed default-scale report: every chart, no console error', async () => {
    const file = path.join(ROOT, 'docs', 'lab', 'lab-report.html');
    expect(existsSync(file)).toBe(true);
    expectAllRendered(
      await render(file, path.join(os.tmpdir(), 'offset-store-lab-report-committed.png')),
    );
  });

  it('renders a report freshly written from a small lab run', async () => {
    const out = tempDir();
    const result = await runLab({
      strategies: ['incremental', path.join(ROOT, 'examples', 'compaction', 'cost-benefit.mjs')],
      workloads: ['mixed'],
      scale: 'small',
      seed: 2,
      dir: path.join(out, 'stores'),
      settings: { durability: 'os', latencyPhaseMs: 60 },
    });
    const { html } = await writeLabReport(result, out);
    expectAllRendered(
      await render(html, path.join(os.tmpdir(), 'offset-store-lab-report-small.png')),
    );
  });

  it("draws each strategy's label of the latency timeline clear of the other rows' labels, however long", async () => {
    // Two versions of one strategy are drawn with their paths (docs/compaction.md): a label far
    // longer than a timeline row is high. Drawn upright beside its row, it ran over its neighbours'.
    const result = syntheticResult();
    const workload = result.workloads[0]!;
    result.workloads = [workload];
    const long = (v: string) => `./strategies/experiments/2026-12/${v}/cost-benefit.mjs`;
    workload.runs = [
      { ...workload.runs[2]!, strategy: long('v1') },
      { ...workload.runs[2]!, strategy: long('v2') },
      workload.runs[3]!,
    ];
    const out = tempDir();
    const file = path.join(out, 'long-labels.html');
    writeFileSync(file, renderReport(result, await loadChartLibraries()));
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 1000 });
    await page.goto(`file://${file}`, { waitUntil: 'load' });
    await page.waitForFunction(() => document.body.dataset.chartsRendered !== undefined);
    const labels = await page.evaluate(() => {
      const svg = document.getElementById('w0-latency-timeline')!.querySelector('svg')!;
      const chart = svg.getBoundingClientRect();
      return Array.from(svg.querySelectorAll('text'))
        .filter((t) => /cost-benefit \(|^none$/.test(t.textContent ?? ''))
        .map((t) => {
          const b = t.getBoundingClientRect();
          return {
            text: t.textContent,
            top: b.top,
            bottom: b.bottom,
            left: b.left,
            right: b.right,
            chart: { top: chart.top, bottom: chart.bottom, left: chart.left, right: chart.right },
          };
        });
    });
    await page.screenshot({
      path: path.join(os.tmpdir(), 'offset-store-lab-report-long-labels.png'),
      fullPage: true,
    });
    await page.close();
    expect(labels.map((l) => l.text)).toEqual([
      `cost-benefit (${long('v1')})`,
      `cost-benefit (${long('v2')})`,
      'none',
    ]);
    for (const [i, a] of labels.entries()) {
      expect(a.top, a.text!).toBeGreaterThanOrEqual(a.chart.top);
      expect(a.bottom, a.text!).toBeLessThanOrEqual(a.chart.bottom);
      expect(a.left, a.text!).toBeGreaterThanOrEqual(a.chart.left);
      expect(a.right, a.text!).toBeLessThanOrEqual(a.chart.right);
      for (const b of labels.slice(i + 1)) {
        const apart =
          a.bottom <= b.top || b.bottom <= a.top || a.right <= b.left || b.right <= a.left;
        expect(apart, `${a.text} and ${b.text} overlap`).toBe(true);
      }
    }
  });

  it('with scripts off: the tables and a note on the charts, no captions over empty space', async () => {
    const file = path.join(tempDir(), 'no-scripts.html');
    writeFileSync(file, renderReport(syntheticResult(), await loadChartLibraries()));
    const page = await browser.newPage();
    await page.setJavaScriptEnabled(false);
    await page.goto(`file://${file}`, { waitUntil: 'load' });
    const shown = await page.evaluate(() => ({
      captions: Array.from(document.querySelectorAll('figcaption')).filter(
        (c) => c.getClientRects().length > 0,
      ).length,
      tables: Array.from(document.querySelectorAll('table.summary')).filter(
        (t) => t.getClientRects().length > 0,
      ).length,
      text: document.body.innerText,
    }));
    await page.close();
    expect(shown.captions).toBe(0);
    expect(shown.tables).toBe(2);
    expect(shown.text).toContain(
      "No charts: they are drawn by this page's scripts, and scripts are off.",
    );
  });

  it('shows a chart whose spec is broken as failed, on the page and on the console', async () => {
    const out = tempDir();
    const html = renderReport(syntheticResult(), await loadChartLibraries()).replace(
      '"mark":{"type":"bar"',
      '"mark":{"type":"no-such-mark"',
    );
    const file = path.join(out, 'broken.html');
    writeFileSync(file, html);
    const r = await render(file, path.join(os.tmpdir(), 'offset-store-lab-report-broken.png'));
    expect(r.rendered).toBe(r.total - 1);
    expect(r.charts.filter((c) => c.failed).map((c) => [c.id, c.text])).toEqual([
      ['w0-write-amp', expect.stringMatching(/^This chart failed to render: .+/)],
    ]);
    expect(r.messages).toEqual([
      expect.stringMatching(/^error: chart w0-write-amp failed to render/),
    ]);
  });
});
