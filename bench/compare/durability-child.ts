/**
 * Child process of verify-durability.ts: runs commits on one adapter while the parent's strace is
 * attached to it, and marks each commit's start and acknowledgement with a stat() of a path that
 * cannot exist, so the trace shows which flushes happened between a commit's start and its ack.
 *
 *   node --import tsx bench/compare/durability-child.ts <adapterId> <dir> <commits> <committers>
 *
 * Protocol (one JSON object per stdout line, one word per stdin line), so that strace sees only the
 * commits, not module loading (tsx's esbuild child is never traced), open or close:
 *   -> {"event":"ready","pid":…,"dsyncFds":[…]}   after open and 3 warm-up commits
 *   <- go
 *   -> {"event":"committed","commits":…,"ms":…}   after the last commit resolved
 *   <- close
 *   -> {"event":"closed"}
 * Each commit is bracketed by MARK_PREFIX/begin-<i> and MARK_PREFIX/ack-<i>; with more than one
 * committer, the committers run closed loops until `commits` commits resolved.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { OffsetCommit } from './adapter.js';
import { loadAdapterSpec } from './adapters/index.js';
import { MARK_PREFIX } from './strace-analysis.js';

const O_DSYNC = 0o10000;
const OFFSETS_PER_COMMIT = 5;

function mark(name: string): void {
  statSync(`${MARK_PREFIX}/${name}`, { throwIfNoEntry: false });
}

/** Descriptors of this process opened with O_DSYNC (or O_SYNC, which includes it): writes to them flush. */
function dsyncFds(): number[] {
  const fds: number[] = [];
  for (const name of readdirSync('/proc/self/fdinfo')) {
    try {
      const flags = /flags:\s*([0-7]+)/.exec(
        readFileSync(`/proc/self/fdinfo/${name}`, 'utf8'),
      )?.[1];
      if (flags !== undefined && (Number.parseInt(flags, 8) & O_DSYNC) !== 0)
        fds.push(Number(name));
    } catch {
      // The descriptor closed while we listed it.
    }
  }
  return fds;
}

function offsets(round: number): OffsetCommit[] {
  return Array.from({ length: OFFSETS_PER_COMMIT }, (_, bucketId) => ({
    tableId: 1,
    partitionId: null,
    bucketId,
    offset: round,
  }));
}

function send(message: object): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

async function main(): Promise<void> {
  const [adapterId, dir, commitsArg, committersArg] = process.argv.slice(2);
  if (
    adapterId === undefined ||
    dir === undefined ||
    commitsArg === undefined ||
    committersArg === undefined
  ) {
    throw new Error('usage: durability-child.ts <adapterId> <dir> <commits> <committers>');
  }
  const commits = Number(commitsArg);
  const committers = Number(committersArg);
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const expect = async (word: string): Promise<void> => {
    const line = await lines.next();
    if (line.done === true || line.value.trim() !== word)
      throw new Error(`expected '${word}' on stdin`);
  };

  const adapter = (await loadAdapterSpec(adapterId)).create();
  await adapter.open(dir);
  for (let i = 0; i < 3; i++) await adapter.commit('warmup', offsets(i));
  send({ event: 'ready', pid: process.pid, dsyncFds: dsyncFds() });
  await expect('go');

  const t0 = performance.now();
  mark('start');
  if (committers === 1) {
    for (let i = 0; i < commits; i++) {
      mark(`begin-${i}`);
      await adapter.commit(`group-${i % 16}`, offsets(i));
      mark(`ack-${i}`);
    }
  } else {
    let started = 0;
    await Promise.all(
      Array.from({ length: committers }, async (_, k) => {
        while (started < commits) {
          const i = started++;
          mark(`begin-${i}`);
          await adapter.commit(`committer-${k}`, offsets(i));
          mark(`ack-${i}`);
        }
      }),
    );
  }
  mark('end');
  send({ event: 'committed', commits, ms: performance.now() - t0 });

  await expect('close');
  await adapter.close();
  send({ event: 'closed' });
  process.stdin.destroy();
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
