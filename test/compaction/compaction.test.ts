/**
 * Compaction in process, with the log cleaner and with checkpoints: seeded random histories keep their
 * state through compaction and reopen (COMPACTION_SEED replays one), the active segment is never
 * rewritten, commits made during a compaction are kept, and close() cuts compact() short with
 * STORE_CLOSED. The log cleaner keeps each key's latest record and only tombstones younger than the
 * delete horizon; a failure at any directory operation of its swap, or its worker terminated mid-job,
 * leaves the old or the new segments, never a mix, and no temporary file.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeBatch, loadChecksum } from '../../src/codec/index.js';
import { Log, LOG_DEFAULTS } from '../../src/log/index.js';
import { OffsetStore, type CompactionStrategy } from '../../src/index.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { seedFrom } from '../support/seeded-random.js';
import { depthRuns } from '../support/test-depth.js';
import { tempDir } from '../support/temp-dir.js';
import {
  applyHistory,
  compactionOptions,
  generateHistory,
  leftoverFiles,
  modelOf,
  stateOf,
} from './compaction-fixtures.js';
import { NodeFileSystem, type OpenFlags } from '../../src/io/index.js';
import * as path from 'node:path';

beforeAll(() => loadChecksum());

const runs = depthRuns('COMPACTION_PROPERTY_RUNS', 1, 4);
const strategies: CompactionStrategy[] = ['log-cleaner', 'incremental', 'checkpoint'];

describe.each(strategies)('compaction (%s)', (strategy) => {
  it('compact() cut short by close() between offsets-buckets rejects with STORE_CLOSED instead of reporting part of the work', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(
      compactionOptions(dir, strategy, { bucketCount: 4, segmentBytesMax: 1024 }),
    );
    await applyHistory(store, generateHistory(43, 400, 20, 40));
    let closing: Promise<void> | undefined;
    const compaction = store.compact({ onBucketCompacted: () => void (closing ??= store.close()) });
    await expect(compaction).rejects.toMatchObject({
      name: 'OffsetStoreError',
      code: 'STORE_CLOSED',
      errno: 1000,
    });
    await closing;
  });

  it('keeps the materialized state equal through compaction and reopen, for random histories', async () => {
    const baseSeed = seedFrom('COMPACTION_SEED');
    for (let run = 0; run < runs; run++) {
      const seed = baseSeed + run;
      const context = `seed ${seed} (replay with COMPACTION_SEED=${seed} COMPACTION_PROPERTY_RUNS=1)`;
      const dir = tempDir();
      const history = generateHistory(seed, 250);
      const split = 150 + (seed % 50);
      let store = await OffsetStore.open(compactionOptions(dir, strategy));
      await applyHistory(store, history.slice(0, split));
      await store.compact();
      await applyHistory(store, history.slice(split));
      const heard: [number, number, number][] = [];
      const report = await store.compact({
        onBucketCompacted: (bucket, finished, total) =>
          heard.push([bucket.bucket, finished, total]),
      });
      // Each bucket is reported once, as it finishes, with the running count.
      expect(
        heard.map(([, finished]) => finished),
        context,
      ).toEqual(report.buckets.map((_, i) => i + 1));
      expect(
        heard.map(([bucket]) => bucket).sort((a, b) => a - b),
        context,
      ).toEqual(report.buckets.map((b) => b.bucket).sort((a, b) => a - b));
      expect(
        heard.every(([, , total]) => total === report.buckets.length),
        context,
      ).toBe(true);
      await expect(store.compact({ onBucketCompacted: 'not a function' as never })).rejects.toThrow(
        TypeError,
      );
      // A listener that throws fails the call with its own error, not as a storage failure.
      const listenerError = new RangeError('the listener failed');
      await expect(
        store.compact({
          onBucketCompacted: () => {
            throw listenerError;
          },
        }),
      ).rejects.toBe(listenerError);
      // So does one whose promise rejects (an async listener), once every bucket has finished and
      // every listener's promise has settled, and not as an unhandled rejection.
      const settledListeners: number[] = [];
      await expect(
        store.compact({
          onBucketCompacted: async (bucket) => {
            await new Promise((resolve) => setTimeout(resolve, 5));
            settledListeners.push(bucket.bucket);
            if (bucket.bucket === 0) throw listenerError;
          },
        }),
      ).rejects.toBe(listenerError);
      expect(
        settledListeners.sort((a, b) => a - b),
        context,
      ).toEqual(report.buckets.map((b) => b.bucket).sort((a, b) => a - b));
      expect(await stateOf(store), context).toEqual(modelOf(history));
      await store.close();
      store = await OffsetStore.open(compactionOptions(dir, strategy));
      expect(await stateOf(store), `${context}: after reopen`).toEqual(modelOf(history));
      expect(report.bytesAfter, context).toBeLessThan(report.bytesBefore);
      await store.close();
    }
  });

  it('never rewrites the active segment', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(compactionOptions(dir, strategy, { bucketCount: 1 }));
    await applyHistory(store, generateHistory(7, 120));
    const active = (await store.stats()).buckets[0]!;
    expect(active.segmentCount).toBeGreaterThan(2);
    const segmentsBefore = await listSegments(dir);
    const activePath = segmentsBefore.at(-1)!;
    const inodeBefore = statSync(activePath).ino;
    const bytesBefore = readFileSync(activePath);
    const expected = await stateOf(store);
    await store.compact();
    if (strategy === 'checkpoint' && !existsSync(activePath)) {
      // A checkpoint that covers the whole log frees it whole, the active segment too (sealed first).
      expect((await store.stats()).buckets[0]!.checkpoint!.logOffset).toBe(active.nextLogOffset);
    } else {
      expect(statSync(activePath).ino).toBe(inodeBefore);
      expect(readFileSync(activePath).equals(bytesBefore)).toBe(true);
    }
    expect(await stateOf(store)).toEqual(expected);
    await store.close();
  });

  it('keeps commits and fetches working while compaction runs, and loses no commit made during it', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(compactionOptions(dir, strategy));
    const history = generateHistory(11, 300);
    await applyHistory(store, history);
    const during = store.compact();
    const extra = generateHistory(12, 80).map((step) => ({
      ...step,
      groupId: `during-${step.groupId}`,
      kind: 'commit' as const,
    }));
    const fetched = await store.fetchOffsets('group-1');
    expect(fetched.length).toBeGreaterThan(0);
    await applyHistory(store, extra);
    await during;
    await store.compact();
    const expected = modelOf([...history, ...extra]);
    expect(await stateOf(store)).toEqual(expected);
    await store.close();
    const reopened = await OffsetStore.open(compactionOptions(dir, strategy));
    expect(await stateOf(reopened)).toEqual(expected);
    await reopened.close();
  });
});

async function listSegments(dir: string): Promise<string[]> {
  const { readdirSync } = await import('node:fs');
  const bucketDir = `${dir}/buckets/000`;
  return readdirSync(bucketDir)
    .filter((f) => f.endsWith('.log'))
    .sort()
    .map((f) => `${bucketDir}/${f}`);
}

describe('log cleaner output', () => {
  it('splits merged survivors into outputs of at most segmentBytesMax', async () => {
    const dir = tempDir();
    const segmentBytesMax = 1024;
    const store = await OffsetStore.open(
      compactionOptions(dir, 'log-cleaner', { bucketCount: 1, segmentBytesMax }),
    );
    // Distinct keys: nearly everything survives, several segments' worth.
    for (let i = 0; i < 120; i++)
      await store.commitOffsets(`group-${i}`, [{ tableId: 1, bucketId: i, offset: i }]);
    const expected = await stateOf(store);
    const report = await store.compact();
    expect(report.buckets[0]!.segmentsRewritten).toBeGreaterThan(3);
    const bucketDir = path.join(dir, 'buckets', '000');
    const sizes = readdirSync(bucketDir)
      .filter((name) => name.endsWith('.log'))
      .sort()
      .map((name) => statSync(path.join(bucketDir, name)).size);
    const sealed = sizes.slice(0, -1);
    expect(sealed.length, `segment sizes ${sizes.join(', ')}`).toBeGreaterThan(2);
    for (const size of sealed)
      expect(size, `segment sizes ${sizes.join(', ')}`).toBeLessThanOrEqual(segmentBytesMax);
    expect(await stateOf(store)).toEqual(expected);
    await store.close();
  });

  it("keeps every key's latest record and tombstones younger than the delete horizon, and drops older ones", async () => {
    const dir = tempDir();
    const options = compactionOptions(dir, 'log-cleaner', { bucketCount: 1 });
    const store = await OffsetStore.open({
      ...options,
      compaction: { ...options.compaction, deleteRetentionMs: 3_600_000 },
    });
    const history = generateHistory(21, 200);
    await applyHistory(store, history);
    for (let i = 0; i < 40; i++)
      await store.commitOffsets('filler', [{ tableId: 9, bucketId: i % 3, offset: i }]);
    await store.compact();
    await store.close();
    // Every deleted key's tombstone is younger than an hour: all of them must still be in the log.
    const records = await readAllRecords(`${dir}/buckets/000`);
    const latest = new Map<string, { tombstone: boolean; offset: number }>();
    for (const r of records)
      latest.set(`${r.groupId}/${r.tableId}:${r.partitionId ?? ''}:${r.bucketId}`, {
        tombstone: r.tombstone,
        offset: r.offset,
      });
    const model = modelOf(history);
    const deletedKeys = new Set<string>();
    for (const step of history) {
      for (const b of step.buckets) {
        const key = `${step.groupId}/${b.tableId}:${b.partitionId ?? ''}:${b.bucketId}`;
        if (step.kind === 'delete') deletedKeys.add(key);
      }
    }
    for (const [groupId, offsets] of model) {
      for (const [bucket, offset] of offsets)
        expect(latest.get(`${groupId}/${bucket}`)).toEqual({ tombstone: false, offset });
    }
    const seenKeys = new Map<string, number>();
    for (const r of records) {
      const key = `${r.groupId}/${r.tableId}:${r.partitionId ?? ''}:${r.bucketId}`;
      seenKeys.set(key, (seenKeys.get(key) ?? 0) + 1);
    }
    // In the sealed segments each key appears once; the active segment may repeat a few.
    const repeated = [...seenKeys.values()].filter((n) => n > 1).length;
    expect(repeated).toBeLessThanOrEqual(3);

    // With a zero horizon, every old tombstone goes.
    const store2 = await OffsetStore.open({
      ...options,
      compaction: { ...options.compaction, deleteRetentionMs: 0 },
    });
    for (let i = 0; i < 40; i++)
      await store2.commitOffsets('filler', [{ tableId: 9, bucketId: i % 3, offset: 100 + i }]);
    await store2.compact();
    await store2.close();
    const sealedRecords = await readAllRecords(`${dir}/buckets/000`, { sealedOnly: true });
    expect(sealedRecords.filter((r) => r.tombstone)).toEqual([]);
    expect(deletedKeys.size).toBeGreaterThan(0);
  });
});

async function readAllRecords(bucketDir: string, options: { sealedOnly?: boolean } = {}) {
  const fs = new NodeFileSystem();
  const { readdirSync } = await import('node:fs');
  const names = readdirSync(bucketDir)
    .filter((f) => f.endsWith('.log'))
    .sort();
  const { log } = await Log.open({
    fs,
    dir: bucketDir,
    durability: 'os',
    segmentBytesMax: 2048,
    batchBytesMax: LOG_DEFAULTS.batchBytesMax,
    pendingAppendsMax: 100,
    flushBytesMax: 1 << 20,
  });
  const activeBase = Number(names.at(-1)!.slice(0, 20));
  const records: ReturnType<typeof decodeBatch>['records'] = [];
  await log.scan(0, (buf, position, logOffset, sizeBytes) => {
    if (options.sealedOnly && logOffset >= activeBase) return;
    records.push(...decodeBatch(Buffer.from(buf.subarray(position, position + sizeBytes))).records);
  });
  await log.close();
  return records;
}

describe('compaction crash safety (in process)', () => {
  it('makes every rewritten output and their names durable (fdatasync, directory fsync) before the swap intent is written', async () => {
    const dir = tempDir();
    const ops: string[] = [];
    const fs = new (class extends FaultyFileSystem {
      override async open(filePath: string, flags: OpenFlags, mode?: number) {
        const name = path.basename(filePath);
        ops.push(`open ${name}`);
        const handle = await super.open(filePath, flags, mode);
        return {
          ...handle,
          datasync: async () => {
            ops.push(`datasync ${name}`);
            return handle.datasync();
          },
        };
      }
      override async syncDir(d: string) {
        ops.push('syncDir');
        return super.syncDir(d);
      }
    })();
    const store = await OffsetStore.open(
      compactionOptions(dir, 'log-cleaner', { bucketCount: 1, segmentBytesMax: 1024, fs }),
    );
    await applyHistory(store, generateHistory(43, 200));
    ops.length = 0;
    await store.compact();
    await store.close();
    const intent = ops.indexOf('open compaction.swap.tmp');
    const lastOutput = ops.findLastIndex((op, i) => i < intent && /\.cleaned$/.test(op));
    expect(intent, ops.join(', ')).toBeGreaterThan(0);
    expect(ops[lastOutput], 'the last output is fdatasynced').toMatch(/^datasync .*\.cleaned$/);
    // And every other: recovery renames each output of a durable intent into a sealed segment.
    const outputs = new Set(
      ops
        .slice(0, intent)
        .filter((op) => /^open .*\.cleaned$/.test(op))
        .map((op) => op.slice('open '.length)),
    );
    expect(outputs.size, 'a rewrite of several outputs').toBeGreaterThan(1);
    for (const name of outputs)
      expect(ops.slice(ops.indexOf(`open ${name}`), intent), name).toContain(`datasync ${name}`);
    // Else a power loss after the intent is durable could keep the intent and lose an output's
    // name: recovery then finds an output under neither name.
    expect(ops.slice(lastOutput, intent), ops.join(', ')).toContain('syncDir');
  });

  it('leaves the old or the new segment set at every failure point of the swap, never a mix', async () => {
    const source = tempDir();
    const history = generateHistory(31, 200);
    const setup = await OffsetStore.open(
      compactionOptions(source, 'log-cleaner', { bucketCount: 1, segmentBytesMax: 6144 }),
    );
    await applyHistory(setup, history);
    await setup.close();
    const expected = modelOf(history);
    const { cpSync } = await import('node:fs');
    let failAt = 1;
    for (; ; failAt++) {
      const dir = tempDir();
      cpSync(source, dir, { recursive: true });
      const fs = new FaultyFileSystem();
      const store = await OffsetStore.open(
        compactionOptions(dir, 'log-cleaner', { bucketCount: 1, segmentBytesMax: 6144, fs }),
      );
      fs.plan = { failMetaOpAt: fs.metaOpCount + failAt };
      const outcome = await store.compact().then(
        () => 'done',
        () => 'failed',
      );
      fs.plan = {};
      await store.close().catch(() => {});
      const reopened = await OffsetStore.open(
        compactionOptions(dir, 'log-cleaner', { bucketCount: 1 }),
      );
      expect(await stateOf(reopened), `failure at directory operation ${failAt}`).toEqual(expected);
      expect(leftoverFiles(dir)).toEqual([]);
      if (outcome === 'done' || failAt % 4 === 0) {
        // Compaction runs again after the interrupted one (checked on a sample: a worker start is slow).
        const again = await reopened.compact();
        expect(again.buckets).toHaveLength(1);
        expect(await stateOf(reopened)).toEqual(expected);
      }
      await reopened.close();
      if (outcome === 'done') break;
    }
    expect(failAt).toBeGreaterThan(3);
  });

  it('survives terminating the worker mid-job: state unchanged, no temporary files after reopen', async () => {
    const dir = tempDir();
    const history = generateHistory(41, 1000, 40, 40);
    const store = await OffsetStore.open(
      compactionOptions(dir, 'log-cleaner', { bucketCount: 1, segmentBytesMax: 1024 }),
    );
    await applyHistory(store, history);
    const compaction = store.compact();
    const settled = compaction.then(
      () => 'completed',
      (error: unknown) => error,
    );
    // Wait until the worker is writing its output, then close: the pool is destroyed mid-job.
    const bucketDir = `${dir}/buckets/000`;
    const { readdirSync } = await import('node:fs');
    while (!readdirSync(bucketDir).some((name) => name.endsWith('.cleaned')))
      await new Promise((resolve) => setImmediate(resolve));
    await store.close();
    // The clean in flight was abandoned, not finished, and compact() says why: the store closed.
    expect(await settled).toMatchObject({
      name: 'OffsetStoreError',
      code: 'STORE_CLOSED',
      errno: 1000,
    });
    const reopened = await OffsetStore.open(
      compactionOptions(dir, 'log-cleaner', { bucketCount: 1 }),
    );
    expect(await stateOf(reopened)).toEqual(modelOf(history));
    expect(leftoverFiles(dir)).toEqual([]);
    await reopened.compact();
    expect(await stateOf(reopened)).toEqual(modelOf(history));
    await reopened.close();
  });
});

describe('compaction.onRun', () => {
  it('a listener that throws or rejects changes no run: compaction applies, the caller gets its reports, the failure is a warning', async () => {
    for (const [throwsOn, how] of [
      ['started', 'threw'],
      ['finished', 'threw'],
      ['finished', 'rejected'],
    ] as const) {
      const dir = tempDir();
      const warnings: string[] = [];
      const store = await OffsetStore.open({
        dir,
        bucketCount: 1,
        segmentBytesMax: 4096,
        onWarning: (message) => warnings.push(message),
        compaction: {
          strategy: 'log-cleaner',
          background: false,
          onRun:
            how === 'threw'
              ? (event) => {
                  if (event.kind === throwsOn) throw new Error(`listener threw on ${event.kind}`);
                }
              : async (event) => {
                  // An async listener: its rejection must not become an unhandled one.
                  if (event.kind === throwsOn) throw new Error(`listener threw on ${event.kind}`);
                },
        },
      });
      for (let i = 0; i < 500; i++)
        await store.commitOffsets('g', [{ tableId: 1, bucketId: i % 4, offset: i }]);
      const before = (await store.stats()).totals.logBytes;
      const report = await store.compact();
      expect(
        report.buckets.map((b) => b.bucket),
        throwsOn,
      ).toEqual([0]);
      expect((await store.stats()).totals.logBytes, throwsOn).toBeLessThan(before / 10);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings, throwsOn).toEqual([
        `compaction.onRun ${how} on a '${throwsOn}' event (the run goes on as if it had not): listener threw on ${throwsOn}`,
      ]);
      expect((await store.fetchOffsets('g')).map((o) => o?.offset)).toEqual([496, 497, 498, 499]);
      await store.close();
    }
  });
});
