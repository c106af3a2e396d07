/**
 * Resolving a compaction swap intent against the files on disk (segment-swap.ts): every state a crash
 * can leave in the middle of applying a swap resolves to the same log, and an intent that does not
 * describe the files is refused.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeFileSystem, type FileSystem } from '../../src/io/index.js';
import { CLEANED_SUFFIX, segmentFileName } from '../../src/log/index.js';
import {
  applySwap,
  INTENT_FILE,
  resolveSwap,
  type SwapIntent,
} from '../../src/log/segment-swap.js';
import { tempDir } from '../support/temp-dir.js';

const seg = (baseOffset: number) => segmentFileName(baseOffset);
const out = (baseOffset: number) => ({
  name: seg(baseOffset),
  tempName: `${seg(baseOffset)}${CLEANED_SUFFIX}`,
});

describe('resolveSwap', () => {
  // Inputs 10, 20 and 30 are cleaned into outputs 10 and 25 (the second named after the first's last batch + 1).
  const intent: SwapIntent = { inputs: [seg(10), seg(20), seg(30)], outputs: [out(10), out(25)] };
  const after = [seg(10), seg(25), seg(40)];

  it('resolves every state of applying the swap to the same segments', () => {
    const states: [string, string[], string[]][] = [
      [
        'nothing applied',
        [seg(10), seg(20), seg(30), seg(40)],
        [out(10).tempName, out(25).tempName],
      ],
      ['first output renamed', [seg(10), seg(20), seg(30), seg(40)], [out(25).tempName]],
      [
        'both outputs renamed (the second sits between two inputs)',
        [seg(10), seg(20), seg(25), seg(30), seg(40)],
        [],
      ],
      ['one input unlinked', [seg(10), seg(25), seg(30), seg(40)], []],
      ['every input unlinked', after, []],
    ];
    for (const [state, segments, temps] of states) {
      expect(resolveSwap('compaction.swap', intent, segments, new Set(temps), 0), state).toEqual(
        after,
      );
    }
  });

  it('refuses inputs that are not a contiguous run of the segments', () => {
    expect(() =>
      resolveSwap(
        'compaction.swap',
        { inputs: [seg(10), seg(30)], outputs: [out(10)] },
        [seg(10), seg(20), seg(30), seg(40)],
        new Set([out(10).tempName]),
        0,
      ),
    ).toThrow(/not a contiguous run/);
  });

  it('refuses an intent whose output is under neither its temporary name nor its own (lost before the intent was durable): nothing may be renamed or deleted', () => {
    // The second output, 25, is gone: applying the swap would drop the batches of 20 and 30 it held.
    expect(() =>
      resolveSwap(
        'compaction.swap',
        intent,
        [seg(10), seg(20), seg(30), seg(40)],
        new Set([out(10).tempName]),
        0,
      ),
    ).toThrow(/output 0+25\.log exists neither as 0+25\.log\.cleaned nor under its own name/);
    // An output that shares an input's name (10) is present under it: that is not enough for 25.
    expect(() =>
      resolveSwap('compaction.swap', intent, [seg(10), seg(20), seg(30), seg(40)], new Set(), 0),
    ).toThrow(/output 0+25\.log exists neither/);
  });
});

describe('applySwap', () => {
  it('makes the renames and unlinks durable (the directory fsynced) before it removes the intent', async () => {
    // Without that fsync a power loss may keep the intent's removal and lose renames made before it
    // (a directory's entries reach the disk in no promised order): the log would lose the swap's
    // outputs with nothing left to say how to finish it.
    const dir = tempDir();
    const intent: SwapIntent = { inputs: [seg(10), seg(20)], outputs: [out(10)] };
    for (const name of [seg(10), seg(20), out(10).tempName, INTENT_FILE])
      writeFileSync(path.join(dir, name), 'x');
    const ops: string[] = [];
    const inner = new NodeFileSystem();
    const fs = Object.assign(Object.create(inner) as FileSystem, {
      rename: async (from: string, to: string) => {
        ops.push(`rename ${path.basename(from)} ${path.basename(to)}`);
        return inner.rename(from, to);
      },
      unlink: async (file: string) => {
        ops.push(`unlink ${path.basename(file)}`);
        return inner.unlink(file);
      },
      syncDir: async (d: string) => {
        ops.push('syncDir');
        return inner.syncDir(d);
      },
    });
    await applySwap(fs, dir, intent);
    expect(ops).toEqual([
      `rename ${out(10).tempName} ${seg(10)}`,
      `unlink ${seg(20)}`,
      'syncDir',
      `unlink ${INTENT_FILE}`,
      'syncDir',
    ]);
    expect(readdirSync(dir)).toEqual([seg(10)]);
  });
});
