/**
 * Reads one segment file front to back, batch by batch, in bounded chunks, and says where (if
 * anywhere) it stops being a valid log. Used by recovery, by scans for compaction and tools, and by
 * `log verify`. It never writes: what to do about damage (truncate a torn tail, refuse to open) is
 * the caller's decision, because it depends on whether this is the last segment.
 *
 * A batch is accepted when `checkBatch` accepts it and its log offset is above the previous batch's
 * (and not below the segment's base offset). Memory stays within max(chunkBytes, batchBytesMax).
 *
 * Zero tail: the log preallocates the active segment by writing zeros past its end (see log.ts), so
 * a segment may end in zero bytes. When the scan stops at a batch boundary and every byte from there
 * to the end of the file is zero, that is a zero tail (`zeroTailBytes`), not damage: no batch starts
 * with a zero length. Whether a zero tail is allowed (only in the active segment) is the caller's
 * decision, like damage.
 */
import {
  BATCH_HEADER_BYTES,
  BATCH_MAGIC_POSITION,
  LENGTH_FIELD_BYTES,
  checkBatch,
  peekBatchLogOffset,
  readBatchDurableBelow,
} from '../codec/index.js';
import type { FileHandle, FileSystem } from '../io/index.js';

/** Where and why a segment stops being valid. */
export interface SegmentDamage {
  /** Byte position in the file of the first byte that is not part of a valid batch. */
  position: number;
  /** 'incomplete': the file ends inside a batch; 'invalid': bytes present but wrong. */
  kind: 'incomplete' | 'invalid';
  /** What is wrong at `position`, for messages. */
  reason: string;
}

/** What a scan of one segment found. */
export interface SegmentScan {
  /** Bytes of valid batches from the start of the file. */
  validBytes: number;
  /** Bytes of the file the scan covered: its size, or `endBytes` when that is smaller. */
  fileBytes: number;
  /** Valid batches from the start of the file. */
  batchCount: number;
  /** Log offset of the last valid batch, or -1 if there is none. */
  lastLogOffset: number;
  /** Zero bytes from `validBytes` to the end of the file (preallocated, never written); 0 if none. */
  zeroTailBytes: number;
  /** Where and why the file stops being a valid log; absent when it ends at a batch boundary or in zeros. */
  damage?: SegmentDamage;
}

/** Receives each valid batch: `buf[position, position + sizeBytes)`; `buf` is reused after return. */
export type BatchVisitor = (
  buf: Buffer,
  position: number,
  logOffset: number,
  sizeBytes: number,
  filePosition: number,
) => void;

/** Limits and context of a segment scan. */
export interface SegmentScanOptions {
  /**
   * Largest batch accepted; a longer length field is damage, so a damaged length never makes the scan
   * allocate it.
   */
  batchBytesMax: number;
  /** Log offset of the last batch before this segment (-1 if none): batches must be above it. */
  previousLogOffset: number;
  /** The segment's base offset: no batch may lie below it. */
  baseOffset: number;
  /** Read at most this many bytes of the file (a size captured earlier); default the whole file. */
  endBytes?: number;
  /**
   * Batches must have consecutive log offsets, the first at the segment's base (true of the active
   * segment, which compaction never rewrites); otherwise they only have to increase.
   */
  consecutive?: boolean;
  /** Bytes read per read call; default 1 MiB. */
  chunkBytes?: number;
}

const CHUNK_BYTES_DEFAULT = 1 << 20;

/** Scans the segment at `path`, visiting each valid batch in order. */
export async function scanSegment(
  fs: FileSystem,
  path: string,
  options: SegmentScanOptions,
  visit?: BatchVisitor,
): Promise<SegmentScan> {
  const handle = await fs.open(path, 'r');
  try {
    return await scanHandle(handle, options, visit);
  } finally {
    await handle.close();
  }
}

async function scanHandle(
  handle: FileHandle,
  options: SegmentScanOptions,
  visit?: BatchVisitor,
): Promise<SegmentScan> {
  const fileBytes = Math.min(await handle.sizeBytes(), options.endBytes ?? Number.MAX_SAFE_INTEGER);
  let buf = Buffer.allocUnsafe(
    Math.min(options.chunkBytes ?? CHUNK_BYTES_DEFAULT, Math.max(fileBytes, 64)),
  );
  let bufStart = 0; // file position of buf[0]
  let bufEnd = 0; // valid bytes in buf
  let p = 0; // position in buf of the next batch
  let previous = options.previousLogOffset;
  const result: SegmentScan = {
    validBytes: 0,
    fileBytes,
    batchCount: 0,
    lastLogOffset: -1,
    zeroTailBytes: 0,
  };
  for (;;) {
    const filePosition = bufStart + p;
    if (filePosition >= fileBytes) break;
    const check = checkBatch(buf, p, bufEnd, options.batchBytesMax);
    if (check.kind === 'incomplete') {
      if (bufStart + bufEnd >= fileBytes) {
        result.damage = { position: filePosition, kind: 'incomplete', reason: check.reason };
        break;
      }
      const neededBytes = bufEnd - p >= 4 ? buf.readUInt32LE(p) + 4 : 4;
      buf.copy(buf, 0, p, bufEnd);
      bufStart += p;
      bufEnd -= p;
      p = 0;
      if (neededBytes > buf.length) {
        const grown = Buffer.allocUnsafe(
          Math.min(Math.max(neededBytes, buf.length * 2), options.batchBytesMax),
        );
        buf.copy(grown, 0, 0, bufEnd);
        buf = grown;
      }
      const want = Math.min(buf.length - bufEnd, fileBytes - bufStart - bufEnd);
      const got = await handle.read(buf, bufEnd, want, bufStart + bufEnd);
      if (got === 0) {
        result.damage = { position: filePosition, kind: 'incomplete', reason: FILE_SHRANK };
        break;
      }
      bufEnd += got;
      continue;
    }
    if (check.kind === 'invalid') {
      result.damage = { position: filePosition, kind: 'invalid', reason: check.reason };
      break;
    }
    const expected = Math.max(previous + 1, options.baseOffset);
    if (options.consecutive === true ? check.logOffset !== expected : check.logOffset < expected) {
      result.damage = {
        position: filePosition,
        kind: 'invalid',
        reason:
          options.consecutive === true
            ? `log offset ${check.logOffset} where ${expected} comes next (previous ${previous}, segment base ${options.baseOffset})`
            : `log offset ${check.logOffset} out of order (previous ${previous}, segment base ${options.baseOffset})`,
      };
      break;
    }
    visit?.(buf, p, check.logOffset, check.sizeBytes, filePosition);
    previous = check.logOffset;
    result.lastLogOffset = check.logOffset;
    result.batchCount++;
    p += check.sizeBytes;
    result.validBytes = bufStart + p;
  }
  if (
    result.damage !== undefined &&
    result.damage.reason !== FILE_SHRANK &&
    (await isZeroFrom(handle, result.validBytes, fileBytes, buf))
  ) {
    result.zeroTailBytes = fileBytes - result.validBytes;
    delete result.damage;
  }
  return result;
}

const FILE_SHRANK = 'file shrank during the scan';

/** True when `buf[from, to)` holds only zero bytes. */
function isZero(buf: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (buf[i] !== 0) return false;
  return true;
}

/** True when every byte of the file in [from, end) is zero; reads through `scratch` chunk by chunk. */
async function isZeroFrom(
  handle: FileHandle,
  from: number,
  end: number,
  scratch: Buffer,
): Promise<boolean> {
  for (let at = from; at < end;) {
    const got = await handle.read(scratch, 0, Math.min(scratch.length, end - at), at);
    if (got === 0) return false;
    if (!isZero(scratch, 0, got)) return false;
    at += got;
  }
  return true;
}

/**
 * How damage at `fromPosition` in the last segment of a log is to be read (the recovery rules):
 * - 'corrupt' whenever the damaged batch was known to be durable: its log offset is below
 *   `durableBelow` (what the store recorded at its last clean close or open), or a valid batch after
 *   the damage says, through its syncLag (record-batch.ts), that the damaged batch was fdatasynced
 *   before it was written. A power loss cannot damage durable data, so this is never a torn write;
 * - 'torn': no valid batch (with a log offset above `previousLogOffset`) starts after it: a write cut
 *   short at the end of the log;
 * - 'torn-round': valid batches follow, none of them written after the damaged batch was durable,
 *   and part of the damaged stretch is a lost sector. That is what a power loss leaves when the disk
 *   kept some sectors of the last, unsynced writes and not others: a lost sector reads as the zeros
 *   preallocated there (or as nothing past the old end). Batches whose syncLag is unknown (-1,
 *   written by an earlier version) must instead end within reach of the damage: one flush round
 *   (`flushBytesMax` or one batch, whichever is larger) with durability 'fsync', the whole tail with
 *   'os'. A lost sector is an
 *   aligned 512-byte sector whose part inside the damaged stretch is all zeros and either starts the
 *   stretch and covers the damaged batch's magic byte (never 0 in a batch), or does not start it and
 *   is at least 508 bytes long (shorter, it would have zeroed the magic byte of the valid batch after
 *   it). A flipped bit makes neither; what still could is a batch whose own bytes hold a whole
 *   aligned sector of zeros (e.g. metadata of NUL characters) that bit rot damages elsewhere, with
 *   valid batches following within reach. A round that began in the last 1-4 bytes of a sector,
 *   whose sector came back as it was before the round (zeros there) while the next ones were kept,
 *   has lost only the low bytes of its first batch's length: that is a lost sector too when those
 *   bytes are zeros and, with the length the next valid batch's position implies, the batch is whole
 *   and valid (its checksum holds). A flipped bit can only pass for it by zeroing every one of those
 *   1-4 bytes of a batch of the last round, with nothing after saying that round was durable;
 * - 'journaled': valid batches follow, none of them written after the damaged batch was durable,
 *   and the commit journal holds the damaged batch and every batch after it (`journalCoversTo`, the
 *   highest log offset of the journal's run that starts at the damaged batch). The log's copies of
 *   journaled batches are written but not synced by the log, and not only a power loss damages
 *   them: when the kernel's writeback of their pages fails, the pages are marked clean, may be
 *   dropped and read back from the disk (zeros, or older bytes), and the log's next batch is then
 *   written into the same sector after them. No rule on lost sectors can tell that from bit rot,
 *   and none needs to: cutting the log at the damage drops nothing the journal does not write again.
 *   A valid batch after it that the journal lacks may have been acknowledged by the log's own
 *   fdatasync, and cutting it would lose it: then the next rule applies;
 * - 'journal-repair': valid batches follow, and the damaged stretch is exactly the journal's
 *   batches from the damaged one to the first valid one after it (`journalRunBytes`: their log
 *   offsets consecutive, their lengths adding up to the stretch), the batches after it contiguous
 *   with consecutive log offsets, and nothing valid after them (`kept`: where they lie). Whatever
 *   damaged those bytes (a power loss, a failed writeback, bit rot after the log synced them),
 *   writing the journal's copies in their place gives back the log exactly as it was written, and
 *   every batch after them, acknowledged by the log's own fdatasync or not, is kept;
 * - 'corrupt': anything else, such as a damaged batch followed by valid ones further away, or damage
 *   without a lost sector. The store refuses to open rather than drop acknowledged data.
 *
 * Cost: candidates are checked cheaply (magic, length, log offset in range) before their checksum,
 * and at most HASHED_BYTES_MAX bytes are checksummed; past that the answer is 'corrupt'.
 */
export type TailDamage =
  | { kind: 'torn' }
  | { kind: 'torn-round'; batchesAfter: number }
  | { kind: 'journaled'; batchesAfter: number }
  | {
      kind: 'journal-repair';
      batchesAfter: number;
      /** The valid batches after the damaged stretch (the journal's copies fill it up to `first`). */
      kept: KeptBatches;
    }
  | { kind: 'corrupt'; batchesAfter: number; reason: string };

/** Valid batches a journal repair keeps: file positions [from, to), log offsets first..last. */
export interface KeptBatches {
  from: number;
  to: number;
  first: number;
  last: number;
}

const SECTOR_BYTES = 512;
/** A lost sector's part that does not start the damaged stretch is at least this long (see TailDamage). */
const LOST_SECTOR_PART_BYTES_MIN = SECTOR_BYTES - BATCH_MAGIC_POSITION;
const HASHED_BYTES_MAX = 256 * 1024 * 1024;

/**
 * Classifies damage at `fromPosition` of a last segment of `fileBytes` bytes (the size its scan saw,
 * `SegmentScan.fileBytes`); see TailDamage. Reads only.
 */
export async function classifyTailDamage(
  fs: FileSystem,
  path: string,
  fileBytes: number,
  fromPosition: number,
  previousLogOffset: number,
  limits: {
    batchBytesMax: number;
    flushBytesMax: number;
    durability?: 'fsync' | 'os';
    durableBelow?: number;
    readOnly?: boolean;
    journalCoversTo?: number;
    /**
     * The lengths of the journal's consecutive batches from the damaged one on (the same run as
     * `journalCoversTo`), for 'journal-repair'.
     */
    journalRunBytes?: readonly number[];
  },
): Promise<TailDamage> {
  const damagedLogOffset = previousLogOffset + 1;
  // Read by a store open to read only, while its owner may be appending: a batch the scan found
  // cut short (or zeros ahead of it) that is whole now was being written then. The view ends there,
  // before it; every batch acknowledged before the read began lies before it. (A store open for
  // writing holds the lock: nothing appends while it reads, and damage reads the same twice.)
  if (
    limits.readOnly === true &&
    (await batchNowWhole(fs, path, fromPosition, damagedLogOffset, limits.batchBytesMax))
  )
    return { kind: 'torn' };
  if (damagedLogOffset < (limits.durableBelow ?? 0)) {
    return {
      kind: 'corrupt',
      batchesAfter: 0,
      reason: `batch ${damagedLogOffset} was durable (the store knew the log held batches up to ${limits.durableBelow! - 1}: from its manifest, or a checkpoint covering them)`,
    };
  }
  const tailBytes = fileBytes - fromPosition;
  if (tailBytes <= BATCH_HEADER_BYTES) return { kind: 'torn' };
  const handle = await fs.open(path, 'r');
  const buf = Buffer.allocUnsafe(tailBytes);
  let got = 0;
  try {
    while (got < tailBytes) {
      const n = await handle.read(buf, got, tailBytes - got, fromPosition + got);
      if (n === 0) break;
      got += n;
    }
  } finally {
    await handle.close();
  }
  const reach =
    limits.durability === 'os'
      ? Number.POSITIVE_INFINITY
      : Math.max(limits.flushBytesMax, limits.batchBytesMax);
  // At most one batch per 48 bytes follows: a log offset beyond that cannot be the next batch's.
  const logOffsetMax = previousLogOffset + Math.ceil(got / BATCH_HEADER_BYTES) + 1;
  let firstStart = -1;
  let firstLogOffset = -1;
  let batchesAfter = 0;
  let previous = previousLogOffset;
  let hashedBytes = 0;
  // The valid batches after the damage lie end to end, log offsets consecutive ('journal-repair').
  let contiguous = true;
  let keptEnd = -1;
  let writtenOnceDurable: string | undefined;
  for (let p = 1; p + BATCH_HEADER_BYTES <= got;) {
    const logOffset = peekBatchLogOffset(buf, p, got);
    if (logOffset > previous && logOffset <= logOffsetMax) {
      hashedBytes += buf.readUInt32LE(p) + LENGTH_FIELD_BYTES;
      if (hashedBytes > HASHED_BYTES_MAX)
        return {
          kind: 'corrupt',
          batchesAfter,
          reason: `more than ${HASHED_BYTES_MAX} bytes of candidate batches follow`,
        };
      const check = checkBatch(buf, p, got, limits.batchBytesMax);
      if (check.kind === 'ok') {
        if (firstStart < 0) {
          firstStart = p;
          firstLogOffset = check.logOffset;
        } else if (p !== keptEnd || check.logOffset !== previous + 1) contiguous = false;
        batchesAfter++;
        keptEnd = p + check.sizeBytes;
        const durableBelow = readBatchDurableBelow(buf, p);
        // Damage at rest, unless the journal's copy of it can be written in its place (below).
        if (durableBelow > damagedLogOffset && writtenOnceDurable === undefined)
          writtenOnceDurable = `batch ${check.logOffset} after it was written once batch ${damagedLogOffset} was durable`;
        // Without a syncLag, a valid batch beyond reach is not the damaged round's.
        if (durableBelow < 0 && p + check.sizeBytes > reach)
          return {
            kind: 'corrupt',
            batchesAfter,
            reason: 'a valid batch follows beyond one write round',
          };
        previous = check.logOffset;
        p += check.sizeBytes;
        continue;
      }
    }
    p++;
  }
  if (batchesAfter === 0) return { kind: 'torn' };
  if (
    writtenOnceDurable === undefined &&
    limits.journalCoversTo !== undefined &&
    previous <= limits.journalCoversTo
  )
    return { kind: 'journaled', batchesAfter };
  const repairedBatches = firstLogOffset - damagedLogOffset;
  if (
    contiguous &&
    limits.journalRunBytes !== undefined &&
    repairedBatches >= 1 &&
    repairedBatches <= limits.journalRunBytes.length &&
    sumOf(limits.journalRunBytes, repairedBatches) === firstStart
  )
    return {
      kind: 'journal-repair',
      batchesAfter,
      kept: {
        from: fromPosition + firstStart,
        to: fromPosition + keptEnd,
        first: firstLogOffset,
        last: previous,
      },
    };
  if (writtenOnceDurable !== undefined)
    return { kind: 'corrupt', batchesAfter, reason: writtenOnceDurable };
  return hasLostSector(buf, fromPosition, firstStart) ||
    lostLengthBytes(buf, fromPosition, firstStart, damagedLogOffset, limits.batchBytesMax)
    ? { kind: 'torn-round', batchesAfter }
    : { kind: 'corrupt', batchesAfter, reason: `${batchesAfter} valid batch(es) follow` };
}

/** The sum of the first `count` of `values`. */
function sumOf(values: readonly number[], count: number): number {
  let sum = 0;
  for (let i = 0; i < count; i++) sum += values[i]!;
  return sum;
}

/** Whether the file at `path` holds, now, a whole valid batch of log offset `logOffset` at `position`. */
async function batchNowWhole(
  fs: FileSystem,
  path: string,
  position: number,
  logOffset: number,
  batchBytesMax: number,
): Promise<boolean> {
  const handle = await fs.open(path, 'r');
  try {
    const header = Buffer.alloc(BATCH_HEADER_BYTES);
    if ((await handle.read(header, 0, header.length, position)) < header.length) return false;
    const length = header.readUInt32LE(0) + LENGTH_FIELD_BYTES;
    if (length < BATCH_HEADER_BYTES || length > batchBytesMax + LENGTH_FIELD_BYTES) return false;
    const batch = Buffer.alloc(length);
    if ((await handle.read(batch, 0, length, position)) < length) return false;
    const check = checkBatch(batch, 0, length, batchBytesMax);
    return check.kind === 'ok' && check.logOffset === logOffset;
  } finally {
    await handle.close();
  }
}

/**
 * True when the damaged batch `buf[0, end)` (file position `filePosition` at buf[0], the next valid
 * batch at `end`) begins in the last 1-4 bytes of a sector, those bytes are zeros, and with them
 * replaced by the length `end` implies the batch is whole and valid at `logOffset`: the sector it
 * began in, which it shared with the durable batches before it, came back as it was at the last
 * fdatasync (zeros after them) while the next ones were kept. Only the low bytes of its length field
 * were lost, and nothing else of it: a lost sector's, not damage spread over the batch.
 */
function lostLengthBytes(
  buf: Buffer,
  filePosition: number,
  end: number,
  logOffset: number,
  batchBytesMax: number,
): boolean {
  const inSector = SECTOR_BYTES - (filePosition % SECTOR_BYTES);
  if (inSector > LENGTH_FIELD_BYTES || !isZero(buf, 0, inSector)) return false;
  const whole = Buffer.from(buf.subarray(0, end));
  whole.writeUInt32LE(end - LENGTH_FIELD_BYTES, 0);
  // The length's bytes past the sector were kept: they must already be the ones it implies.
  if (
    !whole.subarray(inSector, LENGTH_FIELD_BYTES).equals(buf.subarray(inSector, LENGTH_FIELD_BYTES))
  )
    return false;
  const check = checkBatch(whole, 0, end, batchBytesMax);
  return check.kind === 'ok' && check.sizeBytes === end && check.logOffset === logOffset;
}

/**
 * True when the damaged stretch `buf[0, end)` (file position `filePosition` at buf[0]) meets an
 * aligned sector in a part that is all zeros and is a lost sector's (TailDamage).
 */
function hasLostSector(buf: Buffer, filePosition: number, end: number): boolean {
  // Buffer index of the first sector boundary at or before buf[0].
  for (let sector = -(filePosition % SECTOR_BYTES); sector < end; sector += SECTOR_BYTES) {
    const from = Math.max(0, sector);
    const to = Math.min(end, sector + SECTOR_BYTES);
    const startsStretch = from === 0;
    if (startsStretch ? to <= BATCH_MAGIC_POSITION : to - from < LOST_SECTOR_PART_BYTES_MIN)
      continue;
    if (isZero(buf, from, to)) return true;
  }
  return false;
}
