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
      // The member's session expires (300 ms; later on a loaded machine).
      for (
        const deadline = Date.now() + 10_000;
        (await store.describeGroup('members')).members.length > 0 && Date.now() < deadline;
      )
        await new Promise((resolve) => setTimeout(resolve, 20));
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
      // A retention pass runs with the bad clock (every 50 ms; later on a loaded machine).
      for (const deadline = Date.now() + 10_000; warnings.length === 0 && Date.now() < deadline;)
        await new Promise((resolve) => setTimeout(resolve, 10));
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
    // A retention pass runs with the throwing clock (every 20 ms; later on a loaded machine).
    for (const deadline = Date.now() + 10_000; warnings.length === 0 && Date.now() < deadline;)
      await new Promise((resolve) => setTimeout(resolve, 10));
    throwing = false;
    expect(warnings.join('\n')).toMatch(/clock broke/);
    await store.close();
    const reopened = await OffsetStore.open({ dir });
    expect((await reopened.fetchOffsets('g'))[0]!.offset).toBe(1);
    await reopened.close();
  });
});

describe('a clock whose timers cannot be made', () => {
  for (const [what, setTimer] of [
    [
      'throws',
      () => {
        throw new Error('no timers today');
      },
    ],
    ['returns nothing', () => undefined],
  ] as const)
    it(`(setTimer ${what}): the open is refused and leaves the store closed, its lock released`, async () => {
      const dir = tempDir();
      const clock = { nowMs: () => Date.now(), setTimer } as unknown as Clock;
      const refused = await OffsetStore.open({ dir, clock }).then(
        () => 'opened',
        (error: Error) => error.message,
      );
      expect(refused).toMatch(
        what === 'throws' ? /no timers today/ : /setTimer\(\) returned undefined: .*cancel\(\)/,
      );
      const store = await OffsetStore.open({ dir });
      await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
      await store.close();
    });
});

/** Catches process warnings while `body` runs. */
async function processWarnings(body: () => Promise<void>): Promise<string[]> {
  const emitted: string[] = [];
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error) =>
    void emitted.push(String(warning))) as typeof process.emitWarning;
  try {
    await body();
  } finally {
    process.emitWarning = emitWarning;
  }
  return emitted;
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('callbacks that throw or reject', () => {
  it('an async onWarning that rejects: a process warning says so, and no rejection goes unhandled', async () => {
    const dir = tempDir();
    const first = await OffsetStore.open({ dir, bucketCount: 1 });
    await first.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 100 }]);
    await first.close();
    appendFileSync(lastSegment(dir), Buffer.from([0x40, 0, 0, 0, 0xaa, 0xbb])); // a torn batch
    const emitted = await processWarnings(async () => {
      const store = await OffsetStore.open({
        dir,
        onWarning: async () => {
          throw new Error('the warning sink is down');
        },
      });
      expect((await store.fetchOffsets('g'))[0]!.offset).toBe(100);
      await settle(10);
      await store.close();
    });
    expect(emitted.join('\n')).toMatch(
      /options\.onWarning rejected \(the warning sink is down\) on: .*torn/,
    );
  });

  it("a scanner's onAutoCommitError that throws: the store's onWarning hears of it and auto-commit goes on", async () => {
    const warnings: string[] = [];
    const store = await OffsetStore.open({
      dir: tempDir(),
      onWarning: (message) => warnings.push(message),
    });
    store.setTableLayout(1, { bucketCount: 2 });
    const bucket = { tableId: 1, bucketId: 0 };
    const scanner = store.scanner('g', {
      autoCommitIntervalMs: 10,
      onAutoCommitError: () => {
        throw new Error('the error hook broke');
      },
    });
    await scanner.assign([bucket]);
    scanner.advance(bucket, 5);
    // A member in the group: a commit without one is refused from now on.
    const member = await store.joinGroup('g', { subscribedTableIds: [1] });
    await settle(60);
    expect(warnings.join('\n')).toMatch(
      /onAutoCommitError of the scanner of group g threw \(the error hook broke\) on: /,
    );
    await member.leave();
    await settle(40); // the next auto-commit finds the group empty, and commits
    expect((await store.fetchOffsets('g', [bucket]))[0]?.offset).toBe(5);
    await store.close();
  });

  it("a member's onError that throws: the join resolves, the member keeps heartbeating, and the store's close stops it", async () => {
    const dir = tempDir();
    const emitted = await processWarnings(async () => {
      const store = await OffsetStore.open({
        dir,
        group: { heartbeatIntervalMs: 20, sessionTimeoutMs: 1000 },
      });
      store.setTableLayout(1, { bucketCount: 2 });
      const member = await store.joinGroup('G', {
        subscribedTableIds: [1],
        onAssigned: () => {
          throw new Error('onAssigned broke');
        },
        onError: () => {
          throw new Error('onError broke');
        },
      });
      expect(member.assignment).toHaveLength(2);
      await settle(100);
      expect(member.runState).toBe('running');
      expect((await store.describeGroup('G')).members).toHaveLength(1);
      await store.close();
      expect(member.runState).toBe('stopped');
      await settle(100); // no heartbeat after the close, so nothing to fail
    });
    expect(emitted.join('\n')).toMatch(
      /onError of member \S+ of group G threw \(onError broke\) on: onAssigned broke/,
    );
  });
});
