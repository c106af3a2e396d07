import { readdirSync } from 'node:fs';
import * as path from 'node:path';
import { OffsetStore, type CompactionStrategy, type OffsetStoreOptions } from '../../src/index.js';
import { seededRandom } from '../support/seeded-random.js';

/** One step of a generated history: a commit (value) or a delete of some buckets of a group. */
export interface HistoryStep {
  groupId: string;
  kind: 'commit' | 'delete';
  buckets: { tableId: number; partitionId: number | null; bucketId: number; offset: number }[];
}

/** A seeded history with heavy overwriting, partitioned and plain tables, and some deletes. */
export function generateHistory(
  seed: number,
  steps: number,
  groups = 6,
  bucketsPerTable = 6,
): HistoryStep[] {
  const random = seededRandom(seed);
  const history: HistoryStep[] = [];
  for (let i = 0; i < steps; i++) {
    const groupId = `group-${Math.floor(random() * groups)}`;
    const count = 1 + Math.floor(random() * 4);
    const chosen = new Map<string, HistoryStep['buckets'][number]>();
    for (let k = 0; k < count; k++) {
      const tableId = Math.floor(random() * 2);
      const partitionId = tableId === 1 ? Math.floor(random() * 2) : null;
      const bucketId = Math.floor(random() * bucketsPerTable);
      chosen.set(`${tableId}:${partitionId}:${bucketId}`, {
        tableId,
        partitionId,
        bucketId,
        offset: i * 10 + k,
      });
    }
    history.push({
      groupId,
      kind: random() < 0.1 ? 'delete' : 'commit',
      buckets: [...chosen.values()],
    });
  }
  return history;
}

/** The committed state a history leads to: groupId -> bucket key -> offset. */
export function modelOf(history: readonly HistoryStep[]): Map<string, Map<string, number>> {
  const model = new Map<string, Map<string, number>>();
  for (const step of history) {
    const group = model.get(step.groupId) ?? new Map<string, number>();
    for (const b of step.buckets) {
      const key = `${b.tableId}:${b.partitionId ?? ''}:${b.bucketId}`;
      if (step.kind === 'commit') group.set(key, b.offset);
      else group.delete(key);
    }
    if (group.size > 0) model.set(step.groupId, group);
    else model.delete(step.groupId);
  }
  return model;
}

/**
 * Applies a history through the public API (commits of one step are one atomic commit), with up to
 * `inFlight` steps called before the oldest has settled, as concurrent callers would: writes to one
 * group take effect in the order they are called, so the result is the history's whatever the
 * interleaving, and the steps share fdatasyncs instead of paying one each. A delete names only the
 * buckets committed when it is called (in the store before this call, or by an earlier step).
 */
export async function applyHistory(
  store: OffsetStore,
  history: readonly HistoryStep[],
  inFlight = 32,
): Promise<void> {
  const keyOf = (groupId: string, b: Omit<HistoryStep['buckets'][number], 'offset'>): string =>
    `${groupId}\0${b.tableId}:${b.partitionId ?? ''}:${b.bucketId}`;
  const committed = new Set<string>();
  for (const groupId of new Set(history.map((step) => step.groupId)))
    for (const o of await store.fetchOffsets(groupId))
      if (o !== null) committed.add(keyOf(groupId, o));
  const pending: Promise<void>[] = [];
  for (const step of history) {
    let call: Promise<void> | undefined;
    if (step.kind === 'commit') {
      for (const b of step.buckets) committed.add(keyOf(step.groupId, b));
      call = store.commitOffsets(step.groupId, step.buckets);
    } else {
      const present = step.buckets.filter((b) => committed.delete(keyOf(step.groupId, b)));
      if (present.length > 0) call = store.deleteOffsets(step.groupId, present);
    }
    if (call === undefined) continue;
    call.catch(() => {}); // awaited below; a failure while later steps are pending is not unhandled
    pending.push(call);
    if (pending.length >= inFlight) await pending.shift();
  }
  await Promise.all(pending);
}

/** The store's whole committed state in the model's shape. */
export async function stateOf(store: OffsetStore): Promise<Map<string, Map<string, number>>> {
  const state = new Map<string, Map<string, number>>();
  for (const { groupId } of await store.listGroups()) {
    const offsets = await store.fetchOffsets(groupId);
    if (offsets.length === 0) continue;
    state.set(
      groupId,
      new Map(
        offsets.map((o) => [`${o!.tableId}:${o!.partitionId ?? ''}:${o!.bucketId}`, o!.offset]),
      ),
    );
  }
  return state;
}

/** Store options for compaction tests: small segments, one worker, background compaction off the clock. */
export function compactionOptions(
  dir: string,
  strategy: CompactionStrategy,
  extra: Partial<OffsetStoreOptions> = {},
): OffsetStoreOptions {
  return {
    dir,
    bucketCount: 2,
    segmentBytesMax: 2048,
    compaction: { strategy, workers: 1, intervalMs: 3_600_000 },
    onWarning: () => {},
    ...extra,
  };
}

/** Files a crash or an aborted compaction must not leave behind once the store reopened. */
export function leftoverFiles(dir: string): string[] {
  const found: string[] = [];
  for (const bucket of readdirSync(path.join(dir, 'buckets'))) {
    for (const name of readdirSync(path.join(dir, 'buckets', bucket))) {
      if (name.endsWith('.cleaned') || name.endsWith('.tmp') || name === 'compaction.swap')
        found.push(path.join(bucket, name));
    }
  }
  return found;
}
