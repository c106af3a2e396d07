/**
 * A classic group's commit must carry the group's current generation: a newer one, which the group
 * never had, is ILLEGAL_GENERATION as an older one is (Kafka's rule), and changes nothing.
 */
import { expect, it } from 'vitest';
import { ManualClock, OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';

it("refuses a classic commit whose generation is newer than the group's", async () => {
  const clock = new ManualClock();
  const store = await OffsetStore.open({
    dir: tempDir(),
    clock,
    durability: 'os',
    bucketCount: 1,
    group: { initialRebalanceDelayMs: 0 },
  });
  const request = (memberId: string) => ({
    memberId,
    clientId: 'c',
    clientHost: '127.0.0.1',
    protocolType: 'consumer',
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 20_000,
    requireKnownMemberId: true,
    protocols: [{ name: 'range', metadata: Buffer.from('x') }],
  });
  let joined = await store.classic.joinGroup('g', request(''));
  if (joined.outcome === 'member-id-required') {
    const pending = store.classic.joinGroup('g', request(joined.memberId));
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 1));
    clock.advance(0);
    joined = await pending;
  }
  if (joined.outcome !== 'joined') throw new Error('not joined');
  await store.classic.syncGroup('g', {
    memberId: joined.memberId,
    generationId: joined.generationId,
    protocolType: 'consumer',
    protocolName: 'range',
    assignments: [{ memberId: joined.memberId, assignment: Buffer.from('a') }],
  });
  const offsets = [{ tableId: 1, bucketId: 0, offset: 5 }];
  await store.commitOffsets('g', offsets, {
    memberId: joined.memberId,
    generationId: joined.generationId,
  });
  await expect(
    store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 99 }], {
      memberId: joined.memberId,
      generationId: joined.generationId + 1,
    }),
  ).rejects.toMatchObject({ code: 'ILLEGAL_GENERATION' });
  expect((await store.fetchOffsets('g', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(5);
  await store.close();
});
