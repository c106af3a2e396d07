import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';

describe('ManualClock', () => {
  it('fires due timers in due-time then arming order, each seeing its own due time', () => {
    const clock = new ManualClock(1000);
    const seen: string[] = [];
    clock.setTimer(20, () => seen.push(`b@${clock.nowMs()}`));
    clock.setTimer(10, () => {
      seen.push(`a@${clock.nowMs()}`);
      clock.setTimer(0, () => seen.push(`a2@${clock.nowMs()}`));
    });
    clock.setTimer(20, () => seen.push(`c@${clock.nowMs()}`));
    clock.setTimer(30, () => seen.push('late')).cancel();
    clock.advance(25);
    expect(seen).toEqual(['a@1010', 'a2@1010', 'b@1020', 'c@1020']);
    expect(clock.nowMs()).toBe(1025);
    expect(clock.pendingTimerCount).toBe(0);
  });

  it('keeps firing a periodic timer through a long advance, and many timers due at one instant', () => {
    const clock = new ManualClock(0);
    let ticks = 0;
    const tick = () => {
      ticks++;
      clock.setTimer(1, tick);
    };
    clock.setTimer(1, tick);
    clock.advance(200_000);
    expect(ticks).toBe(200_000);

    let fired = 0;
    for (let i = 0; i < 5000; i++) clock.setTimer(5, () => fired++);
    clock.advance(5);
    expect(fired).toBe(5000);
  });

  it('throws, rather than spinning forever, when a timer keeps re-arming itself with a zero delay', () => {
    const clock = new ManualClock(0);
    let fired = 0;
    const rearm = () => {
      fired++;
      clock.setTimer(0, rearm);
    };
    clock.setTimer(3, rearm);
    expect(() => clock.advance(10)).toThrow(
      expect.objectContaining({
        name: 'TimerLoopError',
        message: expect.stringMatching(/100000 timers fired at 3 ms without time moving/),
      }),
    );
    expect(fired).toBe(100_000);
    expect(clock.nowMs()).toBe(3);
  });
});
