/**
 * Edges of the io layer that the store relies on without a test of its own: opening with 'w'
 * truncates what was there (writeDurably rewrites a leftover temporary file through it); a path
 * below a regular file has no identity and no real name, as a missing one; a file named on the
 * command line of exactly the byte limit is read; and the /proc fallback of `directoryOwnerLive`
 * counts only files under the directory itself, not under a sibling whose name starts the same.
 */
import {
  mkdirSync,
  openSync,
  closeSync,
  readFileSync,
  realpathSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem, isNameTaken, readNamedFile, realPathOf } from '../../src/io/index.js';
import { directoryOwnerLive, holdDirectoryLock } from '../../src/io/process-lock.js';
import { tempDir } from '../support/temp-dir.js';

describe('NodeFileSystem edges', () => {
  it("truncates an existing file opened with 'w': a longer leftover leaves no bytes after the new ones", async () => {
    const file = path.join(tempDir(), 'store.json.tmp');
    writeFileSync(file, 'a leftover much longer than what is written next');
    const handle = await new NodeFileSystem().open(file, 'w');
    await handle.writev([Buffer.from('{}')], 0);
    await handle.datasync();
    expect(await handle.sizeBytes()).toBe(2);
    await handle.close();
    expect(readFileSync(file, 'utf8')).toBe('{}');
  });

  it('has no identity for a path below a regular file (ENOTDIR), as for a missing one', async () => {
    const file = path.join(tempDir(), 'f');
    writeFileSync(file, 'x');
    const fs = new NodeFileSystem();
    expect(await fs.identity(path.join(file, 'below'))).toBeNull();
    expect(await fs.identity(path.join(path.dirname(file), 'missing'))).toBeNull();
    expect(await fs.identity(file)).toEqual(expect.any(String));
  });
});

describe('real paths of names that do not exist', () => {
  it('resolves, and does not take, a name below a regular file', () => {
    const dir = tempDir();
    const file = path.join(dir, 'f');
    writeFileSync(file, 'x');
    expect(realPathOf(path.join(file, 'below'))).toBe(path.join(realpathSync(file), 'below'));
    expect(isNameTaken(path.join(file, 'below'))).toBe(false);
    expect(isNameTaken(file)).toBe(true);
  });
});

describe('readNamedFile limit', () => {
  it('reads a file of exactly bytesMax bytes and refuses one a byte longer', async () => {
    const dir = tempDir();
    const exact = path.join(dir, 'exact');
    const over = path.join(dir, 'over');
    writeFileSync(exact, Buffer.alloc(100, 7));
    writeFileSync(over, Buffer.alloc(101, 7));
    expect((await readNamedFile(exact, 100))?.length).toBe(100);
    await expect(readNamedFile(over, 100)).rejects.toThrow(RangeError);
  });
});

describe.runIf(process.platform === 'linux')('directoryOwnerLive', () => {
  it('counts a file the process holds open under the directory, not one under a sibling whose name starts the same', async () => {
    const root = tempDir();
    const store = path.join(root, 'store');
    const sibling = path.join(root, 'store-copy');
    mkdirSync(store);
    mkdirSync(sibling);
    const fd = openSync(path.join(sibling, 'segment'), 'w');
    try {
      expect(await directoryOwnerLive(store, process.pid)).toBe(false);
    } finally {
      closeSync(fd);
    }
    const own = openSync(path.join(store, 'segment'), 'w');
    try {
      expect(await directoryOwnerLive(store, process.pid)).toBe(true);
    } finally {
      closeSync(own);
    }
  });

  it('tells a directory locked under its path alone (as a process of an earlier version locks it) as live', async () => {
    const root = tempDir();
    const store = path.join(root, 'store');
    mkdirSync(store);
    const held = await holdDirectoryLock(store);
    expect(typeof held).toBe('object');
    try {
      // The holder's directory moves away and another is made under its name: only the name
      // after the real path is bound for the new directory.
      renameSync(store, path.join(root, 'moved'));
      mkdirSync(store);
      expect(await directoryOwnerLive(store, 2 ** 22 + 1)).toBe(true);
    } finally {
      if (typeof held === 'object') await held.release();
    }
    expect(await directoryOwnerLive(store, 2 ** 22 + 1)).toBe(false);
  });
});
