/**
 * Where log-cleaner jobs run. The store's file-system port decides: on the real file system they
 * run on worker threads (worker-pool.ts), each worker with its own NodeFileSystem, since a port
 * object cannot cross threads; on any other port (a fault-injecting one in tests, a simulated disk)
 * they run in this thread through that very port, so that every byte compaction writes meets the
 * port's faults. The job and its result are the same plain data either way.
 */
import { OffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import { cleanSegments, type CleanJob, type CleanResult } from './log-cleaner.js';

/** Runs log-cleaner jobs. */
export interface CleanRunner {
  /** Runs one job; STORE_CLOSED once closed. */
  clean(job: CleanJob): Promise<CleanResult>;
  /** Stops taking jobs; a job in flight is abandoned (its output is never swapped in). Idempotent. */
  close(): Promise<void>;
}

/** Runs log-cleaner jobs on the calling thread, through a given file-system port. */
export class InProcessCleanRunner implements CleanRunner {
  readonly #fs: FileSystem;
  #closed = false;

  /** Runs every job through `fs`, the store's own port, so its faults (in tests) reach compaction too. */
  constructor(fs: FileSystem) {
    this.#fs = fs;
  }

  /**
   * Runs the job on this thread; STORE_CLOSED if the runner was closed before or while it ran (its
   * output is then never swapped in).
   */
  async clean(job: CleanJob): Promise<CleanResult> {
    if (this.#closed) throw new OffsetStoreError('STORE_CLOSED', 'the compaction runner is closed');
    const result = await cleanSegments(this.#fs, job);
    if (this.#closed) throw new OffsetStoreError('STORE_CLOSED', `the compaction runner was closed while cleaning ${job.dir}`);
    return result;
  }

  /** Refuses later jobs; a job in flight finishes its I/O but reports STORE_CLOSED. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
  }
}
