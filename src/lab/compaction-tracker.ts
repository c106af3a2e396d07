/**
 * Follows a store's compaction runs through `compaction.onRun`: which are in flight (so the lab can
 * wait for quiet before it copies the store), and what each finished one did, with its times relative
 * to the lab run's start.
 */
import type { CompactionRunEvent } from '../compaction/index.js';

/** One finished compaction run of one offsets-bucket. */
export interface CompactionRunRecord {
  /** The offsets-bucket. */
  bucket: number;
  /** Start, ms since the lab run started. */
  startMs: number;
  /** Wall time, ms. */
  durationMs: number;
  /** Background run (true) or one the lab asked for with compact() (false). */
  background: boolean;
  /** Bytes written (rewritten segments and checkpoints). */
  bytesWritten: number;
  /** Bytes read from the log. */
  bytesRead: number;
  /** Sealed segments replaced. */
  segmentsRewritten: number;
  /** Records dropped. */
  recordsDropped: number;
  /** Log bytes before and after. */
  bytesBefore: number;
  /** Log bytes after. */
  bytesAfter: number;
  /** CPU of the worker thread, ms (absent in-process). */
  workerCpuMs?: number;
  /** Heap of the worker thread at the end, bytes. */
  workerHeapBytes?: number;
}

/** See the module comment. */
export class CompactionTracker {
  readonly #originMs: number;
  /** Every finished run, in order of finishing. */
  readonly runs: CompactionRunRecord[] = [];
  /** The message of every failed run. */
  readonly failures: string[] = [];
  #inFlight = 0;
  #waiters: (() => void)[] = [];

  /** `originMs` is the lab run's start as wall-clock ms (performance.timeOrigin + performance.now()). */
  constructor(originMs: number) {
    this.#originMs = originMs;
  }

  /** The `compaction.onRun` listener to give the store. */
  readonly listener = (event: CompactionRunEvent): void => {
    if (event.kind === 'started') {
      this.#inFlight++;
      return;
    }
    this.#inFlight--;
    if (event.kind === 'failed') {
      this.failures.push(String((event.error as Error)?.message ?? event.error));
    } else {
      const r = event.report;
      this.runs.push({
        bucket: r.bucket,
        startMs: r.startedAtMs - this.#originMs,
        durationMs: r.durationMs,
        background: r.background,
        bytesWritten: r.bytesWritten,
        bytesRead: r.bytesRead,
        segmentsRewritten: r.segmentsRewritten,
        recordsDropped: r.recordsDropped,
        bytesBefore: r.bytesBefore,
        bytesAfter: r.bytesAfter,
        ...(r.workerCpuMs === undefined ? {} : { workerCpuMs: r.workerCpuMs }),
        ...(r.workerHeapBytes === undefined ? {} : { workerHeapBytes: r.workerHeapBytes }),
      });
    }
    if (this.#inFlight === 0) for (const wake of this.#waiters.splice(0)) wake();
  };

  /** Runs in flight. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Resolves once no run is in flight. */
  idle(): Promise<void> {
    return this.#inFlight === 0
      ? Promise.resolve()
      : new Promise((resolve) => this.#waiters.push(resolve));
  }
}
