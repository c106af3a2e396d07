/**
 * The lab's HTML report is self-contained and safe: the charting library is inlined (nothing is
 * fetched), every chart has its element and a Vega-Lite spec whose encoded fields are in its data,
 * text from results is escaped (a description holding </script> cannot end a script), and the
 * summary table reads without scripts. Whether the charts render is the browser tier's test.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  loadChartLibraries,
  renderReport,
  scriptJson,
  summaryRows,
  workloadCharts,
} from '../../src/lab/index.js';
import { syntheticResult } from './lab-fixtures.js';

function fieldsOf(encoding: Record<string, unknown> | undefined): string[] {
  return Object.values(encoding ?? {}).flatMap((channel) => {
    const field = (channel as { field?: unknown } | null)?.field;
    return typeof field === 'string' ? [field] : [];
  });
}

describe('the lab report', () => {
  it('inlines the charting library and fetches nothing', async () => {
    const libraries = (await loadChartLibraries())!;
    expect(libraries.map((l) => l.name)).toEqual(['vega', 'vega-lite', 'vega-embed']);
    const html = renderReport(syntheticResult(), libraries);
    for (const library of libraries)
      expect(html).toContain(`data-library="${library.name}@${library.version}"`);
    // The markup outside the inline scripts (the libraries' own strings are not markup).
    const markup = html.replace(/(<script[^>]*>)[\s\S]*?<\/script>/g, '$1</script>');
    expect(markup.match(/<script/g)?.length).toBe(libraries.length + 2);
    expect(/<script[^>]+src=/.test(markup)).toBe(false);
    expect(/<link[^>]+href=/.test(markup)).toBe(false);
    expect(/<img[^>]+src=/.test(markup)).toBe(false);
  });

  it('without the optional charting packages: the tables and a note saying how to get the charts, no scripts', async () => {
    const missing = (name: string): string => {
      if (name === 'vega-lite')
        throw Object.assign(new Error(`Cannot find module '${name}'`), {
          code: 'MODULE_NOT_FOUND',
        });
      return createRequire(import.meta.url).resolve(name);
    };
    expect(await loadChartLibraries(missing)).toBeNull();
    const html = renderReport(syntheticResult(), null);
    expect(html).toContain('<p class="no-charts">No charts:');
    expect(html).toContain('npm i vega@6 vega-lite@6 vega-embed@7');
    expect(html).not.toContain('<script');
    expect(html).not.toContain('class="chart"');
    expect(html.match(/<table class="summary">/g)).toHaveLength(2);
    // Any other failure to find a package is not taken for its absence.
    await expect(
      loadChartLibraries(() => {
        throw Object.assign(new Error('EACCES'), { code: 'EACCES' });
      }),
    ).rejects.toThrow('EACCES');
  });

  it('has an element and a spec for every chart, each spec encoding only fields its data has', () => {
    const result = syntheticResult();
    const html = renderReport(result, []);
    const charts = JSON.parse(
      /<script type="application\/json" id="lab-charts">(.*?)<\/script>/s.exec(html)![1]!,
    ) as { id: string; spec: Record<string, unknown> }[];
    expect(charts).toHaveLength(2 * workloadCharts(result.workloads[0]!, 0).length);
    expect(new Set(charts.map((c) => c.id)).size).toBe(charts.length);
    for (const { id, spec } of charts) {
      expect(html).toContain(`<div class="chart" id="${id}"></div>`);
      const values = (spec.data as { values: Record<string, unknown>[] }).values;
      expect(values.length, id).toBeGreaterThan(0);
      const present = new Set(values.flatMap((row) => Object.keys(row)));
      const inner = (spec.spec ?? spec) as {
        encoding?: Record<string, unknown>;
        layer?: { encoding?: Record<string, unknown> }[];
      };
      const encoded = [
        ...fieldsOf(inner.encoding),
        ...(inner.layer ?? []).flatMap((l) => fieldsOf(l.encoding)),
        ...fieldsOf(spec.facet as Record<string, unknown>),
      ];
      expect(encoded.length, id).toBeGreaterThan(0);
      for (const field of encoded) expect(present, `${id} encodes ${field}`).toContain(field);
    }
  });

  it('escapes text from results: a description holding </script> cannot end a script or add markup', () => {
    const html = renderReport(
      syntheticResult('evil </script><script>alert(1)</script> <b>bold</b>'),
      [],
    );
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain(
      'evil &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &lt;b&gt;bold&lt;/b&gt;',
    );
    expect(scriptJson({ text: '</script>' })).toBe('{"text":"\\u003c/script>"}');
    expect(JSON.parse(scriptJson({ text: '</script>\u2028' }))).toEqual({
      text: '</script>\u2028',
    });
  });

  it('has a summary row per strategy: space and write amplification, bytes per run, reopen, commit p99 idle -> compacting', () => {
    const rows = summaryRows(syntheticResult().workloads[0]!);
    expect(rows.map((r) => r.strategy)).toEqual([
      'log-cleaner',
      'incremental',
      'module:cost-benefit',
      'none',
    ]);
    expect(rows[1]!.cells).toEqual([
      'incremental',
      '4.80x',
      '0.80x',
      '0.08',
      '244.1 KiB',
      '2',
      '0',
      '12.0 ms',
      '5,000',
      '4.00 ms -> 4.40 ms (+10.0%)',
      '90.0 ms',
    ]);
  });

  it('draws two versions of one strategy, or a module named like a built-in, as separate series, and shows failed runs', () => {
    const result = syntheticResult();
    const workload = result.workloads[0]!;
    const [cleaner, , module, none] = workload.runs;
    workload.runs = [
      cleaner!,
      { ...module!, recorded: 'module:mine', strategy: './v1/mine.mjs' },
      {
        ...module!,
        recorded: 'module:mine',
        strategy: './v2/mine.mjs',
        totals: { ...module!.totals, failedRuns: 3 },
        failures: ['INVALID_COMPACTION_PLAN: boom'],
      },
      { ...module!, recorded: 'module:log-cleaner', strategy: './fake-cleaner.mjs' },
      none!,
    ];
    const series = new Set<string>();
    for (const chart of workloadCharts(workload, 0))
      JSON.stringify(chart.spec, (key, value: unknown) => {
        if (key === 'strategy' && typeof value === 'string') series.add(value);
        return value;
      });
    expect([...series].filter((s) => s !== 'live bytes').sort()).toEqual([
      'log-cleaner',
      'log-cleaner (./fake-cleaner.mjs)',
      'mine (./v1/mine.mjs)',
      'mine (./v2/mine.mjs)',
      'none',
    ]);
    const rows = summaryRows(workload);
    expect(rows.map((r) => r.strategy)).toEqual([
      'log-cleaner',
      'module:mine (./v1/mine.mjs)',
      'module:mine (./v2/mine.mjs)',
      'module:log-cleaner',
      'none',
    ]);
    expect(rows[2]!.cells[6]).toBe('3');
    // Worker CPU: the workers' time (also from results written before workerRuns was recorded); a
    // strategy whose runs all planned on the main thread has none (not 0 ms); no runs, nothing.
    expect(rows.map((r) => r.cells[10])).toEqual([
      '90.0 ms',
      '90.0 ms',
      '90.0 ms',
      '90.0 ms',
      '90.0 ms',
    ]);
    const [first, second, , , last] = workload.runs;
    workload.runs[1] = { ...second!, totals: { ...second!.totals, workerRuns: 0 } };
    workload.runs[4] = { ...last!, totals: { ...last!.totals, workerRuns: 0, compactionRuns: 0 } };
    workload.runs[0] = { ...first!, totals: { ...first!.totals, workerRuns: 3 } };
    expect(summaryRows(workload).map((r) => r.cells[10])).toEqual([
      '90.0 ms',
      'main thread',
      '90.0 ms',
      '90.0 ms',
      '-',
    ]);
    const html = renderReport(result, []);
    expect(html).toContain(
      'module:mine (./v2/mine.mjs): 3 compaction run(s) failed, so its figures are not its whole cost; the failure: INVALID_COMPACTION_PLAN: boom',
    );
  });
});
