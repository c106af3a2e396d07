/**
 * Per-member reconciliation (KIP-848's CurrentAssignmentBuilder): moves one member's current
 * assignment one safe step towards its target assignment.
 *
 * The safety invariant it keeps: a bucket is added to a member's `assigned` set only when no other
 * member owns it (owns = in `assigned` or `pendingRevocation`). A member gives up a bucket by
 * reporting an `ownedBuckets` list without it; until then the bucket stays in its
 * `pendingRevocation` and is still its own. Hence no bucket ever has two owners.
 *
 * Steps, by state:
 *  - STABLE: if the member epoch differs from the target epoch, or it holds buckets of a table it
 *    no longer subscribes to, compute the next assignment.
 *  - UNREVOKED_PARTITIONS: wait until the reported owned buckets contain none pending revocation;
 *    then compute the next assignment at epoch min(memberEpoch + 1, targetEpoch).
 *  - UNRELEASED_PARTITIONS: compute the next assignment (picks up buckets released meanwhile).
 * Next assignment: assigned' = assigned ∩ target; revoke = assigned − target; if the member still
 * owns something to revoke it waits in UNREVOKED_PARTITIONS at its current epoch. Otherwise it moves
 * to the target epoch, gains every target bucket nobody else owns, and is UNRELEASED_PARTITIONS if
 * some target bucket is still owned by another member, else STABLE.
 */
import type { TableBucket } from '../model/index.js';
import { BucketSet } from './bucket-set.js';
import type { ConsumerMember, MemberAssignment, MemberState } from './consumer-member.js';

/** What reconciliation needs to know besides the member. */
export interface ReconcileInput {
  /** The group's assignment epoch: where the member is heading. */
  readonly targetEpoch: number;
  /** The member's target assignment at that epoch. */
  readonly target: BucketSet;
  /** Current owner (member id) of a bucket, if any. */
  readonly ownerOf: (ref: TableBucket) => string | undefined;
  /** Buckets the member reported owning in this heartbeat, or null when it did not report. */
  readonly owned: BucketSet | null;
  /**
   * True when `target` is the member's target without the tables it no longer subscribes to (its
   * new target is not computed yet: assignment pacing). A STABLE member then gives those up at once.
   */
  readonly narrowed?: boolean;
}

/** Returns the member's next assignment, or `member` itself when nothing can change. */
export function reconcileMember(member: ConsumerMember, input: ReconcileInput): MemberAssignment {
  switch (member.state) {
    case 'STABLE':
      if (member.memberEpoch !== input.targetEpoch)
        return nextAssignment(member, input, member.memberEpoch);
      // As Kafka does: the buckets of a table the member unsubscribed from are revoked at once.
      return input.narrowed === true && !member.assigned.isSubsetOf(input.target)
        ? nextAssignment(member, input, member.memberEpoch)
        : member;
    case 'UNREVOKED_PARTITIONS':
      if (stillOwnsAny(input.owned, member.pendingRevocation)) return member;
      return nextAssignment(member, input, Math.min(member.memberEpoch + 1, input.targetEpoch));
    case 'UNRELEASED_PARTITIONS':
      return nextAssignment(member, input, member.memberEpoch);
  }
}

function nextAssignment(
  member: ConsumerMember,
  input: ReconcileInput,
  memberEpoch: number,
): MemberAssignment {
  const kept = member.assigned.intersect(input.target);
  const toRevoke = member.assigned.difference(kept);
  if (toRevoke.size > 0 && stillOwnsAny(input.owned, toRevoke)) {
    return changed(member, memberEpoch, 'UNREVOKED_PARTITIONS', kept, toRevoke);
  }
  const free: TableBucket[] = [];
  let unreleased = false;
  for (const ref of input.target) {
    if (kept.has(ref)) continue;
    const owner = input.ownerOf(ref);
    // A bucket this member itself still holds as pending revocation may be taken straight back.
    if (owner === undefined || owner === member.memberId) free.push(ref);
    else unreleased = true;
  }
  // Fully reconciled, the assigned set is the target set itself: share it instead of building a copy.
  const assigned =
    free.length === 0
      ? kept
      : kept.size + free.length === input.target.size
        ? input.target
        : BucketSet.of([...kept, ...free]);
  return changed(
    member,
    input.targetEpoch,
    unreleased ? 'UNRELEASED_PARTITIONS' : 'STABLE',
    assigned,
    BucketSet.EMPTY,
  );
}

function changed(
  member: ConsumerMember,
  memberEpoch: number,
  state: MemberState,
  assigned: BucketSet,
  pendingRevocation: BucketSet,
): MemberAssignment {
  if (
    memberEpoch === member.memberEpoch &&
    state === member.state &&
    assigned.equals(member.assigned) &&
    pendingRevocation.equals(member.pendingRevocation)
  ) {
    return member;
  }
  return {
    memberEpoch,
    previousMemberEpoch:
      memberEpoch === member.memberEpoch ? member.previousMemberEpoch : member.memberEpoch,
    state,
    assigned,
    pendingRevocation,
  };
}

/** Kafka's rule: a member that did not report its owned buckets is assumed to still own them. */
function stillOwnsAny(owned: BucketSet | null, buckets: BucketSet): boolean {
  return owned === null || owned.intersects(buckets);
}
