/**
 * StoreAdmin: the admin facade over an open OffsetStore, for operators and tools (the CLI is one).
 * It uses only the public API, and every result is plain JSON-safe data with a fixed shape (no
 * undefined fields, null where a value is absent), so `JSON.stringify` of a result is a stable
 * machine-readable output.
 *
 * Opening goes through `readStoreLayout` first: an admin tool never creates a store by accident in a
 * mistyped directory (INVALID_CONFIG instead). Unless compaction is asked for, the store is opened
 * without background compaction, so a short admin command does no work it was not asked to do.
 */
import { NodeFileSystem, type FileSystem } from '../io/index.js';
import { OffsetStore } from '../store.js';
import type {
  CommittedOffset,
  GroupDescription,
  GroupListing,
  GroupState,
  GroupType,
  OffsetCommit,
} from '../store-options.js';
import type { CompactionReport, CompactionStrategy } from '../compaction/index.js';
import type {
  ClassicGroupDescription,
  MemberDescription,
  RemoveMembersRequest,
  RemovedMember,
} from '../group/index.js';
import { OffsetStoreError, isOffsetStoreError } from '../errors/index.js';
import {
  describeSelection,
  selectionMatches,
  validateSelection,
  type BucketOffset,
  type BucketSelection,
} from './bucket-spec.js';
import { compareBucketRefs, bucketKey, type TableBucket } from '../model/index.js';
import {
  describeResetTarget,
  planResetRows,
  type ResetPlanRow,
  type ResetRequest,
} from './reset-plan.js';
import { readStoreLayout, type StoreLayout } from './store-directory.js';
import { TIMER_MS_MAX } from '../util/index.js';

/** Options of `StoreAdmin.open`. */
export interface StoreAdminOptions {
  /** The file-system port (default: the real one); the store and every tool read and write through it. */
  fs?: FileSystem;
  /** Compaction worker threads; default 1. */
  compactionWorkers?: number;
  /** Receives the store's warnings (an ignored checkpoint, a failed background job). */
  onWarning?: (message: string) => void;
  /**
   * Open the store to read only (see OffsetStoreOptions.readOnly): no lock, nothing written, also
   * while another process has it open; the write operations are refused with STORE_READ_ONLY.
   */
  readOnly?: boolean;
  /**
   * Open even when an offsets-bucket's files are damaged (its recovery failed with CORRUPT_MESSAGE):
   * the store serves its other buckets, a call on a group of the damaged one rejects with that
   * bucket's error, `stats` shows it `failed`, and `recoveryFailure` holds the first failure. Any
   * other failure (EMFILE, EIO: the process or the disk, not one bucket's files) still fails the
   * open. Default false: the open rejects with any. Not with `readOnly`.
   */
  serveHealthyBuckets?: boolean;
}

/** One member of a group, as described. */
export interface MemberReport {
  /** The member's id. */
  memberId: string;
  /** Its static instance id, null for a dynamic member. */
  instanceId: string | null;
  /** Its member epoch (-2 for a static member away). */
  memberEpoch: number;
  /** Its reconciliation state (STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS). */
  state: string;
  /** The tables it subscribes to, sorted. */
  subscribedTableIds: number[];
  /** The buckets it may own now, sorted. */
  assignment: TableBucket[];
  /** Buckets it was asked to release and still owns. */
  pendingRevocation: TableBucket[];
  /** The buckets it will own once reconciled. */
  targetAssignment: TableBucket[];
  /** Its session timeout, in ms. */
  sessionTimeoutMs: number;
  /** Its rebalance timeout, in ms. */
  rebalanceTimeoutMs: number;
}

/** One bucket of a described group: committed, assigned, or both. */
export interface BucketReport extends TableBucket {
  /** The committed offset, null when the bucket is only assigned. */
  committedOffset: number | null;
  /** The committed leader epoch, null without a commit. */
  leaderEpoch: number | null;
  /** The committed metadata, null without a commit. */
  metadata: string | null;
  /** When it was committed (ms since the epoch), null without a commit. */
  commitTimestampMs: number | null;
  /** Member that owns the bucket now, if any. */
  memberId: string | null;
  /** From the caller's log-end offsets, when given for this bucket. */
  logEndOffset: number | null;
  /** logEndOffset - committedOffset (a bucket with no commit counts from offset 0); null without a log-end offset or for a negative committed offset (a sentinel such as -1 latest, -2 earliest). */
  lag: number | null;
}

/** One member of a classic group, as described (bytes as their sizes: the report is JSON). */
export interface ClassicMemberReport {
  /** The member's id. */
  memberId: string;
  /** Its static instance id, null for a dynamic member. */
  groupInstanceId: string | null;
  /** The client id it joined with. */
  clientId: string;
  /** The client host it joined from. */
  clientHost: string;
  /** The protocols it offers, in its order of preference. */
  protocols: string[];
  /** Bytes of its metadata for the group's protocol. */
  metadataBytes: number;
  /** Bytes of its assignment. */
  assignmentBytes: number;
  /** Its session timeout, in ms. */
  sessionTimeoutMs: number;
  /** Its rebalance timeout, in ms. */
  rebalanceTimeoutMs: number;
}

/** What a classic group adds to its report. */
export interface ClassicGroupReport {
  /** Its generation. */
  generationId: number;
  /** The generation's protocol, null while there is none. */
  protocolName: string | null;
  /** The leader's member id, null without members. */
  leaderId: string | null;
  /** Its members, sorted by id. */
  members: ClassicMemberReport[];
}

/** What `describeGroup` returns. */
export interface GroupReport {
  /** The group. */
  groupId: string;
  /** The offsets-bucket it lives in. */
  offsetsBucket: number;
  /** Its state. */
  state: GroupState;
  /** 'consumer' (consumer protocol) or 'classic' (JoinGroup/SyncGroup, or offsets only). */
  groupType: GroupType;
  /** 'consumer', a classic group's protocol type, or '' for offsets only. */
  protocolType: string;
  /** A classic group's generation, protocol, leader and members; null otherwise. */
  classic: ClassicGroupReport | null;
  /** Its group epoch (0 for a group that never had members). */
  groupEpoch: number;
  /** The epoch of its current target assignment. */
  assignmentEpoch: number;
  /** The assignor its next target uses, null without members. */
  assignor: string | null;
  /** A consumer group's members, sorted by id (a classic group's are in `classic`). */
  members: MemberReport[];
  /** Every bucket committed or assigned, sorted, with its owner and lag. */
  buckets: BucketReport[];
  /** Sum of the known lags, null when no log-end offset was given. */
  totalLag: number | null;
}

/** A reset plan, before or after it was executed. */
export interface ResetPlan {
  /** The group reset. */
  groupId: string;
  /** e.g. `to offset 0`, `shift by -10`, `from plan.json`. */
  target: string;
  /** e.g. `every bucket`, `table 1 bucket 3`. */
  selection: string;
  /** Members the group has now: executing needs 0 (NON_EMPTY_GROUP otherwise). */
  memberCount: number;
  /** False for a dry run; true once the offsets were committed. */
  executed: boolean;
  /** One row per bucket; after execution, `newOffset` is what was read back. */
  rows: ResetPlanRow[];
}

/** What `deleteOffsets` did. */
export interface DeleteOffsetsResult {
  /** The group. */
  groupId: string;
  /** The selection, described (e.g. `table 1 bucket 3`). */
  selection: string;
  /** The buckets whose offsets were deleted, sorted. */
  deleted: TableBucket[];
}

/** What `removeMembers` did. */
export interface RemoveMembersResult {
  /** The group. */
  groupId: string;
  /** The removed members, sorted by id (a static member's instance id is released). */
  removed: RemovedMember[];
  /** The group's state afterwards: Empty once no member is left. */
  state: GroupState;
  /** Members left in the group. */
  memberCount: number;
}

/** What `deleteGroup` did. */
export interface DeleteGroupResult {
  /** The group deleted. */
  groupId: string;
  /** Committed offsets it had. */
  offsetsDeleted: number;
}

/** Per offsets-bucket figures of `stats`. */
export interface BucketStatsReport {
  /** The offsets-bucket. */
  bucket: number;
  /** 'loading', 'ready' or 'failed' (figures are 0 unless ready). */
  state: 'loading' | 'ready' | 'stopped' | 'failed' | 'not-owned';
  /** Bytes of its log. */
  logBytes: number;
  /** Segments of its log. */
  segmentCount: number;
  /** The log offset its next batch gets. */
  nextLogOffset: number;
  /** Committed offsets in memory. */
  liveOffsets: number;
  /** Groups with committed offsets. */
  groups: number;
  /** Its newest checkpoint, null without one. */
  lastCheckpoint: { logOffset: number; liveOffsets: number; createdAtMs: number } | null;
}

/** What `stats` returns. */
export interface StatsReport {
  /** The store directory, absolute. */
  dir: string;
  /** Offsets-buckets. */
  bucketCount: number;
  /** When the store was created, ms since the epoch. */
  createdAtMs: number;
  /** Sums over the offsets-buckets. */
  totals: { logBytes: number; segmentCount: number; liveOffsets: number; groups: number };
  /** One entry per offsets-bucket, in bucket order. */
  buckets: BucketStatsReport[];
}

/** The admin facade; see the module header. */
export class StoreAdmin {
  /** The open store, for callers that need more than the facade offers. */
  readonly store: OffsetStore;
  readonly #layout: StoreLayout;
  /** With `serveHealthyBuckets`: the first offsets-bucket's failure to recover, if one failed. */
  readonly recoveryFailure: Error | undefined;

  private constructor(store: OffsetStore, layout: StoreLayout, recoveryFailure?: Error) {
    this.store = store;
    this.#layout = layout;
    this.recoveryFailure = recoveryFailure;
  }

  /**
   * Opens the existing store in `dir` (INVALID_CONFIG when there is none; STORE_LOCKED when it is
   * open elsewhere, unless `readOnly`).
   */
  static async open(dir: string, options: StoreAdminOptions = {}): Promise<StoreAdmin> {
    const fs = options.fs ?? new NodeFileSystem();
    const layout = await readStoreLayout(fs, dir);
    const partial = options.serveHealthyBuckets === true && options.readOnly !== true;
    const store = await OffsetStore.open({
      dir: layout.dir,
      fs,
      compaction: { background: false, workers: options.compactionWorkers ?? 1 },
      // No retention pass while a tool has the store: it would expire offsets by the default
      // retention, not by the one the store's own service opens it with (not kept in the store).
      offsetsRetentionCheckIntervalMs: TIMER_MS_MAX,
      ...(options.onWarning === undefined ? {} : { onWarning: options.onWarning }),
      ...(options.readOnly === true ? { readOnly: true } : {}),
      ...(partial ? { awaitRecovery: false } : {}),
    });
    let failure: Error | undefined;
    if (partial) {
      try {
        await store.ready();
      } catch (error) {
        if (!isOffsetStoreError(error, 'CORRUPT_MESSAGE')) {
          await store.close().catch(() => {});
          throw error;
        }
        failure = error;
      }
    }
    return new StoreAdmin(store, layout, failure);
  }

  /** Every group with committed offsets or members, by group id. */
  async listGroups(): Promise<GroupListing[]> {
    return (await this.store.listGroups()).map((g) => ({
      groupId: g.groupId,
      state: g.state,
      offsetsBucket: g.offsetsBucket,
      groupType: g.groupType,
      protocolType: g.protocolType,
    }));
  }

  /**
   * A group's state, members and buckets (committed and/or assigned), with lag where `logEndOffsets`
   * gives the bucket's log end. GROUP_ID_NOT_FOUND for an unknown group.
   */
  async describeGroup(
    groupId: string,
    logEndOffsets: readonly BucketOffset[] = [],
  ): Promise<GroupReport> {
    const description = await this.store.describeGroup(groupId);
    const logEnds = new Map(logEndOffsets.map((o) => [bucketKey(o), o.offset]));
    const owners = new Map<string, string>();
    for (const member of description.members)
      for (const b of member.assignment) owners.set(bucketKey(b), member.memberId);
    const rows = new Map<string, BucketReport>();
    for (const committed of description.offsets)
      rows.set(bucketKey(committed), bucketReport(committed, committed));
    for (const member of description.members) {
      for (const b of member.assignment)
        if (!rows.has(bucketKey(b))) rows.set(bucketKey(b), bucketReport(b, null));
    }
    let totalLag: number | null = null;
    for (const [key, row] of rows) {
      row.memberId = owners.get(key) ?? null;
      const logEnd = logEnds.get(key);
      if (logEnd === undefined) continue;
      row.logEndOffset = logEnd;
      // A negative committed offset is a sentinel (-1 latest, -2 earliest), not a position: no lag.
      if (row.committedOffset !== null && row.committedOffset < 0) continue;
      row.lag = logEnd - (row.committedOffset ?? 0);
      totalLag = (totalLag ?? 0) + row.lag;
    }
    return {
      groupId: description.groupId,
      offsetsBucket: description.offsetsBucket,
      state: description.state,
      groupType: description.groupType,
      protocolType: description.protocolType,
      classic: classicReport(description.classic),
      groupEpoch: description.groupEpoch,
      assignmentEpoch: description.assignmentEpoch,
      assignor: description.assignor,
      members: description.members.map(memberReport),
      buckets: [...rows.values()].sort(compareBucketRefs),
      totalLag,
    };
  }

  /**
   * Computes a reset plan without writing anything (a dry run). A group that does not exist gets a
   * plan only when the request names its buckets (to-offset of one bucket, or a file): that seeds
   * the offsets of a group before its first scanner starts.
   */
  async planReset(groupId: string, request: ResetRequest): Promise<ResetPlan> {
    const { committed, memberCount, exists } = await this.#groupOffsets(groupId);
    const rows = planResetRows(committed, request);
    if (!exists && rows.length === 0)
      throw new OffsetStoreError(
        'GROUP_ID_NOT_FOUND',
        `group ${groupId} has no committed offsets and no members`,
      );
    return {
      groupId,
      target: describeResetTarget(request.target),
      selection: describeSelection(request.selection ?? {}),
      memberCount,
      executed: false,
      rows,
    };
  }

  /**
   * Plans and executes a reset in one atomic commit; the rows report the offsets read back after it.
   * NON_EMPTY_GROUP when the group has members.
   */
  async executeReset(groupId: string, request: ResetRequest): Promise<ResetPlan> {
    const plan = await this.planReset(groupId, request);
    if (plan.rows.length === 0) return { ...plan, executed: true };
    const current = new Map(
      (await this.store.fetchOffsets(groupId))
        .filter((c) => c !== null)
        .map((c) => [bucketKey(c), c]),
    );
    const commits: OffsetCommit[] = plan.rows.map((r) => ({
      tableId: r.tableId,
      partitionId: r.partitionId,
      bucketId: r.bucketId,
      offset: r.newOffset,
      leaderEpoch: -1,
      metadata: current.get(bucketKey(r))?.metadata ?? '',
    }));
    await this.store.resetOffsets(groupId, commits);
    const after = await this.store.fetchOffsets(groupId, plan.rows);
    return {
      ...plan,
      executed: true,
      rows: plan.rows.map((r, i) => ({ ...r, newOffset: after[i]?.offset ?? r.newOffset })),
    };
  }

  /**
   * Deletes the committed offsets the selection matches (an empty selection matches every bucket).
   * GROUP_SUBSCRIBED_TO_BUCKET if one of them is assigned to a member; GROUP_ID_NOT_FOUND for an
   * unknown group.
   */
  async deleteOffsets(groupId: string, selection: BucketSelection): Promise<DeleteOffsetsResult> {
    validateSelection(selection);
    const { committed, exists } = await this.#groupOffsets(groupId);
    if (!exists)
      throw new OffsetStoreError(
        'GROUP_ID_NOT_FOUND',
        `group ${groupId} has no committed offsets and no members`,
      );
    const doomed = committed
      .filter((c) => selectionMatches(selection, c))
      .map(({ tableId, partitionId, bucketId }) => ({ tableId, partitionId, bucketId }));
    if (doomed.length > 0) await this.store.deleteOffsets(groupId, doomed);
    return {
      groupId,
      selection: describeSelection(selection),
      deleted: doomed.sort(compareBucketRefs),
    };
  }

  /**
   * Removes members from a group (Kafka's `removeMembersFromConsumerGroup`): every member, or those
   * named by member id or static instance id, such as the members a process left behind when it
   * exited without leaving. GROUP_ID_NOT_FOUND for an unknown group; UNKNOWN_MEMBER_ID, with nothing
   * removed, for an id not in the group.
   */
  async removeMembers(
    groupId: string,
    request: RemoveMembersRequest,
  ): Promise<RemoveMembersResult> {
    const removed = await this.store.removeMembers(groupId, request);
    const after = await this.store.describeGroup(groupId);
    return {
      groupId,
      removed: removed.map((m) => ({ memberId: m.memberId, instanceId: m.instanceId })),
      state: after.state,
      memberCount: memberCountOf(after),
    };
  }

  /** Deletes a group without members and all its offsets (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND). */
  async deleteGroup(groupId: string): Promise<DeleteGroupResult> {
    const offsets = await this.store.fetchOffsets(groupId);
    await this.store.deleteGroup(groupId);
    return { groupId, offsetsDeleted: offsets.length };
  }

  /**
   * Compacts every offsets-bucket now with the strategy the admin was opened with; `onProgress` hears
   * of each bucket as it finishes (buckets finished, buckets in all).
   */
  async compact(onProgress?: (finished: number, total: number) => void): Promise<CompactionReport> {
    const report = await this.store.compact(
      onProgress === undefined
        ? undefined
        : { onBucketCompacted: (_bucket, finished, total) => onProgress(finished, total) },
    );
    return {
      strategy: report.strategy,
      buckets: report.buckets.map((b) => JSON.parse(JSON.stringify(b)) as typeof b),
      bytesBefore: report.bytesBefore,
      bytesAfter: report.bytesAfter,
      recordsDropped: report.recordsDropped,
      bytesWritten: report.bytesWritten,
      durationMs: report.durationMs,
    };
  }

  /** Per offsets-bucket figures: log bytes, segments, live offsets, groups, last checkpoint. */
  async stats(): Promise<StatsReport> {
    const stats = await this.store.stats();
    return {
      dir: stats.dir,
      bucketCount: stats.bucketCount,
      createdAtMs: this.#layout.manifest.createdAtMs,
      totals: { ...stats.totals },
      buckets: stats.buckets.map((b) => ({
        bucket: b.bucket,
        state: b.state,
        logBytes: b.logBytes,
        segmentCount: b.segmentCount,
        nextLogOffset: b.nextLogOffset,
        liveOffsets: b.liveOffsets,
        groups: b.groups,
        lastCheckpoint:
          b.checkpoint === undefined
            ? null
            : {
                logOffset: b.checkpoint.logOffset,
                liveOffsets: b.checkpoint.liveOffsets,
                createdAtMs: b.checkpoint.createdAtMs,
              },
      })),
    };
  }

  /** Closes the store (flushes, releases the lock). */
  close(): Promise<void> {
    return this.store.close();
  }

  async #groupOffsets(
    groupId: string,
  ): Promise<{ committed: CommittedOffset[]; memberCount: number; exists: boolean }> {
    try {
      const description = await this.store.describeGroup(groupId);
      return {
        committed: description.offsets,
        memberCount: memberCountOf(description),
        exists: true,
      };
    } catch (error) {
      if (error instanceof OffsetStoreError && error.code === 'GROUP_ID_NOT_FOUND')
        return { committed: [], memberCount: 0, exists: false };
      throw error;
    }
  }
}

function tableBucket(b: {
  tableId: number;
  partitionId?: number | null;
  bucketId: number;
}): TableBucket {
  return { tableId: b.tableId, partitionId: b.partitionId ?? null, bucketId: b.bucketId };
}

function bucketReport(
  bucket: TableBucket | { tableId: number; partitionId?: number | null; bucketId: number },
  committed: CommittedOffset | null,
): BucketReport {
  return {
    ...tableBucket(bucket),
    committedOffset: committed?.offset ?? null,
    leaderEpoch: committed?.leaderEpoch ?? null,
    metadata: committed?.metadata ?? null,
    commitTimestampMs: committed?.commitTimestampMs ?? null,
    memberId: null,
    logEndOffset: null,
    lag: null,
  };
}

/** Members of a group of either type. */
function memberCountOf(description: GroupDescription): number {
  return description.members.length + (description.classic?.members.length ?? 0);
}

function classicReport(classic: ClassicGroupDescription | null): ClassicGroupReport | null {
  if (classic === null) return null;
  return {
    generationId: classic.generationId,
    protocolName: classic.protocolName,
    leaderId: classic.leaderId,
    members: classic.members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      protocols: [...m.protocols],
      metadataBytes: m.metadata.length,
      assignmentBytes: m.assignment.length,
      sessionTimeoutMs: m.sessionTimeoutMs,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
    })),
  };
}

function memberReport(m: MemberDescription): MemberReport {
  return {
    memberId: m.memberId,
    instanceId: m.instanceId,
    memberEpoch: m.memberEpoch,
    state: String(m.state),
    subscribedTableIds: [...m.subscribedTableIds],
    assignment: m.assignment.map(tableBucket).sort(compareBucketRefs),
    pendingRevocation: m.pendingRevocation.map(tableBucket).sort(compareBucketRefs),
    targetAssignment: m.targetAssignment.map(tableBucket).sort(compareBucketRefs),
    sessionTimeoutMs: m.sessionTimeoutMs,
    rebalanceTimeoutMs: m.rebalanceTimeoutMs,
  };
}
