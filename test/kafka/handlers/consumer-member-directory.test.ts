/**
 * The server's notes on consumer-group members stay within their bounds: a number of members and
 * a number of characters in all. Past them the notes of members the store no longer holds go, those
 * written longest ago first; a held member's notes never go to make room for another's, and notes
 * that do not fit beside them are refused (`fits`).
 */
import { describe, expect, it } from 'vitest';
import {
  ConsumerMemberDirectory,
  NO_ROOM_RECHECK_MS,
} from '../../../src/kafka/handlers/consumer-member-directory.js';

const notes = (topicNames: string[]) => ({
  topicNames,
  tableIds: [],
  clientId: 'c',
  clientHost: '/127.0.0.1',
});

describe('consumer member directory', () => {
  it('drops the oldest notes past its character budget, and counts what it holds', () => {
    const directory = new ConsumerMemberDirectory(1000, 10_000);
    const wide = Array.from({ length: 100 }, (_, i) => `topic-${String(i).padStart(4, '0')}`);
    for (let m = 0; m < 50; m++) directory.set('g', `m${m}`, notes(wide));
    expect(directory.chars).toBeLessThanOrEqual(10_000);
    expect(directory.size).toBe(9);
    expect(directory.get('g', 'm49')?.topicNames).toEqual(wide);
    expect(directory.get('g', 'm0')).toBeUndefined();
    directory.set('g', 'm49', notes(['one']));
    directory.delete('g', 'm48');
    expect(directory.size).toBe(8);
    let held = 0;
    for (let m = 0; m < 50; m++) {
      const n = directory.get('g', `m${m}`);
      if (n !== undefined)
        held += `1:gm${m}`.length + 1 + 10 + (n.topicNames ?? []).reduce((a, t) => a + t.length, 0);
    }
    expect(directory.chars).toBe(held);
  });

  it('counts the table ids it keeps against the budget: members subscribed to thousands of tables cannot hold more than it allows', () => {
    const directory = new ConsumerMemberDirectory(1000, 100_000);
    const ids = Array.from({ length: 10_000 }, (_, i) => i + 1);
    for (let m = 0; m < 20; m++)
      directory.set('g', `m${m}`, {
        topicNames: [],
        topicRegex: '.*',
        regexTableIds: ids,
        tableIds: ids,
        clientId: 'c',
        clientHost: 'h',
      });
    expect(directory.chars).toBeLessThanOrEqual(100_000);
    expect(directory.size).toBe(1);
  });

  it('keeps at most membersMax members', () => {
    const directory = new ConsumerMemberDirectory(3);
    for (let m = 0; m < 10; m++) directory.set('g', `m${m}`, notes(['orders']));
    expect(directory.size).toBe(3);
    expect(directory.get('g', 'm9')).toBeDefined();
  });

  it("never drops a held member's notes for another's: notes that do not fit beside them are refused", () => {
    const gone = new Set<string>();
    let nowMs = 0;
    const directory = new ConsumerMemberDirectory(1000, 2_000, {
      held: (groupId, memberId) => !gone.has(`${groupId}/${memberId}`),
      nowMs: () => nowMs,
    });
    const wide = Array.from({ length: 50 }, (_, i) => `topic-${String(i).padStart(4, '0')}`);
    directory.set('victim', 'v', notes(['orders', 'later']));
    let kept = 0;
    for (let m = 0; m < 20; m++) {
      if (!directory.fits('attacker', `a${m}`, notes(wide))) break;
      directory.set('attacker', `a${m}`, notes(wide));
      kept++;
    }
    expect(kept).toBe(3);
    expect(directory.get('victim', 'v')?.topicNames).toEqual(['orders', 'later']);
    expect(directory.chars).toBeLessThanOrEqual(2_000);
    // A member the store no longer holds makes room, once the wait after a fruitless look is over
    // (or at once when a member is deleted).
    gone.add('attacker/a0');
    expect(directory.fits('other', 'o', notes(wide))).toBe(false);
    nowMs += NO_ROOM_RECHECK_MS;
    expect(directory.fits('other', 'o', notes(wide))).toBe(true);
    expect(directory.get('attacker', 'a0')).toBeUndefined();
    directory.set('other', 'o', notes(wide));
    expect(directory.fits('more', 'x', notes(wide))).toBe(false);
    directory.delete('attacker', 'a1');
    expect(directory.fits('more', 'x', notes(wide))).toBe(true);
    // Notes that grow are counted by what they add; a member id the server is yet to make counts too.
    expect(directory.fits('victim', 'v', notes(['orders', 'later']))).toBe(true);
    expect(directory.fits('more', '', notes(wide))).toBe(true);
  });

  it('tells group and member ids apart whatever characters they hold', () => {
    const directory = new ConsumerMemberDirectory(10);
    directory.set('g\u0000m', 'x', notes(['a']));
    directory.set('g', 'm\u0000x', notes(['b']));
    directory.set('1:g', 'm', notes(['c']));
    expect(directory.get('g\u0000m', 'x')?.topicNames).toEqual(['a']);
    expect(directory.get('g', 'm\u0000x')?.topicNames).toEqual(['b']);
    expect(directory.get('1:g', 'm')?.topicNames).toEqual(['c']);
    expect(directory.size).toBe(3);
  });
});
