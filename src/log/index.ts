/**
 * src/log: one offsets-bucket's append-only log (segments, group commit, fail-stop, recovery's
 * inspection, the crash-safe segment swap), plus the store directory's manifest and lock. Knows
 * batches as sealed buffers, not what their records mean. This file is the folder's door.
 */
export { DirectoryLock, forgetHeldDirectories, liveLockHolder } from './directory-lock.js';
export { appendRefusal, type AppendEntry, type AppendGate, type LogPort } from './log-port.js';
export {
  LOG_DEFAULTS,
  Log,
  forgetLogProcessState,
  holdServingFlushes,
  type Durability,
  type LogOptions,
  type LogRecovery,
  type LogRecoveryReport,
  type SegmentInfo,
} from './log.js';
export {
  REJECTED_FILE,
  damageError,
  inspectLog,
  logEndOf,
  segmentChainBreak,
  type InspectOptions,
  type InspectedSegment,
  type LogDamage,
  type LogExpectations,
  type LogInspection,
  type LogLimits,
} from './log-inspection.js';
export { SEGMENT_SUFFIX, parseSegmentFileName, segmentFileName } from './segment-name.js';
export {
  classifyTailDamage,
  scanSegment,
  type TailDamage,
  type BatchVisitor,
  type SegmentDamage,
  type SegmentScan,
  type SegmentScanOptions,
} from './segment-scanner.js';
export {
  BUCKETS_DIR,
  FORMAT_VERSION,
  MANIFEST_FILE,
  ManifestFile,
  bucketDirName,
  bucketDirPath,
  encodeManifest,
  enclosingStoreDir,
  missingBucketDirs,
  strayBucketDirs,
  strayReason,
  readManifest,
  syncAncestors,
  writeDurably,
  type BucketLogRecord,
  type ManifestDefaults,
  type StoreManifest,
} from './store-manifest.js';
export { CLEANED_SUFFIX, INTENT_FILE, type CleanedSegment } from './segment-swap.js';
export {
  CommitJournal,
  JOURNAL_FILE_BYTES_MAX,
  JOURNAL_DIR,
  REFUSED_FILE,
  deleteJournalFiles,
  readJournalForRecovery,
  forgetJournalProcessState,
  journalFileName,
  parseJournalFileName,
  readJournal,
  type JournalContents,
  type JournalPort,
} from './commit-journal.js';
