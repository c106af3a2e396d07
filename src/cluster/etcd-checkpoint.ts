/**
 * Checkpoints of an offsets-bucket's materialized index in etcd, so that its log there stays
 * short: the state's image (kv's stateImage: the live offsets and group snapshots as
 * KvRecordBatches) is written in chunks, then one pointer key is switched to it atomically, then
 * the older checkpoint's chunks and the log below the new one are deleted.
 *
 * | key | value |
 * |---|---|
 * | `buckets/<nnnnn>/checkpoints/<id>/<6 digits>` | bytes [i * chunkBytes, (i + 1) * chunkBytes) of the image |
 * | `buckets/<nnnnn>/checkpoint` | JSON CheckpointPointer |
 *
 * The image is the batches one after the other (each starts with its length field).
 *
 * Invariants:
 * - The pointer names only a checkpoint whose chunks are all written: chunks first, pointer after,
 *   and a reader checks the chunk count, the byte count and the xxh32 of the image.
 * - Every write (chunks, pointer switch, deletes) compares the ownership key with the writer's
 *   token: a fenced owner changes nothing a new owner reads.
 * - The log is truncated only below a checkpoint the pointer names.
 * - The pointer only moves from the value its writer read (its switch compares the key's
 *   modification revision too): a switch whose answer was lost cannot land after a later one and
 *   move the pointer back below the truncated log.
 * - After a switch, every chunk of another checkpoint is deleted: the previous checkpoint's, and
 *   any a failed or interrupted checkpoint left behind. That cleanup compares the pointer's
 *   modification revision with the one its own switch made, and every checkpoint starts by
 *   rewriting the pointer it found (same value, new revision): a cleanup whose answer was lost
 *   can then never land later and delete the chunks of the checkpoint being written.
 * - Each request stays within etcd's limits: one chunk (1 MiB at most) per transaction.
 */
import type { ICompare, ITxnRequest } from 'etcd3';
import { xxh32 } from '../codec/index.js';
import { OffsetStoreError } from '../errors/index.js';
import { restoreStateImage, stateImage, type OffsetsTableState } from '../kv/index.js';
import { prefixEnd, type BucketKeys } from './cluster-keys.js';
import type { EtcdConnection } from './etcd-connection.js';
import { kvOf, notOwner, ownerCompare, rangeOp } from './etcd-log.js';
import type { OwnerToken } from './owner-token.js';

/** Bytes per checkpoint chunk (etcd refuses requests over 1.5 MiB). */
export const CHECKPOINT_CHUNK_BYTES = 1024 * 1024;

/** What the pointer key holds. */
export interface CheckpointPointer {
  /** The checkpoint's id (its chunks' key prefix). */
  id: string;
  /** The log offset replay continues from: the image holds every batch below it. */
  logOffset: number;
  /** Chunks of the image. */
  chunkCount: number;
  /** Bytes of the image. */
  imageBytes: number;
  /** xxh32 of the image. */
  checksum: number;
  /** Epoch of the owner that wrote it. */
  epoch: number;
}

/** A checkpoint read back. */
export interface LoadedEtcdCheckpoint {
  /** Its pointer. */
  pointer: CheckpointPointer;
  /** The state it holds (applied up to `pointer.logOffset - 1`). */
  state: OffsetsTableState;
}

/** Writes a checkpoint of `state` (at its applied log offset + 1) and switches the pointer to it; returns the pointer. */
export async function writeEtcdCheckpoint(
  connection: EtcdConnection,
  keys: BucketKeys,
  owner: OwnerToken,
  state: OffsetsTableState,
  nowMs: number,
): Promise<CheckpointPointer> {
  const logOffset = state.appliedLogOffset + 1;
  const image = Buffer.concat(stateImage(state, nowMs));
  // The fence: an earlier checkpoint's cleanup compares the pointer's revision its switch made.
  const previous = await readPointerKey(connection, keys);
  let pointerRevision = '0';
  if (previous !== undefined) {
    pointerRevision = await fencedWrite(
      connection,
      keys,
      owner,
      [{ request_put: { key: Buffer.from(keys.checkpoint), value: previous.value } }],
      'fencing the earlier checkpoints',
      pointerUnchanged(keys, previous.modRevision, 'fenced'),
    );
  }
  const id = `${owner.epoch}-${logOffset}-${nowMs}`;
  const chunkCount = Math.ceil(image.length / CHECKPOINT_CHUNK_BYTES);
  for (let i = 0; i < chunkCount; i++) {
    const chunk = image.subarray(i * CHECKPOINT_CHUNK_BYTES, (i + 1) * CHECKPOINT_CHUNK_BYTES);
    await fencedWrite(
      connection,
      keys,
      owner,
      [{ request_put: { key: Buffer.from(keys.checkpointChunk(id, i)), value: chunk } }],
      'writing a checkpoint chunk',
    );
  }
  const pointer: CheckpointPointer = {
    id,
    logOffset,
    chunkCount,
    imageBytes: image.length,
    checksum: xxh32(image, 0, image.length),
    epoch: owner.epoch,
  };
  const switchRevision = await fencedWrite(
    connection,
    keys,
    owner,
    [
      {
        request_put: {
          key: Buffer.from(keys.checkpoint),
          value: Buffer.from(JSON.stringify(pointer)),
        },
      },
    ],
    'switching the checkpoint pointer',
    pointerUnchanged(keys, pointerRevision, `written (checkpoint ${id})`),
  );
  // Every other checkpoint's chunks go: the previous one's, and those of checkpoints whose
  // switch failed or whose writing stopped half-way (they would otherwise stay in etcd for good).
  const all = keys.checkpoints;
  const current = keys.checkpointChunks(id);
  await fencedWrite(
    connection,
    keys,
    owner,
    [
      { request_delete_range: { key: Buffer.from(all), range_end: Buffer.from(current) } },
      { request_delete_range: { key: prefixEnd(current), range_end: prefixEnd(all) } },
    ],
    'deleting the other checkpoints',
    pointerUnchanged(keys, switchRevision, `switched to checkpoint ${id}`),
  );
  return pointer;
}

/**
 * The compare that the pointer key still has modification revision `revision` ('0': no key), and
 * the error when it has not: an earlier write of the pointer whose answer was lost landed since
 * it was read (or this checkpoint was `what`), so this checkpoint stops; the next one starts over.
 */
function pointerUnchanged(
  keys: BucketKeys,
  revision: string,
  what: string,
): { compare: ICompare; conflict: () => OffsetStoreError } {
  return {
    compare: {
      key: Buffer.from(keys.checkpoint),
      target: 'Mod',
      result: 'Equal',
      mod_revision: revision,
    },
    conflict: () =>
      new OffsetStoreError(
        'REQUEST_TIMED_OUT',
        `${keys.checkpoint} changed since it was ${what} (an earlier write of it whose answer was lost landed): checkpoint again`,
      ),
  };
}

/** The live checkpoint, verified, or undefined when the bucket has none. A damaged one is CORRUPT_MESSAGE. */
export async function readEtcdCheckpoint(
  connection: EtcdConnection,
  keys: BucketKeys,
): Promise<LoadedEtcdCheckpoint | undefined> {
  const pointer = await readPointer(connection, keys);
  if (pointer === undefined) return undefined;
  const chunks: Buffer[] = [];
  const prefix = keys.checkpointChunks(pointer.id);
  let cursor = Buffer.from(keys.checkpointChunk(pointer.id, 0));
  for (;;) {
    const res = await connection.range(
      { key: cursor, range_end: prefixEnd(prefix), limit: 2 },
      `reading checkpoint ${pointer.id} of ${keys.prefix}`,
    );
    for (const kv of res.kvs) chunks.push(kv.value);
    if (!res.more || res.kvs.length === 0) break;
    cursor = Buffer.concat([res.kvs.at(-1)!.key, Buffer.from([0])]);
  }
  const image = Buffer.concat(chunks);
  if (
    chunks.length !== pointer.chunkCount ||
    image.length !== pointer.imageBytes ||
    xxh32(image, 0, image.length) !== pointer.checksum
  ) {
    throw new OffsetStoreError(
      'CORRUPT_MESSAGE',
      `${keys.checkpoint}: checkpoint ${pointer.id} does not match its pointer (${chunks.length} of ${pointer.chunkCount} chunks, ${image.length} of ${pointer.imageBytes} bytes, or its checksum)`,
    );
  }
  const batches: Buffer[] = [];
  for (let position = 0; position < image.length;) {
    const sizeBytes = image.readUInt32LE(position) + 4;
    batches.push(image.subarray(position, position + sizeBytes));
    position += sizeBytes;
  }
  return { pointer, state: restoreStateImage(batches, pointer.logOffset) };
}

async function readPointer(
  connection: EtcdConnection,
  keys: BucketKeys,
): Promise<CheckpointPointer | undefined> {
  return (await readPointerKey(connection, keys))?.pointer;
}

/** The pointer and the modification revision of its key, if there is one. */
async function readPointerKey(
  connection: EtcdConnection,
  keys: BucketKeys,
): Promise<{ pointer: CheckpointPointer; value: Buffer; modRevision: string } | undefined> {
  const res = await connection.range(
    { key: Buffer.from(keys.checkpoint) },
    `reading the checkpoint pointer of ${keys.prefix}`,
  );
  const kv = res.kvs[0];
  if (kv === undefined) return undefined;
  return {
    pointer: checkpointPointerOf(keys, kv.value),
    value: kv.value,
    modRevision: String(kv.mod_revision),
  };
}

/**
 * The checkpoint pointer in `value` (the bucket's checkpoint key); CORRUPT_MESSAGE naming the key
 * when it is not one (not JSON, or a field missing or of the wrong type).
 */
export function checkpointPointerOf(keys: BucketKeys, value: Buffer): CheckpointPointer {
  let pointer: Partial<Record<keyof CheckpointPointer, unknown>> | null;
  try {
    pointer = JSON.parse(value.toString()) as typeof pointer;
  } catch (error) {
    throw new OffsetStoreError('CORRUPT_MESSAGE', `${keys.checkpoint}: not a checkpoint pointer`, {
      cause: error,
    });
  }
  const whole = (field: unknown) => Number.isSafeInteger(field) && (field as number) >= 0;
  if (
    pointer === null ||
    typeof pointer !== 'object' ||
    typeof pointer.id !== 'string' ||
    !whole(pointer.logOffset) ||
    !whole(pointer.chunkCount) ||
    !whole(pointer.imageBytes) ||
    !whole(pointer.checksum) ||
    !Number.isSafeInteger(pointer.epoch)
  ) {
    throw new OffsetStoreError(
      'CORRUPT_MESSAGE',
      `${keys.checkpoint}: not a checkpoint pointer (${JSON.stringify(value.toString().slice(0, 100))})`,
    );
  }
  return pointer as CheckpointPointer;
}

/**
 * Runs `success` if `owner` still owns the bucket (NOT_COORDINATOR otherwise) and, with `also`, if
 * its compare holds too (`also.conflict()` otherwise); returns the revision it made.
 */
async function fencedWrite(
  connection: EtcdConnection,
  keys: BucketKeys,
  owner: OwnerToken,
  success: ITxnRequest['success'],
  what: string,
  also?: { compare: ICompare; conflict: () => OffsetStoreError },
): Promise<string> {
  const compare: ICompare[] = [ownerCompare(keys, owner)];
  if (also !== undefined) compare.push(also.compare);
  const res = await connection.txn(
    { compare, success, failure: [rangeOp(keys.owner)] },
    `${what} of ${keys.prefix}`,
  );
  if (res.succeeded) return String(res.header.revision);
  const ownerNow = kvOf(res.responses[0]);
  if (also === undefined || ownerNow === undefined || !ownerNow.value.equals(owner.value))
    throw notOwner(keys, owner, ownerNow);
  throw also.conflict();
}
