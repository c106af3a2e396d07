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
});
