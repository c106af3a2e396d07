/**
 * The compaction worker pool (piscina). The worker file is resolved next to this module, so the
 * same code works from source (a `.ts` worker, loaded through tsx) and from the compiled `dist/`.
 * Idle workers exit after `idleTimeoutMs`; `close()` terminates them (a job in flight is abandoned,
 * which compaction tolerates: its output is only ever swapped in by the main thread afterwards).
 */
import { Piscina } from 'piscina';
import { OffsetStoreError } from '../errors/index.js';
import type { CompactionJob, CompactionJobResult } from './compaction-job.js';
import type { CompactionRunner } from './job-runner.js';

/** Options of the pool. */
export interface WorkerPoolOptions {
  /** Most worker threads alive at once (one job each). */
  workers: number;
  /** An idle worker exits after this many ms, so a quiet store holds no threads. */
  idleTimeoutMs: number;
  /** Nice increment of the workers' threads, or 'idle' (Linux; see CompactionOptions.workerNice); default 0. */
  nice?: number | 'idle';
}

/** What a worker is started with (piscina's `workerData`). */
export interface CompactionWorkerData {
  /** Nice increment, or 'idle' (SCHED_IDLE), the worker applies to its own thread at start (Linux only). */
  readonly nice: number | 'idle';
}

const fromSource = import.meta.url.endsWith('.ts');

/** A pool of compaction worker threads. */
export class CompactionWorkerPool implements CompactionRunner {
  readonly #pool: Piscina;
  #closed = false;

  /** Starts no thread yet: workers are created on the first job and exit when idle. */
  constructor(options: WorkerPoolOptions) {
    this.#pool = new Piscina({
      filename: new URL(
        fromSource ? './compaction-worker.ts' : './compaction-worker.js',
        import.meta.url,
      ).href,
      minThreads: 0,
      maxThreads: options.workers,
      idleTimeout: options.idleTimeoutMs,
      execArgv: fromSource ? ['--import', 'tsx'] : [],
      workerData: { nice: options.nice ?? 0 } satisfies CompactionWorkerData,
    });
  }

  /** Runs a compaction job on a worker thread; STORE_CLOSED once the pool is closed, also for a job cut short by it. */
  async run(job: CompactionJob): Promise<CompactionJobResult> {
    if (this.#closed)
      throw new OffsetStoreError('STORE_CLOSED', 'the compaction worker pool is closed');
    try {
      return (await this.#pool.run(job)) as CompactionJobResult;
    } catch (error) {
      // close() terminates the workers, and piscina rejects the job in flight with a plain Error.
      if (this.#closed)
        throw new OffsetStoreError(
          'STORE_CLOSED',
          `the compaction worker pool was closed while compacting ${job.dir}`,
          { cause: error },
        );
      throw error;
    }
  }

  /** Number of worker threads alive. */
  get threadCount(): number {
    return this.#pool.threads.length;
  }

  /** Terminates every worker; jobs in flight reject. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.destroy();
  }
}
