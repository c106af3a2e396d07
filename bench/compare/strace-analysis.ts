/**
 * Parsers for the two strace outputs verify-durability.ts reads:
 * - the `strace -c` summary table (calls per syscall);
 * - a full `strace -f -o` trace, read as a sequence of completed syscalls, in which each commit's
 *   window runs from its `begin-<i>` stat() marker to its `ack-<i>` marker. A flush counts for commit
 *   i only if it started after begin-i and completed before ack-i: then the commit was acknowledged
 *   after a flush that could have covered its data. With concurrent committers the windows overlap
 *   and one group flush counts for every commit it could cover.
 *
 * Flushes: fsync, fdatasync, sync_file_range, msync(MS_SYNC), and any write to a descriptor opened
 * with O_DSYNC/O_SYNC (LMDB writes its meta page that way: a device flush strace -c does not show as
 * a sync call). io_uring_enter is counted apart: a flush submitted through io_uring would be invisible.
 */

/** Prefix of the commit marker paths; stat() of them fails with ENOENT and shows up in a trace. */
export const MARK_PREFIX = '/nonexistent-offset-store-durability-mark';

/** Kinds of flush the analysis tells apart. */
export type FlushKind =
  'fdatasync' | 'fsync' | 'sync_file_range' | 'msync' | 'dsync_write' | 'io_uring_enter';

export const FLUSH_KINDS: readonly FlushKind[] = [
  'fdatasync',
  'fsync',
  'sync_file_range',
  'msync',
  'dsync_write',
  'io_uring_enter',
];

/** Count per flush kind. */
export type FlushCounts = Record<FlushKind, number>;

/** A zeroed count per flush kind. */
export function zeroCounts(): FlushCounts {
  return {
    fdatasync: 0,
    fsync: 0,
    sync_file_range: 0,
    msync: 0,
    dsync_write: 0,
    io_uring_enter: 0,
  };
}

/** Calls per syscall from an `strace -c` summary (empty when nothing was called). */
export function parseStraceSummary(text: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const line of text.split('\n')) {
    const tokens = line.trim().split(/\s+/);
    // "% time  seconds  usecs/call  calls  [errors]  syscall"
    if (tokens.length < 5 || !/^\d+\.\d+$/.test(tokens[0]!) || !/^\d+$/.test(tokens[3]!)) continue;
    const name = tokens[tokens.length - 1]!;
    if (name === 'total') continue;
    calls.set(name, Number(tokens[3]));
  }
  return calls;
}

/** What a full trace says about each bracketed commit. */
export interface OrderAnalysis {
  commits: number;
  /** Commits with at least one flush between their begin and ack markers. */
  flushedBeforeAck: number;
  /** Flushes inside commit windows, summed over commits (with overlapping windows, counted once per window). */
  inWindows: FlushCounts;
  /** Flushes outside every commit window (between commits, or not awaited by any commit). */
  outsideWindows: FlushCounts;
}

interface Completed {
  pid: number;
  name: string;
  args: string;
  result: number;
  startLine: number;
  endLine: number;
}

/** Reads every completed syscall of a `strace -f -o` trace (lines prefixed by pid). */
export function completedSyscalls(text: string): Completed[] {
  const done: Completed[] = [];
  const pending = new Map<string, { args: string; startLine: number }>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const unfinished = /^(\d+)\s+(\w+)\((.*) <unfinished \.\.\.>$/.exec(line);
    if (unfinished !== null) {
      pending.set(`${unfinished[1]}:${unfinished[2]}`, { args: unfinished[3]!, startLine: i });
      continue;
    }
    const resumed = /^(\d+)\s+<\.\.\. (\w+) resumed>(.*)\)\s+=\s+(-?\d+)/.exec(line);
    if (resumed !== null) {
      const key = `${resumed[1]}:${resumed[2]}`;
      const start = pending.get(key);
      pending.delete(key);
      done.push({
        pid: Number(resumed[1]),
        name: resumed[2]!,
        args: `${start?.args ?? ''}${resumed[3]!}`,
        result: Number(resumed[4]),
        startLine: start?.startLine ?? i,
        endLine: i,
      });
      continue;
    }
    const whole = /^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+)/.exec(line);
    if (whole !== null) {
      done.push({
        pid: Number(whole[1]),
        name: whole[2]!,
        args: whole[3]!,
        result: Number(whole[4]),
        startLine: i,
        endLine: i,
      });
    }
  }
  return done;
}

const WRITE_CALLS = new Set(['write', 'pwrite64', 'writev', 'pwritev', 'pwritev2']);

/**
 * Analyses a full trace: `dsyncFds` are the O_DSYNC descriptors open before tracing started;
 * `markPrefix` the path prefix of the stat() markers.
 */
export function analyseOrder(
  text: string,
  dsyncFds: readonly number[],
  markPrefix: string,
): OrderAnalysis {
  const dsync = new Set(dsyncFds);
  const marks = new Map<string, number>();
  const flushes: { kind: FlushKind; startLine: number; endLine: number }[] = [];
  for (const call of completedSyscalls(text)) {
    const fd = Number(/^(\d+)/.exec(call.args)?.[1] ?? Number.NaN);
    if (
      (call.name === 'statx' || call.name === 'newfstatat' || call.name === 'stat') &&
      call.args.includes(markPrefix)
    ) {
      const name = new RegExp(`${markPrefix}/([\\w-]+)`).exec(call.args)?.[1];
      if (name !== undefined) marks.set(name, call.endLine);
    } else if (call.name === 'openat' && call.result >= 0 && /O_DSYNC|O_SYNC/.test(call.args)) {
      dsync.add(call.result);
    } else if (call.name === 'close' && dsync.has(fd)) {
      dsync.delete(fd);
    } else if (
      (call.name === 'fdatasync' ||
        call.name === 'fsync' ||
        call.name === 'sync_file_range' ||
        call.name === 'io_uring_enter') &&
      call.result >= 0
    ) {
      flushes.push({ kind: call.name, startLine: call.startLine, endLine: call.endLine });
    } else if (call.name === 'msync' && call.args.includes('MS_SYNC') && call.result >= 0) {
      flushes.push({ kind: 'msync', startLine: call.startLine, endLine: call.endLine });
    } else if (WRITE_CALLS.has(call.name) && dsync.has(fd) && call.result >= 0) {
      flushes.push({ kind: 'dsync_write', startLine: call.startLine, endLine: call.endLine });
    }
  }

  const windows: { begin: number; ack: number }[] = [];
  for (let i = 0; marks.has(`begin-${i}`); i++) {
    const ack = marks.get(`ack-${i}`);
    if (ack !== undefined) windows.push({ begin: marks.get(`begin-${i}`)!, ack });
  }
  // Windows overlap when commits run concurrently: a shared (group) flush then counts for each.
  const inWindows = zeroCounts();
  const outsideWindows = zeroCounts();
  const inSomeWindow = new Set<number>();
  let flushedBeforeAck = 0;
  for (const window of windows) {
    let flushed = false;
    for (let f = 0; f < flushes.length; f++) {
      const flush = flushes[f]!;
      if (flush.startLine <= window.begin || flush.endLine >= window.ack) continue;
      inWindows[flush.kind] += 1;
      inSomeWindow.add(f);
      if (flush.kind !== 'io_uring_enter') flushed = true;
    }
    if (flushed) flushedBeforeAck += 1;
  }
  flushes.forEach((flush, f) => {
    if (!inSomeWindow.has(f)) outsideWindows[flush.kind] += 1;
  });
  return { commits: windows.length, flushedBeforeAck, inWindows, outsideWindows };
}
