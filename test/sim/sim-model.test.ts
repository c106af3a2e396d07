/**
 * The simulator's reference model on the orderings it must allow and the ones it must refuse: an
 * absence that an expiry explains does not pin a delete still in flight into the order (the store
 * may not have applied it, and a commit issued before it may land after the expiry), while a value
 * that was acknowledged and then lost is still refused.
 */
import { describe, expect, it } from 'vitest';
import { ModelViolation, OffsetsModel, keyOf } from '../../sim/sim-model.js';

const KEY = keyOf('g', 1, null, 8);
const expiredAll = () => true;
const expiredNone = () => false;

describe('the reference model', () => {
  it('takes an absence an expiry explains for the expiry, not for a group delete in flight', () => {
    const model = new OffsetsModel();
    const [old] = model.issue([[KEY, 1677]], 0, 'commit');
    model.acknowledge([KEY], [old!]);
    const [commit] = model.issue([[KEY, 1938]], 40_000, 'commit');
    const [deleteGroup] = model.issue([[KEY, null]], 40_000, 'deleteGroup', true);
    // The store expired 1677 (past retention); the group's delete has not been applied yet.
    model.observe(KEY, null, 40_000, expiredAll);
    model.acknowledge([KEY], [commit!]);
    model.crash(); // the delete never landed
    expect(() => model.observe(KEY, 1938, 41_000, expiredNone)).not.toThrow();
    void deleteGroup;
  });

  it('still refuses an acknowledged value that comes back after its delete was seen applied', () => {
    const model = new OffsetsModel();
    const [old] = model.issue([[KEY, 1677]], 0, 'commit');
    model.acknowledge([KEY], [old!]);
    const [deleted] = model.issue([[KEY, null]], 1_000, 'delete');
    model.acknowledge([KEY], [deleted!]);
    model.observe(KEY, null, 2_000, expiredNone);
    expect(() => model.observe(KEY, 1677, 3_000, expiredNone)).toThrow(ModelViolation);
  });

  it("a backup's window allows a value the key held at some instant of it, and nothing older or rejected", () => {
    const model = new OffsetsModel();
    const [first] = model.issue([[KEY, 1]], 0, 'commit');
    model.acknowledge([KEY], [first!]);
    const [second] = model.issue([[KEY, 2]], 0, 'commit');
    model.acknowledge([KEY], [second!]);
    const [inFlight] = model.issue([[KEY, 3]], 0, 'commit');
    const window = model.openWindow('backup');
    const [during] = model.issue([[KEY, 4]], 0, 'commit');
    const [rejected] = model.issue([[KEY, 5]], 0, 'commit');
    model.acknowledge([KEY], [inFlight!]);
    model.acknowledge([KEY], [during!]);
    model.reject([KEY], [rejected!]);
    model.closeWindow(window);
    model.issue([[KEY, 6]], 0, 'commit'); // after the window: not in the copy
    for (const value of [2, 3, 4])
      expect(() => window.check(KEY, value, expiredNone)).not.toThrow();
    for (const value of [1, 5, 6, null])
      expect(() => window.check(KEY, value, expiredNone)).toThrow(ModelViolation);
    expect(() => window.check(KEY, null, expiredAll)).not.toThrow();
    expect(window.keysOf('g')).toEqual([KEY]);
    // A key first written during the window may be absent from the copy.
    const other = keyOf('g', 2, null, 0);
    const secondWindow = model.openWindow('backup');
    model.issue([[other, 7]], 0, 'commit');
    expect(() => secondWindow.check(other, null, expiredNone)).not.toThrow();
    expect(() => secondWindow.check(other, 7, expiredNone)).not.toThrow();
  });

  it('a read-only view may show a write in flight while it opened that was rejected later, never one rejected before', () => {
    const model = new OffsetsModel();
    const [first] = model.issue([[KEY, 1]], 0, 'commit');
    model.acknowledge([KEY], [first!]);
    const [rejectedBefore] = model.issue([[KEY, 2]], 0, 'commit');
    model.reject([KEY], [rejectedBefore!]);
    const [inFlight] = model.issue([[KEY, 3]], 0, 'commit');
    const view = model.openWindow('read-only view');
    const [during] = model.issue([[KEY, 4]], 0, 'commit');
    model.reject([KEY], [inFlight!]);
    model.reject([KEY], [during!]);
    model.closeWindow(view);
    for (const value of [1, 3, 4]) expect(() => view.check(KEY, value, expiredNone)).not.toThrow();
    expect(() => view.check(KEY, 2, expiredNone)).toThrow(/in a read-only view/);
  });
  it("in durability 'os', a power loss may keep a write acknowledged after a later one and lose the later one", () => {
    const model = new OffsetsModel();
    const [durable] = model.issue([[KEY, 10]], 0, 'commit');
    model.acknowledge([KEY], [durable!]);
    model.markDurable();
    model.unsynced = true;
    const [reset] = model.issue([[KEY, 11]], 1_000, 'reset');
    const [commit] = model.issue([[KEY, 12]], 1_000, 'commit');
    // The later commit is acknowledged first; the reset precedes it in the log all the same.
    model.acknowledge([KEY], [commit!]);
    model.acknowledge([KEY], [reset!]);
    model.observe(KEY, 12, 2_000, expiredNone);
    model.crash();
    model.powerLoss(); // the log may end after the reset, before the commit
    expect(() => model.observe(KEY, 11, 3_000, expiredNone)).not.toThrow();
  });

  it("in durability 'fsync', a write acknowledged after a later one never comes back", () => {
    const model = new OffsetsModel();
    const [reset] = model.issue([[KEY, 11]], 1_000, 'reset');
    const [commit] = model.issue([[KEY, 12]], 1_000, 'commit');
    model.acknowledge([KEY], [commit!]);
    model.acknowledge([KEY], [reset!]);
    model.crash();
    model.powerLoss();
    expect(() => model.observe(KEY, 11, 3_000, expiredNone)).toThrow(ModelViolation);
  });
});
