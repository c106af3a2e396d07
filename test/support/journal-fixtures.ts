/**
 * Commit-journal fixtures shared by the journal's own tests and the CLI's: sealed one-offset
 * batches, a stand-in for a log, and a crashed journal of two files.
 */
import { readdirSync } from 'node:fs';
import { buildOffsetBatch, sealBatch } from '../../src/codec/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { CommitJournal, JOURNAL_DIR } from '../../src/log/index.js';
import * as path from 'node:path';

/** A sealed batch of one offset commit at `logOffset`, with `metadataBytes` of metadata. */
export function batchAt(logOffset: number, metadataBytes = 10): Buffer {
  const batch = buildOffsetBatch(
    'g',
    [
      {
        tableId: 1,
        partitionId: null,
        bucketId: 0,
        offset: logOffset,
        leaderEpoch: -1,
        metadata: 'm'.repeat(metadataBytes),
      },
    ],
    1_000,
  );
  sealBatch(batch, logOffset, 0, 0);
  return batch;
}

/** A stand-in for a log: counts its own writes and fdatasyncs. */
export function fakeLog() {
  const log = {
    writes: 0,
    syncs: 0,
    write: async () => void log.writes++,
    syncOwn: async () => void log.syncs++,
  };
  return log;
}

/**
 * Leaves in store directory `dir` a crashed journal of two files written by one process: three
 * rounds (one small batch for each of buckets 0 and 1) fill the first file (rounds start every 4096
 * bytes), two are in the second. Its logs could not sync themselves, so the full file was kept.
 */
export async function writeTwoFullJournalFiles(
  dir: string,
): Promise<{ first: string; second: string }> {
  const { journal } = await CommitJournal.open(
    new NodeFileSystem(),
    dir,
    4,
    8 * 1024 * 1024,
    async () => {
      throw new Error('EIO: the log failed');
    },
    () => {},
    3 * 4096,
  );
  const [a, b] = [fakeLog(), fakeLog()];
  for (let i = 0; i < 5; i++)
    await Promise.all([journal.commit(0, [batchAt(i)], a), journal.commit(1, [batchAt(i)], b)]);
  await journal.drain();
  await journal.close(false);
  const [first, second] = readdirSync(path.join(dir, JOURNAL_DIR)).sort();
  return { first: first!, second: second! };
}
