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
