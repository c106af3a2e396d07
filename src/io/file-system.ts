/**
 * The file-system port. Every byte this store reads or writes goes through it, so tests can count
 * syscalls and inject faults (a failing fdatasync, a short write) by wrapping the real implementation.
 *
 * Open flags follow POSIX: 'r' read-only, 'r+' read-write (must exist), 'wx' create exclusively
 * (fails if it exists), 'w' create or truncate.
 */

/** How to open a file. */
import type { DirectoryLockResult } from './process-lock.js';

export type OpenFlags = 'r' | 'r+' | 'wx' | 'w';

/** An open file. Positions and sizes are in bytes. */
export interface FileHandle {
  /** The path the file was opened with; errors and `rejected-batches.json` name the file by it. */
  readonly path: string;
  /** Writes every byte of `buffers`, in order, starting at `position`. */
  writev(buffers: readonly Buffer[], position: number): Promise<void>;
  /** Reads up to `length` bytes at `position` into `buffer[offset...]`; returns the bytes read (0 at end). */
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<number>;
  /** fdatasync: the written data (and the size) reach stable storage. */
  datasync(): Promise<void>;
  /**
   * fdatasync on the calling thread, if this file system allows it now: returns true once the data
   * is durable, or false, having done nothing (the caller then uses `datasync`). Optional: a port
   * without it always goes through `datasync`.
   */
  datasyncNow?(): boolean;
  /** Cuts the file to `sizeBytes`. */
  truncate(sizeBytes: number): Promise<void>;
  /** Current size of the file. */
  sizeBytes(): Promise<number>;
  /** Closes the handle; it must not be used afterwards. */
  close(): Promise<void>;
  /**
   * Optional: which file this handle reads, as `FileSystem.identity` names it (NodeFileSystem: its
   * device, inode and creation time, from fstat): a reader of a folder another process changes
   * tells by it whether the file it read is still the one under its name.
   */
  identity?(): Promise<string>;
}

/** The directory and file operations this store needs. */
export interface FileSystem {
  /**
   * Opens a file with POSIX-like flags (see OpenFlags); rejects like node:fs (ENOENT, EEXIST for
   * 'wx'). `mode` sets the permissions of a file it creates (default 0o666 less the umask); a file
   * system without permissions ignores it.
   */
  open(path: string, flags: OpenFlags, mode?: number): Promise<FileHandle>;
  /** Whole-file read; null when the file does not exist. */
  readFile(path: string): Promise<Buffer | null>;
  /** Names in a directory (not paths); empty when the directory does not exist. */
  readdir(path: string): Promise<string[]>;
  /** Creates a directory and its parents; no error if it exists. */
  mkdir(path: string): Promise<void>;
  /** Renames a file, atomically replacing `toPath` if it exists (durable only after `syncDir`). */
  rename(fromPath: string, toPath: string): Promise<void>;
  /** Removes a file; no error if it does not exist. */
  unlink(path: string): Promise<void>;
  /** Removes a directory tree; no error if it does not exist. */
  removeTree(path: string): Promise<void>;
  /** fsync of a directory: makes creations, renames and deletions inside it durable. */
  syncDir(path: string): Promise<void>;
  /** Size of a file, or null when it does not exist. */
  sizeBytes(path: string): Promise<number | null>;
  /**
   * Optional (with `FileHandle.identity`): which file is under `path` now, null when none is. Two
   * answers are equal while the name holds the same file (written to, grown or cut) and differ once
   * it holds another (renamed over, or deleted and made again).
   */
  identity?(path: string): Promise<string | null>;
  /**
   * Optional: bytes free for this process on the file system holding `path` (statfs: blocks
   * available to an unprivileged user). A log prepares its next segment ahead only where that
   * leaves room, so that a file of zeros never takes the space a commit needs.
   */
  freeBytes?(path: string): Promise<number>;
  /**
   * Optional: the permission bits (mode & 0o777) of the file under `path`, null when none is; a
   * file system without permissions leaves it out. The Kafka server warns by it when its users or
   * ACL file can be read or changed by other users of the machine.
   */
  permissions?(path: string): Promise<number | null>;
  /**
   * Optional: what is under `path`, without opening it: 'file' (a regular file, or a symbolic link
   * to one), 'missing', or what it is instead ('a FIFO', 'a directory', 'a symbolic link to
   * nothing'...). The checkpoint environment asks it of LMDB's files before LMDB opens them, for LMDB
   * ends the process on a file it cannot map.
   */
  fileType?(path: string): Promise<string>;
  /**
   * Optional: takes a lock on the directory that the kernel holds for this process and drops when it
   * dies (process-lock.ts). Without it, or when it answers 'unsupported', the store's directory lock
   * relies on its LOCK file alone (a file system that is not the machine's own has no such lock).
   */
  holdLock?(dir: string): Promise<DirectoryLockResult>;
  /**
   * Optional, with `holdLock`: whether process `pid`, which a LOCK file in `dir` names, has the store
   * open now (it holds that lock, found without taking it, or files under `dir`), 'unsupported'
   * where it cannot tell. Tells a live owner from a stale LOCK file whose pid the system has since
   * given to another process.
   */
  ownerLive?(dir: string, pid: number): Promise<boolean | 'unsupported'>;
}
