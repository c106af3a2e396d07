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
 * - cutting out a frame costs time in proportion to its bytes, and holding it memory in proportion
 *   to its bytes, however the stream is split: chunks of up to SMALL_CHUNK_BYTES are copied into
 *   blocks of BLOCK_BYTES the reader owns (a client sending a frame a byte at a time would
 *   otherwise make the reader hold a Buffer object, some 200 bytes of heap, per byte), and
 *   consumed chunks are dropped by advancing an index, the array compacted once most of it is
 *   consumed (never by shifting it per chunk);
 * - the reader holds at most one partial frame plus what the caller has not asked for yet: a
 *   caller that stops asking (backpressure) stops the reader growing by pausing the socket.
 */
import { KafkaDecodeError } from '../protocol/index.js';

const SIZE_BYTES = 4;
/** Chunks up to this size are copied into the reader's own blocks rather than kept. */
const SMALL_CHUNK_BYTES = 1024;
/** Size of the blocks small chunks are gathered in. */
const BLOCK_BYTES = 16 * 1024;
/** Consumed chunk slots tolerated at the array's front before it is compacted. */
const CONSUMED_SLOTS_MAX = 64;

/** Cuts a byte stream into request payloads. */
export class FrameReader {
  readonly #requestBytesMax: number;
  /** Chunks received; those before `#first` are consumed, the first unconsumed from `#head` on. */
  readonly #chunks: Buffer[] = [];
  #first = 0;
  #head = 0;
  #buffered = 0;
  /** The block small chunks are being gathered in, when the last chunk is a view of it. */
  #block: Buffer | null = null;
  /** Where the last chunk's view starts in `#block`, and the bytes of the block filled. */
  #blockStart = 0;
  #blockUsed = 0;
  /** Whether the last chunk is the view of `#block` from `#blockStart`. */
  #blockIsLast = false;
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

  /** Buffers holding the bytes not yet cut out (what the reader's memory grows with). */
  get chunkCount(): number {
    return this.#chunks.length - this.#first;
  }

  /** Adds bytes received from the socket. */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#buffered += chunk.length;
    if (chunk.length > SMALL_CHUNK_BYTES) {
      this.#chunks.push(chunk);
      this.#blockIsLast = false;
      return;
    }
    if (this.#block === null || BLOCK_BYTES - this.#blockUsed < chunk.length) {
      this.#block = Buffer.allocUnsafeSlow(BLOCK_BYTES);
      this.#blockStart = 0;
      this.#blockUsed = 0;
      this.#chunks.push(this.#block.subarray(0, 0));
    } else if (!this.#blockIsLast) {
      // A large chunk came after the block's last view: the block goes on in a new view after it
      // (a fresh block per small chunk between large ones would hold 16 KiB per byte or so).
      this.#blockStart = this.#blockUsed;
      this.#chunks.push(this.#block.subarray(this.#blockStart, this.#blockStart));
    }
    this.#blockIsLast = true;
    // The last chunk is the view of the block from #blockStart: it grows by the bytes copied (a
    // view of the same memory, so #head into it stays valid when it is also the first).
    this.#blockUsed += chunk.copy(this.#block, this.#blockUsed);
    this.#chunks[this.#chunks.length - 1] = this.#block.subarray(this.#blockStart, this.#blockUsed);
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
    this.#first = 0;
    this.#head = 0;
    this.#buffered = 0;
    this.#block = null;
    this.#blockIsLast = false;
  }

  #peekSize(): number {
    const first = this.#chunks[this.#first]!;
    if (first.length - this.#head >= SIZE_BYTES) return first.readInt32BE(this.#head);
    const bytes = Buffer.allocUnsafe(SIZE_BYTES);
    let filled = 0;
    for (let c = this.#first, from = this.#head; filled < SIZE_BYTES; c++, from = 0) {
      const chunk = this.#chunks[c]!;
      filled += chunk.copy(bytes, filled, from, Math.min(chunk.length, from + SIZE_BYTES - filled));
    }
    return bytes.readInt32BE(0);
  }

  #skip(bytes: number): void {
    let left = bytes;
    while (left > 0) {
      const first = this.#chunks[this.#first]!;
      const available = first.length - this.#head;
      if (available > left) {
        this.#head += left;
        break;
      }
      left -= available;
      this.#dropFirst();
    }
    this.#buffered -= bytes;
  }

  /** Drops the first unconsumed chunk, wholly consumed. */
  #dropFirst(): void {
    this.#head = 0;
    if (this.#first === this.#chunks.length - 1) {
      // The last one: everything is consumed, and an idle connection holds no block.
      this.#chunks.length = 0;
      this.#first = 0;
      this.#block = null;
      this.#blockIsLast = false;
      return;
    }
    this.#chunks[this.#first++] = EMPTY;
    if (this.#first > CONSUMED_SLOTS_MAX && this.#first * 2 > this.#chunks.length) {
      this.#chunks.splice(0, this.#first);
      this.#first = 0;
    }
  }

  #take(bytes: number): Buffer {
    const first = this.#chunks[this.#first];
    if (first !== undefined && first.length - this.#head >= bytes) {
      const payload = first.subarray(this.#head, this.#head + bytes);
      this.#skip(bytes);
      return payload;
    }
    const payload = Buffer.allocUnsafe(bytes);
    let filled = 0;
    while (filled < bytes) {
      const chunk = this.#chunks[this.#first]!;
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

const EMPTY = Buffer.alloc(0);
