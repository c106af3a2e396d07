/**
 * The report page's own script (run by the browser, not by Node): renders every chart with
 * vega-embed as SVG, marks each chart element `data-rendered="true"` (or `data-failed="true"` with
 * the error in place and on the page's console), and finally sets `data-charts-total` and
 * `data-charts-rendered` on the body, which the browser test waits for.
 */

/** The script's source, inlined by report-html.ts after the chart data. */
export const PAGE_LOADER = `
(async () => {
  const charts = JSON.parse(document.getElementById('lab-charts').textContent);
  let rendered = 0;
  for (const chart of charts) {
    const element = document.getElementById(chart.id);
    try {
      await vegaEmbed(element, chart.spec, { renderer: 'svg', actions: false });
      element.dataset.rendered = 'true';
      rendered++;
    } catch (error) {
      console.error('chart ' + chart.id + ' failed to render: ' + error.message);
      element.dataset.failed = 'true';
      element.textContent = 'This chart failed to render: ' + error.message;
    }
  }
  document.body.dataset.chartsTotal = String(charts.length);
  document.body.dataset.chartsRendered = String(rendered);
})();
`;
