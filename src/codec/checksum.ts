/**
 * xxh32 (seed 0), the checksum of the on-disk format. The hasher is WebAssembly and initializes
 * asynchronously, so it is loaded once (`loadChecksum`, called by `OffsetStore.open` and by every
 * other entry point that decodes or encodes batches) and used synchronously afterwards.
 */
import xxhash from 'xxhash-wasm';
import { assert } from '../util/index.js';

type H32Raw = (input: Uint8Array, seed?: number) => number;

let h32Raw: H32Raw | undefined;
let loading: Promise<void> | undefined;

/** Loads the xxh32 implementation; idempotent and cheap after the first call. */
export function loadChecksum(): Promise<void> {
  loading ??= xxhash().then((api) => {
    h32Raw = api.h32Raw;
  });
  return loading;
}

/** xxh32 with seed 0 of `bytes[start, end)`, as an unsigned 32-bit integer. */
export function xxh32(bytes: Uint8Array, start = 0, end = bytes.length): number {
  assert(h32Raw !== undefined, 'loadChecksum() must complete before xxh32 is used');
  return h32Raw(start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end), 0) >>> 0;
}
