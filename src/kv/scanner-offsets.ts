/**
 * ScannerOffsets: the positions of a scanner that assigns itself buckets by hand (no rebalance), and
 * the commits that make them durable. A scanner loop polls from `position(b)`, calls `advance(b, next)`
 * after processing, and commits "next offset to read" (Kafka convention) explicitly, on a timer, or at
 * `close()`.
 *
 * Invariants:
 * - `commit()` commits exactly the buckets whose position differs from their last committed offset,
 *   as one atomic commit; it is a no-op only when nothing moved.
 * - A failed commit changes nothing: the moved positions stay moved and go out with the next commit.
 * - Commits are serialized: a commit started while one is in flight waits for it, then commits what
 *   is still moved, so two commits never race each other.
 * - `assign` is all-or-nothing: if a position cannot be resolved, the assignment stays as it was.
 * - A bucket assigned without a committed offset counts as moved: the next commit records its start
 *   position (as Kafka's consumer does), so a restart resumes there even if nothing was read. A
 *   negative committed offset (Kafka's sentinels -1 and -2) counts as none.
 */
import { OffsetStoreError } from '../errors/index.js';
import {
  callUserCallback,
  checkOptionsBag,
  failureMessage,
  Serial,
  type Clock,
  type Timer,
} from '../util/index.js';
import type { CommittedOffsetValue } from './group-offsets.js';
import { bucketKey, type BucketRef, type TableBucket } from '../model/index.js';
import { normalizeBucket, normalizeBuckets } from './validation.js';

/** What the scanner needs from the store. */
export interface ScannerOffsetsPort {
  /** Commits without a member (the store's `commitOffsets`); resolves once durable. */
  commitOffsets(
    groupId: string,
    offsets: {
      tableId: number;
      partitionId: number | null;
      bucketId: number;
      offset: number;
      leaderEpoch?: number;
      metadata?: string;
    }[],
  ): Promise<void>;
  /** Fetches committed offsets, one per bucket, null where none (the store's `fetchOffsets`). */
  fetchOffsets(groupId: string, buckets: TableBucket[]): Promise<(CommittedOffsetValue | null)[]>;
  /** Told once the scanner is closed and has committed what moved (the store stops tracking it). */
  closed?(scanner: ScannerOffsets): void;
  /** Hears what the user's onAutoCommitError threw or rejected with (the store's onWarning). */
  warn?(message: string): void;
  /**
   * The store's offsetsRetentionMs: a position committed this long ago expires even while the
   * scanner runs (a scanner is no member). Commits write again, unmoved, a position committed half
   * of it ago; undefined: never.
   */
  readonly retentionMs?: number;
}

/** Where to start a bucket with no committed offset. */
export type MissingOffsetPolicy =
  'earliest' | 'error' | ((bucket: TableBucket) => number | Promise<number>);

const SCANNER_OPTION_NAMES = ['onMissing', 'autoCommitIntervalMs', 'onAutoCommitError'];

/** Options of `OffsetStore.scanner`. */
export interface ScannerOptions {
  /** Start position of a bucket with no committed offset: 0 ('earliest', default), an error, or a resolver. */
  onMissing?: MissingOffsetPolicy;
  /** Commit what moved every this many ms; off when omitted. */
  autoCommitIntervalMs?: number;
  /**
   * Called with the error of a failed auto-commit (the positions stay pending). If it throws or
   * returns a promise that rejects, that goes to the store's onWarning; auto-commit goes on.
   */
  onAutoCommitError?: (error: unknown) => void;
}

interface Position {
  bucket: TableBucket;
  position: number;
  committed: number | undefined;
  /** When `committed` was committed (the store's clock), when known. */
  committedAtMs: number | undefined;
  /**
   * The leader epoch and metadata committed with `committed` (-1 and '' once this scanner commits a
   * moved position): a refresh of an unmoved position writes them again, not blanks.
   */
  leaderEpoch: number;
  metadata: string;
}

/** Manual-assignment positions and commits of one scanner in a group. */
export class ScannerOffsets {
  /** The group whose offsets this scanner reads and commits. */
  readonly groupId: string;
  readonly #port: ScannerOffsetsPort;
  readonly #clock: Clock;
  readonly #onMissing: MissingOffsetPolicy;
  readonly #autoCommitIntervalMs: number | undefined;
  readonly #onAutoCommitError: ((error: unknown) => void) | undefined;
  readonly #positions = new Map<string, Position>();
  #commitChain: Promise<void> = Promise.resolve();
  /** Assignments in the order they were asked for (one's dropped buckets depend on the one before). */
  readonly #assigns = new Serial();
  #timer: Timer | undefined;
  #closed = false;

  /**
   * For the store (`OffsetStore.scanner`); reads each option once and arms auto-commit. RangeError for
   * an `autoCommitIntervalMs` that is not a positive number of at most 2^31 - 1 ms (a Node timer fires
   * a longer delay after 1 ms).
   */
  constructor(
    groupId: string,
    port: ScannerOffsetsPort,
    clock: Clock,
    options: ScannerOptions = {},
  ) {
    // Each option is read once; the scanner keeps the copies.
    checkOptionsBag(options, SCANNER_OPTION_NAMES, 'options', "the scanner's options");
    const { onMissing, autoCommitIntervalMs, onAutoCommitError } = options;
    if (
      onMissing !== undefined &&
      onMissing !== 'earliest' &&
      onMissing !== 'error' &&
      typeof onMissing !== 'function'
    )
      throw new TypeError(
        `onMissing must be 'earliest', 'error' or a function, got ${typeof onMissing === 'string' ? JSON.stringify(onMissing) : typeof onMissing}`,
      );
    if (onAutoCommitError !== undefined && typeof onAutoCommitError !== 'function')
      throw new TypeError(`onAutoCommitError must be a function, got ${typeof onAutoCommitError}`);
    if (
      autoCommitIntervalMs !== undefined &&
      !(
        typeof autoCommitIntervalMs === 'number' &&
        autoCommitIntervalMs > 0 &&
        autoCommitIntervalMs <= 0x7fffffff
      )
    ) {
      throw new RangeError(
        `autoCommitIntervalMs must be a positive number of at most ${0x7fffffff} ms, got ${autoCommitIntervalMs}`,
      );
    }
    this.groupId = groupId;
    this.#port = port;
    this.#clock = clock;
    this.#onMissing = onMissing ?? 'earliest';
    this.#autoCommitIntervalMs = autoCommitIntervalMs;
    this.#onAutoCommitError = onAutoCommitError;
    this.#armAutoCommit();
  }

  /**
   * Makes `buckets` the assignment: loads their committed offsets (missing ones per `onMissing`).
   * Buckets dropped from the assignment have their moved positions committed first, including
   * progress recorded on them while that commit is on its way. Calls take effect one after another,
   * in the order they were made: the last one's buckets are the assignment.
   */
  async assign(buckets: readonly BucketRef[]): Promise<void> {
    this.#checkOpen();
    // An array, each element read once, no bucket twice (TypeError or INVALID_REQUEST naming it).
    const normalized = normalizeBuckets(buckets, 'buckets', true);
    return this.#assigns.run(() => this.#assign(normalized));
  }

  async #assign(normalized: TableBucket[]): Promise<void> {
    this.#checkOpen();
    const keys = new Set(normalized.map(bucketKey));
    // All-or-nothing: every new position is resolved before the assignment changes.
    const fresh = normalized.filter((b) => !this.#positions.has(bucketKey(b)));
    const committed = fresh.length === 0 ? [] : await this.#port.fetchOffsets(this.groupId, fresh);
    const added: Position[] = [];
    for (let i = 0; i < fresh.length; i++) {
      const bucket = fresh[i]!;
      const value = committed[i];
      // A negative committed offset (Kafka's sentinels -1 latest, -2 earliest) is no position: as a
      // Kafka consumer does, resolve the start by the policy (and commit it, since it moved).
      const usable = value != null && value.offset >= 0;
      added.push({
        bucket,
        position: usable ? value.offset : await this.#missing(bucket),
        committed: value?.offset,
        committedAtMs: value?.commitTimestampMs,
        leaderEpoch: value?.leaderEpoch ?? -1,
        metadata: value?.metadata ?? '',
      });
    }
    const dropped = [...this.#positions.keys()].filter((k) => !keys.has(k));
    // Again while one moved during the commit (the loop finished a record meanwhile): progress on a
    // dropped bucket is committed before the bucket is forgotten, never lost with it.
    const movedDropped = () =>
      dropped.some((k) => {
        const p = this.#positions.get(k);
        return p !== undefined && this.#moved(p);
      });
    while (movedDropped()) await this.commit();
    for (const k of dropped) this.#positions.delete(k);
    for (const p of added)
      if (!this.#positions.has(bucketKey(p.bucket))) this.#positions.set(bucketKey(p.bucket), p);
  }

  async #missing(bucket: TableBucket): Promise<number> {
    const policy = this.#onMissing;
    if (policy === 'earliest') return 0;
    if (policy === 'error') {
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `group ${this.groupId} has no committed offset for bucket ${bucketKey(bucket)}`,
      );
    }
    const position = await policy(bucket);
    if (!Number.isSafeInteger(position) || position < 0)
      throw new RangeError(`onMissing returned ${position} for ${bucketKey(bucket)}`);
    return position;
  }

  /** The buckets currently assigned. */
  assignment(): TableBucket[] {
    return [...this.#positions.values()].map((p) => ({ ...p.bucket }));
  }

  /** The next offset to read in an assigned bucket. */
  position(bucket: BucketRef): number {
    return this.#get(bucket).position;
  }

  /** Moves an assigned bucket's position anywhere (backwards to re-read, forwards to skip). */
  seek(bucket: BucketRef, offset: number): void {
    this.#checkOpen();
    this.#get(bucket).position = checkOffset(offset);
  }

  /** Records progress: `nextOffset` (last processed + 1) must not be behind the current position. */
  advance(bucket: BucketRef, nextOffset: number): void {
    this.#checkOpen();
    const p = this.#get(bucket);
    checkOffset(nextOffset);
    if (nextOffset < p.position) {
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `advance to ${nextOffset} is behind position ${p.position} of ${bucketKey(p.bucket)}; use seek to go back`,
      );
    }
    p.position = nextOffset;
  }

  /** Buckets whose position differs from their last committed offset. */
  movedBuckets(): TableBucket[] {
    return [...this.#positions.values()]
      .filter((p) => this.#moved(p))
      .map((p) => ({ ...p.bucket }));
  }

  /** Commits every moved position in one atomic commit; resolves once durable. */
  commit(): Promise<void> {
    const run = this.#commitChain.then(() => this.#commitMoved());
    this.#commitChain = run.catch(() => {});
    return run;
  }

  /**
   * Commits what moved, and what did not but was committed half the store's retention ago: a quiet
   * bucket's offset would otherwise expire under a scanner that runs for longer than the retention
   * (as a Kafka consumer's auto-commit sends every position, moved or not).
   */
  async #commitMoved(): Promise<void> {
    const nowMs = this.#clock.nowMs();
    const due = [...this.#positions.values()].filter(
      (p) => this.#moved(p) || this.#expiring(p, nowMs),
    );
    if (due.length === 0) return;
    // A moved position is a new commit of the scanner's own (no leader epoch, no metadata); an
    // unmoved one is the last commit written again, as it was.
    const snapshot = due.map((p) => {
      const moved = this.#moved(p);
      return {
        ...p.bucket,
        offset: p.position,
        leaderEpoch: moved ? -1 : p.leaderEpoch,
        metadata: moved ? '' : p.metadata,
      };
    });
    await this.#port.commitOffsets(this.groupId, snapshot);
    due.forEach((p, i) => {
      const written = snapshot[i]!;
      p.committed = written.offset;
      p.committedAtMs = nowMs;
      p.leaderEpoch = written.leaderEpoch;
      p.metadata = written.metadata;
    });
  }

  /** Whether an unmoved position was committed at least half the store's retention ago. */
  #expiring(p: Position, nowMs: number): boolean {
    const retentionMs = this.#port.retentionMs;
    return (
      retentionMs !== undefined &&
      p.committedAtMs !== undefined &&
      nowMs - p.committedAtMs >= retentionMs / 2
    );
  }

  /**
   * Stops auto-commit and commits what moved; later calls of assign, seek and advance throw
   * STORE_CLOSED. Each call commits what is still moved, after any commit in flight: a close whose
   * commit failed (a retriable error) may be called again, and that call commits the positions; once
   * they are committed, close resolves with nothing to do. The store's close closes a scanner whose
   * close has not yet committed.
   */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#timer?.cancel();
    }
    await this.commit();
    this.#port.closed?.(this);
  }

  #moved(p: Position): boolean {
    return p.committed !== p.position;
  }

  #get(bucket: unknown): Position {
    const key = bucketKey(normalizeBucket(bucket, 'bucket'));
    const p = this.#positions.get(key);
    if (p === undefined)
      throw new OffsetStoreError(
        'INVALID_REQUEST',
        `bucket ${key} is not assigned to this scanner`,
      );
    return p;
  }

  #checkOpen(): void {
    if (this.#closed)
      throw new OffsetStoreError('STORE_CLOSED', `scanner of group ${this.groupId} is closed`);
  }

  #armAutoCommit(): void {
    const intervalMs = this.#autoCommitIntervalMs;
    if (intervalMs === undefined) return;
    this.#timer = this.#clock.setTimer(intervalMs, () => {
      if (this.#closed) return;
      this.commit()
        .catch((error: unknown) => {
          const onError = this.#onAutoCommitError;
          if (onError === undefined) return;
          callUserCallback(onError, [error], (how, thrown) =>
            this.#port.warn?.(
              `onAutoCommitError of the scanner of group ${this.groupId} ${how} (${failureMessage(thrown)}) on: ${failureMessage(error)}`,
            ),
          );
        })
        .finally(() => {
          if (!this.#closed) this.#armAutoCommit();
        });
    });
  }
}

function checkOffset(offset: number): number {
  if (typeof offset !== 'number')
    throw new TypeError(`offset must be a number, got ${typeof offset}`);
  if (!Number.isSafeInteger(offset) || offset < 0)
    throw new OffsetStoreError(
      'INVALID_REQUEST',
      `offset must be a safe integer >= 0, got ${offset}`,
    );
  return offset;
}
