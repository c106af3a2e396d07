/**
 * The assignor port: given the members of a group (their subscriptions and current target
 * assignments) and the layouts of the subscribed tables, decide which member should own which
 * bucket. Assignors are pure and synchronous; the coordinator checks their output
 * (`checkAssignment`) before it turns it into records, so a faulty custom assignor can never make a
 * bucket have two owners or hand a member a table it did not subscribe to.
 */
import { formatBucketRef, normalizeBucketRef, type TableBucket } from '../model/index.js';
import { BucketSet } from './bucket-set.js';
import { BucketIndexer, type TableLayout } from './table-layout.js';

/**
 * The name of an assignor a member may ask for: `'uniform'` (the default) or `'range'`. (A
 * coordinator built directly may register more, `GroupCoordinatorOptions.assignors`; the store's
 * coordinators have these two.)
 */
export type AssignorName = 'uniform' | 'range';

/** One member as an assignor sees it. */
export interface AssignorMember {
  /** The member's id; the key of its entry in the assignor's result. */
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
  assign(input: AssignorInput): Map<string, TableBucket[]>;
}

/**
 * Checks an assignor's output against its input and converts it to sets: every bucket must exist in
 * the layouts, belong to a table its member subscribes to, and go to one member only.
 * A violation is a `TypeError` naming the assignor (a bug in assignor code, not bad user input).
 */
export function checkAssignment(
  assignorName: string,
  input: AssignorInput,
  output: Map<string, TableBucket[]>,
): Map<string, BucketSet> {
  const indexer = new BucketIndexer(input.tables);
  const byId = new Map(input.members.map((m, i) => [m.memberId, i]));
  const ownerByIndex = new Int32Array(indexer.total).fill(-1);
  const result = new Map<string, BucketSet>();
  for (const [memberId, refs] of output) {
    const position = byId.get(memberId);
    if (position === undefined)
      throw new TypeError(
        `assignor '${assignorName}' assigned buckets to unknown member ${memberId}`,
      );
    const member = input.members[position] as AssignorMember;
    // An unchanged target is the member's current set's own refs, normalized when they entered it.
    const unchanged = member.currentTarget.isSameSequence(refs);
    // A set, not the array: looking each bucket's table up in a subscription of 65,536 tables made
    // one member's first assignment take over a second.
    const subscribed = new Set(member.subscribedTableIds);
    const normalized = refs.map((raw) => {
      const ref = unchanged ? raw : normalizeBucketRef(raw, `assignment of ${memberId}`);
      const index = indexer.indexOf(ref);
      if (index < 0 || !subscribed.has(ref.tableId)) {
        throw new TypeError(
          `assignor '${assignorName}' gave member ${memberId} ${formatBucketRef(ref)}, which it cannot own`,
        );
      }
      const previous = ownerByIndex[index] as number;
      if (previous !== -1) {
        const other = (input.members[previous] as AssignorMember).memberId;
        throw new TypeError(
          `assignor '${assignorName}' gave ${formatBucketRef(ref)} to both ${other} and ${memberId}`,
        );
      }
      ownerByIndex[index] = position;
      return ref;
    });
    // Most members keep their target across a rebalance: reuse the set instead of rebuilding it.
    const current = member.currentTarget;
    if (unchanged) result.set(memberId, current);
    else {
      const next = BucketSet.of(normalized);
      result.set(memberId, next.equals(current) ? current : next);
    }
  }
  return result;
}
