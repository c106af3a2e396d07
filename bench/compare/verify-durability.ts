/**
 * Checks the comparison's durability claim: every store under test makes a commit durable before it
 * acknowledges it, with about one device flush per commit. Run: `npx tsx bench/compare/verify-durability.ts`
 * (env: COMPARE_ADAPTERS, COMPARE_DIR, DURABILITY_COMMITS=200, DURABILITY_CONCURRENT_COMMITS=2000).
 *
 * Per adapter, a child process (durability-child.ts) opens the store and warms it up; strace then
 * attaches to that process only (`-f -p`: all its threads, not tsx's esbuild service) for exactly the
 * commits, in four runs:
 * 1. `strace -f -c -e trace=fsync,fdatasync,sync_file_range,msync,io_uring_enter` over N sequential
 *    commits: sync syscalls per commit.
 * 2. a full trace of N sequential commits, each bracketed by stat() markers: was each commit
 *    acknowledged after a flush that started after it began, and how many flushes of which kind,
 *    counting writes to O_DSYNC descriptors (see strace-analysis.ts).
 * 3. as 1 with 64 concurrent committers: flushes per commit below 1 mean group commit.
 * 4. as 2 with 64 concurrent committers: was each commit acknowledged after a flush that started
 *    after it began (a group flush covers every commit whose window it lies in).
 * Prints a table and writes bench/results/durability-<date>.json and .md.
 *
 * Findings on this machine (2 cores, ext4 on a virtio disk, Node 20.20; 200 sequential commits of 5
 * offsets, then 2000 from 64 committers; bench/results/durability-<date>.md has the last run):
 *
 * | store | strace -c per sequential commit | acked after own flush | flushes before ack per commit | 64 committers: per commit |
 * |---|---|---|---|---|
 * | offset-store 'fsync' | 1.00 fdatasync | 200/200 | 1 fdatasync | 0.250 fdatasync, 2000/2000 acked after one |
 * | lmdb-js transactionSync | 1.00 fdatasync | 200/200 | 1 fdatasync + 1 O_DSYNC meta write | 1.000 (serialized) |
 * | lmdb-js async transaction | 1.00 fdatasync | 200/200 | 1 fdatasync + 1 O_DSYNC meta write | 0.016 (~60 commits per txn) |
 * | better-sqlite3 WAL, FULL | 1.00 fsync | 200/200 | 1 fsync of the -wal file | 1.003 (serialized; + checkpoints) |
 * | classic-level sync: true | 1.00 fdatasync | 200/200 | 1 fdatasync of the log | 0.489 (LevelDB merges writers) |
 *
 * - Every store acknowledges each commit only after a flush that started after the commit began,
 *   sequentially and with 64 committers: the comparison is like for like.
 * - LMDB (default options, overlappingSync on) pays two device flushes per commit: fdatasync of
 *   data.mdb, then a 128-byte meta-page pwrite on a descriptor opened O_DSYNC. `strace -c` on sync
 *   calls alone shows one; the full trace shows both.
 * - better-sqlite3 builds SQLite with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1: without the adapter's
 *   `synchronous=FULL` there would be no sync at commit at all.
 * - offset-store's group commit is per offsets-bucket: 64 committers over 16 offsets-buckets share
 *   an fdatasync ~4 at a time, where lmdb-js's async transactions batch ~60 commits per flush.
 *
 * Expected order of magnitude: 1.0-1.1 flush syscalls per sequential commit for every store, N/N
 * commits flushed before their ack; well below 1 per commit for group-committing stores at 64.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadAdapterSpecs } from './adapters/index.js';
import { REPO_ROOT, readCompareConfig } from './compare-config.js';
import {
  FLUSH_KINDS,
  MARK_PREFIX,
  analyseOrder,
  parseStraceSummary,
  zeroCounts,
  type FlushCounts,
  type OrderAnalysis,
} from './strace-analysis.js';

const STRACE = '/usr/bin/strace';
const CHILD = fileURLToPath(new URL('./durability-child.ts', import.meta.url));
const SYNC_CALLS = 'fsync,fdatasync,sync_file_range,msync,io_uring_enter';
const ORDER_CALLS = `${SYNC_CALLS},openat,close,write,pwrite64,writev,pwritev,pwritev2,statx,newfstatat`;

/** What strace found for one adapter. */
interface AdapterDurability {
  adapterId: string;
  name: string;
  durability: string;
  sequentialCommits: number;
  /** strace -c: sync syscalls per sequential commit. */
  syncCallsPerCommit: FlushCounts;
  /** Full trace: flushes per sequential commit, including O_DSYNC writes, inside commit windows. */
  order: OrderAnalysis;
  concurrentCommits: number;
  concurrentCommitters: number;
  /** strace -c with 64 committers: sync syscalls per commit. */
  concurrentSyncCallsPerCommit: FlushCounts;
  /** Full trace with 64 committers: commits acknowledged after a flush that started after they began. */
  concurrentOrder: OrderAnalysis;
  error?: string;
}

interface ChildMessage {
  event: string;
  pid?: number;
  dsyncFds?: number[];
}

class TracedChild {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #lines: Interface;
  readonly #messages: ChildMessage[] = [];
  #waiter: (() => void) | undefined;
  #stderr = '';

  constructor(adapterId: string, dir: string, commits: number, committers: number) {
    this.#child = spawn(
      process.execPath,
      ['--import', 'tsx', CHILD, adapterId, dir, String(commits), String(committers)],
      { cwd: REPO_ROOT },
    );
    this.#child.stderr.on('data', (chunk: Buffer) => {
      this.#stderr += chunk.toString();
    });
    this.#lines = createInterface({ input: this.#child.stdout });
    this.#lines.on('line', (line) => {
      try {
        this.#messages.push(JSON.parse(line) as ChildMessage);
      } catch {
        this.#stderr += `${line}\n`;
      }
      this.#waiter?.();
    });
    this.#child.on('exit', () => this.#waiter?.());
  }

  async next(event: string, timeoutMs = 120_000): Promise<ChildMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const message = this.#messages.shift();
      if (message !== undefined) {
        if (message.event !== event)
          throw new Error(`child sent '${message.event}', expected '${event}'`);
        return message;
      }
      if (this.#child.exitCode !== null)
        throw new Error(
          `child exited (${this.#child.exitCode}) before '${event}': ${this.#stderr.trim()}`,
        );
      if (Date.now() > deadline)
        throw new Error(
          `child did not send '${event}' within ${timeoutMs} ms: ${this.#stderr.trim()}`,
        );
      await new Promise<void>((resolve) => {
        this.#waiter = resolve;
        setTimeout(resolve, 1000);
      });
      this.#waiter = undefined;
    }
  }

  send(word: string): void {
    this.#child.stdin.write(`${word}\n`);
  }

  async finish(): Promise<void> {
    if (this.#child.exitCode === null)
      await new Promise((resolve) => this.#child.once('exit', resolve));
  }

  kill(): void {
    if (this.#child.exitCode === null) this.#child.kill('SIGKILL');
  }
}

/** Runs `strace <args> -p pid -o out` until `body` resolves; returns the output file's text. */
async function traced(
  pid: number,
  straceArgs: string[],
  out: string,
  body: () => Promise<void>,
): Promise<string> {
  const strace = spawn(STRACE, [...straceArgs, '-o', out, '-p', String(pid)]);
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    strace.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (/attached/.test(stderr)) resolve();
    });
    strace.on('exit', (code) =>
      reject(new Error(`strace exited (${code}) before attaching: ${stderr.trim()}`)),
    );
  });
  try {
    await body();
  } finally {
    const exited = new Promise((resolve) => strace.once('exit', resolve));
    strace.kill('SIGINT');
    await exited;
  }
  return readFileSync(out, 'utf8');
}

async function runChild(
  adapterId: string,
  runDir: string,
  commits: number,
  committers: number,
  straceArgs: string[],
): Promise<{ text: string; dsyncFds: number[] }> {
  const dir = join(
    runDir,
    `${adapterId}-${committers}-${straceArgs.includes('-c') ? 'count' : 'order'}`,
  );
  mkdirSync(dir, { recursive: true });
  const child = new TracedChild(adapterId, dir, commits, committers);
  try {
    const ready = await child.next('ready');
    const text = await traced(ready.pid!, straceArgs, `${dir}.strace`, async () => {
      child.send('go');
      await child.next('committed', 600_000);
    });
    child.send('close');
    await child.next('closed');
    await child.finish();
    return { text, dsyncFds: ready.dsyncFds ?? [] };
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
    rmSync(`${dir}.strace`, { force: true });
  }
}

function perCommit(calls: Map<string, number>, commits: number): FlushCounts {
  const counts = zeroCounts();
  for (const kind of FLUSH_KINDS) counts[kind] = (calls.get(kind) ?? 0) / commits;
  return counts;
}

function describeCounts(counts: FlushCounts, digits = 2): string {
  const parts = FLUSH_KINDS.filter((k) => counts[k] > 0).map(
    (k) => `${k === 'dsync_write' ? 'O_DSYNC write' : k} ${counts[k].toFixed(digits)}`,
  );
  return parts.length === 0 ? 'none' : parts.join(' + ');
}

async function verify(
  adapterId: string,
  name: string,
  durability: string,
  runDir: string,
  commits: number,
  concurrentCommits: number,
): Promise<AdapterDurability> {
  const base = {
    adapterId,
    name,
    durability,
    sequentialCommits: commits,
    concurrentCommits,
    concurrentCommitters: 64,
  };
  try {
    const count = await runChild(adapterId, runDir, commits, 1, [
      '-f',
      '-c',
      '-e',
      `trace=${SYNC_CALLS}`,
    ]);
    const order = await runChild(adapterId, runDir, commits, 1, [
      '-f',
      '-e',
      `trace=${ORDER_CALLS}`,
      '-e',
      'signal=none',
    ]);
    const concurrent = await runChild(adapterId, runDir, concurrentCommits, 64, [
      '-f',
      '-c',
      '-e',
      `trace=${SYNC_CALLS}`,
    ]);
    const concurrentOrder = await runChild(adapterId, runDir, concurrentCommits, 64, [
      '-f',
      '-e',
      `trace=${ORDER_CALLS}`,
      '-e',
      'signal=none',
    ]);
    return {
      ...base,
      syncCallsPerCommit: perCommit(parseStraceSummary(count.text), commits),
      order: analyseOrder(order.text, order.dsyncFds, MARK_PREFIX),
      concurrentSyncCallsPerCommit: perCommit(
        parseStraceSummary(concurrent.text),
        concurrentCommits,
      ),
      concurrentOrder: analyseOrder(concurrentOrder.text, concurrentOrder.dsyncFds, MARK_PREFIX),
    };
  } catch (error) {
    const none: OrderAnalysis = {
      commits: 0,
      flushedBeforeAck: 0,
      inWindows: zeroCounts(),
      outsideWindows: zeroCounts(),
    };
    return {
      ...base,
      syncCallsPerCommit: zeroCounts(),
      order: none,
      concurrentSyncCallsPerCommit: zeroCounts(),
      concurrentOrder: none,
      error: error instanceof Error ? error.message : String(error),
    };
  }
}

function rows(results: AdapterDurability[]): string[][] {
  return results.map((r) => {
    if (r.error !== undefined) return [r.name, r.durability, `error: ${r.error}`, '', '', '', ''];
    const inWindows = zeroCounts();
    for (const kind of FLUSH_KINDS)
      inWindows[kind] = r.order.inWindows[kind] / Math.max(1, r.order.commits);
    return [
      r.name,
      r.durability,
      describeCounts(r.syncCallsPerCommit),
      `${r.order.flushedBeforeAck}/${r.order.commits}`,
      describeCounts(inWindows),
      describeCounts(r.concurrentSyncCallsPerCommit, 3),
      `${r.concurrentOrder.flushedBeforeAck}/${r.concurrentOrder.commits}`,
    ];
  });
}

const HEADERS = [
  'store',
  'durability',
  'strace -c: sync calls per commit',
  'acked after own flush',
  'flushes per commit before ack (incl. O_DSYNC writes)',
  '64 committers: sync calls per commit',
  '64 committers: acked after a flush',
];

function renderTerminal(results: AdapterDurability[]): string {
  const table = [HEADERS, ...rows(results)];
  const widths = HEADERS.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  return table
    .map((row) =>
      row
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function renderMarkdown(
  results: AdapterDurability[],
  commits: number,
  concurrentCommits: number,
): string {
  const escape = (s: string): string => s.replaceAll('|', '\\|');
  return [
    `### Durability check (${new Date().toISOString().slice(0, 10)})`,
    '',
    `${commits} sequential commits of 5 offsets per store traced with \`strace -f -c\` (sync calls) and with a full trace bracketing each commit ` +
      `(flushes between its start and its ack, counting writes to O_DSYNC descriptors); then ${concurrentCommits} commits from 64 concurrent committers.`,
    '',
    `| ${HEADERS.join(' | ')} |`,
    `|${HEADERS.map(() => '---').join('|')}|`,
    ...rows(results).map((row) => `| ${row.map(escape).join(' | ')} |`),
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  if (!existsSync(STRACE)) {
    process.stdout.write(
      `${STRACE} not found: cannot verify durability on this machine. Install strace, or check by hand that each adapter flushes before it acknowledges.\n`,
    );
    return;
  }
  const config = readCompareConfig();
  const commits = Number(process.env['DURABILITY_COMMITS'] ?? 200);
  const concurrentCommits = Number(process.env['DURABILITY_CONCURRENT_COMMITS'] ?? 2000);
  const catalog = await loadAdapterSpecs(config.adapterIds);
  for (const u of catalog.unavailable) process.stdout.write(`not checked: ${u.id}: ${u.reason}\n`);
  const runDir = join(config.dataDir, `durability-${process.pid}`);
  mkdirSync(runDir, { recursive: true });
  const results: AdapterDurability[] = [];
  try {
    for (const spec of catalog.specs) {
      const adapter = spec.create();
      process.stdout.write(`tracing ${adapter.name} ...\n`);
      results.push(
        await verify(spec.id, adapter.name, adapter.durability, runDir, commits, concurrentCommits),
      );
    }
  } finally {
    rmSync(runDir, { recursive: true, force: true });
  }
  process.stdout.write(`\n${renderTerminal(results)}\n`);
  for (const r of results) {
    for (const [what, order] of [
      ['sequential', r.order],
      ['concurrent', r.concurrentOrder],
    ] as const) {
      if (r.error === undefined && order.flushedBeforeAck < order.commits) {
        process.stdout.write(
          `WARNING: ${r.name}: ${order.commits - order.flushedBeforeAck} of ${order.commits} ${what} commits were acknowledged without a flush that started after they began.\n`,
        );
      }
    }
  }
  const resultsDir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const stamp = new Date().toISOString().slice(0, 16).replace(':', '').replace('T', '-');
  writeFileSync(
    join(resultsDir, `durability-${stamp}.json`),
    `${JSON.stringify(results, null, 2)}\n`,
  );
  writeFileSync(
    join(resultsDir, `durability-${stamp}.md`),
    renderMarkdown(results, commits, concurrentCommits),
  );
  process.stdout.write(`\nwrote ${join(resultsDir, `durability-${stamp}.json`)} and .md\n`);
  const unflushed = (o: OrderAnalysis): boolean => o.flushedBeforeAck < o.commits;
  if (
    results.some((r) => r.error !== undefined || unflushed(r.order) || unflushed(r.concurrentOrder))
  )
    process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
