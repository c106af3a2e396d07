/**
 * The demo scenario behind `offset-store demo` (and `npm start`): a scanner group over a synthetic
 * table, a member killed mid-way, and the proof that nothing was skipped. Steps:
 * 1. Start fresh in `dir`: an empty or missing directory is used as it is; one holding the DEMO marker
 *    (an old demo store, which the demo marks before creating it) is removed; anything else, a user's
 *    store above all, is refused untouched.
 * 2. Open a store with a 200 ms heartbeat interval and register table 1 with `bucketCount` buckets.
 * 3. Start `memberCount` scanners one after the other (cooperative rebalances hand buckets over,
 *    each revocation committing first); wait until the group is Stable with every bucket owned.
 * 4. Once about a third of what is left is consumed, kill one scanner: it stops heartbeating
 *    without leaving. After its session timeout the coordinator removes it and the survivors get its
 *    buckets, fetching its last committed offsets and resuming from there.
 * 5. When every bucket is consumed and committed to its end, the survivors leave.
 * 6. Verify from the ledger: no record skipped; duplicates counted, and each one inside a range the
 *    killed scanner read but had not committed (at-least-once, nothing more).
 * 7. Measure: durable commits/s of 64 concurrent committers, fetch latency; then compact and read
 *    the store's stats.
 * The result is JSON-safe; `onEvent` receives a timeline as it happens.
 */
import * as path from 'node:path';
import { OffsetStore, OffsetStoreError, type CompactionReport } from '../../index.js';
import { MANIFEST_FILE } from '../../admin/index.js';
import { NodeFileSystem } from '../../io/index.js';
import { DirectoryLock } from '../../log/index.js';
import { STORE_OWN_NAMES } from '../../store-backup.js';
import { notADirectory, openFailure } from '../../open-failure.js';
import { ConsumptionLedger, type OffsetRange } from './consumption-ledger.js';
import { measureBurstCommits, measureFetchLatency } from './demo-measurements.js';
import { DemoScanner, type BucketPosition, type ScannerEvent } from './demo-scanner.js';

/** Options of the demo. */
export interface DemoOptions {
  /** Directory of the demo store: empty, missing, or an old demo store (anything else is refused). */
  dir: string;
  /** Scanners in the group (one is killed). */
  memberCount: number;
  /** Buckets of the synthetic table. */
  bucketCount: number;
  /** Records in each bucket. */
  recordsPerBucket: number;
  /** Session timeout of the scanners, in ms. */
  sessionTimeoutMs: number;
  /** Heartbeat interval of the coordinator, in ms. */
  heartbeatIntervalMs: number;
}

/** Defaults of the demo, sized to finish in about 10 s. */
export const DEMO_DEFAULTS: Omit<DemoOptions, 'dir'> = {
  memberCount: 4,
  bucketCount: 12,
  recordsPerBucket: 4000,
  sessionTimeoutMs: 2000,
  heartbeatIntervalMs: 200,
};

/** The demo store's segments: small, so that its few seconds of commits leave compaction a log to clean. */
export const DEMO_SEGMENT_BYTES = 16 * 1024;
const GROUP_ID = 'demo-scanners';
const TABLE_ID = 1;
const CHUNK_RECORDS = 20;
const POLL_INTERVAL_MS = 10;
const COMMIT_INTERVAL_MS = 100;
/** The kill comes once this fraction of what was left when the group became Stable is consumed. */
const KILL_AT_FRACTION = 0.35;
/** How long the coordinator batches joins before computing a target assignment. */
const ASSIGNMENT_INTERVAL_MS = 200;
const WAIT_TIMEOUT_MS = 40_000;

/** A line of the demo's timeline. */
export type DemoEvent =
  | ({ atMs: number } & ScannerEvent)
  | { atMs: number; type: 'stable'; groupEpoch: number; owners: Record<string, number[]> }
  | { atMs: number; type: 'killed'; scanner: string; positions: BucketPosition[] }
  | {
      atMs: number;
      type: 'resumed';
      scanner: string;
      bucketId: number;
      resumeOffset: number;
      killedCommitted: number;
      killedRead: number;
    }
  | { atMs: number; type: 'completed'; groupEpoch: number }
  | { atMs: number; type: 'left' };

/** What the demo found and measured. */
export interface DemoResult {
  /** The demo store's directory. */
  dir: string;
  /** The scanners' group. */
  groupId: string;
  /** The synthetic table. */
  tableId: number;
  /** Its buckets. */
  bucketCount: number;
  /** Records per bucket. */
  recordsPerBucket: number;
  /** Scanners started. */
  memberCount: number;
  /** Their session timeout, in ms. */
  sessionTimeoutMs: number;
  /**
   * The at-least-once check: nothing skipped, every duplicate explained by the killed scanner's
   * uncommitted reads.
   */
  verification: {
    ok: boolean;
    records: number;
    consumedTotal: number;
    skipped: OffsetRange[];
    duplicates: number;
    unexplainedDuplicates: number;
    movedBuckets: number;
    resumedAtLastCommit: number;
    finalOffsetsAtEnd: boolean;
  };
  /**
   * The scanner killed, the buckets it held, and ms from the kill until all of them had resumed with
   * other scanners (null if they never did).
   */
  killed: { scanner: string; bucketIds: number[]; rebalanceMs: number | null };
  /** What the run measured: commits, commit and fetch speed, log size. */
  metrics: {
    runMs: number;
    commits: number;
    commitsPerSecond: number;
    commitErrors: Record<string, number>;
    burstCommitsPerSecond: number;
    burstCommitters: number;
    fetchP50Us: number;
    fetchP99Us: number;
    logBatches: number;
    logBytesBeforeCompaction: number;
    offsetRecordsCommitted: number;
  };
  /** The compaction run at the end. */
  compaction: CompactionReport;
  /** Wall time of the whole demo, in ms. */
  durationMs: number;
}

/** Thrown when the demo's own verification fails (a bug in the store, or a timeout). */
export class DemoFailure extends Error {
  /**
   * A code in the style of the store's error codes, at the head of the message; not in the store's
   * error table.
   */
  readonly code = 'DEMO_VERIFICATION_FAILED';
  /** The message is prefixed with the code; the CLI exits 1. */
  constructor(message: string) {
    super(`DEMO_VERIFICATION_FAILED: ${message}`);
    this.name = 'DemoFailure';
  }
}

/**
 * The file the demo writes into a directory before it creates its store there. Only a directory
 * holding it is ever removed by a later demo run: the demo must not be able to wipe a store it did
 * not create, whatever that store's contents.
 */
export const DEMO_MARKER_FILE = 'DEMO';

/** What the marker holds: a directory is the demo's own only if its DEMO file says exactly this. */
export const DEMO_MARKER_TEXT =
  'This store was created by `offset-store demo`; the next demo run in this directory replaces it.\n';

/** A demo store's directory holds besides its marker the store's own names, and perhaps a leftover manifest write. */
const isDemoStoreName = (name: string): boolean =>
  STORE_OWN_NAMES.has(name) || name === `${MANIFEST_FILE}.tmp`;

/**
 * Makes `dir` ready for a fresh demo store: an empty or missing directory is fine; an old demo store
 * (its DEMO marker a file holding DEMO_MARKER_TEXT, and nothing beside it that a demo store does
 * not hold) is removed under the store's lock (STORE_LOCKED while it is open); anything else is
 * refused with INVALID_CONFIG and left as it is. The whole directory is removed, so an entry merely
 * named DEMO, or a user's file put beside a demo store, must not be taken for the demo's.
 */
export async function prepareDemoDir(dir: string): Promise<void> {
  const fs = new NodeFileSystem();
  const names = await fs.readdir(dir).catch((error: unknown) => {
    throw notADirectory(error, dir) ?? openFailure(error, `cannot read ${dir}`);
  });
  if (names.length === 0) return;
  const refuse = (what: string): never => {
    throw new OffsetStoreError(
      'INVALID_CONFIG',
      `${dir} ${what}: the demo only replaces a store it created itself; pick another --dir`,
    );
  };
  if (!names.includes(DEMO_MARKER_FILE)) {
    refuse(
      names.includes(MANIFEST_FILE)
        ? `holds an offset store the demo did not create (no ${DEMO_MARKER_FILE} marker)`
        : 'is not empty and holds no offset store',
    );
  }
  const marker = await fs
    .readFile(path.join(dir, DEMO_MARKER_FILE))
    .catch((): Buffer | null => null);
  if (marker === null || marker.toString('utf8') !== DEMO_MARKER_TEXT)
    refuse(`holds a ${DEMO_MARKER_FILE} that is not the demo's marker file`);
  const others = names.filter((name) => name !== DEMO_MARKER_FILE && !isDemoStoreName(name));
  if (others.length > 0) {
    const shown = others.slice(0, 3).map((name) => JSON.stringify(name));
    refuse(
      `holds ${shown.join(', ')}${others.length > 3 ? ` and ${others.length - 3} more` : ''} beside a demo store`,
    );
  }
  // The store's own lock says whether it is open (STORE_LOCKED), not the pid in its LOCK file.
  const lock = await DirectoryLock.acquire(fs, dir);
  try {
    await fs.removeTree(dir);
  } finally {
    await lock.release();
  }
}

/** Creates `dir` with the DEMO marker in it, durably, before the store is created there. */
async function markDemoDir(dir: string): Promise<void> {
  const fs = new NodeFileSystem();
  await fs.mkdir(dir);
  const handle = await fs.open(path.join(dir, DEMO_MARKER_FILE), 'w');
  try {
    await handle.writev([Buffer.from(DEMO_MARKER_TEXT)], 0);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await fs.syncDir(dir);
}

/** Runs the demo; see the module header. */
export async function runDemo(
  options: DemoOptions,
  onEvent: (event: DemoEvent) => void = () => {},
): Promise<DemoResult> {
  const dir = path.resolve(options.dir);
  await prepareDemoDir(dir);
  await markDemoDir(dir);
  const startedMs = performance.now();
  const store = await OffsetStore.open({
    dir,
    bucketCount: 8,
    segmentBytesMax: DEMO_SEGMENT_BYTES,
    group: {
      heartbeatIntervalMs: options.heartbeatIntervalMs,
      assignmentIntervalMs: ASSIGNMENT_INTERVAL_MS,
    },
    compaction: { strategy: 'log-cleaner', intervalMs: 3_600_000 },
    onWarning: () => {},
  });
  try {
    return await new DemoRun(store, { ...options, dir }, startedMs, onEvent).run();
  } finally {
    await store.close();
  }
}

/** One run of the scenario: the scanners, the ledger and what happened to the killed scanner's buckets. */
class DemoRun {
  readonly #store: OffsetStore;
  readonly #options: DemoOptions;
  readonly #startedMs: number;
  readonly #onEvent: (event: DemoEvent) => void;
  readonly #ledger: ConsumptionLedger;
  readonly #scanners: DemoScanner[] = [];
  /** Buckets of the killed scanner, by bucket id: who resumed them, and where. */
  readonly #moved = new Map<number, { scanner: string; resumeOffset: number }>();
  #killed: BucketPosition[] | undefined;
  #killedAtMs = 0;
  #allResumedAtMs: number | undefined;

  constructor(
    store: OffsetStore,
    options: DemoOptions,
    startedMs: number,
    onEvent: (event: DemoEvent) => void,
  ) {
    this.#store = store;
    this.#options = options;
    this.#startedMs = startedMs;
    this.#onEvent = onEvent;
    this.#ledger = new ConsumptionLedger(options.bucketCount, options.recordsPerBucket);
  }

  async run(): Promise<DemoResult> {
    const options = this.#options;
    this.#store.setTableLayout(TABLE_ID, { bucketCount: options.bucketCount });
    for (let i = 1; i <= options.memberCount; i++) {
      this.#scanners.push(
        await DemoScanner.start({
          store: this.#store,
          groupId: GROUP_ID,
          name: `scanner-${i}`,
          tableId: TABLE_ID,
          ledger: this.#ledger,
          chunkRecords: CHUNK_RECORDS,
          pollIntervalMs: POLL_INTERVAL_MS,
          commitIntervalMs: COMMIT_INTERVAL_MS,
          sessionTimeoutMs: options.sessionTimeoutMs,
          onEvent: (event) => this.#onScannerEvent(event),
        }),
      );
    }
    await this.#waitStable();
    const totalRecords = options.bucketCount * options.recordsPerBucket;
    const killAt =
      this.#ledger.distinctConsumed +
      (totalRecords - this.#ledger.distinctConsumed) * KILL_AT_FRACTION;
    await this.#waitFor('a third of the records to be consumed', async () =>
      this.#ledger.distinctConsumed >= killAt ? true : undefined,
    );
    // One that holds buckets (with more scanners than buckets, some hold none: killing one of those
    // would show nothing), the second one when it does, as the timeline has always shown.
    const victim =
      [this.#scanners[1], ...this.#scanners].find((s) => s !== undefined && s.bucketCount > 0) ??
      this.#scanners[0]!;
    const killed = await victim.kill();
    this.#killed = killed;
    this.#killedAtMs = this.#at();
    this.#emit({ atMs: this.#killedAtMs, type: 'killed', scanner: victim.name, positions: killed });
    const runMs = await this.#waitCompleted();
    for (const s of this.#scanners) if (s !== victim) await s.leave();
    this.#emit({ atMs: this.#at(), type: 'left' });
    const final = await this.#store.fetchOffsets(GROUP_ID);
    const finalOffsetsAtEnd =
      final.length === options.bucketCount &&
      final.every((o) => o?.offset === options.recordsPerBucket);
    const verification = verify(this.#ledger, killed, this.#moved, finalOffsetsAtEnd);
    return this.#measure(
      verification,
      {
        scanner: victim.name,
        bucketIds: killed.map((p) => p.bucketId),
        rebalanceMs:
          this.#allResumedAtMs === undefined ? null : this.#allResumedAtMs - this.#killedAtMs,
      },
      runMs,
    );
  }

  #at(): number {
    return Math.round(performance.now() - this.#startedMs);
  }

  #emit(event: DemoEvent): void {
    this.#onEvent(event);
  }

  /** Forwards scanner events; after the kill, turns assignments of the killed scanner's buckets into `resumed` events. */
  #onScannerEvent(event: ScannerEvent): void {
    const killed = this.#killed;
    const resumes =
      event.type === 'assigned' &&
      killed !== undefined &&
      event.buckets.every((b) => killed.some((p) => p.bucketId === b.bucketId));
    if (!resumes) this.#emit({ atMs: this.#at(), ...event });
    if (event.type !== 'assigned' || killed === undefined) return;
    for (const b of event.buckets) {
      const victim = killed.find((p) => p.bucketId === b.bucketId);
      if (victim === undefined || this.#moved.has(b.bucketId)) continue;
      this.#moved.set(b.bucketId, { scanner: event.scanner, resumeOffset: b.resumeOffset });
      this.#emit({
        atMs: this.#at(),
        type: 'resumed',
        scanner: event.scanner,
        bucketId: b.bucketId,
        resumeOffset: b.resumeOffset,
        killedCommitted: victim.committed,
        killedRead: victim.next,
      });
      if (this.#moved.size === killed.length) this.#allResumedAtMs = this.#at();
    }
  }

  async #waitStable(): Promise<void> {
    const { memberCount, bucketCount } = this.#options;
    const stable = await this.#waitFor(
      'the group to become Stable with every bucket owned',
      async () => {
        const d = await this.#store.describeGroup(GROUP_ID);
        const owned = d.members.reduce((n, m) => n + m.assignment.length, 0);
        return d.state === 'Stable' && d.members.length === memberCount && owned === bucketCount
          ? d
          : undefined;
      },
    );
    const nameOf = new Map(this.#scanners.map((s) => [s.memberId, s.name]));
    const owners = Object.fromEntries(
      stable.members.map((m) => [
        nameOf.get(m.memberId) ?? m.memberId,
        m.assignment.map((b) => b.bucketId),
      ]),
    );
    this.#emit({ atMs: this.#at(), type: 'stable', groupEpoch: stable.groupEpoch, owners });
  }

  /** Waits until every bucket is committed at its end; returns the consumption time. */
  async #waitCompleted(): Promise<number> {
    const { bucketCount, recordsPerBucket } = this.#options;
    await this.#waitFor('every bucket to be consumed and committed to its end', async () => {
      // And the killed scanner's buckets taken over, even when it had read them to their end
      // before it was killed (few records per bucket): that is what the demo shows.
      if (this.#killed !== undefined && this.#moved.size < this.#killed.length) return undefined;
      const offsets = await this.#store.fetchOffsets(GROUP_ID);
      return offsets.length === bucketCount &&
        offsets.every((o) => o !== null && o.offset === recordsPerBucket)
        ? true
        : undefined;
    });
    const runMs = performance.now() - this.#startedMs;
    this.#emit({
      atMs: this.#at(),
      type: 'completed',
      groupEpoch: (await this.#store.describeGroup(GROUP_ID)).groupEpoch,
    });
    return runMs;
  }

  async #measure(
    verification: DemoResult['verification'],
    killed: DemoResult['killed'],
    runMs: number,
  ): Promise<DemoResult> {
    const o = this.#options;
    const commits = this.#scanners.reduce((n, s) => n + s.commitCount, 0);
    const commitErrors: Record<string, number> = {};
    for (const s of this.#scanners)
      for (const [code, n] of Object.entries(s.commitErrors()))
        commitErrors[code] = (commitErrors[code] ?? 0) + n;
    const burst = await measureBurstCommits(this.#store);
    const fetch = await measureFetchLatency(this.#store, GROUP_ID, {
      tableId: TABLE_ID,
      bucketId: 0,
    });
    const before = await this.#store.stats();
    const compaction = await this.#store.compact();
    return {
      dir: o.dir,
      groupId: GROUP_ID,
      tableId: TABLE_ID,
      bucketCount: o.bucketCount,
      recordsPerBucket: o.recordsPerBucket,
      memberCount: o.memberCount,
      sessionTimeoutMs: o.sessionTimeoutMs,
      verification,
      killed,
      metrics: {
        runMs,
        commits,
        commitsPerSecond: commits / (runMs / 1000),
        commitErrors,
        burstCommitsPerSecond: burst.commitsPerSecond,
        burstCommitters: burst.committers,
        fetchP50Us: fetch.p50Us,
        fetchP99Us: fetch.p99Us,
        logBatches: before.buckets.reduce((n, b) => n + b.nextLogOffset, 0),
        logBytesBeforeCompaction: before.totals.logBytes,
        offsetRecordsCommitted:
          this.#scanners.reduce((n, s) => n + s.committedRecordCount, 0) + burst.offsetRecords,
      },
      compaction,
      durationMs: performance.now() - this.#startedMs,
    };
  }

  async #waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
    const deadline = performance.now() + WAIT_TIMEOUT_MS;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (performance.now() > deadline)
        throw new DemoFailure(
          `timed out after ${WAIT_TIMEOUT_MS} ms waiting for ${what}; ${await this.#diagnose()}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** What a timeout message should say: the group, the progress, and each scanner's commits and positions. */
  async #diagnose(): Promise<string> {
    const group = await this.#store.describeGroup(GROUP_ID).catch((error: Error) => error.message);
    const state =
      typeof group === 'string'
        ? group
        : `group ${group.state} at epoch ${group.groupEpoch} with ${group.members.length} members, ${group.offsets.length} committed buckets`;
    const each = this.#scanners.map(
      (s) =>
        `${s.name}: ${s.commitCount} commits, refused ${JSON.stringify(s.commitErrors())}, positions ${JSON.stringify(s.positions())}`,
    );
    return [
      state,
      `${this.#ledger.distinctConsumed} of ${this.#options.bucketCount * this.#options.recordsPerBucket} records consumed`,
      ...each,
    ].join('; ');
  }
}

/**
 * The at-least-once verdict: nothing skipped, every moved bucket resumed at the killed scanner's last
 * commit, every committed offset at its bucket's end.
 */
function verify(
  ledger: ConsumptionLedger,
  killed: BucketPosition[],
  moved: Map<number, { resumeOffset: number }>,
  finalOffsetsAtEnd: boolean,
): DemoResult['verification'] {
  const skipped = ledger.skipped();
  const explained: OffsetRange[] = killed.map((p) => ({
    bucketId: p.bucketId,
    from: p.committed,
    to: p.next,
  }));
  const resumedAtLastCommit = killed.filter(
    (p) => moved.get(p.bucketId)?.resumeOffset === p.committed,
  ).length;
  return {
    ok: skipped.length === 0 && resumedAtLastCommit === killed.length && finalOffsetsAtEnd,
    records: ledger.bucketCount * ledger.recordsPerBucket,
    consumedTotal: ledger.consumedTotal,
    skipped,
    duplicates: ledger.duplicateCount(),
    unexplainedDuplicates: ledger.unexplainedDuplicates(explained),
    movedBuckets: killed.length,
    resumedAtLastCommit,
    finalOffsetsAtEnd,
  };
}
