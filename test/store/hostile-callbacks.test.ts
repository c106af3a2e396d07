/**
 * The store against the callbacks and clock a user hands it: an onWarning that throws, a clock that
 * answers what cannot be persisted or throws. Nothing acknowledged is lost, nothing unreadable is
 * written, no background step becomes an unhandled rejection, and what was opened is closed.
 */
import { appendFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OffsetStore, SystemClock, type Clock } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on('unhandledRejection', onUnhandled);
afterEach(() => {
  expect(unhandled.splice(0)).toEqual([]);
});

function lastSegment(dir: string): string {
  const bucket = path.join(dir, 'buckets', readdirSync(path.join(dir, 'buckets'))[0]!);
  return path.join(
    bucket,
    readdirSync(bucket)
      .filter((f) => f.endsWith('.log'))
      .sort()
      .at(-1)!,
  );
}

/** The system clock, answering `value()` instead of the time while it returns something. */
function clockAnswering(value: () => number | undefined): Clock {
  const system = new SystemClock();
  return {
    nowMs: () => value() ?? Date.now(),
    setTimer: (delayMs, callback) => system.setTimer(delayMs, callback),
  };
}

describe('an onWarning that throws', () => {
  it('does not fail the open, nor leave a loaded bucket behind that later writes over the store', async () => {
    const dir = tempDir();
    const group = { sessionTimeoutMs: 300, heartbeatIntervalMs: 100 };
    const first = await OffsetStore.open({ dir, bucketCount: 1, group });
    await first.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 100 }]);
    first.setTableLayout(1, { bucketCount: 2 });
    // A member left in the group's snapshot: its session expires on the next open's timers.
    await first.joinGroup('members', { subscribedTableIds: [1] });
    await first.close();
    appendFileSync(lastSegment(dir), Buffer.from([0x40, 0, 0, 0, 0xaa, 0xbb])); // a torn batch
    const thrown: string[] = [];
    // What the store says of the throw: a process warning (the callback cannot be asked again).
    const emitted: string[] = [];
    const emitWarning = process.emitWarning;
    process.emitWarning = ((warning: string | Error) =>
      void emitted.push(String(warning))) as typeof process.emitWarning;
    try {
      const store = await OffsetStore.open({
        dir,
        group,
        onWarning: (message) => {
          thrown.push(message);
          throw new Error('the service logger is down');
        },
      });
      expect(thrown.join('\n')).toMatch(/torn write/);
      await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 200 }]);
      await new Promise((resolve) => setTimeout(resolve, 600)); // the member's session expires
      await store.close();
    } finally {
      process.emitWarning = emitWarning;
    }
    expect(emitted[0]).toMatch(
      /^options\.onWarning threw \(the service logger is down\) on: offsets-bucket 0: torn write/,
    );
    const reopened = await OffsetStore.open({ dir });
    expect((await reopened.fetchOffsets('g'))[0]!.offset).toBe(200);
    expect((await reopened.describeGroup('members')).members).toEqual([]);
    await reopened.close();
  });
});

describe('a clock', () => {
  it.each([
    ['NaN', NaN],
    ['negative', -5],
    ['past 2^53 (nanoseconds)', 2 ** 53 + 10],
    ['1e20', 1e20],
    ['Infinity', Infinity],
  ])(
    'answering %s: the commit is refused with INVALID_CONFIG naming the value, and the store reopens with what was acknowledged',
    async (_, bad) => {
      const dir = tempDir();
      let broken = false;
      const warnings: string[] = [];
      const store = await OffsetStore.open({
        dir,
        clock: clockAnswering(() => (broken ? bad : undefined)),
        offsetsRetentionCheckIntervalMs: 50,
        onWarning: (message) => warnings.push(message),
      });
      await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
      broken = true;
      await expect(
        store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 2 }]),
      ).rejects.toMatchObject({
        code: 'INVALID_CONFIG',
        message: expect.stringContaining(`clock.nowMs() returned ${bad}`),
      });
      await new Promise((resolve) => setTimeout(resolve, 120)); // retention passes with the bad clock
      broken = false;
      expect(warnings.length).toBeGreaterThan(0);
      expect(
        warnings.every((w) =>
          w.startsWith(`offsets retention: INVALID_CONFIG: options.clock.nowMs() returned ${bad}`),
        ),
      ).toBe(true);
      expect((await store.fetchOffsets('g'))[0]!.offset).toBe(1);
      await store.close();
      const reopened = await OffsetStore.open({ dir });
      expect((await reopened.fetchOffsets('g'))[0]!.offset).toBe(1);
      await reopened.close();
    },
  );

  it('that throws while retention runs: a warning, no unhandled rejection, and close still releases the store', async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    let throwing = false;
    const store = await OffsetStore.open({
      dir,
      clock: clockAnswering(() => {
        if (throwing) throw new Error('clock broke');
        return undefined;
      }),
      offsetsRetentionCheckIntervalMs: 20,
      compaction: { background: false },
      onWarning: (message) => warnings.push(message),
    });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    throwing = true;
    await new Promise((resolve) => setTimeout(resolve, 100));
    throwing = false;
    expect(warnings.join('\n')).toMatch(/clock broke/);
    await store.close();
    const reopened = await OffsetStore.open({ dir });
    expect((await reopened.fetchOffsets('g'))[0]!.offset).toBe(1);
    await reopened.close();
  });
});
