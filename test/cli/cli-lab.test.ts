/**
 * `offset-store lab` (in-process): a small run writes lab-result.json and a lab-report.html that
 * inlines its charting library, prints a summary table per workload with every strategy and the
 * control, and deletes its scratch stores; unknown workloads, strategies and scales are usage errors
 * (exit 2) that write nothing; a strategy whose compaction runs outlast --compaction-wait-ms fails the
 * lab (exit 1) with its store removed.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.js';
import { runCliCaptured } from '../support/run-cli.js';

const run = runCliCaptured;

describe('offset-store lab', () => {
  it('runs the strategies on a workload, writes the JSON and the HTML report, and prints a summary table', async () => {
    const dir = tempDir();
    const out = path.join(dir, 'out');
    const scratch = path.join(dir, 'scratch');
    const result = await run([
      'lab',
      '--strategies',
      'incremental,log-cleaner',
      '--workload',
      'all-distinct',
      '--scale',
      'small',
      '--out',
      out,
      '--dir',
      scratch,
      '--seed',
      '4',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toMatch(/^all-distinct \(small\): /);
    expect(lines[1]).toMatch(/^STRATEGY\s+SPACE AMP \(END\)\s+SPACE AMP \(MEAN\)\s+WRITE AMP/);
    expect(lines.slice(2, 5).map((l) => l.split(/\s+/)[0])).toEqual([
      'incremental',
      'log-cleaner',
      'none',
    ]);
    expect(result.stdout).toMatch(
      /Lab done in .*lab-report\.html \(charts\) and .*lab-result\.json\./,
    );
    const json = JSON.parse(readFileSync(path.join(out, 'lab-result.json'), 'utf8')) as {
      seed: number;
      workloads: { name: string; runs: unknown[] }[];
    };
    expect(json.seed).toBe(4);
    expect(json.workloads.map((w) => [w.name, w.runs.length])).toEqual([['all-distinct', 3]]);
    expect(readFileSync(path.join(out, 'lab-report.html'), 'utf8')).toContain(
      'data-library="vega-embed@',
    );
    expect(readdirSync(scratch), 'the scratch stores are deleted').toEqual([]);
  });

  it('refuses an unknown workload, strategy or scale, or a seed or wait out of range, with exit code 2, writing nothing', async () => {
    const dir = tempDir();
    const out = path.join(dir, 'out');
    for (const [args, message] of [
      [['--workload', 'hot'], /unknown workload "hot"/],
      [['--strategies', 'cleaner'], /unknown strategy "cleaner"/],
      [['--scale', 'huge'], /--scale must be one of small, default, full/],
      [
        ['--compaction-wait-ms', '0'],
        /--compaction-wait-ms must be an integer in \[1, 2147483647\], got "0"/,
      ],
      // A longer timer fires after 1 ms: the lab would blame the strategy at once.
      [
        ['--compaction-wait-ms', '2147483648'],
        /--compaction-wait-ms must be an integer in \[1, 2147483647\], got "2147483648"/,
      ],
      [['--seed', '4294967297'], /the seed must be an integer in \[0, 4294967295\]/],
    ] as const) {
      const result = await run(['lab', ...args, '--out', out, '--dir', path.join(dir, 'scratch')]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    expect(existsSync(out)).toBe(false);
  });

  it('refuses a --dir that is a file, naming it, before making --out or running anything', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'a-file');
    writeFileSync(file, 'x');
    const out = path.join(dir, 'out');
    for (const scratch of [file, path.join(file, 'sub')]) {
      const result = await run(['lab', '--scale', 'small', '--out', out, '--dir', scratch]);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `error: INVALID_CONFIG: --dir ${scratch} is not a directory: it or a folder on its path is a file (errno 40)\n`,
      );
      expect(existsSync(out)).toBe(false);
    }
  });

  it('refuses an --out it cannot write before running anything (the run used to be lost at its end)', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'a-file');
    writeFileSync(file, 'x');
    const scratch = path.join(dir, 'scratch');
    const started = performance.now();
    const result = await run([
      'lab',
      '--workload',
      'all-distinct',
      '--scale',
      'small',
      '--out',
      file,
      '--dir',
      scratch,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^error: INVALID_CONFIG: --out .*a-file cannot hold the report: /,
    );
    expect(performance.now() - started).toBeLessThan(2000);
    expect(existsSync(scratch)).toBe(false);
  });

  it('fails with exit 1, naming the strategy, when its compaction runs outlast --compaction-wait-ms, and removes its store', async () => {
    const dir = tempDir();
    const module = path.join(dir, 'never-settles.mjs');
    writeFileSync(
      module,
      "export default { name: 'never-settles', plan() { return new Promise(() => {}); } };\n",
    );
    const scratch = path.join(dir, 'scratch');
    const result = await run([
      'lab',
      '--strategies',
      module,
      '--workload',
      'hot-overwrite',
      '--scale',
      'small',
      '--compaction-wait-ms',
      '5000',
      '--out',
      path.join(dir, 'out'),
      '--dir',
      scratch,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^error: INVALID_COMPACTION_PLAN: lab: strategy .*never-settles\.mjs on hot-overwrite: .* still in flight after 5000 ms /,
    );
    expect(readdirSync(scratch)).toEqual([]);
  });
});
