/**
 * The overlay file system: every change is kept in memory and read back, and the folder below is
 * left byte for byte as it was; files not written are read from below as they are now.
 */
import {
  appendFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem, OverlayFileSystem } from '../../src/io/index.js';
import { dirFingerprint as fingerprint } from '../support/dir-fingerprint.js';
import { tempDir } from '../support/temp-dir.js';

function fixture(): string {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'a', 'b'), { recursive: true });
  writeFileSync(path.join(dir, 'a', 'one.log'), Buffer.from('0123456789'));
  writeFileSync(path.join(dir, 'a', 'b', 'two.log'), Buffer.from('abcdef'));
  writeFileSync(path.join(dir, 'store.json'), '{"v":1}');
  return dir;
}

async function readAllOf(fs: OverlayFileSystem, p: string): Promise<string> {
  const handle = await fs.open(p, 'r');
  try {
    const buf = Buffer.alloc(await handle.sizeBytes());
    await handle.read(buf, 0, buf.length, 0);
    return buf.toString();
  } finally {
    await handle.close();
  }
}

describe('OverlayFileSystem', () => {
  it('reads back its own writes, truncations, renames and unlinks, and leaves the folder below untouched', async () => {
    const dir = fixture();
    const before = fingerprint(dir);
    const fs = new OverlayFileSystem(new NodeFileSystem());
    const one = path.join(dir, 'a', 'one.log');
    const handle = await fs.open(one, 'r+');
    await handle.writev([Buffer.from('XY')], 3);
    await handle.writev([Buffer.from('tail')], 10);
    expect(await handle.sizeBytes()).toBe(14);
    await handle.truncate(6);
    await handle.truncate(8); // grown again: zeros, never what was below past the cut
    await handle.datasync();
    await handle.close();
    expect(await fs.readFile(one)).toEqual(Buffer.from('012XY5\0\0'));
    expect(await fs.sizeBytes(one)).toBe(8);

    const created = await fs.open(path.join(dir, 'a', 'new.tmp'), 'wx');
    await created.writev([Buffer.from('new')], 0);
    await created.close();
    await expect(fs.open(path.join(dir, 'a', 'new.tmp'), 'wx')).rejects.toMatchObject({
      code: 'EEXIST',
    });
    await expect(fs.open(one, 'wx')).rejects.toMatchObject({ code: 'EEXIST' });
    await fs.rename(path.join(dir, 'a', 'new.tmp'), path.join(dir, 'a', 'b', 'two.log'));
    expect((await fs.readFile(path.join(dir, 'a', 'b', 'two.log')))!.toString()).toBe('new');
    expect(await fs.readdir(path.join(dir, 'a'))).toEqual(['b', 'one.log']);
    await fs.unlink(path.join(dir, 'store.json'));
    expect(await fs.readFile(path.join(dir, 'store.json'))).toBeNull();
    expect(await fs.sizeBytes(path.join(dir, 'store.json'))).toBeNull();
    await expect(fs.open(path.join(dir, 'store.json'), 'r')).rejects.toMatchObject({
      code: 'ENOENT',
    });
    await fs.mkdir(path.join(dir, 'c', 'd'));
    expect(await fs.readdir(dir)).toEqual(['a', 'c']);
    expect(await fs.readdir(path.join(dir, 'c'))).toEqual(['d']);
    await fs.removeTree(path.join(dir, 'a'));
    expect(await fs.readdir(dir)).toEqual(['c']);
    expect(await fs.readFile(one)).toBeNull();
    // Made again where it was removed: nothing of the old one shows through.
    await fs.mkdir(path.join(dir, 'a', 'b'));
    expect(await fs.readdir(path.join(dir, 'a'))).toEqual(['b']);
    expect(await fs.readdir(path.join(dir, 'a', 'b'))).toEqual([]);
    expect(await fs.readFile(one)).toBeNull();
    expect(await fs.sizeBytes(path.join(dir, 'a', 'b', 'two.log'))).toBeNull();
    await fs.syncDir();

    expect(fingerprint(dir)).toEqual(before);
  });

  it('reads a file it never wrote as it is now below, and a taken-over file as it was when taken', async () => {
    const dir = fixture();
    const fs = new OverlayFileSystem(new NodeFileSystem());
    const one = path.join(dir, 'a', 'one.log');
    const two = path.join(dir, 'a', 'b', 'two.log');
    const taken = await fs.open(two, 'r+');
    await taken.close();
    appendFileSync(one, 'more'); // a live owner appending
    appendFileSync(two, 'more');
    expect(await readAllOf(fs, one)).toBe('0123456789more');
    expect(await fs.sizeBytes(one)).toBe(14);
    expect(await readAllOf(fs, two)).toBe('abcdef');
  });

  it('refuses writes through a handle opened for reading', async () => {
    const dir = fixture();
    const fs = new OverlayFileSystem(new NodeFileSystem());
    const p = path.join(dir, 'a', 'one.log');
    await (await fs.open(p, 'r+')).close();
    const handle = await fs.open(p, 'r');
    await expect(handle.writev([Buffer.from('x')], 0)).rejects.toMatchObject({ code: 'EBADF' });
    await handle.close();
    expect(readFileSync(p).toString()).toBe('0123456789');
  });

  it('unlinks a file that the live owner creates while the overlay looks for it', async () => {
    // The owner writes a compaction intent between the overlay's size check and its directory
    // check: the path is a file by then, and a view's recovery that removes it must not fail.
    const dir = fixture();
    const intent = path.join(dir, 'a', 'compaction.swap');
    class RacingBelow extends NodeFileSystem {
      override async sizeBytes(p: string): Promise<number | null> {
        const size = await super.sizeBytes(p);
        if (p === intent) writeFileSync(intent, 'intent');
        return size;
      }
    }
    const fs = new OverlayFileSystem(new RacingBelow());
    await fs.unlink(intent);
    expect(await fs.readFile(intent)).toBeNull();
    expect(await fs.readdir(path.join(dir, 'a'))).not.toContain('compaction.swap');
    expect(readFileSync(intent).toString()).toBe('intent');
  });

  it('names a file read below that was renamed over or deleted since, and none while all stay', async () => {
    const dir = fixture();
    const one = path.join(dir, 'a', 'one.log');
    const two = path.join(dir, 'a', 'b', 'two.log');
    const fs = new OverlayFileSystem(new NodeFileSystem());
    expect(await readAllOf(fs, one)).toBe('0123456789');
    expect(await fs.readFile(two)).toEqual(Buffer.from('abcdef'));
    appendFileSync(one, 'grown'); // written to in place: the same file
    expect(await fs.changedBelow()).toBeUndefined();

    writeFileSync(path.join(dir, 'a', 'one.new'), '0123456789');
    renameSync(path.join(dir, 'a', 'one.new'), one); // the same bytes, another file
    expect(await fs.changedBelow()).toBe(one);

    const again = new OverlayFileSystem(new NodeFileSystem());
    await again.sizeBytes(two);
    rmSync(two);
    expect(await again.changedBelow()).toBe(two);
  });
});
