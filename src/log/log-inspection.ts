/**
 * Reads a log directory and decides what it holds and what recovery must do about it, without
 * modifying anything. `Log.open` applies the repairs it lists and refuses what it reports as
 * corrupt; `log verify` reports the same findings. One function, so the two never disagree.
 *
 * What a log directory may hold, and how each is read:
 * - segment files `<20-digit base>.log`: the log, oldest first;
 * - a swap intent `compaction.swap` with `.cleaned` files (segment-swap.ts): a compaction that
 *   committed; it is checked against the disk and the segments are read as they will be once it is
 *   applied. `.cleaned` files it does not name, and `.tmp` files, are leftovers of one that did not
 *   commit (with or without an intent);
 * - `rejected-batches.json`: batches a failed write left behind after cutting them back failed too
 *   (log.ts); the segment is read as if cut there when the batch recorded is still there. The
 *   record carries a checksum of its own: a damaged record is corruption (its batches would
 *   otherwise be served as committed).
 *
 * The rules (every violation is damage; all but a torn tail are corruption):
 * 1. The first segment begins at or below `fromLogOffset`, the log offset recovery replays from (0, the
 *    store's log start, or a checkpoint's): otherwise the segments before it are missing.
 * 2. Segments chain: each sealed segment holds at least one batch and its last batch is the one just
 *    before the next segment's base offset (compaction keeps each segment's last batch, if need be
 *    emptied of records, for this). A gap is a missing segment or a segment cut short.
 * 3. Inside a segment, batches are valid (length, magic, checksum, records) with increasing log
 *    offsets, at or above its base; in the last (active) segment they are consecutive. A sealed
 *    segment ends exactly at its last batch; only the active one may end in zeros (preallocation).
 * 4. Damage in the last segment is a torn tail (truncated by open) when it can be what a crash or a
 *    power loss leaves (segment-scanner.ts, TailDamage), and corruption otherwise.
 * 5. The log ends at or after `knownEnd` (what the store recorded at its last clean close, or when it
 *    was last opened), and exactly there when `knownEnd.exact` (nothing was written after a clean
 *    close). A shorter log lost segments or batches.
 * 6. A break in the chain (rule 2) whose missing or doubled log offsets all lie below `fromLogOffset`
 *    (a checkpoint's, or the log start after a conversion) is no damage: recovery reads nothing
 *    there. The segments before it, wholly below `fromLogOffset` too, are stale (a segment put back
 *    from an older copy of the store, or the neighbours of one removed by hand, below a
 *    checkpoint): recovery deletes them, as the store deletes every segment below its checkpoints,
 *    and the segment after the break is the log's first. Any other damage in them is still damage.
 * 7. With the commit journal's batches of this log (`journal.replay`), a batch of the active segment
 *    whose log offset the journal holds is the journal's batch (same stored checksum): nothing
 *    rewrites the active segment, so another batch there means a journal of another store copied
 *    in (whose batches past the log's end would be appended as this log's) or damage. Sealed
 *    segments are not compared: compaction may have rewritten their batches since.
 */
import * as path from 'node:path';
import {
  BATCH_CHECKSUM_END,
  checkBatchFormat,
  DecodeError,
  loadChecksum,
  readBatchChecksum,
  readBatchLogOffset,
  xxh32,
} from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import {
  classifyTailDamage,
  scanSegment,
  type BatchVisitor,
  type KeptBatches,
} from './segment-scanner.js';
import { parseSegmentFileName } from './segment-name.js';
import {
  CLEANED_SUFFIX,
  INTENT_FILE,
  parseSwapIntent,
  resolveSwap,
  type SwapIntent,
} from './segment-swap.js';

/** Name of the record of rejected batches that could not be cut back (log.ts). */
export const REJECTED_FILE = 'rejected-batches.json';

/** What the store knows of a log before reading it. */
export interface LogExpectations {
  /** Recovery replays from this log offset: the log must hold every batch from here on. */
  fromLogOffset: number;
  /** Batches below `logOffset` were durable; with `exact`, the log ends exactly there. */
  knownEnd?: { logOffset: number; exact: boolean };
}

/** Limits that shape what a log may hold. */
export interface LogLimits {
  /** Largest batch a log accepts; a longer length field is damage. */
  batchBytesMax: number;
  /**
   * Most bytes of one write round: how far damage after the last fdatasync may reach and still be a
   * torn write.
   */
  flushBytesMax: number;
  /**
   * The log's durability: with 'os' nothing is known to be fdatasynced, so any tail damage can be a
   * torn write.
   */
  durability: 'fsync' | 'os';
  /**
   * The store's commit journal, when the log is written through one (commit-journal.ts): its tail
   * after its own last fdatasync may be lost in any number of rounds, and `replay` (this log's
   * batches in the journal) continues it.
   */
  journal?: { replay?: readonly Buffer[] };
  /**
   * The log is read by a store open to read only, which holds no lock: a live owner may be
   * appending to its last segment while it is read (see classifyTailDamage).
   */
  readOnly?: boolean;
}

/** One damaged place. */
export interface LogDamage {
  /**
   * 'torn-tail': what a crash or power loss can leave, truncated by open; 'corrupt': anything else,
   * refused.
   */
  kind: 'corrupt' | 'torn-tail';
  /** Path of the damaged file (or of the missing one). */
  file: string;
  /** Byte position of the first byte that is not part of a valid batch (0 for a missing file). */
  position: number;
  /** Bytes from `position` to the end of the file. */
  bytesAfter: number;
  /** What is wrong, for messages and `log verify`. */
  reason: string;
  /**
   * A torn tail whose damaged batches the commit journal holds, with valid batches after them that
   * it may not (classifyTailDamage's 'journal-repair'): recovery writes the journal's copies from
   * `position`, then these batches (file positions [from, to), log offsets first..last) after them.
   */
  kept?: KeptBatches;
}

/** One segment as recovery reads it. */
export interface InspectedSegment {
  /** The segment's file name (20-digit base offset + `.log`). */
  name: string;
  /** Log offset of its first batch, from its name. */
  baseOffset: number;
  /** Where its bytes are read from now (a `.cleaned` file until a pending swap is applied). */
  readPath: string;
  /** Its path once repairs are applied. */
  path: string;
  /** Bytes read (the file, or less where a rejected range is cut off). */
  fileBytes: number;
  /** Bytes of valid batches from the start. */
  validBytes: number;
  /** Zero bytes after the last batch (preallocation of the active segment). */
  zeroTailBytes: number;
  /** Valid batches in it. */
  batchCount: number;
  /** Log offset of its first valid batch, -1 when it has none. */
  firstLogOffset: number;
  /** Log offset of its last valid batch, -1 when it has none. */
  lastLogOffset: number;
}

/** The record of batches rejected after a failed write whose cut-back failed too. */
export interface RejectedBatches {
  /** File name of the segment the rejected batches were written to. */
  segment: string;
  /** Byte position where the rejected write began: the segment is cut there. */
  position: number;
  /** Stored checksum of the first rejected batch: the cut applies only while that batch is still there. */
  checksum: number;
}

/**
 * The record's own checksum (`recordChecksum` in the file): xxh32 of its three fields, one a line.
 * A record the file system damaged then reads as damage rather than as a record of nothing.
 */
export function rejectedRecordChecksum(record: RejectedBatches): number {
  return xxh32(Buffer.from(`${record.segment}\n${record.position}\n${record.checksum}`));
}

/** What a log directory holds and what recovery does about it. */
export interface LogInspection {
  /** The segments as they will be once the repairs are applied, oldest first. */
  segments: InspectedSegment[];
  /** A committed swap to complete. */
  swap: SwapIntent | undefined;
  /** Files of a swap that never committed, to delete. */
  leftovers: string[];
  /**
   * Paths of segments wholly below where recovery starts that do not chain with the segments
   * after them (rule 6), to delete; they are not in `segments`.
   */
  staleSegments: string[];
  /** A rejected-batches record (to delete once its cut is applied). */
  rejected: { record: RejectedBatches | undefined; applies: boolean } | undefined;
  /** Every damaged place found (with `stopAtCorruption`, at most the first corrupt one). */
  damage: LogDamage[];
  /** The torn tail to truncate: the last segment is cut to `validBytes`. */
  tornTail: LogDamage | undefined;
  /** Log offset after the last valid batch (or the empty last segment's base). */
  logEnd: number;
}

/** How to read. */
export interface InspectOptions {
  /** Stop at the first corruption (recovery); otherwise go on with the next segment (verify). */
  stopAtCorruption: boolean;
  /** Receives each valid batch in log order, with its log offset; a DecodeError it throws is damage. */
  visit?: BatchVisitor;
}

/** Inspects the log in `dir` (see the module comment). Reads only. */
export async function inspectLog(
  fs: FileSystem,
  dir: string,
  limits: LogLimits,
  expectations: LogExpectations,
  options: InspectOptions,
): Promise<LogInspection> {
  await loadChecksum();
  const names = await fs.readdir(dir);
  const segmentNames = names.filter((n) => parseSegmentFileName(n) !== undefined).sort();
  const tempNames = new Set(names.filter((n) => n.endsWith(CLEANED_SUFFIX)));
  const result: LogInspection = {
    segments: [],
    swap: undefined,
    leftovers: [],
    staleSegments: [],
    rejected: undefined,
    damage: [],
    tornTail: undefined,
    logEnd: 0,
  };
  const intentBytes = names.includes(INTENT_FILE)
    ? await fs.readFile(path.join(dir, INTENT_FILE))
    : null;
  let effective = segmentNames;
  const readPaths = new Map<string, string>();
  if (intentBytes !== null) {
    const file = path.join(dir, INTENT_FILE);
    try {
      const intent = parseSwapIntent(file, intentBytes);
      effective = resolveSwap(file, intent, segmentNames, tempNames, expectations.fromLogOffset);
      for (const { name, tempName } of intent.outputs)
        if (tempNames.has(tempName)) readPaths.set(name, path.join(dir, tempName));
      result.swap = intent;
      // Temporary files the intent does not name are a later compaction's that never committed
      // (its outputs were written while this swap was still being applied).
      const outputs = new Set(intent.outputs.map((o) => o.tempName));
      result.leftovers = names
        .filter((n) => (n.endsWith(CLEANED_SUFFIX) && !outputs.has(n)) || n.endsWith('.tmp'))
        .sort();
    } catch (error) {
      if (!(error instanceof OffsetStoreError)) throw error;
      result.damage.push({
        kind: 'corrupt',
        file,
        position: 0,
        bytesAfter: intentBytes.length,
        reason: error.message.slice(file.length + 2),
      });
      return result;
    }
  } else {
    result.leftovers = names.filter((n) => n.endsWith(CLEANED_SUFFIX) || n.endsWith('.tmp')).sort();
  }
  const endBytes = new Map<string, number>();
  if (names.includes(REJECTED_FILE)) {
    const recordPath = path.join(dir, REJECTED_FILE);
    const recordBytes = await fs.readFile(recordPath);
    const record = parseRejected(recordBytes);
    if (typeof record === 'string') {
      // Written whole (a temporary file renamed) and never changed since: an unreadable record is
      // damage, and a log read without it would serve the commits it rejected.
      result.damage.push({
        kind: 'corrupt',
        file: recordPath,
        position: 0,
        bytesAfter: recordBytes?.length ?? 0,
        reason: `${record}: it names batches a failed write left in this log, rejected to their callers, which must be cut off before it is served (remove the file only to serve them as committed)`,
      });
      return result;
    }
    const applies =
      record !== undefined &&
      effective.at(-1) === record.segment &&
      (await rejectedBatchPresent(fs, path.join(dir, record.segment), record));
    if (applies) {
      endBytes.set(record.segment, record.position);
      const file = path.join(dir, record.segment);
      const bytes = (await fs.sizeBytes(file)) ?? record.position;
      result.damage.push({
        kind: 'torn-tail',
        file,
        position: record.position,
        bytesAfter: bytes - record.position,
        reason: `batches rejected after a failed write, which could not be cut back then (recorded in ${REJECTED_FILE}); the next open cuts them off`,
      });
    }
    result.rejected = { record, applies };
  }
  for (const name of effective) {
    const finalPath = path.join(dir, name);
    const readPath = readPaths.get(name) ?? finalPath;
    const fileBytes = endBytes.get(name) ?? (await fs.sizeBytes(readPath)) ?? 0;
    result.segments.push({
      name,
      baseOffset: parseSegmentFileName(name)!,
      readPath,
      path: finalPath,
      fileBytes,
      validBytes: 0,
      zeroTailBytes: 0,
      batchCount: 0,
      firstLogOffset: -1,
      lastLogOffset: -1,
    });
  }
  await scanAll(fs, dir, result, limits, expectations, options);
  return result;
}

async function scanAll(
  fs: FileSystem,
  dir: string,
  result: LogInspection,
  limits: LogLimits,
  expectations: LogExpectations,
  options: InspectOptions,
): Promise<void> {
  const { segments, damage } = result;
  const stop = () => options.stopAtCorruption && damage.some((d) => d.kind === 'corrupt');
  const first = segments[0];
  if (first !== undefined && first.baseOffset > expectations.fromLogOffset) {
    damage.push({
      kind: 'corrupt',
      file: first.path,
      position: 0,
      bytesAfter: first.fileBytes,
      reason: `the log starts at log offset ${first.baseOffset} (${first.name}), but recovery needs every batch from log offset ${expectations.fromLogOffset}: the segments before it are missing`,
    });
    if (stop()) return;
  }
  // The stored checksum of each batch the journal holds, by log offset (for the active segment).
  const journaled = new Map<number, number>();
  for (const batch of limits.journal?.replay ?? [])
    journaled.set(readBatchLogOffset(batch), readBatchChecksum(batch));
  let previous = -1;
  let previousDamaged = false;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    const isLast = i === segments.length - 1;
    const chainBreak =
      i > 0 && !previousDamaged
        ? segmentChainBreak(segments[i - 1]!.name, previous, segment.name, segment.baseOffset)
        : undefined;
    if (
      chainBreak !== undefined &&
      Math.max(previous, segment.baseOffset - 1) < expectations.fromLogOffset &&
      !damage.some((d) => d.kind === 'corrupt')
    ) {
      // Every log offset the break leaves missing (or held twice) lies below where recovery
      // starts, and so does every batch of the segments before it (rule 6).
      result.staleSegments.push(...segments.splice(0, i).map((s) => s.path));
      i = 0;
    } else if (chainBreak !== undefined) {
      damage.push({
        kind: 'corrupt',
        file: segment.path,
        position: 0,
        bytesAfter: segment.fileBytes,
        reason: chainBreak,
      });
      if (stop()) return;
    }
    previousDamaged = false;
    const found = await scanOne(
      fs,
      segment,
      isLast,
      previous,
      limits,
      expectations,
      options,
      isLast ? journaled : undefined,
    );
    if (found !== undefined) {
      previousDamaged = true;
      if (found.kind === 'torn-tail') result.tornTail = found;
      damage.push(found);
      if (stop()) return;
    }
    if (segment.lastLogOffset >= 0) previous = segment.lastLogOffset;
  }
  const last = segments.at(-1);
  result.logEnd = logEndOf(previous, last?.baseOffset);
  let end = result.logEnd;
  const replay = limits.journal?.replay;
  if (replay !== undefined) {
    // The journal continues the log from its end: its batches there must follow one another. The
    // batches a journal repair keeps after the ones it writes from the journal continue it too.
    const kept = result.tornTail?.kept;
    for (const batch of replay) {
      if (kept !== undefined && end === kept.first) end = kept.last + 1;
      const logOffset = readBatchLogOffset(batch);
      if (logOffset < end) continue;
      if (logOffset === end) {
        end++;
        continue;
      }
      damage.push({
        kind: 'corrupt',
        file: last?.path ?? dir,
        position: last?.validBytes ?? 0,
        bytesAfter: 0,
        reason: `log offsets ${end}..${logOffset - 1} are missing: the log and the commit journal hold batches up to log offset ${end - 1}, and the journal continues at ${logOffset}`,
      });
      return;
    }
    if (kept !== undefined && end === kept.first) end = kept.last + 1;
  }
  const known = expectations.knownEnd;
  // A damaged last segment is reported as such; its end says nothing more. With a journal, a tail
  // lost in the log is found again there, so the end with the journal is checked all the same.
  const lastDamaged =
    previousDamaged &&
    last !== undefined &&
    (limits.journal === undefined || damage.some((d) => d.kind === 'corrupt'));
  if (
    known !== undefined &&
    !lastDamaged &&
    (known.exact ? end !== known.logOffset : end < known.logOffset)
  ) {
    damage.push({
      kind: 'corrupt',
      file: last?.path ?? dir,
      position: last?.validBytes ?? 0,
      bytesAfter: 0,
      reason:
        end < known.logOffset
          ? `the log ends at log offset ${end} (${end === 0 ? 'no batch' : `batches up to ${end - 1}`}${last === undefined ? ', no segment file' : ''}${replay !== undefined && end !== result.logEnd ? ', with the commit journal' : ''}), but it held batches up to log offset ${known.logOffset - 1} when the store was last ${known.exact ? 'closed' : 'opened, or when a checkpoint was taken'} (segments or batches are missing)`
          : `the log ends at log offset ${end}${replay !== undefined && end !== result.logEnd ? ' (with the commit journal)' : ''}, past log offset ${known.logOffset}, where store.json says it ended when the store was last closed (batches were written after that close: store.json is older than the log, restored from a copy, or the log is another store's)`,
    });
  }
}

/** Scans one segment into `segment`; returns its damage, if any. */
async function scanOne(
  fs: FileSystem,
  segment: InspectedSegment,
  isLast: boolean,
  previous: number,
  limits: LogLimits,
  expectations: LogExpectations,
  options: InspectOptions,
  journaled?: ReadonlyMap<number, number>,
): Promise<LogDamage | undefined> {
  let badRecord: LogDamage | undefined;
  let contradicted: LogDamage | undefined;
  const scan = await scanSegment(
    fs,
    segment.readPath,
    {
      batchBytesMax: limits.batchBytesMax,
      previousLogOffset: previous,
      baseOffset: segment.baseOffset,
      endBytes: segment.fileBytes,
      consecutive: isLast,
    },
    (buf, position, logOffset, sizeBytes, filePosition) => {
      if (segment.firstLogOffset < 0) segment.firstLogOffset = logOffset;
      if (badRecord !== undefined) return;
      // The journal may hold older copies of batches a compaction has rewritten since, in sealed
      // segments; nothing rewrites the active one. A journal batch there that is not the log's is a
      // journal of another store copied in by mistake (whose batches past the log's end would be
      // appended as this log's), or damage to one of them.
      const journaledChecksum = journaled?.get(logOffset);
      if (
        contradicted === undefined &&
        journaledChecksum !== undefined &&
        journaledChecksum !== readBatchChecksum(buf, position)
      ) {
        contradicted = {
          kind: 'corrupt',
          file: segment.path,
          position: filePosition,
          bytesAfter: segment.fileBytes - filePosition,
          reason: `batch ${logOffset}: the commit journal holds another batch at this log offset of the active segment, which nothing rewrites: the store's journal/ files are not this store's (copied from another store?), or one of them is damaged; if the journal is another store's, move it aside and open again (docs/recovery.md, 'A damaged journal')`,
        };
      }
      try {
        // Every batch, visited or not (below a checkpoint too): one of a format this version
        // cannot read is damage, never a torn tail.
        checkBatchFormat(buf, position);
        options.visit?.(buf, position, logOffset, sizeBytes, filePosition);
      } catch (error) {
        if (!(error instanceof DecodeError)) throw error;
        const at = filePosition + Math.max(0, error.position - position);
        badRecord = {
          kind: 'corrupt',
          file: segment.path,
          position: at,
          bytesAfter: segment.fileBytes - at,
          reason: `batch ${logOffset}: checksum matches but a record does not decode: ${error.message}`,
        };
      }
    },
  );
  segment.validBytes = scan.validBytes;
  segment.zeroTailBytes = scan.zeroTailBytes;
  segment.batchCount = scan.batchCount;
  segment.lastLogOffset = scan.lastLogOffset;
  if (badRecord !== undefined) return badRecord;
  if (contradicted !== undefined) return contradicted;
  const at = (
    position: number,
    reason: string,
    kind: LogDamage['kind'] = 'corrupt',
  ): LogDamage => ({
    kind,
    file: segment.path,
    position,
    bytesAfter: scan.fileBytes - position,
    reason,
  });
  if (!isLast) {
    if (scan.damage !== undefined)
      return at(scan.damage.position, `${scan.damage.reason} (in a sealed segment)`);
    if (scan.zeroTailBytes > 0)
      return at(
        scan.validBytes,
        `${scan.zeroTailBytes} zero bytes at the end of a sealed segment (only the active segment is preallocated)`,
      );
    if (scan.batchCount === 0) return at(0, 'a sealed segment holds no batch');
    return undefined;
  }
  if (scan.damage === undefined) return undefined;
  const { position, reason } = scan.damage;
  // With no intact batch in it, the damaged one is the segment's first: its log offset is the base
  // (`previous` is -1 when no segment precedes it, as after a checkpoint freed them all).
  const lastValid = scan.lastLogOffset >= 0 ? scan.lastLogOffset : segment.baseOffset - 1;
  // With a journal, the log's tail after its own last fdatasync may be lost over many rounds, and
  // a batch the store recorded as durable may be durable only in the journal: damage there is a
  // torn tail when the journal holds the damaged batch and every valid batch after it (recovery
  // writes them again; classifyTailDamage), or when the journal's copies fill the damaged bytes
  // exactly (recovery writes them, and keeps the batches after them), and the end, with the
  // journal, is checked against what the store recorded (scanAll).
  const journalRun = journalRunFrom(limits.journal?.replay, lastValid + 1);
  const journalCoversTo = journalRun && lastValid + journalRun.length;
  const tail = await classifyTailDamage(fs, segment.readPath, scan.fileBytes, position, lastValid, {
    ...limits,
    durability: limits.journal !== undefined ? 'os' : limits.durability,
    durableBelow: journalCoversTo !== undefined ? undefined : expectations.knownEnd?.logOffset,
    journalCoversTo,
    journalRunBytes: journalRun,
  });
  if (tail.kind === 'corrupt') return at(position, `${reason}; ${tail.reason}`);
  if (tail.kind === 'torn') return at(position, `${reason}; nothing valid follows`, 'torn-tail');
  if (tail.kind === 'journaled')
    return at(
      position,
      `${reason}; the commit journal holds this batch and the ${tail.batchesAfter} valid one(s) after it (the log had not synced them itself)`,
      'torn-tail',
    );
  if (tail.kind === 'journal-repair') {
    const { kept } = tail;
    // The journal's copies written in place: from the damaged batch up to the first one kept.
    const repairedBatches = kept.first - (lastValid + 1);
    return {
      ...at(
        position,
        `${reason}; the commit journal holds this batch${repairedBatches > 1 ? ` and the ${repairedBatches - 1} after it` : ''}, filling the damaged bytes exactly, and the ${tail.batchesAfter} valid one(s) after them (log offsets ${kept.first}..${kept.last}) are kept`,
        'torn-tail',
      ),
      kept,
    };
  }
  return at(
    position,
    `${reason}; a write round cut short by a crash: a lost sector, then ${tail.batchesAfter} batch(es) written after the last fdatasync`,
    'torn-tail',
  );
}

/**
 * The lengths of the run of consecutive batches that `replay` (a log's batches in the commit
 * journal) holds from `logOffset` on, in log order; undefined when it does not hold `logOffset`.
 */
function journalRunFrom(
  replay: readonly Buffer[] | undefined,
  logOffset: number,
): number[] | undefined {
  if (replay === undefined) return undefined;
  const lengths: number[] = [];
  for (const batch of replay)
    if (readBatchLogOffset(batch) === logOffset + lengths.length) lengths.push(batch.length);
  return lengths.length > 0 ? lengths : undefined;
}

/** The record; undefined when the file is gone (deleted since listed); a reason when unreadable. */
function parseRejected(bytes: Buffer | null): RejectedBatches | undefined | string {
  if (bytes === null) return undefined;
  let fields: Record<string, unknown>;
  try {
    fields = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  } catch {
    return 'damaged record (not JSON)';
  }
  const { segment, position, checksum, recordChecksum } = fields ?? {};
  if (
    typeof segment !== 'string' ||
    parseSegmentFileName(segment) === undefined ||
    !Number.isSafeInteger(position) ||
    (position as number) < 0 ||
    !Number.isSafeInteger(checksum)
  )
    return 'damaged record (a field is missing or out of range)';
  const record = { segment, position: position as number, checksum: checksum as number };
  // Records written before the record had a checksum of its own are taken as they are.
  if (recordChecksum !== undefined && recordChecksum !== rejectedRecordChecksum(record))
    return 'damaged record (record checksum mismatch)';
  return record;
}

/** True when the batch the record names is still at its position (its stored checksum matches). */
async function rejectedBatchPresent(
  fs: FileSystem,
  filePath: string,
  record: RejectedBatches,
): Promise<boolean> {
  const handle = await fs.open(filePath, 'r');
  try {
    const header = Buffer.alloc(BATCH_CHECKSUM_END);
    const got = await handle.read(header, 0, BATCH_CHECKSUM_END, record.position);
    return got === BATCH_CHECKSUM_END && readBatchChecksum(header) === record.checksum;
  } finally {
    await handle.close();
  }
}

/** The OffsetStoreError for a damaged place (CORRUPT_MESSAGE, naming file and byte position). */
export function damageError(damage: LogDamage, cause?: unknown): OffsetStoreError {
  return new OffsetStoreError(
    'CORRUPT_MESSAGE',
    `${damage.file} at byte ${damage.position}: ${damage.reason}`,
    { cause },
  );
}

/** How a store whose segments do not chain is put right. */
const ONE_BACKUP =
  '; segments are never restored or removed one by one: restore the whole store from one backup (`offset-store backup`, `store.backup`)';

/**
 * Why segment `name` (from `baseOffset`) does not follow segment `before`, whose last batch is at
 * `previous` (-1: none): segments chain without a gap, each beginning right after the last batch of
 * the one before (compaction keeps each segment's last batch), whether or not it holds any. Undefined
 * when it follows.
 */
export function segmentChainBreak(
  before: string,
  previous: number,
  name: string,
  baseOffset: number,
): string | undefined {
  if (previous === baseOffset - 1) return undefined;
  return previous < baseOffset - 1
    ? `log offsets ${previous + 1}..${baseOffset - 1} are missing: ${before} ends at log offset ${previous} and ${name} begins at ${baseOffset} (a segment is missing or was cut short, or an older copy of ${before} was put in its place)${ONE_BACKUP}`
    : `${before} ends at log offset ${previous}, past the base ${baseOffset} of ${name}: the two hold the same log offsets, as when a segment that a compaction merged into ${before} is put back from an older copy of the store${ONE_BACKUP}`;
}

/**
 * Where a log ends: after its last batch (at `previous`, -1 for none), or at its last segment's base
 * offset (`lastBase`) when that segment holds none (a checkpoint freed every batch before it).
 */
export function logEndOf(previous: number, lastBase: number | undefined): number {
  return Math.max(previous + 1, lastBase ?? 0);
}
