/**
 * Target assignment: runs the group's assignor over the members as they will be after a membership
 * change, checks the result, and turns the difference from the current target into records.
 *
 * Planning is pure (nothing is emitted until the plan is complete and checked), so a handler that
 * throws while planning leaves the group untouched. The group's assignor is the one most members
 * prefer (ties broken by name), else the coordinator's default — Kafka's rule.
 *
 * Layouts: a table's layout is the one registered with the coordinator, or — when none is registered
 * yet, e.g. right after a restart — the one the group's last target was computed against, so a
 * missing layout never looks like a table with no buckets.
 */
import { assert } from '../util/index.js';
import { checkAssignment, type Assignor, type AssignorMember } from './assignor.js';
import { BucketSet } from './bucket-set.js';
import type { MemberSubscription } from './consumer-member.js';
import type { Group } from './group.js';
import type { GroupRecord } from './group-record.js';
import { layoutsEqual, type TableLayout } from './table-layout.js';

/** What the planner needs from the coordinator. */
export interface AssignmentEnvironment {
  /** Registered layouts; a table without one falls back to the layout the group's last target used. */
  readonly layouts: ReadonlyMap<number, TableLayout>;
  /** Registered assignors by name. */
  readonly assignors: ReadonlyMap<string, Assignor>;
  /** Assignor used when no member states a preference. */
  readonly defaultAssignor: string;
}

/** A membership change to plan for; all fields optional. */
export interface MembershipChange {
  /** A member to add or whose subscription changes. */
  readonly upsert?: MemberSubscription;
  /** A member to remove. */
  readonly remove?: string;
  /** A static member replaced by `upsert`: the new member starts from the old one's target. */
  readonly inheritFrom?: string;
}

/** A checked target assignment, ready to become records. */
export interface TargetPlan {
  /** The assignor that computed it. */
  readonly assignorName: string;
  /** Every member's new target (empty for members that got nothing), checked. */
  readonly targets: ReadonlyMap<string, BucketSet>;
  /** The layouts it was computed against. */
  readonly tableLayouts: ReadonlyMap<number, TableLayout>;
}

/** Computes the target assignment of `group` (undefined = a group about to be created) after `change`. */
export function planTargetAssignment(
  group: Group | undefined,
  change: MembershipChange,
  env: AssignmentEnvironment,
): TargetPlan {
  const members: AssignorMember[] = [];
  const preferences: (string | null)[] = [];
  const skip = new Set([change.remove, change.inheritFrom, change.upsert?.memberId]);
  for (const m of group?.members.values() ?? []) {
    if (skip.has(m.memberId)) continue;
    members.push({
      memberId: m.memberId,
      instanceId: m.instanceId,
      subscribedTableIds: m.subscribedTableIds,
      currentTarget: group?.targetOf(m.memberId) ?? BucketSet.EMPTY,
    });
    preferences.push(m.assignor);
  }
  if (change.upsert !== undefined) {
    const { memberId, instanceId, subscribedTableIds, assignor } = change.upsert;
    const currentTarget = group?.targetOf(change.inheritFrom ?? memberId) ?? BucketSet.EMPTY;
    members.push({ memberId, instanceId, subscribedTableIds, currentTarget });
    preferences.push(assignor);
  }
  members.sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
  const tableLayouts = new Map<number, TableLayout>();
  for (const m of members) {
    for (const tableId of m.subscribedTableIds) {
      const layout = env.layouts.get(tableId) ?? group?.tableLayouts.get(tableId);
      if (layout !== undefined) tableLayouts.set(tableId, layout);
    }
  }
  const assignorName = preferredAssignor(preferences) ?? env.defaultAssignor;
  const assignor = env.assignors.get(assignorName);
  assert(assignor !== undefined, `assignor ${assignorName} is not registered`);
  const input = { members, tables: tableLayouts };
  const targets = checkAssignment(assignorName, input, assignor.assign(input));
  for (const m of members) if (!targets.has(m.memberId)) targets.set(m.memberId, BucketSet.EMPTY);
  return { assignorName, targets, tableLayouts };
}

/** Records that move the group's target to `plan` at `assignmentEpoch` (changed members only). */
export function targetRecords(
  group: Group | undefined,
  groupId: string,
  assignmentEpoch: number,
  plan: TargetPlan,
): GroupRecord[] {
  const records: GroupRecord[] = [];
  for (const [memberId, buckets] of plan.targets) {
    const current = group?.targetOf(memberId) ?? BucketSet.EMPTY;
    if (!current.equals(buckets)) {
      records.push({ type: 'target-member', groupId, memberId, buckets });
    }
  }
  records.push({ type: 'target-epoch', groupId, assignmentEpoch, tableLayouts: plan.tableLayouts });
  return records;
}

/** The assignor most members prefer (ties: smallest name), or null when none states a preference. */
export function preferredAssignor(preferences: Iterable<string | null>): string | null {
  const counts = new Map<string, number>();
  for (const name of preferences) if (name !== null) counts.set(name, (counts.get(name) ?? 0) + 1);
  let best: string | null = null;
  let bestCount = 0;
  for (const [name, count] of counts) {
    if (count > bestCount || (count === bestCount && best !== null && name < best)) {
      best = name;
      bestCount = count;
    }
  }
  return best;
}

/** True when a registered layout of a table the group subscribes to differs from the one its target used. */
export function layoutsChanged(group: Group, layouts: ReadonlyMap<number, TableLayout>): boolean {
  for (const tableId of group.subscribedTableIds()) {
    const registered = layouts.get(tableId);
    if (registered !== undefined && !layoutsEqual(registered, group.tableLayouts.get(tableId)))
      return true;
  }
  return false;
}
