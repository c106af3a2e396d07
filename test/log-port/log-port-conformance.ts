/**
 * The conformance suite of LogPort (src/log/log-port.ts): what every log implementation promises
 * the offsets table above it, run against each one (local segments here in local-log.test.ts, the
 * etcd log in test/cluster/). A subject supplies how to open its log, reopen it as a new process
 * would, and, when it has a fencing token, how to take the log over under a newer epoch.
 */
import { describe, expect, it } from 'vitest';
import { readBatchHeader } from '../../src/codec/index.js';
import { isOffsetStoreError } from '../../src/errors/index.js';
import type { LogPort } from '../../src/log/index.js';
import { testBatch } from '../support/log-fixtures.js';
import { buildOffsetBatch } from '../../src/codec/index.js';

/** One implementation under test; each test gets a fresh log from `create`. */
export interface LogPortSubject {
  /** A new, empty log and how to reach it again. */
  create(): Promise<LogPortHandle>;
  /** True when the log carries a fencing token another writer can take over (the fencing tests run only then). */
  fences: boolean;
}

/** One log under test. */
export interface LogPortHandle {
  /** The open log. */
  log: LogPort;
  /** Closes nothing: opens the same log again as a restarted process would (the old one may still be open). */
  reopen(): Promise<LogPort>;
  /** Opens the same log under a newer coordinator epoch, fencing every older writer (subjects that fence). */
  takeOver?: () => Promise<LogPort>;
  /** Releases whatever the handle holds (open logs, directories). */
  cleanup(): Promise<void>;
}

/** Every batch at or above `from`: its log offset, epoch and bytes from the length field on. */
export async function scanAll(
  log: LogPort,
  from = 0,
): Promise<{ logOffset: number; coordinatorEpoch: number; bytes: Buffer }[]> {
  const found: { logOffset: number; coordinatorEpoch: number; bytes: Buffer }[] = [];
  await log.scan(from, (buf, position, logOffset, sizeBytes) => {
    found.push({
      logOffset,
      coordinatorEpoch: readBatchHeader(buf, position).coordinatorEpoch,
      bytes: Buffer.from(buf.subarray(position, position + sizeBytes)),
    });
  });
  return found;
}

/** A batch one metadata string larger than `log` takes. */
function batchOverLimit(log: LogPort): Buffer {
  return buildOffsetBatch(
    'g',
    [
      {
        tableId: 1,
        partitionId: null,
        bucketId: 0,
        offset: 1,
        leaderEpoch: -1,
        metadata: 'x'.repeat(log.batchBytesMax),
      },
    ],
    1_700_000_000_000,
  );
}

/** Runs the suite against `subject`. */
export function describeLogPort(name: string, subject: LogPortSubject): void {
  async function withLog(body: (handle: LogPortHandle) => Promise<void>): Promise<void> {
    const handle = await subject.create();
    try {
      await body(handle);
    } finally {
      await handle.cleanup();
    }
  }

  describe(`LogPort conformance: ${name}`, () => {
    it('gives dense, increasing log offsets from 0, in append order, to concurrent appends', () =>
      withLog(async ({ log }) => {
        expect(log.nextOffset).toBe(0);
        const offsets = await Promise.all(
          Array.from({ length: 20 }, (_, n) => log.append(testBatch(n))),
        );
        expect(offsets).toEqual(Array.from({ length: 20 }, (_, n) => n));
        expect(log.nextOffset).toBe(20);
        expect(log.acknowledgedEnd).toBe(20);
        expect(await log.append(testBatch(20))).toBe(20);
      }));

    it('refuses a batch over its batchBytesMax, which it states, with INVALID_REQUEST, and goes on', () =>
      withLog(async ({ log }) => {
        const over = batchOverLimit(log);
        expect(over.length).toBeGreaterThan(log.batchBytesMax);
        await expect(log.append(over)).rejects.toMatchObject({ code: 'INVALID_REQUEST' });
        expect(await log.append(testBatch(0))).toBe(0);
      }));

    it('resolves appends in log-offset order', () =>
      withLog(async ({ log }) => {
        const order: number[] = [];
        await Promise.all(
          Array.from({ length: 30 }, (_, n) => log.append(testBatch(n)).then((o) => order.push(o))),
        );
        expect(order).toEqual([...order].sort((a, b) => a - b));
      }));

    it('tells an appendEntry caller once, never inside the call, in log order beside promise appends; refusals are thrown', () =>
      withLog(async ({ log }) => {
        const told: string[] = [];
        let inCall = false;
        const settledAll: Promise<void>[] = [];
        const entry = (n: number) => {
          let settle!: () => void;
          settledAll.push(new Promise<void>((resolve) => (settle = resolve)));
          return {
            batch: testBatch(n),
            settled: false,
            resolve(logOffset: number) {
              told.push(`${inCall ? 'IN CALL ' : ''}resolve ${n}@${logOffset}`);
              settle();
            },
            reject(error: unknown) {
              told.push(`reject ${n} ${String(error)}`);
              settle();
            },
          };
        };
        const promised: Promise<number>[] = [];
        for (let n = 0; n < 6; n++) {
          if (n % 2 === 0) {
            inCall = true;
            log.appendEntry(entry(n));
            inCall = false;
          } else promised.push(log.append(testBatch(n)));
        }
        expect(told, 'nothing is told before the batches are durable').toEqual([]);
        expect(await Promise.all(promised)).toEqual([1, 3, 5]);
        await Promise.all(settledAll);
        expect(told).toEqual(['resolve 0@0', 'resolve 2@2', 'resolve 4@4']);
        const over = batchOverLimit(log);
        expect(() => log.appendEntry({ ...entry(9), batch: over })).toThrow(
          expect.objectContaining({ code: 'INVALID_REQUEST' }),
        );
        await log.close();
        expect(() => log.appendEntry(entry(10))).toThrow(
          expect.objectContaining({ code: 'STORE_CLOSED' }),
        );
        expect(told).toHaveLength(3);
      }));

    it("scans from any log offset every acknowledged batch, byte for byte, stamped with its offset and the log's epoch", () =>
      withLog(async ({ log }) => {
        const sent = Array.from({ length: 12 }, (_, n) => testBatch(n, 1 + (n % 4)));
        await Promise.all(sent.map((b) => log.append(b)));
        for (const from of [0, 1, 5, 11, 12]) {
          const found = await scanAll(log, from);
          expect(found.map((f) => f.logOffset)).toEqual(
            Array.from({ length: 12 - from }, (_, i) => from + i),
          );
          for (const f of found) {
            expect(f.bytes.equals(sent[f.logOffset]!), `batch ${f.logOffset}`).toBe(true);
            expect(readBatchHeader(f.bytes).logOffset).toBe(f.logOffset);
            expect(f.coordinatorEpoch).toBe(log.coordinatorEpoch);
          }
        }
      }));

    it('keeps every acknowledged batch for the next opener, who continues at the next log offset', () =>
      withLog(async (handle) => {
        await Promise.all(Array.from({ length: 7 }, (_, n) => handle.log.append(testBatch(n))));
        await handle.log.close();
        const reopened = await handle.reopen();
        expect(reopened.nextOffset).toBe(7);
        expect((await scanAll(reopened)).map((f) => f.logOffset)).toEqual([0, 1, 2, 3, 4, 5, 6]);
        expect(await reopened.append(testBatch(7))).toBe(7);
        await reopened.close();
      }));

    it('truncates below a log offset without losing any batch at or above it, and frees bytes', () =>
      withLog(async ({ log }) => {
        for (let n = 0; n < 40; n++) await log.append(testBatch(n, 20));
        const before = log.sizeBytes;
        await log.truncateBelow(40);
        expect(log.sizeBytes).toBeLessThan(before);
        expect(await scanAll(log, 40)).toEqual([]);
        expect(await log.append(testBatch(40))).toBe(40);
        expect((await scanAll(log, 40)).map((f) => f.logOffset)).toEqual([40]);
        for (let n = 41; n < 50; n++) await log.append(testBatch(n, 20));
        await log.truncateBelow(45);
        expect((await scanAll(log, 45)).map((f) => f.logOffset)).toEqual([45, 46, 47, 48, 49]);
      }));

    it('settles queued appends at close and rejects later ones with STORE_CLOSED; close is idempotent', () =>
      withLog(async ({ log }) => {
        const queued = Array.from({ length: 5 }, (_, n) => log.append(testBatch(n)));
        await log.close();
        expect(await Promise.all(queued)).toEqual([0, 1, 2, 3, 4]);
        await expect(log.append(testBatch(5))).rejects.toSatisfy((e) =>
          isOffsetStoreError(e, 'STORE_CLOSED'),
        );
        await log.close();
      }));

    if (!subject.fences) return;

    it('fences an older writer: its appends reject with NOT_COORDINATOR and never land, and it stays failed', async () => {
      const handle = await subject.create();
      try {
        const old = handle.log;
        await old.append(testBatch(0));
        const successor = await handle.takeOver!();
        expect(successor.coordinatorEpoch).toBeGreaterThan(old.coordinatorEpoch);
        expect(successor.nextOffset).toBe(1);
        const stale = await Promise.allSettled([
          old.append(testBatch(100)),
          old.append(testBatch(101)),
        ]);
        for (const r of stale)
          expect(
            r.status === 'rejected' && isOffsetStoreError(r.reason, 'NOT_COORDINATOR'),
            String((r as PromiseRejectedResult).reason),
          ).toBe(true);
        expect(old.failed).toBe(true);
        await expect(old.append(testBatch(102))).rejects.toSatisfy((e) =>
          isOffsetStoreError(e, 'NOT_COORDINATOR'),
        );
        expect(await successor.append(testBatch(1))).toBe(1);
        const found = await scanAll(successor);
        expect(found.map((f) => [f.logOffset, f.coordinatorEpoch])).toEqual([
          [0, old.coordinatorEpoch],
          [1, successor.coordinatorEpoch],
        ]);
        await successor.close();
      } finally {
        await handle.cleanup();
      }
    });

    it('lets exactly one of eight racing successors under the same epoch win each log offset', async () => {
      const handle = await subject.create();
      try {
        await handle.log.append(testBatch(0));
        const twins = await Promise.all(Array.from({ length: 8 }, () => handle.reopen()));
        const results = await Promise.allSettled(twins.map((t, i) => t.append(testBatch(200 + i))));
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const reader = await handle.reopen();
        expect((await scanAll(reader)).map((f) => f.logOffset)).toEqual([0, 1]);
        for (const loser of twins.filter((_, i) => results[i]!.status === 'rejected'))
          expect(loser.failed).toBe(true);
        for (const t of [...twins, reader]) await t.close();
      } finally {
        await handle.cleanup();
      }
    });
  });
}
