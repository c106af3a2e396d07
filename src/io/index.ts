/**
 * src/io: the file-system port every byte goes through (so tests can count and fail operations), its
 * node:fs implementation, and the kernel-held directory lock. The only folder that touches node:fs.
 * This file is the folder's door.
 */
export type { FileHandle, FileSystem, OpenFlags } from './file-system.js';
export {
  NodeFileSystem,
  SYNC_WRITE_BYTES_MAX_DEFAULT,
  readNamedFile,
  type NodeFileSystemOptions,
} from './node-file-system.js';
export { copyDirectory, directoryBytesByEntry } from './directory-tree.js';
export { OverlayFileSystem } from './overlay-file-system.js';
export { threadCpuMs } from './thread-usage.js';
export { addressSpaceLimit, reserveDescriptors } from './process-limits.js';
export { HeldPaths, isNameTaken, realPathOf } from './real-path.js';
export {
  canLeaveIdle,
  demoteThread,
  isThreadIdle,
  promoteSelf,
  promoteThread,
  setThreadIdle,
  threadId,
} from './thread-scheduling.js';
export {
  holdDirectoryLock,
  type DirectoryLockResult,
  type HeldDirectoryLock,
} from './process-lock.js';
