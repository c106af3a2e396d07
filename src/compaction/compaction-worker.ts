/**
 * Entry of a compaction worker thread (piscina): runs compaction jobs, loading each job's strategy
 * (a built-in, or a user's module by URL) in this thread. Jobs and results are plain data; the
 * segment bytes never cross threads (the worker reads and writes the files itself).
 */
import { getPriority, setPriority } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { workerData } from 'piscina';
import { loadChecksum } from '../codec/index.js';
import { NodeFileSystem, isThreadIdle, setThreadIdle, threadCpuMs } from '../io/index.js';
import type { CompactionWorkerData } from './worker-pool.js';
import {
  runCompactionJob,
  type CompactionJob,
  type CompactionJobResult,
} from './compaction-job.js';

const fs = new NodeFileSystem();

// On Linux a scheduling policy or a priority set for pid 0 is the calling thread's alone (elsewhere
// it is the whole process's, which must not be lowered): compaction then yields the cores to the
// threads that answer commits. 'idle' is SCHED_IDLE (io/thread-scheduling.ts), or nice 19 where
// that policy cannot be set.
const { nice } = (workerData ?? { nice: 0 }) as CompactionWorkerData;
if (process.platform === 'linux' && nice !== 0) {
  const increment = nice === 'idle' ? (setThreadIdle() ? 0 : 19) : nice;
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
  return result;
}
