/**
 * Files that go missing or shrink are noticed. Log offsets run without a gap from the first segment
 * to the last, starting where the newest checkpoint (or the store's log start) says, and ending where
 * the last clean close left them (or, after a crash, at least where the log was when last opened or
 * last rolled into a new segment); a missing segment, a missing bucket folder, a segment cut at a
 * batch boundary, zeroed last batches, an edited bucketCount, or a checkpoint gone after the log below
 * it was deleted is CORRUPT_MESSAGE naming what is missing, in open and in `log verify` alike.
 */
import {
  cpSync,
  existsSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyLog } from '../../src/admin/index.js';
import { readBatchHeader } from '../../src/codec/index.js';
import { ManualClock, OffsetStore, type OffsetStoreOptions } from '../../src/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { activeSegmentOf } from '../support/log-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

const OPTIONS = {
  bucketCount: 2,
  segmentBytesMax: 1024,
  clock: new ManualClock(),
  compaction: { strategy: 'none' as const },
};

/** A closed store of 2 offsets-buckets, each with several segments; bucket 0's folder. */
async function storeWithSegments(
  options: Partial<OffsetStoreOptions> = {},
): Promise<{ dir: string; bucketDir: string; segments: string[] }> {
  const dir = tempDir();
  const store = await OffsetStore.open({ dir, ...OPTIONS, ...options });
  for (let i = 0; i < 120; i++) {
    for (const g of ['a', 'b', 'c', 'd'])
      await store.commitOffsets(g, [{ tableId: 1, bucketId: i % 3, offset: i }]);
  }
  await store.close();
  const bucketDir = path.join(dir, 'buckets', '000');
  const segments = readdirSync(bucketDir)
    .filter((f) => f.endsWith('.log'))
    .sort()
    .map((f) => path.join(bucketDir, f));
  if (options.segmentBytesMax === undefined) expect(segments.length).toBeGreaterThan(4);
  return { dir, bucketDir, segments };
}

/** Byte positions of the batches of a segment file. */
function batchStarts(file: string): number[] {
  const bytes = readFileSync(file);
  const starts: number[] = [];
  for (
    let p = 0;
    p + 4 <= bytes.length && bytes.readUInt32LE(p) > 0;
    p += bytes.readUInt32LE(p) + 4
  )
    starts.push(p);
  void readBatchHeader;
  return starts;
}

async function expectRefused(
  dir: string,
  what: RegExp,
  options: Partial<OffsetStoreOptions> = {},
): Promise<void> {
  const warnings: string[] = [];
  await expect(
    OffsetStore.open({ dir, ...OPTIONS, ...options, onWarning: (m) => warnings.push(m) }),
  ).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE', message: expect.stringMatching(what) });
  const report = await verifyLog(dir);
  expect(report.ok, 'log verify finds it too').toBe(false);
  expect(report.corruptCount).toBeGreaterThan(0);
  expect(report.problems.map((p) => p.reason).join('\n')).toMatch(what);
}

describe('missing or shortened files', () => {
  it('a segment put back below the checkpoint recovery starts from is removed with a warning (log verify says the open will), and a gap above it is still refused', async () => {
    const warnings: string[] = [];
    const options = {
      ...OPTIONS,
      bucketCount: 1,
      compaction: { strategy: 'checkpoint' as const, background: false, minDirtyRatio: 0 },
      onWarning: (m: string) => warnings.push(m),
    };
    const dir = tempDir();
    const store = await OffsetStore.open({ dir, ...options });
    const commitRound = async (from: number) => {
      for (let i = from; i < from + 200; i++)
        await store.commitOffsets('g', [{ tableId: 1, bucketId: i % 3, offset: i }]);
    };
    await commitRound(0);
    const bucketDir = path.join(dir, 'buckets', '000');
    const logs = () =>
      readdirSync(bucketDir)
        .filter((f) => f.endsWith('.log'))
        .sort();
    const first = logs()[0]!;
    const firstBytes = readFileSync(path.join(bucketDir, first));
    await store.compact(); // a checkpoint; the segments below it are deleted
    await commitRound(200);
    await store.close();
    expect(logs()).not.toContain(first);
    const kept = logs();
    writeFileSync(path.join(bucketDir, first), firstBytes);

    const report = await verifyLog(dir);
    expect(report.ok).toBe(true);
    expect(report.buckets[0]!.staleSegments).toEqual([first]);
    expect(report.buckets[0]!.segments.map((s) => path.basename(s.file))).toEqual(kept);

    const reopened = await OffsetStore.open({ dir, ...options });
    expect(warnings.join('\n')).toMatch(
      new RegExp(
        `offsets-bucket 0: segment\\(s\\) ${first} lie wholly below log offset \\d+, where recovery starts, .*removed`,
      ),
    );
    expect((await reopened.fetchOffsets('g')).map((o) => o!.offset).sort()).toEqual([
      397, 398, 399,
    ]);
    expect(logs()).toEqual(kept);

    // A gap above the checkpoint is missing offsets recovery needs: refused, as ever.
    for (let i = 400; i < 600; i++)
      await reopened.commitOffsets('g', [{ tableId: 1, bucketId: i % 3, offset: i }]);
    const image = tempDir();
    cpSync(dir, image, { recursive: true }); // the files as a crash leaves them
    rmSync(path.join(image, 'LOCK'), { force: true });
    await reopened.close();
    const imageLogs = readdirSync(path.join(image, 'buckets', '000'))
      .filter((f) => f.endsWith('.log'))
      .sort();
    expect(imageLogs.length).toBeGreaterThan(2);
    rmSync(path.join(image, 'buckets', '000', imageLogs[1]!));
    await expectRefused(image, /log offsets \d+\.\.\d+ are missing/, options);
  });

  it('a segment that compaction merged away, put back from an older copy, is reported as overlapping, and an older copy put over the merged segment as a gap, each naming the way out', async () => {
    const options = {
      ...OPTIONS,
      bucketCount: 1,
      compaction: { strategy: 'log-cleaner' as const, background: false, minDirtyRatio: 0 },
    };
    for (const restored of ['merged away', 'over the merged one'] as const) {
      const dir = tempDir();
      const store = await OffsetStore.open({ dir, ...options });
      for (let i = 0; i < 200; i++)
        await store.commitOffsets('g', [{ tableId: 1, bucketId: i % 3, offset: i }]);
      const bucketDir = path.join(dir, 'buckets', '000');
      const logs = () =>
        readdirSync(bucketDir)
          .filter((f) => f.endsWith('.log'))
          .sort();
      const before = new Map(logs().map((f) => [f, readFileSync(path.join(bucketDir, f))]));
      await store.compact();
      await store.close();
      const after = logs();
      expect(after.length).toBeLessThan(before.size);
      const file =
        restored === 'merged away'
          ? [...before.keys()].find((f) => !after.includes(f))!
          : after[0]!;
      writeFileSync(path.join(bucketDir, file), before.get(file)!);
      await expectRefused(
        dir,
        restored === 'merged away'
          ? new RegExp(
              `past the base \\d+ of ${file}: the two hold the same log offsets, as when a segment that a compaction merged .* restore the whole store from one backup`,
            )
          : new RegExp(
              `are missing: .*or an older copy of ${file} was put in its place\\); .*restore the whole store from one backup`,
            ),
        options,
      );
    }
  });

  it('the first segment deleted', async () => {
    const { dir, segments } = await storeWithSegments();
    unlinkSync(segments[0]!);
    await expectRefused(dir, /log starts at log offset \d+|missing/);
  });

  it('a middle segment deleted', async () => {
    const { dir, segments } = await storeWithSegments();
    unlinkSync(segments[2]!);
    await expectRefused(dir, /missing|gap/);
  });

  it('the last segment deleted', async () => {
    const { dir, segments } = await storeWithSegments();
    unlinkSync(segments.at(-1)!);
    await expectRefused(dir, /ends at log offset \d+|missing|gap/);
  });

  it.each(['fsync', 'os'] as const)(
    'the last segment deleted after a crash: segments created since the last open count too (durability %s)',
    async (durability) => {
      // Opened once, closed cleanly; opened again, written until the log rolled, and "crashed": the
      // directory is copied while the store still has it open, as a crash would leave it. In 'os' too:
      // a crash of the process keeps what the OS was given, so only the disk's fault can lose it.
      const { dir } = await storeWithSegments();
      const store = await OffsetStore.open({ dir, ...OPTIONS, durability });
      const before = (await store.stats()).buckets[store.bucketFor('a')]!.segmentCount;
      for (let i = 0; i < 40; i++)
        await store.commitOffsets('a', [{ tableId: 1, bucketId: 0, offset: 1000 + i }]);
      expect(
        (await store.stats()).buckets[store.bucketFor('a')]!.segmentCount,
        'the log rolled',
      ).toBeGreaterThan(before);
      const crashed = tempDir();
      cpSync(dir, crashed, { recursive: true });
      await store.close();
      const bucketDir = path.join(
        crashed,
        'buckets',
        String(store.bucketFor('a')).padStart(3, '0'),
      );
      const segments = readdirSync(bucketDir)
        .filter((f) => f.endsWith('.log'))
        .sort();
      unlinkSync(path.join(bucketDir, segments.at(-1)!));
      await expectRefused(crashed, /ends at log offset \d+|missing|gap/, { durability });
    },
  );

  it.each(['fsync', 'os'] as const)(
    'the last segment deleted under a running store: a read-only view refuses it (durability %s)',
    async (durability) => {
      const { dir } = await storeWithSegments();
      const store = await OffsetStore.open({ dir, ...OPTIONS, durability });
      const bucket = store.bucketFor('a');
      const before = (await store.stats()).buckets[bucket]!.segmentCount;
      let i = 0;
      while ((await store.stats()).buckets[bucket]!.segmentCount === before)
        await store.commitOffsets('a', [{ tableId: 1, bucketId: 0, offset: 1000 + i++ }]);
      await store.commitOffsets('a', [{ tableId: 1, bucketId: 0, offset: 5000 }]);
      const bucketDir = path.join(dir, 'buckets', String(bucket).padStart(3, '0'));
      const last = readdirSync(bucketDir)
        .filter((f) => f.endsWith('.log'))
        .sort()
        .at(-1)!;
      unlinkSync(path.join(bucketDir, last));
      // The live store still has the file open and serves what it acknowledged; a view reads the
      // directory, which no longer holds the segment with the last commits.
      expect((await store.fetchOffsets('a')).find((r) => r?.bucketId === 0)?.offset).toBe(5000);
      await expect(
        OffsetStore.open({ dir, ...OPTIONS, durability, readOnly: true }),
      ).rejects.toMatchObject({
        code: 'CORRUPT_MESSAGE',
        message: expect.stringMatching(/ends at log offset \d+|missing|gap/),
      });
      await store.close().catch(() => {});
    },
  );

  it('every segment deleted', async () => {
    const { dir, segments } = await storeWithSegments();
    for (const s of segments) unlinkSync(s);
    await expectRefused(dir, /ends at log offset|missing/);
  });

  it('a whole bucket folder deleted', async () => {
    const { dir, bucketDir } = await storeWithSegments();
    rmSync(bucketDir, { recursive: true });
    await expectRefused(dir, /000.*(missing|does not exist)/);
  });

  it('a sealed segment cut at a batch boundary', async () => {
    const { dir, segments } = await storeWithSegments();
    const starts = batchStarts(segments[1]!);
    truncateSync(segments[1]!, starts.at(-1)!);
    await expectRefused(dir, /missing|gap/);
  });

  it('the active segment cut at a batch boundary', async () => {
    const { dir, segments } = await storeWithSegments();
    const starts = batchStarts(segments.at(-1)!);
    expect(starts.length).toBeGreaterThan(1);
    truncateSync(segments.at(-1)!, starts.at(-1)!);
    await expectRefused(dir, /ends at log offset/);
  });

  it("a bucket's only segment deleted: the refusal names the bucket's folder", async () => {
    const { dir, bucketDir, segments } = await storeWithSegments({ segmentBytesMax: 1 << 20 });
    expect(segments).toHaveLength(1);
    unlinkSync(segments[0]!);
    const what =
      /the log ends at log offset 0 \(no batch, no segment file\), but it held batches up to log offset \d+/;
    await expectRefused(dir, what);
    await expect(OffsetStore.open({ dir, ...OPTIONS })).rejects.toThrow(
      `${bucketDir} at byte 0: the log ends at log offset 0`,
    );
    expect((await verifyLog(dir)).problems[0]!.file).toBe(bucketDir);
  });

  it('the last batches zeroed', async () => {
    const { dir, segments } = await storeWithSegments();
    const file = segments.at(-1)!;
    const bytes = readFileSync(file);
    bytes.fill(0, batchStarts(file).at(-2)!);
    writeFileSync(file, bytes);
    await expectRefused(dir, /ends at log offset/);
  });

  it('store.json edited to another valid bucketCount', async () => {
    for (const bucketCount of [1, 4]) {
      const { dir } = await storeWithSegments();
      const manifestPath = path.join(dir, 'store.json');
      const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bucketCount: number };
      manifest.bucketCount = bucketCount;
      writeFileSync(manifestPath, JSON.stringify(manifest));
      await expect(OffsetStore.open({ dir })).rejects.toMatchObject({
        code: 'CORRUPT_MESSAGE',
        message: expect.stringContaining('store.json'),
      });
      await expect(verifyLog(dir)).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
    }
  });

  it('the checkpoints deleted, or data.mdb truncated to 0, after the log below them was deleted', async () => {
    for (const damage of ['delete', 'truncate'] as const) {
      const dir = tempDir();
      const options = { ...OPTIONS, compaction: { strategy: 'checkpoint' as const } };
      const store = await OffsetStore.open({ dir, ...options });
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 60; i++)
          for (const g of ['a', 'b'])
            await store.commitOffsets(g, [
              { tableId: 1, bucketId: i % 3, offset: round * 100 + i },
            ]);
        await store.compact();
      }
      await store.close();
      const bucketDir = path.join(dir, 'buckets', '000');
      const first = readdirSync(bucketDir)
        .filter((f) => f.endsWith('.log'))
        .sort()[0]!;
      expect(first, 'the log below a checkpoint was deleted').not.toBe('00000000000000000000.log');
      if (damage === 'delete') rmSync(path.join(bucketDir, 'checkpoint'), { recursive: true });
      else truncateSync(path.join(bucketDir, 'checkpoint', 'data.mdb'), 0);
      await expectRefused(dir, /log starts at log offset \d+|deleted|missing/, options);
    }
  });

  it('a byte of data.mdb flipped after the log below it was deleted: log verify names the checkpoint, not only the log', async () => {
    const dir = tempDir();
    const options = { ...OPTIONS, compaction: { strategy: 'checkpoint' as const } };
    const store = await OffsetStore.open({ dir, ...options });
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 60; i++)
        await store.commitOffsets('a', [{ tableId: 1, bucketId: i % 3, offset: round * 100 + i }]);
      await store.compact();
    }
    await store.close();
    const environment = path.join(dir, 'buckets', '000', 'checkpoint', 'data.mdb');
    const bytes = readFileSync(environment);
    bytes[0x1085] = bytes[0x1085]! ^ 0xff;
    writeFileSync(environment, bytes);
    await expectRefused(dir, /log starts at log offset \d+|missing/, options);
    const report = await verifyLog(dir);
    expect(report.problems[0]).toMatchObject({
      kind: 'corrupt',
      bucket: 0,
      file: environment,
      reason: expect.stringMatching(/^every checkpoint is ignored: CORRUPT_MESSAGE: .*data\.mdb/),
    });
  });

  describe('a segment file removed under a running store', () => {
    /** The bucket of group 'a' refuses every commit, naming the missing file; then `store` is closed. */
    async function expectStoppedByGoneFile(store: OffsetStore): Promise<void> {
      await expect(
        store.commitOffsets('a', [{ tableId: 1, bucketId: 0, offset: 9999 }]),
      ).rejects.toMatchObject({
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringMatching(/is gone from its folder/),
      });
      await store.close().catch(() => {});
    }

    /** A store whose bucket of group 'a' rolled at least once; that bucket's folder and its last segment. */
    async function runningWithRolledLog(options: Partial<OffsetStoreOptions> = {}) {
      const { dir } = await storeWithSegments({
        compaction: options.compaction ?? OPTIONS.compaction,
      });
      const store = await OffsetStore.open({ dir, ...OPTIONS, ...options });
      const bucket = store.bucketFor('a');
      const bucketDir = path.join(dir, 'buckets', String(bucket).padStart(3, '0'));
      const segments = () =>
        readdirSync(bucketDir)
          .filter((f) => f.endsWith('.log'))
          .sort();
      return { dir, store, bucket, bucketDir, segments };
    }

    it('the active segment: the next roll refuses to seal it, and the bucket accepts no more commits', async () => {
      const { store, bucketDir, segments } = await runningWithRolledLog();
      unlinkSync(path.join(bucketDir, segments().at(-1)!));
      // Commits go on into the open file until the log would roll: there it finds the file gone.
      let refused: unknown;
      for (let i = 0; i < 200 && refused === undefined; i++) {
        await store
          .commitOffsets('a', [{ tableId: 1, bucketId: 0, offset: 2000 + i }])
          .catch((error: unknown) => (refused = error));
      }
      expect(refused).toMatchObject({
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringMatching(/segment file .*\.log is gone from its folder/),
      });
      await expectStoppedByGoneFile(store);
    });

    it('the active segment of a quiet log: the periodic retention check finds it gone, warns, and the bucket accepts no more commits', async () => {
      const warnings: string[] = [];
      const clock = new ManualClock();
      const { store, bucket, bucketDir, segments } = await runningWithRolledLog({
        clock,
        onWarning: (m) => warnings.push(m),
      });
      unlinkSync(path.join(bucketDir, segments().at(-1)!));
      clock.advance(60_000); // offsetsRetentionCheckIntervalMs
      for (let i = 0; i < 100 && warnings.length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 5));
      expect(warnings.join('\n')).toMatch(
        new RegExp(
          `offsets-bucket ${bucket} stopped: LOG_STORAGE_ERROR: segment file .*\\.log is gone from its folder`,
        ),
      );
      expect((await store.stats()).buckets[bucket]!.state).toBe('stopped');
      await expectStoppedByGoneFile(store);
    });

    it('the active segment replaced by a copy of itself (a restore over it): the next roll, or the periodic check of a quiet log, stops the log', async () => {
      for (const quiet of [false, true]) {
        const warnings: string[] = [];
        const clock = new ManualClock();
        const { store, bucket, bucketDir, segments } = await runningWithRolledLog({
          clock,
          onWarning: (m) => warnings.push(m),
        });
        const active = path.join(bucketDir, segments().at(-1)!);
        cpSync(active, `${active}.copy`);
        renameSync(`${active}.copy`, active);
        const replaced = /segment file .*\.log is no longer the file this log writes/;
        if (quiet) {
          clock.advance(60_000); // offsetsRetentionCheckIntervalMs
          for (let i = 0; i < 100 && warnings.length === 0; i++)
            await new Promise((resolve) => setTimeout(resolve, 5));
          expect(warnings.join('\n')).toMatch(
            new RegExp(`offsets-bucket ${bucket} stopped: LOG_STORAGE_ERROR: ${replaced.source}`),
          );
        } else {
          let refused: unknown;
          for (let i = 0; i < 200 && refused === undefined; i++)
            await store
              .commitOffsets('a', [{ tableId: 1, bucketId: 0, offset: 2000 + i }])
              .catch((error: unknown) => (refused = error));
          expect(refused).toMatchObject({
            code: 'LOG_STORAGE_ERROR',
            message: expect.stringMatching(replaced),
          });
        }
        await expect(
          store.commitOffsets('a', [{ tableId: 1, bucketId: 0, offset: 9999 }]),
        ).rejects.toMatchObject({
          code: 'LOG_STORAGE_ERROR',
          message: expect.stringMatching(replaced),
        });
        await store.close().catch(() => {});
      }
    });

    for (const durability of ['fsync', 'os'] as const)
      for (const end of ['close', 'crash'] as const)
        it(`the active segment replaced by an older copy of itself: the next open reports the commits it lost instead of serving the copy (durability ${durability}, then a ${end})`, async () => {
          const warnings: string[] = [];
          const clock = new ManualClock();
          const dir = tempDir();
          // Segments large enough that the copy and the commits after it share one file.
          const options = {
            ...OPTIONS,
            bucketCount: 1,
            segmentBytesMax: 1 << 20,
            durability,
            clock,
            onWarning: (m: string) => warnings.push(m),
          };
          const store = await OffsetStore.open({ dir, ...options });
          const commit = (offset: number) =>
            store.commitOffsets('a', [{ tableId: 1, bucketId: 0, offset }]);
          for (let i = 1; i <= 20; i++) await commit(i);
          const active = activeSegmentOf(dir);
          cpSync(active, `${active}.copy`); // an older copy: commits 1..20
          for (let i = 21; i <= 40; i++) await commit(i);
          renameSync(`${active}.copy`, active);
          clock.advance(60_000); // offsetsRetentionCheckIntervalMs: the log stops
          for (let i = 0; i < 100 && warnings.length === 0; i++)
            await new Promise((resolve) => setTimeout(resolve, 5));
          expect(warnings.join('\n')).toMatch(/no longer the file this log writes/);
          let image = dir;
          if (end === 'crash') {
            image = tempDir();
            cpSync(dir, image, { recursive: true }); // the files as a crash leaves them
            rmSync(path.join(image, 'LOCK'), { force: true });
          }
          await store.close().catch(() => {});
          // Commits 21..40 were acknowledged into the replaced file: reported, never served as 20.
          await expect(OffsetStore.open({ dir: image, ...options })).rejects.toMatchObject({
            code: 'CORRUPT_MESSAGE',
          });
        });

    it('store.json removed under a running store: the periodic check writes it again, and the store reopens after a crash', async () => {
      const warnings: string[] = [];
      const clock = new ManualClock();
      const dir = tempDir();
      // Large segments: no roll writes store.json again on its own.
      const options = {
        ...OPTIONS,
        segmentBytesMax: 1 << 20,
        clock,
        onWarning: (m: string) => warnings.push(m),
      };
      const store = await OffsetStore.open({ dir, ...options });
      for (let i = 1; i <= 10; i++)
        await store.commitOffsets('a', [{ tableId: 1, bucketId: 0, offset: i }]);
      rmSync(path.join(dir, 'store.json'));
      clock.advance(60_000); // offsetsRetentionCheckIntervalMs
      for (let i = 0; i < 100 && warnings.length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 5));
      for (let i = 0; i < 100 && !existsSync(path.join(dir, 'store.json')); i++)
        await new Promise((resolve) => setTimeout(resolve, 5));
      expect(warnings).toEqual([
        expect.stringMatching(/store\.json was removed while the store ran/),
      ]);
      const image = tempDir();
      cpSync(dir, image, { recursive: true }); // the files as a crash leaves them
      rmSync(path.join(image, 'LOCK'), { force: true });
      await store.close();
      const reopened = await OffsetStore.open({ dir: image, ...options });
      expect((await reopened.fetchOffsets('a', [{ tableId: 1, bucketId: 0 }]))[0]?.offset).toBe(10);
      await reopened.close();
    });

    it("the store's directory renamed: the periodic check stops the log for that, not for segments gone", async () => {
      const warnings: string[] = [];
      const clock = new ManualClock();
      const { dir, store, bucket } = await runningWithRolledLog({
        clock,
        onWarning: (m) => warnings.push(m),
      });
      const moved = `${dir}-moved`;
      renameSync(dir, moved);
      try {
        clock.advance(60_000); // offsetsRetentionCheckIntervalMs
        // Every bucket stops, each with its own warning: wait for this bucket's.
        const stoppedWarning = () =>
          warnings.find((w) => w.startsWith(`offsets-bucket ${bucket} stopped`));
        for (let i = 0; i < 400 && stoppedWarning() === undefined; i++)
          await new Promise((resolve) => setTimeout(resolve, 5));
        const stopped = stoppedWarning();
        expect(stopped).toMatch(/is no longer the directory this process opened the store in/);
        expect(stopped).not.toMatch(/gone from its folder/);
        await store.close().catch(() => {});
      } finally {
        renameSync(moved, dir);
      }
    });

    it('a stat of the store directory that fails once (EIO) at the periodic check stops nothing', async () => {
      const warnings: string[] = [];
      const clock = new ManualClock();
      const dir = tempDir();
      let failDirStat = false;
      const fs = new (class extends NodeFileSystem {
        override async identity(p: string): Promise<string | null> {
          if (failDirStat && p === dir) {
            failDirStat = false;
            throw Object.assign(new Error('EIO: i/o error, stat'), { code: 'EIO' });
          }
          return super.identity(p);
        }
      })();
      const store = await OffsetStore.open({
        dir,
        ...OPTIONS,
        fs,
        clock,
        onWarning: (m) => warnings.push(m),
      });
      await store.commitOffsets('a', [{ tableId: 1, bucketId: 0, offset: 1 }]);
      failDirStat = true;
      clock.advance(60_000); // offsetsRetentionCheckIntervalMs
      for (let i = 0; i < 50 && failDirStat; i++)
        await new Promise((resolve) => setTimeout(resolve, 5));
      await new Promise((resolve) => setTimeout(resolve, 20)); // the pass ends
      expect(failDirStat, 'the check asked after the directory').toBe(false);
      expect(warnings).toEqual([]);
      await store.commitOffsets('a', [{ tableId: 1, bucketId: 0, offset: 2 }]);
      await store.close();
    });

    it('damage a compaction reads in a log stopped for a replaced segment is reported as damage (CORRUPT_MESSAGE), not as what a failed write left; a backup is refused naming why the log stopped', async () => {
      const warnings: string[] = [];
      const clock = new ManualClock();
      const { store, bucket, bucketDir, segments } = await runningWithRolledLog({
        clock,
        compaction: { strategy: 'log-cleaner', background: false, minDirtyRatio: 0 },
        onWarning: (m) => warnings.push(m),
      });
      const active = path.join(bucketDir, segments().at(-1)!);
      cpSync(active, `${active}.copy`);
      renameSync(`${active}.copy`, active);
      clock.advance(60_000); // offsetsRetentionCheckIntervalMs: the log stops
      for (let i = 0; i < 100 && warnings.length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 5));
      expect((await store.stats()).buckets[bucket]!.state).toBe('stopped');
      await expect(store.backup(path.join(tempDir(), 'backup'))).rejects.toMatchObject({
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringMatching(
          new RegExp(
            `cannot back up offsets-bucket ${bucket}: .* has stopped \\(segment file .* is no longer the file this log writes`,
          ),
        ),
      });
      const sealed = path.join(bucketDir, segments()[1]!);
      const bytes = readFileSync(sealed);
      bytes[bytes.length - 5] = bytes[bytes.length - 5]! ^ 0x40; // rot in a durable sealed segment
      writeFileSync(sealed, bytes);
      await expect(store.compact()).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
      await store.close().catch(() => {});
    });

    it.each(['log-cleaner', 'incremental'] as const)(
      'a sealed segment: compaction (%s) finds it gone and the bucket accepts no more commits',
      async (strategy) => {
        const warnings: string[] = [];
        const { store, bucketDir, segments } = await runningWithRolledLog({
          compaction: { strategy, background: false, minDirtyRatio: 0 },
          onWarning: (m) => warnings.push(m),
        });
        unlinkSync(path.join(bucketDir, segments()[1]!));
        await expect(store.compact()).rejects.toMatchObject({
          code: 'LOG_STORAGE_ERROR',
          message: expect.stringMatching(/segment file .*\.log is gone from its folder/),
        });
        await expectStoppedByGoneFile(store);
      },
    );
  });
});
