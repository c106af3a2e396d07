/**
 * The store's commit journal (docs/recovery.md): commits of several offsets-buckets at the same
 * moment are made durable by one fdatasync of `journal/`, and their logs are written but not synced.
 * What a user relies on: every acknowledged commit survives the loss of everything the logs had not
 * synced themselves, a commit refused because the journal failed never comes back, a clean close
 * leaves no journal behind, and `commitJournal: false` keeps the one-fdatasync-per-bucket store.
 */
import {
  cpSync,
  existsSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  renameSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyLog } from '../../src/admin/index.js';
import { ManualClock, OffsetStore } from '../../src/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { JOURNAL_DIR, REFUSED_FILE, readJournal } from '../../src/log/index.js';
import { JOURNAL_FILE_BYTES } from '../../src/store-options.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { tempDir } from '../support/temp-dir.js';
import { copyStoreDir, openStore } from './store-fixtures.js';

const BUCKETS = 4;

/** One group id per offsets-bucket of `store`. */
function groupPerBucket(store: OffsetStore, buckets = BUCKETS): string[] {
  const groups: (string | undefined)[] = Array(buckets).fill(undefined);
  for (let i = 0; groups.includes(undefined); i++) {
    if (i > 10_000) throw new Error('no group for some bucket');
    groups[store.bucketFor(`g${i}`)] ??= `g${i}`;
  }
  return groups as string[];
}

/** `rounds` times, one commit per group at once (one journal round each); returns the last offset. */
async function commitTogether(store: OffsetStore, groups: string[], rounds: number, from = 0) {
  for (let r = 0; r < rounds; r++)
    await Promise.all(
      groups.map((g) =>
        store.commitOffsets(g, [
          { tableId: 1, bucketId: 0, offset: from + r },
          { tableId: 1, bucketId: 1, offset: from + r, metadata: `round ${from + r}` },
        ]),
      ),
    );
  return from + rounds - 1;
}

/**
 * A store whose groups (one per offsets-bucket) committed `rounds` times together, its files copied
 * while it ran, as a process crash leaves them: the copy, the groups and the last offset committed.
 */
async function imageOfCommits(rounds: number, from = 0) {
  const dir = tempDir();
  const store = await openStore(dir, OPTIONS);
  const groups = groupPerBucket(store);
  const last = await commitTogether(store, groups, rounds, from);
  const image = tempDir();
  copyStoreDir(dir, image);
  await store.close();
  return { image, groups, last };
}

/**
 * A file system that logs to `events`, in order: each file made (`create <file>`), its writes and
 * fdatasyncs (logged as they begin), unlinks and folder syncs.
 */
function recordingFileSystem(events: string[]): FaultyFileSystem {
  const fs = new FaultyFileSystem();
  fs.hookHandles((file, handle, flags) => {
    if (flags === 'wx') events.push(`create ${file}`);
    return {
      writev: async (buffers, position) => {
        events.push(`write ${file}`);
        return handle.writev(buffers, position);
      },
      datasync: async () => {
        events.push(`datasync ${file}`);
        return handle.datasync();
      },
    };
  });
  const unlink = fs.unlink.bind(fs);
  fs.unlink = async (file: string) => {
    events.push(`unlink ${file}`);
    return unlink(file);
  };
  const syncDir = fs.syncDir.bind(fs);
  fs.syncDir = async (folder: string) => {
    events.push(`syncDir ${folder}`);
    return syncDir(folder);
  };
  return fs;
}

/** The active (last) segment of each offsets-bucket's log, with its size now. */
function activeSegments(dir: string, buckets = BUCKETS): { file: string; bytes: number }[] {
  return Array.from({ length: buckets }, (_, i) => {
    const bucketDir = path.join(dir, 'buckets', String(i).padStart(3, '0'));
    const last = readdirSync(bucketDir)
      .filter((f) => f.endsWith('.log'))
      .sort()
      .at(-1)!;
    const file = path.join(bucketDir, last);
    return { file, bytes: statSync(file).size };
  });
}

function journalFiles(dir: string): string[] {
  const journalDir = path.join(dir, JOURNAL_DIR);
  return existsSync(journalDir) ? readdirSync(journalDir) : [];
}

/** Large segments: no roll (a roll fdatasyncs the log) during the commits. */
const OPTIONS = { bucketCount: BUCKETS, segmentBytesMax: 1 << 20 };

/**
 * A store's crash image taken after `rounds` journaled rounds (offsets 100...), and where each
 * log's file stood when the open before them had made it durable: everything written to the logs
 * after that was made durable by the journal only. The store itself is closed cleanly after the
 * image is taken (its own journal files go).
 */
async function crashImage(
  rounds: number,
  options = OPTIONS,
  before?: (store: OffsetStore, groups: string[]) => Promise<void>,
) {
  const dir = tempDir();
  let store = await openStore(dir, options);
  const groups = groupPerBucket(store, options.bucketCount);
  await commitTogether(store, groups, 2);
  await store.close();
  store = await openStore(dir, options);
  const synced = activeSegments(dir, options.bucketCount).map(({ file, bytes }) => ({
    file: path.relative(dir, file),
    bytes,
  }));
  const last = await commitTogether(store, groups, rounds, 100);
  await before?.(store, groups);
  const journalFilesOpen = journalFiles(dir).length;
  const image = tempDir();
  copyStoreDir(dir, image);
  await store.close();
  expect(journalFiles(dir)).toEqual([]);
  return {
    image,
    groups,
    last,
    journalFilesOpen,
    /** The logs' files in `image`, each with its size when its log last synced itself. */
    synced: synced.map(({ file, bytes }) => ({ file: path.join(image, file), bytes })),
    /** A power loss that kept none of the logs' unsynced writes. */
    loseUnsynced: () => {
      for (const { file, bytes } of synced) truncateSync(path.join(image, file), bytes);
    },
  };
}

/**
 * A store with a commit behind it in every bucket, reopened on a FaultyFileSystem (for the test to
 * give its plan).
 */
async function reopenedOnFaultyFs() {
  const dir = tempDir();
  const first = await openStore(dir, OPTIONS);
  const groups = groupPerBucket(first);
  await commitTogether(first, groups, 2);
  await first.close();
  const fs = new FaultyFileSystem();
  return { dir, groups, fs, store: await openStore(dir, { ...OPTIONS, fs }) };
}

/**
 * Closes `store` (one that failed too), clears `fs`'s faults, and checks that `dir` reopens with
 * every one of `groups` at `offset`.
 */
async function expectReopenedAt(
  dir: string,
  fs: FaultyFileSystem,
  store: OffsetStore,
  groups: string[],
  offset: number,
) {
  await store.close().catch(() => {});
  fs.plan = {};
  const reopened = await openStore(dir, OPTIONS);
  for (const g of groups)
    expect(await reopened.fetchOffsets(g, [{ tableId: 1, bucketId: 0 }])).toEqual([
      expect.objectContaining({ offset }),
    ]);
  await reopened.close();
}

/**
 * Zeroes the tail of the first batch in `file` from byte `from` on that crosses a sector boundary
 * less than 400 bytes before its end, from that boundary to its end (no lost sector of the kind a
 * power loss leaves: the part is too short), with a batch after it; returns where that batch ends.
 */
function damageFirstCrossing(file: string, from: number): number {
  const bytes = readFileSync(file);
  for (let at = from; at + 4 <= bytes.length;) {
    const end = at + bytes.readUInt32LE(at) + 4;
    if (end === at + 4 || end + 4 > bytes.length || bytes.readUInt32LE(end) === 0)
      throw new Error('no batch crosses a sector boundary with a batch after it');
    const boundary = Math.ceil((at + 1) / 512) * 512;
    if (boundary < end && end - boundary < 400) {
      bytes.fill(0, boundary, end);
      writeFileSync(file, bytes);
      return end;
    }
    at = end;
  }
  throw new Error('no batch crosses a sector boundary with a batch after it');
}

/**
 * A crash image (crashImage) with a lone commit after the journaled rounds: offset 5000 in bucket 0
 * of the first group, made durable by the log's own fdatasync and not in the journal.
 */
function loneCommitImage() {
  return crashImage(10, OPTIONS, async (store, groups) => {
    await store.commitOffsets(groups[0]!, [{ tableId: 1, bucketId: 0, offset: 5000 }]);
  });
}

/** Opens the store in `dir` with OPTIONS, collecting its warnings. */
async function openWarned(dir: string) {
  const warnings: string[] = [];
  const store = await openStore(dir, { ...OPTIONS, onWarning: (m) => warnings.push(m) });
  return { store, warnings };
}

describe('the commit journal of a store', () => {
  it('brings back every acknowledged commit when the logs lose all they had not synced themselves', async () => {
    const { image, groups, last, journalFilesOpen, loseUnsynced } = await crashImage(40);
    expect(journalFilesOpen).toBeGreaterThan(0);
    loseUnsynced();
    // `log verify` reads the journal as open does: nothing is missing.
    const verdict = await verifyLog(image);
    expect(verdict.problems).toEqual([]);
    expect(verdict.journal).toMatchObject({ files: 1, rounds: 40, batches: 160 });
    // A damaged round that later rounds knew durable: corruption, for verify and for open alike.
    const rotten = tempDir();
    copyStoreDir(image, rotten);
    const journalFile = path.join(rotten, JOURNAL_DIR, journalFiles(rotten)[0]!);
    const bytes = readFileSync(journalFile);
    bytes[4096 + 40]! ^= 0x01;
    writeFileSync(journalFile, bytes);
    const rottenVerdict = await verifyLog(rotten);
    expect(rottenVerdict.problems).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        reason: expect.stringContaining('round 2 is damaged'),
      }),
    ]);
    await expect(openStore(rotten, OPTIONS)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringContaining('at byte 4096: round 2 is damaged'),
    });
    // The last round cut short (never acknowledged): dropped, and said so.
    const torn = tempDir();
    copyStoreDir(image, torn);
    const tornFile = path.join(torn, JOURNAL_DIR, journalFiles(torn)[0]!);
    const tornBytes = readFileSync(tornFile);
    tornBytes[39 * 4096 + 40]! ^= 0x01;
    writeFileSync(tornFile, tornBytes);
    const warnings: string[] = [];
    // Read only, nothing is dropped (the file stays as it was), and it is said so.
    const tornView = await OffsetStore.open({
      dir: torn,
      readOnly: true,
      onWarning: (m) => warnings.push(m),
    });
    await tornView.close();
    expect(warnings).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${tornFile} at byte ${39 * 4096}: a commit-journal round cut short \\(.*\\) is not read \\(opened to read only: nothing is dropped; in a store a live process writes, a round in progress reads so\\)$`,
        ),
      ),
    ]);
    expect(readFileSync(tornFile).equals(tornBytes)).toBe(true);
    warnings.length = 0;
    const tornOpen = await openStore(torn, { ...OPTIONS, onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([
      expect.stringMatching(
        new RegExp(`${tornFile} at byte ${39 * 4096}: a commit-journal round cut short by a crash`),
      ),
    ]);
    await tornOpen.close();
    const recovered = await openStore(image, OPTIONS);
    for (const g of groups)
      expect(await recovered.fetchOffsets(g, [{ tableId: 1, bucketId: 1 }])).toEqual([
        expect.objectContaining({ offset: last, metadata: `round ${last}` }),
      ]);
    const replayed = recovered.recoveryReports().map((r) => r?.journalBatches ?? 0);
    expect(replayed).toEqual(Array(BUCKETS).fill(40));
    // Replayed into the logs and made durable there: the files read at open are gone.
    expect(journalFiles(image)).toEqual([]);
    await commitTogether(recovered, groups, 1, 1000);
    await recovered.close();
    const again = await openStore(image, OPTIONS);
    expect(await again.fetchOffsets(groups[0]!, [{ tableId: 1, bucketId: 0 }])).toEqual([
      expect.objectContaining({ offset: 1000 }),
    ]);
    await again.close();
  });

  it("refuses a log cut back below where the journal continues it (a gap between the log's end and the journal's first batch), in verify and at open, rather than serve the journal's batches after the gap", async () => {
    const { image, synced } = await crashImage(10);
    // Bucket 1's log loses its batches after the first, which it had synced itself: they are in
    // no journal round, and the journal's first batch of the bucket is past them.
    const { file } = synced[1]!;
    const first = 4 + readFileSync(file).readUInt32LE(0);
    expect(first).toBeLessThan(synced[1]!.bytes);
    truncateSync(file, first);
    const gap =
      /log offsets 1\.\.\d+ are missing: the log and the commit journal hold batches up to log offset 0, and the journal continues at \d+/;
    const verdict = await verifyLog(image);
    expect(verdict.problems).toEqual([
      expect.objectContaining({ kind: 'corrupt', reason: expect.stringMatching(gap) }),
    ]);
    await expect(openStore(image, OPTIONS)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(gap),
    });
    expect(statSync(file).size, 'nothing written').toBe(first);
  });

  it('a torn log tail whose batches the journal holds is said to be written again, not dropped as never acknowledged', async () => {
    const { image, synced } = await crashImage(10);
    // A power loss that kept 20 bytes of the first batch past the log's own last fdatasync.
    truncateSync(synced[0]!.file, synced[0]!.bytes + 20);
    const warnings: string[] = [];
    const recovered = await openStore(image, { ...OPTIONS, onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([
      expect.stringMatching(
        /^offsets-bucket 0: torn write at the end of .*; truncated 20 bytes, and wrote 10 batch\(es\) again from the commit journal, where they were durable$/,
      ),
    ]);
    expect(warnings[0]).not.toMatch(/never acknowledged/);
    await recovered.close();
  });

  it("writes journaled batches again over whatever the log's copies of them show, but not over a later batch the journal lacks", async () => {
    // A writeback of the log's pages failed in the background: a sector of batch A's tail never
    // reached the disk, the page cache dropped it and read it back as zeros, and the next batch was
    // written after A in that same sector. The log shows a damaged A with valid batches after it,
    // no lost sector of the kind a power loss leaves; the journal holds A and all after it.
    const { image, groups, last, synced } = await crashImage(10);
    damageFirstCrossing(synced[0]!.file, synced[0]!.bytes);
    const warnings: string[] = [];
    const recovered = await openStore(image, { ...OPTIONS, onWarning: (m) => warnings.push(m) });
    for (const g of groups)
      expect(await recovered.fetchOffsets(g, [{ tableId: 1, bucketId: 1 }])).toEqual([
        expect.objectContaining({ offset: last, metadata: `round ${last}` }),
      ]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^offsets-bucket 0: .*the commit journal holds .*; truncated \d+ bytes, and wrote \d+ batch\(es\) again from the commit journal, where they were durable$/,
      ),
    ]);
    await recovered.close();
  });

  it("writes the journal's copies in place of damaged batches they fill exactly, keeping a later batch the journal lacks", async () => {
    // A lone commit after the journaled rounds: made durable by the log's own fdatasync, and not
    // in the journal. Cutting the log at A would lose it; the journal's copy of A fills A's bytes
    // exactly, so A is written from it and every batch after it is kept.
    const lone = await loneCommitImage();
    const { file, bytes } = lone.synced[0]!;
    const intact = readFileSync(file);
    damageFirstCrossing(file, bytes);
    expect(readFileSync(file).equals(intact)).toBe(false);
    // The repair writes in place, cutting nothing first: when its write fails, the open fails and
    // the next one repairs.
    const failing = new FaultyFileSystem();
    failing.plan.failWritesToSuffix = '.log';
    await expect(openStore(lone.image, { ...OPTIONS, fs: failing })).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
    });
    const { store: recovered, warnings } = await openWarned(lone.image);
    expect(await recovered.fetchOffsets(lone.groups[0]!, [{ tableId: 1, bucketId: 0 }])).toEqual([
      expect.objectContaining({ offset: 5000 }),
    ]);
    for (const g of lone.groups)
      expect(await recovered.fetchOffsets(g, [{ tableId: 1, bucketId: 1 }])).toEqual([
        expect.objectContaining({ offset: lone.last, metadata: `round ${lone.last}` }),
      ]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^offsets-bucket 0: damaged batch\(es\) in .* \(byte \d+: .*filling the damaged bytes exactly.*\): wrote 1 batch\(es\) from the commit journal, where they were durable, in place of the damaged bytes, and kept the \d+ valid batch\(es\) after them; truncated \d+ bytes after those$/,
      ),
    ]);
    await recovered.close();
    // The log's file is byte for byte what was written before the damage, up to its end then.
    let end = 0;
    while (end + 4 <= intact.length && intact.readUInt32LE(end) !== 0)
      end += intact.readUInt32LE(end) + 4;
    expect(end).toBeGreaterThan(bytes);
    expect(readFileSync(file).subarray(0, end).equals(intact.subarray(0, end))).toBe(true);

    // Two lone commits: the second was written once the first's fdatasync had made every batch
    // before it durable in the log, A included, so the damage to A is damage at rest. The journal
    // still holds A (its file is retired only when full, or at a clean close): written from it.
    const atRest = await crashImage(10, OPTIONS, async (store, groups) => {
      await store.commitOffsets(groups[0]!, [{ tableId: 1, bucketId: 0, offset: 5000 }]);
      await store.commitOffsets(groups[0]!, [{ tableId: 1, bucketId: 0, offset: 5001 }]);
    });
    damageFirstCrossing(atRest.synced[0]!.file, atRest.synced[0]!.bytes);
    const { store: rested, warnings: restWarnings } = await openWarned(atRest.image);
    expect(await rested.fetchOffsets(atRest.groups[0]!, [{ tableId: 1, bucketId: 0 }])).toEqual([
      expect.objectContaining({ offset: 5001 }),
    ]);
    expect(rested.recoveryReports()[0]).toMatchObject({
      journalBatches: 1,
      keptBatches: expect.any(Number),
    });
    expect(restWarnings).toEqual([expect.stringContaining('filling the damaged bytes exactly')]);
    await rested.close();

    // Damage across two batches (the tail of one and the head of the next), read by a view open to
    // read only first: it serves everything and leaves the files as they were; then repaired.
    const across = await loneCommitImage();
    const acrossFile = across.synced[0]!;
    const acrossBytes = readFileSync(acrossFile.file);
    const firstEnd = acrossFile.bytes + acrossBytes.readUInt32LE(acrossFile.bytes) + 4;
    acrossBytes.fill(0xee, firstEnd - 100, firstEnd + 100);
    writeFileSync(acrossFile.file, acrossBytes);
    const view = await OffsetStore.open({ dir: across.image, readOnly: true, onWarning: () => {} });
    expect(await view.fetchOffsets(across.groups[0]!, [{ tableId: 1, bucketId: 0 }])).toEqual([
      expect.objectContaining({ offset: 5000 }),
    ]);
    await view.close();
    expect(readFileSync(acrossFile.file).equals(acrossBytes)).toBe(true);
    const { store: repaired, warnings: acrossWarnings } = await openWarned(across.image);
    expect(await repaired.fetchOffsets(across.groups[0]!, [{ tableId: 1, bucketId: 0 }])).toEqual([
      expect.objectContaining({ offset: 5000 }),
    ]);
    expect(repaired.recoveryReports()[0]).toMatchObject({ journalBatches: 2 });
    expect(acrossWarnings).toEqual([
      expect.stringContaining('holds this batch and the 1 after it, filling the damaged bytes'),
    ]);
    await repaired.close();

    // Bytes the journal's copies do not fill exactly (8 more than the damaged batch) are not a
    // damage it can repair: refused, as before.
    const shifted = await loneCommitImage();
    const target = shifted.synced[0]!;
    const batchEnd = damageFirstCrossing(target.file, target.bytes);
    const damaged = readFileSync(target.file);
    writeFileSync(
      target.file,
      Buffer.concat([
        damaged.subarray(0, batchEnd),
        Buffer.alloc(8, 7),
        damaged.subarray(batchEnd),
      ]),
    );
    await expect(openStore(shifted.image, OPTIONS)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringContaining('valid batch(es) follow'),
    });
  });

  it('keeps the journal when a store opened with awaitRecovery: false closes before every bucket replayed it', async () => {
    // More buckets than load at once (4): those not loading yet when close begins never load.
    const options = { ...OPTIONS, bucketCount: 8 };
    const { image, groups, last, loseUnsynced } = await crashImage(10, options);
    loseUnsynced();
    // The buckets' folders are not read until the test lets them: close comes first.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const fs = new (class extends NodeFileSystem {
      override async readdir(at: string): Promise<string[]> {
        if (at.includes(`${path.sep}buckets${path.sep}`)) await gate;
        return super.readdir(at);
      }
    })();
    const lazy = await openStore(image, { ...options, fs, awaitRecovery: false });
    const closing = lazy.close();
    release();
    await closing;
    expect(journalFiles(image).length).toBeGreaterThan(0);
    const recovered = await openStore(image, options);
    for (const g of groups)
      expect(await recovered.fetchOffsets(g, [{ tableId: 1, bucketId: 0 }])).toEqual([
        expect.objectContaining({ offset: last }),
      ]);
    await recovered.close();
  });

  it('warns, and serves and compacts, when the journal read at open cannot be deleted once every bucket replayed it', async () => {
    const { image, groups, last, loseUnsynced } = await crashImage(5);
    loseUnsynced();
    const fs = new FaultyFileSystem();
    fs.plan.failUnlinksOfSuffix = '.journal';
    const warnings: string[] = [];
    const store = await openStore(image, {
      ...OPTIONS,
      fs,
      awaitRecovery: false,
      onWarning: (m) => warnings.push(m),
    });
    await store.ready();
    expect(warnings).toEqual([
      expect.stringMatching(
        /^deleting the commit-journal files read at open \(.*\) failed; the next open reads them again: EIO/,
      ),
    ]);
    await store.compact();
    await store.close().catch(() => {}); // its own journal file cannot be deleted either
    const reopened = await openStore(image, OPTIONS);
    for (const g of groups)
      expect(await reopened.fetchOffsets(g, [{ tableId: 1, bucketId: 0 }])).toEqual([
        expect.objectContaining({ offset: last }),
      ]);
    await reopened.close();
  });

  it('is replayed whatever the options of the open: commitJournal false, durability os', async () => {
    const { image, groups, last, loseUnsynced } = await crashImage(10);
    loseUnsynced();
    for (const extra of [{ commitJournal: false }, { durability: 'os' as const }]) {
      const copy = tempDir();
      copyStoreDir(image, copy);
      const recovered = await openStore(copy, { ...OPTIONS, ...extra });
      expect(recovered.recoveryReports().map((r) => r?.journalBatches)).toEqual(
        Array(BUCKETS).fill(10),
      );
      for (const g of groups)
        expect(await recovered.fetchOffsets(g, [{ tableId: 1, bucketId: 0 }])).toEqual([
          expect.objectContaining({ offset: last }),
        ]);
      // Replayed, then deleted; this open writes no journal of its own.
      await commitTogether(recovered, groups, 2, 200);
      expect(journalFiles(copy)).toEqual([]);
      await recovered.close();
    }
  });

  it("writes the journal's batches that a log already shows over again, and fdatasyncs them, before the journal goes", async () => {
    // A log whose own fdatasync failed (EIO) may show batches in the page cache that never reached
    // the disk (the failed pages are marked clean, and later fdatasyncs write nothing): the journal's
    // copy is the only durable one, and it is deleted once recovery is done.
    const { image, synced } = await crashImage(10);
    const fs = new FaultyFileSystem();
    const writes: { file: string; position: number; bytes: number }[] = [];
    const events: string[] = [];
    fs.hookHandles((file, handle) => ({
      writev: async (buffers, position) => {
        writes.push({ file, position, bytes: buffers.reduce((n, b) => n + b.length, 0) });
        events.push(`write ${file}`);
        return handle.writev(buffers, position);
      },
      datasync: async () => {
        events.push(`datasync ${file}`);
        return handle.datasync();
      },
    }));
    const held = await readJournal(new NodeFileSystem(), image, BUCKETS, 8 << 20);
    const recovered = await openStore(image, { ...OPTIONS, fs });
    expect(recovered.recoveryReports().map((r) => r?.journalBatches ?? 0)).toEqual(
      Array(BUCKETS).fill(0),
    );
    synced.forEach(({ file: segment, bytes }, bucket) => {
      const rewritten = writes.filter((w) => w.file === segment);
      // From where the log was last synced by itself: its 10 journaled batches, then an fdatasync.
      const journaled = held.batches.get(bucket)!;
      expect(journaled).toHaveLength(10);
      expect(Math.min(...rewritten.map((w) => w.position))).toBe(bytes);
      expect(rewritten.reduce((n, w) => n + w.bytes, 0)).toBe(
        journaled.reduce((n, b) => n + b.length, 0),
      );
      expect(events.lastIndexOf(`datasync ${segment}`)).toBeGreaterThan(
        events.lastIndexOf(`write ${segment}`),
      );
    });
    expect(journalFiles(image)).toEqual([]);
    await recovered.close();
  });

  it("fdatasyncs the journal's batches it writes past a log's end before any journal file goes", async () => {
    // A power loss that kept none of the logs' unsynced writes: the journal alone holds the last
    // rounds. Recovery writes them into the logs; were the journal deleted before they are durable
    // there, a second power loss would lose acknowledged commits.
    const { image, synced, loseUnsynced } = await crashImage(10);
    loseUnsynced();
    const events: string[] = [];
    const fs = recordingFileSystem(events);
    const recovered = await openStore(image, { ...OPTIONS, fs });
    expect(recovered.recoveryReports().map((r) => r?.journalBatches)).toEqual(
      Array(BUCKETS).fill(10),
    );
    const firstJournalGone = events.findIndex(
      (e) => e.startsWith('unlink ') && e.includes(`${path.sep}journal${path.sep}`),
    );
    expect(firstJournalGone).toBeGreaterThan(0);
    for (const { file: segment } of synced) {
      const written = events.lastIndexOf(`write ${segment}`);
      expect(written, segment).toBeGreaterThanOrEqual(0);
      const durable = events.indexOf(`datasync ${segment}`, written);
      expect(durable, `${segment} fdatasynced after its journaled batches`).toBeGreaterThan(
        written,
      );
      expect(durable, `${segment} durable before the journal goes`).toBeLessThan(firstJournalGone);
      // And its folder, whose entries recovery may have changed (a torn tail cut, leftovers gone).
      const folderSynced = events.indexOf(`syncDir ${path.dirname(segment)}`, durable);
      expect(folderSynced, `${segment}'s folder synced`).toBeGreaterThan(durable);
      expect(folderSynced, `${segment}'s folder synced before the journal goes`).toBeLessThan(
        firstJournalGone,
      );
    }
    expect(journalFiles(image)).toEqual([]);
    await recovered.close();
  });

  it('syncs the journal folder after it creates a journal file, before a round in that file is made durable (a power loss could otherwise forget the file with its rounds)', async () => {
    const events: string[] = [];
    const fs = recordingFileSystem(events);
    const dir = tempDir();
    // Journal files of the smallest size (a round fills one), so that several are made.
    const store = await openStore(dir, { ...OPTIONS, fs, [JOURNAL_FILE_BYTES]: 4096 });
    await commitTogether(store, groupPerBucket(store), 6);
    await store.close();
    const journalDir = path.join(dir, JOURNAL_DIR);
    const created = events.filter((e) => e.startsWith(`create ${journalDir}${path.sep}`));
    expect(created.length, 'journal files made').toBeGreaterThan(1);
    for (const event of created) {
      const file = event.slice('create '.length);
      const at = events.indexOf(event);
      const firstSync = events.indexOf(`datasync ${file}`, at);
      expect(firstSync, `${file} made rounds durable`).toBeGreaterThan(at);
      expect(events.slice(at, firstSync), file).toContain(`syncDir ${journalDir}`);
    }
  });

  it('replays nothing twice: a crash image of a store whose logs kept everything opens the same', async () => {
    const { image, groups, last } = await imageOfCommits(10);
    const recovered = await openStore(image, OPTIONS);
    expect(recovered.recoveryReports().map((r) => r?.journalBatches ?? 0)).toEqual(
      Array(BUCKETS).fill(0),
    );
    expect(await recovered.fetchOffsets(groups[2]!, [{ tableId: 1, bucketId: 0 }])).toEqual([
      expect.objectContaining({ offset: last }),
    ]);
    await recovered.close();
  });

  it('refuses a crash image whose journal lost durable rounds, naming the way out; with journal/ moved away, as docs/recovery.md allows after a process crash, it opens from its logs with every commit', async () => {
    const { image, groups, last } = await imageOfCommits(20);
    const [file] = readdirSync(path.join(image, JOURNAL_DIR)).filter((f) => f.endsWith('.journal'));
    const journalFile = path.join(image, JOURNAL_DIR, file!);
    const bytes = readFileSync(journalFile);
    bytes.fill(0, 4096, 8192); // round 2 lost, later rounds kept
    writeFileSync(journalFile, bytes);
    await expect(openStore(image, OPTIONS)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        /round 2 is missing \(zeros\), but round \d+ .* was written once it was durable; the commits of that round may exist nowhere else: restore the store from a backup \(docs\/recovery\.md, 'A damaged journal'/,
      ),
    });
    rmSync(path.join(image, JOURNAL_DIR), { recursive: true });
    const recovered = await openStore(image, OPTIONS);
    for (const g of groups)
      expect(await recovered.fetchOffsets(g, [{ tableId: 1, bucketId: 1 }])).toEqual([
        expect.objectContaining({ offset: last, metadata: `round ${last}` }),
      ]);
    await recovered.close();
  });

  it('refuses a journal file renamed (its rounds name another file), in verify and at open, rather than dropping its rounds as torn: they may be acknowledged commits the logs lack', async () => {
    const { image, groups, last } = await imageOfCommits(10);
    const [file] = readdirSync(path.join(image, JOURNAL_DIR)).filter((f) => f.endsWith('.journal'));
    const sequence = Number(file!.slice(0, 20));
    const renamed = `${String(sequence + 1).padStart(20, '0')}.journal`;
    renameSync(path.join(image, JOURNAL_DIR, file!), path.join(image, JOURNAL_DIR, renamed));
    const refusal = new RegExp(
      `${renamed} at byte 0: round 1's header names journal file ${sequence}, not ${sequence + 1}: the file was renamed, or copied in from another journal`,
    );
    expect((await verifyLog(image)).problems).toEqual([
      expect.objectContaining({ kind: 'corrupt', reason: expect.stringMatching(refusal) }),
    ]);
    await expect(openStore(image, OPTIONS)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(refusal),
    });
    expect(readdirSync(path.join(image, JOURNAL_DIR)), 'the file is kept').toContain(renamed);
    // Under its own name again, but with its first round's sequence field damaged (a bit flipped):
    // damage, not a file put there.
    renameSync(path.join(image, JOURNAL_DIR, renamed), path.join(image, JOURNAL_DIR, file!));
    const journalFile = path.join(image, JOURNAL_DIR, file!);
    const bytes = readFileSync(journalFile);
    bytes.writeUInt8(bytes.readUInt8(12) ^ 0x40, 12);
    writeFileSync(journalFile, bytes);
    await expect(openStore(image, OPTIONS)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        /round 1 is damaged \(round of another journal file \(\d+\), damaged\), but round \d+ .* was written once it was durable/,
      ),
    });
    bytes.writeUInt8(bytes.readUInt8(12) ^ 0x40, 12);
    writeFileSync(journalFile, bytes);
    // Whole again, every commit is there.
    const recovered = await openStore(image, OPTIONS);
    for (const g of groups)
      expect(await recovered.fetchOffsets(g, [{ tableId: 1, bucketId: 1 }])).toEqual([
        expect.objectContaining({ offset: last }),
      ]);
    await recovered.close();
  });

  it("refuses another store's journal copied in, whose batches contradict the logs' active segments, writing nothing, in verify and at open", async () => {
    const mine = (await imageOfCommits(10)).image;
    const other = (await imageOfCommits(20, 1000)).image;
    rmSync(path.join(mine, JOURNAL_DIR), { recursive: true });
    cpSync(path.join(other, JOURNAL_DIR), path.join(mine, JOURNAL_DIR), { recursive: true });
    const logs = () =>
      activeSegments(mine).map(({ file }) => readFileSync(file).toString('base64'));
    const before = logs();
    const refusal = {
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        /batch \d+: the commit journal holds another batch at this log offset of the active segment, which nothing rewrites/,
      ),
    };
    const verdict = await verifyLog(mine);
    expect(verdict.problems.map((p) => p.reason)).toEqual(
      Array(BUCKETS).fill(
        expect.stringMatching(/the commit journal holds another batch at this log offset/),
      ),
    );
    await expect(openStore(mine, OPTIONS)).rejects.toMatchObject(refusal);
    expect(logs(), "the other store's batches were not appended").toEqual(before);
    // Moved aside, the store opens from its own logs, with its own commits.
    rmSync(path.join(mine, JOURNAL_DIR), { recursive: true });
    const recovered = await openStore(mine, OPTIONS);
    for (const g of groupPerBucket(recovered))
      expect(await recovered.fetchOffsets(g, [{ tableId: 1, bucketId: 0 }])).toEqual([
        expect.objectContaining({ offset: 9 }),
      ]);
    await recovered.close();
  });

  it('drops the rounds the record of refused rounds names, in verify and at open, and deletes the record', async () => {
    const { image, groups, loseUnsynced } = await crashImage(40);
    loseUnsynced();
    // What a journal whose erase of refused rounds failed leaves: rounds 31-40 intact in the file,
    // and the record naming round 31.
    const name = journalFiles(image).find((n) => n.endsWith('.journal'))!;
    const journalFile = path.join(image, JOURNAL_DIR, name);
    const position = 30 * 4096;
    const header = readFileSync(journalFile).subarray(position, position + 28);
    expect(header.readUInt32LE(16)).toBe(31);
    const record = path.join(image, JOURNAL_DIR, REFUSED_FILE);
    writeFileSync(
      record,
      JSON.stringify({ file: name, position, round: 31, checksum: header.readUInt32LE(4) }),
    );
    const verdict = await verifyLog(image);
    expect(verdict.problems).toEqual([]);
    expect(verdict.journal).toMatchObject({
      rounds: 30,
      refusedFrom: { file: journalFile, position },
    });
    const reopened = await openStore(image, OPTIONS);
    for (const g of groups)
      expect(await reopened.fetchOffsets(g, [{ tableId: 1, bucketId: 1 }])).toEqual([
        expect.objectContaining({ offset: 129, metadata: 'round 129' }),
      ]);
    expect(existsSync(record)).toBe(false);
    await reopened.close();
  });

  it('keeps every refused round recorded while a lazily opened store replays an earlier journal, and its own journal fails too', async () => {
    /** A file system whose journal fdatasync fails once armed, and every journal write after it. */
    const failingJournal = () => {
      const fs = new FaultyFileSystem();
      const control = { armed: false, failing: false };
      const eio = (what: string) =>
        Object.assign(new Error(`EIO: injected ${what}`), { code: 'EIO' });
      fs.hookHandles((file, handle) => ({
        async datasync() {
          if (control.armed && file.endsWith('.journal')) {
            control.armed = false;
            control.failing = true;
            throw eio('fdatasync failure');
          }
          return handle.datasync();
        },
        async writev(buffers, position) {
          if (control.failing && file.endsWith('.journal')) throw eio('write failure');
          return handle.writev(buffers, position);
        },
      }));
      return { fs, control };
    };
    const offsetsOf = async (store: OffsetStore, groups: string[]) =>
      Promise.all(
        groups.map(
          async (g) => (await store.fetchOffsets(g, [{ tableId: 1, bucketId: 0 }]))[0]?.offset,
        ),
      );
    const dir = tempDir();
    const first = await openStore(dir, OPTIONS);
    const groups = groupPerBucket(first);
    await first.close();
    // Process A: a round refused, its erase failed: the record names it.
    const a = failingJournal();
    const storeA = await openStore(dir, { ...OPTIONS, fs: a.fs });
    await commitTogether(storeA, groups, 3);
    a.control.armed = true;
    const refusedA = await Promise.allSettled(
      groups.map((g) => storeA.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset: 777 }])),
    );
    expect(refusedA.every((r) => r.status === 'rejected')).toBe(true);
    await storeA.close().catch(() => {});
    // Process B, opened while bucket 3 is slow to recover: A's file waits for it, and B's own
    // journal refuses a round too.
    const b = failingJournal();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const readdir = b.fs.readdir.bind(b.fs);
    b.fs.readdir = async (at: string) => {
      if (at.endsWith(`${path.sep}buckets${path.sep}003`)) await gate;
      return readdir(at);
    };
    const storeB = await openStore(dir, { ...OPTIONS, fs: b.fs, awaitRecovery: false });
    while ((await storeB.stats()).buckets.filter((x) => x.state === 'ready').length < 3)
      await new Promise((resolve) => setTimeout(resolve, 5));
    b.control.armed = true;
    const refusedB = await Promise.allSettled(
      groups
        .slice(0, 3)
        .map((g) => storeB.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset: 888 }])),
    );
    expect(refusedB.every((r) => r.status === 'rejected')).toBe(true);
    const record = path.join(dir, JOURNAL_DIR, REFUSED_FILE);
    expect(JSON.parse(readFileSync(record, 'utf8')).refused).toHaveLength(2);
    // A crash of B now: neither process's refused commits come back.
    const crashed = tempDir();
    copyStoreDir(dir, crashed);
    const afterCrash = await openStore(crashed, OPTIONS);
    expect(await offsetsOf(afterCrash, groups)).toEqual([2, 2, 2, 2]);
    await afterCrash.close();
    // B's bucket 3 recovers: A's files go, and only A's entry with them.
    release();
    await storeB.ready();
    expect(JSON.parse(readFileSync(record, 'utf8')).refused).toEqual([
      expect.objectContaining({ round: 1 }),
    ]);
    await storeB.close().catch(() => {});
    const reopened = await openStore(dir, OPTIONS);
    expect(await offsetsOf(reopened, groups)).toEqual([2, 2, 2, 2]);
    await reopened.close();
    expect(existsSync(record)).toBe(false);
  });

  it('refuses the commits of a round whose journal fdatasync failed, and they never come back', async () => {
    const { dir, groups, fs, store } = await reopenedOnFaultyFs();
    fs.plan.failNextDatasyncOfSuffix = '.journal';
    const results = await Promise.allSettled(
      groups.map((g) => store.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset: 99 }])),
    );
    expect(results.map((r) => r.status)).toEqual(Array(BUCKETS).fill('rejected'));
    for (const result of results)
      expect((result as PromiseRejectedResult).reason).toMatchObject({
        code: 'LOG_STORAGE_ERROR',
        // The code once: the causes quoted in it without theirs.
        message: expect.stringMatching(
          /^LOG_STORAGE_ERROR: (?!.*LOG_STORAGE_ERROR).*EIO: injected fdatasync failure/,
        ),
      });
    await expectReopenedAt(dir, fs, store, groups, 1);
  });

  it('refuses, once the journal has failed, a commit of a bucket that was not in the failed round and now writes alone', async () => {
    const { dir, groups, fs, store } = await reopenedOnFaultyFs();
    fs.plan.failNextDatasyncOfSuffix = '.journal';
    const failed = await Promise.allSettled(
      groups
        .slice(0, 2)
        .map((g) => store.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset: 99 }])),
    );
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    // Alone, it would fdatasync its own log and skip the journal: the device just failed, and the
    // store said it takes no more commits until reopened.
    await expect(
      store.commitOffsets(groups[2]!, [{ tableId: 1, bucketId: 0, offset: 99 }]),
    ).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
      message: expect.stringContaining('the store accepts no more commits until reopened'),
    });
    await expectReopenedAt(dir, fs, store, groups, 1);
  });

  it("acknowledges a round the journal made durable although a log's own write failed, and recovers it", async () => {
    const { dir, groups, fs, store } = await reopenedOnFaultyFs();
    fs.plan.failWritesToSuffix = '.log';
    await Promise.all(
      groups.map((g) => store.commitOffsets(g, [{ tableId: 1, bucketId: 0, offset: 77 }])),
    );
    // The logs stopped: later commits are refused until the store is reopened.
    await expect(
      store.commitOffsets(groups[0]!, [{ tableId: 1, bucketId: 0, offset: 78 }]),
    ).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    await store.close().catch(() => {});
    expect(journalFiles(dir).length).toBeGreaterThan(0);
    fs.plan = {};
    const reopened = await openStore(dir, OPTIONS);
    for (const g of groups)
      expect(await reopened.fetchOffsets(g, [{ tableId: 1, bucketId: 0 }])).toEqual([
        expect.objectContaining({ offset: 77 }),
      ]);
    await reopened.close();
  });

  it('closes without a warning while full journal files are being retired', async () => {
    // Every round fills a file (the smallest file size), so each close meets a retirement whose
    // logs the close is closing: their close makes them durable, which is all it waits for.
    for (let attempt = 0; attempt < 5; attempt++) {
      const warnings: string[] = [];
      const dir = tempDir();
      const store = await OffsetStore.open({
        dir,
        bucketCount: BUCKETS,
        [JOURNAL_FILE_BYTES]: 4096,
        onWarning: (m) => warnings.push(m),
      });
      await commitTogether(store, groupPerBucket(store), 20);
      await store.close();
      expect(warnings).toEqual([]);
      expect(
        readdirSync(path.join(dir, JOURNAL_DIR)).filter((n) => n.endsWith('.journal')),
      ).toEqual([]);
    }
  });

  it('starts a new file when its file is removed while the store runs, once the logs synced what they wrote into it', async () => {
    const dir = tempDir();
    const fs = new FaultyFileSystem();
    const clock = new ManualClock();
    const warnings: string[] = [];
    const store = await OffsetStore.open({
      dir,
      fs,
      clock,
      ...OPTIONS,
      onWarning: (m) => warnings.push(m),
    });
    const groups = groupPerBucket(store);
    await commitTogether(store, groups, 5);
    const [removed, ...others] = journalFiles(dir).filter((n) => n.endsWith('.journal'));
    expect(others).toEqual([]);
    rmSync(path.join(dir, JOURNAL_DIR, removed!));
    const syncsBefore = fs.datasyncCount;
    clock.advance(60_000); // offsetsRetentionCheckIntervalMs: the check runs with each pass
    for (let i = 0; i < 200 && warnings.length === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(warnings).toEqual([
      expect.stringMatching(
        new RegExp(`journal file .*${removed} was removed while the store ran: .*a new file`),
      ),
    ]);
    expect(fs.datasyncCount - syncsBefore, 'each log synced what it wrote').toBeGreaterThanOrEqual(
      BUCKETS,
    );
    const last = await commitTogether(store, groups, 5, 100);
    const now = journalFiles(dir).filter((n) => n.endsWith('.journal'));
    expect(now.length).toBe(1);
    expect(now[0]).not.toBe(removed);
    await store.close();
    expect(warnings.length, 'no warning about the removed file when it is retired').toBe(1);
    const reopened = await OffsetStore.open({ dir, ...OPTIONS });
    for (const g of groups)
      expect((await reopened.fetchOffsets(g)).map((r) => r?.offset)).toEqual([last, last]);
    await reopened.close();
  });

  it('is not used with commitJournal: false, nor with durability os', async () => {
    for (const extra of [{ commitJournal: false }, { durability: 'os' as const }]) {
      const dir = tempDir();
      const store = await openStore(dir, { bucketCount: BUCKETS, ...extra });
      await commitTogether(store, groupPerBucket(store), 5);
      expect(journalFiles(dir)).toEqual([]);
      await store.close();
    }
    await expect(
      openStore(tempDir(), { commitJournal: 'yes' as unknown as boolean }),
    ).rejects.toThrow(/options.commitJournal must be a boolean, got string/);
  });
});
