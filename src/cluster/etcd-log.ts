/**
 * EtcdLog: one offsets-bucket's log replicated through etcd, a LogPort (src/log/log-port.ts). Each
 * batch is one etcd key, `buckets/<nnnnn>/log/<20-digit log offset>`, holding the sealed
 * KvRecordBatch bytes, unchanged from the local format; `buckets/<nnnnn>/next` holds the next log
 * offset. etcd acknowledges a transaction only once a quorum of members has it in its fsynced WAL,
 * so an append resolved here survives the loss of any etcd minority.
 *
 * Invariants:
 * - Only the owner appends: every append transaction compares the bucket's ownership key with this
 *   log's owner token (its value holds the coordinator epoch, which is also stamped into every batch
 *   header) and compares `next`'s modification revision with the one this log last wrote or read.
 *   A transaction whose compare fails applies nothing: a fenced writer's batches never land, and
 *   with the revision compare not even a writer holding the same token (a twin) can write a log
 *   offset twice.
 * - Log offsets are dense: a round writes offsets [start, end) and sets `next` to end, atomically.
 * - An append resolves once its transaction succeeded; appends resolve in log-offset order.
 * - An unknown outcome (deadline passed, leader lost) is resolved, never guessed: a fence
 *   transaction rewrites `next` (same value, new revision) if `next` is still where the round found
 *   it, which makes the lost transaction unable to land ever after (it compares the old revision),
 *   so the round did not land; else the round's first log key is read back and compared, byte for
 *   byte, with the round's first batch (stamped with this writer's id and sealed at its offset): it
 *   landed, or another batch is there (another writer's, or an earlier round's) and this log is
 *   fenced. No batch there and `next` still at the round's start means an earlier
 *   fence of the same resolution landed unanswered: the round did not land. Until the fence transaction gets an answer it is retried, up to
 *   `resolveTimeoutMs`; past it the log fail-stops with COORDINATOR_NOT_AVAILABLE and its owner
 *   must reload the bucket (which replays what really landed).
 * - A fence (NOT_COORDINATOR) fail-stops the log: the round, everything queued and every later
 *   append reject with it. A refusal etcd gives before proposing anything (INVALID_REQUEST: over
 *   etcd's limits) rejects the round only, and the log goes on. NOSPACE (REPLICA_NO_SPACE) is given
 *   both before proposing a round and after applying one that crossed the quota: the round's first
 *   key is read back (reads are not held to the quota), and the round is acknowledged if etcd holds
 *   it, else rejected alone.
 *
 * Group commit, step by step:
 * 1. `append` checks the size, stamps nothing yet, queues the batch, and starts the flush loop if it
 *    is not running; appends made while a round is in flight join the next round.
 * 2. A round takes queued batches up to `roundBatchesMax` (etcd allows 128 operations per
 *    transaction; one is `next`) and `roundBytesMax` (etcd refuses requests over 1.5 MiB), stamps
 *    each with the epoch and writer id, seals it at its log offset, and sends one transaction.
 * 3. On success the round's appends resolve in order and the loop takes the next round; one round
 *    is in flight at a time, because each round's compare needs the previous round's revision.
 *
 * Truncation deletes the keys below a checkpoint's log offset in one fenced transaction, then
 * compacts etcd's history to that revision, so etcd's size follows the live log.
 */
import { randomInt } from 'node:crypto';
import type { IKeyValue, IRangeResponse, IRequestOp, IResponseOp, ITxnResponse } from 'etcd3';
import {
  checkBatch,
  checkBatchFormat,
  DecodeError,
  loadChecksum,
  sealBatch,
  stampBatchWriter,
} from '../codec/index.js';
import { OffsetStoreError, isOffsetStoreError } from '../errors/index.js';
import { appendRefusal, type AppendEntry, type BatchVisitor, type LogPort } from '../log/index.js';
import { assert } from '../util/index.js';
import { prefixEnd, type BucketKeys } from './cluster-keys.js';
import { outcomeUnknown, responseTooLarge, type EtcdConnection } from './etcd-connection.js';
import type { OwnerToken } from './owner-token.js';

/** Options of an etcd log. */
export interface EtcdLogOptions {
  /** The etcd connection (shared; the log never closes it). */
  connection: EtcdConnection;
  /** The bucket's keys. */
  keys: BucketKeys;
  /** The ownership this log appends under (see bucket-claim.ts). */
  owner: OwnerToken;
  /** Largest batch accepted, bytes; default 1 MiB (etcd's request limit is 1.5 MiB). */
  batchBytesMax?: number;
  /** Most bytes of batches in one transaction; default 1 MiB. */
  roundBytesMax?: number;
  /** Most batches in one transaction; default 120 (etcd's default limit is 128 operations). */
  roundBatchesMax?: number;
  /** Most appends queued or in flight; beyond it appends reject with TOO_MANY_PENDING_WRITES. Default 65,536. */
  pendingAppendsMax?: number;
  /** How long an append whose outcome is unknown may take to resolve, ms; default 30 s. */
  resolveTimeoutMs?: number;
}

/** What opening the log found. */
export interface EtcdLogRecovery {
  /** Replay starts here (a checkpoint's log offset, or 0). */
  fromLogOffset: number;
  /** Receives every batch at or above `fromLogOffset`, in log order. */
  visit?: BatchVisitor;
}

/** Defaults of the limits. */
export const ETCD_LOG_DEFAULTS = {
  batchBytesMax: 1024 * 1024,
  roundBytesMax: 1024 * 1024,
  roundBatchesMax: 120,
  pendingAppendsMax: 65_536,
  resolveTimeoutMs: 30_000,
} as const;

/**
 * Log entries per range read, at most. A page of batches up to 1 MiB each can exceed what the
 * connection takes (its `responseBytesMax`); a reader then halves its page and asks again, and grows
 * it back once pages are small.
 */
const PAGE_ENTRIES = 256;

type PendingAppend = Pick<AppendEntry, 'batch' | 'resolve' | 'reject'>;

type Limits = Required<
  Pick<
    EtcdLogOptions,
    'batchBytesMax' | 'roundBytesMax' | 'roundBatchesMax' | 'pendingAppendsMax' | 'resolveTimeoutMs'
  >
>;

/** An offsets-bucket's log in etcd. */
export class EtcdLog implements LogPort {
  readonly #connection: EtcdConnection;
  readonly #keys: BucketKeys;
  readonly #owner: OwnerToken;
  readonly #limits: Limits;
  /** Unique per opened log: a batch read back with this id was appended by this log. */
  readonly #writerId = randomInt(1, 2 ** 47);
  #nextOffset: number;
  /** Modification revision of `next` as this log last wrote or read it (0: the key does not exist). */
  #nextRevision: string;
  /** First log offset still in etcd. */
  #firstOffset: number;
  /** Bytes of each batch from #firstOffset on. */
  #entryBytes: number[];
  #sizeBytes: number;
  #appendedBytes = 0;
  #queue: PendingAppend[] = [];
  #inFlightCount = 0;
  #flushing: Promise<void> | undefined;
  #failure: OffsetStoreError | undefined;
  #closed = false;
  #unknownOutcomes = 0;

  private constructor(
    options: EtcdLogOptions,
    nextOffset: number,
    nextRevision: string,
    firstOffset: number,
    entryBytes: number[],
  ) {
    this.#connection = options.connection;
    this.#keys = options.keys;
    this.#owner = options.owner;
    this.#limits = { ...ETCD_LOG_DEFAULTS, ...definedOnly(options) };
    this.#nextOffset = nextOffset;
    this.#nextRevision = nextRevision;
    this.#firstOffset = firstOffset;
    this.#entryBytes = entryBytes;
    this.#sizeBytes = entryBytes.reduce((a, b) => a + b, 0);
  }

  /**
   * Opens the log of a bucket this process owns (NOT_COORDINATOR if the ownership key does not hold
   * `options.owner`), reads it once, checking every batch, and hands each batch at or above
   * `recovery.fromLogOffset` to `recovery.visit`. The pages are read at the newest revision, not
   * at the opening's: once owned, the log changes only by this owner's hand (an earlier owner's
   * writes fail their compare), and a pinned revision fails as soon as any bucket's truncation
   * compacts etcd's history, which made recoveries under load fail and start over.
   */
  static async open(
    options: EtcdLogOptions,
    recovery: EtcdLogRecovery = { fromLogOffset: 0 },
  ): Promise<EtcdLog> {
    const { connection, keys, owner } = options;
    await loadChecksum();
    const res = await connection.txn(
      {
        compare: [ownerCompare(keys, owner)],
        success: [rangeOp(keys.next)],
        failure: [rangeOp(keys.owner)],
      },
      `opening the log of ${keys.prefix}`,
    );
    if (!res.succeeded) throw notOwner(keys, owner, kvOf(res.responses[0]));
    const next = kvOf(res.responses[0]);
    const nextOffset = nextLogOffsetOf(keys, next);
    if (next === undefined) {
      // A log that never had a batch has no `next`. One that has batches without it would be read
      // as empty and written over from log offset 0.
      const any = await connection.range(
        { key: Buffer.from(keys.log), range_end: prefixEnd(keys.log), limit: 1, keys_only: true },
        `opening the log of ${keys.prefix}`,
      );
      if (any.kvs.length > 0)
        throw new OffsetStoreError(
          'CORRUPT_MESSAGE',
          `${keys.next} is missing, but the log holds batches (${any.kvs[0]!.key.toString()}): its end is unknown`,
        );
    }
    const nextRevision = next === undefined ? '0' : String(next.mod_revision);
    const entries: { logOffset: number; bytes: number }[] = [];
    const batchBytesMax = options.batchBytesMax ?? ETCD_LOG_DEFAULTS.batchBytesMax;
    await readEntries(connection, keys, 0, nextOffset, batchBytesMax, (buf, logOffset) => {
      entries.push({ logOffset, bytes: buf.length });
      try {
        // Every batch, below a checkpoint too: one of a format this version cannot read is damage.
        checkBatchFormat(buf, 0);
        if (logOffset >= recovery.fromLogOffset) recovery.visit?.(buf, 0, logOffset, buf.length, 0);
      } catch (error) {
        if (!(error instanceof DecodeError)) throw error;
        throw new OffsetStoreError(
          'CORRUPT_MESSAGE',
          `${keys.log}: batch ${logOffset}: checksum matches but it does not decode: ${error.message}`,
          { cause: error },
        );
      }
    });
    const firstOffset = entries[0]?.logOffset ?? nextOffset;
    if (recovery.fromLogOffset > nextOffset)
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `${keys.log}: replay must start at log offset ${recovery.fromLogOffset} (a checkpoint's), past the log's end at ${nextOffset}: batches are missing`,
      );
    if (recovery.fromLogOffset < firstOffset && recovery.fromLogOffset < nextOffset) {
      throw new OffsetStoreError(
        'CORRUPT_MESSAGE',
        `${keys.log}: replay must start at log offset ${recovery.fromLogOffset}, but the log starts at ${firstOffset}`,
      );
    }
    return new EtcdLog(
      options,
      nextOffset,
      nextRevision,
      firstOffset,
      entries.map((e) => e.bytes),
    );
  }

  /** The epoch of the owner token: stamped into every batch this log appends. */
  get coordinatorEpoch(): number {
    return this.#owner.epoch;
  }

  /** The log offset the next appended batch gets. */
  get nextOffset(): number {
    return this.#nextOffset;
  }

  /** Log offset after the last acknowledged batch (one round is acknowledged as a whole). */
  get acknowledgedEnd(): number {
    return this.#nextOffset;
  }

  /** Log offset below which every batch is durable: in etcd, everything acknowledged. */
  get durableEnd(): number {
    return this.#nextOffset;
  }

  /** What etcd holds is durable: the durable end. */
  get endLowerBound(): number {
    return this.durableEnd;
  }

  /** True once a fence or an unresolved outcome has fail-stopped the log. */
  get failed(): boolean {
    return this.#failure !== undefined;
  }

  /** Bytes of the batches still in etcd. */
  get sizeBytes(): number {
    return this.#sizeBytes;
  }

  /** Bytes of batches appended (acknowledged) since the log was opened. */
  get appendedBytes(): number {
    return this.#appendedBytes;
  }

  get batchBytesMax(): number {
    return this.#limits.batchBytesMax;
  }

  /** Rounds whose transaction got no answer and were resolved by the fence-and-read-back protocol. */
  get unknownOutcomes(): number {
    return this.#unknownOutcomes;
  }

  /** First log offset still in etcd (the rest was truncated below a checkpoint). */
  get firstOffset(): number {
    return this.#firstOffset;
  }

  /** Appends one unsealed batch; resolves with its log offset once etcd has committed it (see LogPort). */
  append(batch: Buffer, admitted = false): Promise<number> {
    const refusal = this.#refusal(batch.length, admitted);
    if (refusal !== undefined) return Promise.reject(refusal);
    return new Promise<number>((resolve, reject) => {
      this.#queue.push({ batch, resolve, reject });
      this.#flushing ??= this.#flushLoop();
    });
  }

  /** See LogPort.appendEntry (`settled` is not used: a round here is resolved or rejected whole). */
  appendEntry(entry: AppendEntry, admitted = false): void {
    const refusal = this.#refusal(entry.batch.length, admitted);
    if (refusal !== undefined) throw refusal;
    this.#queue.push(entry);
    this.#flushing ??= this.#flushLoop();
  }
  /** See LogPort.checkRoom. */
  checkRoom(): void {
    const refusal = this.#refusal(0, false);
    if (refusal !== undefined) throw refusal;
  }

  /** Why a batch of `bytes` would be refused now; `admitted`: its operation was let in by checkRoom. */
  #refusal(bytes: number, admitted: boolean): OffsetStoreError | undefined {
    return appendRefusal(
      {
        name: this.#keys.log,
        closed: this.#closed,
        failure: this.#failure,
        batchBytesMax: this.#limits.batchBytesMax,
        pending: this.#queue.length + this.#inFlightCount,
        pendingAppendsMax: this.#limits.pendingAppendsMax,
      },
      bytes,
      admitted,
    );
  }

  async #flushLoop(): Promise<void> {
    try {
      await Promise.resolve(); // appends made in the same tick join the first round
      while (this.#queue.length > 0) {
        const round = this.#takeRound();
        this.#inFlightCount = round.length;
        try {
          await this.#writeRound(round);
        } catch (error) {
          // A bug, not etcd (its errors are settled in #writeRound): nothing may be left hanging.
          this.#failStop(
            error instanceof OffsetStoreError
              ? error
              : new OffsetStoreError(
                  'LOG_STORAGE_ERROR',
                  `${this.#keys.log}: ${(error as Error).message}`,
                  { cause: error },
                ),
            round,
          );
        } finally {
          this.#inFlightCount = 0;
        }
      }
    } finally {
      this.#flushing = undefined;
    }
  }

  #takeRound(): PendingAppend[] {
    const { roundBatchesMax, roundBytesMax } = this.#limits;
    let count = 0;
    let bytes = 0;
    while (count < this.#queue.length && count < roundBatchesMax) {
      const next = this.#queue[count]!.batch.length;
      if (count > 0 && bytes + next > roundBytesMax) break;
      bytes += next;
      count++;
    }
    return this.#queue.splice(0, count);
  }

  async #writeRound(round: PendingAppend[]): Promise<void> {
    if (this.#failure !== undefined) {
      for (const entry of round) entry.reject(this.#failure);
      return;
    }
    const start = this.#nextOffset;
    const end = start + round.length;
    const puts: IRequestOp[] = [];
    for (let i = 0; i < round.length; i++) {
      const batch = round[i]!.batch;
      stampBatchWriter(batch, this.#owner.epoch, this.#writerId);
      sealBatch(batch, start + i);
      puts.push({
        request_put: { key: Buffer.from(this.#keys.logEntry(start + i)), value: batch },
      });
    }
    puts.push({
      request_put: { key: Buffer.from(this.#keys.next), value: Buffer.from(String(end)) },
    });
    let landed: boolean;
    let revision: string | undefined;
    try {
      const res = await this.#connection.txn(
        { compare: this.#compares(), success: puts, failure: this.#probes(start) },
        `appending to ${this.#keys.log}`,
      );
      if (res.succeeded) {
        landed = true;
        revision = String(res.header.revision);
      } else {
        landed = this.#landedOrFenced(probed(res), start, end, round[0]!.batch);
      }
    } catch (error) {
      if (isOffsetStoreError(error, 'REPLICA_NO_SPACE')) {
        // etcd applied the round and then found its quota crossed, or refused it before proposing
        // it: the answer is the same, and final. Reading back tells which.
        try {
          landed = await this.#appliedDespiteNoSpace(start, end, round[0]!.batch);
        } catch (failure) {
          this.#failStop(failure as OffsetStoreError, round);
          return;
        }
        if (!landed) {
          for (const entry of round) entry.reject(error);
          return;
        }
      } else if (!outcomeUnknown(error)) {
        // etcd refused the round before proposing it (over its size or operation limits): nothing
        // landed, the log goes on.
        for (const entry of round) entry.reject(error);
        return;
      } else {
        this.#unknownOutcomes++;
        try {
          landed = await this.#resolveUnknown(
            start,
            end,
            round[0]!.batch,
            error as OffsetStoreError,
          );
        } catch (failure) {
          this.#failStop(failure as OffsetStoreError, round);
          return;
        }
      }
    }
    if (!landed) {
      const error =
        this.#failure ??
        new OffsetStoreError(
          'REQUEST_TIMED_OUT',
          `append to ${this.#keys.log} timed out and was fenced off: it did not land and never will; retry`,
        );
      for (const entry of round) entry.reject(error);
      return;
    }
    if (revision !== undefined) this.#nextRevision = revision;
    this.#nextOffset = end;
    for (const entry of round) {
      this.#entryBytes.push(entry.batch.length);
      this.#sizeBytes += entry.batch.length;
      this.#appendedBytes += entry.batch.length;
    }
    // No longer pending: an entry may tell its caller at once (appendEntry), who may append again.
    this.#inFlightCount = 0;
    for (let i = 0; i < round.length; i++) round[i]!.resolve(start + i);
    if (this.#failure !== undefined) this.#failStop(this.#failure, []);
  }

  /** The compares of every write: the owner token, and `next` unchanged since this log last saw it. */
  #compares() {
    return [
      ownerCompare(this.#keys, this.#owner),
      {
        key: Buffer.from(this.#keys.next),
        target: 'Mod' as const,
        result: 'Equal' as const,
        mod_revision: this.#nextRevision,
      },
    ];
  }

  /** What a failed compare reads instead: the owner, `next`, and the key a round would have written first. */
  #probes(start: number): IRequestOp[] {
    return [
      rangeOp(this.#keys.owner),
      rangeOp(this.#keys.next),
      rangeOp(this.#keys.logEntry(start)),
    ];
  }

  /**
   * After etcd answered a round [start, end) NOSPACE: true if it applied the round. etcd checks its
   * quota before proposing a request and again when applying it, and answers NOSPACE in both cases,
   * the second after applying it (a round that crossed the quota while other buckets were writing:
   * acknowledging it is right, rejecting it would leave in etcd a commit its client was told failed,
   * and make the log's next round take that batch for its own). The answer is final, so reading the
   * round's first key settles it: it holds this round's first batch, byte for byte, only if etcd
   * applied the round (a transaction lands whole). Reads are not held to the quota; a read that gets
   * no answer fail-stops the log (the bucket is reloaded to learn it).
   */
  async #appliedDespiteNoSpace(start: number, end: number, firstBatch: Buffer): Promise<boolean> {
    const what = `reading back an append to ${this.#keys.log} answered NOSPACE`;
    const read = (await Promise.all(
      [this.#keys.owner, this.#keys.next, this.#keys.logEntry(start)].map(
        async (key) => (await this.#connection.range({ key: Buffer.from(key) }, what)).kvs[0],
      ),
    )) as Probed;
    // Not applied: the round is refused alone, and the log goes on (not fenced).
    if (read[2] === undefined || !read[2].value.equals(firstBatch)) return false;
    return this.#landedOrFenced(read, start, end, firstBatch);
  }

  /**
   * After a failed compare: true if this round [start, end) is in etcd (a round whose answer was
   * lost, then retried): its first key holds this round's first batch, byte for byte (its writer id
   * alone would also match a batch of an earlier round of this log). Else the log is fenced (someone
   * else owns the bucket or wrote at `start`), which fail-stops it. A landed round whose log then
   * moved on under someone else, or under a token that is gone since, still resolves (it was
   * committed under a valid token), and the log fail-stops after it.
   */
  #landedOrFenced(
    [owner, next, first]: Probed,
    start: number,
    end: number,
    firstBatch: Buffer,
  ): boolean {
    const ours = first !== undefined && first.value.equals(firstBatch);
    const stillOwner = owner !== undefined && owner.value.equals(this.#owner.value);
    if (ours && stillOwner && next !== undefined && Number(next.value.toString()) === end) {
      this.#nextRevision = String(next.mod_revision);
      return true;
    }
    const fence = stillOwner
      ? new OffsetStoreError(
          'NOT_COORDINATOR',
          `${this.#keys.log}: another writer under the same token appended ${ours ? `after log offset ${end - 1}` : `at log offset ${start}`}; this log stops`,
        )
      : notOwner(this.#keys, this.#owner, owner);
    this.#failure ??= fence;
    return ours;
  }

  /**
   * Resolves a round whose transaction got no answer: retries a fence transaction (see the module
   * comment) until one gets an answer or `resolveTimeoutMs` passes. True if the round landed.
   */
  async #resolveUnknown(
    start: number,
    end: number,
    firstBatch: Buffer,
    cause: OffsetStoreError,
  ): Promise<boolean> {
    const deadlineMs = performance.now() + this.#limits.resolveTimeoutMs;
    let delayMs = 25;
    let last: unknown = cause;
    while (performance.now() < deadlineMs && !this.#closedHard) {
      try {
        const res = await this.#connection.txn(
          {
            compare: this.#compares(),
            success: [
              {
                request_put: {
                  key: Buffer.from(this.#keys.next),
                  value: Buffer.from(String(start)),
                },
              },
            ],
            failure: this.#probes(start),
          },
          `resolving an append to ${this.#keys.log}`,
        );
        if (res.succeeded) {
          this.#nextRevision = String(res.header.revision);
          return false;
        }
        if (this.#ownFenceLanded(res, start)) return false;
        return this.#landedOrFenced(probed(res), start, end, firstBatch);
      } catch (error) {
        last = error;
        if (!outcomeUnknown(error)) break; // etcd answers but refuses writes (NOSPACE): reading cannot settle it
      }
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(delayMs * 2, 500);
    }
    throw new OffsetStoreError(
      'COORDINATOR_NOT_AVAILABLE',
      `${this.#keys.log}: an append's outcome is unknown and etcd did not answer within ${this.#limits.resolveTimeoutMs} ms; the bucket must be reloaded to learn it: ${(last as Error).message}`,
      { cause: last },
    );
  }

  /**
   * After a fence transaction's compare failed: true if an earlier fence of this resolution landed
   * although its answer was lost. Then `next` still says `start` but under a newer revision, and no
   * batch is at `start`: the round cannot land ever after (its compare holds the old revision), and
   * the log goes on from that revision. Every transaction of the round and its resolution compares
   * the same revision, so at most one of them applied.
   */
  #ownFenceLanded(res: ITxnResponse, start: number): boolean {
    const [owner, next, first] = probed(res);
    if (owner === undefined || !owner.value.equals(this.#owner.value)) return false;
    if (first !== undefined || next === undefined || Number(next.value.toString()) !== start)
      return false;
    this.#nextRevision = String(next.mod_revision);
    return true;
  }

  /** Set by `abandon`: stop resolving, the owner is gone. */
  #closedHard = false;

  #failStop(error: OffsetStoreError, round: PendingAppend[]): void {
    this.#failure ??= error;
    const queued = this.#queue;
    this.#queue = [];
    for (const entry of [...round, ...queued]) entry.reject(this.#failure);
  }

  /**
   * Stops taking appends (its owner gives the bucket up): queued appends and every later one reject
   * with `error` at once; the round in flight still settles as it would, its resolution included,
   * so that closing waits for that round only, not for every queued one.
   */
  refuseAppends(error: OffsetStoreError): void {
    this.#failStop(error, []);
  }

  /**
   * Fail-stops the log at once with `error` (its owner lost the bucket's lease): queued appends
   * reject, a round in flight settles as etcd decides (its compare fails if the lease is gone).
   */
  abandon(error: OffsetStoreError): void {
    this.#closedHard = true;
    this.#failStop(error, []);
  }

  /** Visits every batch at or above `fromLogOffset` and below the log end, in order. */
  async scan(fromLogOffset: number, visit: BatchVisitor): Promise<void> {
    const end = this.#nextOffset;
    await readEntries(
      this.#connection,
      this.#keys,
      Math.max(fromLogOffset, this.#firstOffset),
      end,
      this.#limits.batchBytesMax,
      (buf, logOffset) => visit(buf, 0, logOffset, buf.length, 0),
    );
  }

  /**
   * Deletes the batches below `logOffset` in one fenced transaction, then compacts etcd's history to
   * that revision; returns the bytes freed.
   */
  async truncateBelow(logOffset: number): Promise<number> {
    if (this.#failure !== undefined) throw this.#failure;
    const upTo = Math.min(logOffset, this.#nextOffset);
    if (upTo <= this.#firstOffset) return 0;
    const res = await this.#connection.txn(
      {
        compare: [ownerCompare(this.#keys, this.#owner)],
        success: [
          {
            request_delete_range: {
              key: Buffer.from(this.#keys.logEntry(this.#firstOffset)),
              range_end: Buffer.from(this.#keys.logEntry(upTo)),
            },
          },
        ],
        failure: [rangeOp(this.#keys.owner)],
      },
      `truncating ${this.#keys.log}`,
    );
    if (!res.succeeded) {
      const fence = notOwner(this.#keys, this.#owner, kvOf(res.responses[0]));
      this.#failStop(fence, []);
      throw fence;
    }
    const count = upTo - this.#firstOffset;
    const freed = this.#entryBytes.splice(0, count).reduce((a, b) => a + b, 0);
    this.#sizeBytes -= freed;
    this.#firstOffset = upTo;
    await this.#connection.compact(
      res.header.revision,
      `compacting etcd after truncating ${this.#keys.log}`,
    );
    return freed;
  }

  /**
   * Waits until the log is idle: no append queued or in flight. While appends keep coming this may
   * not happen; close refuses new appends first.
   */
  async drain(): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing;
  }

  /** Settles queued appends, then refuses later ones with STORE_CLOSED. Does not close the connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.drain();
  }
}

/** The options that were given (undefined ones keep their defaults). */
function definedOnly(options: EtcdLogOptions): Partial<Limits> {
  const out: Partial<Limits> = {};
  for (const key of Object.keys(ETCD_LOG_DEFAULTS) as (keyof Limits)[]) {
    const value = options[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The compare that holds while `owner` owns the bucket. */
export function ownerCompare(keys: BucketKeys, owner: OwnerToken) {
  return {
    key: Buffer.from(keys.owner),
    target: 'Value' as const,
    result: 'Equal' as const,
    value: owner.value,
  };
}

/** A read of one key inside a transaction. */
/**
 * The next log offset a bucket's `next` key holds (0 without the key); CORRUPT_MESSAGE naming the
 * key when it does not hold one in decimal.
 */
export function nextLogOffsetOf(keys: BucketKeys, next: IKeyValue | undefined): number {
  const text = next?.value.toString();
  const nextOffset = text === undefined ? 0 : /^(0|[1-9]\d{0,15})$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(nextOffset))
    throw new OffsetStoreError(
      'CORRUPT_MESSAGE',
      `${keys.next} cannot be read (${JSON.stringify(text!.slice(0, 100))}): it must hold the next log offset, in decimal`,
    );
  return nextOffset;
}

export function rangeOp(key: string): IRequestOp {
  return { request_range: { key: Buffer.from(key) } };
}

/** The owner key, `next` and a round's first log key, as read (undefined: absent). */
type Probed = [IKeyValue | undefined, IKeyValue | undefined, IKeyValue | undefined];

/** What the probes of a failed transaction (`#probes`) found. */
function probed(res: ITxnResponse): Probed {
  return res.responses.map(kvOf) as Probed;
}

/** The key a range response inside a transaction found, if any. */
export function kvOf(response: IResponseOp | undefined): IKeyValue | undefined {
  return response?.response_range?.kvs[0];
}

/** NOT_COORDINATOR for `owner`, naming the current owner. */
export function notOwner(
  keys: BucketKeys,
  owner: OwnerToken,
  current: IKeyValue | undefined,
): OffsetStoreError {
  const now =
    current === undefined
      ? 'nobody (its lease is gone or it was released)'
      : current.value.toString();
  return new OffsetStoreError(
    'NOT_COORDINATOR',
    `${keys.prefix}: this node (${owner.value.toString()}) no longer owns the bucket; its owner is ${now}`,
  );
}

/**
 * Reads the log keys [from, end) in pages, checks each batch (whole, at the offset its key names,
 * dense) and visits it. A gap or a damaged batch is CORRUPT_MESSAGE.
 */
async function readEntries(
  connection: EtcdConnection,
  keys: BucketKeys,
  from: number,
  end: number,
  batchBytesMax: number,
  visit: (buf: Buffer, logOffset: number) => void,
): Promise<void> {
  let expected: number | undefined;
  let cursor = from;
  let limit = PAGE_ENTRIES;
  const rangeEnd = prefixEnd(keys.log);
  while (cursor < end) {
    let res: IRangeResponse;
    try {
      res = await connection.range(
        { key: Buffer.from(keys.logEntry(cursor)), range_end: rangeEnd, limit },
        `reading ${keys.log}`,
      );
    } catch (error) {
      if (!responseTooLarge(error) || limit === 1) throw error;
      limit = Math.max(1, limit >> 1);
      continue;
    }
    let pageBytes = 0;
    for (const kv of res.kvs) pageBytes += kv.value.length;
    if (pageBytes < connection.responseBytesMax / 4) limit = Math.min(PAGE_ENTRIES, limit * 2);
    for (const kv of res.kvs) {
      const logOffset = keys.logOffsetOf(kv.key);
      if (logOffset >= end) return;
      if (expected !== undefined && logOffset !== expected)
        throw new OffsetStoreError(
          'CORRUPT_MESSAGE',
          `${keys.log}: log offset ${expected} is missing (the next batch is ${logOffset})`,
        );
      const check = checkBatch(kv.value, 0, kv.value.length, batchBytesMax);
      if (
        check.kind !== 'ok' ||
        check.sizeBytes !== kv.value.length ||
        check.logOffset !== logOffset
      ) {
        throw new OffsetStoreError(
          'CORRUPT_MESSAGE',
          `${keys.logEntry(logOffset)}: not the batch at log offset ${logOffset}: ${check.kind === 'ok' ? `it says ${check.logOffset}, ${check.sizeBytes} bytes of ${kv.value.length}` : check.reason}`,
        );
      }
      visit(kv.value, logOffset);
      expected = logOffset + 1;
      cursor = expected;
    }
    if (!res.more || res.kvs.length === 0) break;
  }
  if (expected !== undefined && expected < end)
    throw new OffsetStoreError(
      'CORRUPT_MESSAGE',
      `${keys.log}: the log ends at ${expected}, but next says ${end}`,
    );
  assert(cursor <= end || expected === undefined || expected <= end, 'reads stop at the log end');
}
