export type { FileHandle, FileSystem, OpenFlags } from './file-system.js';
export { NodeFileSystem, SYNC_WRITE_BYTES_MAX_DEFAULT, type NodeFileSystemOptions } from './node-file-system.js';
export { holdDirectoryLock, type DirectoryLockResult, type HeldDirectoryLock } from './process-lock.js';
