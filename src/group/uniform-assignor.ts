/**
 * The `uniform` assignor (default): spreads buckets evenly over members, moving as few as possible.
 *
 * Identical subscriptions (the common case), in O(buckets + members log members):
 *  1. Number the subscribed buckets densely (BucketIndexer) and let each member claim the buckets of
 *     its current target that still exist (first claimant wins if input ever overlapped).
 *  2. Quotas: `base = floor(B / n)`; the `B % n` members that already hold the most get `base + 1`,
 *     so members above `base` keep as much as the arithmetic allows.
 *  3. Members over quota give back their excess; free buckets fill members under quota, in bucket
 *     order. A newcomer therefore takes only from over-quota members: sizes differ by at most 1.
 *
 * Heterogeneous subscriptions (members subscribe different tables):
 *  1. Every member keeps the buckets of its current target that still exist and that it subscribes.
 *  2. Free buckets go, table by table, to the least-loaded subscriber of that table (min-heap).
 *  3. Balancing passes: while some table has a subscriber whose total load exceeds another
 *     subscriber's by two or more, move buckets of that table (up to half the gap) from the heavier
 *     to the lighter.
 *     Each move lowers the sum of squared loads, so the passes end; they leave every table with no
 *     move that would even out loads, which for identical subscriptions is the at-most-1 property.
 */
import type { TableBucket } from '../model/index.js';
import type { Assignor, AssignorInput, AssignorMember } from './assignor.js';
import { BucketIndexer, type IndexedTable, type TableLayout } from './table-layout.js';

/** Name of the uniform assignor. */
export const UNIFORM_ASSIGNOR_NAME = 'uniform';

/** Balanced, sticky assignment; see the module header for the algorithm. */
export class UniformAssignor implements Assignor {
  /** 'uniform': the name members ask for, and the coordinator's default. */
  readonly name = UNIFORM_ASSIGNOR_NAME;

  /** Balanced and sticky: members keep their current targets up to their quota (see the module header). */
  assign(input: AssignorInput): Map<string, TableBucket[]> {
    const members = input.members;
    const result = new Map<string, TableBucket[]>();
    if (members.length === 0) return result;
    const first = members[0] as AssignorMember;
    const homogeneous = members.every((m) =>
      sameTables(m.subscribedTableIds, first.subscribedTableIds),
    );
    const indexer = new BucketIndexer(
      layoutsOf(input.tables, homogeneous ? first.subscribedTableIds : allSubscribed(members)),
    );
    // Kept buckets are returned as the very ref objects of the current targets, in the same order,
    // so the coordinator recognizes an unchanged target without re-keying it.
    const refByIndex: (TableBucket | undefined)[] = new Array<TableBucket | undefined>(
      indexer.total,
    );
    const perMember = homogeneous
      ? assignHomogeneous(members, indexer, refByIndex)
      : assignHeterogeneous(members, indexer, refByIndex);
    members.forEach((m, i) =>
      result.set(m.memberId, toRefs(indexer, perMember[i] as number[], refByIndex)),
    );
    return result;
  }
}

function assignHomogeneous(
  members: readonly AssignorMember[],
  indexer: BucketIndexer,
  refByIndex: (TableBucket | undefined)[],
): number[][] {
  const n = members.length;
  const total = indexer.total;
  const owner = new Int32Array(total).fill(-1);
  const kept = claimCurrent(members, indexer, owner, refByIndex, () => true);
  const base = Math.floor(total / n);
  let extra = total % n;
  const order = [...kept.keys()].sort(
    (a, b) => (kept[b] as number[]).length - (kept[a] as number[]).length || a - b,
  );
  const quota = new Int32Array(n);
  for (const i of order) quota[i] = base + (extra-- > 0 ? 1 : 0);
  for (let i = 0; i < n; i++) {
    const list = kept[i] as number[];
    while (list.length > (quota[i] as number)) owner[list.pop() as number] = -1;
  }
  let cursor = 0;
  for (let i = 0; i < n; i++) {
    const list = kept[i] as number[];
    while (list.length < (quota[i] as number)) {
      while (owner[cursor] !== -1) cursor++;
      owner[cursor] = i;
      list.push(cursor);
    }
  }
  return kept;
}

function assignHeterogeneous(
  members: readonly AssignorMember[],
  indexer: BucketIndexer,
  refByIndex: (TableBucket | undefined)[],
): number[][] {
  const n = members.length;
  const owner = new Int32Array(indexer.total).fill(-1);
  const subscriptions = members.map((m) => new Set(m.subscribedTableIds));
  const kept = claimCurrent(members, indexer, owner, refByIndex, (i, ref) =>
    (subscriptions[i] as Set<number>).has(ref.tableId),
  );
  const load = new Int32Array(n);
  kept.forEach((list, i) => {
    load[i] = list.length;
  });
  const subscribers = indexer.tables.map((t) =>
    members.flatMap((_, i) => ((subscriptions[i] as Set<number>).has(t.tableId) ? [i] : [])),
  );
  // bucketsOf[slot][i]: buckets of table `slot` held by member i
  const bucketsOf = indexer.tables.map(() => new Map<number, number[]>());
  for (let i = 0; i < n; i++)
    for (const index of kept[i] as number[])
      push(bucketsOf[indexer.slotAt(index)] as Map<number, number[]>, i, index);
  indexer.tables.forEach((table, slot) =>
    fillTable(
      table,
      subscribers[slot] as number[],
      owner,
      load,
      bucketsOf[slot] as Map<number, number[]>,
    ),
  );
  balance(indexer.tables.length, subscribers, load, bucketsOf);
  const perMember: number[][] = members.map(() => []);
  for (const byMember of bucketsOf)
    for (const [i, list] of byMember) (perMember[i] as number[]).push(...list);
  return perMember;
}

/** Step 1 of both paths: each member keeps what it owns and may still own. */
function claimCurrent(
  members: readonly AssignorMember[],
  indexer: BucketIndexer,
  owner: Int32Array,
  refByIndex: (TableBucket | undefined)[],
  mayOwn: (memberIndex: number, ref: TableBucket) => boolean,
): number[][] {
  return members.map((m, i) => {
    const list: number[] = [];
    for (const ref of m.currentTarget) {
      const index = indexer.indexOf(ref);
      if (index >= 0 && owner[index] === -1 && mayOwn(i, ref)) {
        owner[index] = i;
        refByIndex[index] = ref;
        list.push(index);
      }
    }
    return list;
  });
}

/** Gives each free bucket of one table to its least-loaded subscriber. */
function fillTable(
  table: IndexedTable,
  subscribers: number[],
  owner: Int32Array,
  load: Int32Array,
  held: Map<number, number[]>,
): void {
  const heap = new LoadHeap(load);
  for (const i of subscribers) heap.push(i);
  for (let index = table.base; index < table.base + table.count; index++) {
    if (owner[index] !== -1) continue;
    const i = heap.pop();
    owner[index] = i;
    load[i] = (load[i] as number) + 1;
    push(held, i, index);
    heap.push(i);
  }
}

/** Step 3 of the heterogeneous path; the sum of squared loads falls with every move. */
function balance(
  tableCount: number,
  subscribers: number[][],
  load: Int32Array,
  bucketsOf: Map<number, number[]>[],
): void {
  for (let moved = true; moved;) {
    moved = false;
    for (let slot = 0; slot < tableCount; slot++) {
      const subs = subscribers[slot] as number[];
      const held = bucketsOf[slot] as Map<number, number[]>;
      for (;;) {
        let lightest = -1;
        let heaviest = -1;
        for (const i of subs) {
          if (lightest < 0 || (load[i] as number) < (load[lightest] as number)) lightest = i;
          if (
            (held.get(i)?.length ?? 0) > 0 &&
            (heaviest < 0 || (load[i] as number) > (load[heaviest] as number))
          )
            heaviest = i;
        }
        const gap = heaviest < 0 ? 0 : (load[heaviest] as number) - (load[lightest] as number);
        if (gap <= 1) break;
        // Moving up to half the gap at once still lowers the sum of squared loads, with fewer scans.
        const from = held.get(heaviest) as number[];
        const count = Math.min(from.length, gap >> 1);
        for (let k = 0; k < count; k++) push(held, lightest, from.pop() as number);
        load[heaviest] = (load[heaviest] as number) - count;
        load[lightest] = (load[lightest] as number) + count;
        moved = true;
      }
    }
  }
}

/** Binary min-heap of member indices ordered by (load, index); loads change only for popped members. */
class LoadHeap {
  readonly #load: Int32Array;
  readonly #items: number[] = [];

  constructor(load: Int32Array) {
    this.#load = load;
  }

  push(i: number): void {
    const items = this.#items;
    items.push(i);
    let k = items.length - 1;
    while (k > 0) {
      const parent = (k - 1) >> 1;
      if (!this.#less(items[k] as number, items[parent] as number)) break;
      [items[k], items[parent]] = [items[parent] as number, items[k] as number];
      k = parent;
    }
  }

  pop(): number {
    const items = this.#items;
    const top = items[0] as number;
    const last = items.pop() as number;
    if (items.length > 0) {
      items[0] = last;
      for (let k = 0; ;) {
        const l = 2 * k + 1;
        const r = l + 1;
        let m = k;
        if (l < items.length && this.#less(items[l] as number, items[m] as number)) m = l;
        if (r < items.length && this.#less(items[r] as number, items[m] as number)) m = r;
        if (m === k) break;
        [items[k], items[m]] = [items[m] as number, items[k] as number];
        k = m;
      }
    }
    return top;
  }

  #less(a: number, b: number): boolean {
    const la = this.#load[a] as number;
    const lb = this.#load[b] as number;
    return la < lb || (la === lb && a < b);
  }
}

function push(map: Map<number, number[]>, key: number, value: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

function sameTables(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

function allSubscribed(members: readonly AssignorMember[]): number[] {
  const ids = new Set<number>();
  for (const m of members) for (const id of m.subscribedTableIds) ids.add(id);
  return [...ids];
}

function layoutsOf(
  tables: ReadonlyMap<number, TableLayout>,
  tableIds: readonly number[],
): Map<number, TableLayout> {
  const layouts = new Map<number, TableLayout>();
  for (const id of tableIds) {
    const layout = tables.get(id);
    if (layout !== undefined) layouts.set(id, layout);
  }
  return layouts;
}

function toRefs(
  indexer: BucketIndexer,
  indices: number[],
  refByIndex: readonly (TableBucket | undefined)[],
): TableBucket[] {
  indices.sort((a, b) => a - b);
  const refs: TableBucket[] = new Array<TableBucket>(indices.length);
  let slot = 0;
  for (let k = 0; k < indices.length; k++) {
    const index = indices[k] as number;
    while (
      index >=
      (indexer.tables[slot] as IndexedTable).base + (indexer.tables[slot] as IndexedTable).count
    )
      slot++;
    refs[k] = refByIndex[index] ?? indexer.refAt(slot, index);
  }
  return refs;
}
