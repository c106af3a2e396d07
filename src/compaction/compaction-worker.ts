/**
 * Entry of a compaction worker thread (piscina): runs log-cleaner jobs. Jobs and results are plain
 * data; the segment bytes never cross threads (the worker reads and writes the files itself).
 */
import { loadChecksum } from '../codec/index.js';
import { NodeFileSystem } from '../io/index.js';
import { cleanSegments, type CleanJob, type CleanResult } from './log-cleaner.js';

const fs = new NodeFileSystem();

/** Runs one log-cleaner job. */
export default async function runCleanJob(job: CleanJob): Promise<CleanResult> {
  await loadChecksum();
  return cleanSegments(fs, job);
}
