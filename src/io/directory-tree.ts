/**
 * Whole-directory operations for tools that study a store from outside (the compaction lab): the
 * bytes a directory tree takes, and a copy of one. Not part of the FileSystem port: the store itself
 * never needs them.
 */
import { copyFile, mkdir, readdir, stat } from 'node:fs/promises';
import * as path from 'node:path';

/**
 * The apparent sizes of the regular files under `dir`, summed for each of its entries (a file's own
 * size, a folder's tree's), in one walk; empty when `dir` does not exist.
 */
export async function directoryBytesByEntry(dir: string): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return sizes;
    throw error;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) sizes.set(entry.name, await directoryBytes(full));
    else if (entry.isFile())
      sizes.set(entry.name, (await stat(full).catch(() => ({ size: 0 }))).size);
  }
  return sizes;
}

/** Sum of the apparent sizes of the regular files under `dir` (0 when it does not exist). */
async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const bytes of (await directoryBytesByEntry(dir)).values()) total += bytes;
  return total;
}

/**
 * Copies the tree `from` to `to` (created; must not exist). The tree may belong to an open store: a
 * file that goes away while the copy runs (a manifest's temporary file renamed into place, a segment
 * deleted by compaction) is left out, as a crash at that moment would have left it.
 */
export async function copyDirectory(from: string, to: string): Promise<void> {
  await mkdir(to);
  let entries;
  try {
    entries = await readdir(from, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  for (const entry of entries) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) {
      await copyDirectory(source, target);
    } else if (entry.isFile()) {
      try {
        await copyFile(source, target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
}
