/**
 * The lab's measures, on made-up inputs (no store, no run): percentiles, the latency timeline and
 * its split by compaction, the compaction runs' times relative to the run, the units the charts
 * draw in, and the report page's own script that renders the charts and counts them.
 */
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { BucketCompaction } from '../../src/compaction/index.js';
import { workloadCharts } from '../../src/lab/index.js';
import { OffsetStore } from '../../src/index.js';
import { CompactionTracker } from '../../src/lab/compaction-tracker.js';
import { sampleStore } from '../../src/lab/lab-sample.js';
import { LatencyLog, percentiles } from '../../src/lab/latency-log.js';
import { PAGE_LOADER } from '../../src/lab/page-loader.js';
import { tempDir } from '../support/temp-dir.js';
import { syntheticResult } from './lab-fixtures.js';

describe('percentiles', () => {
  it('orders latencies numerically, whatever order they came in, and reads each percentile at its rank', () => {
    // 100 before 9 as strings: a sort that compared text would call 9 the slowest.
    expect(percentiles([9, 100, 1, 20, 3])).toEqual({
      count: 5,
      p50Ms: 9,
      p99Ms: 100,
      p999Ms: 100,
      maxMs: 100,
    });
    // floor(0.5 * 7) = 3: the 4th of 7, the median.
    expect(percentiles([70, 10, 60, 20, 50, 30, 40]).p50Ms).toBe(40);
    const thousand = Array.from({ length: 1000 }, (_, i) => 1000 - i);
    expect(percentiles(thousand)).toEqual({
      count: 1000,
      p50Ms: 501,
      p99Ms: 991,
      p999Ms: 1000,
      maxMs: 1000,
    });
    expect(percentiles([])).toEqual({ count: 0, p50Ms: 0, p99Ms: 0, p999Ms: 0, maxMs: 0 });
  });
});

describe('LatencyLog', () => {
  it('names each window after the phase most of its commits ran in', () => {
    const log = new LatencyLog(1000);
    log.commit(1000, 1, 'idle');
    log.commit(1010, 5, 'compacting');
    log.commit(1020, 7, 'compacting');
    log.commit(1100, 2, 'idle');
    expect(log.windows(100)).toEqual([
      { startMs: 0, phase: 'compacting', count: 3, p50Ms: 5, p99Ms: 7 },
      { startMs: 100, phase: 'idle', count: 1, p50Ms: 2, p99Ms: 2 },
    ]);
  });

  it('splits commits by whether a compaction run overlapped them; one that only touches a run did not overlap it', () => {
    const log = new LatencyLog(0);
    log.commit(0, 10, 'workload'); // ends as the run starts
    log.commit(15, 2, 'workload'); // inside
    log.commit(30, 5, 'workload'); // starts as the run ends
    const intervals: [number, number][] = [[10, 30]];
    expect(log.commits('workload', { intervals, overlapping: true })).toEqual([2]);
    expect(log.commits('workload', { intervals, overlapping: false })).toEqual([10, 5]);
  });
});

describe('CompactionTracker', () => {
  it("times each run from the lab run's start, counts runs in flight, and wakes idle() when none is", async () => {
    const origin = 1_800_000_000_000;
    const tracker = new CompactionTracker(origin);
    tracker.listener({ kind: 'started', bucket: 0, startedAtMs: origin + 250, background: true });
    tracker.listener({ kind: 'started', bucket: 1, startedAtMs: origin + 260, background: true });
    let idle = false;
    const waited = tracker.idle().then(() => (idle = true));
    const report = {
      bucket: 0,
      startedAtMs: origin + 250,
      background: true,
      bytesBefore: 100,
      bytesAfter: 40,
      segmentsRewritten: 2,
      recordsDropped: 9,
      bytesRead: 100,
      bytesWritten: 40,
      durationMs: 30,
    } as BucketCompaction;
    tracker.listener({ kind: 'finished', report });
    await Promise.resolve();
    expect([tracker.inFlight, idle]).toEqual([1, false]);
    tracker.listener({
      kind: 'failed',
      bucket: 1,
      startedAtMs: origin + 260,
      background: true,
      error: new Error('boom'),
    });
    await waited;
    expect(tracker.inFlight).toBe(0);
    expect(tracker.runs).toEqual([
      {
        bucket: 0,
        startMs: 250,
        durationMs: 30,
        background: true,
        bytesWritten: 40,
        bytesRead: 100,
        segmentsRewritten: 2,
        recordsDropped: 9,
        bytesBefore: 100,
        bytesAfter: 40,
      },
    ]);
    expect(tracker.failures).toEqual(['boom']);
  });
});

describe('chart data', () => {
  it('draws bytes in MiB and a compaction run as a span from its start to its end', () => {
    const workload = syntheticResult().workloads[0]!;
    const charts = new Map(workloadCharts(workload, 0).map((c) => [c.id, c.spec]));
    const values = (id: string) =>
      (charts.get(id)!.data as { values: Record<string, unknown>[] }).values;
    // The first sample of the fixture: 1e6 bytes on disk, 1e6 live bytes.
    expect(values('w0-disk')[0]).toMatchObject({ diskMiB: 0.954, liveMiB: 0.954 });
    expect(values('w0-disk').find((v) => v.strategy === 'live bytes')).toMatchObject({
      diskMiB: 0.954,
    });
    // The fixture's run: from 200 ms for 300 ms.
    expect(values('w0-latency-timeline').find((v) => v.kind === 'run')).toMatchObject({
      t: 0.2,
      tEnd: 0.5,
      writtenKiB: 48.8,
    });
  });
});

describe('the report page script', () => {
  it('marks each chart rendered or failed, and counts both on the body', async () => {
    const elements = new Map<string, { dataset: Record<string, string>; textContent: string }>();
    const element = (id: string) => {
      if (!elements.has(id)) elements.set(id, { dataset: {}, textContent: '' });
      return elements.get(id)!;
    };
    element('lab-charts').textContent = JSON.stringify([
      { id: 'a', spec: {} },
      { id: 'b', spec: { bad: true } },
      { id: 'c', spec: {} },
    ]);
    const body = { dataset: {} as Record<string, string> };
    const errors: string[] = [];
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const sandbox = {
      document: { getElementById: element, body },
      console: { error: (message: string) => errors.push(message) },
      vegaEmbed: async (_element: unknown, spec: { bad?: boolean }) => {
        if (spec.bad === true) throw new Error('no such mark');
      },
    };
    await runInNewContext(PAGE_LOADER.replace(/\(\);\s*$/, '().then(finished);'), {
      ...sandbox,
      finished,
    });
    await done;
    expect(body.dataset).toEqual({ chartsTotal: '3', chartsRendered: '2' });
    expect(element('a').dataset).toEqual({ rendered: 'true' });
    expect(element('b').dataset).toEqual({ failed: 'true' });
    expect(element('b').textContent).toBe('This chart failed to render: no such mark');
    expect(errors).toEqual(['chart b failed to render: no such mark']);
  });
});

describe('a sample', () => {
  it("leaves the commit journal's files out of space amplification: a second copy of recent rounds, whatever the strategy does", async () => {
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 4 });
    try {
      // Commits of several buckets at once go through the journal.
      for (let round = 0; round < 20; round++)
        await Promise.all(
          Array.from({ length: 8 }, (_, g) =>
            store.commitOffsets(`g${g}`, [{ tableId: 1, bucketId: 0, offset: round }]),
          ),
        );
      const sample = await sampleStore(store, {
        step: 0,
        steps: 1,
        elapsedMs: 0,
        tracker: new CompactionTracker(0),
        processCpuMs: 0,
      });
      expect(sample.journalBytes).toBeGreaterThan(0);
      expect(sample.diskBytes).toBeGreaterThan(sample.journalBytes!);
      expect(sample.spaceAmplification).toBeCloseTo(
        (sample.diskBytes - sample.journalBytes!) / sample.liveBytes,
        9,
      );
    } finally {
      await store.close();
    }
  });
});
