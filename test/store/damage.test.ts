/**
 * A store over damaged files: a torn tail is truncated with a warning naming file and position; a
 * corrupt sealed segment refuses to open (CORRUPT_MESSAGE naming the file), or, with
 * awaitRecovery: false, fails only its own offsets-bucket while the others serve.
 */
import { appendFileSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OffsetStore } from '../../src/index.js';
import { verifyLog } from '../../src/admin/index.js';
import { buildGroupSnapshotBatch, loadChecksum, sealBatch } from '../../src/codec/index.js';
import type { FileHandle, OpenFlags } from '../../src/io/index.js';
import { ManualClock } from '../../src/util/clock.js';
import { markCrashed } from '../support/crashed-manifest.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { tempDir } from '../support/temp-dir.js';

async function storeWithTwoGroups(dir: string): Promise<{ damaged: string; healthy: string }> {
  const store = await OffsetStore.open({ dir, bucketCount: 4, segmentBytesMax: 1024 });
  const groups = Array.from({ length: 40 }, (_, i) => `group-${i}`);
  const damaged = groups[0]!;
  const healthy = groups.find((g) => store.bucketFor(g) !== store.bucketFor(damaged))!;
  for (let i = 0; i < 60; i++) {
    await store.commitOffsets(damaged, [{ tableId: 1, bucketId: i % 4, offset: i }]);
    await store.commitOffsets(healthy, [{ tableId: 1, bucketId: i % 4, offset: i }]);
  }
  await store.close();
  return { damaged, healthy };
}

function bucketDir(dir: string, bucket: number): string {
  return path.join(dir, 'buckets', String(bucket).padStart(3, '0'));
}

/** The segment files of a bucket, in log order. */
function segmentNames(dir: string, bucket: number): string[] {
  return readdirSync(bucketDir(dir, bucket))
    .filter((f) => f.endsWith('.log'))
    .sort();
}

/** Flips a bit inside the first batch of a bucket's first (sealed) segment; its path and new bytes. */
function damageFirstSegment(dir: string, bucket: number): { file: string; bytes: Buffer } {
  const file = path.join(bucketDir(dir, bucket), segmentNames(dir, bucket)[0]!);
  const bytes = readFileSync(file);
  bytes[60]! ^= 0x40;
  writeFileSync(file, bytes);
  return { file, bytes };
}

describe('a store over damaged files', () => {
  it('truncates a torn tail with a warning naming the file, and keeps every complete commit', async () => {
    const dir = tempDir();
    const { damaged } = await storeWithTwoGroups(dir);
    const probe = await OffsetStore.open({ dir });
    const bucket = probe.bucketFor(damaged);
    await probe.close();
    const segments = segmentNames(dir, bucket);
    appendFileSync(
      path.join(bucketDir(dir, bucket), segments.at(-1)!),
      Buffer.from([0x30, 0, 0, 0, 1, 2, 3]),
    );
    const warnings: string[] = [];
    const store = await OffsetStore.open({ dir, onWarning: (m) => warnings.push(m) });
    expect(warnings.join('\n')).toMatch(
      new RegExp(
        `offsets-bucket ${bucket}: torn write at the end of .*${segments.at(-1)!.replace('.', '\\.')} .*truncated 7 bytes`,
      ),
    );
    expect(store.recoveryReports()[bucket]!.bytesTruncated).toBe(7);
    expect((await store.fetchOffsets(damaged)).map((o) => o!.offset).sort((a, b) => a - b)).toEqual(
      [56, 57, 58, 59],
    );
    await store.close();
  });

  it("refuses to open when a bucket's folder holds another bucket's data (folders swapped), naming both buckets and a group", async () => {
    const dir = tempDir();
    const { damaged, healthy } = await storeWithTwoGroups(dir);
    const probe = await OffsetStore.open({ dir });
    const [a, b] = [probe.bucketFor(damaged), probe.bucketFor(healthy)];
    await probe.close();
    renameSync(bucketDir(dir, a), path.join(dir, 'moved-aside'));
    renameSync(bucketDir(dir, b), bucketDir(dir, a));
    renameSync(path.join(dir, 'moved-aside'), bucketDir(dir, b));
    await expect(OffsetStore.open({ dir })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        new RegExp(
          `offsets-bucket (${a} holds group .* lives in offsets-bucket ${b}|${b} holds group .* lives in offsets-bucket ${a})`,
        ),
      ),
    });
    const report = await verifyLog(dir);
    expect(report.ok).toBe(false);
    expect(report.problems.map((p) => p.reason).join('\n')).toMatch(
      /group .* lives in offsets-bucket .*this bucket's files hold another bucket's data/,
    );
    // Put back, the store opens with every offset, and log verify finds nothing.

    renameSync(bucketDir(dir, a), path.join(dir, 'moved-aside'));
    renameSync(bucketDir(dir, b), bucketDir(dir, a));
    renameSync(path.join(dir, 'moved-aside'), bucketDir(dir, b));
    expect((await verifyLog(dir)).ok).toBe(true);
    const store = await OffsetStore.open({ dir });
    expect((await store.fetchOffsets(healthy)).length).toBe(4);
    await store.close();
  });

  it('records the end a bucket recovered to before it serves, even when another bucket fails to open (awaitRecovery: false)', async () => {
    const dir = tempDir();
    const { damaged, healthy } = await storeWithTwoGroups(dir);
    const probe = await OffsetStore.open({ dir });
    const [bad, good] = [probe.bucketFor(damaged), probe.bucketFor(healthy)];
    const goodEnd = (await probe.stats()).buckets[good]!.nextLogOffset;
    await probe.close();
    // As a crash leaves it: the recorded ends are lower bounds, the healthy bucket's far behind its log.
    const manifestPath = path.join(dir, 'store.json');
    await markCrashed(dir, (m) => {
      m.buckets[good]!.logEnd = 0;
    });
    damageFirstSegment(dir, bad);
    const store = await OffsetStore.open({ dir, awaitRecovery: false });
    await expect(store.ready()).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
    expect((await store.fetchOffsets(healthy)).length).toBe(4);
    expect(JSON.parse(readFileSync(manifestPath, 'utf8')).buckets[good].logEnd).toBe(goodEnd);
    // Which table ids are in use, the store cannot tell without the failed bucket: it says so.
    await expect(store.highestTableId()).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        new RegExp(
          `cannot tell the highest table id in use: offsets-bucket ${bad} .*failed to open`,
        ),
      ),
    });
    await store.close();
  });

  it('a bucket that wrote while another bucket failed the open (awaitRecovery) opens the next time with what it wrote (it was refused as having lost batches)', async () => {
    const dir = tempDir();
    const { damaged, healthy } = await storeWithTwoGroups(dir);
    const clock = new ManualClock();
    const setup = await OffsetStore.open({ dir, clock });
    const [bad, good] = [setup.bucketFor(damaged), setup.bucketFor(healthy)];
    // A member in the healthy bucket: its session expires on the clock once the bucket is loaded.
    await setup.heartbeat(healthy, { memberEpoch: 0, subscribedTableIds: [1] });
    await setup.close();
    const { file, bytes } = damageFirstSegment(dir, bad);
    // The damaged bucket's files open only once the healthy bucket has loaded and its timer wrote.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const fs = new (class extends FaultyFileSystem {
      override async open(p: string, flags: OpenFlags, mode?: number): Promise<FileHandle> {
        if (p.startsWith(bucketDir(dir, bad) + path.sep)) await released;
        return super.open(p, flags, mode);
      }
    })();
    const opening = OffsetStore.open({ dir, clock, fs });
    const failed = expect(opening).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringContaining(`${file}`),
    });
    while (clock.pendingTimerCount === 0) await new Promise((r) => setTimeout(r, 5));
    // Segments are preallocated (zeros past the end): the snapshot shows as bytes no longer zero.
    const written = () =>
      segmentNames(dir, good).reduce(
        (n, f) =>
          n + readFileSync(path.join(bucketDir(dir, good), f)).filter((b) => b !== 0).length,
        0,
      );
    const before = written();
    clock.advance(10 * 60_000); // the member's session expires: the group's snapshot is written
    while (written() === before) await new Promise((r) => setTimeout(r, 5));
    release();
    await failed;
    // Repaired, the store opens, the healthy bucket with what it wrote.
    bytes[60]! ^= 0x40;
    writeFileSync(file, bytes);
    const store = await OffsetStore.open({ dir, clock });
    expect((await store.fetchOffsets(healthy)).length).toBe(4);
    expect((await store.describeGroup(healthy)).members).toEqual([]);
    await store.close();
  });

  it('refuses a group snapshot that holds its checksum but cannot be loaded, naming the bucket and the group; log verify finds it too', async () => {
    await loadChecksum();
    const dir = tempDir();
    const store = await OffsetStore.open({ dir, bucketCount: 1 });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    await store.close();
    await markCrashed(dir);
    const batch = buildGroupSnapshotBatch(
      'g',
      { groupEpoch: 1, assignmentEpoch: 5, tableLayouts: [], members: [] },
      Date.now(),
    );
    sealBatch(batch, 1, 0, 0);
    const segment = path.join(bucketDir(dir, 0), '00000000000000000000.log');
    appendFileSync(segment, batch);
    await expect(OffsetStore.open({ dir })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        /offsets-bucket 0 \(.*\): the last snapshot of group "g" cannot be loaded .*assignmentEpoch 5 > groupEpoch 1/,
      ),
    });
    const report = await verifyLog(dir);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        bucket: 0,
        file: segment,
        reason: expect.stringMatching(/batch 1: the last snapshot of group "g" cannot be loaded/),
      }),
    ]);
  });

  it('refuses to open over a corrupt sealed segment, or with awaitRecovery: false fails only that bucket', async () => {
    const dir = tempDir();
    const { damaged, healthy } = await storeWithTwoGroups(dir);
    const probe = await OffsetStore.open({ dir });
    const bucket = probe.bucketFor(damaged);
    await probe.close();
    const { file: first, bytes } = damageFirstSegment(dir, bucket);
    await expect(OffsetStore.open({ dir })).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringContaining(first),
    });
    const store = await OffsetStore.open({ dir, awaitRecovery: false });
    await expect(store.ready()).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
    expect((await store.fetchOffsets(healthy)).length).toBe(4);
    await expect(store.fetchOffsets(damaged)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      retriable: false,
    });
    await expect(
      store.commitOffsets(damaged, [{ tableId: 1, bucketId: 0, offset: 1 }]),
    ).rejects.toMatchObject({ code: 'CORRUPT_MESSAGE' });
    // A listing without the failed bucket would hide its groups, and retrying cannot help.
    await expect(store.listGroups()).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      retriable: false,
    });
    expect(readFileSync(first).equals(bytes), 'a refused bucket is left untouched').toBe(true);
    await store.close();
  });
});
