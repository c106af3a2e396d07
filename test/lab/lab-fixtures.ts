import { labSettings, type LabResult, type StrategyRun } from '../../src/lab/index.js';

/** A run with made-up figures: `n` samples, a few compaction runs and latency windows. */
function run(recorded: string, n: number, factor: number): StrategyRun {
  const samples = Array.from({ length: n }, (_, i) => ({
    step: i,
    progress: (i + 1) / n,
    elapsedMs: i * 500,
    committedBytes: (i + 1) * 1e6,
    diskBytes: (i + 1) * 1e6 * factor,
    logBytes: (i + 1) * 0.9e6 * factor,
    liveBytes: 1e6,
    liveOffsets: 20_000,
    spaceAmplification: (i + 1) * factor,
    compactionBytesWritten: i * 1e5,
    writeAmplification: i / 10,
    ...(i % 2 === 0
      ? { reopenMs: 10 + i, recordsReplayed: 1000 * (i + 1), batchesReplayed: 100 }
      : {}),
    heapBytes: 5e7,
    processCpuMs: i * 100,
    workerCpuMs: i * 10,
  }));
  const p = (x: number) => ({ count: 100, p50Ms: x, p99Ms: 4 * x, p999Ms: 6 * x, maxMs: 8 * x });
  return {
    strategy: recorded,
    recorded,
    samples,
    compactions: [
      {
        bucket: 0,
        startMs: 200,
        durationMs: 300,
        background: true,
        bytesWritten: 50_000,
        bytesRead: 80_000,
        segmentsRewritten: 2,
        recordsDropped: 500,
        bytesBefore: 1e5,
        bytesAfter: 5e4,
        workerCpuMs: 12,
      },
    ],
    windows: Array.from({ length: 10 }, (_, i) => ({
      startMs: i * 500,
      phase:
        i < 6 ? ('workload' as const) : i % 2 === 0 ? ('idle' as const) : ('compacting' as const),
      count: 20,
      p50Ms: 1 + i / 10,
      p99Ms: 3 + i / 5,
    })),
    latency: { idle: p(1), compacting: p(1.1), p99ChangePct: 10 },
    workloadLatency: { overlappingCompaction: p(2), outsideCompaction: p(1.5), fetch: p(0.01) },
    totals: {
      committedBytes: n * 1e6,
      compactionBytesWritten: 5e5,
      compactionRuns: 3,
      writingRuns: 2,
      failedRuns: 0,
      bytesWrittenPerRun: 2.5e5,
      writeAmplification: 0.1 * factor,
      finalSpaceAmplification: n * factor,
      meanSpaceAmplification: factor,
      finalReopenMs: 12,
      finalRecordsReplayed: 5000,
      workerCpuMs: 90,
      processCpuMs: 900,
      peakHeapBytes: 6e7,
      workerHeapBytesMax: 3e7,
      durationMs: 5000,
      liveOffsets: 20_000,
    },
    warnings: [],
    failures: [],
  };
}

/** A lab result of two workloads and three strategies, for the report writer's tests. */
export function syntheticResult(description = 'a made-up workload'): LabResult {
  return {
    formatVersion: 1,
    createdAt: '2026-12-01T00:00:00.000Z',
    scale: 'small',
    seed: 1,
    machine: { cpuModel: 'test CPU', cpus: 2, node: 'v20', platform: 'linux', totalMemoryBytes: 1 },
    settings: labSettings('small'),
    workloads: ['first', 'second'].map((name) => ({
      name,
      description,
      parameters: { groups: 3, buckets: 7 },
      runs: [
        run('log-cleaner', 6, 1),
        run('incremental', 6, 0.8),
        run('module:cost-benefit', 6, 1.2),
        run('none', 6, 3),
      ],
    })),
  };
}
