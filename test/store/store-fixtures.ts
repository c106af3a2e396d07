/**
 * Helpers shared by the store, property and crash tests: opening a store on a manual clock, taking
 * a comparable image of everything a user can observe, and waiting for background I/O to finish
 * without sleeping.
 */
import { cpSync } from 'node:fs';
import {
  ManualClock,
  OffsetStore,
  type CommittedOffset,
  type GroupListing,
  type OffsetStoreOptions,
} from '../../src/index.js';
import type { FileHandle, OpenFlags } from '../../src/io/index.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';

/**
 * Opens a store in `dir` on a fresh ManualClock with 4 offsets-buckets, small segments and no
 * background compaction (compaction has its own suite); `overrides` replace any of these.
 */
export function openStore(
  dir: string,
  overrides: Partial<OffsetStoreOptions> = {},
): Promise<OffsetStore> {
  return OffsetStore.open({
    dir,
    bucketCount: 4,
    segmentBytesMax: 1024,
    clock: new ManualClock(),
    compaction: { strategy: 'none' },
    ...overrides,
  });
}

/** Two group ids that live in the same offsets-bucket of `store`, and one that lives elsewhere. */
export function groupsSharingABucket(
  store: OffsetStore,
  prefix = 'group',
): { a: string; b: string; elsewhere: string } {
  const byBucket = new Map<number, string>();
  let elsewhere: string | undefined;
  for (let i = 0; ; i++) {
    const groupId = `${prefix}-${i}`;
    const bucket = store.bucketFor(groupId);
    const first = byBucket.get(bucket);
    if (first === undefined) byBucket.set(bucket, groupId);
    else if (byBucket.size > 1) {
      elsewhere = [...byBucket.entries()].find(([b]) => b !== bucket)![1];
      return { a: first, b: groupId, elsewhere };
    }
  }
}

/** Stable order of committed offsets: by table, partition (null first), bucket. */
export function byBucket(
  a: { tableId: number; partitionId?: number | null; bucketId: number },
  b: { tableId: number; partitionId?: number | null; bucketId: number },
): number {
  return (
    a.tableId - b.tableId ||
    (a.partitionId ?? -1) - (b.partitionId ?? -1) ||
    a.bucketId - b.bucketId
  );
}

/** A key for a bucket reference, with null and omitted partitions alike. */
export function bucketKey(b: {
  tableId: number;
  partitionId?: number | null;
  bucketId: number;
}): string {
  return `${b.tableId}/${b.partitionId ?? 'null'}/${b.bucketId}`;
}

/** Everything a user observes about the committed state of a store. */
export interface StoreImage {
  groups: GroupListing[];
  offsets: Record<string, CommittedOffset[]>;
  liveOffsets: number;
}

/** The observable committed state: listGroups, every group's offsets (sorted) and the live-offset total. */
export async function imageOf(
  store: OffsetStore,
  alsoGroups: readonly string[] = [],
): Promise<StoreImage> {
  const groups = await store.listGroups();
  const offsets: Record<string, CommittedOffset[]> = {};
  for (const groupId of new Set([...groups.map((g) => g.groupId), ...alsoGroups])) {
    const fetched = (await store.fetchOffsets(groupId)) as CommittedOffset[];
    if (fetched.length > 0) offsets[groupId] = [...fetched].sort(byBucket);
  }
  const liveOffsets = (await store.stats()).totals.liveOffsets;
  return { groups, offsets, liveOffsets };
}

/** Copies a store directory (a closed store, or the on-disk image of an open one). */
export function copyStoreDir(from: string, to: string): void {
  cpSync(from, to, { recursive: true });
}

/**
 * The real file system (with FaultyFileSystem's counters and faults) that also knows how many of
 * its operations are in flight, so a test can wait until background work (retention, auto-commit)
 * has finished its I/O.
 */
export class TrackingFileSystem extends FaultyFileSystem {
  inFlight = 0;
  started = 0;

  #track<T>(operation: Promise<T>): Promise<T> {
    this.inFlight++;
    this.started++;
    return operation.finally(() => {
      this.inFlight--;
    });
  }

  override async open(path: string, flags: OpenFlags): Promise<FileHandle> {
    const handle = await this.#track(super.open(path, flags));
    return {
      path: handle.path,
      writev: (buffers, position) => this.#track(handle.writev(buffers, position)),
      read: (b, o, l, p) => this.#track(handle.read(b, o, l, p)),
      datasync: () => this.#track(handle.datasync()),
      truncate: (n) => this.#track(handle.truncate(n)),
      sizeBytes: () => this.#track(handle.sizeBytes()),
      close: () => this.#track(handle.close()),
    };
  }

  override syncDir(path: string): Promise<void> {
    return this.#track(super.syncDir(path));
  }

  // Every other operation too: a roll renames a prepared segment into place between two writes, and
  // an untracked rename in flight looked like idle I/O.
  override readFile(path: string): Promise<Buffer | null> {
    return this.#track(super.readFile(path));
  }

  override readdir(path: string): Promise<string[]> {
    return this.#track(super.readdir(path));
  }

  override mkdir(path: string): Promise<void> {
    return this.#track(super.mkdir(path));
  }

  override rename(fromPath: string, toPath: string): Promise<void> {
    return this.#track(super.rename(fromPath, toPath));
  }

  override unlink(path: string): Promise<void> {
    return this.#track(super.unlink(path));
  }

  override removeTree(path: string): Promise<void> {
    return this.#track(super.removeTree(path));
  }

  override sizeBytes(path: string): Promise<number | null> {
    return this.#track(super.sizeBytes(path));
  }
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Resolves once no I/O has been in flight or started for two event-loop turns: whatever a timer
 * callback started (expiry tombstones, an auto-commit) has then been written, acknowledged and applied.
 */
export async function ioIdle(fs: TrackingFileSystem): Promise<void> {
  let quietTurns = 0;
  let lastStarted = fs.started;
  // Bounded by time, not turns: on a loaded machine one fdatasync can outlast 100,000 turns.
  const giveUpAtMs = performance.now() + 60_000;
  while (quietTurns < 2) {
    if (performance.now() > giveUpAtMs)
      throw new Error(`I/O never became idle (${fs.inFlight} operations in flight)`);
    await turn();
    if (fs.inFlight === 0 && fs.started === lastStarted) quietTurns++;
    else quietTurns = 0;
    lastStarted = fs.started;
  }
}

/**
 * The real file system whose fdatasyncs can be held: while `holding`, each fdatasync waits until
 * the test releases it, so a test can keep a commit appended-but-not-durable for as long as it likes.
 */
export class HeldDatasyncFileSystem extends FaultyFileSystem {
  holding = false;
  readonly #held: (() => void)[] = [];
  readonly #waiters: (() => void)[] = [];

  /** Resolves once at least `count` fdatasyncs are being held. */
  async heldCount(count: number): Promise<void> {
    while (this.#held.length < count)
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  /** Lets the oldest held fdatasync proceed. */
  releaseOne(): void {
    this.#held.shift()?.();
  }

  override async open(path: string, flags: OpenFlags): Promise<FileHandle> {
    const handle = await super.open(path, flags);
    return {
      path: handle.path,
      writev: (buffers, position) => handle.writev(buffers, position),
      read: (b, o, l, p) => handle.read(b, o, l, p),
      truncate: (n) => handle.truncate(n),
      sizeBytes: () => handle.sizeBytes(),
      close: () => handle.close(),
      datasync: async () => {
        if (this.holding) {
          await new Promise<void>((resolve) => {
            this.#held.push(resolve);
            for (const wake of this.#waiters.splice(0)) wake();
          });
        }
        return handle.datasync();
      },
    };
  }
}
