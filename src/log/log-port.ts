/**
 * LogPort: what the offsets table, the group coordinator's writer (through the table) and the
 * checkpoint strategy of compaction write through. One offsets-bucket has one log; the local
 * segmented log (log.ts) is one implementation, a log replicated through etcd (src/cluster) another.
 * Both store the same KvRecordBatch bytes; a conformance suite (test/log-port/) runs against each.
 *
 * Invariants every implementation keeps:
 * - Log offsets are dense and increasing as appended: the batch appended after the one at log offset
 *   n gets n + 1 (compaction or truncation may remove batches later; survivors keep their offsets).
 * - An append resolves, with the batch's log offset, only once the batch is durable under the
 *   implementation's promise (fdatasync, or a quorum of replicas); appends resolve in log-offset
 *   order, and a batch is never visible to `scan` before it is durable.
 * - Every appended batch carries `coordinatorEpoch` in its header, stamped by the log: the fencing
 *   token of the writer. A fenced append (the writer's epoch is no longer the owner's) rejects with
 *   NOT_COORDINATOR and its batch never lands, nor does anything queued behind it.
 * - An append whose outcome is unknown (a timeout, a lost connection) is resolved before it settles:
 *   it resolves if the batch landed and rejects if it did not; it is never guessed.
 * - After a storage failure or a fence the log is fail-stopped (`failed`): every later append
 *   rejects with the same error until the log is reopened (by its new owner, in a cluster).
 * - `truncateBelow(x)` removes only batches below x, and only once the caller holds a durable image
 *   of the state at x (a checkpoint); `scan` from x still returns every batch at or above x.
 * - `close` waits for queued appends to settle, then rejects later ones with STORE_CLOSED.
 */
import { OffsetStoreError } from '../errors/index.js';
import type { BatchVisitor } from './segment-scanner.js';

/** A batch to append and whom to tell the outcome (LogPort.appendEntry). */
export interface AppendEntry {
  readonly batch: Buffer;
  /**
   * Set by a log that may fail a round after telling some of its entries (the local log, whose
   * own write can fail after the commit journal made the round durable), so that it rejects only
   * the others; a log that settles a round whole may leave it false.
   */
  settled: boolean;
  resolve(logOffset: number): void;
  reject(error: unknown): void;
}

/** The interface a log of KvRecordBatches offers to the offsets table above it. */
export interface LogPort {
  /** The fencing token stamped into the header of every batch this log appends (0 for a single-process store). */
  readonly coordinatorEpoch: number;
  /** The log offset the next appended batch gets (the log end offset). */
  readonly nextOffset: number;
  /** Log offset after the last acknowledged batch. */
  readonly acknowledgedEnd: number;
  /** Log offset below which every batch is known durable (at most `acknowledgedEnd`). */
  readonly durableEnd: number;
  /**
   * Where the log ends at the least, to record for the next open once it has failed: its durable
   * end, or (a local log whose file was removed or replaced) what it acknowledged.
   */
  readonly endLowerBound: number;
  /** True once a storage failure or a fence has fail-stopped the log. */
  readonly failed: boolean;
  /** Bytes the log holds (batches only). */
  readonly sizeBytes: number;
  /** Bytes of batches appended (acknowledged) since the log was opened. */
  readonly appendedBytes: number;
  /** The largest batch an append takes (larger: INVALID_REQUEST). */
  readonly batchBytesMax: number;
  /**
   * Appends one unsealed batch under this log's coordinator epoch; resolves with its log offset once
   * it is durable. The buffer is stamped and sealed in place and must not be modified afterwards.
   * `admitted`: the batch belongs to an operation `checkRoom` let in, and is not refused for the
   * appends pending (TOO_MANY_PENDING_WRITES).
   */
  append(batch: Buffer, admitted?: boolean): Promise<number>;
  /**
   * `append` for a caller told through `entry` rather than by a promise: exactly one of
   * `entry.resolve` (with the batch's log offset, once durable) and `entry.reject` is called, later,
   * never inside this call; a refusal is thrown here instead. On the commit path, this saves a promise
   * and its reaction per batch.
   */
  appendEntry(entry: AppendEntry, admitted?: boolean): void;
  /**
   * Throws what `append` would refuse any batch with now (STORE_CLOSED, the log's failure, or
   * TOO_MANY_PENDING_WRITES): checked once for an operation of several batches, which are then
   * appended `admitted`, so that it is refused whole or not at all.
   */
  checkRoom(): void;
  /** Visits every durable batch at or above `fromLogOffset`, in log order. */
  scan(fromLogOffset: number, visit: BatchVisitor): Promise<void>;
  /**
   * Removes batches below `logOffset` (a durable checkpoint covers them); returns the bytes freed.
   * An implementation may keep some of them (a local log frees whole segments only).
   */
  truncateBelow(logOffset: number): Promise<number>;
  /**
   * Waits until the log is idle: no append queued or in flight (so every append made so far has
   * settled). While appends keep coming this may not happen: a caller that must not wait on the
   * load refuses new appends first, as close does.
   */
  drain(): Promise<void>;
  /** Settles queued appends, then closes; later appends reject with STORE_CLOSED. Idempotent. */
  close(): Promise<void>;
}

/** What `appendRefusal` looks at: a log's state and limits at the moment of an append. */
export interface AppendGate {
  /** The log as its refusals name it (a folder, or an etcd key). */
  readonly name: string;
  readonly closed: boolean;
  /** The error a failed log refuses everything with; undefined while it works. */
  readonly failure: OffsetStoreError | undefined;
  readonly batchBytesMax: number;
  /** Appends queued or in flight. */
  readonly pending: number;
  readonly pendingAppendsMax: number;
}

/**
 * Why a LogPort refuses an append of `bytes` now (STORE_CLOSED, its failure, INVALID_REQUEST for a
 * batch over the limit, TOO_MANY_PENDING_WRITES unless `admitted` by checkRoom), or undefined; what
 * every implementation's `append` and `checkRoom` (bytes 0) answer, in this order.
 */
export function appendRefusal(
  gate: AppendGate,
  bytes: number,
  admitted: boolean,
): OffsetStoreError | undefined {
  if (gate.closed) return new OffsetStoreError('STORE_CLOSED', `log ${gate.name} is closed`);
  if (gate.failure !== undefined) return gate.failure;
  if (bytes > gate.batchBytesMax)
    return new OffsetStoreError(
      'INVALID_REQUEST',
      `batch of ${bytes} bytes exceeds the limit of ${gate.batchBytesMax} bytes of log ${gate.name}`,
    );
  if (!admitted && gate.pending >= gate.pendingAppendsMax)
    return new OffsetStoreError(
      'TOO_MANY_PENDING_WRITES',
      `${gate.pendingAppendsMax} appends already pending on ${gate.name}`,
    );
  return undefined;
}
