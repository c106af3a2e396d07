/**
 * Splits one connection's byte stream into request payloads. Every Kafka request is framed as:
 *
 * | bytes | field                                                   |
 * |-------|---------------------------------------------------------|
 * | 4     | size: int32, the bytes that follow (big-endian)         |
 * | size  | payload: request header and body                        |
 *
 * Invariants:
 * - a size outside [0, requestBytesMax] is refused as soon as its 4 bytes are in (KafkaDecodeError),
 *   before a byte of its payload is buffered: an oversized or hostile length never reaches memory
 *   (Kafka's socket.request.max.bytes; the connection is then closed). The caller may give a lower
 *   bound for the next frame (a connection that has not authenticated yet);
 * - nothing is allocated from a length alone: chunks are kept as they arrive and a payload is cut
 *   out once all of it is there, as a view of its chunk when it lies in one (the common case: no
 *   copy) or copied once into a buffer of its size when it spans chunks;
 * - the reader holds at most one partial frame plus what the caller has not asked for yet: a
 *   caller that stops asking (backpressure) stops the reader growing by pausing the socket.
 */
import { KafkaDecodeError } from '../protocol/index.js';

const SIZE_BYTES = 4;

/** Cuts a byte stream into request payloads. */
export class FrameReader {
  readonly #requestBytesMax: number;
  /** Chunks not yet consumed; the first from `#head` on. */
  readonly #chunks: Buffer[] = [];
  #head = 0;
  #buffered = 0;
  /** A complete payload cut out by `peek()` and not yet consumed. */
  #peeked: Buffer | null = null;

  /** `requestBytesMax`: the largest payload accepted. */
  constructor(requestBytesMax: number) {
    this.#requestBytesMax = requestBytesMax;
  }

  /** Bytes received and not yet consumed as payloads. */
  get bufferedBytes(): number {
    return this.#buffered + (this.#peeked?.length ?? 0);
  }

  /** Adds bytes received from the socket. */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
  }

  /**
   * The next complete payload, or null until all of it has arrived; it stays the next one until
   * `consume()`. Throws a KafkaDecodeError for a size field outside [0, requestBytesMax] (or the
   * lower `bytesMax` given); the stream is then unusable.
   */
  peek(bytesMax?: number): Buffer | null {
    if (this.#peeked !== null) return this.#peeked;
    if (this.#buffered < SIZE_BYTES) return null;
    const size = this.#peekSize();
    const max = Math.min(bytesMax ?? this.#requestBytesMax, this.#requestBytesMax);
    if (size < 0 || size > max) {
      throw new KafkaDecodeError(`frame: request size ${size} outside [0, ${max}]`, 0);
    }
    if (this.#buffered < SIZE_BYTES + size) return null;
    this.#skip(SIZE_BYTES);
    this.#peeked = this.#take(size);
    return this.#peeked;
  }

  /** Moves past the payload `peek()` returned. */
  consume(): void {
    this.#peeked = null;
  }

  /** `peek()` and `consume()` in one: the next complete payload, or null. */
  next(): Buffer | null {
    const payload = this.peek();
    this.#peeked = null;
    return payload;
  }

  /** Drops everything buffered. */
  clear(): void {
    this.#peeked = null;
    this.#chunks.length = 0;
    this.#head = 0;
    this.#buffered = 0;
  }

  #peekSize(): number {
    const first = this.#chunks[0]!;
    if (first.length - this.#head >= SIZE_BYTES) return first.readInt32BE(this.#head);
    const bytes = Buffer.allocUnsafe(SIZE_BYTES);
    let filled = 0;
    for (let c = 0, from = this.#head; filled < SIZE_BYTES; c++, from = 0) {
      const chunk = this.#chunks[c]!;
      filled += chunk.copy(bytes, filled, from, Math.min(chunk.length, from + SIZE_BYTES - filled));
    }
    return bytes.readInt32BE(0);
  }

  #skip(bytes: number): void {
    let left = bytes;
    while (left > 0) {
      const first = this.#chunks[0]!;
      const available = first.length - this.#head;
      if (available > left) {
        this.#head += left;
        break;
      }
      left -= available;
      this.#chunks.shift();
      this.#head = 0;
    }
    this.#buffered -= bytes;
  }

  #take(bytes: number): Buffer {
    const first = this.#chunks[0];
    if (first !== undefined && first.length - this.#head >= bytes) {
      const payload = first.subarray(this.#head, this.#head + bytes);
      this.#skip(bytes);
      return payload;
    }
    const payload = Buffer.allocUnsafe(bytes);
    let filled = 0;
    while (filled < bytes) {
      const chunk = this.#chunks[0]!;
      const copied = chunk.copy(
        payload,
        filled,
        this.#head,
        Math.min(chunk.length, this.#head + bytes - filled),
      );
      filled += copied;
      this.#skip(copied);
    }
    return payload;
  }
}
