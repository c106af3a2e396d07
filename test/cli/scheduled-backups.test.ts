/**
 * Backups on a schedule (serve --backup-dir): one per interval on the clock, named after its time; a
 * failed one is reported and the schedule goes on; one asked for while another runs is skipped; close
 * stops the schedule.
 */
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, NodeFileSystem, OffsetStore } from '../../src/index.js';
import type { DirectoryLockResult } from '../../src/io/index.js';
import { BACKUP_MARKER } from '../../src/store-backup.js';
import { ScheduledBackups, backupName } from '../../src/cli/scheduled-backups.js';
import { FaultyFileSystem } from '../support/faulty-file-system.js';
import { tempDir } from '../support/temp-dir.js';

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}

describe('ScheduledBackups', () => {
  it('backs up every interval, keeps the newest, reports a failure and goes on, stops when closed', async () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 4, 3, 0, 0));
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 2, clock });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    const dir = path.join(tempDir(), 'backups');
    const done: string[] = [];
    const problems: string[] = [];
    const schedule = new ScheduledBackups({
      store,
      dir,
      everyMs: 60_000,
      keep: 2,
      clock,
      fs: new NodeFileSystem(),
      onBackup: (report) => done.push(path.basename(report.dir)),
      onProblem: (message) => problems.push(message),
    });
    expect(backupName(clock.nowMs())).toBe('offsets-2026-12-04T03.00.00.000Z');
    clock.advance(59_999);
    await new Promise((r) => setTimeout(r, 50));
    expect(done).toEqual([]);
    for (let i = 1; i <= 3; i++) {
      clock.advance(i === 1 ? 1 : 60_000);
      await until(() => done.length === i);
    }
    expect(done).toEqual([
      'offsets-2026-12-04T03.01.00.000Z',
      'offsets-2026-12-04T03.02.00.000Z',
      'offsets-2026-12-04T03.03.00.000Z',
    ]);
    expect(readdirSync(dir).sort()).toEqual(done.slice(1));
    // A backup asked for while one runs is skipped; one asked for at the same clock time as the last
    // is named a millisecond later.
    const first = schedule.now();
    const second = schedule.now();
    await Promise.all([first, second]);
    expect(problems).toEqual(['a backup is already running: this one is skipped']);
    expect(done[3]).toBe('offsets-2026-12-04T03.03.00.001Z');
    // The name of the next one is taken: it fails, is reported, and the schedule goes on.
    mkdirSync(path.join(dir, backupName(clock.nowMs() + 60_000)));
    clock.advance(60_000);
    await until(() => problems.length === 2);
    expect(problems[1]).toMatch(/^backup failed: INVALID_REQUEST: .* it exists/);
    clock.advance(60_000);
    await until(() => done.length === 5);
    schedule.close();
    clock.advance(600_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(done).toHaveLength(5);
    await store.close();
  });

  it('says so when a backup running is stopped by the shutdown, rather than dropping it in silence', async () => {
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 4 });
    for (let i = 0; i < 200; i++)
      await store.commitOffsets(`g${i}`, [{ tableId: 1, bucketId: i % 4, offset: i }]);
    const done: string[] = [];
    const problems: string[] = [];
    const schedule = new ScheduledBackups({
      store,
      dir: path.join(tempDir(), 'backups'),
      everyMs: 0,
      keep: 0,
      clock: new ManualClock(Date.UTC(2026, 11, 4, 3, 0, 0)),
      fs: new NodeFileSystem(),
      onBackup: (report) => done.push(path.basename(report.dir)),
      onProblem: (message) => problems.push(message),
    });
    const running = schedule.now(); // as serve does on SIGUSR2
    schedule.close(); // and then the shutdown
    await store.close();
    await running;
    expect(done).toEqual([]);
    expect(problems).toEqual([
      expect.stringMatching(
        /^the backup to .*offsets-2026-12-04T03\.00\.00\.000Z was stopped by the shutdown and not made/,
      ),
    ]);
  });

  it("never counts or removes another store's backups in the same folder", async () => {
    const clockA = new ManualClock(Date.UTC(2026, 11, 4, 3, 0, 0));
    const clockB = new ManualClock(Date.UTC(2026, 11, 4, 3, 0, 30));
    const a = await OffsetStore.open({ dir: tempDir(), bucketCount: 2, clock: clockA });
    const b = await OffsetStore.open({ dir: tempDir(), bucketCount: 2, clock: clockB });
    const dir = path.join(tempDir(), 'backups');
    const made: string[] = [];
    const scheduleOf = (store: OffsetStore, clock: ManualClock) =>
      new ScheduledBackups({
        store,
        dir,
        everyMs: 0,
        keep: 2,
        clock,
        fs: new NodeFileSystem(),
        onBackup: (report) => made.push(path.basename(report.dir)),
        onProblem: (message) => {
          throw new Error(message);
        },
      });
    const scheduleA = scheduleOf(a, clockA);
    const scheduleB = scheduleOf(b, clockB);
    await scheduleB.now();
    for (let i = 0; i < 4; i++) {
      clockA.advance(60_000);
      await scheduleA.now();
    }
    const ofB = made[0]!;
    expect(readdirSync(dir).sort()).toEqual([ofB, ...made.slice(-2)].sort());
    clockB.advance(600_000);
    await scheduleB.now();
    expect(readdirSync(dir).sort()).toEqual([ofB, ...made.slice(-3)].sort());
    await a.close();
    await b.close();
  });

  it('makes room on a full backup disk: leftovers first, then its oldest backups, never one being built, never the newest', async () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 4, 3, 0, 0));
    const fs = new FaultyFileSystem();
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 2, clock, fs });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    const dir = path.join(tempDir(), 'backups');
    const made: string[] = [];
    const gone: string[] = [];
    const problems: string[] = [];
    const schedule = new ScheduledBackups({
      store,
      dir,
      everyMs: 0,
      keep: 5,
      clock,
      fs,
      onBackup: (report, removed) => {
        made.push(path.basename(report.dir));
        gone.push(...removed.map((r) => path.basename(r)));
      },
      onProblem: (message) => problems.push(message),
    });
    const backup = async () => {
      clock.advance(60_000);
      await schedule.now();
    };
    try {
      await backup();
      const size = bytesUnder(path.join(dir, made[0]!));
      // A disk with room for three backups and a half.
      fs.plan.folderBytesMax = { dir, bytes: Math.floor(size * 3.5) };
      await backup();
      await backup();
      expect(problems).toEqual([]);
      await backup();
      expect(made).toHaveLength(4);
      expect(problems).toEqual([
        `the backup disk is full: removed ${made[0]}, the oldest backup of this store, to make room`,
      ]);
      expect(gone).toEqual([made[0]]);
      expect(readdirSync(dir).sort()).toEqual(made.slice(1));

      // What an interrupted backup left goes first; a backup being built (its lock held) stays.
      const leftover = path.join(dir, 'offsets-2026-12-04T02.00.00.000Z.partial');
      mkdirSync(leftover);
      writeFileSync(path.join(leftover, BACKUP_MARKER), '');
      writeFileSync(path.join(leftover, 'segment'), Buffer.alloc(Math.floor(size * 0.3)));
      const building = path.join(dir, 'offsets-2026-12-04T09.00.00.000Z.partial');
      mkdirSync(building);
      writeFileSync(path.join(building, BACKUP_MARKER), '');
      const lock = await new NodeFileSystem().holdLock(building);
      problems.length = 0;
      gone.length = 0;
      await backup();
      expect(made).toHaveLength(5);
      expect(problems).toEqual([
        'the backup disk is full: removed offsets-2026-12-04T02.00.00.000Z.partial, what an interrupted backup left, to make room',
        `the backup disk is full: removed ${made[1]}, the oldest backup of this store, to make room`,
      ]);
      expect(readdirSync(dir).sort()).toEqual([...made.slice(2), path.basename(building)].sort());

      // Only the newest left, and no room beside it for another: it is never given up.
      for (const name of made.slice(2, 4)) rmSync(path.join(dir, name), { recursive: true });
      writeFileSync(path.join(dir, 'other-data'), Buffer.alloc(Math.floor(size * 2)));
      problems.length = 0;
      await backup();
      expect(made).toHaveLength(5);
      expect(problems).toEqual([
        expect.stringMatching(
          new RegExp(
            `^backup failed: LOG_STORAGE_ERROR: .*ENOSPC.*; the newest backup of this store, ${made[4]!.replaceAll('.', '\\.')}, is kept$`,
          ),
        ),
      ]);
      expect(readdirSync(dir).sort()).toEqual(
        [made[4], 'other-data', path.basename(building)].sort(),
      );
    } finally {
      await store.close();
    }
  });
});

describe('ScheduledBackups on a full disk whose space is held elsewhere', () => {
  it('stops removing backups once a removal freed no space: it removes one, not every one but the newest', async () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 4, 3, 0, 0));
    const dir = path.join(tempDir(), 'backups');
    const fs = new SpaceFaults(dir);
    const store = await OffsetStore.open({ dir: tempDir(), bucketCount: 2, clock, fs });
    await store.commitOffsets('g', [{ tableId: 1, bucketId: 0, offset: 1 }]);
    const made: string[] = [];
    const problems: string[] = [];
    const schedule = new ScheduledBackups({
      store,
      dir,
      everyMs: 0,
      keep: 10,
      clock,
      fs,
      onBackup: (report) => made.push(path.basename(report.dir)),
      onProblem: (message) => problems.push(message),
    });
    const backup = async () => {
      clock.advance(60_000);
      await schedule.now();
    };
    try {
      for (let i = 0; i < 4; i++) await backup();
      expect(made).toHaveLength(4);
      // Every write into the folder fails, and its free space reads 0 whatever is removed (a
      // snapshot, or another process, holds the space).
      fs.plan.folderBytesMax = { dir, bytes: 0 };
      await backup();
      expect(made).toHaveLength(4);
      expect(problems).toEqual([
        `the backup disk is full: removed ${made[0]}, the oldest backup of this store, to make room`,
        expect.stringMatching(
          /^backup failed: .*ENOSPC.*; the newest backup of this store, .*, is kept: removing a backup freed no space \(something else holds it\)$/,
        ),
      ]);
      expect(readdirSync(dir).sort()).toEqual(made.slice(1));
    } finally {
      await store.close();
    }
  });
});

/**
 * Faults of space for a backups folder, without the kernel lock on the backups' folders, for a test
 * about space alone (the lock is what tells an interrupted backup's leftover from one being built:
 * the test before it keeps it). Without statx (test:no-statx) a folder's lock name is its inode
 * alone, and a lock still held in the worker on a folder since removed (a store some test left
 * open) holds the name of whichever new folder takes that inode: a backup's then read as already
 * running once in CI.
 */
class SpaceFaults extends FaultyFileSystem {
  constructor(readonly backupsDir: string) {
    super();
  }

  override holdLock(dir: string): Promise<DirectoryLockResult> {
    return dir.startsWith(this.backupsDir + path.sep)
      ? Promise.resolve('unsupported')
      : super.holdLock(dir);
  }
}

function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const at = path.join(dir, entry.name);
    total += entry.isDirectory() ? bytesUnder(at) : statSync(at).size;
  }
  return total;
}
