/**
 * The calling thread's CPU scheduling policy on Linux, for the compaction worker threads.
 *
 * Under SCHED_IDLE a thread runs only on a core that nothing else wants, and a thread of the normal
 * policy that wakes up takes the core from it at once. A nice value only weighs the shares: a niced
 * thread still holds its core for a time slice when the thread answering commits wakes up from a
 * flush. On a 2-core machine a thread busy 40% of the time at nice 19 raised commit p99 by 60-70%;
 * the same thread under SCHED_IDLE by about 15%.
 *
 * Node has no binding for sched_setscheduler(2), so `chrt` (util-linux, on every Linux system that
 * has a shell) sets it, given the thread's id: the last part of the /proc/thread-self link. The
 * policy is read back from /proc/thread-self/stat, so what a report says is what the thread runs
 * under, not what was asked for.
 *
 * A thread under SCHED_IDLE on a machine whose cores are never idle does not run at all, so its
 * owner can take it back to the normal policy from another thread (`promoteThread`), by id.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** sched_setscheduler's SCHED_IDLE, as /proc/<pid>/task/<tid>/stat writes it (field 41). */
const SCHED_IDLE = 5;
/** The policy's field in /proc/.../stat, counted from 1 (the fields after the command name start at 3). */
const POLICY_FIELD = 41;

/** The calling thread's id (a Linux tid), or 0 where it cannot be told. */
export function threadId(): number {
  if (process.platform !== 'linux') return 0;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isSafeInteger(tid) && tid > 0 ? tid : 0;
  } catch {
    return 0;
  }
}

/** How long a chrt child may take before it is killed (the change then did not happen). */
const CHRT_TIMEOUT_MS = 5_000;

/**
 * Takes thread `tid` of this process back from SCHED_IDLE to the normal policy at nice `increment`
 * below the process. Nothing happens when `tid` is not a thread of this process (one that exited).
 * Best effort: chrt runs in a child process, so the calling thread never waits for it; the promise
 * says when it has ended (it never rejects).
 */
export function promoteThread(tid: number, increment: number): Promise<void> {
  if (!isThreadOfProcess(tid)) return Promise.resolve();
  try {
    // The nice first: the thread leaves SCHED_IDLE at it, not at the process's.
    setPriority(tid, Math.min(19, getPriority(0) + increment));
  } catch {
    return Promise.resolve(); // the thread exited meanwhile
  }
  return chrt('--other', tid).then(() => undefined);
}

/**
 * Puts thread `tid` of this process, one `promoteThread` promoted, back under SCHED_IDLE, and then
 * (only if it is under it) back at the process's nice; asynchronous like `promoteThread`. Where the
 * change is refused the thread stays as the promotion left it, never at a lower nice.
 */
export async function demoteThread(tid: number): Promise<void> {
  if (!isThreadOfProcess(tid)) return;
  if (!(await chrt('--idle', tid)) || !isThreadIdle(tid)) return;
  try {
    setPriority(tid, getPriority(0));
  } catch {
    // The thread exited meanwhile.
  }
}

function isThreadOfProcess(tid: number): boolean {
  return process.platform === 'linux' && tid > 0 && existsSync(`/proc/self/task/${tid}`);
}

/** Runs `chrt <policy> --pid 0 <tid>`; true when it exited with 0 (false if missing, refused or slow). */
function chrt(policy: '--other' | '--idle', tid: number): Promise<boolean> {
  return new Promise((resolve) => {
    try {
      const child = spawn('chrt', [policy, '--pid', '0', String(tid)], {
        stdio: 'ignore',
        timeout: CHRT_TIMEOUT_MS,
      });
      child.on('error', () => {}); // a missing chrt: 'close' follows with no exit code
      child.on('close', (code) => resolve(code === 0));
      child.unref();
    } catch {
      resolve(false);
    }
  });
}

/**
 * Takes the calling thread from SCHED_IDLE to the normal policy at nice `increment` below its own,
 * synchronously (a thread that starts while its pool already wants it promoted).
 */
export function promoteSelf(increment: number): void {
  const tid = threadId();
  if (tid === 0) return;
  try {
    setPriority(0, Math.min(19, getPriority(0) + increment));
  } catch {
    return; // a refused change: the thread stays as it was
  }
  chrtSync(['--other', '--pid', '0', String(tid)]);
}

/**
 * Whether a thread of this process, once under SCHED_IDLE, could be taken back to the normal policy
 * at `increment` nice above its own. Linux lets a thread leave SCHED_IDLE only if the caller has
 * CAP_SYS_NICE (in the initial user namespace, not a container's) or the thread's nice is within
 * RLIMIT_NICE (20 - nice <= the limit, usually 0): an unprivileged process could put a thread under
 * SCHED_IDLE and never take it back. Rather than read capabilities and limits and guess how a
 * namespace or an exec changes them, this tries: a child goes under SCHED_IDLE, raises its nice by
 * `increment`, and execs a chrt that takes it back, as a promotion's chrt would (synchronous, a few
 * ms; false off Linux, or without chrt or nice).
 */
export function canLeaveIdle(increment: number): boolean {
  return (
    process.platform === 'linux' &&
    chrtSync(
      ['--idle', '0', 'nice', '-n', String(increment), 'chrt', '--other', '0', 'true'],
      PROBE_TIMEOUT_MS,
    )
  );
}

/**
 * How long canLeaveIdle's child may take. The child runs under SCHED_IDLE, so on a machine whose
 * cores are all busy it gets a sliver of CPU: its execs of nice and chrt took 0.4-0.9 s beside six
 * busy processes on 2 cores, and ran past an earlier limit of 5 s under a loaded test run. A worker
 * that took that for a refusal ran at nice 19 for its life instead of under SCHED_IDLE, never
 * promoted when starved. It runs on a worker's own
 * thread, before its first job, so waiting longer holds nothing else up.
 */
const PROBE_TIMEOUT_MS = 60_000;

/** Runs chrt with `args` on the calling thread; true when it exited with 0 (false if missing, refused or slow). */
function chrtSync(args: string[], timeoutMs = CHRT_TIMEOUT_MS): boolean {
  try {
    return spawnSync('chrt', args, { stdio: 'ignore', timeout: timeoutMs }).status === 0;
  } catch {
    return false;
  }
}

/**
 * Puts the calling thread under SCHED_IDLE; true when it now runs under it. False off Linux, without
 * procfs or chrt, or where the change is refused (a sandbox): the thread is then left as it was.
 */
export function setThreadIdle(): boolean {
  if (process.platform !== 'linux') return false;
  const tid = threadId();
  if (tid === 0) return false;
  chrtSync(['--idle', '--pid', '0', String(tid)]);
  return isThreadIdle();
}

/**
 * Whether the calling thread (or thread `tid` of this process) runs under SCHED_IDLE (false where it
 * cannot be told, or for a thread that exited).
 */
export function isThreadIdle(tid?: number): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const stat = readFileSync(
      tid === undefined ? '/proc/thread-self/stat' : `/proc/self/task/${tid}/stat`,
      'utf8',
    );
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[POLICY_FIELD - 3]) === SCHED_IDLE;
  } catch {
    return false;
  }
}
