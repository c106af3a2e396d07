/**
 * Big-endian writes into one buffer sized in advance. Encoders measure a whole message first (and
 * validate every value while doing so), then allocate exactly that many bytes and write them here, so
 * a message is one allocation and one socket write. Writing past the end is a bug in the measuring:
 * Buffer's own RangeError reports it, or (for the integers stored byte by byte) `finish()`, which
 * asserts that exactly every byte was written, so no uninitialised memory of an unsafe allocation
 * can leave the process.
 */
import { assert } from '../../util/index.js';

/** Bytes the unsigned varint encoding of `value` (0 <= value < 2^32) takes. */
export function unsignedVarintBytes(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}

/** Bytes the zigzag varint encoding of a 32-bit signed `value` takes. */
export function varintBytes(value: number): number {
  return unsignedVarintBytes(zigzag32(value));
}

/** Bytes the zigzag varlong encoding of a 64-bit signed `value` takes. */
export function varlongBytes(value: bigint): number {
  let raw = zigzag64(value);
  let bytes = 1;
  while (raw >= 0x80n) {
    raw >>= 7n;
    bytes++;
  }
  return bytes;
}

function zigzag32(value: number): number {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

function zigzag64(value: bigint): bigint {
  return value >= 0n ? value << 1n : (-value << 1n) - 1n;
}

/** Writes Kafka's primitive types into a buffer of a size known in advance. */
export class ByteWriter {
  readonly #buf: Buffer;
  #position = 0;

  constructor(bytes: number) {
    this.#buf = Buffer.allocUnsafe(bytes);
  }

  get position(): number {
    return this.#position;
  }

  // int8/16/32 store bytes directly: the measuring pass validated every value, and Buffer's write
  // methods would check the range and bounds again (a fifth of the cost of encoding a response). A
  // store past the end is dropped by the typed array, and finish() then finds the buffer not full.
  int8(value: number): void {
    this.#buf[this.#position++] = value;
  }

  int16(value: number): void {
    const b = this.#buf;
    const p = this.#position;
    b[p] = value >>> 8;
    b[p + 1] = value;
    this.#position = p + 2;
  }

  int32(value: number): void {
    const b = this.#buf;
    const p = this.#position;
    b[p] = value >>> 24;
    b[p + 1] = value >>> 16;
    b[p + 2] = value >>> 8;
    b[p + 3] = value;
    this.#position = p + 4;
  }

  int64(value: bigint): void {
    const n = Number(value);
    if (!Number.isSafeInteger(n)) {
      this.#position = this.#buf.writeBigInt64BE(value, this.#position);
      return;
    }
    // A safe integer splits into two exact 32-bit halves without BigInt arithmetic.
    const high = Math.floor(n / 4294967296);
    this.int32(high | 0);
    this.int32((n - high * 4294967296) | 0);
  }

  bool(value: boolean): void {
    this.#position = this.#buf.writeInt8(value ? 1 : 0, this.#position);
  }

  /** A uuid given as 32 hex digits with or without dashes (validated by the caller). */
  uuid(value: string): void {
    const hex = value.replaceAll('-', '');
    this.#position += this.#buf.write(hex, this.#position, 16, 'hex');
  }

  unsignedVarint(value: number): void {
    let rest = value;
    while (rest >= 0x80) {
      this.#buf[this.#position++] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    this.#buf[this.#position++] = rest;
  }

  varint(value: number): void {
    this.unsignedVarint(zigzag32(value));
  }

  varlong(value: bigint): void {
    let raw = zigzag64(value);
    while (raw >= 0x80n) {
      this.#buf[this.#position++] = Number(raw & 0x7fn) | 0x80;
      raw >>= 7n;
    }
    this.#buf[this.#position++] = Number(raw);
  }

  /** Writes `value` as UTF-8; `bytes` is its byte length, measured beforehand. */
  utf8(value: string, bytes: number): void {
    if (bytes === 0) return;
    const written = this.#buf.write(value, this.#position, bytes, 'utf8');
    assert(written === bytes, `string of ${bytes} UTF-8 bytes wrote ${written}`);
    this.#position += bytes;
  }

  bytes(value: Uint8Array): void {
    this.#buf.set(value, this.#position);
    this.#position += value.length;
  }

  /** The written buffer; asserts it is full. */
  finish(): Buffer {
    assert(
      this.#position === this.#buf.length,
      `wrote ${this.#position} of ${this.#buf.length} measured bytes`,
    );
    return this.#buf;
  }
}
