/**
 * A lock on a directory that the kernel holds for the process and drops when the process dies, so
 * that it can never go stale: on Linux, listening Unix sockets in the abstract namespace named after
 * the directory. Binding a name is atomic and exclusive, and the name is freed when its socket
 * closes, whichever way the process ends (exit, crash, SIGKILL).
 *
 * Two names are held: one after the directory's identity (device, inode and birth time, the last
 * where the system reports a real one: file-identity.ts), which stay the same when the directory is
 * renamed or moved within its file system and are the same through every bind mount (a name after
 * the path alone let a process open a store that another was writing, once the directory had been
 * renamed under it; without the birth time, a directory deleted while its store was open left its
 * lock on whichever new directory the file system gave the same inode, often the next one made),
 * and one after its real path, the name earlier versions held, so that a process of an earlier
 * version and one of this version exclude each other. A copy of a store is another directory and
 * another lock.
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
import { readdir, readlink, realpath, stat } from 'node:fs/promises';
import * as net from 'node:net';
import { fileIdentity } from './file-identity.js';

/** A held lock; `release()` frees it (idempotent). */
export interface HeldDirectoryLock {
  /** Closes the socket, freeing the name for the next owner; idempotent. */
  release(): Promise<void>;
}

/** The lock, 'held-elsewhere' (another live process has it), or 'unsupported' on this platform. */
export type DirectoryLockResult = HeldDirectoryLock | 'held-elsewhere' | 'unsupported';

/**
 * Abstract socket name for a directory: NUL, a prefix naming the lock's purpose, and a hash of what
 * identifies it (well under 108 bytes). The store's own lock keeps the prefix it always had.
 */
function socketName(identity: string, purpose: string): string {
  const prefix = purpose === STORE_LOCK ? 'offset-store-lock' : `offset-store-${purpose}`;
  return `\0${prefix}/${createHash('sha256').update(identity).digest('hex')}`;
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
  const names = await lockNames(dir, purpose);
  if (names === 'unsupported') return names;
  const held: HeldDirectoryLock[] = [];
  for (const name of names) {
    let result: DirectoryLockResult;
    try {
      result = await holdName(name);
    } catch (error) {
      for (const lock of held) await lock.release();
      throw error;
    }
    if (result === 'held-elsewhere' || (result === 'unsupported' && held.length > 0)) {
      for (const lock of held) await lock.release();
      return result === 'held-elsewhere' ? result : 'unsupported';
    }
    if (result === 'unsupported') return result;
    held.push(result);
  }
  let released: Promise<void> | undefined;
  return {
    release: () =>
      (released ??= Promise.all(held.map((lock) => lock.release())).then(() => undefined)),
  };
}

/** The abstract names of `dir`'s lock for `purpose` (see the header), or 'unsupported'. */
async function lockNames(dir: string, purpose: string): Promise<string[] | 'unsupported'> {
  if (process.platform !== 'linux') return 'unsupported';
  try {
    const [realDir, stats] = await Promise.all([realpath(dir), stat(dir, { bigint: true })]);
    return [socketName(`inode:${fileIdentity(stats)}`, purpose), socketName(realDir, purpose)];
  } catch {
    return 'unsupported';
  }
}

/**
 * Whether some live process holds `dir`'s lock for `purpose` now, found without taking it: a
 * connection to each name, which a holder's socket accepts and closes at once and an unbound name
 * refuses (ECONNREFUSED). Never binds a name, so it cannot make a writer opening at the same instant
 * fail. 'unsupported' where there is no such lock, or an answer that says neither.
 */
async function directoryLockHeld(
  dir: string,
  purpose: string = STORE_LOCK,
): Promise<boolean | 'unsupported'> {
  const names = await lockNames(dir, purpose);
  if (names === 'unsupported') return names;
  const answers = await Promise.all(names.map(nameBound));
  if (answers.includes(true)) return true;
  return answers.includes('unsupported') ? 'unsupported' : false;
}

/**
 * Whether process `pid` has the store in `dir` open, for a LOCK file that names it: it holds the
 * kernel-held lock (directoryLockHeld), or, since a store opened through a file-system port without
 * that lock never takes it, it holds a file under `dir` open (its segments, its journal), found in
 * /proc/<pid>/fd. False when neither (a stale LOCK file whose pid the system has given to another
 * process), also when that process's descriptors cannot be read (another user's: the kernel's
 * lock is then what tells); 'unsupported' where there is no such lock (not Linux).
 */
export async function directoryOwnerLive(
  dir: string,
  pid: number,
): Promise<boolean | 'unsupported'> {
  const held = await directoryLockHeld(dir);
  if (held !== false) return held;
  let realDir: string;
  let descriptors: string[];
  try {
    realDir = await realpath(dir);
    descriptors = await readdir(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of descriptors) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    if (target.startsWith(`${realDir}/`)) return true;
  }
  return false;
}

/** Whether a socket is bound to one abstract name: connected (true), refused (false), else 'unsupported'. */
function nameBound(name: string): Promise<boolean | 'unsupported'> {
  return new Promise((resolve) => {
    const socket = net.connect({ path: name });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      socket.destroy();
      // A reset or a broken pipe: the holder took the connection and closed it, as it does.
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') resolve(true);
      else
        resolve(error.code === 'ECONNREFUSED' || error.code === 'ENOENT' ? false : 'unsupported');
    });
  });
}

/** Binds one abstract name: held, 'held-elsewhere', or 'unsupported'. */
function holdName(name: string): Promise<DirectoryLockResult> {
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
