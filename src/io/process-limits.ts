/**
 * What the process's resource limits leave, read or probed on the machine's own file system: for
 * code that hands work to a native library which crashes the process, rather than failing, when a
 * limit runs out inside it (lmdb-js opening an environment).
 */
import { closeSync, openSync, readFileSync } from 'node:fs';
import { devNull } from 'node:os';

/**
 * Takes `count` file descriptors and gives them back: throws Node's EMFILE (or ENFILE) when the
 * process could not open as many. Synchronous, so nothing of this thread takes them between this
 * and a synchronous open that follows it.
 */
export function reserveDescriptors(count: number): void {
  const taken: number[] = [];
  try {
    for (let i = 0; i < count; i++) taken.push(openSync(devNull, 'r'));
  } finally {
    for (const fd of taken) closeSync(fd);
  }
}

/**
 * The address space the process may map: its RLIMIT_AS (from /proc/self/limits on Linux), or
 * x86-64's 128 TiB of user space where there is no limit or it cannot be read.
 */
export function addressSpaceLimit(): number {
  const userSpace = 2 ** 47;
  try {
    const line = /^Max address space\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line === null ? userSpace : Math.min(userSpace, Number(line[1]));
  } catch {
    return userSpace;
  }
}
