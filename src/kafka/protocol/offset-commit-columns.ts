/**
 * OffsetCommit (v2-9) read straight into columns and its response written straight from them: the
 * server's hot path for the one request a busy consumer sends most, beside the table-driven codec
 * (message-decoder.ts, message-encoder.ts), which stays the authority on the format.
 *
 * Why: the table-driven decoder makes an object and a BigInt per partition, the handler reads them
 * into the store's form, and its answer is an object per partition that the encoder walks again.
 * For a 100-partition commit that was most of what the wire added to the store's own work. Here a
 * request becomes parallel arrays (one entry per partition, in request order: index, offset as a
 * double, leader epoch, metadata) and the response is written from the handler's arrays in one
 * pass, into one buffer. The usual partition (empty or null metadata, no tagged field) is read in
 * place, its fixed-width fields straight from the buffer after one bounds check
 * (`readPlainPartition`: about 3x faster for 100 partitions than a reader call per field); any
 * other partition is read field by field.
 *
 * Contract (what keeps two decoders of one format honest):
 * - `decodeOffsetCommitColumns` accepts only bytes the table-driven decoder accepts, and reads them
 *   the same way: the same fields, an int64 offset as the double `Number(bigint)` would give (high
 *   word times 2^32 plus the low word: both exact, so the sum rounds once, exactly as the
 *   conversion does), a null metadata as null. Anything it is not sure of (a non-empty tagged-field
 *   section, an array or string that does not fit, a null where none is allowed, bytes left over,
 *   a version it does not read) returns undefined, and the caller decodes the request the
 *   table-driven way, which then answers or refuses it as it always has. So this path never has to
 *   be right about an error, only about a value.
 * - `encodeOffsetCommitResponse` writes the bytes `encodeResponse` writes for the same answer,
 *   including its refusal (RangeError) of a topic name over 32767 UTF-8 bytes.
 * Both are checked against the table-driven codec by property tests over every version served.
 *
 * Request body (v2-9; flexible from v8: compact strings and arrays, a tagged-field section after
 * each struct):
 *
 * | field                      | versions | type            |
 * |----------------------------|----------|-----------------|
 * | groupId                    | 2+       | string          |
 * | generationIdOrMemberEpoch  | 2+       | int32           |
 * | memberId                   | 2+       | string          |
 * | groupInstanceId            | 7+       | nullable string |
 * | retentionTimeMs            | 2-4      | int64 (ignored) |
 * | topics[].name              | 2+       | string          |
 * | topics[].partitions[]      | 2+       | index int32, offset int64, leader epoch int32 (6+; else -1), metadata nullable string |
 */
import type { RequestHeader } from './headers.js';
import { responseHeaderBytes, writeResponseHeader } from './headers.js';
import { API_KEYS } from './api-table.js';
import { STRING_BYTES_MAX } from './schema.js';
import { ByteReader } from './byte-reader.js';
import { ByteWriter, unsignedVarintBytes } from './byte-writer.js';
import { isKafkaDecodeError } from './kafka-decode-error.js';
import { readString } from './message-decoder.js';
import { FRAME_SIZE_BYTES } from './request-codec.js';

/** An OffsetCommit request as parallel arrays: the partitions of every topic, topic after topic. */
export interface OffsetCommitColumns {
  readonly groupId: string;
  readonly generationIdOrMemberEpoch: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  /** Per topic: its name and how many partitions it listed. */
  readonly topicNames: string[];
  readonly topicCounts: number[];
  /** Per partition, in request order. */
  readonly partitionIndexes: number[];
  /** The committed offset as a double: exact when it is a safe integer, outside the safe range when the int64 is. */
  readonly offsets: number[];
  readonly leaderEpochs: number[];
  readonly metadata: (string | null)[];
}

/** The versions read here: those the server serves. */
const FIRST_VERSION = 2;
const LAST_VERSION = 9;
const FLEXIBLE_FROM = 8;
const LEADER_EPOCH_FROM = 6;
const INSTANCE_ID_FROM = 7;
const RETENTION_UNTIL = 4;

/**
 * The body of an OffsetCommit request as columns, or undefined when the table-driven decoder must
 * read it (see the contract above). `header` is the request's decoded header.
 */
export function decodeOffsetCommitColumns(
  payload: Buffer,
  header: RequestHeader,
): OffsetCommitColumns | undefined {
  const version = header.apiVersion;
  if (
    header.apiKey !== API_KEYS.OffsetCommit ||
    version < FIRST_VERSION ||
    version > LAST_VERSION ||
    header.headerBytes > payload.length
  )
    return undefined;
  try {
    return readBody(new ByteReader(payload, header.headerBytes, payload.length, WHAT), version);
  } catch (error) {
    if (isKafkaDecodeError(error)) return undefined;
    throw error;
  }
}

const WHAT = 'OffsetCommitRequest (columns)';

/**
 * Reads the body with the table-driven decoder's own reads (byte-reader.ts, `readString`): any
 * KafkaDecodeError, or a refusal of what this reader does not handle, means "not sure".
 */
function readBody(r: ByteReader, version: number): OffsetCommitColumns {
  const flexible = version >= FLEXIBLE_FROM;
  const groupId = readString(r, flexible, false, 'groupId')!;
  const generationIdOrMemberEpoch = r.int32('generationIdOrMemberEpoch');
  const memberId = readString(r, flexible, false, 'memberId')!;
  const groupInstanceId =
    version >= INSTANCE_ID_FROM ? readString(r, flexible, true, 'groupInstanceId') : null;
  if (version <= RETENTION_UNTIL) r.skip(8, 'retentionTimeMs');
  // At least: a topic's name length, partition count and tag section; a partition's index, offset,
  // leader epoch (v6+), metadata length and tag section.
  const topics = arrayCount(r, flexible, flexible ? 3 : 6, 'topics');
  const topicNames: string[] = new Array<string>(topics);
  const topicCounts: number[] = new Array<number>(topics);
  // Sized by the first topic's count (checked against the bytes left first), which is every
  // partition of the usual request: filling arrays by index is twice as fast as growing them.
  let partitionIndexes: number[] = [];
  let offsets: number[] = [];
  let leaderEpochs: number[] = [];
  let metadata: (string | null)[] = [];
  const withEpoch = version >= LEADER_EPOCH_FROM;
  const partitionBytesMin = (withEpoch ? 16 : 12) + 2;
  let at = 0;
  for (let t = 0; t < topics; t++) {
    topicNames[t] = readString(r, flexible, false, 'topics.name')!;
    const partitions = arrayCount(r, flexible, partitionBytesMin, 'topics.partitions');
    topicCounts[t] = partitions;
    if (t === 0) {
      partitionIndexes = new Array<number>(partitions);
      offsets = new Array<number>(partitions);
      leaderEpochs = new Array<number>(partitions);
      metadata = new Array<string | null>(partitions);
    }
    for (let i = 0; i < partitions; i++, at++) {
      if (
        readPlainPartition(
          r,
          at,
          flexible,
          withEpoch,
          partitionIndexes,
          offsets,
          leaderEpochs,
          metadata,
        )
      )
        continue;
      partitionIndexes[at] = r.int32('partitionIndex');
      // Two words rather than int64's BigInt: both exact, so the sum rounds once, as Number(bigint).
      const high = r.int32('committedOffset');
      offsets[at] = high * 4294967296 + (r.int32('committedOffset') >>> 0);
      leaderEpochs[at] = withEpoch ? r.int32('committedLeaderEpoch') : -1;
      metadata[at] = readString(r, flexible, true, 'committedMetadata');
      if (flexible) noTaggedFields(r);
    }
    if (flexible) noTaggedFields(r);
  }
  if (flexible) noTaggedFields(r);
  if (r.remaining !== 0) r.fail('bytes left after the message');
  return {
    groupId,
    generationIdOrMemberEpoch,
    memberId,
    groupInstanceId,
    topicNames,
    topicCounts,
    partitionIndexes,
    offsets,
    leaderEpochs,
    metadata,
  };
}

/**
 * The usual partition, read in place: its fixed fields present, an empty or null metadata and (when
 * flexible) an empty tagged-field section. Stores it at `at` and returns true; returns false having
 * read nothing for anything else, which the field-by-field reads then take (and refuse, if they
 * must). The values are those the field-by-field reads give for the same bytes: a one-byte length
 * of an empty string, 1 (flexible) or 0, is '', and of a null one, 0 (flexible) or -1, is null.
 */
function readPlainPartition(
  r: ByteReader,
  at: number,
  flexible: boolean,
  withEpoch: boolean,
  partitionIndexes: number[],
  offsets: number[],
  leaderEpochs: number[],
  metadata: (string | null)[],
): boolean {
  const b = r.buffer;
  const p = r.position;
  const fixed = withEpoch ? 16 : 12;
  // The metadata length: one byte flexible, two bytes otherwise; then a tag section when flexible.
  const next = p + fixed + 2;
  if (next > r.end) return false;
  let value: string | null;
  if (flexible) {
    const length = b[p + fixed]!;
    if (b[p + fixed + 1] !== 0 || length > 1) return false;
    value = length === 1 ? '' : null;
  } else {
    const length = (((b[p + fixed]! << 8) | b[p + fixed + 1]!) << 16) >> 16;
    if (length !== 0 && length !== -1) return false;
    value = length === 0 ? '' : null;
  }
  partitionIndexes[at] = (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;
  const high = (b[p + 4]! << 24) | (b[p + 5]! << 16) | (b[p + 6]! << 8) | b[p + 7]!;
  const low = ((b[p + 8]! << 24) | (b[p + 9]! << 16) | (b[p + 10]! << 8) | b[p + 11]!) >>> 0;
  offsets[at] = high * 4294967296 + low;
  leaderEpochs[at] = withEpoch
    ? (b[p + 12]! << 24) | (b[p + 13]! << 16) | (b[p + 14]! << 8) | b[p + 15]!
    : -1;
  metadata[at] = value;
  r.skipTo(next);
  return true;
}

/**
 * An array's element count, checked against the bytes left at `elementBytesMin` each before
 * anything is sized by it; a null array (none is allowed here) is refused.
 */
function arrayCount(
  r: ByteReader,
  flexible: boolean,
  elementBytesMin: number,
  what: string,
): number {
  const count = flexible ? r.unsignedVarint(what) - 1 : r.int32(what);
  if (count < 0) r.fail(`${what}: null`);
  r.checkCount(count, elementBytesMin, what);
  return count;
}

/** An empty tagged-field section; a non-empty one is left to the table-driven decoder. */
function noTaggedFields(r: ByteReader): void {
  if (!r.noTaggedFields()) r.fail('a tagged field');
}

/** An OffsetCommit answer as parallel arrays: per topic a name and a count, per partition an index and an error code. */
export interface OffsetCommitAnswerColumns {
  readonly topicNames: readonly string[];
  readonly topicCounts: readonly number[];
  readonly partitionIndexes: readonly number[];
  readonly errorCodes: readonly number[];
}

/**
 * The framed OffsetCommit response (size, header, body) of `version`: the bytes `encodeResponse`
 * writes for `{ throttleTimeMs, topics }` built from the columns. Throws a RangeError for a topic
 * name over 32767 UTF-8 bytes, as `encodeResponse` does. The indexes are the request's int32s and
 * the codes the handler's int16s, so they are written unchecked.
 */
export function encodeOffsetCommitResponse(
  version: number,
  correlationId: number,
  throttleTimeMs: number,
  answer: OffsetCommitAnswerColumns,
): Buffer {
  const { topicNames, topicCounts, partitionIndexes, errorCodes } = answer;
  const flexible = version >= FLEXIBLE_FROM;
  const nameBytes = topicNames.map((name) => {
    const bytes = Buffer.byteLength(name, 'utf8');
    if (bytes > STRING_BYTES_MAX)
      throw new RangeError(
        `OffsetCommitResponse v${version} topics.name: ${bytes} UTF-8 bytes, more than ${STRING_BYTES_MAX}`,
      );
    return bytes;
  });
  // Body: throttle (v3+), topic count, per topic a name, a partition count and its partitions
  // (6 bytes each, 7 with their tag section), and the tag sections of topics and body.
  const tag = flexible ? 1 : 0;
  let body = (version >= THROTTLE_FROM ? 4 : 0) + countBytes(flexible, topicNames.length) + tag;
  for (let t = 0; t < topicNames.length; t++) {
    body += (flexible ? unsignedVarintBytes(nameBytes[t]! + 1) : 2) + nameBytes[t]!;
    body += countBytes(flexible, topicCounts[t]!) + topicCounts[t]! * (6 + tag) + tag;
  }
  const payloadBytes = responseHeaderBytes(API_KEYS.OffsetCommit, version) + body;
  const w = new ByteWriter(FRAME_SIZE_BYTES + payloadBytes);
  w.int32(payloadBytes);
  writeResponseHeader(w, API_KEYS.OffsetCommit, version, correlationId);
  if (version >= THROTTLE_FROM) w.int32(throttleTimeMs);
  writeCount(w, flexible, topicNames.length);
  let at = 0;
  for (let t = 0; t < topicNames.length; t++) {
    const bytes = nameBytes[t]!;
    if (flexible) w.unsignedVarint(bytes + 1);
    else w.int16(bytes);
    w.utf8(topicNames[t]!, bytes);
    const count = topicCounts[t]!;
    writeCount(w, flexible, count);
    for (let i = 0; i < count; i++, at++) {
      w.int32(partitionIndexes[at]!);
      w.int16(errorCodes[at]!);
      if (flexible) w.int8(0);
    }
    if (flexible) w.int8(0);
  }
  if (flexible) w.int8(0);
  return w.finish();
}

const THROTTLE_FROM = 3;

/** Bytes of an array's count. */
function countBytes(flexible: boolean, count: number): number {
  return flexible ? unsignedVarintBytes(count + 1) : 4;
}

function writeCount(w: ByteWriter, flexible: boolean, count: number): void {
  if (flexible) w.unsignedVarint(count + 1);
  else w.int32(count);
}
