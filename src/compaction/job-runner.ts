/**
 * Where compaction jobs run. The store's file-system port decides: on the real file system they run
 * on worker threads (worker-pool.ts), each worker with its own NodeFileSystem, since a port object
 * cannot cross threads; on any other port (a fault-injecting one in tests, a simulated disk) they run
 * on this thread through that very port, so that every byte compaction reads or writes meets the
 * port's faults. The job, the strategy (loaded by reference on either side) and the result are the
 * same plain data either way.
 */
import { OffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import {
  runCompactionJob,
  type CompactionJob,
  type CompactionJobResult,
} from './compaction-job.js';

/** Runs compaction jobs. */
export interface CompactionRunner {
  /**
   * Runs one job; STORE_CLOSED once closed. Once `stop` aborts, the job is given up (a worker
   * running it is terminated; on this thread, a strategy still planning is abandoned) and the call
   * rejects with the signal's reason; its output is never swapped in.
   */
  run(job: CompactionJob, stop?: AbortSignal): Promise<CompactionJobResult>;
  /** Stops taking jobs; a job in flight is abandoned (its output is never swapped in). Idempotent. */
  close(): Promise<void>;
}

/** Runs compaction jobs on the calling thread, through a given file-system port. */
export class InProcessRunner implements CompactionRunner {
  readonly #fs: FileSystem;
  #closed = false;
  /** Aborted by close: a job whose strategy is still planning is abandoned (it writes nothing). */
  readonly #closing = new AbortController();

  /** Runs every job through `fs`, the store's own port, so its faults (in tests) reach compaction too. */
  constructor(fs: FileSystem) {
    this.#fs = fs;
  }

  /**
   * Runs the job on this thread; STORE_CLOSED if the runner was closed before or while it ran (its
   * output is then never swapped in).
   */
  async run(job: CompactionJob, stop?: AbortSignal): Promise<CompactionJobResult> {
    if (this.#closed) throw new OffsetStoreError('STORE_CLOSED', 'the compaction runner is closed');
    const abandon =
      stop === undefined ? this.#closing.signal : AbortSignal.any([this.#closing.signal, stop]);
    const result = await runCompactionJob(this.#fs, job, abandon);
    if (this.#closed)
      throw new OffsetStoreError(
        'STORE_CLOSED',
        `the compaction runner was closed while compacting ${job.dir}`,
      );
    if (stop?.aborted === true) throw stop.reason;
    return result;
  }

  /**
   * Refuses later jobs; a job in flight finishes its I/O but reports STORE_CLOSED, and one whose
   * strategy is still planning is abandoned (its plan, if it ever settles, is not carried out).
   * Idempotent.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort();
  }
}
