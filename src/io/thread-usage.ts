/**
 * CPU time of the calling thread, for reports of work done on worker threads (a compaction job):
 * Linux's `/proc/thread-self/schedstat` (first field: nanoseconds on a CPU). `process.cpuUsage()`
 * would count every thread of the process.
 */
import { readFileSync } from 'node:fs';

/** CPU time of the calling thread so far, in ms; undefined where the platform does not tell. */
export function threadCpuMs(): number | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const ns = Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
    return Number.isFinite(ns) ? ns / 1e6 : undefined;
  } catch {
    // No procfs (a container without it): the report goes without the figure.
    return undefined;
  }
}
