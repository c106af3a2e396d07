/** Resolving symbolic links in a path that may not exist yet. */
import { lstatSync, realpathSync } from 'node:fs';
import * as path from 'node:path';

/**
 * `p` with its longest existing prefix resolved through symbolic links (realpath). Synchronous (a
 * few syscalls, once per backup): I/O the store awaits goes through its FileSystem port, which a
 * simulated file system schedules; this is outside it and must not leave work pending.
 */
export function realPathOf(p: string): string {
  let existing = path.resolve(p);
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(realpathSync(existing), ...rest.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException | null)?.code;
      const parent = path.dirname(existing);
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || parent === existing) throw error;
      rest.push(path.basename(existing));
      existing = parent;
    }
  }
}

/**
 * Whether something has the name `p`, a symbolic link included even when it leads nowhere (what a
 * stat, which follows links, calls absent). Errors other than ENOENT/ENOTDIR are thrown.
 */
export function isNameTaken(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | null)?.code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw error;
  }
}

/**
 * Paths something in this process holds, counted by real path: a file or folder reached under
 * another name (a symbolic link, a relative path) counts as the same. For what must refuse a second
 * use of a file in one process that the first use rules out.
 */
export class HeldPaths {
  readonly #counts = new Map<string, number>();

  /** Holds `p` once more; returns the release of this hold (a second call does nothing). */
  hold(p: string): () => void {
    const key = realKey(p);
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const count = (this.#counts.get(key) ?? 0) - 1;
      if (count > 0) this.#counts.set(key, count);
      else this.#counts.delete(key);
    };
  }

  /** Whether `p`, under any name, is held. */
  held(p: string): boolean {
    return this.#counts.has(realKey(p));
  }

  /** Forgets every hold (a simulated process end). */
  clear(): void {
    this.#counts.clear();
  }
}

/** `p` resolved through symbolic links; as resolved alone when that fails (no permission). */
function realKey(p: string): string {
  try {
    return realPathOf(p);
  } catch {
    return path.resolve(p);
  }
}
