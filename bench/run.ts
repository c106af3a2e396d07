/**
 * `npm run bench`: runs every `bench/*.bench.ts` in turn, each in its own child process
 * (`node --import tsx <file>`), so one bench's heap, open files, worker threads and JIT state never
 * colour the next one's figures. Prints each bench's own output, then a summary of what ran.
 *
 * Picking benches: names (or parts of names) as arguments, or in `BENCH` (comma-separated):
 *   npm run bench -- commit fetch
 *   BENCH=recovery,memory npm run bench
 *   npm run bench -- --list
 * Sizes: `BENCH_SCALE=quick|default|full` (see bench/support/scale.ts), passed on to every bench.
 * Exits non-zero when a bench fails (the others still run).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const REPO_DIR = path.dirname(BENCH_DIR);
const SUFFIX = '.bench.ts';

/** Every bench file, by name (`commit` for `commit.bench.ts`), in alphabetical order. */
function benchFiles(): { name: string; file: string }[] {
  return fs
    .readdirSync(BENCH_DIR)
    .filter((entry) => entry.endsWith(SUFFIX))
    .sort()
    .map((entry) => ({ name: entry.slice(0, -SUFFIX.length), file: path.join(BENCH_DIR, entry) }));
}

/** The filters from the command line, else from `BENCH`; empty = everything. */
function filters(args: readonly string[]): string[] {
  const fromArgs = args.filter((a) => !a.startsWith('--'));
  const source = fromArgs.length > 0 ? fromArgs : (process.env.BENCH ?? '').split(',');
  return source.map((f) => f.trim().replace(SUFFIX, '')).filter((f) => f.length > 0);
}

function runOne(file: string): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: REPO_DIR,
      stdio: 'inherit',
      env: process.env,
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const all = benchFiles();
  if (args.includes('--list')) {
    for (const b of all) console.log(b.name);
    return 0;
  }
  const wanted = filters(args);
  const selected =
    wanted.length === 0 ? all : all.filter((b) => wanted.some((w) => b.name.includes(w)));
  const unmatched = wanted.filter((w) => !all.some((b) => b.name.includes(w)));
  if (unmatched.length > 0)
    console.error(
      `no bench matches: ${unmatched.join(', ')} (have: ${all.map((b) => b.name).join(', ')})`,
    );
  if (selected.length === 0) return 1;

  console.log(
    `running ${selected.length} bench file(s): ${selected.map((b) => b.name).join(', ')}; BENCH_SCALE=${process.env.BENCH_SCALE ?? 'default'}`,
  );
  const summary: { name: string; seconds: string; result: string }[] = [];
  for (const bench of selected) {
    console.log(`\n========== ${path.relative(REPO_DIR, bench.file)} ==========`);
    const startedMs = performance.now();
    const { code, signal } = await runOne(bench.file);
    const result = code === 0 ? 'ok' : `FAILED (${signal ?? `exit ${code}`})`;
    summary.push({
      name: bench.name,
      seconds: ((performance.now() - startedMs) / 1000).toFixed(1),
      result,
    });
  }
  console.log('\n========== summary ==========');
  const width = Math.max(...summary.map((s) => s.name.length));
  for (const s of summary)
    console.log(`${s.name.padEnd(width)}  ${s.seconds.padStart(7)} s  ${s.result}`);
  return summary.every((s) => s.result === 'ok') ? (unmatched.length > 0 ? 1 : 0) : 1;
}

process.exitCode = await main();
