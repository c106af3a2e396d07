/**
 * The FileSystem port on node:fs/promises. The only module of `src/` that touches node:fs.
 */
import * as fs from 'node:fs/promises';
import type { FileHandle, FileSystem, OpenFlags } from './file-system.js';

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

class NodeFileHandle implements FileHandle {
  readonly path: string;
  readonly #handle: fs.FileHandle;

  constructor(path: string, handle: fs.FileHandle) {
    this.path = path;
    this.#handle = handle;
  }

  async writev(buffers: readonly Buffer[], position: number): Promise<void> {
    let pending = buffers.filter((b) => b.length > 0);
    let at = position;
    while (pending.length > 0) {
      const { bytesWritten } = await this.#handle.writev(pending, at);
      at += bytesWritten;
      pending = dropWritten(pending, bytesWritten);
    }
  }

  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<number> {
    const { bytesRead } = await this.#handle.read(buffer, offset, length, position);
    return bytesRead;
  }

  datasync(): Promise<void> {
    return this.#handle.datasync();
  }

  truncate(sizeBytes: number): Promise<void> {
    return this.#handle.truncate(sizeBytes);
  }

  async sizeBytes(): Promise<number> {
    return (await this.#handle.stat()).size;
  }

  close(): Promise<void> {
    return this.#handle.close();
  }
}

/** What is left of `buffers` after the first `bytes` of them were written. */
function dropWritten(buffers: Buffer[], bytes: number): Buffer[] {
  let left = bytes;
  let i = 0;
  while (i < buffers.length && left >= buffers[i]!.length) left -= buffers[i++]!.length;
  const rest = buffers.slice(i);
  if (left > 0 && rest.length > 0) rest[0] = rest[0]!.subarray(left);
  return rest;
}

/** The real file system. */
export class NodeFileSystem implements FileSystem {
  async open(path: string, flags: OpenFlags): Promise<FileHandle> {
    return new NodeFileHandle(path, await fs.open(path, flags));
  }

  async readFile(path: string): Promise<Buffer | null> {
    try {
      return await fs.readFile(path);
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async readdir(path: string): Promise<string[]> {
    try {
      return await fs.readdir(path);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
  }

  async mkdir(path: string): Promise<void> {
    await fs.mkdir(path, { recursive: true });
  }

  rename(fromPath: string, toPath: string): Promise<void> {
    return fs.rename(fromPath, toPath);
  }

  async unlink(path: string): Promise<void> {
    try {
      await fs.unlink(path);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  removeTree(path: string): Promise<void> {
    return fs.rm(path, { recursive: true, force: true });
  }

  async syncDir(path: string): Promise<void> {
    const handle = await fs.open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  async sizeBytes(path: string): Promise<number | null> {
    try {
      return (await fs.stat(path)).size;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }
}
