/**
 * The log under SIGKILL: a child appends from several concurrent appenders and reports each
 * acknowledged batch over IPC; it is killed at a random moment, CRASH_ROUNDS times (default 20), and
 * after each kill the log reads back as a gap-free run of log offsets holding every acknowledged batch
 * byte for byte. CRASH_SEED replays a run.
 */
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadChecksum, sealBatch } from '../../src/codec/index.js';
import { forkTs, exited } from '../support/fork-child.js';
import { logOptions, readAll, testBatch } from '../support/log-fixtures.js';
import { seededRandom, seedFrom } from '../support/seeded-random.js';
import { tempDir } from '../support/temp-dir.js';

beforeAll(() => loadChecksum());

const rounds = Number(process.env.CRASH_ROUNDS ?? 20);
const CHILD = path.join(import.meta.dirname, 'log-append-child.ts');

describe('log crash safety', () => {
  it(`keeps every acknowledged batch byte-for-byte across ${rounds} SIGKILLs`, async () => {
    const seed = seedFrom('CRASH_SEED');
    const random = seededRandom(seed);
    const dir = tempDir();
    const acked = new Map<number, number>(); // log offset -> batch number
    let nextBatch = 0;
    for (let round = 0; round < rounds; round++) {
      const child = forkTs(CHILD, [dir, String(nextBatch)]);
      child.on('message', (m: { type: string; n: number; logOffset: number }) => {
        if (m.type === 'ack') acked.set(m.logOffset, m.n);
      });
      await new Promise<void>((resolve) => child.once('message', () => resolve()));
      await new Promise((r) => setTimeout(r, 20 + random() * 200));
      child.kill('SIGKILL');
      await exited(child);
      const context = `seed ${seed} (replay with CRASH_SEED=${seed}), round ${round}`;
      const { batches, log } = await readAll(logOptions(dir, { segmentBytesMax: 8192 }));
      batches.forEach((b, i) =>
        expect(b.logOffset, `${context}: log offsets are a gap-free prefix`).toBe(i),
      );
      const present = new Map(batches.map((b) => [b.logOffset, b.bytes]));
      for (const [logOffset, n] of acked) {
        const expected = testBatch(n, 1 + (n % 5));
        // Every byte as appended; the syncLag is the log's (how many batches before it were not yet durable).
        const syncLag = present.get(logOffset)?.readInt32LE(40) ?? -1;
        expect(
          syncLag >= 0 && syncLag <= logOffset,
          `${context}: syncLag ${syncLag} of batch ${logOffset}`,
        ).toBe(true);
        sealBatch(expected, logOffset, 0, syncLag);
        expect(
          present.get(logOffset)?.equals(expected),
          `${context}: acknowledged batch ${n} at log offset ${logOffset}`,
        ).toBe(true);
      }
      await log.close();
      nextBatch += 1_000_000;
    }
    expect(acked.size).toBeGreaterThan(rounds);
  });
});
