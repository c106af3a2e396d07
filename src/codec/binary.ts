/**
 * Little-endian primitives shared by the encoders and decoders: int64 as a JS number (only safe
 * integers are ever written; reading an unsafe one is reported, never rounded), unsigned LEB128, and
 * bounds-checked reads. Decoders throw `DecodeError` with the byte position; the batch layer turns it
 * into CORRUPT_MESSAGE naming the file.
 */

const TWO_POW_32 = 4294967296;

/** A malformed byte sequence at `position`. Internal to the codec; callers see CORRUPT_MESSAGE. */
export class DecodeError extends RangeError {
  /**
   * Byte position in the decoded buffer where the sequence stopped making sense, for the
   * CORRUPT_MESSAGE that names the file.
   */
  readonly position: number;
  /** `message` says what was wrong; " at byte <position>" is appended so every decode error locates itself. */
  constructor(message: string, position: number) {
    super(`${message} at byte ${position}`);
    this.name = 'DecodeError';
    this.position = position;
  }
}

/** Writes a safe integer as little-endian int64. */
export function writeInt64(buf: Buffer, value: number, position: number): void {
  const high = Math.floor(value / TWO_POW_32);
  buf.writeUInt32LE(value - high * TWO_POW_32, position);
  buf.writeInt32LE(high, position + 4);
}

/** Reads a little-endian int64 that must be a safe integer. */
export function readInt64(buf: Buffer, position: number): number {
  const high = buf.readInt32LE(position + 4);
  if (high > 0x1fffff || high < -0x200000)
    throw new DecodeError('int64 outside the safe integer range', position);
  return high * TWO_POW_32 + buf.readUInt32LE(position);
}

/** Number of bytes the unsigned LEB128 encoding of `value` takes (value < 2^31). */
export function varUintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}

/** Writes `value` (0 <= value < 2^31) as unsigned LEB128; returns the position after it. */
export function writeVarUint(buf: Buffer, value: number, position: number): number {
  let v = value;
  let p = position;
  while (v >= 0x80) {
    buf[p++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[p++] = v;
  return p;
}

/** A decoded unsigned LEB128 value and the position after it. */
export interface VarUint {
  /** The decoded value (a safe integer; a longer encoding is a DecodeError). */
  value: number;
  /** Position of the first byte after the encoding, where the caller reads on. */
  next: number;
}

/** Reads an unsigned LEB128 (at most 5 bytes, < 2^31) that must end before `end`. */
export function readVarUint(buf: Buffer, position: number, end: number, out: VarUint): void {
  let value = 0;
  let shift = 0;
  let p = position;
  for (;;) {
    if (p >= end) throw new DecodeError('truncated varint', position);
    const byte = buf[p++]!;
    value |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) break;
    shift += 7;
    if (shift >= 35) throw new DecodeError('varint longer than 5 bytes', position);
  }
  if (value < 0) throw new DecodeError('varint above 2^31', position);
  out.value = value;
  out.next = p;
}

/** Throws unless `[position, position + bytes)` lies within `end`. */
export function need(position: number, bytes: number, end: number, what: string): void {
  if (bytes < 0 || position + bytes > end) throw new DecodeError(`truncated ${what}`, position);
}
