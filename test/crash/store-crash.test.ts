/**
 * The store under SIGKILL: a child's concurrent committers make planned multi-bucket commits
 * (store-commit-plan.ts) and report each acknowledged one; it is killed at a random moment, CRASH_ROUNDS
 * times (default 10). After each kill no acknowledged commit is lost, no commit is torn across its
 * buckets, and every value is one a planned commit wrote there. CRASH_SEED replays a run.
 */
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OffsetStore, type CommittedOffset } from '../../src/index.js';
import { exited, forkTs } from '../support/fork-child.js';
import { seededRandom, seedFrom } from '../support/seeded-random.js';
import { tempDir } from '../support/temp-dir.js';
import {
  BUCKET_COUNT,
  GROUP_COUNT,
  ROUND_STRIDE,
  groupName,
  plannedCommit,
} from './store-commit-plan.js';

const rounds = Number(process.env.CRASH_ROUNDS ?? 10);
const CHILD = path.join(import.meta.dirname, 'store-commit-child.ts');

const keyOf = (
  groupId: string,
  b: { tableId: number; partitionId: number | null; bucketId: number },
) => `${groupId}|${b.tableId}/${b.partitionId}/${b.bucketId}`;

/** Every committed offset of every group the child writes, by group and bucket. */
async function fetchAll(dir: string): Promise<Map<string, CommittedOffset>> {
  const store = await OffsetStore.open({
    dir,
    bucketCount: BUCKET_COUNT,
    compaction: { strategy: 'none' },
  });
  try {
    const all = new Map<string, CommittedOffset>();
    for (let g = 0; g < GROUP_COUNT; g++) {
      for (const o of await store.fetchOffsets(groupName(g))) all.set(keyOf(groupName(g), o!), o!);
    }
    expect((await store.stats()).totals.liveOffsets).toBe(all.size);
    return all;
  } finally {
    await store.close();
  }
}

describe('store crash safety', () => {
  it(`keeps every acknowledged multi-bucket commit, never a torn one, across ${rounds} SIGKILLs`, async () => {
    const seed = seedFrom('CRASH_SEED');
    const random = seededRandom(seed);
    const dir = tempDir();
    const acked: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const context = `seed ${seed} (replay with CRASH_SEED=${seed}), round ${round}`;
      const child = forkTs(CHILD, [dir, String(seed), String(round * ROUND_STRIDE)]);
      const errors: string[] = [];
      child.on('message', (m: { type: string; n?: number; message?: string }) => {
        if (m.type === 'ack') acked.push(m.n!);
        if (m.type === 'error') errors.push(m.message!);
      });
      await new Promise<void>((resolve) => child.once('message', () => resolve()));
      await new Promise((r) => setTimeout(r, 50 + random() * 350));
      child.kill('SIGKILL');
      await exited(child);
      expect(errors, context).toEqual([]);

      const fetched = await fetchAll(dir);
      const problems: string[] = [];
      // Every value is exactly what some planned commit wrote to that key.
      for (const [key, value] of fetched) {
        const commit = plannedCommit(seed, value.offset);
        const planned = commit.offsets.find((o) => keyOf(commit.groupId, o) === key);
        if (
          planned === undefined ||
          value.metadata !== planned.metadata ||
          value.leaderEpoch !== planned.leaderEpoch
        ) {
          problems.push(
            `${key} holds ${JSON.stringify(value)}, which commit ${value.offset} did not write there`,
          );
        }
      }
      // All-or-nothing: a commit visible at one key is visible (or superseded by a later commit) at all of its keys.
      for (const n of new Set([...fetched.values()].map((v) => v.offset))) {
        const commit = plannedCommit(seed, n);
        for (const o of commit.offsets) {
          const offset = fetched.get(keyOf(commit.groupId, o))?.offset;
          if (offset === undefined || offset < n)
            problems.push(`commit ${n} is torn: ${keyOf(commit.groupId, o)} holds ${offset}`);
        }
      }
      // No acknowledged commit is lost: each of its keys holds it, or a later commit of that key.
      for (const n of acked) {
        const commit = plannedCommit(seed, n);
        for (const o of commit.offsets) {
          const offset = fetched.get(keyOf(commit.groupId, o))?.offset;
          if (offset === undefined || offset < n)
            problems.push(
              `acknowledged commit ${n} lost at ${keyOf(commit.groupId, o)} (holds ${offset})`,
            );
        }
      }
      expect(problems.slice(0, 20), context).toEqual([]);
    }
    expect(acked.length, `seed ${seed}: the child got commits acknowledged`).toBeGreaterThan(
      rounds * 5,
    );
  });
});
