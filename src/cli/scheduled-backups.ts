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
 * first it removes the leftovers of interrupted backups, then this store's oldest backups, one at a
 * time, but never its newest (a schedule never gives up the last backup it has for one that may not
 * fit either), and nothing at all with `keep` 0 (keep every backup). Each removal is reported.
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

  /** Stops the schedule. A backup running is not waited for: closing the store stops it. */
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
    let report: BackupReport;
    for (;;) {
      try {
        report = await store.backup(target);
        break;
      } catch (error) {
        if (this.#closed && isOffsetStoreError(error, 'STORE_CLOSED')) return;
        const room = isFullDisk(error) ? await this.#makeRoom().catch(() => undefined) : undefined;
        if (room?.removed !== undefined) {
          madeRoom.push(room.removed);
          this.#options.onProblem(
            `the backup disk is full: removed ${path.basename(room.removed)}, the oldest backup of this store, to make room`,
          );
          continue;
        }
        const kept =
          room?.newest === undefined
            ? ''
            : `; the newest backup of this store, ${room.newest}, is kept`;
        this.#options.onProblem(`backup failed: ${(error as Error).message}${kept}`);
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
   * On a full backup disk: removes the oldest of this store's backups unless it is the newest one
   * (with `keep` 0, every backup is kept: nothing is removed), leftovers of interrupted backups
   * first. Returns what it removed, or the newest backup it would not remove.
   */
  async #makeRoom(): Promise<{ removed?: string; newest?: string }> {
    const { dir, keep, fs, store } = this.#options;
    const names = (await fs.readdir(dir)).sort();
    for (const name of names) {
      if (
        !name.endsWith(PARTIAL_SUFFIX) ||
        !BACKUP_NAME.test(name.slice(0, -PARTIAL_SUFFIX.length))
      )
        continue;
      const inside = await fs.readdir(path.join(dir, name)).catch((): string[] => []);
      if (!inside.includes(BACKUP_MARKER)) continue;
      await fs.removeTree(path.join(dir, name));
      return { removed: path.join(dir, name) };
    }
    const ours = await storeCreatedAtMs(fs, store.dir);
    if (ours === undefined) return {};
    const backups: string[] = [];
    for (const name of names)
      if (BACKUP_NAME.test(name) && (await storeCreatedAtMs(fs, path.join(dir, name))) === ours)
        backups.push(name);
    if (keep === 0 || backups.length < 2) return { newest: backups.at(-1) };
    await fs.removeTree(path.join(dir, backups[0]!));
    return { removed: path.join(dir, backups[0]!) };
  }

  /** Removes the backups beyond `keep` and the leftovers of interrupted ones; returns their paths. */
  async #prune(newest: string): Promise<string[]> {
    const { dir, keep, fs } = this.#options;
    const names = (await fs.readdir(dir)).sort();
    // Only this store's backups count and go: a folder shared with another store's schedule (or
    // holding its older backups) keeps those. A backup is this store's when its store.json has the
    // creation time of the one just made; one that cannot be read is kept.
    const ours = await storeCreatedAtMs(fs, path.join(dir, newest));
    const backups: string[] = [];
    for (const name of names) {
      if (!BACKUP_NAME.test(name) || name > newest || ours === undefined) continue;
      if (name === newest || (await storeCreatedAtMs(fs, path.join(dir, name))) === ours)
        backups.push(name);
    }
    const doomed = keep > 0 ? backups.slice(0, Math.max(0, backups.length - keep)) : [];
    for (const name of names) {
      if (!name.endsWith(PARTIAL_SUFFIX)) continue;
      const base = name.slice(0, -PARTIAL_SUFFIX.length);
      if (!BACKUP_NAME.test(base) || base >= newest) continue;
      const inside = await fs.readdir(path.join(dir, name)).catch((): string[] => []);
      if (inside.includes(BACKUP_MARKER)) doomed.push(name);
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

/** Whether `error` is, or was caused by, a full disk or an exhausted quota. */
function isFullDisk(error: unknown): boolean {
  for (let at = error, depth = 0; at instanceof Error && depth < 8; at = at.cause, depth++) {
    const code = (at as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') return true;
  }
  return false;
}

/** The `createdAtMs` of the store in `dir` (a backup), or undefined when its store.json cannot be read. */
async function storeCreatedAtMs(fs: FileSystem, dir: string): Promise<number | undefined> {
  const manifest = await readManifest(fs, dir).catch(() => null);
  return manifest?.createdAtMs;
}
