/**
 * Disk accounting for the benches: the bytes a directory takes, and the bytes this process has
 * written through system calls (Linux `/proc/self/io`, every thread of the process counted, so a
 * worker thread's and lmdb-js's writer thread's writes are included).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Apparent size (sum of file sizes) and allocated size (blocks) of everything under `dir`. */
export interface DirBytes {
  apparentBytes: number;
  allocatedBytes: number;
  files: number;
}

/** Walks `dir` and sums its files. */
export function dirBytes(dir: string): DirBytes {
  const total: DirBytes = { apparentBytes: 0, allocatedBytes: 0, files: 0 };
  const walk = (at: string) => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) {
        const stat = fs.statSync(full);
        total.apparentBytes += stat.size;
        total.allocatedBytes += stat.blocks * 512;
        total.files++;
      }
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return total;
}

/** Bytes of segment files (`*.log`) under `dir`. */
export function segmentBytes(dir: string): number {
  let total = 0;
  const walk = (at: string) => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && entry.name.endsWith('.log')) total += fs.statSync(full).size;
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return total;
}

/** Bytes this process has passed to write-like system calls so far (`wchar`), or NaN off Linux. */
export function processWriteBytes(): number {
  try {
    const match = /^wchar:\s*(\d+)$/m.exec(fs.readFileSync('/proc/self/io', 'utf8'));
    return match === null ? NaN : Number(match[1]);
  } catch {
    return NaN;
  }
}
