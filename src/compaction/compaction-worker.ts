/**
 * Entry of a compaction worker thread (piscina): runs compaction jobs, loading each job's strategy
 * (a built-in, or a user's module by URL) in this thread. Jobs and results are plain data; the
 * segment bytes never cross threads (the worker reads and writes the files itself).
 */
import { getHeapStatistics } from 'node:v8';
import { loadChecksum } from '../codec/index.js';
import { NodeFileSystem, threadCpuMs } from '../io/index.js';
import {
  runCompactionJob,
  type CompactionJob,
  type CompactionJobResult,
} from './compaction-job.js';

const fs = new NodeFileSystem();

/** Runs one compaction job, and reports this thread's CPU time for it and its heap at the end. */
export default async function runJob(job: CompactionJob): Promise<CompactionJobResult> {
  await loadChecksum();
  const cpuStartMs = threadCpuMs();
  const result = await runCompactionJob(fs, job);
  const cpuEndMs = threadCpuMs();
  if (cpuStartMs !== undefined && cpuEndMs !== undefined)
    result.workerCpuMs = cpuEndMs - cpuStartMs;
  result.workerHeapBytes = getHeapStatistics().used_heap_size;
  return result;
}
