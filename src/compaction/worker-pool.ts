/**
 * The compaction worker pool (piscina). The worker file is resolved next to this module, so the
 * same code works from source (a `.ts` worker, loaded through tsx) and from the compiled `dist/`.
 * Idle workers exit after `idleTimeoutMs`; `close()` terminates them (a job in flight is abandoned,
 * which compaction tolerates: its output is only ever swapped in by the main thread afterwards).
 *
 * Under SCHED_IDLE (`nice: 'idle'`) a worker runs only on a core nothing else wants, so on a machine
 * whose cores are busy all the time it would not run at all and the logs would grow without end.
 * Each worker writes its thread id into a shared registry when it starts (before it leaves the
 * normal policy); a job still running after `starvedJobMs` has the pool take every registered
 * worker back to the normal policy at nice STARVED_NICE (io/thread-scheduling.ts `promoteThread`),
 * and a promoted worker returns to SCHED_IDLE when it has finished its job. Compaction therefore always
 * progresses, and yields the cores to commits whenever it can wait.
 *
 * A worker may start after its job was found starved (a pool whose idle workers had exited, on a
 * machine busy enough to delay the new thread's start past `starvedJobMs`), or go idle just after
 * the pool promoted it. So the pool counts its starved jobs in flight in a shared cell: a worker that
 * starts while one is counted promotes itself once idle (and runs its current job promoted, putting
 * itself back at its end), and while one is counted the pool looks at its registered workers again
 * every STARVED_RECHECK_MS and promotes any it finds under SCHED_IDLE. The pool promotes only workers
 * it finds under SCHED_IDLE: one where that policy was refused runs at nice 19 and needs no help.
 * A promotion runs in a child process (chrt) and may land after the job it was for has ended, so the
 * pool's changes run one after another, and when the last starved job ends the pool waits for them
 * and puts back under SCHED_IDLE every worker it promoted.
 *
 * The pool hands piscina at most `workers` jobs at once and queues the others itself. piscina, with
 * no thread kept alive (minThreads 0, so that a quiet store holds none), starts no new worker for a
 * job queued behind one whose worker died (a strategy that called process.exit, or ran out of
 * memory): that job would never run nor settle, and every compaction waiting on it would hang. A job
 * handed over once a slot is free always finds a thread, or has one started for it. A job's `stop`
 * signal terminates the worker running it (piscina's abort).
 */
import { Piscina } from 'piscina';
import { OffsetStoreError } from '../errors/index.js';
import { demoteThread, isThreadIdle, promoteThread } from '../io/index.js';
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
  /** Under 'idle', how long a job may run before its workers are promoted; default STARVED_JOB_MS. */
  starvedJobMs?: number;
  /**
   * Hears of a worker that failed outside a job (it could not start): the job it was to run fails,
   * and the error is reported here instead of ending the process as an unheard 'error' event.
   */
  onWorkerError?: (error: unknown) => void;
}

/** Under SCHED_IDLE, a job still running after this long has its workers promoted (module comment). */
export const STARVED_JOB_MS = 10_000;
/** The nice increment of a promoted worker. */
export const STARVED_NICE = 10;
/** While a starved job runs, how often the pool looks for a worker that is still idle. */
export const STARVED_RECHECK_MS = 250;

/** What a worker is started with (piscina's `workerData`). */
export interface CompactionWorkerData {
  /** Nice increment, or 'idle' (SCHED_IDLE), the worker applies to its own thread at start (Linux only). */
  readonly nice: number | 'idle';
  /** One slot per worker: the thread id of a live worker, or 0 (Int32 on a SharedArrayBuffer). */
  readonly threads: SharedArrayBuffer;
  /** One Int32: the pool's starved jobs in flight; a worker starting while it is > 0 promotes itself. */
  readonly starvedJobs: SharedArrayBuffer;
}

const fromSource = import.meta.url.endsWith('.ts');

/** A pool of compaction worker threads. */
export class CompactionWorkerPool implements CompactionRunner {
  readonly #pool: Piscina;
  readonly #threads: Int32Array;
  readonly #starvedJobs: Int32Array;
  readonly #starvedJobMs: number | undefined;
  /** The pool's priority changes, one after another (each a chrt child process). */
  #changes: Promise<void> = Promise.resolve();
  /** Workers the pool promoted while a job is starved. */
  readonly #promoted = new Set<number>();
  /** Jobs handed to piscina and not settled; at most `#workers`. */
  #running = 0;
  readonly #workers: number;
  /** Jobs waiting for a slot, first come first served. */
  readonly #waiting: (() => void)[] = [];
  #closed = false;

  /** Starts no thread yet: workers are created on the first job and exit when idle. */
  constructor(options: WorkerPoolOptions) {
    // A slot more than the pool's threads: piscina may start a replacement before an old one is gone.
    const threads = new SharedArrayBuffer(4 * (options.workers + 1));
    this.#threads = new Int32Array(threads);
    const starvedJobs = new SharedArrayBuffer(4);
    this.#starvedJobs = new Int32Array(starvedJobs);
    this.#workers = options.workers;
    this.#starvedJobMs =
      options.nice === 'idle' ? (options.starvedJobMs ?? STARVED_JOB_MS) : undefined;
    this.#pool = new Piscina({
      filename: new URL(
        fromSource ? './compaction-worker.ts' : './compaction-worker.js',
        import.meta.url,
      ).href,
      minThreads: 0,
      maxThreads: options.workers,
      idleTimeout: options.idleTimeoutMs,
      // Resolved here, next to this module, not by the worker from the process's working directory:
      // a CLI started from another directory had workers that could not find tsx, and died.
      execArgv: fromSource ? ['--import', import.meta.resolve('tsx')] : [],
      workerData: {
        nice: options.nice ?? 0,
        threads,
        starvedJobs,
      } satisfies CompactionWorkerData,
    });
    this.#pool.on('error', (error: unknown) => options.onWorkerError?.(error));
  }

  /**
   * Runs a compaction job on a worker thread once one of the pool's slots is free; STORE_CLOSED once
   * the pool is closed, also for a job cut short by it. `stop` terminates the job's worker: the call
   * then rejects with its reason.
   */
  async run(job: CompactionJob, stop?: AbortSignal): Promise<CompactionJobResult> {
    if (this.#closed)
      throw new OffsetStoreError('STORE_CLOSED', 'the compaction worker pool is closed');
    if (this.#running < this.#workers) this.#running++;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve)); // the slot is passed on
    try {
      if (this.#closed)
        throw new OffsetStoreError('STORE_CLOSED', 'the compaction worker pool is closed');
      if (stop?.aborted === true) throw stop.reason;
      return await this.#runNow(job, stop);
    } finally {
      const next = this.#waiting.shift();
      if (next === undefined) this.#running--;
      else next();
    }
  }

  async #runNow(job: CompactionJob, stop: AbortSignal | undefined): Promise<CompactionJobResult> {
    let starved = false;
    let recheck: NodeJS.Timeout | undefined;
    const timer =
      this.#starvedJobMs === undefined
        ? undefined
        : setTimeout(() => {
            starved = true;
            Atomics.add(this.#starvedJobs, 0, 1);
            this.#promoteIdleWorkers();
            recheck = setInterval(() => this.#promoteIdleWorkers(), STARVED_RECHECK_MS);
            recheck.unref();
          }, this.#starvedJobMs);
    timer?.unref();
    let result: CompactionJobResult;
    try {
      result = (await this.#pool.run(
        job,
        stop === undefined ? undefined : { signal: stop },
      )) as CompactionJobResult;
    } catch (error) {
      // piscina's abort terminated the worker and rejects with an AbortError of its own.
      if (stop?.aborted === true && !this.#closed) throw stop.reason;
      // close() terminates the workers, and piscina rejects the job in flight with a plain Error.
      if (this.#closed)
        throw new OffsetStoreError(
          'STORE_CLOSED',
          `the compaction worker pool was closed while compacting ${job.dir}`,
          { cause: error },
        );
      throw error;
    } finally {
      clearTimeout(timer);
      clearInterval(recheck);
      if (starved) await this.#endStarved();
    }
    return result;
  }

  /**
   * A starved job ended: once no other is, every worker the pool promoted is put back under
   * SCHED_IDLE, after the promotions still on their way have landed (a worker puts itself back at the
   * end of its job, but a promotion sent just before could land after that).
   */
  async #endStarved(): Promise<void> {
    if (Atomics.sub(this.#starvedJobs, 0, 1) === 1) {
      const promoted = [...this.#promoted];
      this.#promoted.clear();
      for (const tid of promoted) this.#change(() => demoteThread(tid));
    }
    await this.#changes;
  }

  /** Takes every live worker found under SCHED_IDLE back to the normal policy (a job waits too long for an idle core). */
  #promoteIdleWorkers(): void {
    for (let i = 0; i < this.#threads.length; i++) {
      const tid = Atomics.load(this.#threads, i);
      if (tid === 0 || !isThreadIdle(tid)) continue;
      this.#promoted.add(tid);
      this.#change(() => promoteThread(tid, STARVED_NICE));
    }
  }

  /** Queues a priority change after the ones before it. */
  #change(change: () => Promise<void>): void {
    this.#changes = this.#changes.then(change);
  }

  /** Number of worker threads alive. */
  get threadCount(): number {
    return this.#pool.threads.length;
  }

  /** Terminates every worker; jobs in flight reject. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Jobs waiting for a slot are let through, to find the pool closed.
    for (const next of this.#waiting.splice(0)) next();
    await this.#pool.destroy();
  }
}
