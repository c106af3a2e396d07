/**
 * OwnerToken: the value of an offsets-bucket's ownership key, `{ nodeId, epoch }` as JSON. The
 * epoch is the bucket's coordinator epoch: it only grows (each claim takes the last one given out
 * plus one) and is stamped into every batch its owner appends, so the log itself records who wrote
 * what, and no two claims ever hold the same token.
 */

/** An ownership of one offsets-bucket. */
export interface OwnerToken {
  /** The node that owns the bucket. */
  readonly nodeId: string;
  /** The coordinator epoch of this ownership. */
  readonly epoch: number;
  /** The exact bytes of the ownership key's value (what every fenced write compares). */
  readonly value: Buffer;
}

/** The token of `nodeId` owning a bucket at `epoch`. */
export function ownerToken(nodeId: string, epoch: number): OwnerToken {
  if (!Number.isSafeInteger(epoch) || epoch < 1 || epoch > 0x7fffffff)
    throw new RangeError(`coordinator epoch out of range: ${epoch}`);
  return { nodeId, epoch, value: Buffer.from(JSON.stringify({ nodeId, epoch })) };
}

/** The token an ownership key holds, or undefined for a value this package did not write. */
export function parseOwnerToken(value: Buffer): OwnerToken | undefined {
  try {
    const parsed = JSON.parse(value.toString()) as { nodeId?: unknown; epoch?: unknown };
    if (typeof parsed.nodeId !== 'string' || typeof parsed.epoch !== 'number') return undefined;
    return { nodeId: parsed.nodeId, epoch: parsed.epoch, value: Buffer.from(value) };
  } catch {
    return undefined;
  }
}
