/**
 * The Vega-Lite specifications of the lab report's charts, one set per workload, each with its data
 * inline (a spec is self-contained JSON). Strategies keep one colour across all charts.
 *
 * | chart              | shows                                                                     |
 * |--------------------|---------------------------------------------------------------------------|
 * | space              | space amplification (disk but journal / live bytes) over the workload     |
 * | disk               | bytes on disk over the workload, with the live bytes                      |
 * | latency-timeline   | commit p99 per window over time, one row per strategy, compaction runs     |
 * |                    | marked as shaded spans, points coloured by phase                          |
 * | write-amp          | bytes compaction wrote per byte committed                                  |
 * | bytes-per-run      | mean bytes written per compaction run that wrote anything                  |
 * | reopen             | time to reopen a copy at the end, and records replayed over the workload  |
 * | latency-phases     | commit p50 / p99 / p99.9, idle against compacting                          |
 * | worker             | compaction worker CPU and main-thread heap                                 |
 */
import { isCompactionStrategy } from '../compaction/index.js';
import type { WorkloadResult } from './lab.js';

/** A Vega-Lite specification (plain JSON). */
export type VegaLiteSpec = Record<string, unknown>;

/** One chart of the report. */
export interface ChartSpec {
  /** Element id, unique in the report. */
  id: string;
  /** The figure's caption. */
  title: string;
  /** The specification. */
  spec: VegaLiteSpec;
}

const SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';
const WIDTH = 460;
const HEIGHT = 200;
const MIB = 1024 * 1024;

function nameOf(run: WorkloadResult['runs'][number]): string {
  return run.recorded.startsWith('module:')
    ? run.recorded.slice('module:'.length).replace(/\+checkpoints$/, '')
    : run.recorded;
}

/**
 * The label of each run in the charts: a module's own name, unless another run has
 * the same one (two versions of one strategy) or it is a built-in's name; then its path as given,
 * so that no two runs are drawn as one series.
 */
export function runLabels(runs: WorkloadResult['runs']): string[] {
  const names = runs.map(nameOf);
  return runs.map((run, i) => {
    const name = names[i]!;
    if (run.recorded === name) return name; // a built-in
    const clashes =
      isCompactionStrategy(name) || names.some((other, j) => j !== i && other === name);
    return clashes ? `${name} (${run.strategy})` : name;
  });
}

function colorScale(strategies: readonly string[]): Record<string, unknown> {
  return { domain: strategies, scheme: 'tableau10' };
}

function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** The charts of one workload (see the module comment). */
export function workloadCharts(workload: WorkloadResult, index: number): ChartSpec[] {
  const strategies = runLabels(workload.runs);
  const color = {
    field: 'strategy',
    type: 'nominal',
    title: 'strategy',
    scale: colorScale(strategies),
  };
  const samples = workload.runs.flatMap((run, r) =>
    run.samples.map((s) => ({
      strategy: strategies[r]!,
      progressPct: round(s.progress * 100, 1),
      elapsedS: round(s.elapsedMs / 1000, 2),
      spaceAmplification: round(s.spaceAmplification),
      diskMiB: round(s.diskBytes / MIB),
      liveMiB: round(s.liveBytes / MIB),
      writeAmplification: round(s.writeAmplification),
      reopenMs: s.reopenMs === undefined ? null : round(s.reopenMs, 1),
      recordsReplayed: s.recordsReplayed ?? null,
      heapMiB: round(s.heapBytes / MIB, 1),
    })),
  );
  const live = (workload.runs[0]?.samples ?? []).map((s) => ({
    strategy: 'live bytes',
    progressPct: round(s.progress * 100, 1),
    diskMiB: round(s.liveBytes / MIB),
  }));
  const totals = workload.runs.map((run, r) => ({
    strategy: strategies[r]!,
    writeAmplification: round(run.totals.writeAmplification),
    bytesWrittenPerRunKiB: round(run.totals.bytesWrittenPerRun / 1024, 1),
    writingRuns: run.totals.writingRuns,
    finalReopenMs: round(run.totals.finalReopenMs, 1),
    workerCpuS: round(run.totals.workerCpuMs / 1000, 2),
  }));
  const timeline = workload.runs.flatMap((run, r) => [
    ...run.windows.map((w) => ({
      strategy: strategies[r]!,
      kind: 'window',
      t: round(w.startMs / 1000, 2),
      p99Ms: round(w.p99Ms, 2),
      phase: w.phase,
    })),
    ...run.compactions
      .filter((c) => c.bytesWritten > 0 || c.segmentsRewritten > 0)
      .map((c) => ({
        strategy: strategies[r]!,
        kind: 'run',
        t: round(c.startMs / 1000, 2),
        tEnd: round((c.startMs + Math.max(c.durationMs, 20)) / 1000, 2),
        bucket: c.bucket,
        writtenKiB: round(c.bytesWritten / 1024, 1),
      })),
  ]);
  const phases = workload.runs.flatMap((run, r) =>
    (['idle', 'compacting'] as const).flatMap((phase) => {
      const p = run.latency[phase];
      return [
        ['p50', p.p50Ms],
        ['p99', p.p99Ms],
        ['p99.9', p.p999Ms],
      ].map(([percentile, ms]) => ({
        strategy: strategies[r]!,
        phase,
        percentile,
        ms: round(ms as number, 2),
      }));
    }),
  );
  const progress = { field: 'progressPct', type: 'quantitative', title: 'workload done (%)' };
  const id = (name: string) => `w${index}-${name}`;
  const line = (
    field: string,
    axis: string,
    extra: Record<string, unknown> = {},
  ): VegaLiteSpec => ({
    $schema: SCHEMA,
    width: WIDTH,
    height: HEIGHT,
    data: { values: samples },
    mark: { type: 'line', point: true, tooltip: true },
    encoding: { x: progress, y: { field, type: 'quantitative', title: axis, ...extra }, color },
  });
  const bars = (field: string, axis: string, values: unknown[]): VegaLiteSpec => ({
    $schema: SCHEMA,
    width: WIDTH,
    height: HEIGHT,
    data: { values },
    mark: { type: 'bar', tooltip: true },
    encoding: {
      x: { field: 'strategy', type: 'nominal', sort: strategies, title: null },
      y: { field, type: 'quantitative', title: axis },
      color,
    },
  });
  return [
    {
      id: id('space'),
      title:
        "Space amplification over the workload (bytes on disk but the commit journal's / live bytes)",
      spec: line('spaceAmplification', 'disk but journal / live bytes'),
    },
    {
      id: id('disk'),
      title: 'Bytes on disk over the workload, and the live bytes',
      spec: {
        $schema: SCHEMA,
        width: WIDTH,
        height: HEIGHT,
        data: { values: [...samples, ...live] },
        mark: { type: 'line', point: true, tooltip: true },
        encoding: {
          x: progress,
          y: { field: 'diskMiB', type: 'quantitative', title: 'MiB' },
          color: {
            field: 'strategy',
            type: 'nominal',
            title: 'strategy',
            scale: { domain: [...strategies, 'live bytes'], scheme: 'tableau10' },
          },
          strokeDash: {
            condition: { test: "datum.strategy === 'live bytes'", value: [4, 3] },
            value: [1, 0],
          },
        },
      },
    },
    {
      id: id('latency-timeline'),
      title:
        'Commit p99 per window over time; shaded: compaction runs that wrote (workload, then idle and compacting latency phases)',
      spec: {
        $schema: SCHEMA,
        data: { values: timeline },
        facet: {
          row: {
            field: 'strategy',
            type: 'nominal',
            sort: strategies,
            title: null,
            // Each row's strategy above it, across its width: drawn beside a row 90 px high, a label
            // such as a module's path ran over the rows around it.
            header: {
              labelOrient: 'top',
              labelAngle: 0,
              labelAlign: 'left',
              labelAnchor: 'start',
              labelLimit: WIDTH * 2,
            },
          },
        },
        spec: {
          width: WIDTH * 2,
          height: 90,
          layer: [
            {
              transform: [{ filter: "datum.kind === 'run'" }],
              mark: { type: 'rect', opacity: 0.25, color: '#e45756' },
              encoding: {
                x: { field: 't', type: 'quantitative', title: 'seconds since the run started' },
                x2: { field: 'tEnd' },
                tooltip: [{ field: 'bucket' }, { field: 'writtenKiB', title: 'KiB written' }],
              },
            },
            {
              transform: [{ filter: "datum.kind === 'window'" }],
              mark: { type: 'line', color: '#888', strokeWidth: 1 },
              encoding: {
                x: { field: 't', type: 'quantitative' },
                y: {
                  field: 'p99Ms',
                  type: 'quantitative',
                  title: 'p99 ms',
                  scale: { type: 'log' },
                },
              },
            },
            {
              transform: [{ filter: "datum.kind === 'window'" }],
              mark: { type: 'point', filled: true, size: 14, tooltip: true },
              encoding: {
                x: { field: 't', type: 'quantitative' },
                y: { field: 'p99Ms', type: 'quantitative' },
                color: {
                  field: 'phase',
                  type: 'nominal',
                  scale: {
                    domain: ['workload', 'idle', 'compacting'],
                    range: ['#4c78a8', '#54a24b', '#f58518'],
                  },
                },
              },
            },
          ],
        },
        resolve: { scale: { y: 'independent' } },
      },
    },
    {
      id: id('write-amp'),
      title: 'Write amplification: bytes compaction wrote per byte committed',
      spec: bars('writeAmplification', 'bytes written / bytes committed', totals),
    },
    {
      id: id('bytes-per-run'),
      title: 'Bytes written per compaction run (mean over runs that wrote)',
      spec: bars('bytesWrittenPerRunKiB', 'KiB per run', totals),
    },
    {
      id: id('reopen'),
      title: 'Time to reopen a copy of the store at the end of the workload',
      spec: bars('finalReopenMs', 'ms', totals),
    },
    {
      id: id('replayed'),
      title: 'Records replayed to reopen, over the workload',
      spec: {
        ...line('recordsReplayed', 'records replayed'),
        transform: [{ filter: 'datum.recordsReplayed !== null' }],
      },
    },
    {
      id: id('latency-phases'),
      title:
        'Commit latency: idle phases against phases with compaction running (compact() in a loop)',
      spec: {
        $schema: SCHEMA,
        data: { values: phases },
        facet: { column: { field: 'strategy', type: 'nominal', sort: strategies, title: null } },
        spec: {
          width: 120,
          height: HEIGHT,
          mark: { type: 'bar', tooltip: true },
          encoding: {
            x: { field: 'percentile', type: 'nominal', sort: ['p50', 'p99', 'p99.9'], title: null },
            xOffset: { field: 'phase', sort: ['idle', 'compacting'] },
            y: { field: 'ms', type: 'quantitative', title: 'commit latency, ms' },
            color: {
              field: 'phase',
              type: 'nominal',
              scale: { domain: ['idle', 'compacting'], range: ['#54a24b', '#f58518'] },
            },
          },
        },
      },
    },
    {
      id: id('worker-cpu'),
      title: 'CPU of the compaction worker threads over the workload',
      spec: bars('workerCpuS', 'CPU seconds', totals),
    },
    {
      id: id('heap'),
      title: 'Main-thread heap (used + external) over the workload',
      spec: line('heapMiB', 'MiB'),
    },
  ];
}
