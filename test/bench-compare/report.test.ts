/**
 * The report's ratios are what the targets are judged by, so their direction must be right for
 * every kind of metric (a rate, a time, bytes), and every row must carry its durability mode.
 */
import { describe, expect, it } from 'vitest';
import type { CompareConfig } from '../../bench/compare/compare-config.js';
import type { MachineDescription } from '../../bench/compare/machine.js';
import {
  advantage,
  advantageSpread,
  renderMarkdown,
  summaryTable,
  tableRows,
  targetVerdict,
  type Cell,
  type CompareReport,
} from '../../bench/compare/report.js';
import type { Metric } from '../../bench/compare/workloads/workload.js';

const rate = (value: number): Metric => ({
  label: 'commits/s',
  value,
  unit: 'ops/s',
  better: 'higher',
});
const time = (value: number): Metric => ({
  label: 'per fetch',
  value,
  unit: 'ns',
  better: 'lower',
});

function cell(workload: Cell['workload'], adapterId: string, headline: Metric): Cell {
  return {
    workload,
    adapterId,
    adapterName: `${adapterId} store`,
    durability: `${adapterId} sync mode`,
    result: { headline, details: [], notes: [] },
  };
}

function report(cells: Cell[], scale: CompareConfig['scale'] = 'default'): CompareReport {
  return {
    createdAt: '2025-01-02T03:04:05.000Z',
    repoCommit: 'abc1234',
    config: {
      scale,
      seed: 1,
      liveOffsets: 100,
      memoryOffsets: 100,
      mixedSeconds: 1,
    } as CompareConfig,
    machine: {
      cpuModel: 'cpu',
      cores: 2,
      memoryGiB: 1,
      platform: 'linux',
      kernel: 'k',
      node: 'v20',
      loadAverage: 0,
      dataDir: '/d',
      fileSystem: 'ext4',
      diskFloor: { syncsPerSecond: 1000, meanUs: 1000, p50Us: 1000, p99Us: 2000 },
    } as MachineDescription,
    runs: 1,
    unavailable: [],
    workloads: [
      {
        id: 'b',
        title: 'concurrent commits',
        peerRatio: true,
        targets: [{ kind: 'vs-peer', peerId: 'lmdb', factor: 10, text: '>= 10x lmdb' }],
      },
      {
        id: 'c',
        title: 'fetch one',
        peerRatio: true,
        targets: [{ kind: 'vs-peer', peerId: 'lmdb', factor: 3, text: '>= 3x lmdb' }],
      },
      {
        id: 'f',
        title: 'memory',
        peerRatio: false,
        targets: [{ kind: 'absolute', max: 80, text: '<= 80 B' }],
      },
      {
        id: 'e',
        title: 'reopen',
        peerRatio: true,
        targets: [{ kind: 'absolute', max: 1000, text: '< 1 s', onlyAtScale: 'full' }],
      },
    ],
    cells,
  };
}

describe('advantage', () => {
  it('is offset-store/peer for rates and peer/offset-store for times, so > 1 always means offset-store is better', () => {
    expect(advantage(rate(5000), rate(500))).toBe(10);
    expect(advantage(time(300), time(900))).toBe(3);
    expect(advantage(time(900), time(300))).toBeCloseTo(1 / 3);
  });

  it('is undefined when a value is not positive', () => {
    expect(advantage(rate(0), rate(500))).toBeUndefined();
    expect(
      advantage(
        { label: 'heap', value: 60, unit: 'B', better: 'lower' },
        { label: 'heap', value: -1, unit: 'B', better: 'lower' },
      ),
    ).toBeUndefined();
  });
});

describe('targetVerdict', () => {
  const cells = [
    cell('b', 'offset-store', rate(4000)),
    cell('b', 'lmdb', rate(500)),
    cell('c', 'offset-store', time(300)),
    cell('c', 'lmdb', time(900)),
    cell('f', 'offset-store', { label: 'heap per offset', value: 95, unit: 'B', better: 'lower' }),
    cell('e', 'offset-store', { label: 'reopen', value: 50, unit: 'ms', better: 'lower' }),
  ];

  it('judges a ratio target on the named peer and an absolute target on offset-store alone', () => {
    const r = report(cells);
    const verdicts = Object.fromEntries(r.workloads.map((w) => [w.id, targetVerdict(w, r)]));

    expect(verdicts['b']).toBe('>= 10x lmdb: 8.00x, NOT met');
    expect(verdicts['c']).toBe('>= 3x lmdb: 3.00x, met');
    expect(verdicts['f']).toBe('<= 80 B: NOT met');
    expect(verdicts['e']).toBe('< 1 s: checked at COMPARE_SCALE=full');
    expect(targetVerdict(r.workloads[3]!, report(cells, 'full'))).toBe('< 1 s: met');
  });

  it('says when offset-store was not measured', () => {
    const r = report([cell('b', 'lmdb', rate(500))]);

    expect(targetVerdict(r.workloads[0]!, r)).toBe('>= 10x lmdb: not measured');
  });
});

describe('tables', () => {
  it('names the durability mode in every row and gives no ratio where the workload says it would mislead', () => {
    const r = report([
      cell('b', 'offset-store', rate(4000)),
      cell('b', 'lmdb', rate(500)),
      cell('b', 'sqlite', rate(1000)),
      cell('f', 'offset-store', {
        label: 'heap per offset',
        value: 60,
        unit: 'B',
        better: 'lower',
      }),
      cell('f', 'lmdb', { label: 'heap per offset', value: 1, unit: 'B', better: 'lower' }),
    ]);
    const rows = tableRows(r);

    expect(rows.every((row) => row.durability.endsWith('sync mode'))).toBe(true);
    expect(
      rows.find((row) => row.workload.startsWith('(b)') && row.store === 'sqlite store')?.versus,
    ).toBe('4.00x');
    expect(
      rows.find((row) => row.workload.startsWith('(f)') && row.store === 'lmdb store')?.versus,
    ).toBe('');
    expect(summaryTable(r)[1]).toEqual([
      '(b) concurrent commits',
      '4.0k commits/s',
      '500 commits/s [8.00x]',
      '1.0k commits/s [4.00x]',
      '>= 10x lmdb: 8.00x, NOT met',
    ]);

    const markdown = renderMarkdown(r);
    expect(markdown).toContain(
      '| (b) concurrent commits | sqlite store | sqlite sync mode | 1.0k commits/s |',
    );
    expect(markdown).toContain('disk floor');
  });

  it('over several runs, gives medians with ranges, and ratios paired run by run', () => {
    const subject = { ...cell('b', 'offset-store', rate(4000)), runValues: [3000, 4000, 5000] };
    const peer = { ...cell('b', 'lmdb', rate(1000)), runValues: [1000, 1000, 1250] };
    const r = { ...report([subject, peer]), runs: 3 };
    expect(advantageSpread(subject, peer)).toEqual({ median: 4, min: 3, max: 4, count: 3 });
    expect(summaryTable(r)[1]).toEqual([
      '(b) concurrent commits',
      '4.0k commits/s (3.0k-5.0k)',
      '1.0k commits/s (1.0k-1.3k) [4.00x (3.00-4.00x)]',
      '>= 10x lmdb: 4.00x (3.00-4.00x), NOT met',
    ]);
  });
});
