export type { FileHandle, FileSystem, OpenFlags } from './file-system.js';
export { NodeFileSystem } from './node-file-system.js';
