/**
 * A store opened to read only (`readOnly: true`): it serves what a real open would serve, also of a
 * store another process has open and writes, and it writes nothing: not one byte, file or folder of
 * the store changes, even where recovery repairs (a torn tail, a commit journal to replay); every
 * call that writes is refused with STORE_READ_ONLY.
 */
import { appendFileSync, existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OffsetStore, isOffsetStoreError } from '../../src/index.js';
import { dirFingerprint } from '../support/dir-fingerprint.js';
import { exited, forkTs } from '../support/fork-child.js';
import { tempDir } from '../support/temp-dir.js';
import { copyStoreDir } from './store-fixtures.js';

const CHILD = path.join(import.meta.dirname, 'live-writer-child.ts');

/**
 * The store's files, but LMDB's `lock.mdb`: its reader table, where every reader of a checkpoint
 * environment registers while it reads (so that a live writer does not reuse the pages it reads).
 */
function storeFiles(dir: string): string[] {
  return dirFingerprint(dir).filter((entry) => !entry.includes(`${path.sep}lock.mdb `));
}

async function commitSome(dir: string, options: { strategy?: 'checkpoint' } = {}) {
  const store = await OffsetStore.open({
    dir,
    bucketCount: 4,
    segmentBytesMax: 1024,
    compaction: { strategy: options.strategy ?? 'log-cleaner', background: false },
  });
  for (let i = 0; i < 40; i++)
    await store.commitOffsets(`g${i % 8}`, [
      { tableId: 1, bucketId: 0, offset: i },
      { tableId: 1, bucketId: 1, offset: i * 10, metadata: `m${i}` },
    ]);
  await store.deleteGroup('g7');
  return store;
}

/** Every group's offsets, as a plain comparable object. */
async function everything(store: OffsetStore) {
  const groups = (await store.listGroups()).map((g) => g.groupId).sort();
  const out: Record<string, unknown> = {};
  for (const g of groups) out[g] = await store.fetchOffsets(g);
  return out;
}

describe('a store opened to read only', () => {
  it('serves what a real open serves, refuses every write with STORE_READ_ONLY, and writes nothing', async () => {
    const dir = tempDir();
    const writer = await commitSome(dir, { strategy: 'checkpoint' });
    await writer.compact(); // a checkpoint to restore from
    const expected = await everything(writer);
    await writer.close();
    const before = storeFiles(dir);

    const reader = await OffsetStore.open({ dir, readOnly: true });
    expect(await everything(reader)).toEqual(expected);
    expect(expected).not.toHaveProperty('g7');
    expect((await reader.describeGroup('g1')).offsets).toHaveLength(2);
    expect((await reader.stats()).compactionStrategy).toBe('checkpoint');
    const refused: [string, () => unknown][] = [
      ['commitOffsets', () => reader.commitOffsets('g1', [{ tableId: 1, bucketId: 0, offset: 1 }])],
      ['resetOffsets', () => reader.resetOffsets('g1', [{ tableId: 1, bucketId: 0, offset: 1 }])],
      ['deleteOffsets', () => reader.deleteOffsets('g1', [{ tableId: 1, bucketId: 0 }])],
      ['deleteGroup', () => reader.deleteGroup('g1')],
      ['removeMembers', () => reader.removeMembers('g1', { all: true })],
      ['heartbeat', () => reader.heartbeat('g1', { memberId: 'm', memberEpoch: 0 })],
      ['joinGroup', () => reader.joinGroup('g1', { subscribedTableIds: [1] })],
      ['scanner', () => reader.scanner('g1')],
      ['setTableLayout', () => reader.setTableLayout(1, { bucketCount: 2 })],
      ['compact', () => reader.compact()],
      ['convertCompaction', () => reader.convertCompaction('log-cleaner')],
      ['backup', () => reader.backup(path.join(tempDir(), 'copy'))],
      [
        'classic joinGroup',
        () =>
          reader.classic.joinGroup('c', {
            memberId: '',
            protocolType: 'consumer',
            protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
            sessionTimeoutMs: 10_000,
            rebalanceTimeoutMs: 10_000,
          }),
      ],
    ];
    for (const [name, call] of refused) {
      const outcome = await (async () => call())().then(
        () => 'done',
        (error: unknown) => error,
      );
      expect(
        isOffsetStoreError(outcome, 'STORE_READ_ONLY') && !outcome.retriable,
        `${name}: ${String(outcome)}`,
      ).toBe(true);
    }
    await reader.close();
    expect(storeFiles(dir)).toEqual(before);
  });

  it('recovers a crashed store in memory: a torn tail and the commit journal stay on the disk as they were', async () => {
    const dir = tempDir();
    const writer = await commitSome(dir);
    // Concurrent commits of several buckets: journaled rounds. The crash image is taken before close.
    await Promise.all(
      ['g0', 'g1', 'g2', 'g3'].map((g, i) =>
        writer.commitOffsets(g, [{ tableId: 2, bucketId: 0, offset: 1000 + i }]),
      ),
    );
    const image = tempDir();
    copyStoreDir(dir, image);
    await writer.close();
    const bucket0 = path.join(image, 'buckets', '000');
    const active = readdirSync(bucket0)
      .filter((f) => f.endsWith('.log'))
      .sort()
      .at(-1)!;
    appendFileSync(path.join(bucket0, active), Buffer.from([1, 2, 3, 4, 5, 6, 7])); // a torn write
    expect(readdirSync(path.join(image, 'journal')).length).toBeGreaterThan(0);
    const before = storeFiles(image);

    const warnings: string[] = [];
    const reader = await OffsetStore.open({
      dir: image,
      readOnly: true,
      onWarning: (m) => warnings.push(m),
    });
    const seen = await everything(reader);
    await reader.close();
    expect(warnings.some((w) => /torn write/.test(w))).toBe(true);
    expect(storeFiles(image)).toEqual(before);

    const real = await OffsetStore.open({
      dir: image,
      compaction: { background: false },
      onWarning: (m) => warnings.push(m),
    });
    expect(seen).toEqual(await everything(real));
    expect(
      await real.fetchOffsets('g3', [{ tableId: 2, bucketId: 0 }]).then((r) => r[0]?.offset),
    ).toBe(1003);
    await real.close();
  });

  it('refuses a folder without a store with INVALID_CONFIG, creating nothing', async () => {
    const dir = path.join(tempDir(), 'nothing-here');
    await expect(OffsetStore.open({ dir, readOnly: true })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('holds no store'),
    });
    expect(existsSync(dir)).toBe(false);
  });

  it('reads a store a live process commits to and compacts, seeing at least what it had acknowledged', async () => {
    for (const strategy of ['log-cleaner', 'checkpoint']) {
      const dir = tempDir();
      const groups = 6;
      const child = forkTs(CHILD, [dir, strategy, String(groups)]);
      let acked = 0;
      child.on('message', (m: { type: string; offset?: number }) => {
        if (m.type === 'acked') acked = m.offset!;
      });
      while (acked < 300) await new Promise((resolve) => setTimeout(resolve, 10));
      for (let round = 0; round < 5; round++) {
        const ackedBefore = acked;
        const reader = await OffsetStore.open({ dir, readOnly: true, onWarning: () => {} });
        const ackedAfter = acked;
        for (let k = 0; k < groups; k++) {
          const [row] = await reader.fetchOffsets(`g${k}`, [{ tableId: 1, bucketId: 0 }]);
          // The last offset of group k acknowledged before the open began, at least; nothing
          // past what was in flight when it ended.
          const floor = ackedBefore - ((((ackedBefore - k) % groups) + groups) % groups);
          expect(row?.offset ?? 0, `${strategy}, round ${round}, g${k}`).toBeGreaterThanOrEqual(
            floor,
          );
          expect(row!.offset).toBeLessThanOrEqual(ackedAfter + 1);
          expect(row!.offset % groups).toBe(k);
        }
        await reader.close();
      }
      child.send({ type: 'stop' });
      await exited(child);
      expect(child.exitCode).toBe(0);
    }
  });
});
