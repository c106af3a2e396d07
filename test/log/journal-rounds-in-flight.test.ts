/**
 * With two commit-journal rounds in flight, the second must not record the first as durable while
 * the first's fdatasync is still out: a power loss that keeps the second round's pages and loses the
 * first's (never acknowledged) reads as a torn journal, not as a damaged store that refuses to open.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { loadChecksum } from '../../src/codec/index.js';
import {
  NodeFileSystem,
  type FileHandle,
  type FileSystem,
  type OpenFlags,
} from '../../src/io/index.js';
import { CommitJournal, JOURNAL_DIR, readJournal } from '../../src/log/index.js';
import { batchAt, fakeLog } from '../support/journal-fixtures.js';
import { tempDir } from '../support/temp-dir.js';

beforeAll(() => loadChecksum());
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

it("round 2, written while round 1's fdatasync is out, does not claim round 1 durable", async () => {
  const dir = tempDir();
  let releaseFirst!: () => void;
  const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
  const inner = new NodeFileSystem();
  let syncs = 0;
  const fs: FileSystem = Object.assign(Object.create(inner) as FileSystem, {
    open: async (file: string, flags: OpenFlags) => {
      const handle = await inner.open(file, flags);
      if (!file.endsWith('.journal')) return handle;
      return {
        path: handle.path,
        read: handle.read.bind(handle),
        truncate: handle.truncate.bind(handle),
        sizeBytes: handle.sizeBytes.bind(handle),
        close: handle.close.bind(handle),
        writev: handle.writev.bind(handle),
        datasync: async () => {
          if (++syncs === 1) await firstHeld;
          await handle.datasync();
        },
      } satisfies FileHandle;
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
  (await import('node:fs')).mkdirSync(imageJournal);
  bytes.fill(0, 0, 4096);
  writeFileSync(path.join(imageJournal, name!), bytes);
  const contents = await readJournal(new NodeFileSystem(), image, 4, 8 << 20);
  expect(contents.rounds).toBe(0);
});
