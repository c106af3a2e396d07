/**
 * Entry of a compaction worker thread (piscina): runs compaction jobs, loading each job's strategy
 * (a built-in, or a user's module by URL) in this thread. Jobs and results are plain data; the
 * segment bytes never cross threads (the worker reads and writes the files itself).
 */
import { getPriority, setPriority } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { workerData } from 'piscina';
import { loadChecksum } from '../codec/index.js';
import {
  NodeFileSystem,
  canLeaveIdle,
  isThreadIdle,
  promoteSelf,
  setThreadIdle,
  threadCpuMs,
  threadId,
} from '../io/index.js';
import { STARVED_NICE, type CompactionWorkerData } from './worker-pool.js';
import {
  UNCAUGHT_IN_WORKER,
  runCompactionJob,
  type CompactionJob,
  type CompactionJobResult,
} from './compaction-job.js';

const fs = new NodeFileSystem();

/** What ends the thread when what nothing caught was not an Error (a string, a plain object). */
class UncaughtInWorker extends Error {
  override readonly name = 'UncaughtInWorker';
}

// An error nothing catches (a strategy's timer that throws, a promise it leaves rejected) ends this
// thread, and the job it was running fails with that error: said so in its message, which would
// otherwise read like the job's own failure (an I/O error). Rethrown, so the thread still ends.
process.on('uncaughtException', (error: unknown) => {
  const why = `${UNCAUGHT_IN_WORKER} (a strategy's code throwing from a timer, or leaving a promise rejected)`;
  if (error instanceof Error) {
    error.message = `${why}: ${error.message}`;
    throw error;
  }
  throw new UncaughtInWorker(`${why}: ${String(error)}`);
});

// On Linux a scheduling policy or a priority set for pid 0 is the calling thread's alone (elsewhere
// it is the whole process's, which must not be lowered): compaction then yields the cores to the
// threads that answer commits. 'idle' is SCHED_IDLE (io/thread-scheduling.ts), or nice 19 where
// that policy cannot be set, or where the thread could not be taken back from it (an unprivileged
// process: see canLeaveIdle), since on a machine with no idle core it would then never run again.
// Under 'idle' the thread's id goes into the pool's registry first, so that the pool can promote it
// when a job waits too long for an idle core (worker-pool.ts); the end of that job puts it back.
const { nice, threads, starvedJobs } = (workerData ?? {
  nice: 0,
}) as Partial<CompactionWorkerData> & {
  nice: CompactionWorkerData['nice'];
};
const registry = threads === undefined ? undefined : new Int32Array(threads);
const tid = threadId();
let idle = false;
if (process.platform === 'linux' && nice !== 0) {
  if (nice === 'idle' && registry !== undefined && tid !== 0) {
    for (let i = 0; i < registry.length; i++)
      if (Atomics.compareExchange(registry, i, 0, tid) === 0) {
        process.on('exit', () => Atomics.compareExchange(registry, i, tid, 0));
        break;
      }
  }
  idle = nice === 'idle' && canLeaveIdle(STARVED_NICE) && setThreadIdle();
  // Started while a job of the pool waits too long for an idle core: promoted at once, since the
  // pool's own promotion may have come before this thread registered or went idle.
  if (idle && starvedJobs !== undefined && Atomics.load(new Int32Array(starvedJobs), 0) > 0)
    promoteSelf(STARVED_NICE);
  const increment = nice === 'idle' ? (idle ? 0 : 19) : nice;
  try {
    if (increment > 0) setPriority(0, Math.min(19, getPriority(0) + increment));
  } catch {
    // A priority that cannot be changed (a sandbox refusing setpriority) leaves the thread as it is.
  }
}

/** Runs one compaction job, and reports this thread's CPU time for it and its heap at the end. */
export default async function runJob(job: CompactionJob): Promise<CompactionJobResult> {
  await loadChecksum();
  const cpuStartMs = threadCpuMs();
  const result = await runCompactionJob(fs, job);
  const cpuEndMs = threadCpuMs();
  if (cpuStartMs !== undefined && cpuEndMs !== undefined)
    result.workerCpuMs = cpuEndMs - cpuStartMs;
  result.workerHeapBytes = getHeapStatistics().used_heap_size;
  result.workerPriority = isThreadIdle() ? 'idle' : getPriority(0);
  // A worker the pool promoted during this job (it waited too long for an idle core) finished it at
  // the normal policy, and goes back to SCHED_IDLE for the next one. Not at the start of a job: a
  // starved worker is promoted before it can start the job it waits for.
  if (idle && result.workerPriority !== 'idle') setThreadIdle();
  return result;
}
