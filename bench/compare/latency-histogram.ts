/**
 * A fixed-size log-linear latency histogram (the HdrHistogram idea, reduced): values below 128 ns are
 * counted exactly; above, each power of two is split into 64 sub-buckets, so a reported percentile is
 * within 1.6% of the true sample. 2,432 counters cover 0 ns to ~73 min; larger values land in the last
 * bucket. Recording is O(1) and allocation-free, so it can sit in the timed path of a 30 s run.
 */

const EXACT_LIMIT = 128;
const SUB_BUCKETS = 64;
const SUB_BUCKET_BITS = 6;
const FIRST_EXPONENT = 7; // 2^7 = EXACT_LIMIT
const LAST_EXPONENT = 42;
const COUNTER_COUNT = EXACT_LIMIT + (LAST_EXPONENT - FIRST_EXPONENT + 1) * SUB_BUCKETS;

/** Latency histogram in nanoseconds; see the module header. */
export class LatencyHistogram {
  readonly #counts = new Float64Array(COUNTER_COUNT);
  #count = 0;
  #sumNs = 0;
  #minNs = Number.POSITIVE_INFINITY;
  #maxNs = 0;

  /** Records one sample of `ns` nanoseconds (negative values count as 0). */
  record(ns: number): void {
    const value = ns > 0 ? Math.round(ns) : 0;
    this.#counts[indexOf(value)]! += 1;
    this.#count += 1;
    this.#sumNs += value;
    if (value < this.#minNs) this.#minNs = value;
    if (value > this.#maxNs) this.#maxNs = value;
  }

  /** Number of samples recorded. */
  get count(): number {
    return this.#count;
  }

  /** Mean in nanoseconds (exact), 0 when empty. */
  get meanNs(): number {
    return this.#count === 0 ? 0 : this.#sumNs / this.#count;
  }

  /** Largest sample in nanoseconds (exact), 0 when empty. */
  get maxNs(): number {
    return this.#maxNs;
  }

  /** Smallest sample in nanoseconds (exact), 0 when empty. */
  get minNs(): number {
    return this.#count === 0 ? 0 : this.#minNs;
  }

  /** The value at quantile `q` (0 < q <= 1) in nanoseconds, 0 when empty. */
  quantileNs(q: number): number {
    if (!(q > 0 && q <= 1)) throw new RangeError(`quantile must be in (0, 1], got ${q}`);
    if (this.#count === 0) return 0;
    const rank = Math.ceil(q * this.#count);
    let seen = 0;
    for (let i = 0; i < COUNTER_COUNT; i++) {
      seen += this.#counts[i]!;
      if (seen >= rank) return Math.min(Math.max(representativeOf(i), this.minNs), this.#maxNs);
    }
    return this.#maxNs;
  }

  /** Adds every sample of `other` to this histogram. */
  merge(other: LatencyHistogram): void {
    for (let i = 0; i < COUNTER_COUNT; i++) this.#counts[i]! += other.#counts[i]!;
    this.#count += other.#count;
    this.#sumNs += other.#sumNs;
    if (other.#count > 0) {
      this.#minNs = Math.min(this.#minNs, other.#minNs);
      this.#maxNs = Math.max(this.#maxNs, other.#maxNs);
    }
  }
}

function indexOf(value: number): number {
  if (value < EXACT_LIMIT) return value;
  const exponent = Math.min(Math.floor(Math.log2(value)), LAST_EXPONENT);
  const unit = 2 ** (exponent - SUB_BUCKET_BITS);
  const sub = Math.min(Math.floor(value / unit) - SUB_BUCKETS, SUB_BUCKETS - 1);
  return EXACT_LIMIT + (exponent - FIRST_EXPONENT) * SUB_BUCKETS + sub;
}

/** Midpoint of the values counted at `index`. */
function representativeOf(index: number): number {
  if (index < EXACT_LIMIT) return index;
  const exponent = FIRST_EXPONENT + Math.floor((index - EXACT_LIMIT) / SUB_BUCKETS);
  const sub = (index - EXACT_LIMIT) % SUB_BUCKETS;
  const unit = 2 ** (exponent - SUB_BUCKET_BITS);
  return (SUB_BUCKETS + sub) * unit + unit / 2;
}
