/**
 * Settling a group of real GroupMembers on a manual clock, the prelude of tests that run members
 * over a store or a coordinator. GroupMembers heartbeat on their own timers, so the clock moves in
 * small steps, with a yield to the event loop after each (heartbeats, snapshot writes and callbacks
 * run there), until the group is Stable and every member holds exactly the buckets the coordinator
 * assigned it. Then it asserts that, or fails saying how far the group got.
 */
import { expect } from 'vitest';
import type { GroupMember, ManualClock, TableBucket } from '../../src/index.js';

/** What settling reads of a group: the store's describeGroup and the coordinator's describe both fit. */
export interface GroupView {
  state: string;
  members: ReadonlyArray<{ memberId: string; assignment: readonly TableBucket[] }>;
}

/** How to drive and observe the group. */
export interface SettleGroupOptions {
  clock: ManualClock;
  /** Describes the members' group. */
  describe(groupId: string): GroupView | null | Promise<GroupView | null>;
  /** Clock time per step; default 100 ms. */
  stepMs?: number;
  /** Clock time after which settling fails; default 30 s. */
  timeMsMax?: number;
}

const keysOf = (refs: readonly TableBucket[]): string[] =>
  refs.map((r) => `${r.tableId}/${r.partitionId}/${r.bucketId}`).sort();

function assignedTo(view: GroupView | null, member: GroupMember): string[] | undefined {
  const described = view?.members.find((m) => m.memberId === member.memberId);
  return described === undefined ? undefined : keysOf(described.assignment);
}

function isSettled(view: GroupView | null, members: readonly GroupMember[]): boolean {
  return (
    view?.state === 'Stable' &&
    members.every(
      (m) => JSON.stringify(assignedTo(view, m)) === JSON.stringify(keysOf(m.assignment)),
    )
  );
}

/**
 * Advances `clock` until the group of `members` (all of one group) is Stable and each member holds
 * exactly its assignment; asserts it got there within `timeMsMax` of clock time.
 */
export async function settleGroup(
  members: readonly GroupMember[],
  options: SettleGroupOptions,
): Promise<void> {
  const { clock, describe, stepMs = 100, timeMsMax = 30_000 } = options;
  const groupId = members[0]?.groupId;
  if (groupId === undefined || members.some((m) => m.groupId !== groupId))
    throw new TypeError('settleGroup() needs members of one group');
  let view = await describe(groupId);
  for (let spentMs = 0; spentMs < timeMsMax && !isSettled(view, members); spentMs += stepMs) {
    clock.advance(stepMs);
    await new Promise((resolve) => setTimeout(resolve, 2));
    view = await describe(groupId);
  }
  expect(view?.state, `group ${groupId} after up to ${timeMsMax} ms`).toBe('Stable');
  for (const m of members)
    expect(assignedTo(view, m), `member ${m.memberId} holds its assignment`).toEqual(
      keysOf(m.assignment),
    );
}
