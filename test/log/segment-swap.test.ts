/**
 * Resolving a compaction swap intent against the files on disk (segment-swap.ts): every state a crash
 * can leave in the middle of applying a swap resolves to the same log, and an intent that does not
 * describe the files is refused.
 */
import { describe, expect, it } from 'vitest';
import { CLEANED_SUFFIX, segmentFileName } from '../../src/log/index.js';
import { resolveSwap, type SwapIntent } from '../../src/log/segment-swap.js';

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
});
