/**
 * A file's identity: what names it whatever its path, so that the store can tell that the file
 * under a name is no longer the one it opened (a segment replaced by a copy, a store directory
 * renamed, a compaction output lost).
 *
 * The identity is the device, the inode and, where the system has one, the creation ("birth")
 * time. The inode alone is not enough: a file system hands a freed inode to the next file it makes,
 * so a name replaced twice (written to a temporary file and renamed over it, as a compaction swap
 * does) can end up with the inode it had at first (seen on ext4: inodes A, B, A). The birth time
 * tells those apart unless both were made in one tick of the kernel's clock (a few ms). It is
 * 0 on a Linux file system that keeps none (tmpfs, procfs), which leaves the inode alone.
 *
 * Where Node cannot read a birth time it reports the status-change time (ctime) in its place: on
 * Linux whenever the `statx` system call fails (kernels before 4.11; a seccomp profile that refuses
 * it, as some container runtimes' older ones do), and on platforms without one. The ctime changes
 * with every write, chmod, rename and, for a directory, every entry made or removed in it, so an
 * identity built on it would change under the store's own feet: a store so placed refused to open,
 * reporting its own directory as moved. So whether the birth time is real is found once per process
 * (`birthTimeIsReal`), and where it is not, the identity is the device and inode alone (`-` in the
 * birth time's place), with the inode-reuse case above no longer told apart.
 *
 * Format: `<dev>:<ino>:<birth time in ns>` or `<dev>:<ino>:-`. It is compared within one process
 * (and hashed into the name of the directory lock, which processes on one system share), never
 * stored.
 */
import { statSync, type BigIntStats } from 'node:fs';

/** Platforms whose stat has a real creation time (libuv reads it from the system's own stat). */
const BIRTH_TIME_PLATFORMS: ReadonlySet<string> = new Set([
  'darwin',
  'win32',
  'freebsd',
  'openbsd',
  'netbsd',
]);

/**
 * Whether `birthtimeNs` is a creation time on this system, from the platform and a stat of a procfs
 * file (Linux): procfs keeps no creation time, so `statx` reports 0 there, while the fallback without
 * `statx` reports the ctime, which is never 0. Where the probe cannot be made (no /proc), the birth
 * time is not trusted: an identity without it is weaker but never changes on its own.
 */
export function birthTimeIsReal(
  platform: string,
  procfsStats: Pick<BigIntStats, 'birthtimeNs' | 'ctimeNs'> | undefined,
): boolean {
  if (BIRTH_TIME_PLATFORMS.has(platform)) return true;
  if (platform !== 'linux' && platform !== 'android') return false;
  return procfsStats !== undefined && procfsStats.birthtimeNs === 0n && procfsStats.ctimeNs !== 0n;
}

let realBirthTime: boolean | undefined;

/** birthTimeIsReal for this process, found at the first call. */
export function thisProcessHasBirthTime(): boolean {
  if (realBirthTime === undefined) {
    let probe: BigIntStats | undefined;
    try {
      if (process.platform === 'linux' || process.platform === 'android') {
        probe = statSync('/proc/self', { bigint: true });
      }
    } catch {
      probe = undefined;
    }
    realBirthTime = birthTimeIsReal(process.platform, probe);
  }
  return realBirthTime;
}

/**
 * The identity of the file `stats` describes (see the header). `withBirthTime` is for tests; by
 * default, whether this process reads real birth times.
 */
export function fileIdentity(
  stats: Pick<BigIntStats, 'dev' | 'ino' | 'birthtimeNs'>,
  withBirthTime: boolean = thisProcessHasBirthTime(),
): string {
  return `${stats.dev}:${stats.ino}:${withBirthTime ? stats.birthtimeNs : '-'}`;
}
