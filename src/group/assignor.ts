/**
 * The assignor port: given the members of a group (their subscriptions and current target
 * assignments) and the layouts of the subscribed tables, decide which member should own which
 * bucket. Assignors are pure and synchronous; the coordinator checks their output
 * (`checkAssignment`) before it turns it into records, so a faulty custom assignor can never make a
 * bucket have two owners or hand a member a table it did not subscribe to.
 */
import { formatBucketRef, normalizeBucketRef, type BucketRef } from './bucket-ref.js';
import { BucketSet } from './bucket-set.js';
import { BucketIndexer, type TableLayout } from './table-layout.js';

/** One member as an assignor sees it. */
export interface AssignorMember {
  readonly memberId: string;
  /** Static membership id, or null. */
  readonly instanceId: string | null;
  /** Sorted, duplicate-free table ids. */
  readonly subscribedTableIds: readonly number[];
  /** The member's target assignment before this computation (what a sticky assignor keeps). */
  readonly currentTarget: BucketSet;
}

/** Everything an assignor may look at. */
export interface AssignorInput {
  /** Members sorted by memberId. */
  readonly members: readonly AssignorMember[];
  /** Layouts of the tables at least one member subscribes to (tables without a layout are absent). */
  readonly tables: ReadonlyMap<number, TableLayout>;
}

/** A strategy that distributes buckets over the members of a group. */
export interface Assignor {
  /** Name members ask for in `HeartbeatRequest.assignor`. */
  readonly name: string;
  /** Returns each member's new target assignment; members left out get nothing. */
  assign(input: AssignorInput): Map<string, BucketRef[]>;
}

/**
 * Checks an assignor's output against its input and converts it to sets: every bucket must exist in
 * the layouts, belong to a table its member subscribes to, and go to one member only.
 * A violation is a `TypeError` naming the assignor (a bug in assignor code, not bad user input).
 */
export function checkAssignment(
  assignorName: string,
  input: AssignorInput,
  output: Map<string, BucketRef[]>,
): Map<string, BucketSet> {
  const indexer = new BucketIndexer(input.tables);
  const subscriptions = new Map(input.members.map((m) => [m.memberId, new Set(m.subscribedTableIds)]));
  const ownerByIndex = new Map<number, string>();
  const result = new Map<string, BucketSet>();
  for (const [memberId, refs] of output) {
    const subscribed = subscriptions.get(memberId);
    if (subscribed === undefined) throw new TypeError(`assignor '${assignorName}' assigned buckets to unknown member ${memberId}`);
    const normalized: BucketRef[] = [];
    for (const raw of refs) {
      const ref = raw.partitionId === undefined ? normalizeBucketRef(raw) : raw;
      const index = indexer.indexOf(ref);
      if (index < 0 || !subscribed.has(ref.tableId)) {
        throw new TypeError(`assignor '${assignorName}' gave member ${memberId} ${formatBucketRef(ref)}, which it cannot own`);
      }
      const previous = ownerByIndex.get(index);
      if (previous !== undefined) {
        throw new TypeError(`assignor '${assignorName}' gave ${formatBucketRef(ref)} to both ${previous} and ${memberId}`);
      }
      ownerByIndex.set(index, memberId);
      normalized.push(ref);
    }
    result.set(memberId, BucketSet.of(normalized));
  }
  return result;
}
