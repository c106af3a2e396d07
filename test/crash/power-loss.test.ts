/**
 * Power loss: unlike SIGKILL (the page cache survives), a power loss keeps only what reached the
 * disk. Acknowledged batches were fdatasynced; the last write round was not, and the disk may have
 * kept any subset of its sectors: on the preallocated zeros, a lost sector reads as zeros, so the
 * round can come back with a hole followed by intact batches. Recovery must open such a log, keep
 * every acknowledged batch and every intact batch before the first hole, and drop the rest of the
 * round; damage that is not a lost sector must still be refused as corruption.
 *
 * The disk images are built from real log files: a log appends and acknowledges batches, then the
 * bytes of one more round are laid over a copy of its segment sector by sector, each sector kept or
 * lost at random. POWER_LOSS_ROUNDS (default 60) images per run; POWER_LOSS_SEED replays one run.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOffsetBatch, loadChecksum, sealBatch } from '../../src/codec/index.js';
import { isOffsetStoreError } from '../../src/errors/index.js';
import { Log } from '../../src/log/index.js';
import { logOptions, readAll, testBatch } from '../support/log-fixtures.js';
import { seedFrom, seededRandom } from '../support/seeded-random.js';
import { tempDir } from '../support/temp-dir.js';

const ROUNDS = Number(process.env.POWER_LOSS_ROUNDS ?? 60);
const SECTOR = 512;
const SEGMENT_BYTES_MAX = 1 << 20;
const T0 = 1_700_000_000_000;

beforeAll(() => loadChecksum());

/** A log with `count` acknowledged batches, left open (so its preallocated zeros stay); its segment's bytes. */
async function ackedLog(
  random: () => number,
  count: number,
): Promise<{ acked: Buffer[]; segment: Buffer; name: string; log: Log }> {
  const dir = tempDir();
  const { log } = await Log.open(logOptions(dir, { segmentBytesMax: SEGMENT_BYTES_MAX }));
  const acked: Buffer[] = [];
  for (let n = 0; n < count; n++) {
    const batch = testBatch(n, 1 + Math.floor(random() * 60));
    expect(await log.append(batch)).toBe(n);
    acked.push(batch);
  }
  const name = readdirSync(dir).find((f) => f.endsWith('.log'))!;
  return { acked, segment: readFileSync(path.join(dir, name)), name, log };
}

/**
 * The batches of the round that follows `acked`, sealed with their log offsets and, as the log
 * writes them, each batch's syncLag: the round began once everything before it was durable.
 */
function roundBatches(random: () => number, firstOffset: number): Buffer[] {
  return Array.from({ length: 2 + Math.floor(random() * 6) }, (_, i) => {
    const batch = testBatch(firstOffset + i, 1 + Math.floor(random() * 40));
    sealBatch(batch, firstOffset + i, 0, i);
    return batch;
  });
}

/** Writes `image` as the only segment of a fresh log directory. */
function logDirWith(name: string, image: Buffer): string {
  const dir = tempDir();
  writeFileSync(path.join(dir, name), image);
  return dir;
}

/** What opening `image` as the only segment of a fresh log throws (undefined if it opens). */
function openError(name: string, image: Buffer): Promise<unknown> {
  return Log.open(logOptions(logDirWith(name, image), { segmentBytesMax: SEGMENT_BYTES_MAX })).then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('power loss during a write round', () => {
  it(
    'opens every image of a round that lost random sectors, with every acknowledged batch and the intact batches before the first hole',
    async () => {
      const seed = seedFrom('POWER_LOSS_SEED');
      const random = seededRandom(seed);
      let holesFollowedByBatches = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const context = `seed ${seed} (POWER_LOSS_SEED=${seed}), image ${round}`;
        const { acked, segment, name, log } = await ackedLog(random, 1 + Math.floor(random() * 6));
        await log.close();
        const ackedEnd = acked.reduce((sum, b) => sum + b.length, 0);
        const batches = roundBatches(random, acked.length);
        const roundBytes = Buffer.concat(batches);
        // The disk after the power loss: the durable prefix and preallocated zeros, with each sector of
        // the round either written or lost (zeros; past the old end of the file, too).
        const image = Buffer.alloc(Math.max(segment.length, ackedEnd + roundBytes.length));
        segment.copy(image, 0, 0, ackedEnd);
        const lossRate = random() < 0.3 ? 0.1 : 0.5;
        const lost = new Set<number>();
        for (
          let sector = Math.floor(ackedEnd / SECTOR) * SECTOR;
          sector < ackedEnd + roundBytes.length;
          sector += SECTOR
        ) {
          if (random() < lossRate) {
            lost.add(sector / SECTOR);
            continue;
          }
          const from = Math.max(sector, ackedEnd);
          const to = Math.min(sector + SECTOR, ackedEnd + roundBytes.length);
          roundBytes.copy(image, from, from - ackedEnd, to - ackedEnd);
        }
        // Which round batches came through whole, and whether a hole is followed by a whole batch.
        const intact: boolean[] = [];
        let at = ackedEnd;
        for (const batch of batches) {
          intact.push(image.subarray(at, at + batch.length).equals(batch));
          at += batch.length;
        }
        const kept = intact.indexOf(false) < 0 ? batches.length : intact.indexOf(false);
        if (intact.slice(kept).some((whole) => whole)) holesFollowedByBatches++;

        const keptEnd = ackedEnd + batches.slice(0, kept).reduce((sum, b) => sum + b.length, 0);
        let recovered: Awaited<ReturnType<typeof readAll>>;
        try {
          recovered = await readAll(
            logOptions(logDirWith(name, image), { segmentBytesMax: SEGMENT_BYTES_MAX }),
          );
        } catch (error) {
          throw new Error(
            `${context}: the log did not open (intact batches of the round: ${intact.join(',')}): ${(error as Error).message}`,
          );
        }
        expect(
          recovered.batches.map((b) => b.bytes),
          context,
        ).toEqual([...acked, ...batches.slice(0, kept)]);
        // Reported as torn unless all that is left of the round reads as zeros (a clean zero tail).
        const restIsZeros = image.subarray(keptEnd).every((byte) => byte === 0);
        expect(recovered.report.tornTail === undefined, context).toBe(restIsZeros);
        expect(await recovered.log.append(testBatch(99)), context).toBe(acked.length + kept);
        await recovered.log.close();
      }
      // The images exercised the case that matters: a hole with whole batches after it.
      expect(holesFollowedByBatches, `seed ${seed}`).toBeGreaterThan(ROUNDS / 10);
    },
    30_000 + ROUNDS * 100,
  );

  it('refuses a flipped bit in acknowledged batches whose own bytes hold zeros at a sector boundary', async () => {
    // A batch whose length field's low byte is 0, starting in the last byte of a sector; and a batch
    // ending in the zeros of a tombstone just past a sector boundary. A flipped bit elsewhere in
    // either, with acknowledged batches after it, is corruption, not a lost sector.
    const meta = (n: number, chars: number): Buffer =>
      buildOffsetBatch(
        'group-1',
        [
          {
            tableId: 7,
            partitionId: null,
            bucketId: 3,
            offset: n,
            leaderEpoch: 2,
            metadata: 'x'.repeat(chars),
          },
        ],
        T0,
      );
    const tombstoneEnded = (chars: number): Buffer =>
      buildOffsetBatch(
        'g',
        [
          {
            tableId: 1,
            partitionId: 0,
            bucketId: 0,
            offset: 1,
            leaderEpoch: 0,
            metadata: 'y'.repeat(chars),
          },
          {
            tableId: 1,
            partitionId: 0,
            bucketId: 0,
            offset: 0,
            leaderEpoch: 0,
            metadata: '',
            tombstone: true,
          },
        ],
        T0,
      );
    let lowByteZero = 0;
    while ((meta(0, lowByteZero).length - 4) % 256 !== 0) lowByteZero++;
    let padTo511 = 0;
    while (meta(0, padTo511).length % SECTOR !== SECTOR - 1) padTo511++;
    const pre = meta(0, 10);
    const cases: { batches: Buffer[]; victim: number; flipAt: number }[] = [
      {
        batches: [meta(0, padTo511), meta(1, lowByteZero), meta(2, 5), meta(3, 6)],
        victim: 1,
        flipAt: 100,
      },
      {
        batches: [
          pre,
          tombstoneEnded(SECTOR + 17 - pre.length - tombstoneEnded(0).length),
          meta(2, 1),
          meta(3, 2),
        ],
        victim: 1,
        flipAt: 80,
      },
    ];
    for (const { batches, victim, flipAt } of cases) {
      const dir = tempDir();
      const { log } = await Log.open(logOptions(dir, { segmentBytesMax: SEGMENT_BYTES_MAX }));
      for (const [n, batch] of batches.entries()) expect(await log.append(batch)).toBe(n);
      await log.close();
      const name = readdirSync(dir).find((f) => f.endsWith('.log'))!;
      const image = readFileSync(path.join(dir, name));
      const victimAt = batches.slice(0, victim).reduce((sum, b) => sum + b.length, 0);
      image[victimAt + flipAt]! ^= 0x10;
      const error = await openError(name, image);
      expect(
        isOffsetStoreError(error) && error.code === 'CORRUPT_MESSAGE',
        `victim at ${victimAt}: ${String(error)}`,
      ).toBe(true);
    }
  });

  it('opens a round that began in the last 1-4 bytes of a sector which came back as before the round, and refuses the same zeros in a batch with a flipped bit', async () => {
    for (const fromSectorEnd of [1, 2, 3, 4]) {
      // Acknowledged batches ending `fromSectorEnd` bytes before a sector boundary.
      const first = testBatch(0, 3);
      const withMetadata = (chars: number): Buffer =>
        buildOffsetBatch(
          'group-1',
          [
            {
              tableId: 1,
              partitionId: null,
              bucketId: 0,
              offset: 10,
              leaderEpoch: -1,
              metadata: 'p'.repeat(chars),
            },
          ],
          T0,
        );
      let chars = 0;
      while ((first.length + withMetadata(chars).length) % SECTOR !== SECTOR - fromSectorEnd)
        chars++;
      const padded = withMetadata(chars);
      const dir = tempDir();
      const { log } = await Log.open(logOptions(dir, { segmentBytesMax: SEGMENT_BYTES_MAX }));
      expect(await log.append(first)).toBe(0);
      expect(await log.append(padded)).toBe(1);
      const name = readdirSync(dir).find((f) => f.endsWith('.log'))!;
      const segment = readFileSync(path.join(dir, name));
      await log.close();
      const ackedEnd = first.length + padded.length;
      expect(ackedEnd % SECTOR).toBe(SECTOR - fromSectorEnd);
      // The next round, unsynced: its first `fromSectorEnd` bytes lie in the acknowledged batches'
      // last sector, which the power loss brings back as it was (zeros there); the rest was kept.
      const batches = roundBatches(seededRandom(fromSectorEnd), 2);
      const image = Buffer.concat([segment.subarray(0, ackedEnd), ...batches]);
      image.fill(0, ackedEnd, ackedEnd + fromSectorEnd);
      const recovered = await readAll(
        logOptions(logDirWith(name, image), { segmentBytesMax: SEGMENT_BYTES_MAX }),
      );
      expect(
        recovered.batches.map((b) => b.bytes),
        `${fromSectorEnd} byte(s) before the sector's end`,
      ).toEqual([first, padded]);
      expect(recovered.report.tornTail).toBeDefined();
      await recovered.log.close();

      // The same zeros, and a flipped bit inside the batch: not a lost sector.
      const flipped = Buffer.from(image);
      flipped[ackedEnd + 60]! ^= 0x04;
      const error = await openError(name, flipped);
      expect(isOffsetStoreError(error) && error.code === 'CORRUPT_MESSAGE', String(error)).toBe(
        true,
      );
    }
  });

  it('still refuses damage that is not a lost sector (a flipped bit) when valid batches follow, and a hole followed by batches beyond one write round', async () => {
    const random = seededRandom(7);
    const { acked, segment, name, log } = await ackedLog(random, 3);
    await log.close();
    const ackedEnd = acked.reduce((sum, b) => sum + b.length, 0);
    const batches = roundBatches(random, acked.length);
    const image = Buffer.concat([segment.subarray(0, ackedEnd), ...batches]);
    image[ackedEnd + 60]! ^= 0x04; // a flipped bit inside the first batch of the round
    const flipped = await openError(name, image);
    expect(isOffsetStoreError(flipped) && flipped.code === 'CORRUPT_MESSAGE', String(flipped)).toBe(
      true,
    );
    expect((flipped as Error).message).toContain(`at byte ${ackedEnd}`);

    // A lost sector, but batches after it (written before the log recorded syncLags) lie further
    // away than one write round can reach.
    const legacy = batches.map((b, i) => {
      const copy = Buffer.from(b);
      copy.writeInt32LE(-1, 40);
      sealBatch(copy, acked.length + i);
      return copy;
    });
    const holed = Buffer.concat([segment.subarray(0, ackedEnd), ...legacy]);
    holed.fill(0, ackedEnd, (Math.floor(ackedEnd / SECTOR) + 1) * SECTOR); // the rest of the sector the round began in
    const tinyRounds = {
      segmentBytesMax: SEGMENT_BYTES_MAX,
      flushBytesMax: 64,
      batchBytesMax: 1024,
    };
    const far = await Log.open(logOptions(logDirWith(name, holed), tinyRounds)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isOffsetStoreError(far) && far.code === 'CORRUPT_MESSAGE', String(far)).toBe(true);
    // The same image with real limits is a torn round.
    const torn = await readAll(
      logOptions(logDirWith(name, holed), { segmentBytesMax: SEGMENT_BYTES_MAX }),
    );
    expect(torn.batches.map((b) => b.bytes)).toEqual(acked);
    expect(torn.report.tornTail?.reason).toMatch(/write round cut short by a crash/);
    await torn.log.close();
  });

  it('refuses a lost sector in acknowledged batches when a later round follows: its syncLag says they were durable', async () => {
    const random = seededRandom(11);
    const { acked, segment, name, log } = await ackedLog(random, 12);
    await log.close();
    const ackedEnd = acked.reduce((sum, b) => sum + b.length, 0);
    const image = Buffer.concat([
      segment.subarray(0, ackedEnd),
      ...roundBatches(random, acked.length),
    ]);
    const sector = Math.floor(ackedEnd / 2 / SECTOR) * SECTOR;
    image.fill(0, sector, sector + SECTOR);
    const error = await openError(name, image);
    expect(isOffsetStoreError(error) && error.code === 'CORRUPT_MESSAGE', String(error)).toBe(true);
    expect((error as Error).message).toMatch(/was durable/);
  });

  it('refuses a lost sector in the last acknowledged batch when the next round says, by its first batch alone, that it was durable', async () => {
    // The boundary case of the rule above: batch N+1 (syncLag 0) is the only witness that batch N
    // was fdatasynced. Read as a torn tail, the open would drop N and N+1 without a word.
    const dir = tempDir();
    const { log } = await Log.open(logOptions(dir, { segmentBytesMax: SEGMENT_BYTES_MAX }));
    const acked = [testBatch(0, 3), testBatch(1, 40)];
    for (const [n, batch] of acked.entries()) expect(await log.append(batch)).toBe(n);
    const name = readdirSync(dir).find((f) => f.endsWith('.log'))!;
    const segment = readFileSync(path.join(dir, name));
    await log.close();
    const [first, last] = [acked[0]!.length, acked[0]!.length + acked[1]!.length];
    const sector = Math.ceil(first / SECTOR) * SECTOR;
    expect(
      sector + SECTOR,
      'a whole sector inside the last acknowledged batch',
    ).toBeLessThanOrEqual(last);
    const image = Buffer.concat([segment.subarray(0, last), ...roundBatches(seededRandom(3), 2)]);
    image.fill(0, sector, sector + SECTOR);
    const error = await openError(name, image);
    expect(isOffsetStoreError(error) && error.code === 'CORRUPT_MESSAGE', String(error)).toBe(true);
    expect((error as Error).message).toMatch(/was durable/);
  });
});
