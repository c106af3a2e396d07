/**
 * Whole-directory operations for tools that study a store from outside (the compaction lab): the
 * bytes a directory tree takes, and a copy of one. Not part of the FileSystem port: the store itself
 * never needs them.
 */
import { cp, readdir, stat } from 'node:fs/promises';
import * as path from 'node:path';

/** Sum of the apparent sizes of the regular files under `dir` (0 when it does not exist). */
export async function directoryBytes(dir: string): Promise<number> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  let total = 0;
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += await directoryBytes(full);
    else if (entry.isFile()) total += (await stat(full).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

/** Copies the tree `from` to `to` (created; must not exist). */
export async function copyDirectory(from: string, to: string): Promise<void> {
  await cp(from, to, { recursive: true, errorOnExist: true, force: false });
}
