import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem } from '../../src/io/index.js';
import { tempDir } from '../support/temp-dir.js';

describe('NodeFileSystem', () => {
  it('makes a write of at most syncWriteBytesMax on the calling thread: the bytes are in the file before the promise settles', async () => {
    const file = path.join(tempDir(), 'f');
    const handle = await new NodeFileSystem({ syncWriteBytesMax: 1024 }).open(file, 'w');
    const pending = handle.writev([Buffer.from('abc'), Buffer.from('def')], 0);
    expect(readFileSync(file, 'utf8')).toBe('abcdef');
    await pending;
    await handle.close();
  });

  it('writes larger buffers, and every write when syncWriteBytesMax is 0, through the thread pool, completely and in order', async () => {
    for (const syncWriteBytesMax of [0, 1024]) {
      const file = path.join(tempDir(), 'f');
      const handle = await new NodeFileSystem({ syncWriteBytesMax }).open(file, 'w');
      const parts = [Buffer.alloc(3000, 1), Buffer.alloc(0), Buffer.alloc(5000, 2)];
      await handle.writev(parts, 10);
      await handle.datasync();
      expect(readFileSync(file).equals(Buffer.concat([Buffer.alloc(10), ...parts]))).toBe(true);
      await handle.close();
    }
  });

  it('rejects a syncWriteBytesMax that is not a non-negative integer', () => {
    expect(() => new NodeFileSystem({ syncWriteBytesMax: -1 })).toThrow(RangeError);
    expect(() => new NodeFileSystem({ syncWriteBytesMax: 1.5 })).toThrow(/syncWriteBytesMax/);
  });

  it('rejects (does not throw) a datasync or writev of a closed handle', async () => {
    const handle = await new NodeFileSystem().open(path.join(tempDir(), 'f'), 'w');
    await handle.close();
    await expect(handle.datasync()).rejects.toThrow();
    await expect(handle.writev([Buffer.from('x')], 0)).rejects.toThrow();
  });
});
