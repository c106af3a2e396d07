/**
 * Temporary directories for benchmark stores, under `os.tmpdir()`, removed when the bench is done
 * with them and, as a backstop, when the process exits (normally or on SIGINT/SIGTERM).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const live = new Set<string>();
let hooked = false;

function removeAllSync(): void {
  for (const dir of live) fs.rmSync(dir, { recursive: true, force: true });
  live.clear();
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', removeAllSync);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      removeAllSync();
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    });
  }
}

/** Creates a fresh directory `<tmpdir>/offset-store-bench-<label>-XXXXXX`. */
export function createTempDir(label: string): string {
  hookExit();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `offset-store-bench-${label}-`));
  live.add(dir);
  return dir;
}

/** Removes a directory made by `createTempDir` (or any path) with everything in it. */
export async function removeTempDir(dir: string): Promise<void> {
  live.delete(dir);
  await fs.promises.rm(dir, { recursive: true, force: true });
}
