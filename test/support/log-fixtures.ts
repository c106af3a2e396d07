import { buildOffsetBatch, readBatchHeader } from '../../src/codec/index.js';
import type { FileSystem } from '../../src/io/index.js';
import { LOG_DEFAULTS, Log, type LogOptions, type LogRecoveryReport } from '../../src/log/index.js';
import { NodeFileSystem } from '../../src/io/index.js';
import { readdirSync } from 'node:fs';
import * as path from 'node:path';

/** Options for a log in `dir` with small segments, overridable. */
export function logOptions(dir: string, overrides: Partial<LogOptions> = {}): LogOptions {
  return {
    fs: new NodeFileSystem() as FileSystem,
    dir,
    durability: 'fsync',
    segmentBytesMax: 4096,
    batchBytesMax: LOG_DEFAULTS.batchBytesMax,
    pendingAppendsMax: LOG_DEFAULTS.pendingAppendsMax,
    flushBytesMax: LOG_DEFAULTS.flushBytesMax,
    ...overrides,
  };
}

/** A small batch whose content identifies `n`. */
export function testBatch(n: number, records = 2): Buffer {
  const specs = Array.from({ length: records }, (_, i) => ({
    tableId: n,
    partitionId: null,
    bucketId: i,
    offset: n * 10 + i,
    leaderEpoch: -1,
    metadata: `m${n}`,
  }));
  return buildOffsetBatch(`group-${n % 7}`, specs, 1_700_000_000_000 + n);
}

/** Every batch of a reopened log as (log offset, bytes). */
export async function readAll(options: LogOptions): Promise<{
  batches: { logOffset: number; bytes: Buffer }[];
  log: Log;
  bytesTruncated: number;
  report: LogRecoveryReport;
}> {
  const batches: { logOffset: number; bytes: Buffer }[] = [];
  const { log, report } = await Log.open(options, {
    fromLogOffset: 0,
    visit: (buf, position, logOffset, sizeBytes) => {
      batches.push({ logOffset, bytes: Buffer.from(buf.subarray(position, position + sizeBytes)) });
      void readBatchHeader(buf, position);
    },
  });
  return { batches, log, bytesTruncated: report.bytesTruncated, report };
}

/** The path of the active (last) segment of offsets-bucket `bucket` of the store in `dir`. */
export function activeSegmentOf(dir: string, bucket = 0): string {
  const bucketDir = path.join(dir, 'buckets', String(bucket).padStart(3, '0'));
  const segments = readdirSync(bucketDir)
    .filter((f) => f.endsWith('.log'))
    .sort();
  return path.join(bucketDir, segments.at(-1)!);
}
