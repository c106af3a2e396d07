/**
 * The lab at small scale: its workloads are deterministic for a seed; a lab run of the built-ins and
 * a user's strategy module (the docs' example) next to each other produces, per strategy, one sample
 * per step with space and write amplification and a reopen, its compaction runs, the latency phases,
 * and a store checked against what the operations left; the control compacts nothing.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WORKLOADS, checkLabOptions, runLab } from '../../src/lab/index.js';
import { firstOfEachKind } from '../../src/lab/lab-run.js';
import { tempDir } from '../support/temp-dir.js';

const EXAMPLE = path.resolve(import.meta.dirname, '../../examples/compaction/cost-benefit.mjs');
const FAST = { durability: 'os' as const, latencyPhaseMs: 60, latencyPhasePairs: 1 };

describe('lab workloads', () => {
  it.each(WORKLOADS.map((w) => [w.name, w] as const))(
    '%s issues the same operations for the same seed',
    (_name, workload) => {
      const ops = (seed: number) => {
        const plan = workload.create('small', seed);
        return JSON.stringify(Array.from({ length: plan.steps }, (_, i) => plan.step(i)));
      };
      expect(ops(7)).toBe(ops(7));
      expect(ops(7).length).toBeGreaterThan(100);
      const plan = workload.create('small', 7);
      expect(plan.steps).toBeGreaterThan(3);
      expect(Object.keys(plan.parameters).length).toBeGreaterThan(1);
    },
  );

  it('refuses an unknown workload or strategy, and adds the none control', () => {
    expect(() =>
      checkLabOptions({
        strategies: ['incremental'],
        workloads: ['hot'],
        scale: 'small',
        seed: 1,
        dir: '/x',
      }),
    ).toThrow(/unknown workload "hot"/);
    expect(() =>
      checkLabOptions({
        strategies: ['incremental', 'cleaner'],
        workloads: ['all'],
        scale: 'small',
        seed: 1,
        dir: '/x',
      }),
    ).toThrow(/unknown strategy "cleaner"/);
    const checked = checkLabOptions({
      strategies: ['incremental'],
      workloads: ['all'],
      scale: 'small',
      seed: 1,
      dir: '/x',
    });
    expect(checked.strategies).toEqual(['incremental', 'none']);
    // A module named by two spellings of its path runs once.
    expect(
      checkLabOptions({
        strategies: ['./mine.mjs', 'mine.mjs', `${process.cwd()}/mine.mjs`],
        workloads: ['all'],
        scale: 'small',
        seed: 1,
        dir: '/x',
      }).strategies,
    ).toEqual(['./mine.mjs', 'none']);
    expect(checked.workloads).toHaveLength(WORKLOADS.length);
    // No strategy at all (`--strategies ,`) is refused, not run as the control alone.
    expect(() =>
      checkLabOptions({ strategies: [], workloads: ['all'], scale: 'small', seed: 1, dir: '/x' }),
    ).toThrow(/no strategy given/);
    // The workloads' generator takes 32 bits: 2^32 + 1 would run seed 1's operations as another.
    for (const seed of [2 ** 32 + 1, -1, 1.5])
      expect(() =>
        checkLabOptions({
          strategies: ['none'],
          workloads: ['all'],
          scale: 'small',
          seed,
          dir: '/x',
        }),
      ).toThrow(/the seed must be an integer in \[0, 4294967295\]/);
  });

  it('loads every strategy module before the first run: a missing one fails at once, nothing run', async () => {
    const dir = tempDir();
    const missing = path.join(dir, 'no-such-strategy.mjs');
    const progress: string[] = [];
    await expect(
      runLab({
        strategies: ['log-cleaner', missing],
        workloads: ['hot-overwrite'],
        scale: 'small',
        seed: 1,
        dir,
        onProgress: (_done, _total, what) => progress.push(what),
      }),
    ).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('no-such-strategy.mjs'),
    });
    expect(readdirSync(dir)).toEqual([]);
    expect(progress, 'runs made before the refusal').toEqual([]);
  });
});

describe('a lab run', () => {
  it('runs a built-in and the example strategy module side by side on hot-overwrite, measuring each over time', async () => {
    const progress: number[] = [];
    const result = await runLab({
      strategies: ['incremental', EXAMPLE],
      workloads: ['hot-overwrite'],
      scale: 'small',
      seed: 3,
      dir: tempDir(),
      settings: FAST,
      onProgress: (done) => progress.push(done),
    });
    const [workload] = result.workloads;
    expect(workload!.runs.map((r) => r.recorded)).toEqual([
      'incremental',
      'module:cost-benefit',
      'none',
    ]);
    const steps = WORKLOADS[0]!.create('small', 3).steps;
    for (const run of workload!.runs) {
      expect(run.samples.map((s) => s.step)).toEqual(Array.from({ length: steps }, (_, i) => i));
      expect(run.samples.at(-1)!.progress).toBe(1);
      expect(
        run.samples.every(
          (s) =>
            s.reopenMs !== undefined &&
            s.recordsReplayed! > 0 &&
            s.diskBytes > 0 &&
            s.liveBytes > 0,
        ),
      ).toBe(true);
      // Space amplification leaves the commit journal's files out (lab-measures.test.ts has a
      // store with some): here, one committer at a time, there are none.
      const last = run.samples.at(-1)!;
      expect(last.journalBytes).toBe(0);
      expect(last.spaceAmplification).toBeCloseTo(
        (last.diskBytes - last.journalBytes!) / last.liveBytes,
        9,
      );
      expect(run.latency.idle.count).toBeGreaterThan(0);
      expect(run.latency.compacting.count).toBeGreaterThan(0);
      // Positive when commits were slower with compaction running: the report's "+x%".
      expect(run.latency.p99ChangePct).toBeCloseTo(
        (run.latency.compacting.p99Ms / run.latency.idle.p99Ms - 1) * 100,
        6,
      );
      expect(run.windows.length).toBeGreaterThan(0);
      expect(run.totals.liveOffsets).toBe(2000);
    }
    const byName = new Map(workload!.runs.map((r) => [r.recorded, r]));
    expect(byName.get('none')!.totals.compactionBytesWritten).toBe(0);
    for (const name of ['incremental', 'module:cost-benefit']) {
      const run = byName.get(name)!;
      expect(
        run.compactions.some((c) => c.background && c.segmentsRewritten > 0),
        `${name} compacted in the background`,
      ).toBe(true);
      expect(run.totals.finalSpaceAmplification, name).toBeLessThan(
        byName.get('none')!.totals.finalSpaceAmplification,
      );
    }
    expect(progress.at(-1)).toBe(3 * (steps + 2));
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('drives the store clock through retention and deletes groups through churn, and the stores still hold what the operations left', async () => {
    const result = await runLab({
      strategies: ['incremental'],
      workloads: ['retention-heavy', 'group-churn'],
      scale: 'small',
      seed: 5,
      dir: tempDir(),
      settings: FAST,
      control: false,
    });
    const [retention, churn] = result.workloads;
    // Offsets expired: fewer are live at the end than were committed.
    const committedOffsets = 10 * 20 * 20;
    expect(retention!.runs[0]!.totals.liveOffsets).toBeLessThan(committedOffsets);
    expect(retention!.runs[0]!.totals.liveOffsets).toBeGreaterThan(0);
    expect(churn!.runs[0]!.totals.liveOffsets).toBe(40 * 50);
  });
});

describe('a strategy whose runs never end', () => {
  it("counts a run whose plan fails in a compact() of the latency phases among the strategy's failed runs, and goes on", async () => {
    const dir = tempDir();
    const module = path.join(dir, 'flaky.mjs');
    writeFileSync(
      module,
      "export default { name: 'flaky', plan(view) { if (view.forced) throw new Error('flaky plan failure'); return null; } };\n",
    );
    const result = await runLab({
      strategies: [module],
      workloads: ['hot-overwrite'],
      scale: 'small',
      seed: 1,
      dir: path.join(dir, 'scratch'),
      settings: FAST,
      control: false,
    });
    const [run] = result.workloads[0]!.runs;
    expect(run!.latency.idle.count).toBeGreaterThan(0);
    expect(run!.latency.compacting.count).toBeGreaterThan(0);
    // One entry for all of them, the first as it was (its bucket's number, not N).
    expect(run!.failures).toEqual([expect.stringMatching(/flaky plan failure/)]);
    expect(run!.failures[0]).toMatch(/offsets-bucket \d+/);
  });

  it('fails the lab after the compaction wait, naming the strategy, with its store removed', async () => {
    const dir = tempDir();
    const module = path.join(dir, 'never-settles.mjs');
    // Background runs plan nothing; the compact() before the first latency phase never settles (a
    // plan that hangs after a step is the CLI test's).
    writeFileSync(
      module,
      "export default { name: 'never-settles', plan(view) { return view.forced ? new Promise(() => {}) : null; } };\n",
    );
    const scratch = path.join(dir, 'scratch');
    const progress: string[] = [];
    const started = performance.now();
    await expect(
      runLab({
        strategies: [module],
        workloads: ['hot-overwrite'],
        scale: 'small',
        seed: 1,
        dir: scratch,
        // Long enough for a worker thread to start and a run to end on a busy machine.
        settings: { ...FAST, compactionWaitMs: 5000 },
        control: false,
        onProgress: (_done, _total, what) => progress.push(what),
      }),
    ).rejects.toMatchObject({
      code: 'INVALID_COMPACTION_PLAN',
      message: expect.stringMatching(
        /^INVALID_COMPACTION_PLAN: lab: strategy .*never-settles\.mjs on hot-overwrite: 1 compaction run\(s\) still in flight after 5000 ms .*its store removed$/,
      ),
    });
    const steps = WORKLOADS[0]!.create('small', 1).steps;
    expect(progress.at(-1), 'every step done').toMatch(new RegExp(`step ${steps}/${steps}$`));
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(readdirSync(scratch), "the run's store is removed").toEqual([]);
  });
});

describe("a run's messages", () => {
  it('keeps the first of each kind as it was, with how many more of its kind there were', () => {
    expect(
      firstOfEachKind(
        [
          'compacting offsets-bucket 3 took longer than 500 ms',
          'a torn tail in 00000000000000001278.log',
          'compacting offsets-bucket 7 took longer than 500 ms',
          'compacting offsets-bucket 1 took longer than 500 ms',
        ],
        20,
      ),
    ).toEqual([
      'compacting offsets-bucket 3 took longer than 500 ms (and 2 more like it)',
      'a torn tail in 00000000000000001278.log',
    ]);
    expect(firstOfEachKind(['a', 'b', 'c'], 2)).toEqual(['a', 'b']);
  });
});

describe('stores of interrupted runs', () => {
  it('are removed when their lab process is gone; those of live processes and other folders stay', async () => {
    const { createRunFolder, removeAbandonedRuns } = await import('../../src/lab/lab-run.js');
    const dir = tempDir();
    const dead = 'hot-overwrite-log-cleaner-99999999-12345'; // above any pid_max
    const live = `hot-overwrite-log-cleaner-${process.pid}-12345`;
    await createRunFolder(path.join(dir, dead), 99999999);
    await createRunFolder(path.join(dir, live), process.pid);
    for (const name of [dead, live]) {
      mkdirSync(path.join(dir, name, 'store'));
      writeFileSync(path.join(dir, name, 'store', 'store.json'), '{}');
    }
    // Folders the lab did not create, whatever their names: a user's export whose name reads as a
    // workload, a strategy, a pid and a time, and one named exactly as a run but without its marker.
    const others = [
      'my-notes',
      'unknown-workload-x-99999999-1',
      'mixed-exports-2023-11',
      'hot-overwrite-log-cleaner-99999999-1',
    ];
    for (const name of others) {
      mkdirSync(path.join(dir, name));
      writeFileSync(path.join(dir, name, 'report.csv'), 'precious');
    }
    await removeAbandonedRuns(dir);
    expect(readdirSync(dir).sort()).toEqual([live, ...others].sort());
    expect(readFileSync(path.join(dir, 'mixed-exports-2023-11', 'report.csv'), 'utf8')).toBe(
      'precious',
    );
  });

  it('a run keeps its store in a folder it marks as its own, and removes the folder when done', async () => {
    const dir = tempDir();
    const seen: string[][] = [];
    await runLab({
      strategies: ['none'],
      workloads: ['all-distinct'],
      scale: 'small',
      seed: 1,
      dir,
      settings: FAST,
      control: false,
      onProgress: () => {
        for (const name of readdirSync(dir)) seen.push(readdirSync(path.join(dir, name)).sort());
      },
    });
    expect(seen.length).toBeGreaterThan(0);
    for (const entries of seen) expect(entries).toEqual(['lab-run.json', 'store']);
    expect(readdirSync(dir)).toEqual([]);
  });
});
