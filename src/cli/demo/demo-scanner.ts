/**
 * One scanner of the demo: a GroupMember plus the consumption loop a service would run around it.
 *
 * - On assignment it fetches the committed offsets of the new buckets and resumes from them (0 when
 *   nothing is committed).
 * - Its loop reads up to `chunkRecords` records from each owned bucket every `pollIntervalMs`,
 *   records them in the ledger, and commits the positions that moved every `commitIntervalMs`
 *   (an auto-commit interval: what was read since the last commit is read again after a crash).
 * - On revocation it commits the revoked buckets' positions before they are released, so a
 *   cooperative rebalance causes no duplicates.
 * - `kill()` stops the loop and the heartbeats without leaving, like a crashed process.
 * The loop, the callbacks and commits run one at a time (a promise chain), so a revocation never
 * interleaves with a half-done read.
 */
import type { BucketRef, GroupMember, OffsetStore } from '../../index.js';
import { isOffsetStoreError } from '../../index.js';
import type { ConsumptionLedger } from './consumption-ledger.js';

/** A bucket position of a scanner. */
export interface BucketPosition {
  /** The bucket of the synthetic table. */
  bucketId: number;
  /** Next record to read. */
  next: number;
  /** Last offset the store acknowledged for this scanner's commit (or fetched on assignment). */
  committed: number;
}

/** What a scanner reports as it runs. */
export type ScannerEvent =
  | { type: 'joined'; scanner: string; memberId: string }
  | {
      type: 'assigned';
      scanner: string;
      buckets: { bucketId: number; resumeOffset: number; committed: boolean }[];
    }
  | { type: 'revoked'; scanner: string; buckets: { bucketId: number; committedOffset: number }[] }
  | { type: 'lost'; scanner: string; bucketIds: number[] };

/** Options of a demo scanner. */
export interface DemoScannerOptions {
  /** The store the scanner joins the group through. */
  store: OffsetStore;
  /** The scanners' group. */
  groupId: string;
  /** Name in the demo's timeline (e.g. `scanner-2`). */
  name: string;
  /** The synthetic table it subscribes to. */
  tableId: number;
  /** Where it records every record it consumes. */
  ledger: ConsumptionLedger;
  /** Records read from each owned bucket per poll. */
  chunkRecords: number;
  /** Pause between two polls, in ms. */
  pollIntervalMs: number;
  /** How often moved positions are committed, in ms. */
  commitIntervalMs: number;
  /** Its session timeout, in ms: how long after its kill its buckets move. */
  sessionTimeoutMs: number;
  /** Hears of its joins, assignments, revocations and losses, for the timeline. */
  onEvent: (event: ScannerEvent) => void;
}

/** A scanner; see the module header. */
export class DemoScanner {
  /** Its name in the timeline. */
  readonly name: string;
  readonly #options: DemoScannerOptions;
  readonly #positions = new Map<number, BucketPosition>();
  readonly #commitErrors = new Map<string, number>();
  #member: GroupMember | undefined;
  #chain: Promise<unknown> = Promise.resolve();
  #running = true;
  #loop: Promise<void> = Promise.resolve();
  /** Events raised while `joinGroup` runs (the first assignment), reported after the join event; null once joined. */
  #heldEvents: ScannerEvent[] | null = [];
  #lastCommitMs = performance.now();
  #commitCount = 0;
  #committedRecordCount = 0;

  private constructor(options: DemoScannerOptions) {
    this.name = options.name;
    this.#options = options;
  }

  /** Joins the group and starts consuming. */
  static async start(options: DemoScannerOptions): Promise<DemoScanner> {
    const scanner = new DemoScanner(options);
    scanner.#member = await options.store.joinGroup(options.groupId, {
      subscribedTableIds: [options.tableId],
      sessionTimeoutMs: options.sessionTimeoutMs,
      rebalanceTimeoutMs: 10_000,
      retryBackoffMs: 100,
      onAssigned: (buckets) => scanner.#exclusive(() => scanner.#assign(buckets)),
      onRevoked: (buckets) => scanner.#exclusive(() => scanner.#revoke(buckets)),
      onLost: (buckets) => scanner.#exclusive(async () => scanner.#lose(buckets)),
    });
    options.onEvent({ type: 'joined', scanner: scanner.name, memberId: scanner.memberId });
    for (const event of scanner.#heldEvents ?? []) options.onEvent(event);
    scanner.#heldEvents = null;
    scanner.#loop = scanner.#run();
    return scanner;
  }

  /** The member id the coordinator gave this scanner. */
  get memberId(): string {
    return this.#member!.memberId;
  }

  /** Positions of the buckets the scanner owns, by bucket id. */
  positions(): BucketPosition[] {
    return [...this.#positions.values()]
      .map((p) => ({ ...p }))
      .sort((a, b) => a.bucketId - b.bucketId);
  }

  /** Commits the store acknowledged. */
  get commitCount(): number {
    return this.#commitCount;
  }

  /** Buckets it holds now. */
  get bucketCount(): number {
    return this.#positions.size;
  }

  /** Offsets carried by the acknowledged commits. */
  get committedRecordCount(): number {
    return this.#committedRecordCount;
  }

  /** Refused commits by error code (fencing during a rebalance is retried by the next commit). */
  commitErrors(): Record<string, number> {
    return Object.fromEntries(this.#commitErrors);
  }

  /** Stops consuming and heartbeating without leaving, as a crash would; returns the positions at that moment. */
  async kill(): Promise<BucketPosition[]> {
    this.#running = false;
    await this.#loop;
    this.#member!.stop();
    return this.positions();
  }

  /** Stops consuming and leaves the group (committing what it owns first). */
  async leave(): Promise<void> {
    this.#running = false;
    await this.#loop;
    await this.#member!.leave();
  }

  #report(event: ScannerEvent): void {
    if (this.#heldEvents === null) this.#options.onEvent(event);
    else this.#heldEvents.push(event);
  }

  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(task, task);
    this.#chain = run.catch(() => {});
    return run;
  }

  async #run(): Promise<void> {
    while (this.#running) {
      await this.#exclusive(() => this.#step());
      await new Promise((resolve) => setTimeout(resolve, this.#options.pollIntervalMs));
    }
  }

  async #step(): Promise<void> {
    const { ledger, chunkRecords } = this.#options;
    for (const p of this.#positions.values()) {
      if (p.next >= ledger.recordsPerBucket) continue;
      const to = Math.min(ledger.recordsPerBucket, p.next + chunkRecords);
      ledger.consume(p.bucketId, p.next, to);
      p.next = to;
    }
    if (performance.now() - this.#lastCommitMs >= this.#options.commitIntervalMs)
      await this.#commit([...this.#positions.values()]);
  }

  async #commit(positions: BucketPosition[]): Promise<void> {
    this.#lastCommitMs = performance.now();
    const moved = positions.filter((p) => p.next > p.committed);
    if (moved.length === 0) return;
    const offsets = moved.map((p) => ({ next: p.next, p }));
    try {
      await this.#member!.commit(
        offsets.map(({ p, next }) => ({
          tableId: this.#options.tableId,
          bucketId: p.bucketId,
          offset: next,
        })),
      );
    } catch (error) {
      if (!isOffsetStoreError(error)) throw error;
      this.#commitErrors.set(error.code, (this.#commitErrors.get(error.code) ?? 0) + 1);
      return;
    }
    for (const { p, next } of offsets) p.committed = next;
    this.#commitCount++;
    this.#committedRecordCount += offsets.length;
  }

  async #assign(buckets: BucketRef[]): Promise<void> {
    const fetched = await this.#options.store.fetchOffsets(this.#options.groupId, buckets);
    const assigned = buckets.map((b, i) => {
      const offset = fetched[i]?.offset;
      this.#positions.set(b.bucketId, {
        bucketId: b.bucketId,
        next: offset ?? 0,
        committed: offset ?? 0,
      });
      return { bucketId: b.bucketId, resumeOffset: offset ?? 0, committed: offset !== undefined };
    });
    this.#report({ type: 'assigned', scanner: this.name, buckets: assigned });
  }

  async #revoke(buckets: BucketRef[]): Promise<void> {
    const revoked = buckets
      .map((b) => this.#positions.get(b.bucketId))
      .filter((p) => p !== undefined);
    await this.#commit(revoked);
    for (const b of buckets) this.#positions.delete(b.bucketId);
    this.#report({
      type: 'revoked',
      scanner: this.name,
      buckets: revoked.map((p) => ({ bucketId: p.bucketId, committedOffset: p.committed })),
    });
  }

  #lose(buckets: BucketRef[]): void {
    for (const b of buckets) this.#positions.delete(b.bucketId);
    this.#report({ type: 'lost', scanner: this.name, bucketIds: buckets.map((b) => b.bucketId) });
  }
}
