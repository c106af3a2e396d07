export { DirectoryLock, liveLockHolder } from './directory-lock.js';
export { LOG_DEFAULTS, Log, type Durability, type LogOptions, type LogRecoveryReport, type LogReplay, type SegmentInfo } from './log.js';
export { SEGMENT_SUFFIX, parseSegmentFileName, segmentFileName } from './segment-name.js';
export { classifyTailDamage, scanSegment, type TailDamage, type BatchVisitor, type SegmentDamage, type SegmentScan, type SegmentScanOptions } from './segment-scanner.js';
export { FORMAT_VERSION, MANIFEST_FILE, bucketDirName, loadOrCreateManifest, readManifest, writeDurably, type StoreManifest } from './store-manifest.js';
export { CLEANED_SUFFIX, type CleanedSegment } from './segment-swap.js';
