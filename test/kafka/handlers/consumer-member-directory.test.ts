/**
 * The server's notes on consumer-group members stay within their bounds: a number of members and
 * a number of characters in all, the notes written longest ago going first.
 */
import { describe, expect, it } from 'vitest';
import { ConsumerMemberDirectory } from '../../../src/kafka/handlers/consumer-member-directory.js';

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
        held +=
          `g\u0000m${m}`.length + 1 + 10 + (n.topicNames ?? []).reduce((a, t) => a + t.length, 0);
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
});
