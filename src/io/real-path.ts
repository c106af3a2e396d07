/** Resolving symbolic links in a path that may not exist yet. */
import { realpath } from 'node:fs/promises';
import * as path from 'node:path';

/** `p` with its longest existing prefix resolved through symbolic links (realpath). */
export async function realPathOf(p: string): Promise<string> {
  let existing = path.resolve(p);
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(await realpath(existing), ...rest.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException | null)?.code;
      const parent = path.dirname(existing);
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || parent === existing) throw error;
      rest.push(path.basename(existing));
      existing = parent;
    }
  }
}
