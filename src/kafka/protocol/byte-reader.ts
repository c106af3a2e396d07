/**
 * Bounds-checked big-endian reads over one buffer, for bytes that came from the network. Every read
 * compares what it needs with the bytes left before touching the buffer, so hostile input ends in a
 * KafkaDecodeError naming what was being read, never in a RangeError from Buffer. Lengths are
 * returned to the caller only after they have been checked against the bytes present; nothing is
 * allocated from a length alone.
 *
 * Varints (KIP-482 and the record format): an unsigned varint is at most 5 bytes and at most
 * 2^32 - 1; a varint (zigzag, 32-bit) at most 5 bytes; a varlong (zigzag, 64-bit) at most 10 bytes.
 * A longer encoding is refused, so a run of continuation bytes cannot make a read loop long.
 *
 * Arrays: a count is checked against the bytes left (`checkCount`), and every count a reader checks
 * is also taken from a budget of ARRAY_ELEMENTS_MAX for the whole message, so that elements of a few
 * bytes each cannot make one message take seconds to decode.
 */
import { KafkaDecodeError } from './kafka-decode-error.js';
import { ARRAY_ELEMENTS_MAX } from './schema.js';

const UUID_BYTES = 16;
const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Reads Kafka's primitive types from `buf[position, end)`. */
export class ByteReader {
  readonly #buf: Buffer;
  readonly #context: string;
  #position: number;
  #end: number;
  #elementsLeft = ARRAY_ELEMENTS_MAX;

  /** `context` prefixes every error message, e.g. `'OffsetCommitRequest v8'`. */
  constructor(buf: Buffer, position: number, end: number, context: string) {
    if (!(position >= 0 && position <= end && end <= buf.length)) {
      throw new RangeError(
        `reader bounds [${position}, ${end}) outside a buffer of ${buf.length} bytes`,
      );
    }
    this.#buf = buf;
    this.#position = position;
    this.#end = end;
    this.#context = context;
  }

  /** Position of the next byte to read. */
  get position(): number {
    return this.#position;
  }

  /** Bytes left before the end. */
  get remaining(): number {
    return this.#end - this.#position;
  }

  /** Throws a KafkaDecodeError for the current (or given) position. */
  fail(message: string, position = this.#position): never {
    throw new KafkaDecodeError(`${this.#context}: ${message}`, position);
  }

  /** Throws unless `bytes` more bytes are present. */
  need(bytes: number, what: string): void {
    if (bytes > this.#end - this.#position)
      this.fail(`truncated ${what}: needs ${bytes} bytes, ${this.remaining} left`);
  }

  int8(what: string): number {
    this.need(1, what);
    return this.#buf.readInt8(this.#position++);
  }

  // int16/32/64 read the bytes directly once need() has checked they are there: Buffer's read
  // methods check offset and bounds again, which was a quarter of decoding an OffsetCommit.
  int16(what: string): number {
    this.need(2, what);
    const b = this.#buf;
    const p = this.#position;
    this.#position = p + 2;
    return (((b[p]! << 8) | b[p + 1]!) << 16) >> 16;
  }

  int32(what: string): number {
    this.need(4, what);
    const b = this.#buf;
    const p = this.#position;
    this.#position = p + 4;
    return (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;
  }

  int64(what: string): bigint {
    this.need(8, what);
    const b = this.#buf;
    const p = this.#position;
    this.#position = p + 8;
    const high = (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;
    // A safe integer (the offsets and timestamps of practice) is one BigInt of one exact double;
    // readBigInt64BE builds it from three BigInt operations.
    if (high >= -0x200000 && high < 0x200000)
      return BigInt(
        high * 4294967296 +
          (b[p + 4]! * 0x1000000 + ((b[p + 5]! << 16) | (b[p + 6]! << 8) | b[p + 7]!)),
      );
    return b.readBigInt64BE(p);
  }

  /** A bool: any non-zero byte is true, as Kafka reads it. */
  bool(what: string): boolean {
    return this.int8(what) !== 0;
  }

  /** 16 bytes as a lowercase `8-4-4-4-12` hex string. */
  uuid(what: string): string {
    this.need(UUID_BYTES, what);
    const b = this.#buf;
    const p = this.#position;
    this.#position += UUID_BYTES;
    let hex = '';
    for (let i = 0; i < UUID_BYTES; i++) {
      if (i === 4 || i === 6 || i === 8 || i === 10) hex += '-';
      hex += HEX[b[p + i]!]!;
    }
    return hex;
  }

  /** An unsigned varint of at most 5 bytes and at most 2^32 - 1. */
  unsignedVarint(what: string): number {
    const start = this.#position;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 5; i++) {
      if (this.#position >= this.#end) this.fail(`truncated ${what} (varint)`, start);
      const byte = this.#buf[this.#position++]!;
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) {
        if (value > 0xffffffff) this.fail(`${what}: varint above 2^32 - 1`, start);
        return value;
      }
      scale *= 128;
    }
    return this.fail(`${what}: varint longer than 5 bytes`, start);
  }

  /** A zigzag varint (32-bit signed). */
  varint(what: string): number {
    const raw = this.unsignedVarint(what);
    return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
  }

  /** A zigzag varlong (64-bit signed) of at most 10 bytes. */
  varlong(what: string): bigint {
    const start = this.#position;
    let raw = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.#position >= this.#end) this.fail(`truncated ${what} (varlong)`, start);
      const byte = this.#buf[this.#position++]!;
      raw |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) {
        if (raw > 0xffffffffffffffffn) this.fail(`${what}: varlong above 64 bits`, start);
        return (raw >> 1n) ^ -(raw & 1n);
      }
      shift += 7n;
    }
    return this.fail(`${what}: varlong longer than 10 bytes`, start);
  }

  /**
   * Consumes an empty tagged-field section (a single 0 byte) and returns true, or returns false
   * having consumed nothing (a non-empty section, or no byte left: the caller reads it in full).
   */
  noTaggedFields(): boolean {
    if (this.#position < this.#end && this.#buf[this.#position] === 0) {
      this.#position++;
      return true;
    }
    return false;
  }

  /**
   * The buffer read and the end of the readable range, for a caller that reads a run of
   * fixed-width fields in place (offset-commit-columns.ts) and then moves past them with `skipTo`.
   * Such a caller checks the bounds itself: bytes at or past `end` are not the message's.
   */
  get buffer(): Buffer {
    return this.#buf;
  }

  get end(): number {
    return this.#end;
  }

  /** Moves to `position`, which must lie between the current position and the end. */
  skipTo(position: number): void {
    if (!(position >= this.#position && position <= this.#end))
      throw new RangeError(`skipTo(${position}) outside [${this.#position}, ${this.#end}]`);
    this.#position = position;
  }

  /** `bytes` bytes of UTF-8 (malformed sequences become U+FFFD, as in Kafka's broker). */
  utf8(bytes: number, what: string): string {
    if (bytes === 0) return '';
    this.need(bytes, what);
    const value = this.#buf.toString('utf8', this.#position, this.#position + bytes);
    this.#position += bytes;
    return value;
  }

  /** A copy of the next `bytes` bytes: a decoded value never keeps the whole input buffer alive. */
  bytes(bytes: number, what: string): Buffer {
    this.need(bytes, what);
    const value = Buffer.from(this.#buf.subarray(this.#position, this.#position + bytes));
    this.#position += bytes;
    return value;
  }

  skip(bytes: number, what: string): void {
    this.need(bytes, what);
    this.#position += bytes;
  }

  /**
   * Throws unless `count` elements of at least `elementBytes` bytes each fit in the bytes left, and
   * the message's arrays hold at most ARRAY_ELEMENTS_MAX elements with them. Called before an array
   * is read, so a hostile count costs nothing.
   */
  checkCount(count: number, elementBytes: number, what: string): void {
    if (count > this.remaining / Math.max(1, elementBytes)) {
      this.fail(
        `${what}: ${count} elements of at least ${elementBytes} bytes cannot fit in ${this.remaining} bytes`,
      );
    }
    this.#elementsLeft -= count;
    if (this.#elementsLeft < 0)
      this.fail(`${what}: more than ${ARRAY_ELEMENTS_MAX} array elements in one message`);
  }

  /**
   * Runs `read` with the end moved to `bytes` from here (checked first), then continues right after
   * those bytes whatever `read` consumed: a tagged field is read within its declared size.
   */
  within<T>(bytes: number, what: string, read: () => T): T {
    this.need(bytes, what);
    const outerEnd = this.#end;
    const end = this.#position + bytes;
    this.#end = end;
    const value = read();
    this.#end = outerEnd;
    this.#position = end;
    return value;
  }
}
