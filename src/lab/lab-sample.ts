/**
 * A sample of a store during a lab run, taken while no compaction run is in flight and no operation
 * runs:
 * - disk bytes: every file of the store directory (segments, checkpoints, manifest, state files,
 *   the commit journal); journal bytes: the commit journal's files alone;
 * - live bytes: the live offsets encoded as one batch per group, the smallest log holding the state;
 *   space amplification is (disk bytes - journal bytes) / live bytes: the journal's files hold a
 *   second copy of recent rounds, up to 64 MiB each before they are retired, whatever the strategy
 *   does, and would drown the differences between strategies (counted, one default-scale run of
 *   the hot-overwrite workload measured 10.8x for the log-cleaner and 15.8x without compaction,
 *   whose logs alone were 2.6x and 7.7x the live bytes);
 * - write amplification so far: bytes compaction wrote / bytes the workload's commits appended;
 * - reopen: the store directory is copied (a crash image: the store is still open) and the copy
 *   opened with the same strategy, timed until it answers, with the records its recovery replayed.
 */
import { buildOffsetBatch, type OffsetRecordSpec } from '../codec/index.js';
import { NodeFileSystem, copyDirectory, directoryBytesByEntry } from '../io/index.js';
import { JOURNAL_DIR } from '../log/index.js';
import { OffsetStore } from '../store.js';
import type { OffsetStoreOptions } from '../store-options.js';
import { ManualClock } from '../util/index.js';
import type { CompactionTracker } from './compaction-tracker.js';

/** One sample. */
export interface LabSample {
  /** The step after which it was taken (0-based). */
  step: number;
  /** Share of the workload's steps done, 0 to 1. */
  progress: number;
  /** Ms since the run started. */
  elapsedMs: number;
  /** Bytes the workload's operations appended so far. */
  committedBytes: number;
  /** Bytes of every file of the store directory. */
  diskBytes: number;
  /**
   * Bytes of the commit journal's files (in diskBytes, not in spaceAmplification). Absent in
   * results written before it was recorded.
   */
  journalBytes?: number;
  /** Bytes of the log segments. */
  logBytes: number;
  /** Bytes of the live offsets encoded as one batch per group. */
  liveBytes: number;
  /** Live committed offsets. */
  liveOffsets: number;
  /** (diskBytes - journalBytes) / liveBytes. */
  spaceAmplification: number;
  /** Bytes compaction wrote so far. */
  compactionBytesWritten: number;
  /** compactionBytesWritten / committedBytes. */
  writeAmplification: number;
  /** Time to open a copy of the store until it answers, ms (at the samples that reopen). */
  reopenMs?: number;
  /** Records that reopen replayed. */
  recordsReplayed?: number;
  /** Batches that reopen replayed. */
  batchesReplayed?: number;
  /** Heap used plus external memory of the main thread, bytes. */
  heapBytes: number;
  /** CPU of the process so far, ms (all threads). */
  processCpuMs: number;
  /** CPU of compaction workers so far, ms. */
  workerCpuMs: number;
}

/** What a sample needs besides the store. */
export interface SampleContext {
  /** The step just done. */
  step: number;
  /** Steps in all. */
  steps: number;
  /** Ms since the run started. */
  elapsedMs: number;
  /** The run's compaction runs. */
  tracker: CompactionTracker;
  /** CPU of the process since the run started, ms. */
  processCpuMs: number;
  /** When set, a copy is reopened: the options the store was opened with, its strategy, its clock's time. */
  reopen?: {
    storeOptions: Omit<OffsetStoreOptions, 'compaction'>;
    strategy: string;
    nowMs: number;
  };
}

/** Takes a sample (see the module comment). */
export async function sampleStore(store: OffsetStore, context: SampleContext): Promise<LabSample> {
  const stats = await store.stats();
  // One walk of the store's folder: the journal's share is its entry's.
  const byEntry = await directoryBytesByEntry(stats.dir);
  let diskBytes = 0;
  for (const bytes of byEntry.values()) diskBytes += bytes;
  const journalBytes = byEntry.get(JOURNAL_DIR) ?? 0;
  const liveBytes = await liveBytesOf(store);
  const written = context.tracker.runs.reduce((n, r) => n + r.bytesWritten, 0);
  const memory = process.memoryUsage();
  const sample: LabSample = {
    step: context.step,
    progress: (context.step + 1) / context.steps,
    elapsedMs: context.elapsedMs,
    committedBytes: stats.totals.appendedBytes,
    diskBytes,
    journalBytes,
    logBytes: stats.totals.logBytes,
    liveBytes,
    liveOffsets: stats.totals.liveOffsets,
    spaceAmplification: liveBytes === 0 ? 0 : (diskBytes - journalBytes) / liveBytes,
    compactionBytesWritten: written,
    writeAmplification: stats.totals.appendedBytes === 0 ? 0 : written / stats.totals.appendedBytes,
    heapBytes: memory.heapUsed + memory.external,
    processCpuMs: context.processCpuMs,
    workerCpuMs: context.tracker.runs.reduce((n, r) => n + (r.workerCpuMs ?? 0), 0),
  };
  if (context.reopen !== undefined)
    Object.assign(sample, await reopenCopy(stats.dir, context.reopen));
  return sample;
}

/** The live offsets encoded as one batch per group (the lab's own latency groups included). */
async function liveBytesOf(store: OffsetStore): Promise<number> {
  let total = 0;
  for (const { groupId } of await store.listGroups()) {
    const offsets = await store.fetchOffsets(groupId);
    if (offsets.length === 0) continue;
    const specs: OffsetRecordSpec[] = offsets.map((o) => ({
      tableId: o!.tableId,
      partitionId: o!.partitionId ?? null,
      bucketId: o!.bucketId,
      offset: o!.offset,
      leaderEpoch: o!.leaderEpoch,
      metadata: o!.metadata,
    }));
    total += buildOffsetBatch(groupId, specs, 0).length;
  }
  return total;
}

async function reopenCopy(
  dir: string,
  reopen: NonNullable<SampleContext['reopen']>,
): Promise<Pick<LabSample, 'reopenMs' | 'recordsReplayed' | 'batchesReplayed'>> {
  const copy = `${dir}-reopen`;
  const fs = new NodeFileSystem();
  await fs.removeTree(copy);
  await copyDirectory(dir, copy);
  try {
    const startedMs = performance.now();
    const reopened = await OffsetStore.open({
      ...reopen.storeOptions,
      dir: copy,
      clock: new ManualClock(reopen.nowMs),
      onWarning: () => {},
      compaction: { strategy: reopen.strategy, background: false },
    });
    const reopenMs = performance.now() - startedMs;
    let recordsReplayed = 0;
    let batchesReplayed = 0;
    for (const report of reopened.recoveryReports()) {
      recordsReplayed += report?.recordsReplayed ?? 0;
      batchesReplayed += report?.batchesReplayed ?? 0;
    }
    await reopened.close();
    return { reopenMs, recordsReplayed, batchesReplayed };
  } finally {
    await fs.removeTree(copy);
  }
}
