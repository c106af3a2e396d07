/**
 * The example strategy of docs/compaction.md (examples/compaction/cost-benefit.mjs) is the file the
 * docs show, and it works: loaded on the compaction worker threads and in-process, it compacts
 * within its budget and the state survives compaction and reopen.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { tempDir } from '../support/temp-dir.js';
import { compactionOptions, stateOf } from './compaction-fixtures.js';
import { inProcessOptions } from './strategy-fixtures.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const EXAMPLE = path.join(ROOT, 'examples', 'compaction', 'cost-benefit.mjs');

async function overwrite(store: OffsetStore): Promise<void> {
  for (let i = 0; i < 150; i++)
    await store.commitOffsets(`g${i % 3}`, [
      { tableId: 1, bucketId: i % 5, offset: i },
      { tableId: 2, bucketId: i, offset: i },
    ]);
}

describe('the docs example strategy (cost-benefit)', () => {
  it('is the code docs/compaction.md shows', () => {
    const docs = readFileSync(path.join(ROOT, 'docs', 'compaction.md'), 'utf8');
    const block =
      /<!-- example: examples\/compaction\/cost-benefit\.mjs -->\n```js\n([\s\S]*?)```/.exec(
        docs,
      )?.[1];
    expect(block).toBe(readFileSync(EXAMPLE, 'utf8'));
  });

  it('compacts on the worker threads within its budget and keeps the state through reopen', async () => {
    const dir = tempDir();
    const options = compactionOptions(dir, EXAMPLE as never, {
      bucketCount: 1,
      segmentBytesMax: 1024,
    });
    const store = await OffsetStore.open(options);
    await overwrite(store);
    const expected = await stateOf(store);
    const report = await store.compact();
    expect(report.strategy).toBe('module:cost-benefit');
    expect(report.buckets[0]!.segmentsRewritten).toBeGreaterThan(0);
    expect(report.buckets[0]!.segmentsRewritten).toBeLessThanOrEqual(4);
    expect(report.buckets[0]!.workerCpuMs).toBeGreaterThan(0);
    expect(report.bytesAfter).toBeLessThan(report.bytesBefore);
    expect(await stateOf(store)).toEqual(expected);
    await store.close();
    const reopened = await OffsetStore.open(options);
    expect(await stateOf(reopened)).toEqual(expected);
    await reopened.close();
  });

  it('runs in-process on another file-system port, with the same result', async () => {
    const dir = tempDir();
    const store = await OffsetStore.open(inProcessOptions(dir, EXAMPLE));
    await overwrite(store);
    const expected = await stateOf(store);
    const report = await store.compact();
    expect(report.buckets[0]!.segmentsRewritten).toBeGreaterThan(0);
    expect(report.buckets[0]!.workerCpuMs).toBeUndefined();
    expect(await stateOf(store)).toEqual(expected);
    await store.close();
  });
});
