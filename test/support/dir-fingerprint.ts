import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';

/**
 * Every entry under `dir`, sorted: each folder, and each file with its size, modification time and
 * a hash of its bytes. Two equal fingerprints mean nothing under `dir` was written, created,
 * removed or touched in between.
 */
export function dirFingerprint(dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const p = path.join(at, name);
      const st = statSync(p);
      if (st.isDirectory()) {
        out.push(`${p}/`);
        walk(p);
      } else
        out.push(
          `${p} ${st.size} ${st.mtimeMs} ${createHash('sha256').update(readFileSync(p)).digest('hex')}`,
        );
    }
  };
  walk(dir);
  return out;
}
