/**
 * A lock on a directory that the kernel holds for the process and drops when the process dies, so
 * that it can never go stale: on Linux, a listening Unix socket in the abstract namespace named after
 * the directory's real path. Binding a name is atomic and exclusive, and the name is freed when its
 * socket closes, whichever way the process ends (exit, crash, SIGKILL).
 *
 * This closes the gap of a pid-file lock, where two processes that find the same stale LOCK file at the
 * same moment can both take it over. It covers processes in the same network namespace (abstract
 * names are per namespace). Processes in different namespaces (containers sharing a volume) are
 * not protected by it, nor reliably by the pid file, whose pids mean nothing across pid namespaces:
 * do not open one store from two containers. Abstract names have no permissions, so another local
 * user who binds the name first makes opens fail with STORE_LOCKED (a denial of service, never two
 * writers). Elsewhere than Linux, or when the directory has no real path (a custom FileSystem),
 * `holdDirectoryLock` reports 'unsupported' and the caller relies on the pid file alone.
 *
 * The socket accepts no data: a connection is closed at once. It is unref'd, so it never keeps the
 * process alive.
 */
import { createHash } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import * as net from 'node:net';

/** A held lock; `release()` frees it (idempotent). */
export interface HeldDirectoryLock {
  /** Closes the socket, freeing the name for the next owner; idempotent. */
  release(): Promise<void>;
}

/** The lock, 'held-elsewhere' (another live process has it), or 'unsupported' on this platform. */
export type DirectoryLockResult = HeldDirectoryLock | 'held-elsewhere' | 'unsupported';

/**
 * Abstract socket name for a directory: NUL, a prefix naming the lock's purpose, and a hash of the
 * real path (well under 108 bytes). The store's own lock keeps the name it always had.
 */
function socketName(realDir: string, purpose: string): string {
  const prefix = purpose === STORE_LOCK ? 'offset-store-lock' : `offset-store-${purpose}`;
  return `\0${prefix}/${createHash('sha256').update(realDir).digest('hex')}`;
}

const STORE_LOCK = 'store';

/**
 * Tries to take the kernel-held lock of `dir` (which must exist) for `purpose`: the store's own
 * (default), or another (the security files' writers); locks of different purposes are independent.
 */
export async function holdDirectoryLock(
  dir: string,
  purpose: string = STORE_LOCK,
): Promise<DirectoryLockResult> {
  if (process.platform !== 'linux') return 'unsupported';
  let realDir: string;
  try {
    realDir = await realpath(dir);
  } catch {
    return 'unsupported';
  }
  const name = socketName(realDir, purpose);
  const server = net.createServer((socket) => socket.destroy());
  server.maxConnections = 0;
  return new Promise<DirectoryLockResult>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') resolve('held-elsewhere');
      else if (
        error.code === 'EINVAL' ||
        error.code === 'EAFNOSUPPORT' ||
        error.code === 'EPERM' ||
        error.code === 'EACCES'
      )
        resolve('unsupported');
      else reject(error);
    });
    server.listen({ path: name, exclusive: true }, () => {
      server.unref();
      let released: Promise<void> | undefined;
      resolve({
        release: () => (released ??= new Promise<void>((done) => server.close(() => done()))),
      });
    });
  });
}
