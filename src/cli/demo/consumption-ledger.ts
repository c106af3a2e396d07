/**
 * The demo's ground truth: how many times each record of each bucket of the synthetic table was
 * consumed, by anyone. From it the demo proves at-least-once delivery across a member crash:
 * nothing skipped (every count >= 1) and duplicates counted (counts above 1), each of which must be
 * explained by a range the killed member read but had not committed.
 *
 * The synthetic table is simply "bucket b holds records 0 .. recordsPerBucket-1": its log end is
 * `recordsPerBucket` in every bucket, and reading is free, so the demo measures the store, not I/O.
 */

/** A range of record offsets `[from, to)` of one bucket. */
export interface OffsetRange {
  /** The bucket of the synthetic table. */
  bucketId: number;
  /** First record offset of the range. */
  from: number;
  /** Record offset after the range (exclusive). */
  to: number;
}

/** Consumption counts per record; see the module header. */
export class ConsumptionLedger {
  /** Buckets of the synthetic table. */
  readonly bucketCount: number;
  /** Records in each bucket: also each bucket's log end. */
  readonly recordsPerBucket: number;
  readonly #counts: Uint16Array[];

  /** Every count starts at 0 (one 16-bit counter per record). */
  constructor(bucketCount: number, recordsPerBucket: number) {
    this.bucketCount = bucketCount;
    this.recordsPerBucket = recordsPerBucket;
    this.#counts = Array.from({ length: bucketCount }, () => new Uint16Array(recordsPerBucket));
  }

  /** Records that `[from, to)` of `bucketId` was consumed once more. */
  consume(bucketId: number, from: number, to: number): void {
    const counts = this.#counts[bucketId]!;
    for (let i = from; i < to; i++) counts[i] = Math.min(0xffff, counts[i]! + 1);
  }

  /** Records consumed so far, counting duplicates. */
  get consumedTotal(): number {
    let total = 0;
    for (const counts of this.#counts) for (const c of counts) total += c;
    return total;
  }

  /** Distinct records consumed at least once. */
  get distinctConsumed(): number {
    let total = 0;
    for (const counts of this.#counts) for (const c of counts) total += c > 0 ? 1 : 0;
    return total;
  }

  /** Records never consumed, as ranges. */
  skipped(): OffsetRange[] {
    return this.#ranges((c) => c === 0);
  }

  /** Extra consumptions (sum of count - 1 over records consumed more than once). */
  duplicateCount(): number {
    let total = 0;
    for (const counts of this.#counts) for (const c of counts) if (c > 1) total += c - 1;
    return total;
  }

  /** Duplicates that fall outside every range in `explained` (0 when each one is accounted for). */
  unexplainedDuplicates(explained: readonly OffsetRange[]): number {
    let total = 0;
    this.#counts.forEach((counts, bucketId) => {
      const ranges = explained.filter((r) => r.bucketId === bucketId);
      counts.forEach((c, i) => {
        if (c > 1 && !ranges.some((r) => i >= r.from && i < r.to)) total += c - 1;
      });
    });
    return total;
  }

  #ranges(match: (count: number) => boolean): OffsetRange[] {
    const ranges: OffsetRange[] = [];
    this.#counts.forEach((counts, bucketId) => {
      let start = -1;
      for (let i = 0; i <= counts.length; i++) {
        const hit = i < counts.length && match(counts[i]!);
        if (hit && start < 0) start = i;
        if (!hit && start >= 0) {
          ranges.push({ bucketId, from: start, to: i });
          start = -1;
        }
      }
    });
    return ranges;
  }
}
