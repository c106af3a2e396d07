/**
 * Durable append throughput of one offsets-bucket's log (src/log `Log.append`, durability 'fsync',
 * group commit), for batches of 1, 10, 100 and 1000 offset records with 1, 8 and 64 concurrent
 * appenders, next to the raw floor of the same disk: the same bytes written with a plain positional
 * write + fdatasync per batch, by one writer in sequence and by 64 concurrent writers that each
 * fdatasync (through libuv's thread pool, 4 threads by default, as any Node code would).
 *
 * Expected order of magnitude: one fdatasync costs ~0.5-3 ms on a virtual or SATA SSD, so a single
 * appender (log or raw) does a few hundred to ~2k batches/s; with 64 appenders the log writes every
 * queued batch with one writev and shares one fdatasync, so batches/s grows ~10-60x; the raw
 * 64-writer floor gains ~4-20x (libuv keeps four fdatasyncs in flight, and the file system merges
 * concurrent flushes of one file into one journal commit). Records/s at 1000 records per batch
 * is bounded by the disk's sequential write bandwidth (~45 bytes per record): ~1-5M records/s.
 * Latency per append is ~1 fsync sequentially and ~2 fsyncs under group commit (wait for the
 * running flush, then your own).
 *
 * Setup (opening the log, encoding the batches) is outside the timed call: a call appends one
 * pre-encoded batch from a ring (a batch buffer is reused only after its append was acknowledged,
 * since the log seals it in place).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildOffsetBatch, loadChecksum } from '../src/codec/index.js';
import { NodeFileSystem } from '../src/io/index.js';
import { LOG_DEFAULTS, Log } from '../src/log/index.js';
import {
  measureInterleaved,
  type MeasureOptions,
  type TaskResult,
  type TaskSpec,
} from './support/measure.js';
import {
  formatCount,
  formatMs,
  formatRatio,
  printBanner,
  printTable,
  type Column,
} from './support/report.js';
import { atScale } from './support/scale.js';
import { createTempDir, removeTempDir } from './support/temp-dir.js';
import { groupName, offsetCommits } from './support/workload.js';

const BATCH_RECORDS = [1, 10, 100, 1000];
const APPENDERS = [1, 8, 64];
const RAW_CONCURRENT_WRITERS = 64;
const TIMING: MeasureOptions = atScale({
  quick: { timeMs: 300, warmupMs: 50, rounds: 1 },
  default: { timeMs: 2000, warmupMs: 300, rounds: 4 },
  full: { timeMs: 10_000, warmupMs: 1000, rounds: 5 },
});

interface Row extends TaskResult {
  kind: 'log' | 'raw';
  records: number;
  batchBytes: number;
}

/** A batch of `records` offset records as the commit path would encode it. */
function encodedBatch(records: number): Buffer {
  return buildOffsetBatch(
    groupName(0),
    offsetCommits(records, 1_000_000).map((o) => ({
      ...o,
      partitionId: null,
      leaderEpoch: 0,
      metadata: '',
    })),
    Date.now(),
  );
}

/** Copies of a batch, enough that none is reused while its append is still in flight. */
function batchRing(template: Buffer, concurrency: number): Buffer[] {
  return Array.from({ length: 2 * concurrency + 2 }, () => Buffer.from(template));
}

/** A task ready to measure, with what it opened. */
interface Prepared {
  kind: Row['kind'];
  records: number;
  batchBytes: number;
  spec: TaskSpec;
  close(): Promise<void>;
}

async function logTask(records: number, appenders: number): Promise<Prepared> {
  const dir = createTempDir('log-append');
  const { log } = await Log.open({
    fs: new NodeFileSystem(),
    dir,
    durability: 'fsync',
    segmentBytesMax: LOG_DEFAULTS.segmentBytesMax,
    batchBytesMax: LOG_DEFAULTS.batchBytesMax,
    pendingAppendsMax: LOG_DEFAULTS.pendingAppendsMax,
    flushBytesMax: LOG_DEFAULTS.flushBytesMax,
  });
  const template = encodedBatch(records);
  const ring = batchRing(template, appenders);
  let next = 0;
  return {
    kind: 'log',
    records,
    batchBytes: template.length,
    spec: {
      name: `log append, ${records} rec/batch, ${appenders} appender${appenders > 1 ? 's' : ''}, fsync`,
      async: true,
      concurrency: appenders,
      unitsPerCall: records,
      fn: () => log.append(ring[next++ % ring.length]!),
    },
    close: async () => {
      await log.close();
      await removeTempDir(dir);
    },
  };
}

async function rawTask(records: number, writers: number): Promise<Prepared> {
  const dir = createTempDir('raw-append');
  const handle = await fs.promises.open(path.join(dir, 'raw.log'), 'w');
  const bytes = encodedBatch(records);
  let position = 0;
  return {
    kind: 'raw',
    records,
    batchBytes: bytes.length,
    spec: {
      name:
        writers === 1
          ? `raw write+fdatasync, ${records} rec, 1 writer`
          : `raw write+fdatasync, ${records} rec, ${writers} writers each fsync`,
      async: true,
      concurrency: writers,
      unitsPerCall: records,
      fn: async () => {
        const at = position;
        position += bytes.length;
        await handle.write(bytes, 0, bytes.length, at);
        await handle.datasync();
      },
    },
    close: async () => {
      await handle.close();
      await removeTempDir(dir);
    },
  };
}

/** Measures the raw floor and the log at one batch size side by side, in interleaved rounds. */
async function measureBatchSize(records: number): Promise<Row[]> {
  const prepared = [await rawTask(records, 1), await rawTask(records, RAW_CONCURRENT_WRITERS)];
  for (const appenders of APPENDERS) prepared.push(await logTask(records, appenders));
  try {
    const results = await measureInterleaved(
      prepared.map((p) => p.spec),
      TIMING,
    );
    return results.map((r, i) => ({
      ...r,
      kind: prepared[i]!.kind,
      records,
      batchBytes: prepared[i]!.batchBytes,
    }));
  } finally {
    for (const p of prepared) await p.close();
  }
}

async function main(): Promise<void> {
  printBanner('log-append: durable Log.append with group commit vs raw write+fdatasync', [
    `timed ${TIMING.timeMs} ms per task in ${TIMING.rounds} interleaved rounds after ${TIMING.warmupMs} ms warm-up; latency is per append (per batch)`,
  ]);
  await loadChecksum();
  const rows: Row[] = [];
  for (const records of BATCH_RECORDS) rows.push(...(await measureBatchSize(records)));
  const rawSequential = (records: number) =>
    rows.find((r) => r.kind === 'raw' && r.records === records && r.concurrency === 1)!;
  const rawConcurrent = (records: number) =>
    rows.find((r) => r.kind === 'raw' && r.records === records && r.concurrency > 1)!;
  const columns: Column<Row>[] = [
    { header: 'task', value: (r) => r.name },
    { header: 'batch bytes', value: (r) => String(r.batchBytes) },
    { header: 'batches/s', value: (r) => formatCount(r.callsPerSec) },
    { header: 'records/s', value: (r) => formatCount(r.unitsPerSec) },
    { header: 'MB/s', value: (r) => ((r.callsPerSec * r.batchBytes) / 1e6).toFixed(1) },
    { header: 'p50', value: (r) => formatMs(r.p50Ms) },
    { header: 'p99', value: (r) => formatMs(r.p99Ms) },
    {
      header: 'vs raw 1 writer',
      value: (r) => formatRatio(r.callsPerSec / rawSequential(r.records).callsPerSec),
    },
    {
      header: 'vs raw 64 writers',
      value: (r) => formatRatio(r.callsPerSec / rawConcurrent(r.records).callsPerSec),
    },
  ];
  printTable('Durable append (fsync): batches/s, records/s, latency per append', columns, rows);

  const summary = BATCH_RECORDS.map((records) => {
    const log = (n: number) =>
      rows.find((r) => r.kind === 'log' && r.records === records && r.concurrency === n)!;
    return {
      records,
      log1: log(1),
      log64: log(64),
      raw1: rawSequential(records),
      raw64: rawConcurrent(records),
    };
  });
  printTable(
    'Ratios (batches/s)',
    [
      { header: 'records/batch', value: (s) => String(s.records) },
      {
        header: 'log 1 / raw 1 writer',
        value: (s) => formatRatio(s.log1.callsPerSec / s.raw1.callsPerSec),
      },
      {
        header: 'log 64 / raw 64 writers',
        value: (s) => formatRatio(s.log64.callsPerSec / s.raw64.callsPerSec),
      },
      {
        header: 'log 64 / log 1 (group commit gain)',
        value: (s) => formatRatio(s.log64.callsPerSec / s.log1.callsPerSec),
      },
      {
        header: 'raw 64 / raw 1',
        value: (s) => formatRatio(s.raw64.callsPerSec / s.raw1.callsPerSec),
      },
    ],
    summary,
  );
}

await main();
