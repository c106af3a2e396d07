/**
 * What the manifest accepts in a store's folders: a hidden entry of `buckets/` (a file manager's
 * or an NFS client's) is no stray bucket; a store folder whose `store.json` is missing but whose
 * bucket folders hold anything other than empty segments (a checkpoint, the commit journal) is
 * refused rather than wiped and created afresh; segment file names are exactly 20 digits and a
 * safe integer.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem } from '../../src/io/index.js';
import { ManifestFile, parseSegmentFileName, segmentFileName } from '../../src/log/index.js';
import { tempDir } from '../support/temp-dir.js';

const defaults = { bucketCount: 2, compactionStrategy: 'log-cleaner', nowMs: 0 };

describe('store manifest folders', () => {
  it('takes a hidden entry of buckets/ for no stray bucket folder', async () => {
    const dir = tempDir();
    const fs = new NodeFileSystem();
    await ManifestFile.openOrCreate(fs, dir, defaults);
    writeFileSync(path.join(dir, 'buckets', '.DS_Store'), 'x');
    await expect(ManifestFile.openOrCreate(fs, dir, defaults)).resolves.toBeInstanceOf(
      ManifestFile,
    );
    mkdirSync(path.join(dir, 'buckets', '002'));
    await expect(ManifestFile.openOrCreate(fs, dir, defaults)).rejects.toThrow(/002/);
  });

  it('refuses, and leaves in place, bucket folders holding more than empty segments when store.json is missing', async () => {
    const dir = tempDir();
    const fs = new NodeFileSystem();
    await ManifestFile.openOrCreate(fs, dir, defaults);
    rmSync(path.join(dir, 'store.json'));
    const checkpoint = path.join(dir, 'buckets', '001', 'checkpoint-7');
    writeFileSync(checkpoint, 'not a segment');
    writeFileSync(path.join(dir, 'buckets', '000', segmentFileName(0)), '');
    await expect(ManifestFile.openOrCreate(fs, dir, defaults)).rejects.toThrow(
      /holds checkpoint-7: a store was here/,
    );
    expect(existsSync(checkpoint)).toBe(true);
    // Empty segments alone are what a store that never committed leaves: it is created afresh.
    rmSync(checkpoint);
    await expect(ManifestFile.openOrCreate(fs, dir, defaults)).resolves.toBeInstanceOf(
      ManifestFile,
    );
  });

  it('reads segment names of exactly 20 digits whose offset is a safe integer', () => {
    expect(parseSegmentFileName(segmentFileName(Number.MAX_SAFE_INTEGER))).toBe(
      Number.MAX_SAFE_INTEGER,
    );
    expect(parseSegmentFileName('00009007199254740992.log')).toBeUndefined();
    expect(parseSegmentFileName('99999999999999999999.log')).toBeUndefined();
    expect(parseSegmentFileName('5.log')).toBeUndefined();
    expect(parseSegmentFileName('0000000000000000005.log')).toBeUndefined();
  });
});
