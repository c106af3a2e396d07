/**
 * LMDB checkpoints (the 'checkpoint' compaction strategy): recovery restores the newest valid one and
 * replays only the tail; a corrupt or "future" checkpoint is ignored with a warning and an older one
 * (or the whole log) is used; a clean close writes a last checkpoint; a checkpointed store refuses
 * the log cleaner, which could drop tombstones a checkpoint still needs.
 */
import * as path from 'node:path';
import { open } from 'lmdb';
import { describe, expect, it } from 'vitest';
import { OffsetStore, type OffsetStoreOptions } from '../../src/index.js';
import { applyHistory, generateHistory, modelOf, stateOf } from '../compaction/compaction-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

function options(dir: string, warnings: string[] = [], strategy: 'checkpoint' | 'log-cleaner' | 'none' = 'checkpoint'): OffsetStoreOptions {
  return { dir, bucketCount: 1, segmentBytesMax: 2048, compaction: { strategy, intervalMs: 3_600_000 }, onWarning: (m) => warnings.push(m) };
}

async function checkpointedStore(dir: string) {
  const history = generateHistory(5, 300);
  const store = await OffsetStore.open(options(dir));
  await applyHistory(store, history.slice(0, 150));
  await store.compact();
  await applyHistory(store, history.slice(150));
  await store.compact();
  await store.close();
  return { history };
}

describe('LMDB checkpoints', () => {
  it('restores the newest checkpoint and replays nothing after a clean close', async () => {
    const dir = tempDir();
    const { history } = await checkpointedStore(dir);
    const store = await OffsetStore.open(options(dir));
    const report = store.recoveryReports()[0]!;
    expect(report.checkpointLogOffset).toBeGreaterThan(0);
    expect(report.batchesReplayed).toBe(0);
    expect(await stateOf(store)).toEqual(modelOf(history));
    await store.close();
  });

  it('ignores a checkpoint whose content fails its checksum, with a warning, and uses the previous one', async () => {
    const dir = tempDir();
    const { history } = await checkpointedStore(dir);
    const env = open({ path: path.join(dir, 'buckets/000/checkpoint'), encoding: 'binary' });
    const metas = [...env.getRange({ start: ['m'], end: ['m', Number.MAX_SAFE_INTEGER] })].map((e) => JSON.parse(Buffer.from(e.value as Buffer).toString()) as { logOffset: number });
    expect(metas.length).toBe(2);
    const newest = Math.max(...metas.map((m) => m.logOffset));
    const [entry] = [...env.getRange({ start: ['g', newest], end: ['g', newest + 1], limit: 1 })];
    const damaged = Buffer.from(entry!.value as Buffer);
    damaged.writeDoubleLE(12345, 8 + 3 * 8); // the first entry's committed offset
    await env.put(entry!.key, damaged);
    await env.close();
    const warnings: string[] = [];
    const store = await OffsetStore.open(options(dir, warnings));
    expect(warnings.join('\n')).toMatch(new RegExp(`ignoring checkpoint at log offset ${newest}: .*checksum`));
    const report = store.recoveryReports()[0]!;
    expect(report.checkpointLogOffset).toBeLessThan(newest);
    expect(report.batchesReplayed).toBeGreaterThan(0);
    expect(await stateOf(store)).toEqual(modelOf(history));
    await store.close();
  });

  it('ignores a checkpoint that claims a log offset past the log end', async () => {
    const dir = tempDir();
    const history = generateHistory(9, 60);
    const store = await OffsetStore.open(options(dir));
    await applyHistory(store, history);
    await store.close();
    const env = open({ path: path.join(dir, 'buckets/000/checkpoint'), encoding: 'binary' });
    const future = 1_000_000;
    await env.put(['m', future], Buffer.from(JSON.stringify({ formatVersion: 1, logOffset: future, groupCount: 0, snapshotCount: 0, liveOffsets: 0, checksum: 0, createdAtMs: 0 })));
    await env.close();
    const warnings: string[] = [];
    const reopened = await OffsetStore.open(options(dir, warnings));
    expect(warnings.join('\n')).toMatch(/ignoring checkpoint at log offset 1000000: past the log end/);
    expect(await stateOf(reopened)).toEqual(modelOf(history));
    await reopened.close();
  });

  it('refuses to open a checkpointed store with the log cleaner (INVALID_CONFIG), and leaves it intact', async () => {
    const dir = tempDir();
    const { history } = await checkpointedStore(dir);
    await expect(OffsetStore.open(options(dir, [], 'log-cleaner'))).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/checkpoints/) });
    const store = await OffsetStore.open(options(dir, [], 'none'));
    expect(await stateOf(store)).toEqual(modelOf(history));
    await store.close();
  });
});
