/**
 * The commit journal on its own (src/log/commit-journal.ts): rounds of several logs share one
 * fdatasync, a round of one log alone is left to that log, files rotate and are deleted only once
 * every log that wrote into them has synced itself, and reading refuses a damaged durable round while
 * dropping a round a crash cut short.
 */
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadChecksum, readBatchLogOffset, xxh32 } from '../../src/codec/index.js';
import {
  NodeFileSystem,
  type FileHandle,
  type FileSystem,
  type OpenFlags,
} from '../../src/io/index.js';
import {
  CommitJournal,
  JOURNAL_DIR,
  REFUSED_FILE,
  deleteJournalFiles,
  forgetJournalProcessState,
  readJournal,
  readJournalForRecovery,
} from '../../src/log/index.js';
import { batchAt, fakeLog, writeTwoFullJournalFiles } from '../support/journal-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

beforeAll(() => loadChecksum());

const BATCH_BYTES_MAX = 8 * 1024 * 1024;

/** A journal of a 4-bucket store in `dir`, on the real file system unless told otherwise. */
function openJournal(
  dir: string,
  {
    fs = new NodeFileSystem(),
    syncBucket = async () => {},
    onWarning = () => {},
    fileBytesMax,
  }: {
    fs?: FileSystem;
    syncBucket?: (bucket: number) => Promise<void>;
    onWarning?: (message: string) => void;
    fileBytesMax?: number;
  } = {},
) {
  return CommitJournal.open(fs, dir, 4, BATCH_BYTES_MAX, syncBucket, onWarning, fileBytesMax);
}

/**
 * Changes the header of the round at `position` with `change` (given the round's bytes) and seals
 * it again: the checksum covers the header from byte 8 and, per entry, its bucket index (4 bytes)
 * and the first 9 bytes of its batch (length, magic and checksum), as the format says.
 */
function resealRound(bytes: Buffer, position: number, change: (round: Buffer) => void): void {
  change(bytes.subarray(position));
  const count = bytes.readUInt32LE(position + 20);
  const parts = [bytes.subarray(position + 8, position + 28)];
  let at = position + 28;
  for (let i = 0; i < count; i++) {
    parts.push(bytes.subarray(at, at + 13));
    at += 4 + 4 + bytes.readUInt32LE(at + 4);
  }
  bytes.writeUInt32LE(xxh32(Buffer.concat(parts)), position + 4);
}

function journalFiles(dir: string): string[] {
  const journalDir = path.join(dir, JOURNAL_DIR);
  return existsSync(journalDir) ? readdirSync(journalDir).sort() : [];
}

/**
 * The real file system with hooks before each write and fdatasync of a journal file, and after each
 * fdatasync succeeded (no datasyncNow).
 */
function hookedFs(hooks: {
  beforeJournalWrite?: (count: number) => Promise<void> | void;
  beforeJournalSync?: (count: number) => Promise<void> | void;
  afterJournalSync?: (count: number) => void;
}): FileSystem {
  const inner = new NodeFileSystem();
  let writes = 0;
  let syncs = 0;
  return Object.assign(Object.create(inner) as FileSystem, {
    open: async (file: string, flags: OpenFlags) => {
      const handle = await inner.open(file, flags);
      if (!file.endsWith('.journal')) return handle;
      return {
        path: handle.path,
        read: handle.read.bind(handle),
        truncate: handle.truncate.bind(handle),
        sizeBytes: handle.sizeBytes.bind(handle),
        close: handle.close.bind(handle),
        writev: async (buffers: readonly Buffer[], position: number) => {
          await hooks.beforeJournalWrite?.(++writes);
          return handle.writev(buffers, position);
        },
        datasync: async () => {
          const n = ++syncs;
          await hooks.beforeJournalSync?.(n);
          await handle.datasync();
          hooks.afterJournalSync?.(n);
        },
      } satisfies FileHandle;
    },
  });
}

/** The real file system, where a journal round's fdatasync fails and then so does the write erasing it. */
function eraseFailingFs(): FileSystem {
  return hookedFs({
    beforeJournalSync: (n) => {
      if (n === 1) throw eio();
    },
    beforeJournalWrite: (n) => {
      if (n === 2) throw eio();
    },
  });
}

/** A crashed journal of two files written by one process, in a directory of its own. */
async function twoFullFiles(): Promise<{ dir: string; first: string; second: string }> {
  const dir = tempDir();
  return { dir, ...(await writeTwoFullJournalFiles(dir)) };
}

/** Commits one batch for each of two buckets (one round), and how each commit settled. */
function oneRound(journal: CommitJournal) {
  return Promise.allSettled([
    journal.commit(0, [batchAt(0)], fakeLog()),
    journal.commit(1, [batchAt(0)], fakeLog()),
  ]);
}

/**
 * A point an operation waits at: `arrived` resolves when it gets there, and the test lets it go on
 * (`open`) or fail (`fail`).
 */
function gate() {
  let arrive!: () => void;
  let release!: (error?: unknown) => void;
  const arrived = new Promise<void>((resolve) => (arrive = resolve));
  const released = new Promise<unknown>((resolve) => (release = resolve));
  return {
    arrived,
    reached: async () => {
      arrive();
      const error = await released;
      if (error !== undefined) throw error;
    },
    open: () => release(),
    fail: (error: unknown) => release(error),
  };
}

/** Waits (up to 10 s) until none of `states()` is pending. */
async function settled(states: () => string[]): Promise<void> {
  for (let waited = 0; states().includes('pending') && waited < 10_000; waited += 5) await sleep(5);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const eio = () => Object.assign(new Error('EIO: injected fdatasync failure'), { code: 'EIO' });

/**
 * Two rounds of two buckets each, the second submitted once the first is written (and so while it
 * is in flight); returns a function that tells what has become of the four commits so far.
 */
async function twoRounds(
  journal: CommitJournal,
  logs = [fakeLog(), fakeLog(), fakeLog(), fakeLog()],
): Promise<() => string[]> {
  const first = track([
    journal.commit(0, [batchAt(0)], logs[0]!),
    journal.commit(1, [batchAt(0)], logs[1]!),
  ]);
  // The first round written (its logs write their copies right after the journal's write).
  for (let waited = 0; logs[0]!.writes === 0 && waited < 10_000; waited++) await sleep(1);
  const second = track([
    journal.commit(2, [batchAt(0)], logs[2]!),
    journal.commit(3, [batchAt(0)], logs[3]!),
  ]);
  return () => [...first, ...second];
}

/** An fdatasync of a journal file held by errseqSyncs: the test makes it check, then return. */
interface HeldSync {
  /** Ends the real fdatasync's wait and checks for a writeback error: 'EIO' or 'ok'. */
  check(): Promise<'EIO' | 'ok'>;
  /** Returns the outcome to the journal, and waits for the journal's turns after it. */
  deliver(): Promise<void>;
}

/**
 * The real file system, with Linux's reporting of writeback errors modelled for journal files
 * (errseq_t): `failWriteback()` records an error in the file, and the first fdatasync through each
 * descriptor that checks after it reports it (EIO), later ones through that descriptor succeed.
 * The first `holding` fdatasyncs of journal files are held (later ones run through): `arrivals()`
 * gives them in the order they were called, and the test chooses when each checks and when its
 * outcome reaches the journal.
 */
function errseqSyncs(holding: number) {
  const inner = new NodeFileSystem();
  let errors = 0;
  let calls = 0;
  const held: HeldSync[] = [];
  let arrived = () => {};
  const fs: FileSystem = Object.assign(Object.create(inner) as FileSystem, {
    open: async (file: string, flags: OpenFlags) => {
      const handle = await inner.open(file, flags);
      if (!file.endsWith('.journal')) return handle;
      let seen = errors;
      return {
        path: handle.path,
        read: handle.read.bind(handle),
        truncate: handle.truncate.bind(handle),
        sizeBytes: handle.sizeBytes.bind(handle),
        close: handle.close.bind(handle),
        writev: handle.writev.bind(handle),
        datasync: async () => {
          calls++;
          await handle.datasync();
          if (held.length >= holding) {
            const failed = seen < errors;
            seen = errors;
            if (failed) throw eio();
            return;
          }
          let checked!: (outcome: 'EIO' | 'ok') => void;
          let delivered!: () => void;
          const checkNow = new Promise<'EIO' | 'ok'>((resolve) => (checked = resolve));
          const deliverNow = new Promise<void>((resolve) => (delivered = resolve));
          let check!: () => void;
          const mayCheck = new Promise<void>((resolve) => (check = resolve));
          held.push({
            check: () => (check(), checkNow),
            deliver: async () => {
              delivered();
              for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
            },
          });
          arrived();
          await mayCheck;
          const failed = seen < errors;
          seen = errors;
          checked(failed ? 'EIO' : 'ok');
          await deliverNow;
          if (failed) throw eio();
        },
      } satisfies FileHandle;
    },
  });
  return {
    fs,
    failWriteback: () => void errors++,
    /** fdatasyncs of journal files called so far, held or not. */
    calls: () => calls,
    arrivals: async (): Promise<HeldSync[]> => {
      while (held.length < holding) await new Promise<void>((resolve) => (arrived = resolve));
      return held;
    },
  };
}

/**
 * A journal on errseqSyncs(2) with two rounds in flight (twoRounds) whose fdatasyncs are both held:
 * `first` and `second`, in the order they were called.
 */
async function twoHeldRounds() {
  const dir = tempDir();
  const syncs = errseqSyncs(2);
  const { journal } = await openJournal(dir, { fs: syncs.fs });
  const states = await twoRounds(journal);
  const [first, second] = await syncs.arrivals();
  return { dir, journal, states, syncs, first: first!, second: second! };
}

/** What became of each commit: 'pending', 'ack' or 'refused'. */
function track(promises: Promise<unknown>[]): string[] {
  const states = promises.map(() => 'pending');
  promises.forEach((p, i) =>
    p.then(
      () => (states[i] = 'ack'),
      () => (states[i] = 'refused'),
    ),
  );
  return states;
}

/**
 * A journal whose file is removed after a round of buckets 0 and 1, and whose next writes wait until
 * it warns (its check found the file gone). `writing` resolves once such a write has begun.
 */
async function removedWhileWriting(syncBucket?: (bucket: number) => Promise<void>) {
  const dir = tempDir();
  let hold: Promise<void> | undefined;
  let journalWrites = 0;
  let release = () => {};
  const fs = hookedFs({
    beforeJournalWrite: async () => {
      journalWrites++;
      if (hold !== undefined) await hold;
    },
  });
  const { journal } = await openJournal(dir, {
    fs,
    ...(syncBucket === undefined ? {} : { syncBucket }),
    onWarning: () => release(),
  });
  await Promise.all([
    journal.commit(0, [batchAt(0)], fakeLog()),
    journal.commit(1, [batchAt(0)], fakeLog()),
  ]);
  const [file] = journalFiles(dir).filter((name) => name.endsWith('.journal'));
  rmSync(path.join(dir, JOURNAL_DIR, file!));
  hold = new Promise((resolve) => (release = resolve));
  const before = journalWrites;
  const writing = async () => {
    while (journalWrites === before) await new Promise((resolve) => setTimeout(resolve, 1));
  };
  return { journal, writing };
}

describe('the commit journal', () => {
  it('makes rounds of several logs durable with its own fdatasync, and leaves a lone round to its log', async () => {
    const dir = tempDir();
    const { journal, contents } = await openJournal(dir);
    expect(contents.files).toEqual([]);
    const [a, b] = [fakeLog(), fakeLog()];
    // Two logs in the same turn: one round of the journal; each log writes its copy, syncs nothing.
    const together = await Promise.all([
      journal.commit(0, [batchAt(0)], a),
      journal.commit(1, [batchAt(0), batchAt(1)], b),
    ]);
    expect(together).toEqual([{ ownSync: false }, { ownSync: false }]);
    expect([a.writes, a.syncs, b.writes, b.syncs]).toEqual([1, 0, 1, 0]);
    // One log alone: its own write and fdatasync, nothing in the journal.
    expect(await journal.commit(0, [batchAt(1)], a)).toEqual({ ownSync: true });
    expect([a.writes, a.syncs]).toEqual([2, 1]);
    const read = await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX);
    expect(read.rounds).toBe(1);
    expect(read.batches.get(0)!.map((x) => readBatchLogOffset(x))).toEqual([0]);
    expect(read.batches.get(1)!.map((x) => readBatchLogOffset(x))).toEqual([0, 1]);
    // A clean close (every log closed) deletes the files; otherwise they stay for the next open.
    await journal.close(true);
    expect(journalFiles(dir)).toEqual([]);
  });

  it('starts a new file when one is full and deletes the old one once its logs have synced', async () => {
    const dir = tempDir();
    const synced: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { journal } = await openJournal(dir, {
      syncBucket: async (bucket) => {
        await gate;
        synced.push(bucket);
      },
      fileBytesMax: 64 * 1024,
    });
    const [a, b] = [fakeLog(), fakeLog()];
    for (let i = 0; i < 8; i++)
      await Promise.all([
        journal.commit(0, [batchAt(i, 20_000)], a),
        journal.commit(1, [batchAt(i, 20_000)], b),
      ]);
    // Each round is ~40 KB: a file takes one round, so seven files were retired (or are being).
    expect(synced).toEqual([]);
    expect(journalFiles(dir).length).toBeGreaterThan(1);
    const beforeSync = await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX);
    expect(beforeSync.batches.get(0)!.map((x) => readBatchLogOffset(x))).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7,
    ]);
    release();
    await journal.drain();
    expect(new Set(synced)).toEqual(new Set([0, 1]));
    expect(journalFiles(dir)).toHaveLength(1);
    await journal.close(false);
    expect(journalFiles(dir)).toHaveLength(1);
  });

  it('keeps a file whose log could not sync itself, and warns', async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const { journal } = await openJournal(dir, {
      syncBucket: async () => {
        throw new Error('EIO: the log failed');
      },
      onWarning: (m) => warnings.push(m),
      fileBytesMax: 64 * 1024,
    });
    const [a, b] = [fakeLog(), fakeLog()];
    for (let i = 0; i < 3; i++)
      await Promise.all([
        journal.commit(0, [batchAt(i, 40_000)], a),
        journal.commit(1, [batchAt(i, 40_000)], b),
      ]);
    await journal.drain();
    expect(journalFiles(dir)).toHaveLength(3);
    expect(warnings.join('\n')).toMatch(
      /kept: a log that wrote into it could not sync itself: EIO/,
    );
    await journal.close(false);
  });

  it('drops a last round a crash cut short, and refuses a damaged round a later one knew durable', async () => {
    const dir = tempDir();
    const { journal } = await openJournal(dir);
    const [a, b] = [fakeLog(), fakeLog()];
    for (let i = 0; i < 3; i++)
      await Promise.all([journal.commit(0, [batchAt(i)], a), journal.commit(1, [batchAt(i)], b)]);
    await journal.close(false);
    const [name] = journalFiles(dir);
    const file = path.join(dir, JOURNAL_DIR, name!);
    const bytes = readFileSync(file);
    // Rounds start every 4096 bytes: damage the last one (round 3, at 8192): it is dropped.
    const torn = Buffer.from(bytes);
    torn[8192 + 40]! ^= 0xff;
    writeFileSync(file, torn);
    const read = await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX);
    expect(read.rounds).toBe(2);
    expect(read.tornRounds).toEqual([expect.objectContaining({ file, position: 8192 })]);
    expect(read.batches.get(0)!.map((x) => readBatchLogOffset(x))).toEqual([0, 1]);
    // Damage round 1 instead: round 2 was written once round 1 was durable, so this is corruption.
    const rotten = Buffer.from(bytes);
    rotten[40]! ^= 0xff;
    writeFileSync(file, rotten);
    await expect(readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        new RegExp(
          `${name}.* at byte 0: round 1 is damaged.*round 2 at byte 4096 was written once it was durable`,
        ),
      ),
    });
    // Zeros over a durable round's header (a lost write of durable data) are corruption too.
    const zeroed = Buffer.from(bytes);
    zeroed.fill(0, 4096, 4096 + 64);
    writeFileSync(file, zeroed);
    await expect(readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringContaining('round 2 is missing (zeros)'),
    });
  });

  it('takes a round whose entry header changed (a bucket index, with the batch intact) for damaged: never replays the batch into another bucket', async () => {
    const dir = tempDir();
    const { journal } = await openJournal(dir);
    const [a, b] = [fakeLog(), fakeLog()];
    for (let i = 0; i < 3; i++)
      await Promise.all([journal.commit(0, [batchAt(i)], a), journal.commit(2, [batchAt(i)], b)]);
    await journal.close(false);
    const [name] = journalFiles(dir);
    const file = path.join(dir, JOURNAL_DIR, name!);
    const bytes = Buffer.from(readFileSync(file));
    // Only the round checksum covers an entry's bucket index (each batch has its own checksum).
    const entry = 8192 + 28;
    expect(bytes.readUInt32LE(entry)).toBe(0);
    bytes.writeUInt32LE(1, entry);
    writeFileSync(file, bytes);
    const read = await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX);
    expect(read.rounds, 'the last round, damaged, is dropped as torn').toBe(2);
    expect(read.batches.has(1), 'nothing replayed into bucket 1').toBe(false);
    // The same change in round 1, which later rounds knew durable: corruption.
    bytes.writeUInt32LE(0, entry);
    bytes.writeUInt32LE(1, 28);
    writeFileSync(file, bytes);
    await expect(readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(/round 1 is damaged/),
    });
  });

  it('refuses a damaged round that the round after it did not know durable when a round after that did (two rounds in flight)', async () => {
    const dir = tempDir();
    const { journal } = await openJournal(dir);
    const [a, b] = [fakeLog(), fakeLog()];
    for (let i = 0; i < 4; i++)
      await Promise.all([journal.commit(0, [batchAt(i)], a), journal.commit(1, [batchAt(i)], b)]);
    await journal.close(false);
    const [name] = journalFiles(dir);
    const file = path.join(dir, JOURNAL_DIR, name!);
    const bytes = Buffer.from(readFileSync(file));
    // Round 3 (at 8192) as the journal writes it while round 2's fdatasync still runs: it knows
    // only round 1 durable. Round 4 was written once round 3 was durable, and so round 2 too.
    expect([4096, 8192, 12288].map((p) => bytes.readUInt32LE(p + 24))).toEqual([1, 2, 3]);
    resealRound(bytes, 8192, (round) => round.writeUInt32LE(1, 24));
    writeFileSync(file, bytes);
    expect((await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rounds).toBe(4);
    // Damage to round 2, acknowledged: the first later round's record alone does not prove it.
    bytes[4096 + 40]! ^= 0xff;
    writeFileSync(file, bytes);
    await expect(readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        /at byte 4096: round 2 is damaged.*round 4 at byte 12288 was written once it was durable/,
      ),
    });
  });

  it("refuses a full file's damaged or missing last round once the same process began the next file", async () => {
    const { dir, first, second } = await twoFullFiles();
    expect(journalFiles(dir)).toHaveLength(2);
    const firstPath = path.join(dir, JOURNAL_DIR, first);
    const secondPath = path.join(dir, JOURNAL_DIR, second);
    // The next file's first round records how many rounds the full file held, all durable.
    expect(readFileSync(secondPath).readUInt32LE(24)).toBe(3);
    const intact = await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX);
    expect(intact.rounds).toBe(5);
    expect(intact.tornRounds).toEqual([]);
    const bytes = readFileSync(firstPath);
    // Round 3, the last of the full file, damaged: no later round of its own file knew it durable,
    // but the next file began only once it was.
    const rotten = Buffer.from(bytes);
    rotten[8192 + 40]! ^= 0xff;
    writeFileSync(firstPath, rotten);
    await expect(readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(
        new RegExp(
          `${first}.* at byte 8192: round 3 is damaged .*${second}.* first round records 3 durable rounds in it`,
        ),
      ),
    });
    // Round 3 gone (the file cut short after round 2): acknowledged commits missing, not a torn write.
    writeFileSync(firstPath, bytes.subarray(0, 8192));
    await expect(readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringMatching(new RegExp(`${first}.* at byte 8192: round 3 is missing`)),
    });
  });

  it('reads a live journal whose full file is deleted between listing and reading as without it', async () => {
    const { dir, first, second } = await twoFullFiles();
    // The store that holds the journal retires the first file while it is being read: listed, gone.
    const inner = new NodeFileSystem();
    const racing = Object.assign(Object.create(inner) as FileSystem, {
      readFile: async (file: string) => (file.endsWith(first) ? null : inner.readFile(file)),
    });
    const read = await readJournal(racing, dir, 4, BATCH_BYTES_MAX);
    expect(read.files).toEqual([second]);
    expect(read.rounds).toBe(2);
    expect(read.batches.get(0)!.map((x) => readBatchLogOffset(x))).toEqual([3, 4]);
  });

  it("reads the last round of a crashed process's file as torn when a later process wrote the next file", async () => {
    const dir = tempDir();
    const first = await openJournal(dir);
    const [a, b] = [fakeLog(), fakeLog()];
    for (let i = 0; i < 3; i++)
      await Promise.all([
        first.journal.commit(0, [batchAt(i)], a),
        first.journal.commit(1, [batchAt(i)], b),
      ]);
    await first.journal.close(false);
    const [name] = journalFiles(dir);
    const file = path.join(dir, JOURNAL_DIR, name!);
    // The crash cut round 3 short.
    const torn = readFileSync(file);
    torn[8192 + 40]! ^= 0xff;
    writeFileSync(file, torn);
    // The next process reads the journal and writes its own file after it (its first: no claim).
    const second = await openJournal(dir);
    expect(second.contents.tornRounds).toHaveLength(1);
    await Promise.all([
      second.journal.commit(0, [batchAt(2)], a),
      second.journal.commit(1, [batchAt(2)], b),
    ]);
    await second.journal.close(false);
    const files = journalFiles(dir);
    expect(files).toHaveLength(2);
    expect(readFileSync(path.join(dir, JOURNAL_DIR, files[1]!)).readUInt32LE(24)).toBe(0);
    const read = await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX);
    expect(read.tornRounds).toEqual([expect.objectContaining({ file, position: 8192 })]);
    expect(read.batches.get(0)!.map((x) => readBatchLogOffset(x))).toEqual([0, 1, 2]);
  });

  it('refuses a failed round only once its logs have written their copies, and erases it first', async () => {
    const dir = tempDir();
    // The journal's first fdatasync lasts until the second round's logs have written their copies
    // (so the second round is written while it runs, and its logs write beside its own
    // fdatasync); the second fails at once. The refusal waits for the first fdatasync to return
    // (the erase is made durable through a descriptor it may be using). Gated rather than timed:
    // on a loaded machine a timer of a few milliseconds can fire after a longer one has let the
    // first round finish alone.
    let bWriting!: () => void;
    const bWrote = new Promise<void>((resolve) => (bWriting = resolve));
    const fs = hookedFs({
      beforeJournalSync: async (n) => {
        if (n === 1) await bWrote;
        if (n === 2) throw eio();
      },
    });
    const { journal } = await openJournal(dir, { fs });
    const events: string[] = [];
    const slowLog = (name: string) => ({
      write: async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        events.push(`${name} wrote`);
        if (name === 'b') bWriting();
      },
      syncOwn: async () => {},
    });
    const first = Promise.allSettled([
      journal.commit(0, [batchAt(0)], fakeLog()),
      journal.commit(1, [batchAt(0)], fakeLog()),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await Promise.allSettled(
      ['a', 'b'].map((name, i) =>
        journal.commit(2 + i, [batchAt(0)], slowLog(name)).catch((error: unknown) => {
          events.push(`${name} refused`);
          throw error;
        }),
      ),
    );
    // A log cuts its segment back when refused: its own write must not land after that.
    expect(events).toEqual(['a wrote', 'b wrote', 'a refused', 'b refused']);
    expect(second[0]).toMatchObject({
      status: 'rejected',
      reason: {
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringContaining('injected fdatasync failure'),
      },
    });
    // Both rounds were in flight together: the first is refused too (its fdatasync may have
    // succeeded, but a later failure proves nothing about what it covered).
    expect((await first).map((r) => r.status)).toEqual(['rejected', 'rejected']);
    // Later commits are refused at once; the refused rounds read as nothing.
    await expect(journal.commit(0, [batchAt(1)], fakeLog())).rejects.toMatchObject({
      code: 'LOG_STORAGE_ERROR',
    });
    await journal.close(false);
    const read = await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX);
    expect(read.rounds).toBe(0);
    expect(read.batches.size).toBe(0);
  });

  it('records refused rounds it could not erase, so that no later process replays them', async () => {
    const dir = tempDir();
    const fs = eraseFailingFs();
    const { journal } = await openJournal(dir, { fs });
    const outcomes = await oneRound(journal);
    expect(outcomes[0]).toMatchObject({
      status: 'rejected',
      reason: {
        code: 'LOG_STORAGE_ERROR',
        message: expect.stringContaining(`recorded in ${path.join(JOURNAL_DIR, REFUSED_FILE)}`),
      },
    });
    await journal.close(false);
    const inner = new NodeFileSystem();
    // The round is still in the file, whole: only the record keeps it refused.
    const file = path.join(
      dir,
      JOURNAL_DIR,
      journalFiles(dir).find((n) => n.endsWith('.journal'))!,
    );
    expect(readFileSync(file).readUInt32LE(0)).not.toBe(0);
    // Another process (and this one) reads the journal as ending before it.
    forgetJournalProcessState();
    const read = await readJournalForRecovery(inner, dir, 4, BATCH_BYTES_MAX);
    expect(read.rounds).toBe(0);
    expect(read.batches.size).toBe(0);
    expect(read.refusedFrom).toEqual({ file, position: 0 });
    // Recovery deletes the record after the files it read.
    await deleteJournalFiles(inner, dir, read.files);
    expect(journalFiles(dir)).toEqual([]);
  });

  it('will not reopen a journal whose refused rounds it could neither erase nor record', async () => {
    const dir = tempDir();
    const hooked = eraseFailingFs();
    const fs: FileSystem = Object.assign(Object.create(hooked) as FileSystem, {
      open: (file: string, flags: OpenFlags) =>
        file.includes(REFUSED_FILE) ? Promise.reject(eio()) : hooked.open(file, flags),
    });
    const { journal } = await openJournal(dir, { fs });
    const outcomes = await oneRound(journal);
    expect(outcomes[1]).toMatchObject({
      status: 'rejected',
      reason: { message: expect.stringContaining('fill that file with zeros from byte 0') },
    });
    await journal.close(false);
    await expect(
      readJournalForRecovery(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX),
    ).rejects.toMatchObject({ code: 'LOG_STORAGE_ERROR' });
    forgetJournalProcessState();
  });

  it('erases nothing past the end of its file: a round a full disk kept out of it leaves the journal reopenable in this process', async () => {
    const dir = tempDir();
    const enospc = () =>
      Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    // Every journal write fails for want of space (nothing of it reaches the file), and so does
    // writing the record of refused rounds: only a round in the file would need either.
    const hooked = hookedFs({
      beforeJournalWrite: () => {
        throw enospc();
      },
    });
    const fs: FileSystem = Object.assign(Object.create(hooked) as FileSystem, {
      open: (file: string, flags: OpenFlags) =>
        file.includes(REFUSED_FILE) ? Promise.reject(enospc()) : hooked.open(file, flags),
    });
    const { journal } = await openJournal(dir, { fs });
    const outcomes = await oneRound(journal);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(outcomes[1]).toMatchObject({
      reason: {
        code: 'LOG_STORAGE_ERROR',
        message: expect.not.stringContaining('fill that file'),
      },
    });
    await journal.close(false);
    const read = await readJournalForRecovery(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX);
    expect(read.rounds).toBe(0);
    await deleteJournalFiles(new NodeFileSystem(), dir, read.files);
  });

  it('refuses a record of refused rounds that is not one', async () => {
    const dir = tempDir();
    const { journal } = await openJournal(dir);
    await Promise.all([
      journal.commit(0, [batchAt(0)], fakeLog()),
      journal.commit(1, [batchAt(0)], fakeLog()),
    ]);
    await journal.close(false);
    writeFileSync(path.join(dir, JOURNAL_DIR, REFUSED_FILE), '{"file":"../x","position":0}');
    await expect(readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringContaining(REFUSED_FILE),
    });
    // A record of a round that is not there (its erase landed after all) changes nothing.
    writeFileSync(
      path.join(dir, JOURNAL_DIR, REFUSED_FILE),
      JSON.stringify({ file: journalFiles(dir)[0], position: 0, round: 1, checksum: 12345 }),
    );
    expect((await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rounds).toBe(1);
  });

  it('refuses a round still being written when an earlier one fails, erases it once written, and its logs write nothing', async () => {
    const dir = tempDir();
    const secondWrite = gate();
    const firstSync = gate();
    const fs = hookedFs({
      // Round 2's own write waits; round 1's fdatasync fails meanwhile.
      beforeJournalWrite: (n) => (n === 2 ? secondWrite.reached() : undefined),
      beforeJournalSync: (n) => (n === 1 ? firstSync.reached() : undefined),
    });
    const { journal } = await openJournal(dir, { fs });
    const logs = [fakeLog(), fakeLog(), fakeLog(), fakeLog()];
    const states = await twoRounds(journal, logs);
    await secondWrite.arrived;
    await firstSync.arrived;
    firstSync.fail(eio());
    await sleep(20);
    expect(states()).toEqual(['pending', 'pending', 'pending', 'pending']);
    secondWrite.open();
    await settled(states);
    expect(states()).toEqual(['refused', 'refused', 'refused', 'refused']);
    // The second round's logs never wrote their copies (they would land after their cut-backs).
    expect([logs[2]!.writes, logs[3]!.writes]).toEqual([0, 0]);
    await journal.close(false);
    expect((await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rounds).toBe(0);
  });

  it("refuses the commits of a round that waited for a full file's rounds when one of them fails", async () => {
    const dir = tempDir();
    const firstSync = gate();
    const fs = hookedFs({ beforeJournalSync: (n) => (n === 1 ? firstSync.reached() : undefined) });
    const { journal } = await openJournal(dir, { fs, fileBytesMax: 4096 });
    // The second round does not fit in the 4 KiB file: it waits for the first before the next file.
    const states = await twoRounds(journal);
    await firstSync.arrived;
    await sleep(10);
    firstSync.fail(eio());
    await settled(states);
    expect(states()).toEqual(['refused', 'refused', 'refused', 'refused']);
    await journal.close(false);
  });

  it("acknowledges a round only on its own fdatasync, not on a later round's", async () => {
    const dir = tempDir();
    // Round 1's fdatasync waits and fails; round 2's succeeds first. Two fdatasyncs of one file
    // in flight may share one writeback error: round 2's success says nothing of round 1's pages.
    const firstSync = gate();
    const secondSync = gate();
    let secondSynced!: () => void;
    const secondDone = new Promise<void>((resolve) => (secondSynced = resolve));
    const fs = hookedFs({
      beforeJournalSync: (n) =>
        n === 1 ? firstSync.reached() : n === 2 ? secondSync.reached() : undefined,
      afterJournalSync: (n) => {
        if (n === 2) secondSynced();
      },
    });
    const { journal } = await openJournal(dir, { fs });
    const states = await twoRounds(journal);
    await secondSync.arrived;
    secondSync.open();
    // Round 2's fdatasync is done, and the journal has had turns to act on it (not a sleep: under
    // load, 20 ms did not always see it done, and acknowledging on it then went unseen).
    await secondDone;
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(states()).toEqual(['pending', 'pending', 'pending', 'pending']);
    firstSync.fail(eio());
    await settled(states);
    expect(states()).toEqual(['refused', 'refused', 'refused', 'refused']);
    await journal.close(false);
  });

  it("does not acknowledge a round whose pages failed writeback when a later round's fdatasync reported the error first", async () => {
    // Linux (errseq_t, file_check_and_advance_wb_err): a writeback error is reported once per open
    // file description, to whichever fdatasync checks first. Round 1's pages fail writeback; round
    // 2's fdatasync checks first and takes the EIO, round 1's checks after it, and round 1's
    // completion reaches the journal first. Through one descriptor round 1's fdatasync would then
    // return success for pages that are on the device nowhere.
    const { journal, states, syncs, first, second } = await twoHeldRounds();
    syncs.failWriteback();
    expect(await second.check()).toBe('EIO');
    await first.check();
    await first.deliver();
    await second.deliver();
    await settled(states);
    expect(states()).toEqual(['refused', 'refused', 'refused', 'refused']);
    await journal.close(false);
  });

  it("makes the erase of refused rounds durable only once no round's fdatasync is in flight", async () => {
    // The erase is fdatasynced through a descriptor a round in flight may be using: that round's
    // fdatasync could take the error of the erase's own pages (reported once per descriptor), and
    // the erase's then return success for zeros the device never got, so that the refused commits
    // would come back after a crash.
    const { dir, journal, states, syncs, first, second } = await twoHeldRounds();
    syncs.failWriteback();
    expect(await first.check()).toBe('EIO');
    await first.deliver();
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(syncs.calls(), 'no fdatasync while the second round is out').toBe(2);
    await second.check();
    await second.deliver();
    await settled(states);
    expect(states()).toEqual(['refused', 'refused', 'refused', 'refused']);
    await journal.close(false);
    const read = await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX);
    expect(read.rounds).toBe(0);
  });

  it('writes a round without its zeros ahead when the disk has no room for them', async () => {
    const dir = tempDir();
    const fs = hookedFs({
      beforeJournalWrite: (n) => {
        if (n === 1)
          throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      },
    });
    const { journal } = await openJournal(dir, { fs });
    const results = await Promise.all([
      journal.commit(0, [batchAt(0)], fakeLog()),
      journal.commit(1, [batchAt(0)], fakeLog()),
    ]);
    expect(results).toEqual([{ ownSync: false }, { ownSync: false }]);
    await journal.close(false);
    const [name] = journalFiles(dir);
    // The round alone: no zeros written after it.
    expect(statSync(path.join(dir, JOURNAL_DIR, name!)).size).toBeLessThan(4096);
    expect((await readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rounds).toBe(1);
  });

  it('refuses batches of one bucket out of log-offset order, and an entry naming a bucket the store does not have', async () => {
    const dir = tempDir();
    const { journal } = await openJournal(dir);
    const [a, b] = [fakeLog(), fakeLog()];
    await Promise.all([
      journal.commit(3, [batchAt(5), batchAt(4)], a),
      journal.commit(1, [batchAt(0)], b),
    ]);
    await journal.close(false);
    await expect(readJournal(new NodeFileSystem(), dir, 4, BATCH_BYTES_MAX)).rejects.toMatchObject({
      code: 'CORRUPT_MESSAGE',
      message: expect.stringContaining(
        "offsets-bucket 3's batch at log offset 4 follows its batch at log offset 5",
      ),
    });
    // Read as a store of 2 buckets, the round names bucket 3: it is not a valid round (the only one,
    // so it reads as cut short, and nothing is replayed).
    const read = await readJournal(new NodeFileSystem(), dir, 2, BATCH_BYTES_MAX);
    expect(read.rounds).toBe(0);
    expect(read.tornRounds[0]!.reason).toMatch(/names offsets-bucket 3 of 2/);
  });

  it("round 2, written while round 1's fdatasync is out, does not record round 1 durable: a power loss keeping only round 2 is a torn journal", async () => {
    const dir = tempDir();
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    const fs = hookedFs({
      beforeJournalSync: async (n) => {
        if (n === 1) await firstHeld;
      },
    });
    const { journal } = await CommitJournal.open(
      fs,
      dir,
      4,
      8 << 20,
      async () => {},
      () => {},
    );
    const logs = [fakeLog(), fakeLog(), fakeLog(), fakeLog()];
    const first = Promise.all([
      journal.commit(0, [batchAt(0)], logs[0]!),
      journal.commit(1, [batchAt(0)], logs[1]!),
    ]);
    for (let w = 0; logs[0]!.writes === 0 && w < 10_000; w++) await sleep(1);
    const second = Promise.all([
      journal.commit(2, [batchAt(0)], logs[2]!),
      journal.commit(3, [batchAt(0)], logs[3]!),
    ]);
    for (let w = 0; logs[2]!.writes === 0 && w < 10_000; w++) await sleep(1);
    // The power loss, now: round 1 (never acknowledged) lost, round 2's pages kept.
    const [name] = readdirSync(path.join(dir, JOURNAL_DIR)).filter((n) => n.endsWith('.journal'));
    const bytes = Buffer.from(readFileSync(path.join(dir, JOURNAL_DIR, name!)));
    expect(bytes.readUInt32LE(4096 + 16)).toBe(2); // round 2 is there
    expect(bytes.readUInt32LE(4096 + 24), 'round 2 knew round 1 durable').toBe(0);
    releaseFirst();
    await Promise.all([first, second]);
    await journal.close(false);
    const image = tempDir();
    const imageJournal = path.join(image, JOURNAL_DIR);
    mkdirSync(imageJournal);
    bytes.fill(0, 0, 4096);
    writeFileSync(path.join(imageJournal, name!), bytes);
    const contents = await readJournal(new NodeFileSystem(), image, 4, 8 << 20);
    expect(contents.rounds).toBe(0);
  });
  it('a file removed while a round is written into it: the logs of that round sync too, once it is acknowledged', async () => {
    const events: string[] = [];
    const { journal, writing } = await removedWhileWriting(
      async (bucket) => void events.push(`sync ${bucket}`),
    );
    // Buckets 2 and 3 write a round into the removed file; the retention pass checks meanwhile.
    const logOf = (bucket: number) => ({
      write: async () => void events.push(`write ${bucket}`),
      syncOwn: async () => {},
    });
    const round = Promise.all([
      journal.commit(2, [batchAt(0)], logOf(2)),
      journal.commit(3, [batchAt(0)], logOf(3)),
    ]);
    await writing();
    await Promise.all([journal.checkFilePresent(), round]);
    // Acknowledged from the removed file: durable nowhere else until each log syncs what it wrote.
    expect(events.filter((e) => e.startsWith('sync')).sort()).toEqual([
      'sync 0',
      'sync 1',
      'sync 2',
      'sync 3',
    ]);
    for (const bucket of [2, 3])
      expect(events.indexOf(`write ${bucket}`)).toBeLessThan(events.indexOf(`sync ${bucket}`));
    await journal.close(false);
  });

  it('does not take the full file it retires, deleted before the next one is open, for one removed', async () => {
    const dir = tempDir();
    const inner = new NodeFileSystem();
    const warnings: string[] = [];
    let journal!: CommitJournal;
    const first = path.join(dir, JOURNAL_DIR, `${'1'.padStart(20, '0')}.journal`);
    const second = path.join(dir, JOURNAL_DIR, `${'2'.padStart(20, '0')}.journal`);
    let checked = false;
    const fs: FileSystem = Object.assign(Object.create(inner) as FileSystem, {
      open: async (file: string, flags: OpenFlags) => {
        if (file === second && flags === 'wx') {
          // A slow creation of the next file: the full one is deleted meanwhile, and the store's
          // retention pass checks the journal's file.
          while (existsSync(first)) await new Promise((resolve) => setTimeout(resolve, 1));
          await journal.checkFilePresent();
          checked = true;
        }
        return inner.open(file, flags);
      },
    });
    ({ journal } = await openJournal(dir, {
      fs,
      onWarning: (message) => void warnings.push(message),
      fileBytesMax: 4096,
    }));
    for (let i = 0; i < 2; i++)
      await Promise.all([
        journal.commit(0, [batchAt(i)], fakeLog()),
        journal.commit(1, [batchAt(i)], fakeLog()),
      ]);
    await journal.drain();
    expect(checked).toBe(true);
    expect(warnings).toEqual([]);
    await journal.close(true);
  });
  it('a round written into a file the journal found removed is acknowledged only once its log synced it, or refused when its log could not write it', async () => {
    const events: string[] = [];
    const { journal, writing } = await removedWhileWriting();
    // Bucket 2's log syncs in a moment; bucket 3's log cannot write its copy.
    const synced = {
      write: async () => {},
      syncOwn: async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        events.push('own sync 2');
      },
    };
    const unwritten = {
      write: async () => {
        throw Object.assign(new Error('EIO: write failed'), { code: 'EIO' });
      },
      syncOwn: async () => {},
    };
    const round = Promise.allSettled([
      journal.commit(2, [batchAt(0)], synced).then((outcome) => {
        events.push('ack 2');
        return outcome;
      }),
      journal.commit(3, [batchAt(0)], unwritten),
    ]);
    await writing();
    const [, [two, three]] = await Promise.all([journal.checkFilePresent(), round]);
    // The journal knew its file gone before it acknowledged the round: acknowledged from it, the
    // round would be durable nowhere until its log synced.
    expect(events).toEqual(['own sync 2', 'ack 2']);
    expect(two).toMatchObject({ status: 'fulfilled', value: { ownSync: true } });
    expect(three).toMatchObject({ status: 'rejected', reason: { code: 'EIO' } });
    await journal.close(false);
  });

  it('a check that began before the full file was retired and deleted does not take it for removed', async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const first = path.join(dir, JOURNAL_DIR, `${'1'.padStart(20, '0')}.journal`);
    let slowStat = false;
    // The check's stat of the current file is slow: the file fills, is retired and deleted meanwhile.
    const fs = new (class extends NodeFileSystem {
      override async sizeBytes(file: string): Promise<number | null> {
        if (slowStat && file === first)
          while (existsSync(first)) await new Promise((resolve) => setTimeout(resolve, 1));
        return super.sizeBytes(file);
      }
    })();
    const { journal } = await openJournal(dir, {
      fs,
      onWarning: (message) => void warnings.push(message),
      fileBytesMax: 4096,
    });
    await Promise.all([
      journal.commit(0, [batchAt(0)], fakeLog()),
      journal.commit(1, [batchAt(0)], fakeLog()),
    ]);
    slowStat = true;
    const check = journal.checkFilePresent();
    await Promise.all([
      journal.commit(0, [batchAt(1)], fakeLog()),
      journal.commit(1, [batchAt(1)], fakeLog()),
    ]);
    await journal.drain();
    await check;
    expect(warnings).toEqual([]);
    await journal.close(true);
  });
});
