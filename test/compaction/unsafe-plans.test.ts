/**
 * The engine never trusts a strategy: every wrong or unsafe plan (overlapping outputs, a group that
 * is not a run of adjacent segments, the active segment, a deletion no checkpoint covers, a checkpoint
 * from a strategy that does not keep them, a malformed plan or state) is refused with
 * INVALID_COMPACTION_PLAN naming the rule, and not a byte of the bucket changes; the refusal crosses
 * the worker-thread boundary with its code. And whatever a plan asks, the engine alone decides which
 * records survive: a tombstone stays while an older record of its key remains outside the rewrite,
 * and a record nothing supersedes is never dropped. Rewrite outputs that do not chain are refused too.
 */
import { cpSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vm from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import { untilAbandoned, type CompactionJobResult } from '../../src/compaction/compaction-job.js';
import { InProcessRunner } from '../../src/compaction/job-runner.js';
import {
  checkOutputs,
  STATE_BYTES_MAX,
  validatePlan,
} from '../../src/compaction/plan-validation.js';
import {
  OffsetStore,
  type BucketView,
  type LogInspector,
  type SegmentGarbage,
} from '../../src/index.js';
import { CLEANED_SUFFIX, Log, segmentFileName } from '../../src/log/index.js';
import { BACKUP_COMPACTION_WAIT_MS } from '../../src/store.js';
import { tempDir } from '../support/temp-dir.js';
import { compactionOptions, stateOf } from './compaction-fixtures.js';
import {
  STRATEGY_MODULES,
  fillSegments,
  folderSnapshot,
  inProcessOptions,
  scriptedHooks,
} from './strategy-fixtures.js';

type PlanOf = (view: BucketView, inspector: LogInspector) => unknown;

/**
 * Starts `store.compact()` with a plan that never settles and resolves once the strategy was asked
 * for it; `compacting` settles with the compaction's error, or undefined (wrapped: an async
 * function would wait for a promise it returns).
 */
async function compactionStuckInPlan(
  store: OffsetStore,
): Promise<{ compacting: Promise<unknown> }> {
  let planned!: () => void;
  const asked = new Promise<void>((resolve) => (planned = resolve));
  scriptedHooks().plan = () => {
    planned();
    return new Promise(() => {});
  };
  const compacting = store.compact().then(
    () => undefined,
    (error: unknown) => error,
  );
  await asked;
  return { compacting };
}
/**
 * Records the result of every job the in-process runner runs, after `tamper` (a runner whose result
 * is wrong); `restore` puts the runner back.
 */
function jobResults(tamper?: (result: CompactionJobResult) => void): {
  results: CompactionJobResult[];
  restore: () => void;
} {
  const results: CompactionJobResult[] = [];
  const run = InProcessRunner.prototype.run;
  const spy = vi.spyOn(InProcessRunner.prototype, 'run').mockImplementation(async function (
    this: InProcessRunner,
    job,
  ) {
    const result = await run.call(this, job);
    if (result.failure === undefined) tamper?.(result);
    results.push(result);
    return result;
  });
  return { results, restore: () => spy.mockRestore() };
}
const sealed = (view: BucketView) => view.segments.filter((s) => s.sealed).map((s) => s.baseOffset);
const active = (view: BucketView) => view.segments.at(-1)!.baseOffset;

/** A plan, what its refusal says, and the strategy that plans it (default: scripted, which rewrites). */
const unsafe: [string, PlanOf, RegExp, ('scriptedCheckpoints' | 'scriptedPlanner')?][] = [
  [
    'overlapping groups',
    (v) => ({ rewrite: [[sealed(v)[0], sealed(v)[1]], [sealed(v)[1]]] }),
    /overlaps or precedes group 0 .*overlapping outputs/,
  ],
  [
    'a group with a gap (its output would break the chain)',
    (v) => ({ rewrite: [[sealed(v)[0], sealed(v)[2]]] }),
    /not a run of adjacent segments.*break the chain of log offsets/,
  ],
  [
    'groups out of log order',
    (v) => ({ rewrite: [[sealed(v)[2]], [sealed(v)[0]]] }),
    /overlaps or precedes/,
  ],
  [
    'the active segment',
    (v) => ({ rewrite: [[active(v)]] }),
    /the active segment .* is never compacted/,
  ],
  [
    'a segment that does not exist',
    () => ({ rewrite: [[987_654]] }),
    /987654, which is not the base offset of a segment/,
  ],
  [
    'a deletion without checkpoints',
    (v) => ({ deleteBelow: sealed(v)[2] }),
    /would drop records no checkpoint covers/,
  ],
  [
    'a checkpoint from a strategy that does not declare checkpoints',
    () => ({ checkpoint: true }),
    /does not declare checkpoints: true/,
  ],
  [
    'a deletion above the newest checkpoint',
    (v) => ({ deleteBelow: v.logEndOffset }),
    /would drop live records no checkpoint covers \(the newest checkpoint is at none\)/,
    'scriptedCheckpoints',
  ],
  [
    "a deletion below 'checkpoint' when there is none",
    () => ({ deleteBelow: 'checkpoint' }),
    /without a checkpoint: nothing covers the segments/,
    'scriptedCheckpoints',
  ],
  ['an unknown plan field', () => ({ rewrites: [] }), /unknown plan field\(s\) rewrites/],
  ['a plan that is not an object', () => 42, /a plan must be a plain object/],
  [
    'a map start that is not a log offset',
    (v) => ({ rewrite: [[sealed(v)[0]]], mapFrom: -1 }),
    /mapFrom must be a log offset/,
  ],
  [
    'a tombstone bound that is not a log offset',
    (v) => ({ rewrite: [[sealed(v)[0]]], tombstonesBelow: Number.NaN }),
    /tombstonesBelow must be a log offset or Infinity, got NaN/,
  ],
  ['a state that is not JSON', () => ({ state: { n: 1n } }), /state is not JSON/],
  // Values JSON.stringify changes or drops silently: the next run would be shown something else.
  [
    'a state holding NaN',
    () => ({ state: { rates: [1, Number.NaN] } }),
    /state\.rates\[1\] is NaN, which JSON cannot hold/,
  ],
  [
    'a state holding a Date',
    () => ({ state: { at: new Date(0) } }),
    /state\.at is a Date, not a plain object/,
  ],
  ['a state holding a Map', () => ({ state: new Map([[1, 2]]) }), /state is a Map, not a plain/],
  [
    'a state holding undefined',
    () => ({ state: { a: 1, b: undefined } }),
    /state\.b is undefined, which JSON cannot hold/,
  ],
  [
    'a state holding a function',
    () => ({ state: [() => 1] }),
    /state\[0\] is a function, which JSON cannot hold/,
  ],
  [
    'a state over 64 KiB',
    () => ({ state: 'x'.repeat(70_000) }),
    /state is 70002 bytes of JSON, more than 65536/,
  ],
  [
    'a state nested deeper than 64 levels',
    () => {
      let state: unknown[] = [];
      for (let i = 0; i < 65; i++) state = [state];
      return { state };
    },
    /state nests arrays and objects 66 levels deep, more than 64/,
  ],
  [
    'a group that is a hole',
    (v) => ({ rewrite: [[sealed(v)[0]], new Array(1), [sealed(v)[0]]] }),
    /rewrite group 1 names undefined, which is not the base offset/,
  ],
  [
    'a plan whose field throws when read',
    () => ({
      get rewrite() {
        throw new Error('boom from a getter');
      },
    }),
    /reading the plan threw boom from a getter/,
  ],
  [
    'a plan of a strategy without rewrites whose field throws when read',
    () => ({
      get checkpoint() {
        throw new Error('boom from a getter');
      },
    }),
    /reading the plan threw boom from a getter/,
    'scriptedPlanner',
  ],
  [
    'a rewrite from a strategy that declares rewrites: false',
    (v) => ({ rewrite: [[sealed(v)[0]]] }),
    /asks for a rewrite, but the strategy declares rewrites: false/,
    'scriptedPlanner',
  ],
  [
    'a plan that throws',
    () => {
      throw new TypeError('oops');
    },
    /failed while planning for offsets-bucket 0: oops/,
  ],
  [
    'a plan that throws an error with a code of its own',
    () => {
      throw Object.assign(new Error('disk says no'), { code: 'EIO' });
    },
    /failed while planning for offsets-bucket 0: disk says no/,
  ],
  [
    "a query to the inspector whose reading throws the strategy's own error, a code of its own included",
    (_view, inspector) =>
      inspector.segmentGarbage({
        get segments(): number[] {
          throw Object.assign(new Error('my own bug'), { code: 'EIO' });
        },
      }),
    /strategy 'module:scripted' failed while planning for offsets-bucket 0: .*my own bug/,
  ],
  [
    'a plan that throws something whose message cannot be read',
    () => {
      throw Object.defineProperty(new Error(), 'message', {
        get() {
          throw new Error('no');
        },
      });
    },
    /failed while planning for offsets-bucket 0: a value that cannot be described/,
  ],
];

/** A one-bucket store of 1 KiB segments on a strategy module (planned on a worker thread), filled. */
async function filledStoreOn(dir: string, module: string): Promise<OffsetStore> {
  const store = await OffsetStore.open(
    compactionOptions(dir, module as never, { bucketCount: 1, segmentBytesMax: 1024 }),
  );
  await fillSegments(store);
  return store;
}

describe('unsafe plans are refused', () => {
  for (const [what, planOf, message, module = 'scripted'] of unsafe) {
    it(`refuses ${what}, changing nothing`, async () => {
      const dir = tempDir();
      const options = inProcessOptions(dir, STRATEGY_MODULES[module]);
      const store = await OffsetStore.open(options);
      await fillSegments(store);
      const before = folderSnapshot(path.join(dir, 'buckets', '000'));
      const state = await stateOf(store);
      scriptedHooks().plan = planOf;
      const refused = await store.compact().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toMatchObject({
        name: 'OffsetStoreError',
        code: 'INVALID_COMPACTION_PLAN',
        errno: 1006,
        message: expect.stringMatching(message),
      });
      expect((refused as Error).message).toMatch(/offsets-bucket 0/);
      expect(options.warnings.join('\n')).toContain('INVALID_COMPACTION_PLAN');
      expect(folderSnapshot(path.join(dir, 'buckets', '000')), 'not a byte changed').toEqual(
        before,
      );
      await store.commitOffsets('after', [{ tableId: 1, bucketId: 0, offset: 1 }]);
      expect(await stateOf(store)).toEqual(new Map([...state, ['after', new Map([['1::0', 1]])]]));
      await store.close();
    });
  }

  it('refuses overlapping outputs planned on a worker thread, with the same code', async () => {
    const dir = tempDir();
    const store = await filledStoreOn(dir, STRATEGY_MODULES.overlapping);
    const before = folderSnapshot(path.join(dir, 'buckets', '000'));
    await expect(store.compact()).rejects.toMatchObject({
      code: 'INVALID_COMPACTION_PLAN',
      message: expect.stringMatching(/strategy 'module:overlapping'.*overlapping outputs/),
    });
    expect(folderSnapshot(path.join(dir, 'buckets', '000'))).toEqual(before);
    await store.close();
  });

  it('refuses a state nested too deep for the main thread to copy back from a worker, rather than never settling', async () => {
    const dir = tempDir();
    const store = await filledStoreOn(dir, STRATEGY_MODULES.deepState);
    const before = folderSnapshot(path.join(dir, 'buckets', '000'));
    await expect(store.compact()).rejects.toMatchObject({
      code: 'INVALID_COMPACTION_PLAN',
      message: expect.stringMatching(
        /state nests arrays and objects 5001 levels deep, more than 64/,
      ),
    });
    expect(folderSnapshot(path.join(dir, 'buckets', '000'))).toEqual(before);
    await store.close();
  });

  it('a worker thread that dies fails the compaction with LOG_STORAGE_ERROR naming the bucket, and changes nothing', async () => {
    const dir = tempDir();
    const store = await filledStoreOn(dir, STRATEGY_MODULES.exitingWorker);
    const state = await stateOf(store);
    const before = folderSnapshot(path.join(dir, 'buckets', '000'));
    await expect(store.compact()).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(
        /compacting offsets-bucket 0 failed.*exit.*a strategy that calls process\.exit/,
      ),
    });
    expect(folderSnapshot(path.join(dir, 'buckets', '000'))).toEqual(before);
    await store.commitOffsets('after', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    expect(await stateOf(store)).toEqual(new Map([...state, ['after', new Map([['1::0', 1]])]]));
    await store.close();
  });

  it("a strategy's error that nothing catches on the worker thread (a timer that throws) fails the compaction saying so, naming the strategy, and changes nothing", async () => {
    const dir = tempDir();
    const store = await filledStoreOn(dir, STRATEGY_MODULES.lateThrow);
    const state = await stateOf(store);
    const before = folderSnapshot(path.join(dir, 'buckets', '000'));
    await expect(store.compact()).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringMatching(
        /^LOG_STORAGE_ERROR: compacting offsets-bucket 0 failed \(what it had not finished changed nothing\): the worker thread running the job ended on an error nothing caught \(a strategy's code throwing from a timer, or leaving a promise rejected\): late boom from a timer \(strategy 'module:late-throw'\)$/,
      ),
    });
    expect(folderSnapshot(path.join(dir, 'buckets', '000'))).toEqual(before);
    expect(await stateOf(store)).toEqual(state);
    await store.close();
  });

  it('runs a job queued behind one whose worker thread died: compact() settles, and compaction goes on', async () => {
    const dir = tempDir();
    const runs: string[] = [];
    const store = await OffsetStore.open(
      compactionOptions(dir, STRATEGY_MODULES.dyingSlowly as never, {
        segmentBytesMax: 1024,
        compaction: {
          strategy: STRATEGY_MODULES.dyingSlowly,
          workers: 1,
          workerNice: 0,
          intervalMs: 50,
          onRun: (event) =>
            runs.push(
              event.kind === 'finished'
                ? `finished ${event.report.bucket}`
                : `${event.kind} ${event.bucket}${event.background ? ' background' : ''}`,
            ),
        },
      }),
    );
    try {
      await fillSegments(store, 120);
      for (const deadline = Date.now() + 10_000; !runs.includes('started 1 background');) {
        if (Date.now() > deadline) throw new Error(`no background run of bucket 1: ${runs}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      // Bucket 1's background job holds the only worker; compact()'s job of bucket 0 waits for it,
      // and the worker dies under it.
      const compacting = store.compact().then(
        () => undefined,
        (error: unknown) => error,
      );
      const outcome = await Promise.race([
        compacting,
        new Promise((resolve) => setTimeout(() => resolve('still waiting after 10 s'), 10_000)),
      ]);
      expect(outcome).toMatchObject({ code: 'LOG_STORAGE_ERROR' });
      expect(runs).toContain('failed 0');
      await store.commitOffsets('after', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    } finally {
      await store.close();
    }
  });

  it('stops a run still going after compaction.runTimeoutMs (its worker thread terminated) with REQUEST_TIMED_OUT, changing nothing; the other buckets are compacted', async () => {
    const dir = tempDir();
    const finished: number[] = [];
    const store = await OffsetStore.open(
      compactionOptions(dir, STRATEGY_MODULES.loopingWorker as never, {
        segmentBytesMax: 1024,
        compaction: {
          strategy: STRATEGY_MODULES.loopingWorker,
          workers: 1,
          workerNice: 0,
          background: false,
          // Long enough for a worker thread to start on a busy machine (a run's time includes it).
          runTimeoutMs: 2000,
          onRun: (event) => {
            if (event.kind === 'finished') finished.push(event.report.bucket);
          },
        },
      }),
    );
    try {
      await fillSegments(store, 120);
      const state = await stateOf(store);
      const before = folderSnapshot(path.join(dir, 'buckets', '000'));
      const startedMs = performance.now();
      await expect(store.compact()).rejects.toMatchObject({
        code: 'REQUEST_TIMED_OUT',
        message: expect.stringMatching(
          /compacting offsets-bucket 0 took longer than compaction\.runTimeoutMs \(2000 ms\): it was stopped and nothing was changed \(strategy 'module:looping-worker'/,
        ),
      });
      expect(performance.now() - startedMs).toBeLessThan(15_000);
      expect(finished, 'bucket 1 ran after bucket 0 gave its worker up').toEqual([1]);
      expect(folderSnapshot(path.join(dir, 'buckets', '000'))).toEqual(before);
      await store.commitOffsets('after', [{ tableId: 1, bucketId: 0, offset: 1 }]);
      state.set('after', new Map([['1::0', 1]]));
      expect(await stateOf(store)).toEqual(state);
    } finally {
      await store.close();
    }
  });

  it("deletes, at the log's next compaction, the .cleaned outputs a job stopped by runTimeoutMs left behind (they stayed until the next open)", async () => {
    const dir = tempDir();
    const options = inProcessOptions(dir, STRATEGY_MODULES.scripted, {
      compaction: { strategy: STRATEGY_MODULES.scripted, background: false, runTimeoutMs: 300 },
    });
    const store = await OffsetStore.open(options);
    try {
      await fillSegments(store);
      const state = await stateOf(store);
      const hooks = scriptedHooks();
      hooks.plan = () => new Promise(() => {}); // never settles: stopped by the timeout
      await expect(store.compact()).rejects.toMatchObject({ code: 'REQUEST_TIMED_OUT' });
      // What a worker thread terminated in the middle of its rewrite leaves: outputs written under
      // their temporary names, never swapped in (one named past any segment this log will have).
      const bucketDir = path.join(dir, 'buckets', '000');
      const stray = path.join(bucketDir, `${segmentFileName(999_999)}${CLEANED_SUFFIX}`);
      writeFileSync(stray, 'the first part of a rewrite');
      const cleaned = () => readdirSync(bucketDir).filter((n) => n.endsWith(CLEANED_SUFFIX));
      expect(cleaned()).toHaveLength(1);
      hooks.plan = (view) => ({ rewrite: [sealed(view as BucketView)] });
      const compacted = await store.compact();
      expect(compacted.buckets[0]!.segmentsRewritten).toBeGreaterThan(1);
      expect(cleaned()).toEqual([]);
      expect(await stateOf(store)).toEqual(state);
    } finally {
      await store.close();
    }
  });

  it('reads a plan once: a group whose element reads differently later is rewritten as it was validated, losing nothing', async () => {
    const dir = tempDir();
    const options = inProcessOptions(dir, STRATEGY_MODULES.scripted);
    const store = await OffsetStore.open(options);
    await fillSegments(store);
    const state = await stateOf(store);
    let reads = 0;
    scriptedHooks().plan = (view) => {
      const [a, b, c] = sealed(view);
      const group = [a, 0, c];
      // The second read (once the first passed validation) names a segment twice and drops b.
      Object.defineProperty(group, 1, { enumerable: true, get: () => (++reads === 2 ? a : b) });
      return { rewrite: [group] };
    };
    const compacted = await store.compact();
    expect(compacted.buckets[0]!.segmentsRewritten).toBe(3);
    expect(reads).toBe(1);
    expect(await stateOf(store)).toEqual(state);
    await store.close();
    const reopened = await OffsetStore.open(options);
    expect(await stateOf(reopened)).toEqual(state);
    await reopened.close();
  });

  it("keeps tombstones as the store's recorded strategy says: a module that declares other checkpoints on a worker thread is refused there", async () => {
    const dir = tempDir();
    const store = await filledStoreOn(dir, STRATEGY_MODULES.twoFaced);
    await store.deleteOffsets('group-1', [{ tableId: 2, bucketId: 1 }]);
    const state = await stateOf(store);
    const before = folderSnapshot(path.join(dir, 'buckets', '000'));
    await expect(store.compact()).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(
        /loaded for offsets-bucket 0 is 'module:two-faced', not the store's 'module:two-faced\+checkpoints'/,
      ),
    });
    expect(folderSnapshot(path.join(dir, 'buckets', '000'))).toEqual(before);
    expect(await stateOf(store)).toEqual(state);
    await store.close();
  });

  for (const [where, module] of [
    ['on the compaction runner', STRATEGY_MODULES.scripted],
    ['on the main thread (rewrites: false)', STRATEGY_MODULES.scriptedPlanner],
  ] as const) {
    it(`lets the store close while a plan never settles ${where}: the compaction is abandoned, writing nothing`, async () => {
      const dir = tempDir();
      const options = inProcessOptions(dir, module);
      const store = await OffsetStore.open(options);
      await fillSegments(store);
      const state = await stateOf(store);
      const segments = () => Object.keys(folderSnapshot(path.join(dir, 'buckets', '000')));
      const before = segments();
      const { compacting } = await compactionStuckInPlan(store);
      await store.close();
      expect(await compacting).toMatchObject({ code: 'STORE_CLOSED' });
      expect(segments(), 'no segment rewritten, no output left').toEqual(before);
      scriptedHooks().plan = () => null;
      const reopened = await OffsetStore.open(options);
      expect(await stateOf(reopened)).toEqual(state);
      await reopened.close();
    });

    it(`gives up a plan that never settles ${where} after compaction.runTimeoutMs, changing nothing; the next run goes on`, async () => {
      const dir = tempDir();
      const options = inProcessOptions(dir, module);
      const store = await OffsetStore.open({
        ...options,
        compaction: { ...options.compaction, runTimeoutMs: 200 },
      });
      try {
        await fillSegments(store);
        const state = await stateOf(store);
        const before = folderSnapshot(path.join(dir, 'buckets', '000'));
        const { compacting } = await compactionStuckInPlan(store);
        expect(await compacting).toMatchObject({
          code: 'REQUEST_TIMED_OUT',
          message: expect.stringMatching(/took longer than compaction\.runTimeoutMs \(200 ms\)/),
        });
        expect(folderSnapshot(path.join(dir, 'buckets', '000'))).toEqual(before);
        scriptedHooks().plan = () => null;
        await store.compact();
        expect(await stateOf(store)).toEqual(state);
      } finally {
        await store.close();
      }
    });

    it(`lets a backup go on while a plan never settles ${where}, once it has waited BACKUP_COMPACTION_WAIT_MS`, async () => {
      const dir = tempDir();
      const options = inProcessOptions(dir, module);
      const store = await OffsetStore.open(options);
      try {
        await fillSegments(store);
        const state = await stateOf(store);
        const { compacting } = await compactionStuckInPlan(store);
        let done = false;
        const to = path.join(tempDir(), 'backup');
        const backedUp = store.backup(to).finally(() => (done = true));
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(done, 'waits for the run in flight first').toBe(false);
        scriptedHooks().plan = () => null;
        options.clock.advance(BACKUP_COMPACTION_WAIT_MS);
        await Promise.race([
          backedUp,
          new Promise((_, reject) =>
            setTimeout(() => reject(new Error('the backup still waits for the plan')), 3000),
          ),
        ]);
        // The compaction asked for before the backup runs again afterwards, on a new compactor.
        expect(await compacting).toBeUndefined();
        const copy = await OffsetStore.open({ ...inProcessOptions(to, module), fs: undefined });
        expect(await stateOf(copy)).toEqual(state);
        await copy.close();
      } finally {
        scriptedHooks().plan = () => null;
        await store.close();
      }
    });
  }

  it('lets a plan that rejects once the store closed, having started as it began to close, settle unheard: no unhandled rejection ends the process', async () => {
    // The store began to close while the job loaded its strategy: the plan starts, already
    // abandoned, and its inspector rejects with STORE_CLOSED (its strategy lets that through).
    const closing = new AbortController();
    closing.abort();
    let rejectPlan!: (error: Error) => void;
    const plan = new Promise((_resolve, reject) => (rejectPlan = reject));
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      await expect(untilAbandoned(plan, closing.signal)).rejects.toBeDefined();
      rejectPlan(new Error('STORE_CLOSED: the store is closing: nothing more is read'));
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', listener);
    }
  });

  it('refuses a plan on the main thread (rewrites: false) that calls the inspector, awaited or not, and keeps running', async () => {
    const dir = tempDir();
    const options = inProcessOptions(dir, STRATEGY_MODULES.scriptedPlanner);
    const store = await OffsetStore.open(options);
    try {
      await fillSegments(store);
      const before = folderSnapshot(path.join(dir, 'buckets', '000'));
      const inspecting: PlanOf[] = [
        (_view, inspector) => {
          void inspector.segmentGarbage();
          return null;
        },
        async (_view, inspector) => {
          await inspector.segmentGarbage().catch(() => []);
          return null;
        },
      ];
      for (const plan of inspecting) {
        scriptedHooks().plan = plan;
        await expect(store.compact()).rejects.toMatchObject({
          code: 'INVALID_COMPACTION_PLAN',
          message: expect.stringMatching(
            /strategy 'module:scripted-planner' .*offsets-bucket 0.*declares rewrites: false.*cannot read the log/,
          ),
        });
        // A rejection the plan let go would reach the process a turn later.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(folderSnapshot(path.join(dir, 'buckets', '000'))).toEqual(before);
      expect(options.warnings).toHaveLength(2);
    } finally {
      scriptedHooks().plan = () => null;
      await store.close();
    }
  });

  it('checks a plan against the view as it was shown, not as the strategy edited it: refused before anything is rewritten', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(
      inProcessOptions(dir, STRATEGY_MODULES.scriptedCheckpoints),
    );
    const jobs = jobResults();
    try {
      await fillSegments(store);
      const before = folderSnapshot(path.join(dir, 'buckets', '000'));
      scriptedHooks().plan = (view) => {
        view.checkpoint = { logOffset: 1e9, liveOffsets: 0, createdAtMs: 0 };
        return { rewrite: [sealed(view).slice(0, 3)], deleteBelow: sealed(view)[2] };
      };
      await expect(store.compact()).rejects.toMatchObject({
        code: 'INVALID_COMPACTION_PLAN',
        message: expect.stringMatching(/would drop live records no checkpoint covers/),
      });
      expect(jobs.results, 'the job refused it: nothing was rewritten').toMatchObject([
        { plan: null, outputs: [], failure: { code: 'INVALID_COMPACTION_PLAN' } },
      ]);
      expect(folderSnapshot(path.join(dir, 'buckets', '000'))).toEqual(before);
    } finally {
      jobs.restore();
      scriptedHooks().plan = () => null;
      await store.close();
    }
  });

  it('deletes the outputs of a job whose result the main thread refuses: nothing is left behind', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.scripted));
    // A job that came back with an output ending before its group's last batch.
    const jobs = jobResults((result) => {
      const last = result.outputs[0]!.at(-1)!;
      last.lastLogOffset -= 1;
    });
    try {
      await fillSegments(store);
      const state = await stateOf(store);
      const before = folderSnapshot(path.join(dir, 'buckets', '000'));
      scriptedHooks().plan = (view) => ({ rewrite: [sealed(view).slice(0, 3)] });
      await expect(store.compact()).rejects.toMatchObject({
        code: 'INVALID_COMPACTION_PLAN',
        message: expect.stringMatching(/offsets-bucket 0/),
      });
      expect(jobs.results[0]!.outputs.flat().length, 'the job wrote outputs').toBeGreaterThan(0);
      expect(folderSnapshot(path.join(dir, 'buckets', '000')), 'no .cleaned file left').toEqual(
        before,
      );
      expect(await stateOf(store)).toEqual(state);
    } finally {
      jobs.restore();
      scriptedHooks().plan = () => null;
      await store.close();
    }
  });

  it('checks the plan a job brings back again on the main thread: one changed after the job checked it is refused, its outputs deleted', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.scripted));
    // What the job thread checked, changed on its way back: a state past STATE_BYTES_MAX.
    const jobs = jobResults((result) => {
      result.plan!.state = { value: 'x'.repeat(STATE_BYTES_MAX) };
    });
    try {
      await fillSegments(store);
      const state = await stateOf(store);
      const before = folderSnapshot(path.join(dir, 'buckets', '000'));
      scriptedHooks().plan = (view) => ({ rewrite: [sealed(view).slice(0, 3)], state: 1 });
      await expect(store.compact()).rejects.toMatchObject({
        code: 'INVALID_COMPACTION_PLAN',
        message: expect.stringMatching(/state is \d+ bytes of JSON, more than 65536/),
      });
      expect(jobs.results[0]!.outputs.flat().length, 'the job wrote outputs').toBeGreaterThan(0);
      expect(
        folderSnapshot(path.join(dir, 'buckets', '000')),
        'nothing swapped in or left',
      ).toEqual(before);
      expect(await stateOf(store)).toEqual(state);
    } finally {
      jobs.restore();
      scriptedHooks().plan = () => null;
      await store.close();
    }
  });

  it("refuses rewrite outputs that do not chain from their group's first base offset to its last batch", () => {
    const author = { strategy: 'x', checkpoints: false, rewrites: true };
    const view = { bucket: 3 } as BucketView;
    const group = { bases: [100, 120], lastLogOffset: 139 };
    const output = (baseOffset: number, lastLogOffset: number, name = baseOffset) => ({
      baseOffset,
      lastLogOffset,
      sizeBytes: 10,
      tempPath: `/d/${String(name).padStart(20, '0')}.log.cleaned`,
    });
    expect(() =>
      checkOutputs('/d', [group], [[output(100, 110), output(111, 139)]], author, view),
    ).not.toThrow();
    const cases: [unknown[], RegExp][] = [
      [[output(101, 139)], /starts at 101, not 100/],
      [[output(100, 110), output(115, 139)], /starts at 115, not 111/],
      [[output(100, 130)], /end at log offset 130, not at its last batch 139/],
      [[], /end at log offset none/],
      [[output(100, 139, 7)], /is not written as 00000000000000000100\.log\.cleaned in \/d/],
      [[{ ...output(100, 139), sizeBytes: 0 }], /holds no batch/],
    ];
    for (const [outputs, message] of cases) {
      expect(() => checkOutputs('/d', [group], [outputs as never], author, view)).toThrow(message);
    }
    expect(() => checkOutputs('/d', [group], [], author, view)).toThrow(
      /outputs for 0 group\(s\), not 1/,
    );
  });

  it('deletes no further than the newest checkpoint covers: up to its log offset, or the log end when the plan writes one', () => {
    const author = { strategy: 'x', checkpoints: true, rewrites: true };
    const view = {
      bucket: 3,
      logEndOffset: 90,
      checkpoint: { logOffset: 40, liveOffsets: 1, createdAtMs: 0 },
    } as BucketView;
    expect(validatePlan({ deleteBelow: 40 }, view, author)?.deleteBelow).toBe(40);
    expect(() => validatePlan({ deleteBelow: 41 }, view, author)).toThrow(
      /below log offset 41 would drop live records no checkpoint covers \(the newest checkpoint is at 40\)/,
    );
    expect(validatePlan({ checkpoint: true, deleteBelow: 90 }, view, author)?.deleteBelow).toBe(90);
    expect(() => validatePlan({ checkpoint: true, deleteBelow: 91 }, view, author)).toThrow(
      /below log offset 91 would drop live records .*possible checkpoint is at the log end 90/,
    );
  });

  it('reads the length of the rewrite and of each group once: a Proxy that reads otherwise later is refused as it first read', () => {
    const view = {
      bucket: 3,
      segments: [0, 10, 20, 30].map((baseOffset, i) => ({
        baseOffset,
        lastLogOffset: baseOffset + 9,
        sizeBytes: 100,
        sealed: i < 3,
      })),
    } as BucketView;
    const author = { strategy: 'x', checkpoints: false, rewrites: true };
    /** An array whose length reads as `lengths` gives them, then as its last. */
    const shifting = <T>(items: T[], lengths: number[]): T[] =>
      new Proxy(items, {
        get: (target, key, receiver) =>
          key === 'length'
            ? lengths.length > 1
              ? lengths.shift()
              : lengths[0]
            : Reflect.get(target, key, receiver),
      });
    // Non-empty when checked, then empty: an empty group would leave the next one unchecked against group 0.
    expect(() =>
      validatePlan({ rewrite: [[0, 10], shifting([10], [1, 0]), [0]] }, view, author),
    ).toThrow(/rewrite group 1 overlaps or precedes group 0/);
    expect(() => validatePlan({ rewrite: [shifting([0], [-1])] }, view, author)).toThrow(
      /rewrite group 0 must be a non-empty array/,
    );
    // No groups when checked, one later: nothing is rewritten for a strategy that declares rewrites: false.
    expect(
      validatePlan({ rewrite: shifting([[0]], [0, 1]) }, view, { ...author, rewrites: false })
        ?.groups,
    ).toEqual([]);
  });

  it('keeps a state only as JSON keeps it: what JSON would drop or change, or what reads otherwise when read again, is refused, naming where', () => {
    const author = { strategy: 'x', checkpoints: false, rewrites: true };
    const view = { bucket: 3 } as BucketView;
    const arrayWithField = Object.assign([1, 2], { cursor: 17 });
    const hidden = Object.defineProperty({ a: 1 }, 'cursor', { value: 17, enumerable: false });
    let reads = 0;
    const unstable = {
      get rate() {
        return reads++ === 0 ? Number.NaN : 0.5;
      },
    };
    const cases: [unknown, RegExp][] = [
      [{ list: arrayWithField }, /state\.list has a property cursor besides its elements/],
      [hidden, /state\.cursor is not enumerable, which JSON drops/],
      [{ x: -0 }, /state\.x is -0, which JSON keeps as 0/],
      [unstable, /state\.rate read otherwise than when it was turned into JSON/],
    ];
    for (const [state, message] of cases)
      expect(() => validatePlan({ state }, view, author), String(message)).toThrow(message);
    // Plain data from another realm (built by vm), null-prototype objects and -0's absence are kept.
    const foreign = vm.runInNewContext('({ a: [1, { b: null }], c: "d" })') as unknown;
    expect(validatePlan({ state: foreign }, view, author)?.state?.value).toEqual({
      a: [1, { b: null }],
      c: 'd',
    });
    const bare = Object.assign(Object.create(null) as object, { n: 0 });
    expect(validatePlan({ state: [bare] }, view, author)?.state?.value).toEqual([{ n: 0 }]);
  });
});

describe('the engine decides which records survive', () => {
  it('keeps a tombstone while an older record of its key remains in a segment the plan does not rewrite', async () => {
    const dir = tempDir();
    const { options, store } = await victimDeleted(dir, 0);
    options.clock.advance(1000);
    const hooks = scriptedHooks();
    let tombstoneSegment = -1;
    hooks.plan = async (view: BucketView, inspector) => {
      const garbage = await inspector.segmentGarbage({ mapFrom: 0 });
      tombstoneSegment = garbage.find((g) => g.expiredTombstones > 0)!.baseOffset;
      // Only the tombstone's segment, with its own key map: the old value stays in the first segment.
      return { rewrite: [[tombstoneSegment]], mapFrom: tombstoneSegment };
    };
    await store.compact();
    expect(tombstoneSegment).toBeGreaterThan(sealedOf(hooks.views.at(-1)!)[0]!);
    await store.close();
    const reopened = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.scripted));
    expect(
      await reopened.fetchOffsets('victim', [{ tableId: 1, bucketId: 0 }]),
      'the deleted offset does not come back',
    ).toEqual([null]);
    // Rewriting the whole sealed log with a full key map drops the old value and then the tombstone.
    hooks.plan = (view: BucketView) => ({ rewrite: [sealedOf(view)], mapFrom: 0 });
    const report = await reopened.compact();
    expect(report.recordsDropped).toBeGreaterThan(0);
    expect(await reopened.fetchOffsets('victim', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
    await reopened.close();
  });

  it('keeps a tombstone whose older record the group keeps, when the key map starts past the tombstone', async () => {
    const dir = tempDir();
    const { options, store } = await victimDeleted(dir, 0);
    options.clock.advance(1000);
    const hooks = scriptedHooks();
    let planned: { group: number[]; mapFrom: number } | undefined;
    hooks.plan = async (view: BucketView, inspector) => {
      const garbage = await inspector.segmentGarbage({ mapFrom: 0 });
      const tombstoneSegment = garbage.find((g) => g.expiredTombstones > 0)!.baseOffset;
      const sealed = sealedOf(view);
      // One group from the old value's segment through the tombstone's, its key map starting at
      // the next segment: the map does not see the tombstone, so the old value is not superseded.
      const group = sealed.filter((base) => base <= tombstoneSegment);
      const mapFrom = sealed.find((base) => base > tombstoneSegment)!;
      planned = { group, mapFrom };
      return { rewrite: [group], mapFrom };
    };
    await store.compact();
    expect(planned!.group.length).toBeGreaterThan(1);
    expect(planned!.group[0]).toBe(sealedOf(hooks.views.at(-1)!)[0]);
    await store.close();
    await expectVictimStaysDeleted(dir);
  });

  it('drops a tombstone once deleteRetentionMs has passed since its commit, not a millisecond before', async () => {
    const dir = tempDir();
    const { options, store } = await victimDeleted(dir, 1000);
    scriptedHooks().plan = (view: BucketView) => ({ rewrite: [sealedOf(view)], mapFrom: 0 });
    // Exactly deleteRetentionMs after the delete: everything superseded goes, the tombstone stays.
    options.clock.advance(1000);
    const first = await store.compact();
    expect(first.recordsDropped).toBeGreaterThan(1);
    // A millisecond later the tombstone is all that the same rewrite drops.
    options.clock.advance(1);
    expect((await store.compact()).recordsDropped).toBe(1);
    expect(await store.fetchOffsets('victim', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
    await store.close();
  });

  it('keeps a tombstone whose older record is in the same segment, the last of the group, when the key map starts past both', async () => {
    const dir = tempDir();
    const options = inProcessOptions(dir, STRATEGY_MODULES.scripted, {
      compaction: { strategy: STRATEGY_MODULES.scripted, background: false, deleteRetentionMs: 0 },
    });
    const store = await OffsetStore.open(options);
    // The value and its tombstone are the log's first two batches: both in its first segment.
    await store.commitOffsets('victim', [{ tableId: 1, bucketId: 0, offset: 42 }]);
    await store.deleteOffsets('victim', [{ tableId: 1, bucketId: 0 }]);
    await fillSegments(store, 20);
    options.clock.advance(1000);
    let planned: { group: number[]; mapFrom: number } | undefined;
    scriptedHooks().plan = (view: BucketView) => {
      const [first, second] = sealedOf(view);
      planned = { group: [first!], mapFrom: second! };
      return { rewrite: [planned.group], mapFrom: planned.mapFrom };
    };
    await store.compact();
    expect(planned!.group).toEqual([0]);
    await store.close();
    await expectVictimStaysDeleted(dir);
  });

  it('keeps a tombstone at or above tombstonesBelow, and drops it once the bound passes it', async () => {
    const dir = tempDir();
    const options = inProcessOptions(dir, STRATEGY_MODULES.scripted, {
      compaction: { strategy: STRATEGY_MODULES.scripted, background: false, deleteRetentionMs: 0 },
    });
    const store = await OffsetStore.open(options);
    const hooks = scriptedHooks();
    try {
      await store.commitOffsets('victim', [{ tableId: 1, bucketId: 0, offset: 42 }]);
      await fillSegments(store, 20);
      // The tombstone's batch is the next one appended.
      let tombstoneAt = -1;
      hooks.plan = (view: BucketView) => {
        tombstoneAt = view.logEndOffset;
        return null;
      };
      await store.compact();
      await store.deleteOffsets('victim', [{ tableId: 1, bucketId: 0 }]);
      await fillSegments(store, 20);
      options.clock.advance(1000);
      const garbage: SegmentGarbage[][] = [];
      const rewriteBelow = (bound: number) => async (view: BucketView, inspector: LogInspector) => {
        garbage.push(await inspector.segmentGarbage({ mapFrom: 0, tombstonesBelow: bound }));
        return { rewrite: [sealedOf(view)], mapFrom: 0, tombstonesBelow: bound };
      };
      const expired = (g: SegmentGarbage[]) => g.reduce((n, s) => n + s.expiredTombstones, 0);
      // At the tombstone's own log offset: everything superseded goes, the tombstone stays.
      hooks.plan = rewriteBelow(tombstoneAt);
      expect((await store.compact()).recordsDropped).toBeGreaterThan(1);
      expect(expired(garbage[0]!)).toBe(0);
      // One past it, the tombstone is all that the same rewrite drops.
      hooks.plan = rewriteBelow(tombstoneAt + 1);
      expect((await store.compact()).recordsDropped).toBe(1);
      expect(expired(garbage[1]!)).toBe(1);
      expect(await store.fetchOffsets('victim', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
    } finally {
      await store.close();
    }
  });

  it('drops an expired tombstone below the key map once nothing older of its key is left', async () => {
    const dir = tempDir();
    const { options, store } = await victimDeleted(dir, 1000);
    const hooks = scriptedHooks();
    try {
      // A whole-log rewrite while the tombstone is young: the old value goes, the tombstone stays.
      hooks.plan = (view: BucketView) => ({ rewrite: [sealedOf(view)], mapFrom: 0 });
      await store.compact();
      await fillSegments(store, 20);
      options.clock.advance(1001);
      // Then only the tombstone's segment, its key map starting after it.
      const tombstones: number[] = [];
      hooks.plan = async (view: BucketView, inspector: LogInspector) => {
        const garbage = await inspector.segmentGarbage({ mapFrom: 0 });
        tombstones.push(garbage.reduce((n, g) => n + g.tombstones, 0));
        const tombstoneSegment = garbage.find((g) => g.tombstones > 0)?.baseOffset;
        if (tombstoneSegment === undefined) return null;
        const mapFrom = sealedOf(view).find((base) => base > tombstoneSegment)!;
        return { rewrite: [[tombstoneSegment]], mapFrom };
      };
      await store.compact();
      await store.compact();
      expect(tombstones, 'the tombstone is dropped by the first of the two').toEqual([1, 0]);
      expect(await store.fetchOffsets('victim', [{ tableId: 1, bucketId: 0 }])).toEqual([null]);
    } finally {
      await store.close();
    }
  });

  it('keeps every tombstone of a strategy that keeps checkpoints: the checkpoint below it still holds the key', async () => {
    const dir = tempDir();
    const options = inProcessOptions(dir, STRATEGY_MODULES.scriptedCheckpoints, {
      compaction: {
        strategy: STRATEGY_MODULES.scriptedCheckpoints,
        background: false,
        deleteRetentionMs: 0,
      },
    });
    const store = await OffsetStore.open(options);
    const hooks = scriptedHooks();
    const crashed = tempDir();
    try {
      await store.commitOffsets('victim', [{ tableId: 1, bucketId: 0, offset: 42 }]);
      await fillSegments(store, 20);
      // A checkpoint holding the offset; the segments it covers go.
      hooks.plan = () => ({ checkpoint: true, deleteBelow: 'checkpoint' });
      await store.compact();
      await store.deleteOffsets('victim', [{ tableId: 1, bucketId: 0 }]);
      await fillSegments(store, 20);
      options.clock.advance(1000);
      // The tombstone is old enough, and no older record of its key is left in the log.
      hooks.plan = (view: BucketView) => ({ rewrite: [sealedOf(view)] });
      const report = await store.compact();
      expect(report.buckets[0]!.segmentsRewritten).toBeGreaterThan(0);
      // A crash image: a clean close would write a newer checkpoint, without the offset.
      cpSync(dir, crashed, { recursive: true });
    } finally {
      hooks.plan = () => null;
      await store.close();
    }
    // The checkpoint below the tombstone still holds the key.
    await expectVictimStaysDeleted(crashed, STRATEGY_MODULES.scriptedCheckpoints);
  });

  it('swaps groups in log order: a failure between two swaps never leaves a dropped tombstone with the older record it hid', async () => {
    const dir = tempDir();
    const { options, store } = await victimDeleted(dir, 0);
    options.clock.advance(1000);
    let planned: number[][] = [];
    scriptedHooks().plan = async (view: BucketView, inspector) => {
      const garbage = await inspector.segmentGarbage({ mapFrom: 0 });
      const tombstoneSegment = garbage.find((g) => g.expiredTombstones > 0)!.baseOffset;
      // The old value's segment and the tombstone's, as two groups with one key map: the first drops
      // the old value (the tombstone supersedes it), the second the tombstone (nothing older is left
      // outside the groups).
      planned = [[sealedOf(view)[0]!], [tombstoneSegment]];
      return { rewrite: planned, mapFrom: 0 };
    };
    // The second swap fails (a full disk as its intent is written): only the first is carried out.
    const replace = Log.prototype.replaceSegments;
    let swaps = 0;
    const spy = vi.spyOn(Log.prototype, 'replaceSegments').mockImplementation(function (
      this: Log,
      inputs,
      outputs,
    ) {
      if (++swaps === 2) return Promise.reject(new Error('ENOSPC: no space left on device'));
      return replace.call(this, inputs, outputs);
    });
    try {
      await expect(store.compact()).rejects.toThrow(/no space left/);
    } finally {
      spy.mockRestore();
    }
    expect(planned[1]![0]).toBeGreaterThan(planned[0]![0]!);
    expect(swaps).toBe(2);
    await store.close();
    await expectVictimStaysDeleted(dir);
  });

  it('never drops a record that nothing supersedes, whatever the plan asks', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.scripted));
    for (let i = 0; i < 80; i++)
      await store.commitOffsets(`g${i}`, [{ tableId: 1, bucketId: i, offset: i }]);
    const expected = await stateOf(store);
    scriptedHooks().plan = (view: BucketView) => ({
      rewrite: [sealedOf(view)],
      mapFrom: 0,
      tombstonesBelow: Number.POSITIVE_INFINITY,
    });
    const report = await store.compact();
    expect(report.recordsDropped).toBe(0);
    expect(report.buckets[0]!.segmentsRewritten).toBeGreaterThan(2);
    await store.close();
    const reopened = await OffsetStore.open(inProcessOptions(dir, STRATEGY_MODULES.scripted));
    expect(await stateOf(reopened)).toEqual(expected);
    await reopened.close();
  });
});

/**
 * A store on the scripted strategy whose group 'victim' committed offset 42 in table 1 bucket 0,
 * then deleted it, with segments of other commits sealed after each (the delete at the clock's
 * current time).
 */
/** Reopens the store in `dir` and checks that the victim's deleted offset did not come back. */
async function expectVictimStaysDeleted(
  dir: string,
  module: string = STRATEGY_MODULES.scripted,
): Promise<void> {
  const reopened = await OffsetStore.open(inProcessOptions(dir, module));
  try {
    expect(
      await reopened.fetchOffsets('victim', [{ tableId: 1, bucketId: 0 }]),
      'the deleted offset does not come back',
    ).toEqual([null]);
  } finally {
    await reopened.close();
  }
}

async function victimDeleted(dir: string, deleteRetentionMs: number) {
  const options = inProcessOptions(dir, STRATEGY_MODULES.scripted, {
    compaction: { strategy: STRATEGY_MODULES.scripted, background: false, deleteRetentionMs },
  });
  const store = await OffsetStore.open(options);
  await store.commitOffsets('victim', [{ tableId: 1, bucketId: 0, offset: 42 }]);
  await fillSegments(store, 20);
  await store.deleteOffsets('victim', [{ tableId: 1, bucketId: 0 }]);
  await fillSegments(store, 20);
  return { options, store };
}

function sealedOf(view: BucketView): number[] {
  return view.segments.filter((s) => s.sealed).map((s) => s.baseOffset);
}
