/**
 * The estimate a join, a heartbeat and a layout change are checked against (a group's snapshot must
 * fit in one batch of the log) is an upper bound: random groups (tables of many buckets or many
 * partitions, members subscribing to subsets, slow revocations, layouts that grow, members leaving)
 * never write a snapshot larger than the estimate for the subscriptions and layouts it holds. An
 * estimate below the truth would let a group in that could then never write its snapshot again.
 * SNAPSHOT_ESTIMATE_SEED replays a failing seed.
 */
import { describe, expect, it } from 'vitest';
import { buildGroupSnapshotBatch } from '../../src/codec/records.js';
import { groupSnapshotBytesEstimate } from '../../src/group/group-handlers.js';
import { normalizeTableLayout, type GroupSnapshot } from '../../src/group/index.js';
import { seedFrom, seededRandom } from '../support/seeded-random.js';
import { depthRuns } from '../support/test-depth.js';
import { GroupTestContext, type SimMember } from './group-test-context.js';

const SEEDS = depthRuns('SNAPSHOT_ESTIMATE_SEEDS', 3, 10);

function checkLatest(ctx: GroupTestContext, seed: number, step: string): number {
  const snapshot = ctx.writer.latest.get('g') as GroupSnapshot | null | undefined;
  if (snapshot === undefined || snapshot === null) return 0;
  const bytes = buildGroupSnapshotBatch('g', snapshot, 0).length;
  const layouts = new Map(
    snapshot.tableLayouts.map((l) => [l.tableId, normalizeTableLayout(l.tableId, l)]),
  );
  const estimate = groupSnapshotBytesEstimate(
    Buffer.byteLength('g'),
    snapshot.members,
    layouts,
    snapshot.members.flatMap((m) => [...m.assignment, ...(m.pendingRevocation ?? [])]),
  );
  expect(
    bytes,
    `seed ${seed} (SNAPSHOT_ESTIMATE_SEED=${seed}), ${step}: a snapshot of ${bytes} bytes against an estimate of ${estimate.bytes}`,
  ).toBeLessThanOrEqual(estimate.bytes);
  return bytes / estimate.bytes;
}

describe('the group snapshot size estimate', () => {
  it('bounds every snapshot written by random groups', async () => {
    const first = seedFrom('SNAPSHOT_ESTIMATE_SEED');
    const seeds = process.env.SNAPSHOT_ESTIMATE_SEED !== undefined ? 1 : SEEDS;
    let closest = 0;
    for (let n = 0; n < seeds; n++) {
      const seed = (first + n) >>> 0;
      const random = seededRandom(seed);
      const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
      const ctx = new GroupTestContext({ snapshotBytesMax: 2 ** 30 });
      ctx.writer.verifyRoundTrip = false; // (other tests check that; here, sizes only)
      const tableCount = int(1, 12);
      // Table ids of every msgpack width (1 to 9 bytes), member ids up to 255 wide characters.
      const base = [0, 200, 60_000, 2 ** 31, 2 ** 52][int(0, 4)]!;
      const id = (i: number) => base + i;
      const name = (step: number) =>
        random() < 0.3 ? `${'成员'.repeat(int(1, 126))}${step}`.slice(0, 255) : `m${step}`;
      const layout = () =>
        random() < 0.4
          ? {
              bucketCount: int(1, 24),
              partitionIds: Array.from({ length: int(1, 120) }, (_, i) => i * int(1, 3)),
            }
          : { bucketCount: int(1, 1500) };
      for (let t = 1; t <= tableCount; t++) ctx.coordinator.setTableLayout(id(t), layout());
      const members: SimMember[] = [];
      const subscription = () => {
        const ids = Array.from({ length: tableCount }, (_, i) => id(i + 1)).filter(
          () => random() < 0.6,
        );
        return ids.length > 0 ? ids : [id(1)];
      };
      for (let step = 0; step < 40; step++) {
        const roll = random();
        if (members.length < 2 || (roll < 0.2 && members.length < 10)) {
          const member = ctx.member(subscription(), {
            memberId: name(step),
            ...(random() < 0.3 ? { instanceId: name(step + 1000) } : {}),
          });
          member.slowRevoke = random() < 0.3;
          members.push(member);
          await member.beat();
        } else if (roll < 0.3) {
          const member = members.splice(int(0, members.length - 1), 1)[0]!;
          await member.leave();
        } else if (roll < 0.4) {
          ctx.coordinator.setTableLayout(id(int(1, tableCount)), layout());
        } else if (roll < 0.5) {
          members[int(0, members.length - 1)]!.tableIds = subscription();
        } else if (roll < 0.6) {
          for (const member of members) member.finishRevocation();
        } else {
          for (const member of members) await member.beat();
        }
        closest = Math.max(closest, checkLatest(ctx, seed, `step ${step}`));
      }
    }
    // Not so loose that it refuses groups far from the limit: the closest snapshot is within 8x.
    expect(closest).toBeGreaterThan(1 / 8);
  });
});
