/**
 * Recovery by replaying the log: a long seeded history (segment rolls, overwrites, deletes, expiry)
 * reopens to exactly the state before close, and a copy of its directory replays to the same state
 * (RECOVERY_SEED replays a run); a crash image whose last multi-bucket commit was cut anywhere recovers
 * to exactly the state before that commit, warns how many bytes it truncated, and takes commits again.
 */
import { readdirSync, readFileSync, truncateSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, type OffsetStore } from '../../src/index.js';
import { seededRandom, seedFrom } from '../support/seeded-random.js';
import { tempDir } from '../support/temp-dir.js';
import { TrackingFileSystem, copyStoreDir, imageOf, ioIdle, openStore } from './store-fixtures.js';

const T0 = 1_700_000_000_000;

function lastSegment(dir: string, bucket: number): string {
  const bucketDir = path.join(dir, 'buckets', String(bucket).padStart(3, '0'));
  const segments = readdirSync(bucketDir)
    .filter((f) => f.endsWith('.log'))
    .sort();
  return path.join(bucketDir, segments.at(-1)!);
}

/** A seeded history of commits, overwrites, deletes, group deletes and expiries. */
async function randomHistory(
  store: OffsetStore,
  clock: ManualClock,
  fs: TrackingFileSystem,
  seed: number,
): Promise<void> {
  const random = seededRandom(seed);
  const pick = (n: number) => Math.floor(random() * n);
  for (let step = 0; step < 250; step++) {
    const groupId = `group-${pick(8)}`;
    const roll = random();
    if (roll < 0.75) {
      const count = 1 + pick(15);
      const buckets = new Map<
        string,
        { tableId: number; partitionId: number | null; bucketId: number }
      >();
      for (let i = 0; i < count; i++) {
        const b = {
          tableId: 1 + pick(2),
          partitionId: random() < 0.5 ? null : pick(3),
          bucketId: pick(6),
        };
        buckets.set(`${b.tableId}/${b.partitionId}/${b.bucketId}`, b);
      }
      await store.commitOffsets(
        groupId,
        [...buckets.values()].map((b) => ({
          ...b,
          offset: step,
          metadata: random() < 0.3 ? `s${step}` : undefined,
        })),
      );
    } else if (roll < 0.85) {
      await store
        .deleteOffsets(groupId, [
          { tableId: 1, bucketId: pick(6) },
          { tableId: 2, partitionId: pick(3), bucketId: pick(6) },
        ])
        .catch(() => {});
    } else if (roll < 0.9) {
      await store.deleteGroup(groupId).catch(() => {});
    } else {
      clock.advance(1 + pick(400)); // retention 1000 ms, checked every 50 ms
      await ioIdle(fs);
    }
  }
}

describe('recovery', () => {
  it('reopens a long seeded history (rolls, overwrites, deletes, expiry) to the state before close; a copy replays to the same state', async () => {
    const seed = seedFrom('RECOVERY_SEED');
    const context = `seed ${seed} (replay with RECOVERY_SEED=${seed})`;
    const dir = tempDir();
    const clock = new ManualClock(T0);
    const fs = new TrackingFileSystem();
    const options = {
      clock,
      bucketCount: 3,
      offsetsRetentionMs: 1000,
      offsetsRetentionCheckIntervalMs: 50,
    };
    const store = await openStore(dir, { ...options, fs });
    await randomHistory(store, clock, fs, seed);
    const before = await imageOf(store);
    expect(
      (await store.stats()).totals.segmentCount,
      `${context}: segments rolled`,
    ).toBeGreaterThan(10);
    await store.close();

    const copy = tempDir();
    copyStoreDir(dir, copy);
    const reopened = await openStore(dir, options);
    expect(await imageOf(reopened), `${context}: reopen`).toEqual(before);
    await reopened.close();
    const replayed = await openStore(copy, options);
    expect(await imageOf(replayed), `${context}: fresh replay of a copy`).toEqual(before);
    await replayed.close();
  });

  it('recovers a crash image whose last multi-bucket commit was torn (in its header, its records, or whole) to exactly the state before that commit', async () => {
    const dir = tempDir();
    // One segment: the first batches of a new segment are recorded in the manifest as held once
    // acknowledged, so tearing them in a copy made afterwards is damage the open refuses, not a crash.
    const store = await openStore(dir, { bucketCount: 1, segmentBytesMax: 1 << 20 });
    for (let n = 0; n < 40; n++)
      await store.commitOffsets(`g${n % 3}`, [
        { tableId: 1, bucketId: n % 7, offset: n },
        { tableId: 2, partitionId: n % 2, bucketId: 0, offset: n },
      ]);
    const before = await imageOf(store);
    const bytesBefore = (await store.stats()).buckets[0]!.logBytes;
    await store.commitOffsets(
      'g1',
      Array.from({ length: 10 }, (_, i) => ({
        tableId: 3,
        bucketId: i,
        offset: 1000,
        metadata: 'torn?',
      })),
    );
    const batchBytes = (await store.stats()).buckets[0]!.logBytes - bytesBefore;
    const after = await imageOf(store);

    const cuts = [
      1,
      2,
      4,
      8,
      47,
      48,
      52,
      Math.floor(batchBytes / 2),
      batchBytes - 2,
      batchBytes - 1,
      batchBytes,
    ]; // header, records, and the whole batch
    for (const cut of cuts) {
      const crashed = tempDir();
      copyStoreDir(dir, crashed);
      const segment = lastSegment(crashed, 0);
      // The open store preallocated zeros after its last batch (whose last byte, of 'torn?', is not
      // zero); the cut is from the batch's end.
      const bytes = readFileSync(segment);
      let batchEnd = bytes.length;
      while (batchEnd > 0 && bytes[batchEnd - 1] === 0) batchEnd--;
      expect(bytes.length).toBeGreaterThan(batchEnd);
      truncateSync(segment, batchEnd - cut);
      const warnings: string[] = [];
      const recovered = await openStore(crashed, {
        bucketCount: 1,
        segmentBytesMax: 1 << 20,
        onWarning: (m) => warnings.push(m),
      });
      expect(await imageOf(recovered), `last batch cut by ${cut} of ${batchBytes} bytes`).toEqual(
        before,
      );
      expect(recovered.recoveryReports()[0]?.bytesTruncated, `cut ${cut}`).toBe(batchBytes - cut);
      if (cut === batchBytes) expect(warnings, 'a batch cut whole leaves a clean end').toEqual([]);
      else
        expect(warnings, `cut ${cut}`).toEqual([
          expect.stringMatching(
            new RegExp(
              `^offsets-bucket 0: torn write at the end of .*; truncated ${batchBytes - cut} bytes that were never made durable \\(never acknowledged, unless the store ran in durability 'os', .*\\)$`,
            ),
          ),
        ]);
      // The recovered store accepts commits again, at the log offset the torn batch had.
      await recovered.commitOffsets('g1', [{ tableId: 3, bucketId: 0, offset: 1 }]);
      await recovered.close();
    }
    // Without damage, the crash image has everything.
    const intact = tempDir();
    copyStoreDir(dir, intact);
    const recovered = await openStore(intact, { bucketCount: 1, segmentBytesMax: 1 << 20 });
    expect(await imageOf(recovered)).toEqual(after);
    await recovered.close();
    await store.close();
  });
});
