/**
 * Refusals a swap intent and the LOCK file must make that no other test reaches: an intent that
 * deletes segments from the middle of the log, one whose temporary name is not its output's `.cleaned` name, one that
 * lists a segment twice; and a LOCK file (without the kernel lock) that names this process's own
 * pid (an earlier process that had it, as pid 1 in a container) or pid 0 is stale, and one under a
 * name the locked directory has left is not removed by the release.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadChecksum, xxh32 } from '../../src/codec/index.js';
import { NodeFileSystem, type DirectoryLockResult } from '../../src/io/index.js';
import { CLEANED_SUFFIX, DirectoryLock, segmentFileName } from '../../src/log/index.js';
import { parseSwapIntent, resolveSwap, type SwapIntent } from '../../src/log/segment-swap.js';
import { tempDir } from '../support/temp-dir.js';

beforeAll(() => loadChecksum());

const seg = (baseOffset: number) => segmentFileName(baseOffset);
const out = (baseOffset: number) => ({
  name: seg(baseOffset),
  tempName: `${seg(baseOffset)}${CLEANED_SUFFIX}`,
});

/** An intent file's bytes with a checksum that matches, so that only its shape is wrong. */
function intentBytes(intent: SwapIntent): Buffer {
  const checksum = xxh32(Buffer.from(JSON.stringify([intent.inputs, intent.outputs]), 'utf8'));
  return Buffer.from(JSON.stringify({ ...intent, checksum }));
}

describe('swap intent refusals', () => {
  const segments = [seg(0), seg(10), seg(20), seg(30)];

  it('refuses a deletion without outputs of segments that do not start the log', () => {
    const intent: SwapIntent = { inputs: [seg(10)], outputs: [] };
    expect(() => resolveSwap('i', intent, segments, new Set(), 100)).toThrow(
      /deletes segments without outputs/,
    );
    expect(resolveSwap('i', { inputs: [seg(0)], outputs: [] }, segments, new Set(), 100)).toEqual([
      seg(10),
      seg(20),
      seg(30),
    ]);
  });

  it("refuses a temporary name other than the output's .cleaned name, and a segment listed twice, even with a matching checksum", () => {
    const renamed = {
      inputs: [seg(0)],
      outputs: [{ name: seg(0), tempName: `${seg(30)}${CLEANED_SUFFIX}` }],
    };
    expect(() => parseSwapIntent('i', intentBytes(renamed))).toThrow(/temporary name/);
    const twice: SwapIntent = { inputs: [seg(0), seg(0)], outputs: [out(0)] };
    expect(() => parseSwapIntent('i', intentBytes(twice))).toThrow(/in log order/);
    const fine: SwapIntent = { inputs: [seg(0), seg(10)], outputs: [out(0)] };
    expect(parseSwapIntent('i', intentBytes(fine))).toEqual(fine);
  });
});

/** The real file system without the kernel lock: the LOCK file is the only lock. */
class PidFileOnlyFileSystem extends NodeFileSystem {
  override holdLock(): Promise<DirectoryLockResult> {
    return Promise.resolve('unsupported');
  }
}

describe('LOCK file without the kernel lock', () => {
  it("takes over a LOCK file naming this process's own pid or pid 0: no live other process holds it", async () => {
    const fs = new PidFileOnlyFileSystem();
    for (const pid of [process.pid, 0]) {
      const dir = tempDir();
      writeFileSync(path.join(dir, 'LOCK'), `${pid}\n`);
      const lock = await DirectoryLock.acquire(fs, dir);
      expect(readFileSync(path.join(dir, 'LOCK'), 'utf8')).toBe(`${process.pid}\n`);
      await lock.release();
      expect(existsSync(path.join(dir, 'LOCK'))).toBe(false);
    }
  });

  it('leaves alone, at release, the LOCK file under a name the locked directory has left', async () => {
    const root = tempDir();
    const dir = path.join(root, 'store');
    mkdirSync(dir);
    const lock = await DirectoryLock.acquire(new PidFileOnlyFileSystem(), dir);
    renameSync(dir, path.join(root, 'moved'));
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'LOCK'), '4242\n'); // another store's, now under the name
    await lock.release();
    expect(readFileSync(path.join(dir, 'LOCK'), 'utf8')).toBe('4242\n');
  });
});
