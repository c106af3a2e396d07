/**
 * MemberTimers: a member is tracked only while one of its timers is armed, so members nobody
 * cancels (a classic JoinGroup answered MEMBER_ID_REQUIRED whose client never came back) leave
 * nothing behind once their timers fire.
 */
import { describe, expect, it } from 'vitest';
import { MemberTimers } from '../../src/group/member-timers.js';
import { ManualClock } from '../../src/index.js';

describe('member timers', () => {
  it('forget a member once its last armed timer fires, and only then', () => {
    const clock = new ManualClock();
    const expired: string[] = [];
    const timers = new MemberTimers(clock, {
      sessionExpired: (groupId, memberId) => expired.push(`session ${groupId}/${memberId}`),
      rebalanceExpired: (groupId, memberId) => expired.push(`rebalance ${groupId}/${memberId}`),
    });
    for (let i = 0; i < 1000; i++) timers.scheduleSession('g', `pending-${i}`, 300_000);
    timers.scheduleSession('g', 'both', 1000);
    timers.scheduleRebalance('g', 'both', 3, 2000);
    expect(timers.memberCount).toBe(1001);
    clock.advance(1000);
    expect(expired).toEqual(['session g/both']);
    expect(timers.memberCount, 'its rebalance timer is still armed').toBe(1001);
    clock.advance(1000);
    expect(timers.memberCount).toBe(1000);
    clock.advance(300_000);
    expect(expired).toHaveLength(1002);
    expect(timers.memberCount).toBe(0);
    expect(timers.armedCount).toBe(0);
    // Armed again after firing: tracked again, and cancellable.
    timers.scheduleSession('g', 'pending-1', 1000);
    expect(timers.hasSession('g', 'pending-1')).toBe(true);
    timers.cancelMember('g', 'pending-1');
    expect(timers.memberCount).toBe(0);
  });
});
