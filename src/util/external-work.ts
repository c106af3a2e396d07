/**
 * Work the store awaits outside its ports (the FileSystem and the Clock): LMDB's writer thread, which
 * writes checkpoints. A simulator that decides itself when each port operation completes (so that a
 * seed fixes the order of everything) has to know of such work and wait for it before it lets
 * anything else happen, and hand the result over at a moment of its choosing, or the completions
 * of two such pieces of work would race each other and the simulation. `observeExternalWork`
 * installs that observer; without one, `externalWork` only returns its argument.
 */

/** Takes work the store is about to await and returns the promise the store awaits instead. */
export type ExternalWorkObserver = <T>(work: Promise<T>) => Promise<T>;

let observer: ExternalWorkObserver | undefined;

/**
 * Marks `work` as awaited outside the ports; returns what to await: `work` itself, or, under an
 * observer, a promise that settles as `work` did at a moment the observer chooses.
 */
export function externalWork<T>(work: Promise<T>): Promise<T> {
  return observer === undefined ? work : observer(work);
}

/** Installs `observe` (undefined removes it); returns the previous observer. */
export function observeExternalWork(
  observe: ExternalWorkObserver | undefined,
): ExternalWorkObserver | undefined {
  const previous = observer;
  observer = observe;
  return previous;
}
