/**
 * The `range` assignor: for each table, the subscribers (sorted by memberId) get contiguous runs of
 * the table's buckets (partition by partition, bucket ids ascending), the first `count % n`
 * subscribers one bucket more.
 *
 * Co-partitioning: the split depends only on the layout and the subscriber list, so tables with the
 * same layout and the same subscribers send the same bucket ids (and partitions) to the same member,
 * which is what a join of co-partitioned tables needs. The price is stickiness: a membership change
 * shifts run boundaries, and buckets move even when a smaller move would do.
 */
import type { TableBucket } from '../model/index.js';
import type { Assignor, AssignorInput } from './assignor.js';
import { BucketIndexer } from './table-layout.js';

/** Name of the range assignor. */
export const RANGE_ASSIGNOR_NAME = 'range';

/** Contiguous, co-partitioned assignment; see the module header. */
export class RangeAssignor implements Assignor {
  /** 'range': the name members ask for. */
  readonly name = RANGE_ASSIGNOR_NAME;

  /** Contiguous runs per table for the subscribers sorted by member id; ignores current targets. */
  assign(input: AssignorInput): Map<string, TableBucket[]> {
    const result = new Map<string, TableBucket[]>(input.members.map((m) => [m.memberId, []]));
    const indexer = new BucketIndexer(input.tables);
    indexer.tables.forEach((table, slot) => {
      const subscribers = input.members.filter((m) => m.subscribedTableIds.includes(table.tableId));
      const n = subscribers.length;
      if (n === 0) return;
      const base = Math.floor(table.count / n);
      const extra = table.count % n;
      let index = table.base;
      subscribers.forEach((member, k) => {
        const refs = result.get(member.memberId) as TableBucket[];
        const end = index + base + (k < extra ? 1 : 0);
        for (; index < end; index++) refs.push(indexer.refAt(slot, index));
      });
    });
    return result;
  }
}
