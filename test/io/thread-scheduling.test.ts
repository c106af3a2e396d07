/**
 * Whether a thread put under SCHED_IDLE could be taken back (canLeaveIdle): from the process's
 * effective capabilities and its RLIMIT_NICE, as /proc gives them.
 */
import { describe, expect, it } from 'vitest';
import { canLeaveIdle } from '../../src/io/index.js';

const status = (capEff: string) => `Name:\tnode\nCapInh:\t0000000000000000\nCapEff:\t${capEff}\n`;
const limits = (soft: string) =>
  `Limit                     Soft Limit           Hard Limit           Units     \nMax nice priority         ${soft}                    ${soft}                    \nMax realtime priority     0                    0                    \n`;

describe('canLeaveIdle', () => {
  it('is true with CAP_SYS_NICE (root), whatever the limit', () => {
    expect(canLeaveIdle(10, status('000001fffeffffff'), limits('0'))).toBe(true);
    expect(canLeaveIdle(10, status('0000000000800000'), limits('0'))).toBe(true);
  });

  it('without it, follows RLIMIT_NICE: a thread may reach nice n when 20 - n is within the limit', () => {
    const none = status('0000000000000000');
    expect(canLeaveIdle(10, none, limits('0')), 'the usual unprivileged limit').toBe(false);
    expect(
      canLeaveIdle(10, status('00000000007fffff'), limits('0')),
      'every capability but it',
    ).toBe(false);
    expect(canLeaveIdle(10, none, limits('9'))).toBe(false);
    expect(canLeaveIdle(10, none, limits('10'))).toBe(true);
    expect(canLeaveIdle(19, none, limits('1'))).toBe(true);
    expect(canLeaveIdle(10, none, limits('unlimited'))).toBe(true);
  });

  it('is false when it cannot be told', () => {
    expect(canLeaveIdle(10, 'Name:\tnode\n', 'Limit\n')).toBe(false);
  });

  it.runIf(process.platform === 'linux')('reads this process when given nothing', () => {
    const root = process.getuid?.() === 0;
    if (root) expect(canLeaveIdle(10)).toBe(true);
    else expect(typeof canLeaveIdle(10)).toBe('boolean');
  });
});
