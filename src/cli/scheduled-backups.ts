/**
 * Backups of a served store on a schedule (`offset-store serve --backup-dir`): every `everyMs`, and
 * when asked (`now()`, which `serve` calls on SIGUSR2), `store.backup` into a new folder of `dir`
 * named after the time, `offsets-2026-12-04T03.50.12.345Z`, so that names sort in time order. After
 * each backup that succeeds, the oldest backups of this store beyond `keep` are removed (a backup is
 * this store's when its store.json has the creation time of the one just made: another store's
 * backups in the same folder are neither counted nor removed), and so are the `<name>.partial`
 * folders that interrupted backups left (only those holding the marker a backup writes into them:
 * nothing else in `dir` is ever removed). `serve` holds a lock on `dir` while it runs, so two
 * schedules never share it at once.
 *
 * A backup that fails because the backup disk is full (ENOSPC, EDQUOT) makes room and tries again:
 * first it removes the leftovers of interrupted backups (not one being built: its lock is held), then
 * this store's oldest backups, one at a time, but never its newest (a schedule never gives up the
 * last backup it has for one that may not fit either), nothing with `keep` 0 (keep every backup),
 * and only while removing them can make room: what the older backups take and what is free must
 * add up to what the newest took, and each removal must have freed space. Each removal is reported;
 * so is why nothing was removed.
 *
 * One backup at a time: one asked for while another runs is skipped (and said so). A failed backup is
 * reported and the schedule goes on; the store keeps serving either way.
 */
import * as path from 'node:path';
import type { BackupReport, OffsetStore } from '../index.js';
import { isOffsetStoreError } from '../errors/index.js';
import type { FileSystem } from '../io/index.js';
import { readManifest } from '../log/index.js';
import { BACKUP_MARKER, PARTIAL_SUFFIX } from '../store-backup.js';
import type { Clock, Timer } from '../util/index.js';

/** Names of the backups this schedule writes (and the only ones it removes). */
const BACKUP_NAME = /^offsets-\d{4}-\d{2}-\d{2}T\d{2}\.\d{2}\.\d{2}\.\d{3}Z$/;

export interface ScheduledBackupsOptions {
  store: OffsetStore;
  /** The folder backups are written into (created if missing). */
  dir: string;
  /** Time between two scheduled backups; 0: only when asked (`now()`). */
  everyMs: number;
  /** Backups kept (the newest); 0 keeps all. */
  keep: number;
  clock: Clock;
  /** Lists `dir`, checks for the marker and removes old backups. */
  fs: FileSystem;
  onBackup(report: BackupReport, removed: string[]): void;
  onProblem(message: string): void;
}

/** The name of a backup made at `nowMs`. */
export function backupName(nowMs: number): string {
  return `offsets-${new Date(nowMs).toISOString().replaceAll(':', '.')}`;
}

export class ScheduledBackups {
  readonly #options: ScheduledBackupsOptions;
  #timer: Timer | undefined;
  #running: Promise<void> | undefined;
  #closed = false;
  /** Time the last backup was named after: names stay distinct even on a clock that stands still. */
  #lastMs = -Infinity;

  constructor(options: ScheduledBackupsOptions) {
    this.#options = options;
    this.#arm();
  }

  /** Starts a backup now, unless one is running (then says so); resolves when it is done. */
  now(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#running !== undefined) {
      this.#options.onProblem('a backup is already running: this one is skipped');
      return this.#running;
    }
    const running = this.#backup().finally(() => {
      this.#running = undefined;
    });
    this.#running = running;
    return running;
  }

  /**
   * Stops the schedule. A backup running is not waited for: closing the store stops it, and that is
   * reported (onProblem).
   */
  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
  }

  #arm(): void {
    const { everyMs, clock } = this.#options;
    if (everyMs <= 0 || this.#closed) return;
    this.#timer = clock.setTimer(everyMs, () => {
      void this.now().finally(() => this.#arm());
    });
  }

  async #backup(): Promise<void> {
    const { store, dir, clock } = this.#options;
    this.#lastMs = Math.max(clock.nowMs(), this.#lastMs + 1);
    const target = path.join(dir, backupName(this.#lastMs));
    const madeRoom: string[] = [];
    let freeBefore: number | undefined;
    let report: BackupReport;
    for (;;) {
      try {
        report = await store.backup(target);
        break;
      } catch (error) {
        if (this.#closed && isOffsetStoreError(error, 'STORE_CLOSED')) {
          // Said, not dropped in silence: a backup asked for (SIGUSR2) right before a shutdown
          // would otherwise be taken for made.
          this.#options.onProblem(
            `the backup to ${target} was stopped by the shutdown and not made (the next backup into ${dir} removes what it left)`,
          );
          return;
        }
        const room = isFullDisk(error)
          ? await this.#makeRoom(freeBefore).catch((problem: unknown): Room => ({
              why: `making room failed: ${(problem as Error).message}`,
            }))
          : undefined;
        if (room?.removed !== undefined) {
          madeRoom.push(room.removed);
          freeBefore = room.freeBefore;
          this.#options.onProblem(
            `the backup disk is full: removed ${path.basename(room.removed)}, ${room.what}, to make room`,
          );
          continue;
        }
        const why = room?.why === undefined ? '' : `; ${room.why}`;
        this.#options.onProblem(`backup failed: ${(error as Error).message}${why}`);
        return;
      }
    }
    let removed: string[] = [];
    try {
      removed = await this.#prune(path.basename(report.dir));
    } catch (error) {
      this.#options.onProblem(`removing old backups in ${dir} failed: ${(error as Error).message}`);
    }
    this.#options.onBackup(report, [...madeRoom, ...removed]);
  }

  /**
   * On a full backup disk: removes one thing that makes room, if anything can. First what an
   * interrupted backup left (never a folder a backup is building now: its lock is held), then the
   * oldest of this store's backups, but never its newest, nothing with `keep` 0 (keep every
   * backup), and only when removing this store's older backups can make room at all: the backup
   * is taken to need what its newest backup takes, and the free space must be readable. A removal
   * after which the disk had no more free space than before (`freeBefore`: the space is held
   * elsewhere) is not followed by another. Returns what it removed, or why it removed nothing.
   */
  async #makeRoom(freeBefore: number | undefined): Promise<Room> {
    const { dir, keep, fs, store } = this.#options;
    const names = (await fs.readdir(dir)).sort();
    for (const name of names) {
      if ((await leftoverBase(fs, dir, name)) === undefined) continue;
      const at = path.join(dir, name);
      const lock = await fs.holdLock?.(at).catch(() => undefined);
      if (lock === undefined || lock === 'held-elsewhere' || lock === 'unsupported') continue;
      try {
        await fs.removeTree(at);
      } finally {
        await lock.release().catch(() => {});
      }
      return { removed: at, what: 'what an interrupted backup left', freeBefore };
    }
    const backups = await backupsOf(fs, dir, names, await storeCreatedAtMs(fs, store.dir));
    const newest = backups.at(-1);
    if (newest === undefined) return { why: 'this store has no backup there to remove' };
    const kept = `the newest backup of this store, ${newest}, is kept`;
    if (keep === 0) return { why: `${kept} (--backup-keep 0 keeps every backup)` };
    if (backups.length < 2) return { why: kept };
    if (fs.freeBytes === undefined)
      return { why: `${kept}, and the others too: the free space of ${dir} cannot be read` };
    const free = await fs.freeBytes(dir);
    if (freeBefore !== undefined && free <= freeBefore)
      return { why: `${kept}: removing a backup freed no space (something else holds it)` };
    const needed = await treeBytes(fs, path.join(dir, newest));
    let removable = 0;
    for (const name of backups.slice(0, -1)) removable += await treeBytes(fs, path.join(dir, name));
    if (free + removable < needed)
      return {
        why: `${kept}, and the others too: removing them would free ${removable} bytes, and with the ${free} free that is less than the ${needed} the newest backup took`,
      };
    await fs.removeTree(path.join(dir, backups[0]!));
    return {
      removed: path.join(dir, backups[0]!),
      what: 'the oldest backup of this store',
      freeBefore: free,
    };
  }

  /** Removes the backups beyond `keep` and the leftovers of interrupted ones; returns their paths. */
  async #prune(newest: string): Promise<string[]> {
    const { dir, keep, fs } = this.#options;
    const names = (await fs.readdir(dir)).sort();
    // Only this store's backups count and go: a folder shared with another store's schedule (or
    // holding its older backups) keeps those. A backup is this store's when its store.json has the
    // creation time of the one just made; one that cannot be read is kept.
    const ours = await storeCreatedAtMs(fs, path.join(dir, newest));
    const backups = await backupsOf(
      fs,
      dir,
      names.filter((name) => name <= newest),
      ours,
    );
    const doomed = keep > 0 ? backups.slice(0, Math.max(0, backups.length - keep)) : [];
    for (const name of names) {
      const base = await leftoverBase(fs, dir, name);
      if (base !== undefined && base < newest) doomed.push(name);
    }
    const removed: string[] = [];
    for (const name of doomed) {
      const target = path.join(dir, name);
      await fs.removeTree(target);
      removed.push(target);
    }
    return removed;
  }
}

/** What `#makeRoom` did: removed one thing (`what` it was), or why it removed nothing. */
interface Room {
  removed?: string;
  what?: string;
  /** Free bytes of the backup disk before the removal. */
  freeBefore?: number;
  why?: string;
}

/** Bytes of the files under `at` (a file: its size). */
async function treeBytes(fs: FileSystem, at: string): Promise<number> {
  const entries = await fs.readdir(at).catch(() => null);
  if (entries === null) return (await fs.sizeBytes(at).catch(() => null)) ?? 0;
  let total = 0;
  for (const entry of entries) total += await treeBytes(fs, path.join(at, entry));
  return total;
}

/** Whether `error` is, or was caused by, a full disk or an exhausted quota. */
function isFullDisk(error: unknown): boolean {
  for (let at = error, depth = 0; at instanceof Error && depth < 8; at = at.cause, depth++) {
    const code = (at as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') return true;
  }
  return false;
}

/**
 * Of `names` (sorted) in `dir`, the backups of the store created at `ours`: those whose store.json
 * has that creation time (none when `ours` is undefined; one that cannot be read is not counted).
 */
async function backupsOf(
  fs: FileSystem,
  dir: string,
  names: readonly string[],
  ours: number | undefined,
): Promise<string[]> {
  const backups: string[] = [];
  if (ours === undefined) return backups;
  for (const name of names)
    if (BACKUP_NAME.test(name) && (await storeCreatedAtMs(fs, path.join(dir, name))) === ours)
      backups.push(name);
  return backups;
}

/**
 * The backup name of `name` in `dir` when it is what an interrupted backup left (`<backup
 * name>.partial` holding the marker a backup writes into it), else undefined.
 */
async function leftoverBase(
  fs: FileSystem,
  dir: string,
  name: string,
): Promise<string | undefined> {
  if (!name.endsWith(PARTIAL_SUFFIX)) return undefined;
  const base = name.slice(0, -PARTIAL_SUFFIX.length);
  if (!BACKUP_NAME.test(base)) return undefined;
  const inside = await fs.readdir(path.join(dir, name)).catch((): string[] => []);
  return inside.includes(BACKUP_MARKER) ? base : undefined;
}

/** The `createdAtMs` of the store in `dir` (a backup), or undefined when its store.json cannot be read. */
async function storeCreatedAtMs(fs: FileSystem, dir: string): Promise<number | undefined> {
  const manifest = await readManifest(fs, dir).catch(() => null);
  return manifest?.createdAtMs;
}
