/**
 * Whether a thread put under SCHED_IDLE could be taken back (canLeaveIdle), tried in a child as a
 * promotion would do it. As root it can; an unprivileged process, which cannot, is tested in
 * test/compaction/unprivileged-workers.test.ts (run as another user).
 */
import { describe, expect, it } from 'vitest';
import { canLeaveIdle } from '../../src/io/index.js';

describe('canLeaveIdle', () => {
  it.runIf(process.platform === 'linux' && process.getuid?.() === 0)(
    'is true for root, at any nice increment',
    () => {
      expect(canLeaveIdle(10)).toBe(true);
      expect(canLeaveIdle(19)).toBe(true);
    },
  );

  it.runIf(process.platform !== 'linux')('is false off Linux', () => {
    expect(canLeaveIdle(10)).toBe(false);
  });
});
