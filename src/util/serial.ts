/**
 * Serial: runs async tasks one after another, each once every task run before it has settled
 * (fulfilled or rejected: a failed task does not stop the ones after it). Unbounded and without
 * cancellation; for the rare, short sequences that must not interleave (a log's segment swaps, a
 * store's compaction conversions), not for per-request work.
 */

/** See the module comment. */
export class Serial {
  #tail: Promise<void> = Promise.resolve();

  /** Runs `task` after every task run before it has settled; settles as `task` does. */
  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** Settles (never rejects) once every task run so far has settled. */
  settled(): Promise<void> {
    return this.#tail;
  }
}
